package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Partitions: sharding commands, Cosmos DB's customAction commands, the
// shard-key rules, splits under small limits, routing and explain, the
// config views behind sh.status(), and exact per-partition statistics
// across restarts and kill -9.

// partStats is GetPartitionStats' reply for one collection.
type partStats struct {
	Database       string         `bson:"database"`
	Collection     string         `bson:"collection"`
	ShardKey       bson.Raw       `bson:"shardKey"`
	PartitionCount int32          `bson:"partitionCount"`
	DocumentCount  int64          `bson:"documentCount"`
	DataBytes      int64          `bson:"dataBytes"`
	IndexBytes     int64          `bson:"indexBytes"`
	LogicalCount   int64          `bson:"logicalPartitionCount"`
	Partitions     []partitionDoc `bson:"partitions"`
}

type partitionDoc struct {
	ID            string   `bson:"partitionKeyRangeId"`
	MinInclusive  string   `bson:"minInclusive"`
	MaxExclusive  string   `bson:"maxExclusive"`
	Parents       []string `bson:"parents"`
	DocumentCount int64    `bson:"documentCount"`
	DataBytes     int64    `bson:"dataBytes"`
	IndexBytes    int64    `bson:"indexBytes"`
	LogicalCount  int64    `bson:"logicalPartitionCount"`
	Largest       []struct {
		ShardKey      bson.RawValue `bson:"shardKey"`
		DocumentCount int64         `bson:"documentCount"`
		DataBytes     int64         `bson:"dataBytes"`
	} `bson:"largestLogicalPartitions"`
}

// bounds parses a partition's range: [lo, hi] of the hash space.
func (p partitionDoc) bounds(t testing.TB) (lo, hi uint64) {
	t.Helper()
	if p.MinInclusive != "" {
		v, err := strconv.ParseUint(p.MinInclusive, 16, 64)
		if err != nil {
			t.Fatalf("minInclusive %q: %v", p.MinInclusive, err)
		}
		lo = v
	}
	hi = math.MaxUint64
	if p.MaxExclusive != "FF" {
		v, err := strconv.ParseUint(p.MaxExclusive, 16, 64)
		if err != nil {
			t.Fatalf("maxExclusive %q: %v", p.MaxExclusive, err)
		}
		hi = v - 1
	}
	return lo, hi
}

