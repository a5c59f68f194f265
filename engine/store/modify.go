package store

import (
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/kv"
)

// Modify reads the document at key in c and, when fn returns a new
// version, writes it in its place: the read-modify-write of a
// single-document update with one read of the key (Get then Replace read
// it twice). fn sees the stored bytes, valid only during the call, and
// returns the new document or nil to leave it as it is; an error from fn
// is returned as is. Modify fails with ErrNotFound (fn not called) when
// key holds no document.
//
// The read makes the transaction conflict with any concurrent write of
// the document, so read-modify-write cycles never lose an update
// (invariant 4 holds as for Replace).
func (t *Txn) Modify(c *Collection, key []byte, fn func(doc []byte) ([]byte, error)) error {
	if err := t.checkCollection(c); err != nil {
		return err
	}
	if err := t.checkCappedWrite(c); err != nil {
		return err
	}
	item, err := t.t.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return fmt.Errorf("document %x: %w", key, ErrNotFound)
	}
	if err != nil {
		return err
	}
	var out []byte
	var oldSize int
	var fnErr error
	var old []byte
	if err := item.Value(func(v []byte) error {
		oldSize = len(v)
		out, fnErr = fn(v)
		if out != nil {
			old = append([]byte(nil), v...)
		}
		return nil
	}); err != nil {
		return err
	}
	if fnErr != nil || out == nil {
		return fnErr
	}
	var changes []ixChange
	if len(c.Indexes) > 0 {
		if changes, err = t.indexChanges(c, key, old, out); err != nil {
			return err
		}
	}
	if err := t.checkGrowth(c, key, int64(len(out)-oldSize)); err != nil {
		return err
	}
	if err := t.lockKey(key); err != nil {
		return err
	}
	if err := t.checkScope(c, key); err != nil {
		return err
	}
	if err := t.set(key, out); err != nil {
		return mapKVErr(err)
	}
	if err := t.applyIndexChanges(c, key, changes); err != nil {
		return err
	}
	if err := t.logDocChange(c, key, old, out); err != nil {
		return err
	}
	t.replacing = false
	return t.account(c, key, Counts{Bytes: int64(len(out) - oldSize)})
}
