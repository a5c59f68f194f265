package store

import (
	"sync"

	"github.com/parsecdb/parsec/engine/kv"
)

// A resharding's copy reads the source as it was when the copy began in
// this process (a read transaction per range, kept open until the range
// is copied), not as it is at each batch: a document written after that
// is brought over from the change log anyway, since it was written at a
// commit time after the copy's From (BeginResharding takes From before
// the copy can begin, and every commit at or before it had been made
// by then). Read at each batch, the copy also took every document
// inserted ahead of it while it ran, and under a steady insert load it
// copied as many again as there were at its start (bench -only
// '^reshard$': 405,376 copied of 215,746), or never ended when the
// writers inserted faster than it copied.
//
// A copy resumed after a restart begins again, at a later point: it
// copies what was written meanwhile too, which bringing the changes over
// makes right (it is idempotent). On a kv that keeps groups apart
// (cluster) each batch reads the state of its own time, as before: the
// node that runs the copy may change.
type copySnapshots struct {
	mu    sync.RWMutex // held shared while a batch reads a snapshot
	snaps map[copySnapshotKey]kv.Txn
}

type copySnapshotKey struct {
	temp  uint32 // the resharding's temporary collection
	index int    // its copy range
}

// viewCopy runs fn on the snapshot of range i of r's copy, taking it on
// the first call.
func (s *Store) viewCopy(r *Resharding, i int, fn func(*Txn) error) error {
	if s.grouped != nil {
		return s.View(fn)
	}
	k := copySnapshotKey{r.TempID, i}
	cs := &s.copySnaps
	cs.mu.RLock()
	snap := cs.snaps[k]
	if snap == nil {
		cs.mu.RUnlock()
		cs.mu.Lock()
		if s.closed.Load() {
			cs.mu.Unlock()
			return ErrClosed
		}
		if snap = cs.snaps[k]; snap == nil {
			snap = s.db.NewTransaction(false)
			if cs.snaps == nil {
				cs.snaps = map[copySnapshotKey]kv.Txn{}
			}
			cs.snaps[k] = snap
		}
		cs.mu.Unlock()
		cs.mu.RLock()
		if cs.snaps[k] != snap { // dropped meanwhile
			cs.mu.RUnlock()
			return s.View(fn)
		}
	}
	defer cs.mu.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	tx := &Txn{s: s, t: snap}
	defer tx.releaseFences()
	return mapKVErr(fn(tx))
}

// dropCopySnapshots ends the snapshots of r's copy: of range i, or of
// every range when i < 0; of every resharding when r is nil.
func (s *Store) dropCopySnapshots(r *Resharding, i int) {
	cs := &s.copySnaps
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for k, snap := range cs.snaps {
		if r == nil || k.temp == r.TempID && (i < 0 || k.index == i) {
			snap.Discard()
			delete(cs.snaps, k)
		}
	}
}