func getPartitionStats(t testing.TB, db *mongo.Database, coll string) partStats {
	t.Helper()
	raw := runOK(t, db, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: coll}})
	var ps partStats
	if err := bson.Unmarshal(raw, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

// checkTiling asserts the partitions tile the hash space without gap or
// overlap.
func checkTiling(t testing.TB, ps partStats) {
	t.Helper()
	if len(ps.Partitions) == 0 || int(ps.PartitionCount) != len(ps.Partitions) {
		t.Fatalf("%d partitions listed, partitionCount %d", len(ps.Partitions), ps.PartitionCount)
	}
	var next uint64
	for i, p := range ps.Partitions {
		lo, hi := p.bounds(t)
		if lo != next || hi < lo {
			t.Fatalf("partition %s (#%d) is [%#x, %#x], want it to start at %#x", p.ID, i, lo, hi, next)
		}
		next = hi + 1
		if i == len(ps.Partitions)-1 && hi != math.MaxUint64 {
			t.Fatalf("last partition ends at %#x", hi)
		}
	}
}

// checkStatsAgainstScan reads every document and compares, partition by
// partition, what the documents add up to (count, BSON bytes, key bytes,
// distinct shard-key values) with the server's statistics.
func checkStatsAgainstScan(t testing.TB, coll *mongo.Collection, path string) partStats {
	t.Helper()
	return checkStatsAgainstScanWith(t, coll, path, nil)
}

// checkStatsAgainstScanWith is checkStatsAgainstScan for a collection
// with secondary indexes: entryBytes gives the bytes of a document's
// secondary index entries, from the document and its encoded shard key
// and _id.
func checkStatsAgainstScanWith(t testing.TB, coll *mongo.Collection, path string, entryBytes func(doc bson.Raw, sk, id []byte) int64) partStats {
	t.Helper()
	return checkStatsAgainstScanSpec(t, coll, shard.Spec{Path: path}, entryBytes)
}

// checkStatsAgainstScanSpec is checkStatsAgainstScanWith for a collection
// sharded by spec.
func checkStatsAgainstScanSpec(t testing.TB, coll *mongo.Collection, spec shard.Spec, entryBytes func(doc bson.Raw, sk, id []byte) int64) partStats {
	t.Helper()
	ps := getPartitionStats(t, coll.Database(), coll.Name())
	checkTiling(t, ps)
	cur, err := coll.Find(testCtx(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	if err := cur.All(testCtx(t), &docs); err != nil {
		t.Fatal(err)
	}
	type sums struct{ docs, data, index int64 }
	got := make([]sums, len(ps.Partitions))
	keys := make([]map[string]bool, len(ps.Partitions))
	for i := range keys {
		keys[i] = map[string]bool{}
	}
	for _, d := range docs {
		sk, err := spec.Extract(bsoncore.Document(d))
		if err != nil {
			t.Fatalf("document %v: %v", d, err)
		}
		point := spec.Point(sk)
		i := slices.IndexFunc(ps.Partitions, func(p partitionDoc) bool { lo, hi := p.bounds(t); return lo <= point && point <= hi })
		skEnc := value.EncodeKey(nil, sk)
		idEnc := value.EncodeKey(nil, bsoncore.Document(d).Lookup("_id"))
		got[i].docs++
		got[i].data += int64(len(d))
		got[i].index += int64(2 + 4 + 8 + len(skEnc) + len(idEnc)) // d/<coll><point><shard key><_id>
		// the _id index entry: x/<coll><0:4><_id><suffix> -> <suffix>,
		// the suffix being <point><shard key><_id>
		suffix := int64(8 + len(skEnc) + len(idEnc))
		got[i].index += 10 + int64(len(idEnc)) + 2*suffix
		if entryBytes != nil {
			got[i].index += entryBytes(d, skEnc, idEnc)
		}
		keys[i][string(skEnc)] = true
	}
	var total sums
	for i, p := range ps.Partitions {
		if p.DocumentCount != got[i].docs || p.DataBytes != got[i].data || p.IndexBytes != got[i].index || p.LogicalCount != int64(len(keys[i])) {
			t.Errorf("partition %s: stats %d docs, %d data bytes, %d index bytes, %d logical partitions; scan %d, %d, %d, %d",
				p.ID, p.DocumentCount, p.DataBytes, p.IndexBytes, p.LogicalCount, got[i].docs, got[i].data, got[i].index, len(keys[i]))
		}
		total.docs += p.DocumentCount
		total.data += p.DataBytes
		total.index += p.IndexBytes
	}
	if total.docs != ps.DocumentCount || total.data != ps.DataBytes || total.index != ps.IndexBytes {
		t.Errorf("partitions add up to %+v, collection totals %d, %d, %d", total, ps.DocumentCount, ps.DataBytes, ps.IndexBytes)
	}
	return ps
}

func TestShardingCommands(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")

	t.Run("shardCollection", func(t *testing.T) {
		t.Parallel()
		db := dbName(t)
		runOK(t, admin, bson.D{{Key: "enableSharding", Value: db}})
		raw := runOK(t, admin, bson.D{{Key: "shardCollection", Value: db + ".people"}, {Key: "key", Value: bson.D{{Key: "region", Value: "hashed"}}}})
		if got := mustLookup(t, raw, "_t").StringValue(); got != "ShardCollectionResponse" {
			t.Errorf("_t = %q", got)
		}
		if got := mustLookup(t, raw, "collectionsharded").StringValue(); got != db+".people" {
			t.Errorf("collectionsharded = %q", got)
		}
		// again with the same key: fine; with another: refused
		runOK(t, admin, bson.D{{Key: "shardCollection", Value: db + ".people"}, {Key: "key", Value: bson.D{{Key: "region", Value: "hashed"}}}})
		runFail(t, admin, bson.D{{Key: "shardCollection", Value: db + ".people"}, {Key: "key", Value: bson.D{{Key: "city", Value: "hashed"}}}}, 23, "AlreadyInitialized")
		ce := runFail(t, admin, bson.D{{Key: "shardCollection", Value: db + ".ranged"}, {Key: "key", Value: bson.D{{Key: "region", Value: -1}}}}, 2, "BadValue")
		if !strings.Contains(ce.Message, "numerical fields set to a value of 1") {
			t.Errorf("descending key message: %s", ce.Message)
		}
		runFail(t, admin, bson.D{{Key: "shardCollection", Value: db + ".c"}, {Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}}}}, 2, "BadValue")
		runFail(t, admin, bson.D{{Key: "shardCollection", Value: db + ".u"}, {Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}}}, {Key: "unique", Value: true}}, 72, "InvalidOptions")
		runFail(t, admin, bson.D{{Key: "shardCollection", Value: "nodot"}, {Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}}}}, 73, "InvalidNamespace")
		runFail(t, client.Database(db), bson.D{{Key: "shardCollection", Value: db + ".x"}, {Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}}}}, 13, "Unauthorized")
		ps := getPartitionStats(t, client.Database(db), "people")
		if ps.PartitionCount != 1 || string(ps.ShardKey) != string(mustMarshal(t, bson.D{{Key: "region", Value: "hashed"}})) {
			t.Errorf("stats of a new sharded collection at 400 RU/s: %d partitions, key %v", ps.PartitionCount, ps.ShardKey)
		}
		var cs struct {
			Sharded bool `bson:"sharded"`
		}
		if err := client.Database(db).RunCommand(testCtx(t), bson.D{{Key: "collStats", Value: "people"}}).Decode(&cs); err != nil || !cs.Sharded {
			t.Errorf("collStats sharded = %v, %v", cs.Sharded, err)
		}
	})

	// MongoDB refuses to shard a collection of admin (or config): 20
	// IllegalOperation; the collection stays unsharded.
	t.Run("adminPeople", func(t *testing.T) {
		t.Parallel()
		runFail(t, admin, bson.D{{Key: "shardCollection", Value: "admin.people"}, {Key: "key", Value: bson.D{{Key: "region", Value: "hashed"}}}}, 20, "IllegalOperation")
		people := admin.Collection("people")
		if _, err := people.InsertOne(testCtx(t), bson.D{{Key: "name", Value: "Ada"}, {Key: "region", Value: "EU"}}); err != nil {
			t.Fatal(err)
		}
		if n, err := people.CountDocuments(testCtx(t), bson.D{{Key: "region", Value: "EU"}}); err != nil || n != 1 {
			t.Fatalf("count = %d, %v", n, err)
		}
	})

	t.Run("customActionCollection", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "orders"},
			{Key: "shardKey", Value: "customer.id"}, {Key: "offerThroughput", Value: 12000}})
		raw := runOK(t, db, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "orders"}})
		if got := mustLookup(t, raw, "database").StringValue(); got != db.Name() {
			t.Errorf("database = %q", got)
		}
		if got := mustLookup(t, raw, "collection").StringValue(); got != "orders" {
			t.Errorf("collection = %q", got)
		}
		if got := mustLookup(t, raw, "shardKeyDefinition", "customer.id").StringValue(); got != "hashed" {
			t.Errorf("shardKeyDefinition = %v", raw)
		}
		if got := intOf(t, mustLookup(t, raw, "provisionedThroughput")); got != 12000 {
			t.Errorf("provisionedThroughput = %d", got)
		}
		if ps := getPartitionStats(t, db, "orders"); ps.PartitionCount != 2 {
			t.Errorf("12,000 RU/s: %d partitions, want ceil(12000/6000) = 2", ps.PartitionCount)
		}
		// Raising throughput past partitions x 10,000 splits to
		// ceil(T/10,000); lowering never merges.
		runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "orders"}, {Key: "offerThroughput", Value: 50000}})
		ps := getPartitionStats(t, db, "orders")
		if ps.PartitionCount != 5 {
			t.Errorf("50,000 RU/s: %d partitions, want 5", ps.PartitionCount)
		}
		checkTiling(t, ps)
		runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "orders"}, {Key: "offerThroughput", Value: 400}})
		if ps := getPartitionStats(t, db, "orders"); ps.PartitionCount != 5 {
			t.Errorf("after lowering to 400 RU/s: %d partitions, want 5 still", ps.PartitionCount)
		}
		raw = runOK(t, db, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "orders"}})
		if got := intOf(t, mustLookup(t, raw, "provisionedThroughput")); got != 400 {
			t.Errorf("provisionedThroughput after update = %d", got)
		}

		// autoscale: ceil(Tmax/10,000)
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "auto"},
			{Key: "shardKey", Value: "k"}, {Key: "autoScaleSettings", Value: bson.D{{Key: "maxThroughput", Value: 20000}}}})
		raw = runOK(t, db, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "auto"}})
		if got := intOf(t, mustLookup(t, raw, "autoScaleSettings", "maxThroughput")); got != 20000 {
			t.Errorf("autoScaleSettings = %v", raw)
		}
		if ps := getPartitionStats(t, db, "auto"); ps.PartitionCount != 2 {
			t.Errorf("autoscale 20,000: %d partitions, want 2", ps.PartitionCount)
		}

		// unsharded: one partition, no shard key definition
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "plain"}})
		raw = runOK(t, db, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "plain"}})
		wantAbsent(t, raw, "shardKeyDefinition")
		if got := intOf(t, mustLookup(t, raw, "provisionedThroughput")); got != 400 {
			t.Errorf("default throughput = %d", got)
		}
		runFail(t, db, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "plain"}, {Key: "offerThroughput", Value: 20000}}, 2, "BadValue")

		runFail(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "orders"}}, 48, "NamespaceExists")
		runFail(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "bad"}, {Key: "offerThroughput", Value: 450}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "nope"}}, 26, "NamespaceNotFound")
		runFail(t, db, bson.D{{Key: "customAction", Value: "Nope"}}, 59, "CommandNotFound")
	})

	t.Run("customActionDatabase", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateDatabase"}, {Key: "offerThroughput", Value: 1000}})
		raw := runOK(t, db, bson.D{{Key: "customAction", Value: "GetDatabase"}})
		if got := intOf(t, mustLookup(t, raw, "provisionedThroughput")); got != 1000 || mustLookup(t, raw, "database").StringValue() != db.Name() {
			t.Errorf("GetDatabase = %v", raw)
		}
		runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateDatabase"}, {Key: "offerThroughput", Value: 2000}})
		raw = runOK(t, db, bson.D{{Key: "customAction", Value: "GetDatabase"}})
		if got := intOf(t, mustLookup(t, raw, "provisionedThroughput")); got != 2000 {
			t.Errorf("after UpdateDatabase: %v", raw)
		}
		runFail(t, db, bson.D{{Key: "customAction", Value: "CreateDatabase"}}, 48, "NamespaceExists")
		// A collection without throughput of its own shares the database's.
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "shared"}, {Key: "shardKey", Value: "k"}})
		raw = runOK(t, db, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "shared"}})
		wantAbsent(t, raw, "provisionedThroughput")
		// Raising the shared throughput past partitions x 10,000 RU/s splits
		// the sharing collections (the sharded ones) until there are
		// ceil(T / 10,000) partitions in all; lowering it never merges.
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "plain"}})
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "shared2"}, {Key: "shardKey", Value: "k"}})
		runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateDatabase"}, {Key: "offerThroughput", Value: 55000}})
		parts := func() int32 {
			return getPartitionStats(t, db, "shared").PartitionCount + getPartitionStats(t, db, "shared2").PartitionCount + getPartitionStats(t, db, "plain").PartitionCount
		}
		if got := parts(); got != 6 {
			t.Errorf("after raising the shared throughput to 55,000 RU/s: %d partitions, want 6", got)
		}
		runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateDatabase"}, {Key: "offerThroughput", Value: 2000}})
		if got := parts(); got != 6 {
			t.Errorf("after lowering the shared throughput: %d partitions, want 6 still", got)
		}
		auto := client.Database(dbName(t) + "_auto")
		runOK(t, auto, bson.D{{Key: "customAction", Value: "CreateDatabase"}, {Key: "autoScaleSettings", Value: bson.D{{Key: "maxThroughput", Value: 4000}}}})
		raw = runOK(t, auto, bson.D{{Key: "customAction", Value: "GetDatabase"}})
		if got := intOf(t, mustLookup(t, raw, "autoScaleSettings", "maxThroughput")); got != 4000 {
			t.Errorf("GetDatabase autoscale = %v", raw)
		}
		runFail(t, client.Database(dbName(t)+"_none"), bson.D{{Key: "customAction", Value: "GetDatabase"}}, 26, "NamespaceNotFound")
	})
}

