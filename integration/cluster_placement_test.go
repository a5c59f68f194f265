package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestClusterPlacement: in a cluster of four nodes each partition's
// group has three replicas, spread so that every node holds about as
// many, and the writer holds no replica of some partitions: it reads
// and commits theirs through the nodes that do. Every operation works on
// those partitions as on its own (inserts, finds by _id and by a
// secondary index, counts, updates and deletes of many, findAndModify,
// aggregation, a change stream, a transaction), and keeps working when a
// node holding them is killed (SIGKILL) and when the writer is.
func TestClusterPlacement(t *testing.T) {
	c := startTestClusterOf(t, 4)
	cl := c.connect()
	ctx := testCtx(t)
	db := cl.Database("place")
	admin := cl.Database("admin")
	runOK(t, admin, bson.D{{Key: "enableSharding", Value: "place"}})
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "place.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}},
		{Key: "numInitialChunks", Value: 8}})
	coll := db.Collection("c")
	const n = 1200
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 97}, {Key: "v", Value: i}, {Key: "tag", Value: fmt.Sprintf("t%d", i%10)}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}

	writer := c.primary(cl)
	view := readPartitionGroups(t, db, "c")
	perNode := map[int64]int{}
	far := 0
	for i, reps := range view.replicas {
		if len(reps) != 3 {
			t.Fatalf("partition %d has replicas on nodes %v, not three", i, reps)
		}
		for _, r := range reps {
			perNode[r]++
		}
		if !slices.Contains(reps, int64(writer.id)) {
			far++
		}
	}
	if far == 0 {
		t.Fatalf("the writer (node %d) holds every partition's replica: %v", writer.id, view.replicas)
	}
	for node, count := range perNode {
		if count < 5 || count > 7 {
			t.Errorf("node %d holds %d of 8 partitions' replicas (want 6±1): %v", node, count, perNode)
		}
	}

	check := func(stage string) {
		t.Helper()
		got := countIDs(t, coll)
		if len(got) != n {
			t.Fatalf("%s: %d distinct documents, want %d", stage, len(got), n)
		}
		for id, times := range got {
			if times != 1 {
				t.Fatalf("%s: document %d is there %d times", stage, id, times)
			}
		}
		if cnt, err := coll.CountDocuments(ctx, bson.D{}); err != nil || cnt != n {
			t.Fatalf("%s: countDocuments %d, %v", stage, cnt, err)
		}
		for _, id := range []int{0, 1, 2, 3, 500, n - 1} {
			var d struct{ V int }
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
				t.Fatalf("%s: find _id %d: %v", stage, id, err)
			}
		}
	}
	check("after the inserts")

	// A secondary index over every partition, and reads through it.
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "tag", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if cnt, err := coll.CountDocuments(ctx, bson.D{{Key: "tag", Value: "t3"}}); err != nil || cnt != n/10 {
		t.Fatalf("count by the index: %d, %v", cnt, err)
	}
	cur, err := coll.Find(ctx, bson.D{{Key: "tag", Value: "t4"}}, options.Find().SetSort(bson.D{{Key: "v", Value: -1}}))
	if err != nil {
		t.Fatal(err)
	}
	var byTag []struct{ V int }
	if err := cur.All(ctx, &byTag); err != nil || len(byTag) != n/10 || byTag[0].V != n-6 {
		t.Fatalf("find by the index: %d documents, first %+v, %v", len(byTag), byTag[:min(1, len(byTag))], err)
	}

	// Backwards through the _id index of every partition.
	cur, err = coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(5).SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var last []struct {
		ID int `bson:"_id"`
	}
	if err := cur.All(ctx, &last); err != nil || len(last) != 5 || last[0].ID != n-1 || last[4].ID != n-5 {
		t.Fatalf("the last five _ids: %+v, %v", last, err)
	}

	// Writes of many, and one at a time, in every partition.
	if r, err := coll.UpdateMany(ctx, bson.D{{Key: "tag", Value: "t1"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1000000}}}}); err != nil || r.ModifiedCount != n/10 {
		t.Fatalf("updateMany: %+v, %v", r, err)
	}
	for k := 0; k < 97; k += 7 {
		var before struct{ V int }
		err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "k", Value: k}, {Key: "_id", Value: k}}, bson.D{{Key: "$set", Value: bson.D{{Key: "fam", Value: k}}}}).Decode(&before)
		want := k
		if k%10 == 1 {
			want += 1000000 // tag t1, updated above
		}
		if err != nil || before.V != want {
			t.Fatalf("findAndModify of k %d: %+v, %v", k, before, err)
		}
	}
	agg, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "fam", Value: bson.D{{Key: "$exists", Value: true}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var sums []struct{ N int }
	if err := agg.All(ctx, &sums); err != nil || len(sums) != 1 || sums[0].N != 14 {
		t.Fatalf("aggregation over every partition: %+v, %v", sums, err)
	}

	// A change stream sees inserts in every partition.
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	extra := make([]any, 40)
	for i := range extra {
		extra[i] = bson.D{{Key: "_id", Value: n + i}, {Key: "k", Value: i}, {Key: "v", Value: n + i}}
	}
	if _, err := coll.InsertMany(ctx, extra); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for len(seen) < len(extra) && cs.Next(ctx) {
		var ev struct {
			Op  string `bson:"operationType"`
			Doc struct {
				ID int `bson:"_id"`
			} `bson:"documentKey"`
		}
		if err := cs.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.Op == "insert" {
			seen[ev.Doc.ID] = true
		}
	}
	_ = cs.Close(ctx)
	if len(seen) != len(extra) {
		t.Fatalf("the change stream saw %d of %d inserts (%v)", len(seen), len(extra), cs.Err())
	}
	if r, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: n}}}}); err != nil || r.DeletedCount != int64(len(extra)) {
		t.Fatalf("deleteMany: %+v, %v", r, err)
	}

	// Transactions in every logical partition's group.
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 97; k += 5 {
		_, err := sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
			if _, err := coll.UpdateOne(sc, bson.D{{Key: "k", Value: k}, {Key: "_id", Value: k}}, bson.D{{Key: "$set", Value: bson.D{{Key: "txn", Value: true}}}}); err != nil {
				return nil, err
			}
			return coll.UpdateOne(sc, bson.D{{Key: "k", Value: k}, {Key: "_id", Value: k + 97}}, bson.D{{Key: "$set", Value: bson.D{{Key: "txn", Value: true}}}})
		})
		if err != nil {
			t.Fatalf("transaction in logical partition %d: %v", k, err)
		}
	}
	sess.EndSession(ctx)
	if cnt, err := coll.CountDocuments(ctx, bson.D{{Key: "txn", Value: true}}); err != nil || cnt != 2*20 {
		t.Fatalf("documents written by transactions: %d, %v", cnt, err)
	}

	// A node other than the writer dies: its partitions keep two of three
	// replicas and take writes; then the writer dies too (restarted
	// first): a new writer serves everything.
	var other *clusterNode
	for _, nd := range c.nodes {
		if nd != writer {
			other = nd
			break
		}
	}
	writeSome := func(from int) {
		t.Helper()
		for i := from; i < from+97; i++ {
			if _, err := coll.UpdateOne(ctx, bson.D{{Key: "k", Value: i % 97}, {Key: "_id", Value: i % 97}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "w", Value: 1}}}}); err != nil {
				t.Fatalf("update of k %d: %v", i%97, err)
			}
		}
	}
	c.kill(other)
	writeSome(0)
	check("with a node down")
	c.start(other)
	c.kill(writer)
	writeSome(97)
	check("after the writer died")
	c.start(writer)
	var w struct{ W int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 5}}).Decode(&w); err != nil || w.W != 2 {
		t.Fatalf("document 5 after two rounds of increments: %+v, %v", w, err)
	}
}
