package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestInsertGetReplaceDelete(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	k := idKey(c, 1)
	d1, d2 := mkDoc(1, 10), mkDoc(1, 300)

	if err := s.Update(func(tx *Txn) error { return tx.Insert(c, k, d1) }); err != nil {
		t.Fatal(err)
	}
	want := Counts{Docs: 1, Bytes: int64(len(d1)), KeyBytes: int64(len(k))}
	if got := mustCounts(t, s, c); got != want {
		t.Errorf("after insert: %+v, want %+v", got, want)
	}
	var got []byte
	if err := s.View(func(tx *Txn) error {
		var err error
		got, err = tx.Get(k)
		return err
	}); err != nil || !bytes.Equal(got, d1) {
		t.Fatalf("Get = %x, %v", got, err)
	}

	if err := s.Update(func(tx *Txn) error { return tx.Replace(c, k, d2, len(d1)) }); err != nil {
		t.Fatal(err)
	}
	want.Bytes = int64(len(d2))
	if got := mustCounts(t, s, c); got != want {
		t.Errorf("after replace: %+v, want %+v", got, want)
	}
	_ = s.View(func(tx *Txn) error { got, _ = tx.Get(k); return nil })
	if !bytes.Equal(got, d2) {
		t.Errorf("Get after replace = %x", got)
	}

	if err := s.Update(func(tx *Txn) error { return tx.Delete(c, k, len(d2)) }); err != nil {
		t.Fatal(err)
	}
	checkExact(t, s, c, 0)
	err := s.View(func(tx *Txn) error { _, err := tx.Get(k); return err })
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after delete: err = %v, want ErrNotFound", err)
	}
}

// TestDeleteOrReplaceMissing: deleting or replacing a document that is not
// there must fail and leave the counters alone, whatever the caller believed.
func TestDeleteOrReplaceMissing(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	insert(t, s, c, 1, 5)
	err := s.Update(func(tx *Txn) error { return tx.Delete(c, idKey(c, 2), 40) })
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting an absent document: err = %v, want ErrNotFound", err)
	}
	err = s.Update(func(tx *Txn) error { return tx.Replace(c, idKey(c, 2), mkDoc(2, 1), 40) })
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("replacing an absent document: err = %v, want ErrNotFound", err)
	}
	// Deleting twice in one transaction counts once.
	k := idKey(c, 1)
	err = s.Update(func(tx *Txn) error {
		if err := tx.Delete(c, k, len(mkDoc(1, 5))); err != nil {
			return err
		}
		if err := tx.Delete(c, k, len(mkDoc(1, 5))); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete in one transaction: err = %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkExact(t, s, c, 0)
	if got := mustCounts(t, s, c); got != (Counts{}) {
		t.Errorf("counts = %+v, want zero", got)
	}
}

func TestDuplicateKey(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	insert(t, s, c, 1, 5)

	// _id 1.0 encodes like _id 1, so it collides, as in MongoDB.
	dblOne := bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 1)}
	k := DocKey(c.ID, 0, nil, value.EncodeKey(nil, dblOne))
	if !bytes.Equal(k, idKey(c, 1)) {
		t.Fatalf("_id 1.0 and 1 have different keys")
	}
	err := s.Update(func(tx *Txn) error { return tx.Insert(c, k, mkDoc(1, 99)) })
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) || !bytes.Equal(dup.Key, k) {
		t.Fatalf("duplicate insert: err = %v, want *DuplicateKeyError for %x", err, k)
	}
	if dup.Error() == "" {
		t.Errorf("empty message")
	}
	// A duplicate within one transaction, and the failed transaction
	// leaves nothing behind.
	err = s.Update(func(tx *Txn) error {
		if err := tx.Insert(c, idKey(c, 2), mkDoc(2, 1)); err != nil {
			return err
		}
		return tx.Insert(c, idKey(c, 2), mkDoc(2, 1))
	})
	if !errors.As(err, &dup) {
		t.Errorf("duplicate within a transaction: err = %v", err)
	}
	checkExact(t, s, c, 1)
	// Insert after delete in one transaction is not a duplicate.
	err = s.Update(func(tx *Txn) error {
		if err := tx.Delete(c, idKey(c, 1), len(mkDoc(1, 5))); err != nil {
			return err
		}
		return tx.Insert(c, idKey(c, 1), mkDoc(1, 7))
	})
	if err != nil {
		t.Fatal(err)
	}
	checkExact(t, s, c, 1)
}

