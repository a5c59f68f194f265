package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// lpFixture is a collection sharded on {region: "hashed"} over 4 physical
// partitions, with regions r0..r199 of 25 documents each (_id 0..4999,
// region r<_id % 200>), a sku unique per document and a group of 10.
type lpFixture struct {
	db   *mongo.Database
	coll *mongo.Collection
}

const (
	lpDocs    = 5000
	lpRegions = 200
)

func newLPFixture(t *testing.T) lpFixture {
	t.Helper()
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "shardKey", Value: "region"}, {Key: "offerThroughput", Value: 40000}})
	coll := db.Collection("c")
	pad := strings.Repeat("x", 200)
	for i := 0; i < lpDocs; i += 1000 {
		var batch []any
		for j := i; j < i+1000; j++ {
			batch = append(batch, bson.D{{Key: "_id", Value: j}, {Key: "region", Value: fmt.Sprintf("r%d", j%lpRegions)},
				{Key: "sku", Value: fmt.Sprintf("s%05d", j)}, {Key: "group", Value: j % 10}, {Key: "pad", Value: pad}})
		}
		if _, err := coll.InsertMany(testCtx(t), batch); err != nil {
			t.Fatal(err)
		}
	}
	return lpFixture{db: db, coll: coll}
}

// examined runs explain of cmd with executionStats and returns the
// documents and keys examined, what was returned, and the stage that read.
func examined(t *testing.T, db *mongo.Database, cmd bson.D) (docs, keys, returned int64, stage bson.Raw) {
	t.Helper()
	x := explainFind(t, db, cmd, "executionStats")
	stage, _ = winningStage(t, x)
	return intOf(t, mustLookup(t, x, "executionStats", "totalDocsExamined")),
		intOf(t, mustLookup(t, x, "executionStats", "totalKeysExamined")),
		intOf(t, mustLookup(t, x, "executionStats", "nReturned")), stage
}

func stageIndex(stage bson.Raw) string {
	s, _ := stage.Lookup("stage").StringValueOK()
	n, _ := stage.Lookup("indexName").StringValueOK()
	return s + " " + n
}

