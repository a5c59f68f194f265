package store

import (
	"sync"
	"time"
)

// Writers and catalog changes.
//
// A write transaction must not commit against a catalog entry that a
// concurrent drop, rename, re-placement (shardCollection) or index change
// has made stale: its documents would land in a purged key space, or miss
// an index. Each collection id has a fence, a read-write lock: a write
// transaction holds it shared from its first write to the collection
// until it has committed (Txn.checkCollection, Store.Update), and checks
// then that the published entry is the one it writes with; a catalog
// change that invalidates writers' entries holds it exclusively while it
// writes and publishes the new entry. So a writer either commits before
// the change (which then sees its documents: a drop purges them, an index
// build reads them) or starts after it and finds its entry stale
// (ErrCollectionChanged: the caller looks the collection up again).
//
// This replaces reading the catalog key in every write transaction (a
// Badger read of a key that is seldom in the memtable, and a BSON parse
// of the entry): the shared lock costs a few atomic operations.
//
// Lock order: a fence before catMu; a fence is never taken while holding
// catMu. Changes that keep writers' entries valid (multikey flags, hidden,
// TTL, throughput, splits) take no fence, so that a writer holding one may
// make them (markMultikey).

func (s *Store) fence(id uint32) *sync.RWMutex {
	if f, ok := s.fences.Load(id); ok {
		return f.(*sync.RWMutex)
	}
	f, _ := s.fences.LoadOrStore(id, &sync.RWMutex{})
	return f.(*sync.RWMutex)
}

// tryRLock takes f shared, giving up after d.
func tryRLock(f *sync.RWMutex, d time.Duration) bool { return retryFor(d, f.TryRLock) }

// tryLock takes f exclusively, giving up after d.
func tryLock(f *sync.RWMutex, d time.Duration) bool { return retryFor(d, f.TryLock) }

// retryFor calls try until it succeeds, for at most d.
func retryFor(d time.Duration, try func() bool) bool {
	deadline := time.Now().Add(d)
	for !try() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// releaseFences ends a transaction's shared holds.
func (t *Txn) releaseFences() {
	for _, f := range t.fences {
		f.RUnlock()
	}
	t.fences = nil
}

// lockFences takes the fences of ids exclusively, in id order (no
// deadlock between two changes), and returns the function that releases
// them (once, however often it is called).
func (s *Store) lockFences(ids ...uint32) func() {
	if len(ids) == 2 && ids[0] > ids[1] {
		ids[0], ids[1] = ids[1], ids[0]
	}
	var held []*sync.RWMutex
	for i, id := range ids {
		if i > 0 && id == ids[i-1] {
			continue
		}
		f := s.fence(id)
		f.Lock()
		held = append(held, f)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, f := range held {
				f.Unlock()
			}
		})
	}
}

// changeEntryFenced is changeEntry for a change that makes writers'
// entries stale (an epoch or index version change): it holds c's fence.
func (s *Store) changeEntryFenced(c *Collection, change func(*Collection) error) (*Collection, error) {
	unfence := s.lockFences(c.ID)
	defer unfence()
	return s.changeEntry(c, change)
}
