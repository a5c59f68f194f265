package sort1g

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestSort1GB(t *testing.T) {
	s := integration.StartServer(t, integration.ServerOptions{Dir: t.TempDir()})
	client, err := mongo.Connect(options.Client().ApplyURI(s.URI()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	coll := client.Database("big").Collection("c")
	pad := string(make([]byte, 1000))
	const n = 1_100_000
	start := time.Now()
	for i := 0; i < n; i += 10000 {
		docs := make([]any, 0, 10000)
		for j := i; j < i+10000; j++ {
			docs = append(docs, bson.D{{Key: "_id", Value: j}, {Key: "r", Value: rand.Int64()}, {Key: "pad", Value: pad}})
		}
		if _, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("loaded %d docs in %v", n, time.Since(start))
	start = time.Now()
	cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "r", Value: 1}}}}}, options.Aggregate().SetAllowDiskUse(true).SetBatchSize(10000))
	if err != nil {
		t.Fatal(err)
	}
	var prev int64 = -1 << 63
	count := 0
	for cur.Next(ctx) {
		r := cur.Current.Lookup("r").Int64()
		if r < prev {
			t.Fatalf("out of order at %d", count)
		}
		prev = r
		count++
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("sorted %d docs in %v; heap in use %d MB, sys %d MB", count, time.Since(start), ms.HeapInuse>>20, ms.Sys>>20)
	if count != n {
		t.Fatalf("count %d", count)
	}
	_, err = coll.Aggregate(ctx, bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "r", Value: 1}}}}}, options.Aggregate().SetAllowDiskUse(false))
	t.Logf("without disk use: %v", err)
}
