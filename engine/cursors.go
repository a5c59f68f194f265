package engine

import (
	"context"
	"errors"
	"time"

	"github.com/parsecdb/parsec/engine/sessions"
	"github.com/parsecdb/parsec/engine/storage"
)

// batchSource produces a cursor's documents batch by batch.
type batchSource interface {
	// nextBatch returns up to max documents (no count limit when max <= 0)
	// whose sizes add up to at most maxBytes (at least one document is
	// always returned when any remain), and whether the source is done.
	nextBatch(ctx context.Context, max, maxBytes int) (docs [][]byte, done bool, err error)
}

// sourceCloser is a batch source that holds resources (an aggregation's
// partition workers and spill files) to release when its cursor goes
// away, however it goes.
type sourceCloser interface{ close() }

// cursor is an open server-side cursor (engine/sessions keeps them).
type cursor = sessions.Cursor[*cursorSource]

// cursorSource is what a cursor's getMores read: its documents, and the
// bill each batch is charged on (nil: not charged).
type cursorSource struct {
	src  batchSource
	bill *readBill
}

// Close releases what the source holds, when its cursor goes.
func (s *cursorSource) Close() {
	if sc, ok := s.src.(sourceCloser); ok {
		sc.close()
	}
}

// cursorOptions are a cursor's settings from the command that opened it.
type cursorOptions struct {
	budget    time.Duration
	noTimeout bool
	bill      *readBill
	owner     string
	snap      storage.Snapshot
	txn       storage.Transaction
}

// cursorRegistry is the open cursors (engine/sessions.Cursors), opened
// and checked out with the engine's sources and errors.
type cursorRegistry struct {
	*sessions.Cursors[*cursorSource]
}

func newCursorRegistry(now func() time.Time, timeout time.Duration) *cursorRegistry {
	return &cursorRegistry{sessions.NewCursors[*cursorSource](now, timeout)}
}

// open registers a cursor and returns its id.
func (r *cursorRegistry) open(ns string, connID int64, session string, src batchSource, opts cursorOptions) int64 {
	return r.Open(ns, connID, session, &cursorSource{src: src, bill: opts.bill}, sessions.CursorOptions{
		Budget: opts.budget, NoTimeout: opts.noTimeout, Owner: opts.owner, Snapshot: opts.snap, Txn: opts.txn})
}

// checkout takes the cursor for one getMore by owner; release must
// follow. A cursor another request holds is CursorInUse.
func (r *cursorRegistry) checkout(id int64, ns, owner string) (*cursor, error) {
	c, err := r.Checkout(id, ns, owner)
	var ce *sessions.CursorError
	if !errors.As(err, &ce) {
		return c, err
	}
	switch ce.Refusal {
	case sessions.CursorOtherNamespace:
		return nil, errorf(ErrUnauthorized, "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s", ns, ce.OwnNS)
	case sessions.CursorOtherOwner:
		return nil, errorf(ErrUnauthorized, "cursor id %d was not created by the authenticated user", id)
	case sessions.CursorInUse:
		return nil, errorf(ErrCursorInUse, "Cursor already in use (namespace: '%s', id: %d).", ns, id)
	}
	return nil, errorf(ErrCursorNotFound, "cursor id %d not found", id)
}
