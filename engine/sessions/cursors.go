package sessions

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
)

// Source is what a cursor reads its documents from, as the command layer
// keeps it; Close releases what it holds (an aggregation's partition
// workers, spill files) when the cursor goes, however it goes.
type Source interface{ Close() }

// Cursor is an open server-side cursor reading from an S.
type Cursor[S Source] struct {
	ID      int64
	NS      string
	ConnID  int64
	Session string // lsid key; "" when opened outside a session
	Source  S
	Options CursorOptions

	lastUsed time.Time
	inUse    bool
}

// CursorOptions are a cursor's settings from the command that opened it.
type CursorOptions struct {
	// Budget is what is left of the find's maxTimeMS, which MongoDB
	// applies to the cursor's operations together (0: no limit).
	Budget time.Duration
	// NoTimeout (noCursorTimeout): never reaped for idleness.
	NoTimeout bool
	// Owner is the authenticated user that opened it, with access control
	// on ("" otherwise): only that user may use or kill it.
	Owner string
	// Snapshot is the snapshot a snapshot read's cursor reads (nil: the
	// latest data).
	Snapshot storage.Snapshot
	// Txn is the transaction the cursor was opened in: only its
	// statements may use it.
	Txn storage.Transaction
}

// Cursors holds open cursors. Ids are random, positive and unique among
// open cursors.
type Cursors[S Source] struct {
	now     func() time.Time
	timeout time.Duration

	mu      sync.Mutex
	cursors map[int64]*Cursor[S]
}

// NewCursors makes an empty registry whose cursors are reaped once idle
// for timeout by now's clock.
func NewCursors[S Source](now func() time.Time, timeout time.Duration) *Cursors[S] {
	return &Cursors[S]{now: now, timeout: timeout, cursors: map[int64]*Cursor[S]{}}
}

// Has reports whether a cursor with id is open.
func (r *Cursors[S]) Has(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cursors[id] != nil
}

// Timeout is how long a cursor may stay idle.
func (r *Cursors[S]) Timeout() time.Duration { return r.timeout }

// Open registers a cursor and returns its id.
func (r *Cursors[S]) Open(ns string, connID int64, session string, src S, opts CursorOptions) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		id := rand.Int64N(1<<62) + 1
		if _, taken := r.cursors[id]; taken {
			continue
		}
		r.cursors[id] = &Cursor[S]{ID: id, NS: ns, ConnID: connID, Session: session, Source: src, Options: opts, lastUsed: r.now()}
		return id
	}
}

// Checkout takes the cursor for one request by owner on namespace ns;
// Release must follow. It fails with a *CursorError.
func (r *Cursors[S]) Checkout(id int64, ns, owner string) (*Cursor[S], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cursors[id]
	switch {
	case c == nil:
		return nil, &CursorError{Refusal: CursorNotFound, ID: id, NS: ns}
	case c.NS != ns:
		return nil, &CursorError{Refusal: CursorOtherNamespace, ID: id, NS: ns, OwnNS: c.NS}
	case c.Options.Owner != owner:
		return nil, &CursorError{Refusal: CursorOtherOwner, ID: id, NS: ns}
	case c.inUse:
		return nil, &CursorError{Refusal: CursorInUse, ID: id, NS: ns}
	}
	c.inUse = true
	return c, nil
}

// Release returns a checked-out cursor, or removes it when done.
func (r *Cursors[S]) Release(c *Cursor[S], done bool) {
	r.mu.Lock()
	c.inUse = false
	c.lastUsed = r.now()
	// A cursor killed while this request held it is gone from the map:
	// it is closed now that the request is done with it.
	gone := r.cursors[c.ID] != c
	if done {
		delete(r.cursors, c.ID)
	}
	r.mu.Unlock()
	if done || gone {
		c.Source.Close()
	}
}

// Kill removes the cursor and reports whether it existed (for owner, on
// namespace ns).
func (r *Cursors[S]) Kill(id int64, ns, owner string) bool {
	r.mu.Lock()
	c := r.cursors[id]
	if c == nil || c.NS != ns || c.Options.Owner != owner {
		r.mu.Unlock()
		return false
	}
	delete(r.cursors, id)
	r.mu.Unlock()
	if !c.inUse {
		c.Source.Close()
	}
	return true
}

func (r *Cursors[S]) removeIf(pred func(*Cursor[S]) bool) int {
	r.mu.Lock()
	n := 0
	var removed []*Cursor[S]
	for id, c := range r.cursors {
		if pred(c) {
			delete(r.cursors, id)
			n++
			if !c.inUse { // a request running on it closes it when done
				removed = append(removed, c)
			}
		}
	}
	r.mu.Unlock()
	for _, c := range removed {
		c.Source.Close()
	}
	return n
}

// CloseForConn closes the cursors a connection opened outside sessions.
func (r *Cursors[S]) CloseForConn(connID int64) {
	r.removeIf(func(c *Cursor[S]) bool { return c.ConnID == connID && c.Session == "" })
}

// CloseForSession closes the cursors of a session (by lsid key).
func (r *Cursors[S]) CloseForSession(session string) {
	r.removeIf(func(c *Cursor[S]) bool { return c.Session == session })
}

// CloseAllSessions closes the cursors opened in sessions.
func (r *Cursors[S]) CloseAllSessions() {
	r.removeIf(func(c *Cursor[S]) bool { return c.Session != "" })
}

// CloseAll closes every cursor.
func (r *Cursors[S]) CloseAll() { r.removeIf(func(*Cursor[S]) bool { return true }) }

// ReapIdle closes cursors unused for longer than the timeout and returns
// how many.
func (r *Cursors[S]) ReapIdle() int {
	deadline := r.now().Add(-r.timeout)
	return r.removeIf(func(c *Cursor[S]) bool { return !c.inUse && !c.Options.NoTimeout && c.lastUsed.Before(deadline) })
}

// Count is the number of open cursors.
func (r *Cursors[S]) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cursors)
}

// CloseForNamespace closes the cursors over a dropped collection.
func (r *Cursors[S]) CloseForNamespace(ns string) {
	r.removeIf(func(c *Cursor[S]) bool { return c.NS == ns })
}
