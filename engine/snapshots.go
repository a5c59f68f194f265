package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Snapshot reads: find, aggregate and distinct with readConcern level
// "snapshot" outside a transaction (MongoDB 5.0 and later). The first
// read of a snapshot session takes a store snapshot and names it by a
// cluster time, atClusterTime in its reply; the driver sends that time
// with the session's later reads, which then read the same snapshot, as
// does a cursor's getMore. A snapshot lives while it is used and for
// snapshotWindow after (MongoDB's minSnapshotHistoryWindowInSeconds);
// a read at a time no longer held gets 239 SnapshotTooOld.

// snapshotWindow is how long an unused snapshot is kept.
const snapshotWindow = 5 * time.Minute

// maxSnapshots bounds the snapshots held at once: each keeps the versions
// it sees from compaction.
const maxSnapshots = 1000

// reader runs read transactions: the store (the latest data) or a
// snapshot.
type reader interface {
	View(fn func(storage.Txn) error) error
}

type snapshotKey struct{}

// withSnapshot makes the reads under ctx read sn.
func withSnapshot(ctx context.Context, sn storage.Snapshot) context.Context {
	return context.WithValue(ctx, snapshotKey{}, sn)
}

// snapshotOf is the snapshot the reads under ctx read, or nil.
func snapshotOf(ctx context.Context) storage.Snapshot {
	sn, _ := ctx.Value(snapshotKey{}).(storage.Snapshot)
	return sn
}

// viewOf is what the reads under ctx read: their snapshot, or the store.
func (e *Engine) viewOf(ctx context.Context) reader { return viewIn(ctx, e.store) }

// viewIn is the transaction or snapshot the reads under ctx read, else
// latest.
func viewIn(ctx context.Context, latest reader) reader {
	if t := txnOf(ctx); t != nil {
		return t
	}
	if sn := snapshotOf(ctx); sn != nil {
		return sn
	}
	return latest
}

// snapshotRegistry holds the snapshots by the cluster time that names them.
type snapshotRegistry struct {
	mu   sync.Mutex
	byTS map[uint64]*heldSnapshot
	last bson.Timestamp
}

type heldSnapshot struct {
	snap     storage.Snapshot
	lastUsed time.Time
}

// clusterClock hands out cluster times: Timestamp{seconds, counter},
// each later than the one before. Replies carry one as operationTime, the
// time a causally consistent session's next read (readConcern
// afterClusterTime) and next transaction must see; snapshots are named by
// one.
type clusterClock struct{ last atomic.Uint64 }

func (c *clusterClock) next(now time.Time) bson.Timestamp {
	for {
		last := c.last.Load()
		t := uint64(now.Unix()) << 32
		if t <= last {
			t = last + 1
		}
		if c.last.CompareAndSwap(last, t) {
			return bson.Timestamp{T: uint32(t >> 32), I: uint32(t)}
		}
	}
}

func tsKey(ts bson.Timestamp) uint64 { return uint64(ts.T)<<32 | uint64(ts.I) }

// acquire returns the snapshot named at (taking a new one, and naming it,
// when at is nil) and its cluster time.
func (e *Engine) acquireSnapshot(at *bson.Timestamp) (storage.Snapshot, bson.Timestamp, error) {
	r := &e.snapshots
	r.mu.Lock()
	defer r.mu.Unlock()
	now := e.now()
	if r.byTS == nil {
		r.byTS = map[uint64]*heldSnapshot{}
	}
	if at != nil {
		h := r.byTS[tsKey(*at)]
		if h == nil {
			if at.After(r.last) {
				return nil, bson.Timestamp{}, errorf(ErrSnapshotUnavailable, "Read concern atClusterTime (%d, %d) is later than the latest snapshot Parsec took (%d, %d)", at.T, at.I, r.last.T, r.last.I)
			}
			return nil, bson.Timestamp{}, errorf(ErrSnapshotTooOld, "Read timestamp Timestamp(%d, %d) is not available: Parsec keeps a snapshot for %v after its last use, and only at the cluster times its snapshot reads returned", at.T, at.I, snapshotWindow)
		}
		h.lastUsed = now
		return h.snap, *at, nil
	}
	if len(r.byTS) >= maxSnapshots {
		return nil, bson.Timestamp{}, errorf(ErrSnapshotUnavailable, "Parsec holds %d snapshots, its most; they are released %v after their last read", maxSnapshots, snapshotWindow)
	}
	sn, err := e.store.Snapshot()
	if err != nil {
		return nil, bson.Timestamp{}, err
	}
	ts := e.clock.next(now)
	r.last = ts
	r.byTS[tsKey(ts)] = &heldSnapshot{snap: sn, lastUsed: now}
	return sn, ts, nil
}

// touchSnapshot keeps the snapshot a cursor reads from expiring while the
// cursor is used.
func (e *Engine) touchSnapshot(sn storage.Snapshot) {
	r := &e.snapshots
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.byTS {
		if h.snap == sn {
			h.lastUsed = e.now()
		}
	}
}

// expireSnapshots closes the snapshots unused for snapshotWindow, or all
// of them when all.
func (e *Engine) expireSnapshots(all bool) {
	r := &e.snapshots
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := e.now().Add(-snapshotWindow)
	for k, h := range r.byTS {
		if all || h.lastUsed.Before(cutoff) {
			h.snap.Close()
			delete(r.byTS, k)
		}
	}
}

// snapshotRead takes the snapshot a snapshot read concern (rc, from
// checkReadConcern; nil: the command reads the latest data) names, or a
// new one, and returns it in the context with its cluster time.
func (e *Engine) snapshotRead(ctx context.Context, cmd string, rc bsoncore.Document) (context.Context, *bson.Timestamp, *CommandError) {
	if rc == nil {
		return ctx, nil, nil
	}
	var at *bson.Timestamp
	if v, err := rc.LookupErr("atClusterTime"); err == nil {
		t, i, ok := v.TimestampOK()
		if !ok {
			return ctx, nil, wrongType(cmd, "readConcern.atClusterTime", v, "timestamp")
		}
		at = &bson.Timestamp{T: t, I: i}
	}
	sn, ts, err := e.acquireSnapshot(at)
	if err != nil {
		return ctx, nil, toCommandError(err)
	}
	return withSnapshot(ctx, sn), &ts, nil
}

// withAtClusterTime adds atClusterTime to a snapshot read's reply: in its
// cursor document (find, aggregate), else at the top (distinct).
func withAtClusterTime(reply []byte, ts bson.Timestamp) []byte {
	doc := bsoncore.Document(reply)
	if ok, err := doc.LookupErr("ok"); err != nil || ok.AsFloat64() != 1 {
		return reply
	}
	elems, err := doc.Elements()
	if err != nil {
		return reply
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	inCursor := false
	for _, el := range elems {
		if cur, ok := el.Value().DocumentOK(); ok && el.Key() == "cursor" {
			cidx, cb := bsoncore.AppendDocumentStart(nil)
			cels, _ := cur.Elements()
			for _, ce := range cels {
				cb = append(cb, ce...)
			}
			cb = bsoncore.AppendTimestampElement(cb, "atClusterTime", ts.T, ts.I)
			cb, _ = bsoncore.AppendDocumentEnd(cb, cidx)
			b = bsoncore.AppendDocumentElement(b, "cursor", cb)
			inCursor = true
			continue
		}
		b = append(b, el...)
	}
	if !inCursor {
		b = bsoncore.AppendTimestampElement(b, "atClusterTime", ts.T, ts.I)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}
