package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestThroughputLimit: throughput above --max-throughput (Cosmos DB's
// 1,000,000 RU/s) is refused and changes nothing.
func TestThroughputLimit(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	db := newTestClient(t, s).Database(dbName(t))
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"}, {Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 12000}})
	for _, cmd := range []bson.D{
		{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"}, {Key: "offerThroughput", Value: 1_000_000_000}},
		{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"}, {Key: "autoScaleSettings", Value: bson.D{{Key: "maxThroughput", Value: 2_000_000}}}},
		{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "d"}, {Key: "offerThroughput", Value: 1_000_100}},
		{{Key: "customAction", Value: "CreateDatabase"}, {Key: "offerThroughput", Value: 5_000_000}},
	} {
		ce := runFail(t, db, cmd, 2, "BadValue")
		if want := "1000000 RU/s"; !strings.Contains(ce.Message, want) {
			t.Errorf("%v: %q does not say %q", cmd, ce.Message, want)
		}
	}
	if ps := getPartitionStats(t, db, "c"); len(ps.Partitions) != 2 {
		t.Fatalf("after refused changes: %d partitions, want the 2 of 12,000 RU/s", len(ps.Partitions))
	}
	if names, _ := db.ListCollectionNames(testCtx(t), bson.D{{Key: "name", Value: "d"}}); len(names) != 0 {
		t.Fatalf("a refused CreateCollection created %v", names)
	}
	// The limit itself is allowed: 100 partitions of 10,000 RU/s.
	runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"}, {Key: "offerThroughput", Value: 1_000_000}})
	if ps := getPartitionStats(t, db, "c"); len(ps.Partitions) != 100 {
		t.Fatalf("at 1,000,000 RU/s: %d partitions, want 100", len(ps.Partitions))
	}
}

// TestManyPartitions: with 10,000 physical partitions, routing and
// statistics stay cheap per operation: a point insert and a read by shard
// key cost about what they cost on a collection of one partition, and
// GetPartitionStats with top: 10 answers quickly.
func TestManyPartitions(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Partitions: engine.PartitionLimits{MaxRUs: 100}})
	db := newTestClient(t, s).Database(dbName(t))
	for _, name := range []string{"one", "many"} {
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: name}, {Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 400}})
	}
	start := time.Now()
	runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "many"}, {Key: "offerThroughput", Value: 1_000_000}})
	t.Logf("raising throughput to 10,000 partitions: %v", time.Since(start))
	// Rounds of inserts and reads, alternating between the collections so
	// that both meet the same load.
	elapsed := map[string]time.Duration{}
	next := 0
	for range 6 {
		for _, name := range []string{"one", "many"} {
			coll := db.Collection(name)
			begin := time.Now()
			for range 50 {
				next++
				k := fmt.Sprintf("k%d", next)
				if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: next}, {Key: "k", Value: k}}); err != nil {
					t.Fatal(err)
				}
				if err := coll.FindOne(testCtx(t), bson.D{{Key: "k", Value: k}}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			elapsed[name] += time.Since(begin)
		}
	}
	ratio := float64(elapsed["many"]) / float64(elapsed["one"])
	t.Logf("300 inserts and reads: 1 partition %v, 10,000 partitions %v (%.2fx)", elapsed["one"], elapsed["many"], ratio)
	if ratio > 3 {
		t.Errorf("10,000 partitions make a point insert and read %.2fx as slow as one partition", ratio)
	}
	if ps := getPartitionStats(t, db, "one"); len(ps.Partitions) > 7 {
		t.Fatalf("the small collection has %d partitions", len(ps.Partitions))
	}
	if ps := getPartitionStats(t, db, "many"); len(ps.Partitions) != 10_000 {
		t.Fatalf("%d partitions, want 10,000", len(ps.Partitions))
	}
	start = time.Now()
	runOK(t, db, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: "many"}, {Key: "top", Value: 10}})
	took := time.Since(start)
	t.Logf("GetPartitionStats of 10,000 partitions: %v", took)
	// The goal is 1 s; the bound leaves room for a loaded machine, and the
	// race detector (which slows this CPU-bound path tenfold) is only
	// bounded loosely.
	limit := 3 * time.Second
	if raceEnabled {
		limit = 30 * time.Second
	}
	if took > limit {
		t.Errorf("GetPartitionStats of 10,000 partitions took %v (bound %v)", took, limit)
	}
}

// TestThroughputNeedsDBAdmin: under --auth, a readWrite user may create a
// plain collection but not change throughput or choose a shard key;
// dbAdmin may.
func TestThroughputNeedsDBAdmin(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Auth: true, RootUser: "root", RootPassword: rootPassword})
	name := dbName(t)
	root := userClient(t, s, "root", rootPassword, "admin", "")
	createUser(t, root.Database(name), "writer", "pw", bson.A{"readWrite"})
	createUser(t, root.Database(name), "dba", "pw", bson.A{"dbAdmin"})
	writer := userClient(t, s, "writer", "pw", name, "").Database(name)
	dba := userClient(t, s, "dba", "pw", name, "").Database(name)
	runOK(t, writer, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "plain"}})
	for _, cmd := range []bson.D{
		{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "plain"}, {Key: "offerThroughput", Value: 1000}},
		{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "sharded"}, {Key: "shardKey", Value: "k"}},
		{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "fast"}, {Key: "offerThroughput", Value: 1000}},
		{{Key: "customAction", Value: "UpdateDatabase"}, {Key: "offerThroughput", Value: 1000}},
	} {
		err := writer.RunCommand(testCtx(t), cmd).Err()
		wantUnauthorized(t, err, "not authorized on "+name)
	}
	runOK(t, dba, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "plain"}, {Key: "offerThroughput", Value: 1000}})
	runOK(t, dba, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "sharded"}, {Key: "shardKey", Value: "k"}})
	var got bson.M
	if err := writer.RunCommand(testCtx(t), bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "plain"}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got["provisionedThroughput"]) != "1000" {
		t.Fatalf("GetCollection after dbAdmin's change: %v", got)
	}
}
