package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// skDoc is {_id: id, region: region, pad: "xxx…"}.
func skDoc(id int32, region string, pad int) []byte {
	return bsoncore.BuildDocument(nil,
		bsoncore.AppendInt32Element(nil, "_id", id),
		bsoncore.AppendStringElement(nil, "region", region),
		bsoncore.AppendStringElement(nil, "pad", strings.Repeat("x", pad)))
}

// skKey is the key of doc in sharded collection c.
func skKey(t testing.TB, c *Collection, doc []byte) []byte {
	t.Helper()
	sk, err := c.Spec().Extract(doc)
	if err != nil {
		t.Fatal(err)
	}
	id := bsoncore.Document(doc).Lookup("_id")
	return DocKey(c.ID, shard.Point(sk), value.EncodeKey(nil, sk), value.EncodeKey(nil, id))
}

func mustShard(t *testing.T, s *Store, db, name string, parts int) *Collection {
	t.Helper()
	c, err := s.CreateCollectionWith(db, name, NewCollection{ShardKey: "region", Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func current(s *Store, c *Collection) *Collection { return s.Collection(c.DB, c.Name) }

// partitionTruth scans each partition's key range and adds up its
// documents and logical partitions, the way its counters should.
func partitionTruth(t *testing.T, s *Store, c *Collection) ([]Counts, []int64, int64) {
	t.Helper()
	m := c.Map()
	counts := make([]Counts, m.Len())
	lps := make([]int64, m.Len())
	var total int64
	err := s.View(func(tx *Txn) error {
		for i, p := range m.Partitions() {
			start, end := PartitionRange(c.ID, p)
			var last []byte
			err := tx.ScanRange(c, start, end, func(key, doc []byte) (bool, error) {
				counts[i].Docs++
				counts[i].Bytes += int64(len(doc))
				counts[i].KeyBytes += int64(len(key))
				counts[i].IndexBytes += idEntryBytes(t, c, key)
				lp, err := logicalPartitionOf(key)
				if err != nil {
					return false, err
				}
				if !bytes.Equal(lp, last) {
					lps[i]++
					last = append(last[:0], lp...)
				}
				return true, nil
			})
			if err != nil {
				return err
			}
			total += counts[i].Docs
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts, lps, total
}

// checkPartitions asserts that the partition counters of c equal what its
// documents add up to, partition by partition, and that the partitions
// together hold every document once.
func checkPartitions(t *testing.T, s *Store, c *Collection, docs int64) []PartitionStats {
	t.Helper()
	stats, err := s.PartitionStats(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	counts, lps, total := partitionTruth(t, s, c)
	for i, ps := range stats {
		if ps.Counts != counts[i] || ps.LogicalPartitions != lps[i] {
			t.Errorf("partition %d: counters %+v over %d logical partitions, documents add up to %+v over %d",
				ps.Partition.ID, ps.Counts, ps.LogicalPartitions, counts[i], lps[i])
		}
		for j := 1; j < len(ps.Largest); j++ {
			if ps.Largest[j].Counts.Size() > ps.Largest[j-1].Counts.Size() {
				t.Errorf("partition %d: largest logical partitions out of order", ps.Partition.ID)
			}
		}
	}
	if total != docs {
		t.Errorf("partitions hold %d documents, want %d", total, docs)
	}
	checkExact(t, s, c, docs)
	if err := c.Map().Validate(); err != nil {
		t.Error(err)
	}
	return stats
}

func TestPartitionCountersExact(t *testing.T) {
	s := openMem(t)
	c := mustShard(t, s, "db", "c", 4)
	r := rand.New(rand.NewPCG(1, 2))
	live := map[int32][]byte{}
	for i := int32(0); i < 600; i++ {
		doc := skDoc(i, fmt.Sprintf("r%d", r.IntN(40)), r.IntN(300))
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, skKey(t, c, doc), doc) }); err != nil {
			t.Fatal(err)
		}
		live[i] = doc
	}
	// replace some, delete some
	for i := int32(0); i < 600; i += 3 {
		old := live[i]
		key := skKey(t, c, old)
		if i%2 == 0 {
			doc := skDoc(i, string(bsoncore.Document(old).Lookup("region").StringValue()), r.IntN(500))
			if err := s.Update(func(tx *Txn) error { return tx.Replace(c, key, doc, len(old)) }); err != nil {
				t.Fatal(err)
			}
			live[i] = doc
		} else {
			if err := s.Update(func(tx *Txn) error { return tx.Delete(c, key, len(old)) }); err != nil {
				t.Fatal(err)
			}
			delete(live, i)
		}
	}
	stats := checkPartitions(t, s, c, int64(len(live)))
	var lps int64
	for _, ps := range stats {
		lps += ps.LogicalPartitions
	}
	if lps != 40 {
		t.Errorf("%d logical partitions, want 40", lps)
	}
	// Folding changes nothing. A background fold (of logical partitions
	// whose deltas piled up) may still run: fold skips a collection being
	// folded, so wait for it first.
	s.folds.Wait()
	if err := s.fold(c.ID); err != nil {
		t.Fatal(err)
	}
	if n := rawKeys(t, s, lpPrefix(c.ID)); n != 40 {
		t.Errorf("%d logical-partition counter keys after folding, want 40 bases", n)
	}
	checkPartitions(t, s, c, int64(len(live)))
}

// TestSameIDTwoLogicalPartitions: _id is unique per logical partition.
func TestSameIDTwoLogicalPartitions(t *testing.T) {
	s := openMem(t)
	c := mustShard(t, s, "db", "c", 2)
	a, b := skDoc(1, "EU", 1), skDoc(1, "US", 1)
	for _, d := range [][]byte{a, b} {
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, skKey(t, c, d), d) }); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Update(func(tx *Txn) error { return tx.Insert(c, skKey(t, c, a), a) })
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) {
		t.Fatalf("second insert of _id 1 in EU: %v", err)
	}
	checkPartitions(t, s, c, 2)
}

func TestSplitBySize(t *testing.T) {
	s := openMem(t)
	s.SetLimits(Limits{PartitionBytes: 64 << 10})
	c := mustShard(t, s, "db", "c", 1)
	r := rand.New(rand.NewPCG(3, 4))
	const n = 2000
	for i := int32(0); i < n; i += 50 {
		err := s.Update(func(tx *Txn) error {
			for j := i; j < i+50; j++ {
				doc := skDoc(j, fmt.Sprintf("key-%d", r.IntN(300)), 100)
				if err := tx.Insert(c, skKey(t, c, doc), doc); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.SettleSplits(ctx); err != nil {
		t.Fatal(err)
	}
	c = current(s, c)
	stats := checkPartitions(t, s, c, n)
	if len(stats) < 4 {
		t.Fatalf("%d partitions after %d documents of ~140 bytes at a 64 KiB limit", len(stats), n)
	}
	for _, ps := range stats {
		if ps.Counts.Size() > 64<<10 && ps.LogicalPartitions > 1 {
			t.Errorf("partition %d holds %d bytes in %d logical partitions: not split", ps.Partition.ID, ps.Counts.Size(), ps.LogicalPartitions)
		}
		if ps.Partition.ID != 0 && len(ps.Partition.Parents) == 0 {
			t.Errorf("partition %d has no parents", ps.Partition.ID)
		}
	}
}

// TestOneLogicalPartitionCannotSplit: a partition holding one logical
// partition stays whole, however large.
func TestOneLogicalPartitionCannotSplit(t *testing.T) {
	s := openMem(t)
	s.SetLimits(Limits{PartitionBytes: 16 << 10})
	c := mustShard(t, s, "db", "c", 1)
	for i := int32(0); i < 300; i++ {
		doc := skDoc(i, "only", 100)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, skKey(t, c, doc), doc) }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.SettleSplits(ctx); err != nil {
		t.Fatal(err)
	}
	if c = current(s, c); c.Map().Len() != 1 {
		t.Fatalf("%d partitions: a single logical partition was split", c.Map().Len())
	}
	checkPartitions(t, s, c, 300)
}

func TestLogicalPartitionLimit(t *testing.T) {
	for _, sharded := range []bool{true, false} {
		t.Run(fmt.Sprint("sharded=", sharded), func(t *testing.T) {
			s := openMem(t)
			s.SetLimits(Limits{LogicalPartitionBytes: 8 << 10})
			var c *Collection
			key := func(doc []byte) []byte {
				if sharded {
					return skKey(t, c, doc)
				}
				return idKey(c, bsoncore.Document(doc).Lookup("_id").Int32())
			}
			if sharded {
				c = mustShard(t, s, "db", "c", 2)
			} else {
				c = mustCreate(t, s, "db", "c")
			}
			var full error
			n := int32(0)
			for ; n < 200 && full == nil; n++ {
				doc := skDoc(n, "hot", 200)
				full = s.Update(func(tx *Txn) error { return tx.Insert(c, key(doc), doc) })
			}
			var lpf *LogicalPartitionFullError
			if !errors.As(full, &lpf) || !errors.Is(full, ErrLogicalPartitionFull) || lpf.Limit != 8<<10 {
				t.Fatalf("after %d inserts into one logical partition: %v", n, full)
			}
			inserted := int64(n - 1)
			if got := truth(t, s, c); got.Docs != inserted || got.Bytes+got.KeyBytes > 8<<10 {
				t.Fatalf("logical partition holds %+v after the refused insert", got)
			}
			// Growing an existing document is refused too; shrinking and
			// other logical partitions are not.
			first := skDoc(0, "hot", 200)
			bigger := skDoc(0, "hot", 2000)
			if err := s.Update(func(tx *Txn) error { return tx.Replace(c, key(first), bigger, len(first)) }); !errors.Is(err, ErrLogicalPartitionFull) {
				t.Fatalf("growing a document in a full logical partition: %v", err)
			}
			smaller := skDoc(0, "hot", 10)
			if err := s.Update(func(tx *Txn) error { return tx.Replace(c, key(first), smaller, len(first)) }); err != nil {
				t.Fatal(err)
			}
			if sharded {
				other := skDoc(1000, "cold", 200)
				if err := s.Update(func(tx *Txn) error { return tx.Insert(c, key(other), other) }); err != nil {
					t.Fatal(err)
				}
				inserted++
			}
			checkExact(t, s, c, inserted)
		})
	}
}

func TestSplitPartitionAndThroughput(t *testing.T) {
	s := openMem(t)
	c := mustShard(t, s, "db", "c", 1)
	if _, err := s.SplitPartition(c, 0, 0); !errors.Is(err, shard.ErrBadSplit) {
		t.Fatalf("split at the partition's start: %v", err)
	}
	c2, err := s.SplitPartition(c, 0, 1<<63)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SplitPartition(c, 0, 1<<62); !errors.Is(err, ErrCollectionChanged) {
		t.Fatalf("split with a stale entry: %v", err)
	}
	c3, err := s.SetThroughput(c2, Throughput{RUs: 40000}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if c3.Map().Len() != 5 || c3.Throughput.RUs != 40000 {
		t.Fatalf("after SetThroughput: %d partitions, %+v", c3.Map().Len(), c3.Throughput)
	}
	c4, err := s.SetThroughput(c3, Throughput{RUs: 400}, 1)
	if err != nil || c4.Map().Len() != 5 {
		t.Fatalf("lowering throughput: %v, %d partitions", err, c4.Map().Len())
	}
	if err := c4.Map().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestPartitionsSurviveCrash: the map and the partition counters are exact
// after a crash that left deltas unfolded, and after a clean reopen.
func TestPartitionsSurviveCrash(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	s.SetLimits(Limits{PartitionBytes: 32 << 10})
	c := mustShard(t, s, "db", "c", 2)
	for i := int32(0); i < 800; i++ {
		doc := skDoc(i, fmt.Sprintf("k%d", i%97), 60)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, skKey(t, c, doc), doc) }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.SettleSplits(ctx); err != nil {
		t.Fatal(err)
	}
	before := current(s, c)
	if before.Map().Len() < 3 {
		t.Fatalf("only %d partitions", before.Map().Len())
	}
	crash(t, s)

	s = openDir(t, dir)
	after := s.Collection("db", "c")
	if after.MapVersion != before.MapVersion || after.Map().Len() != before.Map().Len() {
		t.Fatalf("map after crash: version %d, %d partitions; before: %d, %d", after.MapVersion, after.Map().Len(), before.MapVersion, before.Map().Len())
	}
	for i, p := range after.Map().Partitions() {
		q := before.Map().At(i)
		if p.ID != q.ID || p.Min != q.Min || p.Max != q.Max {
			t.Fatalf("partition %d after crash %+v, before %+v", i, p, q)
		}
	}
	checkPartitions(t, s, after, 800)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir)
	defer s.Close()
	checkPartitions(t, s, s.Collection("db", "c"), 800)
}

// TestConcurrentWritersDuringSplits: writers insert, replace and delete
// while partitions split under them; counters stay exact and no document
// is lost or seen twice.
func TestConcurrentWritersDuringSplits(t *testing.T) {
	s := openMem(t)
	s.SetLimits(Limits{PartitionBytes: 24 << 10, LogicalPartitionBytes: 1 << 20})
	c := mustShard(t, s, "db", "c", 1)
	const writers, ops = 4, 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	live := 0
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 5))
			var mine [][]byte
			for i := range ops {
				if len(mine) == 0 || r.IntN(4) > 0 {
					doc := skDoc(int32(w*100000+i), fmt.Sprintf("k%d", r.IntN(200)), r.IntN(150))
					if err := s.Update(func(tx *Txn) error { return tx.Insert(c, skKey(t, c, doc), doc) }); err != nil {
						t.Error(err)
						return
					}
					mine = append(mine, doc)
					mu.Lock()
					live++
					mu.Unlock()
					continue
				}
				j := r.IntN(len(mine))
				doc := mine[j]
				if err := s.Update(func(tx *Txn) error { return tx.Delete(c, skKey(t, c, doc), len(doc)) }); err != nil {
					t.Error(err)
					return
				}
				mine = append(mine[:j], mine[j+1:]...)
				mu.Lock()
				live--
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.SettleSplits(ctx); err != nil {
		t.Fatal(err)
	}
	c = current(s, c)
	if c.Map().Len() < 2 {
		t.Fatalf("no splits happened: %d partitions", c.Map().Len())
	}
	checkPartitions(t, s, c, int64(live))
}

func TestShardExistingCollection(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	for i := int32(0); i < 2500; i++ {
		doc := skDoc(i, fmt.Sprintf("r%d", i%30), 20)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, i), doc) }); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := s.ShardCollection("db", "c", shard.Spec{Path: "region"}, 3, Throughput{RUs: 400})
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Sharded() || sc.ID == c.ID || sc.Epoch == c.Epoch || sc.Map().Len() != 3 || string(sc.UUID) != string(c.UUID) {
		t.Fatalf("sharded entry %+v", sc)
	}
	checkPurged(t, s, c.ID)
	checkPartitions(t, s, sc, 2500)
	// A writer holding the old entry fails and must look it up again.
	err = s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, 9999), mkDoc(9999, 1)) })
	if !isChanged(err) {
		t.Fatalf("insert with the entry from before sharding: %v", err)
	}
	if _, err := s.ShardCollection("db", "c", shard.Spec{Path: "region"}, 1, Throughput{}); !errors.Is(err, ErrAlreadySharded) {
		t.Fatalf("sharding twice: %v", err)
	}
	// A document without the key aborts, leaving the collection as it was.
	u := mustCreate(t, s, "db", "u")
	insert(t, s, u, 1, 5) // mkDoc has no region
	if _, err := s.ShardCollection("db", "u", shard.Spec{Path: "region"}, 1, Throughput{}); !errors.Is(err, shard.ErrMissing) {
		t.Fatalf("sharding a collection with a document lacking the key: %v", err)
	}
	if cur := s.Collection("db", "u"); cur.Sharded() {
		t.Fatal("failed shardCollection left the collection sharded")
	}
	checkExact(t, s, s.Collection("db", "u"), 1)
}