func mustMarshal(t testing.TB, d bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestShardKeyRules(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("rules")
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: "rules.c"}, {Key: "key", Value: bson.D{{Key: "region", Value: "hashed"}}}})
	c := db.Collection("c")
	ctx := testCtx(t)

	// missing key: 61, nothing written
	r := runWrite(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}}}})
	if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 61 || r.WriteErrors[0].ErrMsg != "document does not contain shard key at 'region'" || r.N != 0 {
		t.Fatalf("insert without the shard key: %v", r.Raw)
	}
	// array: refused
	r = runWrite(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 2}, {Key: "region", Value: bson.A{"EU"}}}}}})
	if len(r.WriteErrors) != 1 || r.N != 0 {
		t.Fatalf("insert with an array shard key: %v", r.Raw)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d documents after refused inserts", n)
	}
	// unordered: the good ones go in
	r = runWrite(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "ordered", Value: false}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "EU"}, {Key: "v", Value: 1}},
		bson.D{{Key: "_id", Value: 9}},
		bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "US"}, {Key: "v", Value: 2}}, // same _id, other logical partition
	}}})
	if r.N != 2 || len(r.WriteErrors) != 1 || r.WriteErrors[0].Index != 1 {
		t.Fatalf("unordered insert: %v", r.Raw)
	}
	// same _id, same key: duplicate
	r = runWrite(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "EU"}}}}})
	if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 11000 {
		t.Fatalf("duplicate _id within a logical partition: %v", r.Raw)
	}
	// _id alone finds both; with the key, one
	if got := idsIn(t, c, bson.D{{Key: "_id", Value: 1}}); len(got) != 2 {
		t.Fatalf("find {_id: 1}: %v", got)
	}
	var doc bson.M
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "US"}}).Decode(&doc); err != nil || doc["v"] != int32(2) {
		t.Fatalf("find {_id: 1, region: US}: %v, %v", doc, err)
	}
	// updating the key: 66
	_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "EU"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "region", Value: "APAC"}}}})
	wantWriteCode(t, err, 66)
	_, err = c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "EU"}}, bson.D{{Key: "v", Value: 5}})
	wantWriteCode(t, err, 66)
	var fam bson.Raw
	err = db.RunCommand(ctx, bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "region", Value: "EU"}}},
		{Key: "update", Value: bson.D{{Key: "$unset", Value: bson.D{{Key: "region", Value: ""}}}}}}).Decode(&fam)
	wantCode(t, err, 66, "ImmutableField")
	// other fields update fine, also without the key (fan-out)
	if res, err := c.UpdateMany(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 10}}}}); err != nil || res.ModifiedCount != 2 {
		t.Fatalf("updateMany without the key: %+v, %v", res, err)
	}
	// upsert without the full key: 61; with it: inserted in its partition
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 5}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
	wantWriteCode(t, err, 61)
	res, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "region", Value: "EU"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil || res.UpsertedCount != 1 {
		t.Fatalf("upsert with the key: %+v, %v", res, err)
	}
	if got := idsIn(t, c, bson.D{{Key: "region", Value: "EU"}}); !slices.Equal(got, []string{"1", "5"}) {
		t.Fatalf("EU holds %v", got)
	}
	// delete by _id and key deletes one; by _id alone, the rest
	if dr, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "US"}}); err != nil || dr.DeletedCount != 1 {
		t.Fatalf("delete {_id: 1, region: US}: %+v, %v", dr, err)
	}
	if dr, err := c.DeleteMany(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil || dr.DeletedCount != 1 {
		t.Fatalf("delete {_id: 1}: %+v, %v", dr, err)
	}
	checkStatsAgainstScan(t, c, "region")
}

