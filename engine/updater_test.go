package engine

import (
	"context"
	"testing"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/storage"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// testUpdater is an updater of db.c, started, for filter q and update u,
// over n documents {_id: i, a: 1}.
func testUpdater(t *testing.T, n int, q, u bson.D, multi, upsert bool) (*updater, *meter) {
	t.Helper()
	e, _ := newRetryableEngine(t)
	coll := testCollection(t, e)
	docs := make([]insertDoc, n)
	for i := range docs {
		docs[i] = prepareInsert(testDoc(t, int32(i), 1))
	}
	if _, errs, err := e.insertDocs(context.Background(), nil, coll, docs, true); err != nil || len(errs) > 0 {
		t.Fatalf("insert: %v %v", err, errs)
	}
	qb, err := bson.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	ub, err := bson.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := compileUpdate(qb, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ub}, nil, nil, e.now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sp.multi, sp.upsert = multi, upsert
	m := &meter{}
	up := &updater{e: e, ctx: context.Background(), m: m, db: "db", name: "c", sp: sp}
	if found, err := up.start(); !found || err != nil {
		t.Fatalf("start: found %v, %v", found, err)
	}
	return up, m
}

// testStep commits one chunk and takes it in.
func (u *updater) testStep(t *testing.T) (updateChunk, bool) {
	t.Helper()
	if err := u.commitChunk(); err != nil {
		t.Fatal(err)
	}
	c := u.chunk
	done, err := u.takeChunk()
	if err != nil {
		t.Fatal(err)
	}
	return c, done
}

// A multi update commits a chunk of changed documents at a time, each
// charged, and resumes the scan where the last one stopped.
func TestUpdaterChunks(t *testing.T) {
	n := chunkDocs + 500
	u, m := testUpdater(t, n, bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}, true, false)
	if u.point != nil {
		t.Fatal("a filter on a routes to one key")
	}

	c, done := u.testStep(t)
	if done || !c.more || c.matched != chunkDocs || c.modified != chunkDocs || c.next == nil {
		t.Fatalf("first chunk: done %v, more %v, matched %d, modified %d; want a full chunk of %d and more", done, c.more, c.matched, c.modified, chunkDocs)
	}
	if string(u.resume) != string(c.next) {
		t.Fatal("the next chunk does not resume where the first stopped")
	}
	charged := m.Total()
	if charged <= 0 {
		t.Fatal("the first chunk was not charged")
	}

	c, done = u.testStep(t)
	if !done || c.more || c.matched != 500 || c.modified != 500 {
		t.Fatalf("second chunk: done %v, more %v, matched %d, modified %d; want the last 500", done, c.more, c.matched, c.modified)
	}
	if u.res.matched != int64(n) || u.res.modified != int64(n) {
		t.Fatalf("result %+v, want %d matched and modified", u.res, n)
	}
	if m.Total() <= charged {
		t.Fatal("the second chunk was not charged")
	}
	var doc []byte
	if err := u.e.store.View(func(tx storage.Txn) error {
		var err error
		doc, err = tx.Get(plan.IDKey(u.coll, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n-1))}))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if a := bsoncore.Document(doc).Lookup("a"); a.Int32() != 2 {
		t.Fatalf("the last document has a = %v, want 2", a)
	}
}

// A single update stops its scan at the first match.
func TestUpdaterSingleStopsAtFirstMatch(t *testing.T) {
	u, _ := testUpdater(t, 50, bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}, false, false)
	c, done := u.testStep(t)
	if !done || c.matched != 1 || c.modified != 1 {
		t.Fatalf("done %v, matched %d, modified %d; want one document", done, c.matched, c.modified)
	}
	if u.tally.Examined != 1 {
		t.Fatalf("%d documents examined, want 1", u.tally.Examined)
	}
}

// An upsert that matches nothing inserts in the transaction that found
// nothing.
func TestUpdaterUpsert(t *testing.T) {
	u, _ := testUpdater(t, 10, bson.D{{Key: "a", Value: 7}}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}, false, true)
	c, done := u.testStep(t)
	if !done || c.matched != 0 || c.upserted.Type != bsoncore.TypeObjectID {
		t.Fatalf("done %v, matched %d, upserted %v; want one ObjectId upserted", done, c.matched, c.upserted)
	}
	if u.res.upserted.Type != bsoncore.TypeObjectID {
		t.Fatalf("result %+v has no upserted _id", u.res)
	}
	if n := storedDocs(t, u.e, u.coll); n != 11 {
		t.Fatalf("%d documents stored, want 11", n)
	}
}
