package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"go.mongodb.org/mongo-driver/v2/bson"
)

type snapshot struct {
	storage.Snapshot
	closed int
}

func (s *snapshot) Close() { s.closed++ }

type snapshotter struct{ taken []*snapshot }

func (s *snapshotter) Snapshot() (storage.Snapshot, error) {
	sn := &snapshot{}
	s.taken = append(s.taken, sn)
	return sn, nil
}

func TestSnapshotsReuseAndExpiry(t *testing.T) {
	c := newClock()
	st := &snapshotter{}
	var cc ClusterClock
	r := NewSnapshots(st, c.now, &cc)
	sn, ts, err := r.Acquire(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The same cluster time reads the same snapshot.
	c.advance(SnapshotWindow - time.Second)
	again, ts2, err := r.Acquire(&ts)
	if err != nil || again != sn || ts2 != ts || len(st.taken) != 1 {
		t.Fatalf("reading at %v again: %v", ts, err)
	}
	// A later time than any taken is unavailable; an earlier one is too
	// old.
	later := bson.Timestamp{T: ts.T + 1}
	var unavailable *SnapshotUnavailableError
	if _, _, err := r.Acquire(&later); !errors.As(err, &unavailable) || unavailable.Latest != ts {
		t.Fatalf("a later time: %v", err)
	}
	earlier := bson.Timestamp{T: ts.T - 1}
	var tooOld *SnapshotTooOldError
	if _, _, err := r.Acquire(&earlier); !errors.As(err, &tooOld) || tooOld.At != earlier {
		t.Fatalf("an earlier time: %v", err)
	}

	// The read above kept it: used SnapshotWindow ago at most, it stays.
	c.advance(SnapshotWindow - time.Second)
	r.Expire(false)
	if r.Len() != 1 || st.taken[0].closed != 0 {
		t.Fatal("a snapshot used within the window was closed")
	}
	r.Touch(sn) // a cursor's getMore
	c.advance(SnapshotWindow)
	r.Expire(false)
	if r.Len() != 1 {
		t.Fatal("a snapshot a cursor used was closed")
	}
	c.advance(time.Second)
	r.Expire(false)
	if r.Len() != 0 || st.taken[0].closed != 1 {
		t.Fatal("a snapshot unused past the window was kept")
	}
	if _, _, err := r.Acquire(&ts); !errors.As(err, &tooOld) {
		t.Fatalf("an expired snapshot's time: %v", err)
	}

	// New snapshots get later times; Expire(true) closes them all.
	_, t1, _ := r.Acquire(nil)
	_, t2, _ := r.Acquire(nil)
	if !t1.After(ts) || !t2.After(t1) {
		t.Fatalf("cluster times %v, %v after %v", t1, t2, ts)
	}
	r.Expire(true)
	if r.Len() != 0 || st.taken[1].closed != 1 || st.taken[2].closed != 1 {
		t.Fatal("Expire(true) left snapshots open")
	}
}

func TestSnapshotsBound(t *testing.T) {
	c := newClock()
	var cc ClusterClock
	r := NewSnapshots(&snapshotter{}, c.now, &cc)
	for range MaxSnapshots {
		if _, _, err := r.Acquire(nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.Acquire(nil); !errors.Is(err, ErrTooManySnapshots) {
		t.Fatalf("one snapshot too many: %v", err)
	}
}

func TestClusterClock(t *testing.T) {
	c := newClock()
	var cc ClusterClock
	first := cc.Latest(c.now())
	if first.T != uint32(c.now().Unix()) {
		t.Fatalf("the first time %v is not now's second", first)
	}
	if cc.Latest(c.now()) != first {
		t.Fatal("Latest moved without a Next")
	}
	next := cc.Next(c.now())
	if !next.After(first) || next.T != first.T {
		t.Fatalf("Next in the same second: %v after %v", next, first)
	}
	// A clock that goes back does not take cluster time back.
	back := cc.Next(c.now().Add(-time.Hour))
	if !back.After(next) {
		t.Fatalf("a clock gone back gave %v after %v", back, next)
	}
	c.advance(time.Minute)
	if later := cc.Next(c.now()); later.T != uint32(c.now().Unix()) || later.I != 0 {
		t.Fatalf("a new second: %v", later)
	}
}
