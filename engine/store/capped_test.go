package store

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func mustCreateCapped(t *testing.T, s *Store, name string, size, max int64) *Collection {
	t.Helper()
	c, err := s.CreateCollectionWith("db", name, NewCollection{Capped: true, CappedSize: size, CappedMax: max})
	if err != nil {
		t.Fatalf("create capped %s: %v", name, err)
	}
	return c
}

// scanIDs are c's _ids in key (natural) order, with their record ids.
func scanIDs(t *testing.T, s *Store, c *Collection) (ids []int32, rids []int64) {
	t.Helper()
	err := s.View(func(tx *Txn) error {
		return tx.Scan(c, nil, func(key, doc []byte) (bool, error) {
			ids = append(ids, bsoncore.Document(doc).Lookup("_id").Int32())
			rids = append(rids, RecordID(c, key))
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, rids
}

func TestCappedInsertionOrderAndEviction(t *testing.T) {
	s := openMem(t)
	c := mustCreateCapped(t, s, "c", 1<<20, 3)
	for _, id := range []int32{5, 1, 9, 3} {
		insert(t, s, c, id, 10)
	}
	ids, rids := scanIDs(t, s, c)
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 9 || ids[2] != 3 {
		t.Fatalf("natural order %v, want [1 9 3] (5, the oldest, evicted)", ids)
	}
	if rids[0] != 2 || rids[1] != 3 || rids[2] != 4 {
		t.Fatalf("record ids %v, want the insertion sequence [2 3 4]", rids)
	}
	checkExact(t, s, c, 3)

	// _id is unique across the collection, whatever the sequence.
	err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, 9), mkDoc(9, 1)) })
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) {
		t.Fatalf("duplicate _id: %v", err)
	}
	checkExact(t, s, c, 3)

	// Counters fold with the sequence key beside them.
	if err := s.fold(c.ID); err != nil {
		t.Fatal(err)
	}
	checkExact(t, s, c, 3)
}

func TestCappedEvictsBySizeInOneTransaction(t *testing.T) {
	s := openMem(t)
	c := mustCreateCapped(t, s, "c", 1024, 0)
	// One transaction inserting 10 documents of ~130 bytes keeps the
	// newest that fit in 1024 bytes.
	err := s.Update(func(tx *Txn) error {
		for id := range int32(10) {
			if err := tx.Insert(c, idKey(c, id), mkDoc(id, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := truth(t, s, c)
	if got.Bytes > 1024 || got.Bytes+int64(len(mkDoc(0, 100))) <= 1024 {
		t.Fatalf("%d bytes kept: want at most 1024, and no room for one more", got.Bytes)
	}
	ids, _ := scanIDs(t, s, c)
	if ids[len(ids)-1] != 9 || ids[0] != int32(10-len(ids)) {
		t.Fatalf("kept %v, want the newest", ids)
	}
	checkExact(t, s, c, int64(len(ids)))

	err = s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, 99), mkDoc(99, 2000)) })
	if !errors.Is(err, ErrCappedDocTooLarge) {
		t.Fatalf("a document larger than the collection: %v", err)
	}
}

func TestCappedSequenceSurvivesReopenAndEmptying(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	c := mustCreateCapped(t, s, "c", 1<<20, 0)
	insert(t, s, c, 1, 1)
	insert(t, s, c, 2, 1)
	err := s.Update(func(tx *Txn) error {
		return tx.Scan(c, nil, func(key, doc []byte) (bool, error) { return true, tx.Delete(c, append([]byte(nil), key...), len(doc)) })
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir)
	defer s.Close()
	c = s.Collection("db", "c")
	if c == nil || !c.Capped || c.CappedSize != 1<<20 {
		t.Fatalf("capped entry after reopen: %+v", c)
	}
	insert(t, s, c, 1, 1)
	_, rids := scanIDs(t, s, c)
	if len(rids) != 1 || rids[0] != 3 {
		t.Fatalf("record ids %v: the sequence must go on (3), never back", rids)
	}
}

func TestCommitSignal(t *testing.T) {
	s := openMem(t)
	c := mustCreateCapped(t, s, "c", 1<<20, 0)
	other := mustCreate(t, s, "db", "other")
	sig := s.CommitSignal(c)
	insert(t, s, other, 1, 1)
	select {
	case <-sig:
		t.Fatal("a commit to another collection signalled")
	default:
	}
	insert(t, s, c, 1, 1)
	select {
	case <-sig:
	case <-time.After(5 * time.Second):
		t.Fatal("the commit did not signal")
	}
	if s.CommitSignal(c) == sig {
		t.Fatal("a used signal was handed out again")
	}
}

func TestRecordIDOfUncappedIsStable(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "u")
	a, b := RecordID(c, idKey(c, 1)), RecordID(c, idKey(c, 2))
	if a != RecordID(c, idKey(c, 1)) || a == b || a < 0 || b < 0 {
		t.Fatalf("record ids %d %d: want stable, distinct, non-negative", a, b)
	}
}