// wantWriteCode checks that err is a write exception with one write
// error of code.
func wantWriteCode(t testing.TB, err error, code int) {
	t.Helper()
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != code {
		t.Fatalf("want write error %d, got %v", code, err)
	}
}

// smallLimits make partitions split after a few hundred KiB.
var smallLimits = engine.PartitionLimits{MaxBytes: 256 << 10, LogicalMaxBytes: 128 << 10}

// insertSpread inserts n documents over keys logical partitions, in
// batches, with _id from first.
func insertSpread(t testing.TB, c *mongo.Collection, first, n, keys int) {
	t.Helper()
	pad := strings.Repeat("p", 150)
	for i := first; i < first+n; i += 500 {
		batch := make([]any, 0, 500)
		for j := i; j < min(i+500, first+n); j++ {
			batch = append(batch, bson.D{{Key: "_id", Value: j}, {Key: "tenant", Value: fmt.Sprintf("t%03d", j%keys)}, {Key: "pad", Value: pad}})
		}
		if _, err := c.InsertMany(testCtx(t), batch); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPartitionSplits(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Partitions: smallLimits})
	client := newTestClient(t, s)
	admin := client.Database("admin")
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "split.c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}})
	db := client.Database("split")
	c := db.Collection("c")
	const n, keys = 6000, 300
	insertSpread(t, c, 0, n, keys)

	ps := checkStatsAgainstScan(t, c, "tenant")
	if ps.PartitionCount < 4 {
		t.Fatalf("%d partitions after %d documents (%d bytes) at a 256 KiB limit", ps.PartitionCount, n, ps.DataBytes)
	}
	if ps.LogicalCount != keys || ps.DocumentCount != n {
		t.Fatalf("%d logical partitions and %d documents, want %d and %d", ps.LogicalCount, ps.DocumentCount, keys, n)
	}
	for _, p := range ps.Partitions {
		if p.DataBytes+p.IndexBytes > 256<<10 {
			t.Errorf("partition %s holds %d bytes over %d logical partitions: not split", p.ID, p.DataBytes+p.IndexBytes, p.LogicalCount)
		}
		if p.ID != "0" && len(p.Parents) == 0 {
			t.Errorf("partition %s has no parents", p.ID)
		}
		if len(p.Largest) == 0 || p.Largest[0].ShardKey.Type != bson.TypeString {
			t.Errorf("partition %s: largest logical partitions %+v", p.ID, p.Largest)
		}
	}
	// every document exactly once, with and without a sort, and counted
	ids := idsIn(t, c, bson.D{})
	if len(ids) != n || len(slices.Compact(slices.Clone(sortedStrings(ids)))) != n {
		t.Fatalf("find returned %d documents (%d distinct), want %d", len(ids), len(slices.Compact(sortedStrings(ids))), n)
	}
	cur, err := c.Find(testCtx(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 100}}}}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(333))
	if err != nil {
		t.Fatal(err)
	}
	var sorted []bson.Raw
	if err := cur.All(testCtx(t), &sorted); err != nil {
		t.Fatal(err)
	}
	for i, d := range sorted {
		if got := intOf(t, d.Lookup("_id")); got != int64(100+i) {
			t.Fatalf("sorted find: document %d has _id %d", i, got)
		}
	}
	if len(sorted) != n-100 {
		t.Fatalf("sorted find returned %d documents", len(sorted))
	}
	if got, err := c.CountDocuments(testCtx(t), bson.D{{Key: "pad", Value: bson.D{{Key: "$exists", Value: true}}}}); err != nil || got != n {
		t.Fatalf("count over all partitions = %d, %v", got, err)
	}
	if got, err := c.CountDocuments(testCtx(t), bson.D{{Key: "tenant", Value: "t007"}}); err != nil || got != n/keys {
		t.Fatalf("count of one key = %d, %v", got, err)
	}
	var skipped []bson.Raw
	cur, err = c.Find(testCtx(t), bson.D{}, options.Find().SetSkip(5990).SetLimit(20))
	if err == nil {
		err = cur.All(testCtx(t), &skipped)
	}
	if err != nil || len(skipped) != 10 {
		t.Fatalf("skip 5990 limit 20: %d documents, %v", len(skipped), err)
	}

	// explain names the partitions a read targets
	explainParts := func(filter bson.D) []string {
		raw := runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}}}, {Key: "verbosity", Value: "executionStats"}})
		var out []string
		shards, _ := raw.Lookup("queryPlanner", "winningPlan", "shards").Array().Values()
		for _, sh := range shards {
			out = append(out, sh.Document().Lookup("partitionKeyRangeId").StringValue())
		}
		return out
	}
	one := explainParts(bson.D{{Key: "tenant", Value: "t042"}})
	if len(one) != 1 {
		t.Fatalf("explain of a shard-key equality targets %v", one)
	}
	if point := explainParts(bson.D{{Key: "_id", Value: 42}, {Key: "tenant", Value: "t042"}}); !slices.Equal(point, one) {
		t.Fatalf("explain of a point read targets %v, want %v", point, one)
	}
	// a point read by _id and shard key reads one key
	raw := runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 42}, {Key: "tenant", Value: "t042"}}}}}, {Key: "verbosity", Value: "executionStats"}})
	if got := intOf(t, mustLookup(t, raw, "executionStats", "totalDocsExamined")); got != 1 {
		t.Fatalf("a point read examined %d documents: %v", got, raw)
	}
	two := explainParts(bson.D{{Key: "tenant", Value: bson.D{{Key: "$in", Value: bson.A{"t042", "t043"}}}}})
	if len(two) < 1 || len(two) > 2 {
		t.Fatalf("explain of $in of two keys targets %v", two)
	}
	if all := explainParts(bson.D{{Key: "pad", Value: "x"}}); len(all) != int(ps.PartitionCount) {
		t.Fatalf("explain of a filter without the key targets %v, want all %d", all, ps.PartitionCount)
	}
	// executionStats per partition add up to the totals
	raw = runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "pad", Value: bson.D{{Key: "$exists", Value: true}}}}}}}, {Key: "verbosity", Value: "executionStats"}})
	shardStats, _ := mustLookup(t, raw, "executionStats", "executionStages", "shards").Array().Values()
	var examined, returned int64
	for _, sh := range shardStats {
		examined += intOf(t, sh.Document().Lookup("totalDocsExamined"))
		returned += intOf(t, sh.Document().Lookup("nReturned"))
	}
	if len(shardStats) != int(ps.PartitionCount) || examined != n || returned != n ||
		intOf(t, mustLookup(t, raw, "executionStats", "totalDocsExamined")) != n {
		t.Fatalf("fan-out explain: %d shards examined %d and returned %d documents, want %d partitions, %d and %d", len(shardStats), examined, returned, ps.PartitionCount, n, n)
	}
	var doc bson.M
	if err := c.FindOne(testCtx(t), bson.D{{Key: "_id", Value: 42}, {Key: "tenant", Value: "t042"}}).Decode(&doc); err != nil {
		t.Fatalf("point read: %v", err)
	}

	// the config views behind sh.status(): one chunk per partition
	config := client.Database("config")
	var coll bson.Raw
	if err := config.Collection("collections").FindOne(testCtx(t), bson.D{{Key: "_id", Value: "split.c"}}).Decode(&coll); err != nil {
		t.Fatalf("config.collections: %v", err)
	}
	if got := coll.Lookup("key", "tenant").StringValue(); got != "hashed" {
		t.Errorf("config.collections key = %v", coll)
	}
	cur, err = config.Collection("chunks").Find(testCtx(t), bson.D{{Key: "uuid", Value: coll.Lookup("uuid")}}, options.Find().SetSort(bson.D{{Key: "min", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var chunks []bson.Raw
	if err := cur.All(testCtx(t), &chunks); err != nil {
		t.Fatal(err)
	}
	if len(chunks) != int(ps.PartitionCount) {
		t.Fatalf("%d chunks for %d partitions", len(chunks), ps.PartitionCount)
	}
	raw = runOK(t, config, bson.D{{Key: "count", Value: "chunks"}, {Key: "query", Value: bson.D{{Key: "ns", Value: "split.c"}}}})
	if got := intOf(t, mustLookup(t, raw, "n")); got != int64(ps.PartitionCount) {
		t.Fatalf("count of config.chunks = %d, want %d", got, ps.PartitionCount)
	}
	if chunks[0].Lookup("min", "tenant").Type != bson.TypeMinKey || chunks[len(chunks)-1].Lookup("max", "tenant").Type != bson.TypeMaxKey {
		t.Errorf("chunks do not span MinKey to MaxKey: %v ... %v", chunks[0], chunks[len(chunks)-1])
	}
	for i := 1; i < len(chunks); i++ {
		if !chunks[i].Lookup("min", "tenant").Equal(chunks[i-1].Lookup("max", "tenant")) {
			t.Errorf("chunk %d starts at %v, chunk %d ends at %v", i, chunks[i].Lookup("min"), i-1, chunks[i-1].Lookup("max"))
		}
	}
	for _, name := range []string{"version", "shards", "databases", "mongos"} {
		if n, err := config.Collection(name).CountDocuments(testCtx(t), bson.D{}); err != nil || n == 0 {
			// count is not a view: read them with find
			var got []bson.Raw
			cur, err := config.Collection(name).Find(testCtx(t), bson.D{})
			if err == nil {
				err = cur.All(testCtx(t), &got)
			}
			if err != nil || len(got) == 0 {
				t.Errorf("config.%s: %d documents, %v", name, len(got), err)
			}
		}
	}

	// the whole server in one admin command
	raw = runOK(t, admin, bson.D{{Key: "customAction", Value: "GetPartitionStats"}})
	found := false
	vals, _ := raw.Lookup("collections").Array().Values()
	for _, v := range vals {
		if v.Document().Lookup("collection").StringValue() == "c" && v.Document().Lookup("database").StringValue() == "split" {
			found = true
		}
	}
	if !found {
		t.Errorf("server-wide stats do not list split.c: %v", raw)
	}
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestWritersDuringSplits: writers insert and update while partitions
// split under them; afterwards every acknowledged document is there once.
func TestWritersDuringSplits(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Partitions: engine.PartitionLimits{MaxBytes: 128 << 10}})
	client := newTestClient(t, s)
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: "w.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}})
	c := client.Database("w").Collection("c")
	const writers, each = 4, 600
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pad := strings.Repeat("w", 200)
			for i := range each {
				id := w*each + i
				doc := bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id % 97}, {Key: "pad", Value: pad}, {Key: "n", Value: 0}}
				if _, err := c.InsertOne(ctx, doc); err != nil {
					errs <- err
					return
				}
				if i%5 == 0 {
					if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id % 97}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	// a reader scans while the writers write and the map changes
	stop := make(chan struct{})
	var readerErr error
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cur, err := c.Find(ctx, bson.D{}, options.Find().SetBatchSize(200))
			if err != nil {
				readerErr = err
				return
			}
			seen := map[int64]bool{}
			for cur.Next(ctx) {
				id := intOf(t, cur.Current.Lookup("_id"))
				if seen[id] {
					readerErr = fmt.Errorf("document %d returned twice by one find", id)
					return
				}
				seen[id] = true
			}
			if err := cur.Err(); err != nil {
				readerErr = err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if readerErr != nil {
		t.Fatal(readerErr)
	}
	ps := checkStatsAgainstScan(t, c, "k")
	if ps.PartitionCount < 3 || ps.DocumentCount != writers*each {
		t.Fatalf("%d partitions, %d documents; want splits and %d", ps.PartitionCount, ps.DocumentCount, writers*each)
	}
	if n, err := c.CountDocuments(testCtx(t), bson.D{{Key: "n", Value: 1}}); err != nil || n != writers*each/5 {
		t.Fatalf("%d updated documents, want %d (%v)", n, writers*each/5, err)
	}
}

// TestPartitionMapSurvivesRestart: the map and the statistics are the
// same after a clean restart.
func TestPartitionMapSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Launch(ServerOptions{Dir: dir, Partitions: smallLimits})
	if err != nil {
		t.Fatal(err)
	}
	client, err := mongo.Connect(optionsFor(s))
	if err != nil {
		t.Fatal(err)
	}
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: "r.c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}})
	insertSpread(t, client.Database("r").Collection("c"), 0, 3000, 150)
	before := checkStatsAgainstScan(t, client.Database("r").Collection("c"), "tenant")
	_ = client.Disconnect(context.Background())
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s2 := StartServer(t, ServerOptions{Dir: dir, Partitions: smallLimits})
	c2 := newTestClient(t, s2).Database("r").Collection("c")
	after := checkStatsAgainstScan(t, c2, "tenant")
	if len(after.Partitions) != len(before.Partitions) || before.PartitionCount < 2 {
		t.Fatalf("%d partitions before the restart, %d after", len(before.Partitions), len(after.Partitions))
	}
	for i := range after.Partitions {
		a, b := after.Partitions[i], before.Partitions[i]
		if a.ID != b.ID || a.MinInclusive != b.MinInclusive || a.MaxExclusive != b.MaxExclusive || a.DocumentCount != b.DocumentCount {
			t.Errorf("partition %d: %+v after, %+v before", i, a, b)
		}
	}
	// and it keeps working: more documents, more splits
	insertSpread(t, c2, 3000, 1500, 150)
	checkStatsAgainstScan(t, c2, "tenant")
}

// TestLogicalPartitionFull: a logical partition at its limit refuses to
// grow, with Cosmos DB's message, and nothing is written.
func TestLogicalPartitionFull(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Partitions: engine.PartitionLimits{MaxBytes: 1 << 20, LogicalMaxBytes: 64 << 10}})
	client := newTestClient(t, s)
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: "full.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}})
	c := client.Database("full").Collection("c")
	pad := strings.Repeat("f", 1000)
	var err error
	i := 0
	for ; i < 200 && err == nil; i++ {
		_, err = c.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: i}, {Key: "k", Value: "hot"}, {Key: "pad", Value: pad}})
	}
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 14031 ||
		we.WriteErrors[0].Message != "Partition key reached maximum size of 64 KB" {
		t.Fatalf("after %d inserts into one logical partition: %v", i, err)
	}
	if n, _ := c.CountDocuments(testCtx(t), bson.D{{Key: "k", Value: "hot"}}); n != int64(i-1) {
		t.Fatalf("%d documents in the full logical partition, want the %d acknowledged", n, i-1)
	}
	if _, err := c.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 0}, {Key: "k", Value: "cold"}, {Key: "pad", Value: pad}}); err != nil {
		t.Fatalf("another logical partition: %v", err)
	}
	_, err = c.UpdateOne(testCtx(t), bson.D{{Key: "_id", Value: 0}, {Key: "k", Value: "hot"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "more", Value: pad}}}})
	wantWriteCode(t, err, 14031)
	checkStatsAgainstScan(t, c, "k")
}

