package integration

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestBulkStepsOfLargeDocuments: the steps that copy or rewrite a whole
// collection in transactions of many documents (shardCollection of an
// unsharded collection, an index build, reshardCollection, a drop whose
// inserts the change log still shows) work on documents of 12 KB, where a
// thousand of them are more than one storage transaction holds on a
// default server (15 % of a 64 MiB memtable).
func TestBulkStepsOfLargeDocuments(t *testing.T) {
	t.Parallel()
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	client := newTestClient(t, s)
	ctx := testCtx(t)
	admin := client.Database("admin")
	coll := client.Database("big").Collection("docs")
	const n = 1100
	pad := make([]byte, 12<<10)
	for i := 0; i < n; i += 100 {
		docs := make([]any, 0, 100)
		for j := i; j < i+100; j++ {
			docs = append(docs, bson.D{{Key: "_id", Value: j}, {Key: "k", Value: j % 37}, {Key: "tag", Value: fmt.Sprintf("t%d", j%11)}, {Key: "pad", Value: pad}})
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	count := func(step string) {
		t.Helper()
		got, err := coll.CountDocuments(ctx, bson.D{})
		if err != nil || got != n {
			t.Fatalf("after %s: %d documents, %v; want %d", step, got, err, n)
		}
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "tag", Value: 1}}}); err != nil {
		t.Fatalf("index build: %v", err)
	}
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "big.docs"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}})
	count("shardCollection")
	runOK(t, admin, bson.D{{Key: "reshardCollection", Value: "big.docs"}, {Key: "key", Value: bson.D{{Key: "tag", Value: "hashed"}}}})
	count("reshardCollection")
	got, err := coll.CountDocuments(ctx, bson.D{{Key: "tag", Value: "t3"}}, options.Count().SetHint("tag_1"))
	if err != nil || got != n/11 {
		t.Fatalf("by the index after resharding: %d, %v; want %d", got, err, n/11)
	}
	if err := coll.Drop(ctx); err != nil {
		t.Fatalf("drop: %v", err)
	}
}
