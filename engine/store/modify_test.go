package store

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestModify(t *testing.T) {
	t.Parallel()
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	k := idKey(c, 1)
	insert(t, s, c, 1, 10)

	// A new version replaces the document; counters follow its size.
	bigger := mkDoc(1, 200)
	if err := s.Update(func(tx *Txn) error {
		return tx.Modify(c, k, func(doc []byte) ([]byte, error) {
			if !bytes.Equal(doc, mkDoc(1, 10)) {
				t.Errorf("fn saw %x", doc)
			}
			return bigger, nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	var got []byte
	_ = s.View(func(tx *Txn) error { got, _ = tx.Get(k); return nil })
	if !bytes.Equal(got, bigger) {
		t.Errorf("after Modify: %x", got)
	}
	checkExact(t, s, c, 1)

	// nil leaves it; an error from fn is returned and writes nothing.
	boom := errors.New("boom")
	if err := s.Update(func(tx *Txn) error {
		return tx.Modify(c, k, func([]byte) ([]byte, error) { return nil, nil })
	}); err != nil {
		t.Fatal(err)
	}
	err := s.Update(func(tx *Txn) error {
		return tx.Modify(c, k, func([]byte) ([]byte, error) { return mkDoc(1, 1), boom })
	})
	if !errors.Is(err, boom) {
		t.Fatalf("fn error: %v", err)
	}
	_ = s.View(func(tx *Txn) error { got, _ = tx.Get(k); return nil })
	if !bytes.Equal(got, bigger) {
		t.Errorf("after failed Modify: %x", got)
	}
	checkExact(t, s, c, 1)

	// A missing document: ErrNotFound, fn not called, counters untouched.
	err = s.Update(func(tx *Txn) error {
		return tx.Modify(c, idKey(c, 2), func([]byte) ([]byte, error) {
			t.Error("fn called for a missing document")
			return nil, nil
		})
	})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	checkExact(t, s, c, 1)
}

// TestModifyConcurrentIncrements: read-modify-write cycles racing on one
// document conflict and retry; none is lost.
func TestModifyConcurrentIncrements(t *testing.T) {
	t.Parallel()
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	k := idKey(c, 1)
	doc := func(n int32) []byte {
		return bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "_id", 1), bsoncore.AppendInt32Element(nil, "n", n))
	}
	if err := s.Update(func(tx *Txn) error { return tx.Insert(c, k, doc(0)) }); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 100
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				err := s.Update(func(tx *Txn) error {
					return tx.Modify(c, k, func(d []byte) ([]byte, error) {
						return doc(bsoncore.Document(d).Lookup("n").Int32() + 1), nil
					})
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var got []byte
	_ = s.View(func(tx *Txn) error { got, _ = tx.Get(k); return nil })
	if n := bsoncore.Document(got).Lookup("n").Int32(); n != workers*each {
		t.Errorf("n = %d, want %d", n, workers*each)
	}
	checkExact(t, s, c, 1)
}
