package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Ranged and compound shard keys: shardCollection of each form, routing of
// equality and ranges (by explain's partitions and docsExamined), splits
// of a ranged collection at key boundaries, chunk bounds in MongoDB's
// form, statistics, and Cosmos DB's hierarchical partition keys.

// explainFind runs explain of a find with executionStats: the partitions
// it reads and the documents it examined.
func explainKeyFind(t testing.TB, db *mongo.Database, coll string, filter bson.D) (parts []string, examined int64, raw bson.Raw) {
	t.Helper()
	raw = runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}}}, {Key: "verbosity", Value: "executionStats"}})
	shards, _ := raw.Lookup("queryPlanner", "winningPlan", "shards").Array().Values()
	for _, sh := range shards {
		parts = append(parts, sh.Document().Lookup("partitionKeyRangeId").StringValue())
	}
	return parts, intOf(t, mustLookup(t, raw, "executionStats", "totalDocsExamined")), raw
}

// configChunks are config.chunks of ns, by min.
func configChunks(t testing.TB, client *mongo.Client, ns string) []bson.Raw {
	t.Helper()
	cur, err := client.Database("config").Collection("chunks").Find(testCtx(t), bson.D{{Key: "ns", Value: ns}}, options.Find().SetSort(bson.D{{Key: "min", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var chunks []bson.Raw
	if err := cur.All(testCtx(t), &chunks); err != nil {
		t.Fatal(err)
	}
	return chunks
}

func TestRangedShardKey(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Partitions: smallLimits})
	client := newTestClient(t, s)
	admin := client.Database("admin")
	raw := runOK(t, admin, bson.D{{Key: "shardCollection", Value: "rk.c"}, {Key: "key", Value: bson.D{{Key: "n", Value: 1}}}})
	if got := raw.Lookup("collectionsharded").StringValue(); got != "rk.c" {
		t.Fatalf("shardCollection: %v", raw)
	}
	// again with the same key: fine; with another form: refused
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "rk.c"}, {Key: "key", Value: bson.D{{Key: "n", Value: 1.0}}}})
	runFail(t, admin, bson.D{{Key: "shardCollection", Value: "rk.c"}, {Key: "key", Value: bson.D{{Key: "n", Value: "hashed"}}}}, 23, "AlreadyInitialized")
	runFail(t, admin, bson.D{{Key: "shardCollection", Value: "rk.x"}, {Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "numInitialChunks", Value: 4}}, 72, "InvalidOptions")

	db := client.Database("rk")
	c := db.Collection("c")
	const n = 6000
	pad := strings.Repeat("p", 150)
	// inserted out of order, so that splits do not just follow insertion
	for b := 0; b < n; b += 500 {
		batch := make([]any, 0, 500)
		for j := b; j < b+500; j++ {
			v := (j * 7919) % n
			batch = append(batch, bson.D{{Key: "_id", Value: fmt.Sprintf("id%05d", v)}, {Key: "n", Value: v}, {Key: "pad", Value: pad}})
		}
		if _, err := c.InsertMany(testCtx(t), batch); err != nil {
			t.Fatal(err)
		}
	}
	spec := shard.Spec{Path: "n", Ranged: true}
	ps := checkStatsAgainstScanSpec(t, c, spec, nil)
	if ps.PartitionCount < 4 {
		t.Fatalf("%d partitions after %d documents at a 256 KiB limit", ps.PartitionCount, n)
	}
	if ps.LogicalCount != n || string(ps.ShardKey) != string(mustMarshal(t, bson.D{{Key: "n", Value: int32(1)}})) {
		t.Fatalf("%d logical partitions, key %v", ps.LogicalCount, ps.ShardKey)
	}

	// chunks: MinKey .. MaxKey, bounds ascending values of n, each
	// document in the chunk its value falls in, every one exactly once
	chunks := configChunks(t, client, "rk.c")
	if len(chunks) != int(ps.PartitionCount) {
		t.Fatalf("%d chunks for %d partitions", len(chunks), ps.PartitionCount)
	}
	if chunks[0].Lookup("min", "n").Type != bson.TypeMinKey || chunks[len(chunks)-1].Lookup("max", "n").Type != bson.TypeMaxKey {
		t.Fatalf("chunks do not span MinKey to MaxKey: %v ... %v", chunks[0], chunks[len(chunks)-1])
	}
	var bounds []int64
	for i := 1; i < len(chunks); i++ {
		lo := chunks[i].Lookup("min", "n")
		if !lo.Equal(chunks[i-1].Lookup("max", "n")) {
			t.Fatalf("chunk %d starts at %v, chunk %d ends at %v", i, lo, i-1, chunks[i-1].Lookup("max"))
		}
		if lo.Type != bson.TypeInt32 && lo.Type != bson.TypeInt64 {
			t.Fatalf("chunk bound %v is not a value of n", lo)
		}
		bounds = append(bounds, intOf(t, lo))
	}
	if !slices.IsSorted(bounds) {
		t.Fatalf("chunk bounds not ascending: %v", bounds)
	}
	total := int64(0)
	for i, ch := range chunks {
		filter := bson.D{}
		rng := bson.D{}
		if i > 0 {
			rng = append(rng, bson.E{Key: "$gte", Value: bounds[i-1]})
		}
		if i < len(bounds) {
			rng = append(rng, bson.E{Key: "$lt", Value: bounds[i]})
		}
		if len(rng) > 0 {
			filter = bson.D{{Key: "n", Value: rng}}
		}
		got, err := c.CountDocuments(testCtx(t), filter)
		if err != nil {
			t.Fatal(err)
		}
		if want := intOf(t, ch.Lookup("documentCount")); got != want {
			t.Errorf("chunk %d [%v, %v): %d documents by value, %d by the partition's counters", i, ch.Lookup("min"), ch.Lookup("max"), got, want)
		}
		// a range inside one chunk reads that partition only
		parts, _, _ := explainKeyFind(t, db, "c", filter)
		if len(filter) > 0 && (len(parts) != 1 || parts[0] != ch.Lookup("partitionKeyRangeId").StringValue()) {
			t.Errorf("range of chunk %d reads partitions %v", i, parts)
		}
		total += got
	}
	if total != n {
		t.Fatalf("chunks hold %d documents, want %d", total, n)
	}
	ids := idsIn(t, c, bson.D{})
	if len(ids) != n || len(slices.Compact(sortedStrings(ids))) != n {
		t.Fatalf("find returned %d documents (%d distinct)", len(ids), len(slices.Compact(sortedStrings(ids))))
	}
	// sorted by the key, across partitions
	cur, err := c.Find(testCtx(t), bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 100}}}}, options.Find().SetSort(bson.D{{Key: "n", Value: 1}}).SetBatchSize(700))
	if err != nil {
		t.Fatal(err)
	}
	var sorted []bson.Raw
	if err := cur.All(testCtx(t), &sorted); err != nil {
		t.Fatal(err)
	}
	for i, d := range sorted {
		if got := intOf(t, d.Lookup("n")); got != int64(100+i) {
			t.Fatalf("sorted find: document %d has n %d", i, got)
		}
	}

	// routing by explain: a range examines its documents only, an equality
	// one document in one partition, a filter without the key all
	parts, examined, _ := explainKeyFind(t, db, "c", bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 1000}, {Key: "$lt", Value: 1100}}}})
	if examined != 100 || len(parts) > 2 {
		t.Fatalf("range of 100 values examined %d documents in partitions %v", examined, parts)
	}
	parts, examined, _ = explainKeyFind(t, db, "c", bson.D{{Key: "n", Value: 4242}})
	if examined != 1 || len(parts) != 1 {
		t.Fatalf("equality examined %d documents in %v", examined, parts)
	}
	parts, _, _ = explainKeyFind(t, db, "c", bson.D{{Key: "n", Value: bson.D{{Key: "$in", Value: bson.A{1, 5999}}}}})
	if len(parts) != 2 {
		t.Fatalf("$in of the first and last values reads %v", parts)
	}
	if parts, _, _ = explainKeyFind(t, db, "c", bson.D{{Key: "pad", Value: "x"}}); len(parts) != int(ps.PartitionCount) {
		t.Fatalf("a filter without the key reads %v", parts)
	}
	parts, examined, _ = explainKeyFind(t, db, "c", bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: "a"}}}})
	if examined != 0 || len(parts) != 1 {
		t.Fatalf("a range of strings over numbers examined %d in %v", examined, parts)
	}

	// writes by the key: update, delete, findAndModify, upsert
	if r, err := c.UpdateOne(testCtx(t), bson.D{{Key: "n", Value: 77}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil || r.ModifiedCount != 1 {
		t.Fatalf("updateOne by key: %+v, %v", r, err)
	}
	if r, err := c.UpdateMany(testCtx(t), bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: 10}}}}, bson.D{{Key: "$set", Value: bson.D{{Key: "low", Value: true}}}}); err != nil || r.ModifiedCount != 10 {
		t.Fatalf("updateMany by range: %+v, %v", r, err)
	}
	_, err = c.UpdateOne(testCtx(t), bson.D{{Key: "n", Value: 78}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 79}}}})
	wantWriteCode(t, err, 66)
	var fam bson.Raw
	if err := c.FindOneAndUpdate(testCtx(t), bson.D{{Key: "n", Value: 80}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&fam); err != nil || intOf(t, fam.Lookup("v")) != 1 {
		t.Fatalf("findAndModify by key: %v, %v", fam, err)
	}
	if r, err := c.UpdateOne(testCtx(t), bson.D{{Key: "n", Value: 100000}}, bson.D{{Key: "$set", Value: bson.D{{Key: "new", Value: true}}}}, options.UpdateOne().SetUpsert(true)); err != nil || r.UpsertedCount != 1 {
		t.Fatalf("upsert by key: %+v, %v", r, err)
	}
	if r, err := c.DeleteMany(testCtx(t), bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 5990}}}}); err != nil || r.DeletedCount != 11 {
		t.Fatalf("deleteMany by range: %+v, %v", r, err)
	}
	if _, err := c.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: "arr"}, {Key: "n", Value: bson.A{1, 2}}}); err == nil {
		t.Fatal("an array shard key was inserted")
	}
	checkStatsAgainstScanSpec(t, c, spec, nil)

	// raising throughput splits a ranged collection where its data is
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "rk.t"}, {Key: "key", Value: bson.D{{Key: "day", Value: 1}}}})
	tc := db.Collection("t")
	var days []any
	for i := range 1000 {
		days = append(days, bson.D{{Key: "_id", Value: i}, {Key: "day", Value: bson.NewDateTimeFromTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%100))}})
	}
	if _, err := tc.InsertMany(testCtx(t), days); err != nil {
		t.Fatal(err)
	}
	runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "t"}, {Key: "offerThroughput", Value: 40000}})
	tps := checkStatsAgainstScanSpec(t, tc, shard.Spec{Path: "day", Ranged: true}, nil)
	if tps.PartitionCount != 4 {
		t.Fatalf("%d partitions at 40,000 RU/s", tps.PartitionCount)
	}
	for _, p := range tps.Partitions {
		if p.DocumentCount < 150 {
			t.Errorf("partition %s holds %d of 1000 documents: not split where the data is", p.ID, p.DocumentCount)
		}
	}
	for _, ch := range configChunks(t, client, "rk.t")[1:] {
		if ty := ch.Lookup("min", "day").Type; ty != bson.TypeDateTime {
			t.Errorf("chunk bound %v is not a date", ch.Lookup("min"))
		}
	}
	if ids := idsIn(t, tc, bson.D{}); len(ids) != 1000 {
		t.Fatalf("%d documents after the split", len(ids))
	}

	// sharding a collection with documents by a ranged key places them by
	// value, over as many partitions as its throughput needs, split where
	// the data is
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "old"}, {Key: "offerThroughput", Value: 10000}})
	old := db.Collection("old")
	var olds []any
	for i := range 1000 {
		olds = append(olds, bson.D{{Key: "_id", Value: i}, {Key: "name", Value: fmt.Sprintf("name%04d", 999-i)}})
	}
	if _, err := old.InsertMany(testCtx(t), olds); err != nil {
		t.Fatal(err)
	}
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "rk.old"}, {Key: "key", Value: bson.D{{Key: "name", Value: 1}}}})
	ops := checkStatsAgainstScanSpec(t, old, shard.Spec{Path: "name", Ranged: true}, nil)
	if ops.PartitionCount != 2 || ops.Partitions[0].DocumentCount < 300 || ops.Partitions[1].DocumentCount < 300 {
		t.Fatalf("sharded existing collection: %d partitions holding %d and %d documents", ops.PartitionCount, ops.Partitions[0].DocumentCount, ops.Partitions[len(ops.Partitions)-1].DocumentCount)
	}
	oc := configChunks(t, client, "rk.old")
	if b := oc[1].Lookup("min", "name"); b.Type != bson.TypeString || !strings.HasPrefix(b.StringValue(), "name") {
		t.Fatalf("chunk bound %v", b)
	}

	// a unique ranged key: the key's values stay unique
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "rk.u"}, {Key: "key", Value: bson.D{{Key: "email", Value: 1}}}, {Key: "unique", Value: true}})
	u := db.Collection("u")
	if _, err := u.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "a@x"}}); err != nil {
		t.Fatal(err)
	}
	_, err = u.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "a@x"}})
	wantWriteCode(t, err, 11000)
}

