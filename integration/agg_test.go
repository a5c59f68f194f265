package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestAggregate runs the aggregate command end to end through the
// driver: pipelines, cursors, options, explain, database-level
// aggregates, writes and MongoDB's error codes. The stages and
// expressions themselves are covered case by case in engine/agg's and
// engine/expr's testdata; here the point is that aggregate carries them
// to clients.
func TestAggregate(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), AggMemoryLimit: 16 << 10})
	client := newTestClient(t, s)
	db := client.Database("agg")
	sales := db.Collection("sales")
	var docs []any
	for i := range 300 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "store", Value: fmt.Sprintf("s%d", i%3)},
			{Key: "qty", Value: i % 7}, {Key: "price", Value: float64(i%5) + 0.5},
			{Key: "tags", Value: bson.A{"a", fmt.Sprintf("t%d", i%4)}}})
	}
	if _, err := sales.InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	all := func(t *testing.T, c *mongo.Collection, pipeline any, opts ...options.Lister[options.AggregateOptions]) []bson.M {
		t.Helper()
		cur, err := c.Aggregate(testCtx(t), pipeline, opts...)
		if err != nil {
			t.Fatalf("aggregate %v: %v", pipeline, err)
		}
		var out []bson.M
		if err := cur.All(testCtx(t), &out); err != nil {
			t.Fatalf("aggregate %v: %v", pipeline, err)
		}
		return out
	}
	d := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }

	t.Run("group sum avg", func(t *testing.T) {
		t.Parallel()
		out := all(t, sales, bson.A{
			d("$group", bson.D{{Key: "_id", Value: "$store"}, {Key: "n", Value: d("$sum", 1)}, {Key: "q", Value: d("$sum", "$qty")}, {Key: "p", Value: d("$avg", "$price")}}),
			d("$sort", d("_id", 1)),
		})
		if len(out) != 3 {
			t.Fatalf("got %d groups: %v", len(out), out)
		}
		// Store s0 holds _id 0, 3, ..., 297: 100 documents.
		wantQ, wantP := int32(0), 0.0
		for i := 0; i < 300; i += 3 {
			wantQ += int32(i % 7)
			wantP += float64(i%5) + 0.5
		}
		if out[0]["_id"] != "s0" || out[0]["n"] != int32(100) || out[0]["q"] != wantQ || out[0]["p"] != wantP/100 {
			t.Fatalf("group s0: %v, want n 100, q %d, p %v", out[0], wantQ, wantP/100)
		}
	})

	t.Run("countDocuments", func(t *testing.T) {
		t.Parallel()
		n, err := sales.CountDocuments(testCtx(t), d("qty", d("$gte", 5)))
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		for i := range 300 {
			if i%7 >= 5 {
				want++
			}
		}
		if n != want {
			t.Fatalf("countDocuments: %d, want %d", n, want)
		}
		n, err = sales.CountDocuments(testCtx(t), bson.D{}, options.Count().SetSkip(10).SetLimit(5))
		if err != nil || n != 5 {
			t.Fatalf("countDocuments with skip and limit: %d %v", n, err)
		}
		n, err = db.Collection("nothing").CountDocuments(testCtx(t), bson.D{})
		if err != nil || n != 0 {
			t.Fatalf("countDocuments of a missing collection: %d %v", n, err)
		}
	})

	t.Run("unwind lookup facet", func(t *testing.T) {
		t.Parallel()
		stores := db.Collection("stores")
		if _, err := stores.InsertMany(testCtx(t), []any{
			bson.D{{Key: "_id", Value: "s0"}, {Key: "city", Value: "Oslo"}},
			bson.D{{Key: "_id", Value: "s1"}, {Key: "city", Value: "Lima"}},
		}); err != nil {
			t.Fatal(err)
		}
		cur, err := sales.Aggregate(testCtx(t), bson.A{
			d("$match", d("_id", d("$lt", 6))),
			d("$lookup", bson.D{{Key: "from", Value: "stores"}, {Key: "localField", Value: "store"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "s"}}),
			d("$unwind", bson.D{{Key: "path", Value: "$s"}, {Key: "preserveNullAndEmptyArrays", Value: true}}),
			d("$facet", bson.D{
				{Key: "cities", Value: bson.A{d("$group", bson.D{{Key: "_id", Value: "$s.city"}, {Key: "n", Value: d("$sum", 1)}}), d("$sort", d("_id", 1))}},
				{Key: "tags", Value: bson.A{d("$unwind", "$tags"), d("$sortByCount", "$tags"), d("$limit", 1)}},
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.Raw
		if err := cur.All(testCtx(t), &out); err != nil || len(out) != 1 {
			t.Fatalf("facet: %v %v", out, err)
		}
		got := out[0].Lookup("cities").String() + " " + out[0].Lookup("tags").String()
		want := `[{"_id": null,"n": {"$numberInt":"2"}},{"_id": "Lima","n": {"$numberInt":"2"}},{"_id": "Oslo","n": {"$numberInt":"2"}}] [{"_id": "a","count": {"$numberInt":"6"}}]`
		if got != want {
			t.Fatalf("facet: %s\nwant   %s", got, want)
		}
	})

	t.Run("batches and getMore", func(t *testing.T) {
		t.Parallel()
		cur, err := sales.Aggregate(testCtx(t), bson.A{d("$match", d("qty", d("$gt", 0))), d("$project", d("qty", 1))}, options.Aggregate().SetBatchSize(7))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for cur.Next(testCtx(t)) {
			if q := cur.Current.Lookup("qty").Int32(); q <= 0 {
				t.Fatalf("document %v does not match", cur.Current)
			}
			n++
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		if n != 300-43 {
			t.Fatalf("%d documents, want %d", n, 300-43)
		}
		// batchSize 0: an empty first batch and an open cursor.
		c := runCursor(t, db, bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: d("batchSize", 0)}})
		if len(c.batch()) != 0 || c.Cursor.ID == 0 || c.Cursor.NS != "agg.sales" {
			t.Fatalf("batchSize 0: %+v", c.Cursor)
		}
		more := runCursor(t, db, bson.D{{Key: "getMore", Value: c.Cursor.ID}, {Key: "collection", Value: "sales"}, {Key: "batchSize", Value: 1000}})
		if len(more.batch()) != 300 || more.Cursor.ID != 0 {
			t.Fatalf("getMore: %d documents, cursor %d", len(more.batch()), more.Cursor.ID)
		}
		// A cursor killed half way is gone.
		c = runCursor(t, db, bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: bson.A{d("$sort", d("qty", -1))}}, {Key: "cursor", Value: d("batchSize", 2)}})
		runOK(t, db, bson.D{{Key: "killCursors", Value: "sales"}, {Key: "cursors", Value: bson.A{c.Cursor.ID}}})
		runFail(t, db, bson.D{{Key: "getMore", Value: c.Cursor.ID}, {Key: "collection", Value: "sales"}}, 43, "CursorNotFound")
	})

	t.Run("let hint comment collation", func(t *testing.T) {
		t.Parallel()
		out := all(t, sales, bson.A{d("$match", d("$expr", d("$eq", bson.A{"$_id", "$$target"}))), d("$project", d("v", "$$target"))},
			options.Aggregate().SetLet(d("target", 42)).SetHint("_id_").SetComment("hello"))
		if len(out) != 1 || out[0]["v"] != int32(42) {
			t.Fatalf("let: %v", out)
		}
		_, err := sales.Aggregate(testCtx(t), bson.A{}, options.Aggregate().SetHint(d("qty", 1)))
		wantCode(t, err, 2, "BadValue")
		_, err = sales.Aggregate(testCtx(t), bson.A{}, options.Aggregate().SetCollation(&options.Collation{Locale: "fr"}))
		if err != nil {
			t.Errorf("aggregate with a collation: %v", err)
		}
		_, err = sales.Aggregate(testCtx(t), bson.A{}, options.Aggregate().SetCollation(&options.Collation{Locale: "fr", Alternate: "blanked"}))
		wantCode(t, err, 9, "FailedToParse")
	})

	t.Run("maxTimeMS", func(t *testing.T) {
		t.Parallel()
		// A pipeline that cannot finish in a millisecond: a large
		// $lookup-free cross product through $range and $unwind.
		err := db.RunCommand(testCtx(t), bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: bson.A{
			d("$project", d("r", d("$range", bson.A{0, 20000}))), d("$unwind", "$r"), d("$group", bson.D{{Key: "_id", Value: "$r"}, {Key: "n", Value: d("$sum", 1)}}),
		}}, {Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: 1}}).Err()
		wantCode(t, err, 50, "MaxTimeMSExpired")
	})

	t.Run("memory limit", func(t *testing.T) {
		t.Parallel()
		sortAll := bson.A{d("$sort", d("price", -1)), d("$project", d("price", 1))}
		// 300 documents of ~100 bytes pass the server's 16 KB limit:
		// allowDiskUse: false fails with 292, the default spills.
		_, err := sales.Aggregate(testCtx(t), sortAll, options.Aggregate().SetAllowDiskUse(false))
		ce := wantCode(t, err, 292, "QueryExceededMemoryLimitNoDiskUseAllowed")
		if ce.Message != "Sort exceeded memory limit of 16384 bytes, but did not opt in to external sorting." {
			t.Fatalf("message: %s", ce.Message)
		}
		for _, opts := range []*options.AggregateOptionsBuilder{options.Aggregate(), options.Aggregate().SetAllowDiskUse(true)} {
			out := all(t, sales, sortAll, opts)
			if len(out) != 300 || out[0]["price"] != 4.5 || out[299]["price"] != 0.5 {
				t.Fatalf("spilled sort: %d documents, first %v, last %v", len(out), out[0], out[len(out)-1])
			}
		}
		_, err = sales.Aggregate(testCtx(t), bson.A{d("$group", bson.D{{Key: "_id", Value: "$_id"}, {Key: "all", Value: d("$push", "$$ROOT")}})}, options.Aggregate().SetAllowDiskUse(false))
		wantCode(t, err, 292, "QueryExceededMemoryLimitNoDiskUseAllowed")
		out := all(t, sales, bson.A{d("$group", bson.D{{Key: "_id", Value: "$_id"}, {Key: "all", Value: d("$push", "$$ROOT")}}), d("$count", "n")})
		if len(out) != 1 || out[0]["n"] != int32(300) {
			t.Fatalf("spilled group: %v", out)
		}
	})

	t.Run("explain", func(t *testing.T) {
		t.Parallel()
		raw := runOK(t, db, bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: bson.A{d("$match", d("qty", 3)), d("$group", bson.D{{Key: "_id", Value: "$store"}}), d("$sort", d("_id", 1))}}, {Key: "explain", Value: true}})
		shards := mustLookup(t, raw, "splitPipeline", "shardsPart").Array()
		merger := mustLookup(t, raw, "splitPipeline", "mergerPart").Array()
		if v, _ := shards.Values(); len(v) != 2 {
			t.Fatalf("shardsPart: %v", shards)
		}
		if v, _ := merger.Values(); len(v) != 3 {
			t.Fatalf("mergerPart: %v", merger)
		}
		if ids := mustLookup(t, raw, "partitionsTargeted").Array().String(); ids != `["0"]` {
			t.Fatalf("partitionsTargeted: %s", ids)
		}
		raw = runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: bson.A{d("$match", d("_id", 5))}}, {Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: "executionStats"}})
		if n := intOf(t, mustLookup(t, raw, "executionStats", "nReturned")); n != 1 {
			t.Fatalf("nReturned %d", n)
		}
		if n := intOf(t, mustLookup(t, raw, "executionStats", "totalDocsExamined")); n != 1 {
			t.Fatalf("an _id equality read examined %d documents", n)
		}
	})

	t.Run("database aggregate", func(t *testing.T) {
		t.Parallel()
		cur, err := db.Aggregate(testCtx(t), bson.A{d("$documents", bson.A{d("x", 1), d("x", 2)}), d("$match", d("x", 2))})
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.M
		if err := cur.All(testCtx(t), &out); err != nil || len(out) != 1 || out[0]["x"] != int32(2) {
			t.Fatalf("$documents: %v %v", out, err)
		}
		runFail(t, db, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{d("$match", bson.D{})}}, {Key: "cursor", Value: bson.D{}}}, 73, "InvalidNamespace")
		runFail(t, db, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{d("$currentOp", bson.D{})}}, {Key: "cursor", Value: bson.D{}}}, 73, "InvalidNamespace")
		admin := client.Database("admin")
		if _, err := admin.Aggregate(testCtx(t), bson.A{d("$currentOp", bson.D{})}); err != nil {
			t.Fatalf("$currentOp on admin: %v", err)
		}
		cur, err = admin.Aggregate(testCtx(t), bson.A{d("$listLocalSessions", bson.D{})})
		if err != nil {
			t.Fatal(err)
		}
		if err := cur.All(testCtx(t), &out); err != nil || len(out) != 1 {
			t.Fatalf("$listLocalSessions lists the caller's session: %v %v", out, err)
		}
	})

	t.Run("out and merge", func(t *testing.T) {
		t.Parallel()
		if _, err := sales.Aggregate(testCtx(t), bson.A{d("$group", bson.D{{Key: "_id", Value: "$store"}, {Key: "n", Value: d("$sum", 1)}}), d("$out", "totals")}); err != nil {
			t.Fatal(err)
		}
		out := all(t, db.Collection("totals"), bson.A{d("$sort", d("_id", 1))})
		if len(out) != 3 || out[2]["_id"] != "s2" || out[2]["n"] != int32(100) {
			t.Fatalf("$out: %v", out)
		}
		if _, err := sales.Aggregate(testCtx(t), bson.A{d("$match", d("_id", d("$lt", 2))), d("$project", bson.D{{Key: "_id", Value: "$store"}, {Key: "extra", Value: "$_id"}}),
			d("$merge", bson.D{{Key: "into", Value: "totals"}, {Key: "whenMatched", Value: "merge"}})}); err != nil {
			t.Fatal(err)
		}
		out = all(t, db.Collection("totals"), bson.A{d("$sort", d("_id", 1))})
		if out[0]["extra"] != int32(0) || out[0]["n"] != int32(100) || out[1]["extra"] != int32(1) || out[2]["extra"] != nil {
			t.Fatalf("$merge: %v", out)
		}
		_, err := sales.Aggregate(testCtx(t), bson.A{d("$project", d("_id", "$store")), d("$merge", bson.D{{Key: "into", Value: "totals"}, {Key: "whenMatched", Value: "fail"}})})
		wantCode(t, err, 11000, "DuplicateKey")
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		cmd := func(pipeline bson.A) bson.D {
			return bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}
		}
		for _, tc := range []struct {
			pipeline bson.A
			code     int32
			name     string
		}{
			{bson.A{d("$bogus", 1)}, 40324, "Location40324"},
			{bson.A{bson.D{{Key: "$match", Value: bson.D{}}, {Key: "$limit", Value: 1}}}, 40323, "Location40323"},
			{bson.A{d("$group", d("n", d("$sum", 1)))}, 15955, "Location15955"},
			{bson.A{d("$group", bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: d("$bogus", 1)}})}, 15952, "Location15952"},
			{bson.A{d("$project", d("x", d("$bogus", 1)))}, 168, "InvalidPipelineOperator"},
			{bson.A{d("$limit", 0)}, 15958, "Location15958"},
			{bson.A{d("$out", "x"), d("$limit", 1)}, 40601, "Location40601"},
			{bson.A{d("$match", bson.D{}), d("$documents", bson.A{})}, 40602, "Location40602"},
			{bson.A{d("$project", bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 0}})}, 31254, "Location31254"},
			{bson.A{d("$replaceWith", "$qty")}, 40228, "Location40228"},
			{bson.A{d("$project", d("x", d("$divide", bson.A{1, 0})))}, 2, "BadValue"},
			{bson.A{d("$project", d("x", d("$mod", bson.A{"$qty", 0})))}, 16610, "Location16610"},
			{bson.A{d("$project", d("x", d("$sqrt", -1)))}, 28714, "Location28714"},
			{bson.A{d("$project", d("x", d("$abs", "$store")))}, 28765, "Location28765"},
			{bson.A{d("$project", d("x", d("$size", "$qty")))}, 17124, "Location17124"},
			{bson.A{d("$project", d("x", d("$slice", bson.A{"$tags", 1, 0})))}, 28729, "Location28729"},
			{bson.A{d("$unwind", "qty")}, 28818, "Location28818"},
			{bson.A{d("$geoNear", bson.D{})}, 238, "NotImplemented"},
		} {
			runFail(t, db, cmd(tc.pipeline), tc.code, tc.name)
		}
		runFail(t, db, bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: bson.A{}}}, 9, "FailedToParse")
		runFail(t, db, bson.D{{Key: "aggregate", Value: "sales"}, {Key: "cursor", Value: bson.D{}}}, 40414, "Location40414")
		runFail(t, db, bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "bogus", Value: 1}}, 40415, "Location40415")
		runFail(t, db, bson.D{{Key: "aggregate", Value: 2}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}, 9, "FailedToParse")
	})
}

// TestAggregateCursorKilledWhileRunning checks that killing a cursor over
// a fanned-out pipeline stops its partition workers: the server keeps
// answering and closes cleanly (the test would hang otherwise).
func TestAggregateCursorKilledWhileRunning(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("aggkill")
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 24000}})
	var docs []any
	for i := range 2000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}})
	}
	if _, err := db.Collection("c").InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		c := runCursor(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "k", Value: 1}}}}}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 3}}}})
		if c.Cursor.ID == 0 {
			t.Fatal("expected an open cursor")
		}
		runOK(t, db, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{c.Cursor.ID}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Ping(ctx, nil); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
