// Package storagetest checks a storage.Storage against the invariants the
// engine relies on (the package comment of engine/storage): atomic
// updates, read-your-writes, serialised writers of one document, consistent
// views, snapshots, multi-statement transactions and durability across a
// reopen. Every implementation runs it from its own tests.
package storagetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Opener opens the implementation on dir (the same dir again after a
// close: what was acknowledged must be there) and returns it with its
// close function.
type Opener func(t *testing.T, dir string) (storage.Storage, func() error)

// Run runs every check, each on a storage of its own.
func Run(t *testing.T, open Opener) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Opener)
	}{
		{"atomic_update", atomicUpdate},
		{"read_your_writes", readYourWrites},
		{"one_writer_per_document", oneWriterPerDocument},
		{"consistent_view", consistentView},
		{"snapshot", snapshotKeepsState},
		{"transaction", transaction},
		{"durable", durable},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

// fixture is a storage with one unsharded collection.
type fixture struct {
	s    storage.Storage
	c    *store.Collection
	stop func() error
}

func setUp(t *testing.T, open Opener, dir string) *fixture {
	t.Helper()
	s, stop := open(t, dir)
	c := s.Collection("db", "c")
	if c == nil {
		var err error
		if c, err = s.CreateCollection("db", "c", nil); err != nil {
			t.Fatalf("CreateCollection: %v", err)
		}
	}
	f := &fixture{s: s, c: c, stop: stop}
	t.Cleanup(func() {
		if f.stop != nil {
			if err := f.stop(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return f
}

func key(c *store.Collection, id int32) []byte {
	return store.DocKey(c.ID, 0, nil, value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, id)}))
}

func doc(id int32, v string) []byte {
	b, err := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "v", Value: v}})
	if err != nil {
		panic(err)
	}
	return b
}

