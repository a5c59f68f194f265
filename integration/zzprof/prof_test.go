package zzprof

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestProf(t *testing.T) {
	s := integration.StartServer(t, integration.ServerOptions{Dir: t.TempDir()})
	client, _ := mongo.Connect(options.Client().ApplyURI(s.URI()))
	ctx := context.Background()
	coll := client.Database("b").Collection("agg")
	const n = 100000
	for i := int64(0); i < n; i += 5000 {
		var docs []any
		for j := i; j < i+5000; j++ {
			d := bsoncore.NewDocumentBuilder().AppendInt64("_id", j).AppendString("cat", fmt.Sprintf("category-%d", j%8)).AppendInt32("amt", int32(j%1000)).AppendString("pad", string(make([]byte, 960))).Build()
			docs = append(docs, bson.Raw(d))
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	pipeline := bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$cat"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$amt"}}}, {Key: "avg", Value: bson.D{{Key: "$avg", Value: "$amt"}}}}}}}
	run := func() {
		cur, err := coll.Aggregate(ctx, pipeline)
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.M
		if err := cur.All(ctx, &out); err != nil || len(out) != 8 {
			t.Fatal(err, out)
		}
	}
	st := s.Store()
	sc := st.Collection("b", "agg")
	scan := func() {
		var sum byte
		st.View(func(tx *store.Txn) error {
			return tx.Scan(sc, nil, func(_, doc []byte) (bool, error) { sum += doc[len(doc)/2]; return true, nil })
		})
	}
	for i := 0; i < 3; i++ {
		run()
		scan()
	}
	for r := 0; r < 3; r++ {
		t0 := time.Now()
		for i := 0; i < 10; i++ {
			scan()
		}
		ts := time.Since(t0) / 10
		t0 = time.Now()
		for i := 0; i < 10; i++ {
			run()
		}
		ta := time.Since(t0) / 10
		t.Logf("scan %v agg %v ratio %.2f", ts, ta, float64(ts)/float64(ta))
	}
	t0 := time.Now()
	f, _ := os.Create("/tmp/aggserver.pprof")
	pprof.StartCPUProfile(f)
	t0 = time.Now()
	for i := 0; i < 10; i++ {
		run()
	}
	t.Logf("agg %v per pass", time.Since(t0)/10)
	pprof.StopCPUProfile()
	f.Close()
}