// TestShardExistingCollection: sharding a collection that has documents
// re-places them by their shard key.
func TestShardExistingCollection(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("existing")
	c := db.Collection("c")
	insertSpread(t, c, 0, 2000, 50)
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: "existing.c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}})
	ps := checkStatsAgainstScan(t, c, "tenant")
	if ps.PartitionCount != 4 || ps.DocumentCount != 2000 || ps.LogicalCount != 50 {
		t.Fatalf("after sharding: %d partitions, %d documents, %d logical partitions", ps.PartitionCount, ps.DocumentCount, ps.LogicalCount)
	}
	if got := idsIn(t, c, bson.D{{Key: "tenant", Value: "t007"}}); len(got) != 40 {
		t.Fatalf("tenant t007: %d documents", len(got))
	}
	// a document without the key stops it, changing nothing
	u := db.Collection("u")
	if _, err := u.InsertMany(testCtx(t), []any{bson.D{{Key: "_id", Value: 1}, {Key: "tenant", Value: "a"}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	runFail(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: "existing.u"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}}, 61, "ShardKeyNotFound")
	if n, _ := u.CountDocuments(testCtx(t), bson.D{}); n != 2 {
		t.Fatalf("%d documents left after a failed shardCollection", n)
	}
}

// TestPartitionStatsAfterKill9: per-partition counters are exact after
// the server is killed with SIGKILL mid-stream and restarted.
func TestPartitionStatsAfterKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--partition-max-bytes", "256KiB"}
	p := startProc(t, nil, args...)
	c := connect(t, p.addr)
	runOK(t, c.Database("admin"), bson.D{{Key: "shardCollection", Value: "k9.c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}})
	coll := c.Database("k9").Collection("c")
	insertSpread(t, coll, 0, 4000, 200)
	if _, err := coll.DeleteMany(testCtx(t), bson.D{{Key: "tenant", Value: "t010"}}); err != nil {
		t.Fatal(err)
	}
	before := getPartitionStats(t, c.Database("k9"), "c")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)

	p2 := startProc(t, nil, args...)
	c2 := connect(t, p2.addr)
	after := checkStatsAgainstScan(t, c2.Database("k9").Collection("c"), "tenant")
	if after.DocumentCount != 4000-20 || after.PartitionCount != before.PartitionCount || after.PartitionCount < 2 {
		t.Fatalf("after kill -9: %d documents in %d partitions; before: %d in %d", after.DocumentCount, after.PartitionCount, before.DocumentCount, before.PartitionCount)
	}
}

// TestRenameShardedCollection: as in MongoDB 5.0 and later, a sharded
// collection can be renamed within its database (keeping its shard key and
// documents) but not into another database.
func TestRenameShardedCollection(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")
	ctx := context.Background()
	db := dbName(t)
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: db + ".a"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}})
	if _, err := client.Database(db).Collection("a").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	runOK(t, admin, bson.D{{Key: "renameCollection", Value: db + ".a"}, {Key: "to", Value: db + ".b"}})
	n, err := client.Database(db).Collection("b").CountDocuments(ctx, bson.D{{Key: "k", Value: "x"}})
	if err != nil || n != 1 {
		t.Fatalf("after rename: %d documents, %v", n, err)
	}
	_, err = client.Database(db).Collection("b").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
	wantWriteCode(t, err, 61) // the shard key moved with the collection
	err = admin.RunCommand(ctx, bson.D{{Key: "renameCollection", Value: db + ".b"}, {Key: "to", Value: db + "_other.b"}}).Err()
	wantCode(t, err, 20, "IllegalOperation")
}