// TestIDIndexOfShardedCollection checks the _id index a sharded
// collection keeps: one entry per document, written and removed with it,
// found by _id alone, and validated.
func TestIDIndexOfShardedCollection(t *testing.T) {
	s := openMem(t)
	c := mustShard(t, s, "db", "c", 4)
	if c.IDIndex == nil || c.IDIndex.Building {
		t.Fatalf("sharded collection's _id index: %+v", c.IDIndex)
	}
	var docs [][]byte
	for i := int32(0); i < 200; i++ {
		doc := skDoc(i%50, fmt.Sprintf("r%d", i%7), 10) // _id 0..49, each in several logical partitions
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, skKey(t, c, doc), doc) }); err != nil {
			var dup *DuplicateKeyError
			if errors.As(err, &dup) {
				continue
			}
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	entries := func(id int32) int {
		n := 0
		ik := value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, id)})
		err := s.View(func(tx *Txn) error {
			return tx.ScanIndex(c, c.IDIndex, ik, append(bytes.Clone(ik), 0xff), false, func(e IndexEntry) (bool, error) {
				if _, err := tx.Get(e.DocKey); err != nil {
					return false, err
				}
				n++
				return true, nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	want := map[int32]int{}
	for _, d := range docs {
		want[bsoncore.Document(d).Lookup("_id").Int32()]++
	}
	for id, n := range want {
		if got := entries(id); got != n {
			t.Fatalf("_id %d: %d entries, want %d", id, got, n)
		}
	}
	d := docs[0]
	if err := s.Update(func(tx *Txn) error { return tx.Delete(c, skKey(t, c, d), len(d)) }); err != nil {
		t.Fatal(err)
	}
	id := bsoncore.Document(d).Lookup("_id").Int32()
	if got := entries(id); got != want[id]-1 {
		t.Fatalf("after a delete, _id %d has %d entries, want %d", id, got, want[id]-1)
	}
	checks, err := s.ValidateIndexes(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, chk := range checks {
		if chk.Missing+chk.Extra > 0 || len(chk.Errors) > 0 {
			t.Fatalf("validate: %+v", chk)
		}
	}
	checkExact(t, s, c, int64(len(docs)-1))
}