// present reports whether a committed state holds document id.
func (f *fixture) present(t *testing.T, id int32) bool {
	t.Helper()
	var found bool
	err := f.s.View(func(tx storage.Txn) error {
		found = f.has(t, tx, id)
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return found
}

func (f *fixture) has(t *testing.T, tx storage.Txn, id int32) bool {
	t.Helper()
	_, err := tx.Get(key(f.c, id))
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatalf("Get %d: %v", id, err)
	}
	return true
}

func (f *fixture) docs(t *testing.T) int64 {
	t.Helper()
	n, err := f.s.Counts(f.c)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	return n.Docs
}

func (f *fixture) insert(t *testing.T, id int32, v string) {
	t.Helper()
	if err := f.s.Update(func(tx storage.Txn) error { return tx.Insert(f.c, key(f.c, id), doc(id, v)) }); err != nil {
		t.Fatalf("insert %d: %v", id, err)
	}
}

// Invariant 1: an Update whose function fails leaves nothing behind, not
// even counters.
func atomicUpdate(t *testing.T, open Opener) {
	f := setUp(t, open, t.TempDir())
	boom := errors.New("boom")
	err := f.s.Update(func(tx storage.Txn) error {
		for id := int32(1); id <= 3; id++ {
			if err := tx.Insert(f.c, key(f.c, id), doc(id, "x")); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want the function's error", err)
	}
	for id := int32(1); id <= 3; id++ {
		if f.present(t, id) {
			t.Errorf("document %d of a failed Update is visible", id)
		}
	}
	if n := f.docs(t); n != 0 {
		t.Errorf("counters say %d documents after a failed Update", n)
	}
	f.insert(t, 1, "a")
	f.insert(t, 2, "b")
	if n := f.docs(t); n != 2 {
		t.Errorf("counters say %d documents after two inserts, want 2", n)
	}
}

// Invariant 2: an Update reads what it wrote before, and a View that began
// before its commit does not.
func readYourWrites(t *testing.T, open Opener) {
	f := setUp(t, open, t.TempDir())
	err := f.s.View(func(outer storage.Txn) error {
		return f.s.Update(func(tx storage.Txn) error {
			if err := tx.Insert(f.c, key(f.c, 7), doc(7, "mine")); err != nil {
				return err
			}
			got, err := tx.Get(key(f.c, 7))
			if err != nil {
				return fmt.Errorf("Get of its own insert: %w", err)
			}
			if v := bson.Raw(got).Lookup("v").StringValue(); v != "mine" {
				t.Errorf("Update read %q, want its own write", v)
			}
			var seen int
			if err := tx.Scan(f.c, store.DocPrefix(f.c.ID), func(_, _ []byte) (bool, error) { seen++; return true, nil }); err != nil {
				return err
			}
			if seen != 1 {
				t.Errorf("Update's scan saw %d documents, want its own 1", seen)
			}
			if f.has(t, outer, 7) {
				t.Errorf("a View begun earlier sees an uncommitted write")
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !f.present(t, 7) {
		t.Errorf("committed insert not visible")
	}
}

// Invariant 3: two Updates writing one document serialise: the later one
// sees the earlier one's write (here: as a duplicate key) instead of both
// committing.
func oneWriterPerDocument(t *testing.T, open Opener) {
	f := setUp(t, open, t.TempDir())
	runs := 0
	err := f.s.Update(func(tx storage.Txn) error {
		runs++
		if f.has(t, tx, 9) {
			return tx.Replace(f.c, key(f.c, 9), doc(9, "second"), len(doc(9, "first")))
		}
		if runs == 1 {
			// Another writer commits the same document meanwhile.
			f.insert(t, 9, "first")
		}
		return tx.Insert(f.c, key(f.c, 9), doc(9, "second"))
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if runs < 2 {
		t.Errorf("the Update committed without seeing the concurrent write (%d run)", runs)
	}
	if n := f.docs(t); n != 1 {
		t.Errorf("counters say %d documents, want 1", n)
	}
	var v string
	if err := f.s.View(func(tx storage.Txn) error {
		got, err := tx.Get(key(f.c, 9))
		if err != nil {
			return err
		}
		v = bson.Raw(got).Lookup("v").StringValue()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if v != "second" {
		t.Errorf("document holds %q, want the later writer's", v)
	}
}

// Invariant 4: a View sees one state while others commit.
func consistentView(t *testing.T, open Opener) {
	f := setUp(t, open, t.TempDir())
	f.insert(t, 1, "a")
	err := f.s.View(func(tx storage.Txn) error {
		if !f.has(t, tx, 1) {
			t.Errorf("a View does not see a write acknowledged before it began")
		}
		f.insert(t, 2, "b")
		if err := f.s.Update(func(w storage.Txn) error { return w.Delete(f.c, key(f.c, 1), len(doc(1, "a"))) }); err != nil {
			return err
		}
		if f.has(t, tx, 2) || !f.has(t, tx, 1) {
			t.Errorf("a View saw writes committed while it ran")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.present(t, 1) || !f.present(t, 2) {
		t.Errorf("a later View does not see the later writes")
	}
}

// Invariant 5: each View of a Snapshot sees the state of its creation.
func snapshotKeepsState(t *testing.T, open Opener) {
	f := setUp(t, open, t.TempDir())
	f.insert(t, 1, "a")
	sn, err := f.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	f.insert(t, 2, "b")
	for i := 0; i < 2; i++ {
		if err := sn.View(func(tx storage.Txn) error {
			if !f.has(t, tx, 1) || f.has(t, tx, 2) {
				t.Errorf("snapshot view %d does not show the state of the snapshot", i)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		f.insert(t, int32(10+i), "later")
	}
}

// Invariant 6: a Transaction's writes are its own until Commit, and gone
// after Abort.
func transaction(t *testing.T, open Opener) {
	f := setUp(t, open, t.TempDir())
	tr, err := f.s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Update(func(tx storage.Txn) error { return tx.Insert(f.c, key(f.c, 1), doc(1, "t")) }); err != nil {
		t.Fatal(err)
	}
	if err := tr.View(func(tx storage.Txn) error {
		if !f.has(t, tx, 1) {
			t.Errorf("a transaction does not see its own write")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !tr.Writes(f.c.ID) {
		t.Errorf("Writes(%d) = false after a write to it", f.c.ID)
	}
	if f.present(t, 1) {
		t.Errorf("an uncommitted transaction's write is visible outside it")
	}
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	if !f.present(t, 1) || f.docs(t) != 1 {
		t.Errorf("a committed transaction's write is missing")
	}

	ab, err := f.s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := ab.Update(func(tx storage.Txn) error { return tx.Insert(f.c, key(f.c, 2), doc(2, "t")) }); err != nil {
		t.Fatal(err)
	}
	ab.Abort()
	if f.present(t, 2) || f.docs(t) != 1 {
		t.Errorf("an aborted transaction left its write behind")
	}
}

// Invariant 8: what was acknowledged is there after a reopen, catalog and
// counters included.
func durable(t *testing.T, open Opener) {
	dir := t.TempDir()
	f := setUp(t, open, dir)
	for id := int32(1); id <= 50; id++ {
		f.insert(t, id, "kept")
	}
	if err := f.s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.stop(); err != nil {
		t.Fatal(err)
	}
	f.stop = nil
	g := setUp(t, open, dir)
	if g.c.ID != f.c.ID {
		t.Errorf("collection id %d after reopen, was %d", g.c.ID, f.c.ID)
	}
	if n := g.docs(t); n != 50 {
		t.Errorf("%d documents counted after reopen, want 50", n)
	}
	for id := int32(1); id <= 50; id++ {
		if !g.present(t, id) {
			t.Fatalf("document %d lost across a reopen", id)
		}
	}
}
