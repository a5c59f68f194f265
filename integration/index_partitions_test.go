package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestIndexesAcrossSplits: index bytes are counted per physical partition
// exactly (they come and go with the index, partition by partition),
// splits keep every index correct, and a query with the shard key reads
// only its partition's index entries.
func TestIndexesAcrossSplits(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Partitions: smallLimits})
	client := newTestClient(t, s)
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: "ixsplit.c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}})
	db := client.Database("ixsplit")
	c := db.Collection("c")
	insertSpread(t, c, 0, 2000, 100)
	if _, err := c.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
		{Keys: bson.D{{Key: "pad", Value: 1}, {Key: "_id", Value: 1}}},
		{Keys: bson.D{{Key: "tenant", Value: 1}, {Key: "_id", Value: -1}}, Options: options.Index().SetUnique(true)},
	}); err != nil {
		t.Fatal(err)
	}
	// What each document's entries take: x/<coll><index>, the key, the
	// document's suffix <point><shard key><_id> (in the key of the
	// non-unique index) and the suffix again as the value.
	entryBytes := func(doc bson.Raw, sk, id []byte) int64 {
		suffix := int64(8 + len(sk) + len(id))
		pad := int64(len(value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, doc.Lookup("pad").StringValue())})))
		nonUnique := 10 + pad + int64(len(id)) + suffix + suffix
		unique := 10 + int64(len(sk)) + int64(len(id)) + suffix
		return nonUnique + unique
	}
	with := checkStatsAgainstScanWith(t, c, "tenant", entryBytes)
	// More documents: the partitions split; every index stays whole and
	// every partition's index bytes stay exact.
	insertSpread(t, c, 2000, 4000, 100)
	after := checkStatsAgainstScanWith(t, c, "tenant", entryBytes)
	if after.PartitionCount <= with.PartitionCount {
		t.Fatalf("no split: %d partitions", after.PartitionCount)
	}
	checkValid(t, db, "c")
	var sum int64
	for _, p := range after.Partitions {
		sum += p.IndexBytes
	}
	var cs struct {
		TotalIndexSize int64 `bson:"totalIndexSize"`
	}
	if err := db.RunCommand(testCtx(t), bson.D{{Key: "collStats", Value: "c"}}).Decode(&cs); err != nil {
		t.Fatal(err)
	}
	if sum != after.IndexBytes || sum != cs.TotalIndexSize {
		t.Errorf("index bytes: partitions sum to %d, collection says %d, collStats %d", sum, after.IndexBytes, cs.TotalIndexSize)
	}
	// Dropping the indexes takes exactly their bytes off each partition:
	// the _id index's remain.
	if err := c.Indexes().DropAll(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	checkStatsAgainstScan(t, c, "tenant")

	// A shard-key equality reads only the entries of its partition.
	if _, err := c.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "pad", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	x := explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "tenant", Value: "t007"}, {Key: "pad", Value: padValue}}}}, "executionStats")
	keys := intOf(t, mustLookup(t, x, "executionStats", "totalKeysExamined"))
	n := intOf(t, mustLookup(t, x, "executionStats", "nReturned"))
	if n != 60 {
		t.Errorf("nReturned %d, want 60", n)
	}
	total, _ := c.CountDocuments(testCtx(t), bson.D{})
	if keys >= total/2 || keys < n {
		t.Errorf("a shard-key query examined %d keys of %d documents (returned %d)", keys, total, n)
	}
}

// padValue is the pad field insertSpread writes.
var padValue = strings.Repeat("p", 150)

// TestIndexesUnderConcurrencyAndKill9: writers insert, update and delete
// concurrently on indexed fields, then the server is killed; after the
// restart every index agrees with the documents.
func TestIndexesUnderConcurrencyAndKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dir}
	p := startProc(t, nil, args...)
	c := connect(t, p.addr)
	db := c.Database("ixk9")
	coll := db.Collection("c")
	if _, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}}},
		{Keys: bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}},
		{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true)},
		{Keys: bson.D{{Key: "tags", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
				id := rng.IntN(300)
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: id}, {Key: "a", Value: rng.IntN(20)}, {Key: "b", Value: fmt.Sprint(rng.IntN(5))}, {Key: "u", Value: rng.IntN(1000)}, {Key: "tags", Value: bson.A{rng.IntN(4), rng.IntN(4)}}})
				case 1:
					_, err = coll.UpdateOne(testCtx(t), bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: rng.IntN(20)}, {Key: "u", Value: rng.IntN(1000)}}}, {Key: "$push", Value: bson.D{{Key: "tags", Value: rng.IntN(9)}}}})
				case 2:
					_, err = coll.DeleteOne(testCtx(t), bson.D{{Key: "_id", Value: id}})
				case 3:
					_, err = coll.UpdateMany(testCtx(t), bson.D{{Key: "a", Value: rng.IntN(20)}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}})
				}
				if err != nil && !mongo.IsDuplicateKeyError(err) {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	checkValid(t, db, "c")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)
	p2 := startProc(t, nil, args...)
	c2 := connect(t, p2.addr)
	checkValid(t, c2.Database("ixk9"), "c")
	// The indexes answer as a collection scan does.
	coll2 := c2.Database("ixk9").Collection("c")
	for a := range 21 {
		got := findAll(t, coll2, bson.D{{Key: "a", Value: a}}, options.Find())
		want := findAll(t, coll2, bson.D{{Key: "a", Value: a}}, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
		if !sameIDSet(got, want) {
			t.Errorf("a=%d: %d documents by the index, %d by a scan", a, len(got), len(want))
		}
	}
}
