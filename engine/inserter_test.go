package engine

import (
	"context"
	"testing"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// testDoc is {_id: id, a: a}.
func testDoc(t *testing.T, id any, a int32) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "a", Value: a}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testCollection(t *testing.T, e *Engine) *store.Collection {
	t.Helper()
	coll, _, err := e.ensureCollection(context.Background(), "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	return coll
}

func storedDocs(t *testing.T, e *Engine, coll *store.Collection) int64 {
	t.Helper()
	c, err := e.store.Counts(coll)
	if err != nil {
		t.Fatal(err)
	}
	return c.Docs
}

// An ordered insert commits full chunks one by one and stops after the
// first document that fails, in the chunk that meets it.
func TestInserterChunks(t *testing.T) {
	e, _ := newRetryableEngine(t)
	coll := testCollection(t, e)
	bad := chunkDocs + 100
	docs := make([]insertDoc, chunkDocs+200)
	for i := range docs {
		docs[i] = prepareInsert(testDoc(t, int32(i), 1))
	}
	docs[bad] = prepareInsert(testDoc(t, bson.A{1}, 1))
	if docs[bad].err == nil {
		t.Fatal("an array _id was prepared without an error")
	}
	ins := e.newInserter(context.Background(), nil, coll, docs, true, nil)

	if err := ins.commitChunk(); err != nil {
		t.Fatal(err)
	}
	if c := ins.chunk; c.end != chunkDocs || c.n != chunkDocs || c.stop || len(c.errs) != 0 {
		t.Fatalf("first chunk: end %d, n %d, stop %v, errors %v; want a full chunk of %d", c.end, c.n, c.stop, c.errs, chunkDocs)
	}
	if err := ins.takeChunk(); err != nil {
		t.Fatal(err)
	}
	if ins.next != chunkDocs || ins.inserted != chunkDocs {
		t.Fatalf("after the first chunk: next %d, inserted %d", ins.next, ins.inserted)
	}

	if err := ins.commitChunk(); err != nil {
		t.Fatal(err)
	}
	c := ins.chunk
	if !c.stop || c.end != bad+1 || c.n != 100 {
		t.Fatalf("second chunk: stop %v, end %d, n %d; want a stop after document %d, 100 inserted", c.stop, c.end, c.n, bad)
	}
	if len(c.errs) != 1 || c.errs[0].index != bad || c.errs[0].code != ErrInvalidIDField {
		t.Fatalf("second chunk: errors %+v, want InvalidIDField at %d", c.errs, bad)
	}
	if err := ins.takeChunk(); err != nil {
		t.Fatal(err)
	}
	if ins.inserted != int64(bad) || len(ins.errs) != 1 {
		t.Fatalf("inserted %d with %d errors, want %d with 1", ins.inserted, len(ins.errs), bad)
	}
	if n := storedDocs(t, e, coll); n != int64(bad) {
		t.Fatalf("%d documents stored, want %d", n, bad)
	}
}

// An unordered insert goes on past a duplicate key; a document an
// earlier attempt of a retryable write inserted counts without being
// written again.
func TestInserterUnordered(t *testing.T) {
	e, _ := newRetryableEngine(t)
	coll := testCollection(t, e)
	docs := []insertDoc{
		prepareInsert(testDoc(t, "a", 1)),
		prepareInsert(testDoc(t, "b", 1)),
		{retried: true},
		prepareInsert(testDoc(t, "a", 2)),
		prepareInsert(testDoc(t, "c", 1)),
	}
	n, errs, err := e.insertDocs(context.Background(), &meter{}, coll, docs, false)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("n = %d, want 4 (three written, one retried)", n)
	}
	if len(errs) != 1 || errs[0].index != 3 || errs[0].code != ErrDuplicateKey {
		t.Errorf("write errors %+v, want DuplicateKey at 3", errs)
	}
	if got := storedDocs(t, e, coll); got != 3 {
		t.Errorf("%d documents stored, want 3", got)
	}
}
