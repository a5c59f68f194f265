package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/sessions"
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
// sessions.SnapshotWindow after (MongoDB's
// minSnapshotHistoryWindowInSeconds); a read at a time no longer held
// gets 239 SnapshotTooOld. The snapshots are held in engine/sessions
// (Snapshots).

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

// acquireSnapshot returns the snapshot named at (taking a new one, and
// naming it, when at is nil) and its cluster time.
func (e *Engine) acquireSnapshot(at *bson.Timestamp) (storage.Snapshot, bson.Timestamp, error) {
	sn, ts, err := e.snapshots.Acquire(at)
	var unavailable *sessions.SnapshotUnavailableError
	var tooOld *sessions.SnapshotTooOldError
	switch {
	case errors.As(err, &unavailable):
		latest := unavailable.Latest
		return nil, ts, errorf(ErrSnapshotUnavailable, "Read concern atClusterTime (%d, %d) is later than the latest snapshot Parsec took (%d, %d)", at.T, at.I, latest.T, latest.I)
	case errors.As(err, &tooOld):
		return nil, ts, errorf(ErrSnapshotTooOld, "Read timestamp Timestamp(%d, %d) is not available: Parsec keeps a snapshot for %v after its last use, and only at the cluster times its snapshot reads returned", at.T, at.I, sessions.SnapshotWindow)
	case errors.Is(err, sessions.ErrTooManySnapshots):
		return nil, ts, errorf(ErrSnapshotUnavailable, "Parsec holds %d snapshots, its most; they are released %v after their last read", sessions.MaxSnapshots, sessions.SnapshotWindow)
	}
	return sn, ts, err
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
