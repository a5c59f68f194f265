package store

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parsecdb/parsec/shard"
)

// The steps that rewrite a whole collection in transactions of many
// documents (an index build, shardCollection's copy, a resharding's copy)
// finish on a store whose transactions hold little (1 MiB memtables:
// Badger takes about 150 KB, or some 1,500 writes, in one), where a batch
// of their usual size does not fit: each is written in as many
// transactions as it takes.
func TestBulkStepsFitTheirTransactions(t *testing.T) {
	s, c := openWithCollection(t, Options{Dir: t.TempDir(), SyncInterval: -1, MemoryLimit: 16 << 20})
	const n = 300
	pad := strings.Repeat("p", 2000)
	tags := make(bson.A, 60)
	for i := range tags {
		tags[i] = int32(i)
	}
	want := map[int32]int32{}
	for i := range int32(n) {
		if err := insertDoc(s, c, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 13}, {Key: "b", Value: i}, {Key: "tags", Value: tags}, {Key: "pad", Value: pad}}); err != nil {
			t.Fatal(err)
		}
		want[i] = i
	}
	// 256 documents of 60 entries each: 15,360 writes in one transaction.
	c = mustIndex(t, s, c, "tags_1", bson.D{{Key: "tags", Value: 1}})
	if got := rawKeys(t, s, IndexPrefix(c.ID, c.Indexes[len(c.Indexes)-1].ID)); got != n*len(tags) {
		t.Errorf("the index build wrote %d entries, want %d", got, n*len(tags))
	}
	// 300 documents of 2 KB in one transaction: 600 KB.
	sc, err := s.ShardCollection("db", "c", shard.Spec{Path: "a"}, 2, Throughput{RUs: 400})
	if err != nil {
		t.Fatalf("shardCollection: %v", err)
	}
	check := func(step string, c *Collection) {
		t.Helper()
		got := docsOf(t, s, c)
		for id, b := range want {
			if got[id] != b {
				t.Errorf("after %s: document %d: b = %d, want %d", step, id, got[id], b)
			}
		}
		if len(got) != n {
			t.Errorf("after %s: %d documents, want %d", step, len(got), n)
		}
		if counts := mustCounts(t, s, c); counts.Docs != n {
			t.Errorf("after %s: the counters say %d documents, want %d", step, counts.Docs, n)
		}
	}
	check("shardCollection", sc)
	// Batches of 256 documents: 512 KB each.
	r, err := s.BeginResharding(sc, shard.Spec{Path: "b", Ranged: true}, 2)
	if err != nil {
		t.Fatal(err)
	}
	copyAll(t, s, r, 256)
	rc, err := s.SwitchResharding(r, func() error {
		_, err := s.ApplyResharding(r, s.LastChangeTime(), 100)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	check("resharding", rc)
}