// TestLogicalPartitionReads: a read with the shard key reads only its
// logical partitions (find, count, distinct, aggregate, update, delete,
// findAndModify), explain shows it as an IXSCAN of the shard-key index,
// and _id without the shard key reads the _id index.
func TestLogicalPartitionReads(t *testing.T) {
	t.Parallel()
	f := newLPFixture(t)
	db, coll := f.db, f.coll
	per := int64(lpDocs / lpRegions)

	t.Run("find", func(t *testing.T) {
		docs, keys, n, stage := examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r7"}}}})
		if n != per || docs != per || keys != per || stageIndex(stage) != "IXSCAN region_hashed" {
			t.Fatalf("find by shard key: returned %d, docs %d, keys %d, stage %s; want %d each, IXSCAN region_hashed", n, docs, keys, stage, per)
		}
		if b := stage.Lookup("indexBounds", "region").Array(); len(mustValues(t, b)) != 1 {
			t.Errorf("bounds %v", b)
		}
		docs, _, n, _ = examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r7"}}}, {Key: "limit", Value: 3}})
		if n != 3 || docs > 3 {
			t.Fatalf("limit 3: returned %d after examining %d", n, docs)
		}
		in := bson.A{}
		for i := range 10 {
			in = append(in, fmt.Sprintf("r%d", i*7))
		}
		docs, _, n, _ = examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: bson.D{{Key: "$in", Value: in}}}}}})
		if n != 10*per || docs != 10*per {
			t.Fatalf("$in of 10: returned %d, examined %d, want %d", n, docs, 10*per)
		}
		// sorted by _id within one logical partition: no blocking sort
		docs, _, n, _ = examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r7"}}},
			{Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 2}})
		if n != 2 || docs != 2 {
			t.Fatalf("sort {_id: 1} limit 2 in a logical partition: returned %d after examining %d", n, docs)
		}
		// the logical partition is in _id order
		cur, err := coll.Find(testCtx(t), bson.D{{Key: "region", Value: "r9"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []bson.Raw
		if err := cur.All(testCtx(t), &got); err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, len(got))
		for i, d := range got {
			ids[i] = intOf(t, d.Lookup("_id"))
		}
		if len(ids) != int(per) || !slices.IsSorted(ids) {
			t.Fatalf("logical partition r9: %v", ids)
		}
	})

	t.Run("count and distinct", func(t *testing.T) {
		n, err := coll.CountDocuments(testCtx(t), bson.D{{Key: "region", Value: "r11"}})
		if err != nil || n != per {
			t.Fatalf("count: %d, %v", n, err)
		}
		x := runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "region", Value: "r11"}}}}}, {Key: "verbosity", Value: "executionStats"}})
		if d := intOf(t, mustLookup(t, x, "executionStats", "totalDocsExamined")); d != per {
			t.Fatalf("count examined %d documents, want %d", d, per)
		}
		var vals []int32
		res := coll.Distinct(testCtx(t), "group", bson.D{{Key: "region", Value: "r11"}})
		if err := res.Decode(&vals); err != nil || len(vals) != 1 || vals[0] != 1 {
			t.Fatalf("distinct: %v %v", vals, err)
		}
		x = runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "group"}, {Key: "query", Value: bson.D{{Key: "region", Value: "r11"}}}}}, {Key: "verbosity", Value: "executionStats"}})
		if d := intOf(t, mustLookup(t, x, "executionStats", "totalDocsExamined")); d != per {
			t.Fatalf("distinct examined %d documents, want %d", d, per)
		}
	})

	t.Run("aggregate", func(t *testing.T) {
		x := runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$match", Value: bson.D{{Key: "region", Value: "r13"}}}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		}}, {Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: "executionStats"}})
		if d := intOf(t, mustLookup(t, x, "executionStats", "totalDocsExamined")); d != per {
			t.Fatalf("aggregate examined %d documents, want %d: %v", d, per, x)
		}
		cur, err := coll.Aggregate(testCtx(t), mongo.Pipeline{
			{{Key: "$match", Value: bson.D{{Key: "region", Value: "r13"}}}},
			{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.Raw
		if err := cur.All(testCtx(t), &out); err != nil || len(out) != 1 || intOf(t, out[0].Lookup("n")) != per {
			t.Fatalf("aggregate: %v %v", out, err)
		}
	})

	t.Run("_id without the shard key", func(t *testing.T) {
		docs, keys, n, stage := examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 4321}}}})
		if n != 1 || docs != 1 || keys != 1 || stageIndex(stage) != "IXSCAN _id_" {
			t.Fatalf("find by _id: returned %d, docs %d, keys %d, stage %v", n, docs, keys, stage)
		}
		docs, _, n, _ = examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 100}, {Key: "$lt", Value: 110}}}}}})
		if n != 10 || docs != 10 {
			t.Fatalf("_id range: returned %d after %d", n, docs)
		}
		opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(5)
		x := explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 5}}, "executionStats")
		if d := intOf(t, mustLookup(t, x, "executionStats", "totalDocsExamined")); d > 5 {
			t.Fatalf("sort on _id, limit 5, examined %d", d)
		}
		cur, err := coll.Find(testCtx(t), bson.D{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []bson.Raw
		if err := cur.All(testCtx(t), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 5 || intOf(t, got[0].Lookup("_id")) != 0 || intOf(t, got[4].Lookup("_id")) != 4 {
			t.Fatalf("first five by _id: %v", got)
		}
		// the same _id in two logical partitions: both found
		if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 4321}, {Key: "region", Value: "elsewhere"}}); err != nil {
			t.Fatal(err)
		}
		if ids := idsIn(t, coll, bson.D{{Key: "_id", Value: 4321}}); len(ids) != 2 {
			t.Fatalf("_id 4321 in two logical partitions: %v", ids)
		}
		if _, err := coll.DeleteOne(testCtx(t), bson.D{{Key: "_id", Value: 4321}, {Key: "region", Value: "elsewhere"}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("writes", func(t *testing.T) {
		res, err := coll.UpdateMany(testCtx(t), bson.D{{Key: "region", Value: "r17"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "seen", Value: true}}}})
		if err != nil || res.MatchedCount != per || res.ModifiedCount != per {
			t.Fatalf("updateMany: %+v %v", res, err)
		}
		if n, _ := coll.CountDocuments(testCtx(t), bson.D{{Key: "seen", Value: true}}); n != per {
			t.Fatalf("%d documents updated, want %d", n, per)
		}
		var doc bson.Raw
		err = coll.FindOneAndUpdate(testCtx(t), bson.D{{Key: "region", Value: "r17"}, {Key: "group", Value: 7}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&doc)
		if err != nil || intOf(t, doc.Lookup("n")) != 1 || doc.Lookup("region").StringValue() != "r17" {
			t.Fatalf("findAndModify: %v %v", doc, err)
		}
		del, err := coll.DeleteMany(testCtx(t), bson.D{{Key: "region", Value: bson.D{{Key: "$in", Value: bson.A{"r17", "r18"}}}}})
		if err != nil || del.DeletedCount != 2*per {
			t.Fatalf("deleteMany: %+v %v", del, err)
		}
		if n, _ := coll.CountDocuments(testCtx(t), bson.D{}); n != lpDocs-2*per {
			t.Fatalf("%d documents left, want %d", n, lpDocs-2*per)
		}
	})

	t.Run("with a secondary index", func(t *testing.T) {
		if _, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{{Keys: bson.D{{Key: "sku", Value: 1}}}, {Keys: bson.D{{Key: "group", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
		// equality on both: the index entries of that logical partition only
		docs, keys, n, stage := examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r21"}, {Key: "group", Value: 1}}}})
		if n != per || docs != per || keys != per || stageIndex(stage) != "IXSCAN group_1" {
			t.Fatalf("region and group: returned %d, docs %d, keys %d, %s", n, docs, keys, stageIndex(stage))
		}
		// a range that matches one document in the partition: the index
		docs, _, n, stage = examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r21"}, {Key: "sku", Value: bson.D{{Key: "$gte", Value: "s04821"}, {Key: "$lte", Value: "s04821"}}}}}})
		if n != 1 || docs != 1 || stageIndex(stage) != "IXSCAN sku_1" {
			t.Fatalf("region and a narrow sku range: returned %d after %d, %s", n, docs, stageIndex(stage))
		}
		// a range wider than the logical partition: the logical partition
		docs, _, n, stage = examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r21"}, {Key: "sku", Value: bson.D{{Key: "$gte", Value: "s00000"}}}}}})
		if n != per || docs != per || stageIndex(stage) != "IXSCAN region_hashed" {
			t.Fatalf("region and a wide sku range: returned %d after %d, %s", n, docs, stageIndex(stage))
		}
		// a hint names the shard-key index
		_, _, n, stage = examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r21"}, {Key: "group", Value: 1}}}, {Key: "hint", Value: "region_hashed"}})
		if n != per || stageIndex(stage) != "IXSCAN region_hashed" {
			t.Fatalf("hinted shard-key index: %d, %s", n, stageIndex(stage))
		}
	})

	t.Run("bad hints", func(t *testing.T) {
		runOK(t, db, bson.D{{Key: "create", Value: "plain"}})
		for _, hint := range []any{"region_hashed", bson.D{{Key: "region", Value: "hashed"}}} {
			runFail(t, db, bson.D{{Key: "find", Value: "plain"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r1"}}}, {Key: "hint", Value: hint}}, 2, "BadValue")
		}
		// on the sharded collection both forms name the shard-key index
		_, _, n, stage := examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "region", Value: "r3"}}}, {Key: "hint", Value: bson.D{{Key: "region", Value: "hashed"}}}})
		if n != per || stageIndex(stage) != "IXSCAN region_hashed" {
			t.Fatalf("hint by key: %d, %s", n, stageIndex(stage))
		}
	})

	t.Run("a $in of 200,000 values", func(t *testing.T) {
		total, err := coll.CountDocuments(testCtx(t), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"region", "_id"} {
			in := make(bson.A, 0, 200_000)
			for i := range 200_000 {
				if path == "region" {
					in = append(in, fmt.Sprintf("r%d", i))
				} else {
					in = append(in, i)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			start := time.Now()
			n, err := coll.CountDocuments(ctx, bson.D{{Key: path, Value: bson.D{{Key: "$in", Value: in}}}})
			took := time.Since(start)
			cancel()
			if err != nil || n != total {
				t.Fatalf("$in on %s: %d, %v; want %d", path, n, err, total)
			}
			t.Logf("a $in of 200,000 values on %s: %v (race detector: %v)", path, took, raceEnabled)
			// About a second on a quiet machine; quadratic work took
			// minutes. The bound leaves room for a loaded one.
			if !raceEnabled && took > 10*time.Second {
				t.Errorf("a $in of 200,000 values on %s took %v", path, took)
			}
		}
	})
}

func mustValues(t *testing.T, a bson.RawArray) []bson.RawValue {
	t.Helper()
	vals, err := a.Values()
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// TestLogicalPartitionReadsMatchScan compares, on random data and random
// filters over the shard key, _id and an indexed field, every access path
// with a collection scan ({$natural: 1}).
func TestLogicalPartitionReadsMatchScan(t *testing.T) {
	t.Parallel()
	f := newLPFixture(t)
	db, coll := f.db, f.coll
	if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "group", Value: 1}, {Key: "sku", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 11))
	region := func() any { return fmt.Sprintf("r%d", r.IntN(lpRegions+5)) }
	for i := range 150 {
		filter := bson.D{}
		switch r.IntN(3) {
		case 0:
			filter = append(filter, bson.E{Key: "region", Value: region()})
		case 1:
			filter = append(filter, bson.E{Key: "region", Value: bson.D{{Key: "$in", Value: bson.A{region(), region(), region()}}}})
		}
		switch r.IntN(4) {
		case 0:
			filter = append(filter, bson.E{Key: "_id", Value: r.IntN(lpDocs)})
		case 1:
			lo := r.IntN(lpDocs)
			filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo + r.IntN(600)}}})
		case 2:
			filter = append(filter, bson.E{Key: "group", Value: r.IntN(12)})
		}
		if r.IntN(3) == 0 {
			filter = append(filter, bson.E{Key: "sku", Value: bson.D{{Key: "$gt", Value: fmt.Sprintf("s%05d", r.IntN(lpDocs))}}})
		}
		want := sortedIDs(t, findWith(t, coll, filter, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}})))
		got := sortedIDs(t, findWith(t, coll, filter, nil))
		if !slices.Equal(got, want) {
			t.Fatalf("case %d %v: planned read gives %d documents, a collection scan %d", i, filter, len(got), len(want))
		}
		n, err := coll.CountDocuments(testCtx(t), filter)
		if err != nil || n != int64(len(want)) {
			t.Fatalf("case %d %v: count %d (%v), want %d", i, filter, n, err, len(want))
		}
		// explain agrees with what came back
		if _, _, ret, _ := examined(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}}); ret != int64(len(want)) {
			t.Fatalf("case %d %v: explain returned %d, want %d", i, filter, ret, len(want))
		}
	}
}