func TestUpdateErrorRollsBack(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	boom := errors.New("boom")
	err := s.Update(func(tx *Txn) error {
		for i := int32(0); i < 5; i++ {
			if err := tx.Insert(c, idKey(c, i), mkDoc(i, 1)); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	checkExact(t, s, c, 0)
	if n := deltaKeys(t, s, c.ID); n != 0 {
		t.Errorf("a rolled back transaction left %d counter deltas", n)
	}
}

func TestScanOrderAndResume(t *testing.T) {
	s := openMem(t)
	before := mustCreate(t, s, "db", "before") // lower id: sorts before c
	c := mustCreate(t, s, "db", "c")
	after := mustCreate(t, s, "db", "after") // higher id: sorts after c
	insert(t, s, before, 1, 1)
	insert(t, s, after, 1, 1)

	// Keys with various hashes, shard keys and ids, inserted shuffled.
	type entry struct {
		key []byte
		doc []byte
	}
	var entries []entry
	for _, h := range []uint64{0, 1, 1 << 63, ^uint64(0)} {
		for _, sk := range []string{"", "a", "a\x00", "b"} {
			for id := int32(-2); id <= 2; id++ {
				skEnc := []byte(nil)
				if sk != "" {
					skEnc = value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, sk)})
				}
				k := DocKey(c.ID, h, skEnc, value.EncodeKey(nil, i32v(id)))
				entries = append(entries, entry{k, mkDoc(id, len(entries))})
			}
		}
	}
	shuffled := slices.Clone(entries)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	err := s.Update(func(tx *Txn) error {
		for _, e := range shuffled {
			if err := tx.Insert(c, e.key, e.doc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })

	scan := func(start []byte, limit int) []entry {
		t.Helper()
		var out []entry
		err := s.View(func(tx *Txn) error {
			return tx.Scan(c, start, func(key, doc []byte) (bool, error) {
				// key and doc are only valid during the call.
				out = append(out, entry{bytes.Clone(key), bytes.Clone(doc)})
				return len(out) < limit, nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	same := func(got, want []entry) bool {
		return slices.EqualFunc(got, want, func(a, b entry) bool { return bytes.Equal(a.key, b.key) && bytes.Equal(a.doc, b.doc) })
	}
	if got := scan(nil, 1<<30); !same(got, entries) {
		t.Fatalf("full scan returned %d entries, not the %d inserted ones in key order", len(got), len(entries))
	}
	// Resume from the key of the 30th entry, as a cursor does.
	if got := scan(entries[30].key, 1<<30); !same(got, entries[30:]) {
		t.Errorf("resumed scan returned %d entries, want %d from entry 30", len(got), len(entries)-30)
	}
	// Resume from a key between two entries (just after entry 30).
	between := append(bytes.Clone(entries[30].key), 0)
	if got := scan(between, 1<<30); !same(got, entries[31:]) {
		t.Errorf("scan from between keys returned %d entries, want %d", len(got), len(entries)-31)
	}
	// Stopping early.
	if got := scan(nil, 7); !same(got, entries[:7]) {
		t.Errorf("scan stopped after 7 returned %d", len(got))
	}
	// A start before the collection's prefix scans from its beginning; one
	// past it scans nothing. Neither strays into other collections.
	if got := scan(DocPrefix(before.ID), 1<<30); !same(got, entries) {
		t.Errorf("scan from before the prefix returned %d entries, want all %d", len(got), len(entries))
	}
	if got := scan(DocPrefix(after.ID), 1<<30); len(got) != 0 {
		t.Errorf("scan from past the prefix returned %d entries", len(got))
	}
	// An error from fn ends the scan and is returned.
	boom := errors.New("boom")
	calls := 0
	err = s.View(func(tx *Txn) error {
		return tx.Scan(c, nil, func(key, doc []byte) (bool, error) { calls++; return true, boom })
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("scan with failing fn: err = %v after %d calls", err, calls)
	}
}

// TestTxnSeesOwnWrites: reads inside an update see its pending writes.
func TestTxnSeesOwnWrites(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	err := s.Update(func(tx *Txn) error {
		if err := tx.Insert(c, idKey(c, 1), mkDoc(1, 1)); err != nil {
			return err
		}
		n := 0
		if err := tx.Scan(c, nil, func(key, doc []byte) (bool, error) { n++; return true, nil }); err != nil {
			return err
		}
		if n != 1 {
			t.Errorf("scan inside the inserting transaction saw %d documents", n)
		}
		_, err := tx.Get(idKey(c, 1))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
