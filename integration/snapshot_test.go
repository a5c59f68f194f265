package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestSnapshotReads: a snapshot session's reads (find, its getMores,
// aggregate, distinct) all see the data as of its first read, whatever is
// written after; other reads see the latest data.
func TestSnapshotReads(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	coll := c.Database("snap").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}}, bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	sess, sctx := snapshotSession(t, c)

	// The first read takes the snapshot; a cursor of batches of 1 stays open.
	cur, err := coll.Find(sctx, bson.D{}, options.Find().SetBatchSize(1).SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if sess.SnapshotTime().IsZero() {
		t.Fatal("the first snapshot read returned no atClusterTime")
	}
	// Later writes, outside the session.
	if _, err := coll.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "x", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	var seen []bson.M
	if err := cur.All(sctx, &seen); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Fatalf("snapshot cursor read %d documents, want the 3 of the snapshot: %v", len(seen), seen)
	}
	for _, d := range seen {
		if d["x"] != int32(1) {
			t.Fatalf("snapshot cursor saw a later write: %v", seen)
		}
	}
	// The session's later reads read the same snapshot.
	n, err := coll.CountDocuments(sctx, bson.D{})
	if err != nil || n != 3 {
		t.Fatalf("countDocuments in the snapshot: %d %v", n, err)
	}
	var xs []int32
	if err := coll.Distinct(sctx, "x", bson.D{}).Decode(&xs); err != nil || len(xs) != 1 || xs[0] != 1 {
		t.Fatalf("distinct in the snapshot: %v %v", xs, err)
	}
	// Outside the session: the latest data.
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "x", Value: 2}}); err != nil || n != 4 {
		t.Fatalf("latest data: %d %v", n, err)
	}

	// A time no snapshot was taken at: too old, or not yet taken.
	db := c.Database("snap")
	runFail(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: 1, I: 1}}}}}, 239, "SnapshotTooOld")
	runFail(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: 4000000000, I: 1}}}}}, 246, "SnapshotUnavailable")
	runFail(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: 5}}}}, 14, "TypeMismatch")
	// count takes no snapshot read concern, as in MongoDB.
	runFail(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}}, 72, "InvalidOptions")
	// distinct reports atClusterTime at the top, find in its cursor.
	raw := runOK(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "x"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}})
	mustLookup(t, raw, "atClusterTime").Timestamp()
	raw = runOK(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}})
	mustLookup(t, raw, "cursor", "atClusterTime").Timestamp()
}

// TestSnapshotReadsNewIndex: an index built after a snapshot was taken
// holds no entries in it; reads of the snapshot still find its documents.
func TestSnapshotReadsNewIndex(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	coll := c.Database("snapix").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "a"}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "b"}}}); err != nil {
		t.Fatal(err)
	}
	_, sctx := snapshotSession(t, c)
	if n, err := coll.CountDocuments(sctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("first snapshot read: %d %v", n, err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	var got bson.M
	if err := coll.FindOne(sctx, bson.D{{Key: "k", Value: "b"}}).Decode(&got); err != nil || got["_id"] != int32(2) {
		t.Fatalf("find by the new index's key in the snapshot: %v %v", got, err)
	}
	n, err := coll.CountDocuments(sctx, bson.D{{Key: "k", Value: "a"}})
	if err != nil || n != 1 {
		t.Fatalf("aggregate by the new index's key in the snapshot: %d %v", n, err)
	}
	var ids []int32
	if err := coll.Distinct(sctx, "_id", bson.D{{Key: "k", Value: "b"}}).Decode(&ids); err != nil || len(ids) != 1 {
		t.Fatalf("distinct by the new index's key in the snapshot: %v %v", ids, err)
	}
}

// snapshotSession starts a snapshot session, ended with the test, and
// returns it with a context that carries it.
func snapshotSession(t *testing.T, c *mongo.Client) (*mongo.Session, context.Context) {
	t.Helper()
	sess, err := c.StartSession(options.Session().SetSnapshot(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	return sess, mongo.NewSessionContext(testCtx(t), sess)
}