func TestCompoundShardKeys(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Partitions: smallLimits})
	client := newTestClient(t, s)
	admin := client.Database("admin")
	db := client.Database("ck")
	pad := strings.Repeat("p", 150)
	const as, bs = 40, 30
	for i, form := range []bson.D{
		{{Key: "a", Value: 1}, {Key: "b", Value: 1}},
		{{Key: "a", Value: "hashed"}, {Key: "b", Value: 1}},
		{{Key: "a", Value: 1}, {Key: "b", Value: "hashed"}},
	} {
		name := fmt.Sprintf("c%d", i)
		runOK(t, admin, bson.D{{Key: "shardCollection", Value: "ck." + name}, {Key: "key", Value: form}})
		spec, err := shard.ParseSpec(mustMarshal(t, form))
		if err != nil {
			t.Fatal(err)
		}
		c := db.Collection(name)
		var batch []any
		for a := range as {
			for b := range bs {
				for k := range 3 {
					batch = append(batch, bson.D{{Key: "_id", Value: (a*bs+b)*3 + k}, {Key: "a", Value: fmt.Sprintf("a%02d", a)}, {Key: "b", Value: b}, {Key: "pad", Value: pad}})
				}
			}
		}
		if _, err := c.InsertMany(testCtx(t), batch); err != nil {
			t.Fatal(err)
		}
		ps := checkStatsAgainstScanSpec(t, c, spec, nil)
		if ps.PartitionCount < 2 || ps.LogicalCount != as*bs {
			t.Fatalf("%v: %d partitions, %d logical partitions, want several and %d", form, ps.PartitionCount, ps.LogicalCount, as*bs)
		}
		if string(ps.ShardKey) != string(mustMarshal(t, normalizedKey(form))) {
			t.Fatalf("%v: stats shard key %v", form, ps.ShardKey)
		}
		// the whole key: one logical partition in one partition
		parts, examined, raw := explainKeyFind(t, db, name, bson.D{{Key: "a", Value: "a07"}, {Key: "b", Value: 3}})
		if len(parts) != 1 || examined != 3 {
			t.Fatalf("%v: whole-key equality examined %d in %v: %v", form, examined, parts, raw)
		}
		// the leading field: one partition, its documents only
		parts, examined, _ = explainKeyFind(t, db, name, bson.D{{Key: "a", Value: "a07"}})
		if len(parts) != 1 || examined != 3*bs {
			t.Fatalf("%v: leading-field equality examined %d in %v", form, examined, parts)
		}
		// the second field alone: every partition
		if parts, _, _ = explainKeyFind(t, db, name, bson.D{{Key: "b", Value: 3}}); len(parts) != int(ps.PartitionCount) {
			t.Fatalf("%v: second-field equality reads %v of %d partitions", form, parts, ps.PartitionCount)
		}
		if n, err := c.CountDocuments(testCtx(t), bson.D{{Key: "a", Value: "a07"}, {Key: "b", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}); err != nil || n != 6 {
			t.Fatalf("%v: count by key = %d, %v", form, n, err)
		}
		// chunk bounds name every field of the key
		chunks := configChunks(t, client, "ck."+name)
		if len(chunks) != int(ps.PartitionCount) {
			t.Fatalf("%v: %d chunks for %d partitions", form, len(chunks), ps.PartitionCount)
		}
		for _, ch := range chunks {
			for _, f := range []string{"a", "b"} {
				if _, err := ch.LookupErr("min", f); err != nil {
					t.Fatalf("%v: chunk %v has no %s bound", form, ch, f)
				}
			}
		}
		if chunks[0].Lookup("min", "b").Type != bson.TypeMinKey || chunks[len(chunks)-1].Lookup("max", "a").Type != bson.TypeMaxKey {
			t.Fatalf("%v: chunk ends %v ... %v", form, chunks[0], chunks[len(chunks)-1])
		}
		// writes: each field is immutable, and must be there
		_, err = c.UpdateOne(testCtx(t), bson.D{{Key: "a", Value: "a01"}, {Key: "b", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 99}}}})
		wantWriteCode(t, err, 66)
		_, err = c.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: "nob"}, {Key: "a", Value: "a01"}})
		wantWriteCode(t, err, 61)
		if r, err := c.DeleteMany(testCtx(t), bson.D{{Key: "a", Value: "a02"}, {Key: "b", Value: bson.D{{Key: "$lt", Value: 5}}}}); err != nil || r.DeletedCount != 15 {
			t.Fatalf("%v: deleteMany = %+v, %v", form, r, err)
		}
		var doc bson.Raw
		if err := c.FindOneAndDelete(testCtx(t), bson.D{{Key: "a", Value: "a03"}, {Key: "b", Value: 4}}).Decode(&doc); err != nil {
			t.Fatalf("%v: findAndModify: %v", form, err)
		}
		checkStatsAgainstScanSpec(t, c, spec, nil)
	}

	// what MongoDB refuses
	ce := runFail(t, admin, bson.D{{Key: "shardCollection", Value: "ck.bad"}, {Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}}}}, 2, "BadValue")
	if !strings.Contains(ce.Message, "at most one 'hashed' field") {
		t.Errorf("two hashed fields: %s", ce.Message)
	}
	runFail(t, admin, bson.D{{Key: "shardCollection", Value: "ck.bad"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}}, 2, "BadValue")
	runFail(t, admin, bson.D{{Key: "shardCollection", Value: "ck.bad"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: "hashed"}}}, {Key: "unique", Value: true}}, 72, "InvalidOptions")

	// Cosmos DB's hierarchical partition keys
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "h"}, {Key: "shardKey", Value: bson.A{"/tenant", "/user", "/session"}}})
	raw := runOK(t, db, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "h"}})
	want := mustMarshal(t, bson.D{{Key: "tenant", Value: "hashed"}, {Key: "user", Value: int32(1)}, {Key: "session", Value: int32(1)}})
	if got := mustLookup(t, raw, "shardKeyDefinition").Document(); string(got) != string(want) {
		t.Fatalf("hierarchical key definition %v", got)
	}
	h := db.Collection("h")
	if _, err := h.InsertOne(testCtx(t), bson.D{{Key: "tenant", Value: "t1"}, {Key: "user", Value: "u1"}, {Key: "session", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	_, err := h.InsertOne(testCtx(t), bson.D{{Key: "tenant", Value: "t1"}, {Key: "user", Value: "u1"}})
	wantWriteCode(t, err, 61)
	runFail(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "h4"}, {Key: "shardKey", Value: bson.A{"/a", "/b", "/c", "/d"}}}, 2, "BadValue")
}

// normalizedKey is a key pattern with 1 as an int32, as Parsec returns it.
func normalizedKey(d bson.D) bson.D {
	out := bson.D{}
	for _, e := range d {
		if _, ok := e.Value.(string); ok {
			out = append(out, e)
		} else {
			out = append(out, bson.E{Key: e.Key, Value: int32(1)})
		}
	}
	return out
}
