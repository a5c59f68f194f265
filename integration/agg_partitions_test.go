package integration

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestAggregatePartitions runs pipelines over a collection sharded into
// four physical partitions and over an unsharded copy of it: results must
// agree, equality on the shard key must target one partition, and
// $lookup must join across sharded and unsharded collections both ways.
func TestAggregatePartitions(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("aggparts")
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "orders"},
		{Key: "shardKey", Value: "cust"}, {Key: "offerThroughput", Value: 24000}})
	sharded, plain := db.Collection("orders"), db.Collection("orders_unsharded")
	var orders, customers []any
	for i := range 400 {
		orders = append(orders, bson.D{{Key: "_id", Value: i}, {Key: "cust", Value: fmt.Sprintf("c%d", i%20)},
			{Key: "amount", Value: i % 13}, {Key: "items", Value: bson.A{i % 3, i % 5}}})
	}
	for i := range 25 {
		customers = append(customers, bson.D{{Key: "_id", Value: fmt.Sprintf("c%d", i)}, {Key: "tier", Value: i % 2}})
	}
	for _, c := range []*mongo.Collection{sharded, plain} {
		if _, err := c.InsertMany(testCtx(t), orders); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Collection("customers").InsertMany(testCtx(t), customers); err != nil {
		t.Fatal(err)
	}
	raw := runOK(t, db, bson.D{{Key: "aggregate", Value: "orders"}, {Key: "pipeline", Value: bson.A{}}, {Key: "explain", Value: true}})
	if ids, _ := mustLookup(t, raw, "partitionsTargeted").Array().Values(); len(ids) != 4 {
		t.Fatalf("the sharded collection should have 4 partitions, explain targets %v", ids)
	}
	run := func(t *testing.T, c *mongo.Collection, pipeline bson.A) []string {
		t.Helper()
		cur, err := c.Aggregate(testCtx(t), pipeline)
		if err != nil {
			t.Fatalf("aggregate on %s: %v", c.Name(), err)
		}
		var docs []bson.Raw
		if err := cur.All(testCtx(t), &docs); err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(docs))
		for i, d := range docs {
			out[i] = d.String()
		}
		return out
	}
	d := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }

	for _, tc := range []struct {
		name     string
		pipeline bson.A
		n        int
	}{
		{"group", bson.A{d("$group", bson.D{{Key: "_id", Value: "$cust"}, {Key: "n", Value: d("$sum", 1)}, {Key: "total", Value: d("$sum", "$amount")},
			{Key: "avg", Value: d("$avg", "$amount")}, {Key: "max", Value: d("$max", "$_id")}, {Key: "top", Value: d("$topN", bson.D{{Key: "n", Value: 2}, {Key: "output", Value: "$_id"}, {Key: "sortBy", Value: d("_id", -1)}})}}),
			d("$sort", d("_id", 1))}, 20},
		{"unwind group", bson.A{d("$unwind", "$items"), d("$group", bson.D{{Key: "_id", Value: "$items"}, {Key: "n", Value: d("$sum", 1)}}), d("$sort", d("_id", 1))}, 5},
		{"count", bson.A{d("$match", d("amount", d("$gte", 10))), d("$count", "n")}, 1},
		{"sort", bson.A{d("$sort", bson.D{{Key: "amount", Value: -1}, {Key: "_id", Value: 1}}), d("$limit", 15)}, 15},
		{"bucket", bson.A{d("$bucket", bson.D{{Key: "groupBy", Value: "$amount"}, {Key: "boundaries", Value: bson.A{0, 4, 8, 13}}})}, 3},
		{"lookup into unsharded", bson.A{d("$lookup", bson.D{{Key: "from", Value: "customers"}, {Key: "localField", Value: "cust"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "c"}}),
			d("$unwind", "$c"), d("$group", bson.D{{Key: "_id", Value: "$c.tier"}, {Key: "n", Value: d("$sum", 1)}}), d("$sort", d("_id", 1))}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, want := run(t, sharded, tc.pipeline), run(t, plain, tc.pipeline)
			if len(want) != tc.n {
				t.Fatalf("unsharded: %d results, want %d: %v", len(want), tc.n, want)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("sharded and unsharded differ:\nsharded:   %v\nunsharded: %v", got, want)
			}
		})
	}

	t.Run("lookup into sharded", func(t *testing.T) {
		t.Parallel()
		got := run(t, db.Collection("customers"), bson.A{d("$match", d("_id", d("$in", bson.A{"c3", "c21"}))),
			d("$lookup", bson.D{{Key: "from", Value: "orders"}, {Key: "localField", Value: "_id"}, {Key: "foreignField", Value: "cust"}, {Key: "as", Value: "o"}}),
			d("$project", d("n", d("$size", "$o"))), d("$sort", d("_id", 1))})
		want := []string{`{"_id": "c21","n": {"$numberInt":"0"}}`, `{"_id": "c3","n": {"$numberInt":"20"}}`}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		got = run(t, db.Collection("customers"), bson.A{d("$match", d("_id", "c3")),
			d("$lookup", bson.D{{Key: "from", Value: "orders"}, {Key: "let", Value: d("c", "$_id")},
				{Key: "pipeline", Value: bson.A{d("$match", d("$expr", d("$eq", bson.A{"$cust", "$$c"}))), d("$group", bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: d("$sum", "$amount")}})}}, {Key: "as", Value: "o"}}),
			d("$project", d("s", d("$first", "$o.s")))})
		wantSum := 0
		for i := 3; i < 400; i += 20 {
			wantSum += i % 13
		}
		if want := fmt.Sprintf(`[{"_id": "c3","s": {"$numberInt":"%d"}}]`, wantSum); len(got) != 1 || "["+got[0]+"]" != want {
			t.Fatalf("got %v, want %v", got, want)
		}
	})

	t.Run("shard key equality targets one partition", func(t *testing.T) {
		t.Parallel()
		pipeline := bson.A{d("$match", d("cust", "c7")), d("$group", bson.D{{Key: "_id", Value: "$cust"}, {Key: "n", Value: d("$sum", 1)}})}
		raw := runOK(t, db, bson.D{{Key: "aggregate", Value: "orders"}, {Key: "pipeline", Value: pipeline}, {Key: "explain", Value: true}})
		if ids, _ := mustLookup(t, raw, "partitionsTargeted").Array().Values(); len(ids) != 1 {
			t.Fatalf("partitionsTargeted: %v", ids)
		}
		raw = runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "orders"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: "executionStats"}})
		if n := intOf(t, mustLookup(t, raw, "executionStats", "totalDocsExamined")); n >= 400 {
			t.Fatalf("a targeted read examined %d documents of 400", n)
		}
		got := run(t, sharded, pipeline)
		if want := `{"_id": "c7","n": {"$numberInt":"20"}}`; len(got) != 1 || got[0] != want {
			t.Fatalf("got %v, want %s", got, want)
		}
		n, err := sharded.CountDocuments(testCtx(t), d("cust", d("$in", bson.A{"c1", "c2"})))
		if err != nil || n != 40 {
			t.Fatalf("countDocuments: %d %v", n, err)
		}
	})
}
