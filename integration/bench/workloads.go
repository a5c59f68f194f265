package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// docSize is the encoded size of every benchmark document.
const docSize = 1024

// template is a docSize-byte BSON document whose first element is an
// ObjectID _id: {_id, seq: int64, kind: "bench", tags: [...], payload: "xxx..."}.
// idOff is where the 12 ObjectID bytes start.
type template struct {
	doc   []byte
	idOff int
}

func newTemplate() template {
	build := func(pad int) []byte {
		payload := make([]byte, pad)
		for i := range payload {
			payload[i] = 'a' + byte(i%26)
		}
		return bsoncore.NewDocumentBuilder().
			AppendObjectID("_id", bson.ObjectID{}).
			AppendInt64("seq", 0).
			AppendString("kind", "bench").
			AppendArray("tags", bsoncore.NewArrayBuilder().AppendString("a").AppendString("b").AppendString("c").Build()).
			AppendString("payload", string(payload)).
			Build()
	}
	d := build(0)
	d = build(docSize - len(d))
	if len(d) != docSize {
		panic(fmt.Sprintf("template is %d bytes", len(d)))
	}
	return template{doc: d, idOff: 4 + 1 + len("_id") + 1}
}

// withOID copies the template into buf with a fresh ObjectID _id.
func (t template) withOID(buf []byte) ([]byte, bson.ObjectID) {
	buf = append(buf[:0], t.doc...)
	oid := bson.NewObjectID()
	copy(buf[t.idOff:], oid[:])
	return buf, oid
}

// withIntID builds the same-sized document with _id an int64 (the
// preloaded documents of findById): an int64 element is 4 bytes shorter
// than an ObjectID one, so the payload grows by 4.
func (t template) withIntID(id int64) []byte {
	elems, _ := bsoncore.Document(t.doc).Elements()
	start, b := bsoncore.AppendDocumentStart(make([]byte, 0, docSize))
	b = bsoncore.AppendInt64Element(b, "_id", id)
	for _, el := range elems[1:] {
		if el.Key() == "payload" {
			s := el.Value().StringValue()
			b = bsoncore.AppendStringElement(b, "payload", s+"pppp")
			continue
		}
		b = append(b, el...)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	return b
}

// idFilter is {_id: <int64>} encoded without reflection.
func idFilter(buf []byte, id int64) []byte {
	start, b := bsoncore.AppendDocumentStart(buf[:0])
	b = bsoncore.AppendInt64Element(b, "_id", id)
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	return b
}

// --- through the driver ---

func pingOp(c *mongo.Client) opFunc {
	return func(ctx context.Context) error { return c.Ping(ctx, nil) }
}

// insertOp inserts a fresh 1 KB document per call. The document goes to the
// driver pre-encoded (bson.Raw), so the client side spends no reflection on
// it: on a 2-core machine shared by client and server, client CPU is taken
// from the server.
func insertOp(coll *mongo.Collection, t template) opFunc {
	buf := make([]byte, 0, docSize)
	return func(ctx context.Context) error {
		var doc []byte
		doc, _ = t.withOID(buf)
		_, err := coll.InsertOne(ctx, bson.Raw(doc))
		return err
	}
}

// findOp reads one preloaded document by _id, uniformly at random.
func findOp(coll *mongo.Collection, ndocs int64, seed uint64) opFunc {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	buf := make([]byte, 0, 32)
	return func(ctx context.Context) error {
		id := rng.Int64N(ndocs)
		buf = idFilter(buf, id)
		raw, err := coll.FindOne(ctx, bson.Raw(buf)).Raw()
		if err != nil {
			return err
		}
		if len(raw) != docSize {
			return fmt.Errorf("findById %d: got %d bytes, want %d", id, len(raw), docSize)
		}
		return nil
	}
}

// --- raw Badger baselines: the engine's storage calls, nothing else ---

// rawInsertOp is what the engine does for insertOne below the command
// layer: a key from the _id, one Update transaction with one Txn.Insert.
func rawInsertOp(st *store.Store, coll *store.Collection, t template) opFunc {
	buf := make([]byte, 0, docSize)
	return func(context.Context) error {
		doc, oid := t.withOID(buf)
		key := store.DocKey(coll.ID, 0, nil, value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}))
		return st.Update(func(tx *store.Txn) error { return tx.Insert(coll, key, doc) })
	}
}

// rawGetOp is findById's storage work: a key from the _id, one View
// transaction with one Txn.Get (which copies the value out, as the engine
// needs it after the transaction).
func rawGetOp(st *store.Store, coll *store.Collection, ndocs int64, seed uint64) opFunc {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	var idb [8]byte
	return func(context.Context) error {
		id := rng.Int64N(ndocs)
		key := store.DocKey(coll.ID, 0, nil, value.EncodeKey(nil, int64Value(idb[:], id)))
		var n int
		err := st.View(func(tx *store.Txn) error {
			doc, err := tx.Get(key)
			n = len(doc)
			return err
		})
		if err == nil && n != docSize {
			err = fmt.Errorf("raw get %d: got %d bytes", id, n)
		}
		return err
	}
}

func int64Value(b []byte, v int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(b[:0], v)}
}

// preloadServer inserts ndocs documents with _id 0..ndocs-1 into coll.
func preloadServer(ctx context.Context, coll *mongo.Collection, t template, ndocs int64) error {
	if err := coll.Drop(ctx); err != nil {
		return err
	}
	const batch = 1000
	for i := int64(0); i < ndocs; i += batch {
		docs := make([]any, 0, batch)
		for j := i; j < min(i+batch, ndocs); j++ {
			docs = append(docs, bson.Raw(t.withIntID(j)))
		}
		res, err := coll.InsertMany(ctx, docs)
		if err != nil {
			return fmt.Errorf("preload: %w", err)
		}
		if len(res.InsertedIDs) != len(docs) {
			return fmt.Errorf("preload: %d of %d documents inserted", len(res.InsertedIDs), len(docs))
		}
	}
	// The server has no count command yet: check the ends instead.
	for _, id := range []int64{0, ndocs - 1} {
		raw, err := coll.FindOne(ctx, bson.Raw(idFilter(nil, id))).Raw()
		if err != nil || len(raw) != docSize {
			return fmt.Errorf("preload: reading back _id %d: %d bytes, %v", id, len(raw), err)
		}
	}
	return nil
}

// preloadStore stores the same documents under the same keys in a raw store.
func preloadStore(st *store.Store, coll *store.Collection, t template, ndocs int64) error {
	const batch = 500
	var idb [8]byte
	for i := int64(0); i < ndocs; i += batch {
		err := st.Update(func(tx *store.Txn) error {
			for j := i; j < min(i+batch, ndocs); j++ {
				key := store.DocKey(coll.ID, 0, nil, value.EncodeKey(nil, int64Value(idb[:], j)))
				if err := tx.Insert(coll, key, t.withIntID(j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("preload raw store: %w", err)
		}
	}
	return nil
}