func findWith(t *testing.T, coll *mongo.Collection, filter bson.D, opts *options.FindOptionsBuilder) []bson.Raw {
	t.Helper()
	var cur *mongo.Cursor
	var err error
	if opts != nil {
		cur, err = coll.Find(testCtx(t), filter, opts)
	} else {
		cur, err = coll.Find(testCtx(t), filter)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Raw
	if err := cur.All(testCtx(t), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRUShardedQueries: what queries on a sharded collection are charged,
// through getLastRequestStatistics — the cases of ru/testdata/charge
// ("Queries on a sharded collection"), measured end to end.
func TestRUShardedQueries(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(1))
	db := client.Database(dbName(t))
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "shardKey", Value: "region"}, {Key: "offerThroughput", Value: 24000}})
	coll := db.Collection("c")
	if ps := getPartitionStats(t, db, "c"); len(ps.Partitions) != 4 {
		t.Fatalf("%d partitions, want 4", len(ps.Partitions))
	}
	// 100 regions of 5 items and region "big" of 50, each item 1 KB
	var docs []any
	item := func(id int, region string) bson.D {
		base := sizedDoc(id, 1024-len(`region`)-len(region)-7)
		var d bson.D
		if err := bson.Unmarshal(base, &d); err != nil {
			t.Fatal(err)
		}
		return append(d, bson.E{Key: "region", Value: region})
	}
	for i := range 500 {
		docs = append(docs, item(i, fmt.Sprintf("r%d", i%100)))
	}
	for i := range 50 {
		docs = append(docs, item(1000+i, "big"))
	}
	if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	charge := func(t *testing.T, lo, hi float64) {
		t.Helper()
		if st := lastRequestStats(t, db); st.Charge < lo || st.Charge > hi {
			t.Errorf("RequestCharge %.2f RU, want [%.2f, %.2f]", st.Charge, lo, hi)
		}
	}
	run := func(t *testing.T, filter bson.D, want int) {
		t.Helper()
		var reply struct {
			Cursor struct {
				FirstBatch []bson.Raw `bson:"firstBatch"`
			} `bson:"cursor"`
		}
		if err := db.RunCommand(testCtx(t), bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: 1000}, {Key: "singleBatch", Value: true}}).Decode(&reply); err != nil {
			t.Fatal(err)
		}
		if len(reply.Cursor.FirstBatch) != want {
			t.Fatalf("%v: %d items, want %d", filter, len(reply.Cursor.FirstBatch), want)
		}
	}
	t.Run("in one logical partition, 50 x 1 KB", func(t *testing.T) {
		run(t, bson.D{{Key: "region", Value: "big"}}, 50)
		charge(t, 50, 56) // 2.5 + 50 x 1, not the rest of the partition
	})
	t.Run("_id without the shard key on 4 partitions", func(t *testing.T) {
		run(t, bson.D{{Key: "_id", Value: 1010}}, 1)
		charge(t, 10, 12.5) // 4 x 2.5 + 1
	})
	t.Run("writes by _id without the shard key", func(t *testing.T) {
		// found through the _id index: the item's own cost, not a read of
		// every partition (as a range on _id still does)
		price := func(filter bson.D, update bson.D) float64 {
			t.Helper()
			res, err := coll.UpdateOne(testCtx(t), filter, update)
			if err != nil || res.ModifiedCount != 1 {
				t.Fatalf("updateOne %v: %+v %v", filter, res, err)
			}
			return lastRequestStats(t, db).Charge
		}
		byID := price(bson.D{{Key: "_id", Value: 1020}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		byRange := price(bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 1020}, {Key: "$lte", Value: 1020}}}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		t.Logf("updateOne by _id: %.2f RU; by an _id range: %.2f RU", byID, byRange)
		if byID > 25 || byRange < byID+30 {
			t.Errorf("updateOne by _id costs %.2f RU, by an _id range (a scan) %.2f RU", byID, byRange)
		}
		var doc bson.Raw
		if err := coll.FindOneAndUpdate(testCtx(t), bson.D{{Key: "_id", Value: 1020}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}},
			options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&doc); err != nil || intOf(t, doc.Lookup("n")) != 3 {
			t.Fatalf("findAndModify by _id: %v %v", doc, err)
		}
		if st := lastRequestStats(t, db); st.Charge > 25 {
			t.Errorf("findAndModify by _id costs %.2f RU", st.Charge)
		}
		res, err := coll.DeleteMany(testCtx(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1021, 1022, 99999}}}}})
		if err != nil || res.DeletedCount != 2 {
			t.Fatalf("deleteMany by _id: %+v %v", res, err)
		}
		if st := lastRequestStats(t, db); st.Charge > 30 {
			t.Errorf("deleteMany of 2 by _id costs %.2f RU", st.Charge)
		}
		if n, _ := coll.CountDocuments(testCtx(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1021, 1022}}}}}); n != 0 {
			t.Fatalf("%d deleted documents still found", n)
		}
	})
	t.Run("an _id range over 4 partitions", func(t *testing.T) {
		// 100 items read through the _id index, each counted once, on the
		// partition that holds it: 4 x 2.5 + 100 x 1
		run(t, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 100}, {Key: "$lt", Value: 200}}}}, 100)
		charge(t, 105, 116)
		run(t, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 1000}}}}, 48) // "big" less the two deleted above
		charge(t, 53, 64)
	})
	t.Run("$in of 10 shard-key values", func(t *testing.T) {
		in := bson.A{}
		for i := range 10 {
			in = append(in, fmt.Sprintf("r%d", i))
		}
		run(t, bson.D{{Key: "region", Value: bson.D{{Key: "$in", Value: in}}}}, 50)
		charge(t, 52, 61) // at most 4 x 2.5 + 50 x 1
	})
}
