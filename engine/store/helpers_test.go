package store

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func openMem(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatalf("open in memory: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openDir opens a store on dir; the caller closes it.
func openDir(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, SyncInterval: -1})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return s
}

func mustCreate(t *testing.T, s *Store, db, name string) *Collection {
	t.Helper()
	c, err := s.CreateCollection(db, name, nil)
	if err != nil {
		t.Fatalf("create %s.%s: %v", db, name, err)
	}
	return c
}

func i32v(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

func idKey(c *Collection, id int32) []byte {
	return DocKey(c.ID, 0, nil, value.EncodeKey(nil, i32v(id)))
}

// mkDoc is {_id: id, pad: "xxx…"} with pad bytes of padding.
func mkDoc(id int32, pad int) []byte {
	return bsoncore.BuildDocument(nil,
		bsoncore.AppendInt32Element(nil, "_id", id),
		bsoncore.AppendStringElement(nil, "pad", strings.Repeat("x", pad)))
}

func insert(t *testing.T, s *Store, c *Collection, id int32, pad int) {
	t.Helper()
	if err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, id), mkDoc(id, pad)) }); err != nil {
		t.Fatalf("insert %d into %s: %v", id, c.Namespace(), err)
	}
}

// truth computes c's counts from its documents, the way the counters are
// supposed to add up.
func truth(t *testing.T, s *Store, c *Collection) Counts {
	t.Helper()
	var want Counts
	err := s.View(func(tx *Txn) error {
		return tx.Scan(c, nil, func(key, doc []byte) (bool, error) {
			want.Docs++
			want.Bytes += int64(len(doc))
			want.KeyBytes += int64(len(key))
			want.IndexBytes += idEntryBytes(t, c, key)
			return true, nil
		})
	})
	if err != nil {
		t.Fatalf("scan %s: %v", c.Namespace(), err)
	}
	return want
}

// idEntryBytes is the size of the _id index entry of the document at key
// (0 in an unsharded collection, which has none).
func idEntryBytes(t *testing.T, c *Collection, key []byte) int64 {
	if c.IDIndex == nil {
		return 0
	}
	ik, err := idIndexKey(key)
	if err != nil {
		t.Fatal(err)
	}
	k, v := c.IDIndex.entry(c, ik, key)
	return int64(len(k) + len(v))
}

func mustCounts(t *testing.T, s *Store, c *Collection) Counts {
	t.Helper()
	got, err := s.Counts(c)
	if err != nil {
		t.Fatalf("counts of %s: %v", c.Namespace(), err)
	}
	return got
}

// checkExact asserts that c's counters equal what its documents add up to
// and that there are docs documents.
func checkExact(t *testing.T, s *Store, c *Collection, docs int64) {
	t.Helper()
	want := truth(t, s, c)
	if got := mustCounts(t, s, c); got != want {
		t.Errorf("counts of %s = %+v, documents add up to %+v", c.Namespace(), got, want)
	}
	if want.Docs != docs {
		t.Errorf("%s holds %d documents, want %d", c.Namespace(), want.Docs, docs)
	}
}

// rawKeys counts the keys under prefix, bypassing the catalog.
func rawKeys(t *testing.T, s *Store, prefix []byte) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// deltaKeys counts collection id's counter deltas.
func deltaKeys(t *testing.T, s *Store, id uint32) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: counterPrefix(id)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); !isCounterBase(k) && !pastCollectionCounters(k) {
				n++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkPurged asserts that nothing of collection id is left in Badger.
func checkPurged(t *testing.T, s *Store, id uint32) {
	t.Helper()
	if n := rawKeys(t, s, DocPrefix(id)); n != 0 {
		t.Errorf("%d document keys of dropped collection %d remain", n, id)
	}
	if n := rawKeys(t, s, counterPrefix(id)); n != 0 {
		t.Errorf("%d counter keys of dropped collection %d remain", n, id)
	}
}

func isChanged(err error) bool { return errors.Is(err, ErrCollectionChanged) }

// checkLogical asserts that each logical partition's counters of
// sharded collection c hold what its documents add up to.
func checkLogical(t *testing.T, s *Store, c *Collection) {
	t.Helper()
	want := map[string]Counts{}
	err := s.View(func(tx *Txn) error {
		return tx.Scan(c, nil, func(key, doc []byte) (bool, error) {
			lp, err := logicalPartitionOf(key)
			d := want[string(lp)]
			d.add(Counts{Docs: 1, Bytes: int64(len(doc)), KeyBytes: int64(len(key)), IndexBytes: idEntryBytes(t, c, key)})
			want[string(lp)] = d
			return true, err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.View(func(txn kv.Txn) error {
		_, err := scanLogical(txn, c.ID, 0, ^uint64(0), func(lp LogicalPartition) error {
			k := string(binary.BigEndian.AppendUint64(nil, lp.Point)) + string(lp.Key)
			if lp.Counts != want[k] {
				t.Errorf("%s: logical partition %x holds %+v, its documents add up to %+v", c.Namespace(), k, lp.Counts, want[k])
			}
			delete(want, k)
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) > 0 {
		t.Errorf("%s: %d logical partitions without counters", c.Namespace(), len(want))
	}
}
