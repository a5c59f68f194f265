package engine

import (
	"context"
	"testing"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkUpdateByID is the command layer's part of updateOne by _id: one
// $inc on a 1 KB document, without the wire and the driver.
func BenchmarkUpdateByID(b *testing.B) {
	e := benchEngine(b)
	pad := string(make([]byte, 900))
	var docs bson.A
	for i := range 1000 {
		docs = append(docs, bson.D{{Key: "_id", Value: int64(i)}, {Key: "seq", Value: int64(0)}, {Key: "p", Value: pad}})
	}
	body, _ := bson.Marshal(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}, {Key: "$db", Value: "d"}})
	if _, err := e.cmdInsert(context.Background(), &request{name: "insert", db: "d", body: body}); err != nil {
		b.Fatal(err)
	}
	cmds := make([][]byte, 1000)
	for i := range cmds {
		cmds[i], _ = bson.Marshal(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: int64(i)}}},
			{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "seq", Value: int64(1)}}}}},
		}}}, {Key: "$db", Value: "d"}})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := e.cmdUpdate(context.Background(), &request{name: "update", db: "d", body: cmds[i%len(cmds)]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkInsertOne is the command layer's part of insertOne: one 1 KB
// document, without the wire and the driver.
func BenchmarkInsertOne(b *testing.B) {
	e := benchEngine(b)
	pad := string(make([]byte, 950))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		body, _ := bson.Marshal(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
			bson.D{{Key: "_id", Value: int64(i)}, {Key: "p", Value: pad}},
		}}, {Key: "$db", Value: "d"}})
		if _, err := e.cmdInsert(context.Background(), &request{name: "insert", db: "d", body: body}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// benchEngine is an engine over an in-memory store, closed when b ends.
func benchEngine(b *testing.B) *Engine {
	st, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	e := New(Config{Store: storage.Local(st)})
	b.Cleanup(func() {
		e.Close()
		_ = st.Close()
	})
	return e
}
