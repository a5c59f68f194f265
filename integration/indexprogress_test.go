package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestIndexBuildProgress: while createIndexes builds, $currentOp shows
// its progress as MongoDB does: progress {done, total} and a msg.
func TestIndexBuildProgress(t *testing.T) {
	srv := StartServer(t, ServerOptions{Dir: t.TempDir()})
	client := newTestClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	coll := client.Database("progress").Collection("big")
	const n = 40_000
	for i := 0; i < n; i += 5000 {
		docs := make([]any, 5000)
		for j := range docs {
			docs[j] = bson.D{{Key: "_id", Value: i + j}, {Key: "a", Value: (i + j) % 977}, {Key: "b", Value: strings.Repeat("b", 200)}}
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	built := make(chan error, 1)
	go func() {
		_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}})
		built <- err
	}()
	admin := client.Database("admin")
	var seen []bson.Raw
	for {
		select {
		case err := <-built:
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) == 0 {
				t.Fatal("the index build never showed in $currentOp")
			}
			last := seen[len(seen)-1]
			done, total := intOf(t, mustLookup(t, last, "progress", "done")), intOf(t, mustLookup(t, last, "progress", "total"))
			if total != n || done < 0 || done > n {
				t.Errorf("progress %d of %d, want of %d", done, total, n)
			}
			if msg := mustLookup(t, last, "msg").StringValue(); !strings.HasPrefix(msg, "Index Build: scanning collection") {
				t.Errorf("msg = %q", msg)
			}
			return
		default:
		}
		cur, err := admin.Aggregate(ctx, bson.A{bson.D{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}}}},
			bson.D{{Key: "$match", Value: bson.D{{Key: "command.createIndexes", Value: "big"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var ops []bson.Raw
		if err := cur.All(ctx, &ops); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if _, err := op.LookupErr("progress"); err == nil {
				seen = append(seen, op)
			}
		}
	}
}
