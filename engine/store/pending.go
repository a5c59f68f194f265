package store

import (
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Collections created inside a transaction.
//
// The catalog itself is not transactional: a collection a transaction
// creates (by create, createIndexes or a first write) gets its catalog
// entry at once, so that the transaction's writes have somewhere to go.
// Until the transaction ends the collection is pending: listings leave it
// out, as MongoDB shows no collection a transaction created before it
// commits. Commit publishes it (Publish); abort takes it back
// (Withdraw): dropped, unless a write from outside the transaction has
// committed a document into it meanwhile, in which case it stays.

// MarkPending marks collection id as created by a transaction still open.
func (s *Store) MarkPending(id uint32) { s.pending.Store(id, struct{}{}) }

// Pending reports whether collection id was created by a transaction
// still open.
func (s *Store) Pending(id uint32) bool {
	_, ok := s.pending.Load(id)
	return ok
}

// Publish ends collection id's pending state: its transaction committed.
func (s *Store) Publish(id uint32) { s.pending.Delete(id) }

// withdrawWait is how long Withdraw waits for writers of the collection
// (another transaction holding its fence) before it keeps the collection.
const withdrawWait = 100 * time.Millisecond

// Withdraw takes back db.name, collection id, created by a transaction
// that aborted: it is dropped when it holds no committed document. It
// stays (published) when it has documents, when writers hold it past
// withdrawWait, or when db.name is no longer collection id.
func (s *Store) Withdraw(db, name string, id uint32) error {
	defer s.Publish(id)
	c := s.Collection(db, name)
	if c == nil || c.ID != id || s.closed.Load() {
		return nil // gone, replaced, or the store is closing (it stays, empty)
	}
	f := s.fence(id)
	deadline := time.Now().Add(withdrawWait)
	for !f.TryLock() {
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	empty := true
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: DocPrefix(id)})
		defer it.Close()
		it.Rewind()
		empty = !it.Valid()
		return nil
	})
	if err != nil || !empty {
		f.Unlock()
		return err
	}
	s.catMu.Lock()
	if s.colls[db+"."+name] != c {
		s.catMu.Unlock()
		f.Unlock()
		return nil
	}
	err = s.update(func(txn *badger.Txn) error { return txn.Delete(collKey(db, name)) })
	if err == nil {
		delete(s.colls, c.Namespace())
	}
	s.catMu.Unlock()
	f.Unlock()
	if err != nil {
		return fmt.Errorf("withdraw collection %s.%s: %w", db, name, err)
	}
	return s.purge(id)
}
