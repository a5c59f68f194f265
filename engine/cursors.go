package engine

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

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

func closeSources(cs []*cursor) {
	for _, c := range cs {
		if sc, ok := c.source.(sourceCloser); ok {
			sc.close()
		}
	}
}

// cursor is an open server-side cursor.
type cursor struct {
	id      int64
	ns      string
	connID  int64
	session string // lsid key; "" when opened outside a session
	source  batchSource
	// budget is what is left of the find's maxTimeMS, which MongoDB
	// applies to the cursor's operations together (0: no limit).
	budget    time.Duration
	noTimeout bool      // noCursorTimeout: never reaped for idleness
	bill      *readBill // request units: each getMore pays for its batch (nil: not charged)

	lastUsed time.Time
	inUse    bool
	// snap is the snapshot a snapshot read's cursor reads (nil: the
	// latest data).
	snap storage.Snapshot
	// txn is the transaction the cursor was opened in: only its
	// statements may use it.
	txn storage.Transaction
	// owner is the authenticated user that opened it, with access control
	// on ("" otherwise): only that user may use or kill it.
	owner string
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

// cursorRegistry holds open cursors. Ids are random, positive and unique
// among open cursors.
type cursorRegistry struct {
	now     func() time.Time
	timeout time.Duration

	mu      sync.Mutex
	cursors map[int64]*cursor
}

func newCursorRegistry(now func() time.Time, timeout time.Duration) *cursorRegistry {
	return &cursorRegistry{now: now, timeout: timeout, cursors: map[int64]*cursor{}}
}

// open registers a cursor and returns its id.
func (r *cursorRegistry) open(ns string, connID int64, session string, src batchSource, opts cursorOptions) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		id := rand.Int64N(1<<62) + 1
		if _, taken := r.cursors[id]; taken {
			continue
		}
		r.cursors[id] = &cursor{id: id, ns: ns, connID: connID, session: session, source: src, lastUsed: r.now(),
			budget: opts.budget, noTimeout: opts.noTimeout, bill: opts.bill, owner: opts.owner, snap: opts.snap, txn: opts.txn}
		return id
	}
}

// checkout takes the cursor for one getMore by owner; release must
// follow. A cursor another request holds is CursorInUse.
func (r *cursorRegistry) checkout(id int64, ns, owner string) (*cursor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cursors[id]
	if c == nil {
		return nil, errorf(ErrCursorNotFound, "cursor id %d not found", id)
	}
	if c.ns != ns {
		return nil, errorf(ErrUnauthorized, "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s", ns, c.ns)
	}
	if c.owner != owner {
		return nil, errorf(ErrUnauthorized, "cursor id %d was not created by the authenticated user", id)
	}
	if c.inUse {
		return nil, errorf(ErrCursorInUse, "Cursor already in use (namespace: '%s', id: %d).", ns, id)
	}
	c.inUse = true
	return c, nil
}

// release returns a checked-out cursor, or removes it when done.
func (r *cursorRegistry) release(c *cursor, done bool) {
	r.mu.Lock()
	c.inUse = false
	c.lastUsed = r.now()
	// A cursor killed while this request held it is gone from the map:
	// it is closed now that the request is done with it.
	gone := r.cursors[c.id] != c
	if done {
		delete(r.cursors, c.id)
	}
	r.mu.Unlock()
	if done || gone {
		closeSources([]*cursor{c})
	}
}

// kill removes the cursor and reports whether it existed.
func (r *cursorRegistry) kill(id int64, ns, owner string) bool {
	r.mu.Lock()
	c := r.cursors[id]
	if c == nil || c.ns != ns || c.owner != owner {
		r.mu.Unlock()
		return false
	}
	delete(r.cursors, id)
	r.mu.Unlock()
	if !c.inUse {
		closeSources([]*cursor{c})
	}
	return true
}

func (r *cursorRegistry) removeIf(pred func(*cursor) bool) int {
	r.mu.Lock()
	n := 0
	var removed []*cursor
	for id, c := range r.cursors {
		if pred(c) {
			delete(r.cursors, id)
			n++
			if !c.inUse { // a getMore running on it closes it when done
				removed = append(removed, c)
			}
		}
	}
	r.mu.Unlock()
	closeSources(removed)
	return n
}

// closeForConn closes the cursors a connection opened outside sessions.
func (r *cursorRegistry) closeForConn(connID int64) {
	r.removeIf(func(c *cursor) bool { return c.connID == connID && c.session == "" })
}

func (r *cursorRegistry) closeForSession(session string) {
	r.removeIf(func(c *cursor) bool { return c.session == session })
}

func (r *cursorRegistry) closeAllSessions() {
	r.removeIf(func(c *cursor) bool { return c.session != "" })
}

func (r *cursorRegistry) closeAll() { r.removeIf(func(*cursor) bool { return true }) }

// reapIdle closes cursors unused for longer than the timeout.
func (r *cursorRegistry) reapIdle() int {
	deadline := r.now().Add(-r.timeout)
	return r.removeIf(func(c *cursor) bool { return !c.inUse && !c.noTimeout && c.lastUsed.Before(deadline) })
}

func (r *cursorRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cursors)
}

// closeForNamespace closes the cursors over a dropped collection.
func (r *cursorRegistry) closeForNamespace(ns string) {
	r.removeIf(func(c *cursor) bool { return c.ns == ns })
}
