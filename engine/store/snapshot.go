package store

import (
	"errors"
	"sync"

	"github.com/parsecdb/parsec/engine/kv"
)

// ErrSnapshotClosed is a read through a snapshot that was closed.
var ErrSnapshotClosed = errors.New("snapshot is closed")

// Snapshot is a read-only view of the store as of the moment it was taken,
// kept open across commands (snapshot reads): View runs read transactions
// that all see that moment. Views may run concurrently. Close releases
// it once the views in progress end.
type Snapshot struct {
	s   *Store
	txn kv.Txn

	mu     sync.Mutex
	active int
	closed bool
	gone   bool // txn discarded
}

// Snapshot takes a snapshot of the store now.
func (s *Store) Snapshot() (*Snapshot, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return &Snapshot{s: s, txn: s.db.NewTransaction(false)}, nil
}

// View runs fn in a read-only transaction of the snapshot.
func (sn *Snapshot) View(fn func(*Txn) error) error {
	sn.mu.Lock()
	if sn.closed || sn.s.closed.Load() {
		sn.mu.Unlock()
		return ErrSnapshotClosed
	}
	sn.active++
	sn.mu.Unlock()
	defer sn.done()
	tx := &Txn{s: sn.s, t: sn.txn}
	defer tx.releaseFences()
	return mapKVErr(fn(tx))
}

func (sn *Snapshot) done() {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.active--
	sn.discardIfIdle()
}

// Close releases the snapshot: later views fail with ErrSnapshotClosed.
func (sn *Snapshot) Close() {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.closed = true
	sn.discardIfIdle()
}

func (sn *Snapshot) discardIfIdle() {
	if sn.closed && sn.active == 0 && !sn.gone {
		sn.gone = true
		sn.txn.Discard()
	}
}
