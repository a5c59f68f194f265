package store

import (
	"fmt"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
)

// Collections created inside a transaction.
//
// The catalog itself is not transactional: a collection a transaction
// creates (by create, createIndexes or a first write) gets its catalog
// entry at once, so that the transaction's writes have somewhere to go.
// Until the transaction ends the collection is pending: listings leave it
// out, as MongoDB shows no collection a transaction created before it
// commits. Commit publishes it; abort takes it back (Withdraw): dropped,
// unless a write from outside the transaction has committed a document
// into it meanwhile, in which case it stays.
//
// A pending collection also has a key, m/pending/<collID>. The
// transaction's commit deletes it in the same Badger transaction as its
// documents (Transaction.Publish), so after a crash a key left over names
// a collection whose transaction never committed: Open withdraws it.

// MarkPending marks collection id as created by a transaction still open.
func (s *Store) MarkPending(id uint32) error {
	s.pending.Store(id, struct{}{})
	return s.update(func(txn kv.Txn) error { return txn.Set(pendingKey(id), nil) })
}

// Pending reports whether collection id was created by a transaction
// still open.
func (s *Store) Pending(id uint32) bool {
	_, ok := s.pending.Load(id)
	return ok
}

// Published ends collection id's pending state once the transaction that
// created it has committed (with Transaction.Publish).
func (s *Store) Published(id uint32) { s.pending.Delete(id) }

// Publish makes the transaction's commit publish collection id, which it
// created (MarkPending): the pending key goes with the commit.
func (t *Transaction) Publish(id uint32) error {
	return t.run(func(tx *Txn) error { return tx.t.Delete(pendingKey(id)) })
}

// withdrawWait is how long Withdraw waits for writers of the collection
// (another transaction holding its fence) before it keeps the collection.
const withdrawWait = 100 * time.Millisecond

// Withdraw takes back db.name, collection id, created by a transaction
// that aborted: it is dropped when it holds no committed document. It
// stays (published) when it has documents, when writers hold it past
// withdrawWait, or when db.name is no longer collection id.
func (s *Store) Withdraw(db, name string, id uint32) error {
	if s.closed.Load() {
		return nil // the pending key stays: the next Open withdraws it
	}
	defer s.Published(id)
	if err := s.withdraw(db, name, id); err != nil {
		return err
	}
	return s.update(func(txn kv.Txn) error { return txn.Delete(pendingKey(id)) })
}

func (s *Store) withdraw(db, name string, id uint32) error {
	c := s.Collection(db, name)
	if c == nil || c.ID != id {
		return nil // dropped or replaced meanwhile
	}
	f := s.fence(id)
	if !tryLock(f, withdrawWait) {
		return nil
	}
	empty := true
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: DocPrefix(id)})
		defer it.Close()
		it.Rewind()
		empty = !it.Valid()
		return nil
	})
	if err == nil && empty {
		_, err = s.dropFenced(c) // a c replaced meanwhile stays
	}
	f.Unlock()
	return err
}

// withdrawOrphans withdraws the collections whose pending keys outlived
// their transactions (a crash while they were open).
func (s *Store) withdrawOrphans(ids []uint32) error {
	for _, id := range ids {
		var db, name string
		s.catMu.RLock()
		for _, c := range s.colls {
			if c.ID == id {
				db, name = c.DB, c.Name
			}
		}
		s.catMu.RUnlock()
		if err := s.Withdraw(db, name, id); err != nil {
			return fmt.Errorf("withdraw collection %d of a transaction cut off: %w", id, err)
		}
	}
	return nil
}
