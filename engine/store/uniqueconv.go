package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Converting an index to a unique one (collMod prepareUnique, then
// unique: true).
//
// A unique index made at creation keeps one entry per key (the key is the
// whole Badger key), so a second document with the key collides on a
// Badger read. An index created without unique keeps the document after
// the key, one entry per document; converting it does not rewrite those
// entries. Instead, while PrepareUnique or ConvertedUnique is set, a
// write that adds a key scans the key's entries for another document's.
// Badger finds conflicts only among keys read, and a scan does not read
// the entry a concurrent writer is adding, so each such write also reads
// and deletes a guard key u/<collID><ixID><ixKey>: two writers of one key
// both touch the guard, and the second to commit conflicts and reruns.
// Deleting it leaves nothing behind but a tombstone.

// IsUnique reports whether ix refuses a second document with a key: made
// unique, or converted since.
func (ix *Index) IsUnique() bool { return ix.Unique || ix.ConvertedUnique }

// uniqueByScan reports whether new keys of ix are checked by a scan.
func (ix *Index) uniqueByScan() bool { return !ix.Unique && (ix.PrepareUnique || ix.ConvertedUnique) }

// checkUniqueByScan fails with *DuplicateKeyError when a document other
// than the one at docKey has key in ix (kept in the per-document layout).
func (t *Txn) checkUniqueByScan(c *Collection, ix *Index, docKey, doc, key []byte) error {
	prefix := append(IndexPrefix(c.ID, ix.ID), key...)
	guard := uniqueGuardKey(prefix)
	if err := t.lockKey(guard); err != nil {
		return err
	}
	if _, err := t.t.Get(guard); err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	if err := t.del(guard); err != nil {
		return mapKVErr(err)
	}
	mine := docKey[docPrefixLen:]
	it := t.t.NewIterator(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if !bytes.Equal(it.Item().Key()[len(prefix):], mine) {
			return &DuplicateKeyError{Key: prefix, Index: ix.Name, Namespace: c.Namespace(), KeyPattern: ix.Key, KeyValue: ix.DupKey(doc, key)}
		}
	}
	return nil
}

// SetPrepareUnique turns index name's refusal of new duplicate keys on or
// off. Writers in flight finish first (the change holds c's fence); later
// ones see it.
func (s *Store) SetPrepareUnique(c *Collection, name string, on bool) (*Collection, error) {
	return s.changeEntryFenced(c, editIndex(name, func(ix *Index) { ix.PrepareUnique = on }))
}

// editIndex is a catalog change (for changeEntry) that edits index name
// and makes writers look the entry up again (IndexVersion).
func editIndex(name string, edit func(*Index)) func(*Collection) error {
	return func(e *Collection) error {
		e.cloneIndexes()
		ix := e.Index(name)
		if ix == nil {
			return fmt.Errorf("index %s: %w", name, ErrNotFound)
		}
		edit(ix)
		ix.Spec = respec(ix)
		e.IndexVersion++
		return nil
	}
}

// maxViolationIDs bounds the document ids uniqueViolations reports.
const maxViolationIDs = 10_000

// MakeUnique converts index name of c to a unique index, unless documents
// share a key: then it returns their _ids, one list per shared key, and
// changes nothing (nor does it with dryRun). The index must have
// PrepareUnique set, so that no new duplicate appears meanwhile; c's
// fence is held from the check to the change all the same.
func (s *Store) MakeUnique(c *Collection, name string, dryRun bool) (*Collection, [][]bson.RawValue, error) {
	unfence := s.lockFences(c.ID)
	defer unfence()
	ix := c.Index(name)
	if ix == nil {
		return nil, nil, fmt.Errorf("index %s: %w", name, ErrNotFound)
	}
	if ix.IsUnique() {
		return c, nil, nil
	}
	violations, err := s.uniqueViolations(c, ix)
	if err != nil || len(violations) > 0 || dryRun {
		return c, violations, err
	}
	next, err := s.changeEntry(c, editIndex(name, func(ix *Index) { ix.ConvertedUnique = true }))
	return next, nil, err
}

// uniqueViolations walks ix in key order and lists the _ids of the
// documents of every key more than one document has.
func (s *Store) uniqueViolations(c *Collection, ix *Index) ([][]bson.RawValue, error) {
	var out [][]bson.RawValue
	ids := 0
	var cur []byte     // the key of the group being read
	var group [][]byte // its documents' keys
	err := s.View(func(tx *Txn) error {
		flush := func() error {
			if len(group) > 1 {
				var v []bson.RawValue
				for _, dk := range group {
					doc, err := tx.Get(dk)
					if err != nil {
						return err
					}
					id, err := bsoncore.Document(doc).LookupErr("_id")
					if err != nil {
						return fmt.Errorf("%w: document without _id at %x", ErrCorrupted, dk)
					}
					v = append(v, bson.RawValue{Type: bson.Type(id.Type), Value: id.Data})
				}
				out = append(out, v)
				ids += len(v)
			}
			group = group[:0]
			return nil
		}
		err := tx.ScanIndex(c, ix, nil, nil, false, func(e IndexEntry) (bool, error) {
			key := e.Key[:len(e.Key)-(len(e.DocKey)-docPrefixLen)]
			if !bytes.Equal(key, cur) {
				if err := flush(); err != nil {
					return false, err
				}
				cur = append(cur[:0], key...)
			}
			group = append(group, bytes.Clone(e.DocKey))
			return ids < maxViolationIDs, nil
		})
		if err != nil {
			return err
		}
		return flush()
	})
	return out, err
}
