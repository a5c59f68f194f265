package sessions

import (
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Snapshot reads (readConcern level "snapshot" outside a transaction)
// share storage snapshots: the first read of a snapshot session takes
// one and names it by a cluster time, which the session's later reads
// send back to read the same snapshot. A snapshot lives while it is used
// and for SnapshotWindow after (MongoDB's
// minSnapshotHistoryWindowInSeconds).

// SnapshotWindow is how long an unused snapshot is kept.
const SnapshotWindow = 5 * time.Minute

// MaxSnapshots bounds the snapshots held at once: each keeps the versions
// it sees from compaction.
const MaxSnapshots = 1000

// Snapshotter takes storage snapshots (storage.Data does).
type Snapshotter interface {
	Snapshot() (storage.Snapshot, error)
}

// Snapshots holds the snapshots by the cluster time that names them.
type Snapshots struct {
	store Snapshotter
	now   func() time.Time
	clock *ClusterClock

	mu   sync.Mutex
	byTS map[uint64]*heldSnapshot
	last bson.Timestamp
}

type heldSnapshot struct {
	snap     storage.Snapshot
	lastUsed time.Time
}

// NewSnapshots makes an empty registry that takes snapshots of store and
// names them by clock's times.
func NewSnapshots(store Snapshotter, now func() time.Time, clock *ClusterClock) *Snapshots {
	return &Snapshots{store: store, now: now, clock: clock, byTS: map[uint64]*heldSnapshot{}}
}

// Acquire returns the snapshot named at (taking a new one, and naming
// it, when at is nil) and its cluster time. A time later than the latest
// snapshot's is a *SnapshotUnavailableError, an earlier one no longer
// held a *SnapshotTooOldError; ErrTooManySnapshots refuses a new one
// while MaxSnapshots are held.
func (r *Snapshots) Acquire(at *bson.Timestamp) (storage.Snapshot, bson.Timestamp, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if at != nil {
		h := r.byTS[tsKey(*at)]
		if h == nil {
			if at.After(r.last) {
				return nil, bson.Timestamp{}, &SnapshotUnavailableError{At: *at, Latest: r.last}
			}
			return nil, bson.Timestamp{}, &SnapshotTooOldError{At: *at}
		}
		h.lastUsed = now
		return h.snap, *at, nil
	}
	if len(r.byTS) >= MaxSnapshots {
		return nil, bson.Timestamp{}, ErrTooManySnapshots
	}
	sn, err := r.store.Snapshot()
	if err != nil {
		return nil, bson.Timestamp{}, err
	}
	ts := r.clock.Next(now)
	r.last = ts
	r.byTS[tsKey(ts)] = &heldSnapshot{snap: sn, lastUsed: now}
	return sn, ts, nil
}

// Touch keeps the snapshot a cursor reads from expiring while the cursor
// is used.
func (r *Snapshots) Touch(sn storage.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.byTS {
		if h.snap == sn {
			h.lastUsed = r.now()
		}
	}
}

// Expire closes the snapshots unused for SnapshotWindow, or all of them
// when all.
func (r *Snapshots) Expire(all bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.now().Add(-SnapshotWindow)
	for k, h := range r.byTS {
		if all || h.lastUsed.Before(cutoff) {
			h.snap.Close()
			delete(r.byTS, k)
		}
	}
}

// Len is the number of snapshots held.
func (r *Snapshots) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byTS)
}
