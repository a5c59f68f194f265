package sessions

import (
	"errors"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// timers is an AfterFunc on clock: fire runs the timers due.
type timers struct {
	c       *clock
	mu      sync.Mutex
	pending []*timer
}

type timer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (ts *timers) after(d time.Duration, f func()) func() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := &timer{at: ts.c.now().Add(d), f: f}
	ts.pending = append(ts.pending, t)
	return func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// fire runs the timers due at the clock's time, and reports how many
// were stopped before they were due.
func (ts *timers) fire() {
	ts.mu.Lock()
	var due []*timer
	var left []*timer
	for _, t := range ts.pending {
		switch {
		case t.stopped:
		case !t.at.After(ts.c.now()):
			due = append(due, t)
			t.stopped = true
		default:
			left = append(left, t)
		}
	}
	ts.pending = left
	ts.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// records is an in-memory Store: sessions' heads and statements, and
// transactions that note how they ended.
type records struct {
	mu       sync.Mutex
	heads    map[string]store.SessionHead
	stmts    map[string]map[int32]record
	resets   int
	pending  map[uint32]bool
	withdraw []uint32
	txns     []*txn
	failNext error // the next Begin's error
}

type record struct {
	txn     int64
	outcome []byte
}

func newRecords() *records {
	return &records{heads: map[string]store.SessionHead{}, stmts: map[string]map[int32]record{}, pending: map[uint32]bool{}}
}

func (r *records) SessionHead(lsid []byte) (store.SessionHead, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.heads[string(lsid)]
	return h, ok, nil
}

func (r *records) SessionStatements(lsid []byte, txnNumber int64) (map[int32][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int32][]byte{}
	for id, rec := range r.stmts[string(lsid)] {
		if rec.txn == txnNumber {
			out[id] = rec.outcome
		}
	}
	return out, nil
}

func (r *records) ResetSession(lsid []byte, head store.SessionHead) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resets++
	delete(r.stmts, string(lsid))
	r.heads[string(lsid)] = head
	return nil
}

func (r *records) DeleteSession(lsid []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.stmts, string(lsid))
	delete(r.heads, string(lsid))
	return nil
}

func (r *records) IdleSessions(before time.Time) ([][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]byte
	for k, h := range r.heads {
		if h.LastUse.Before(before) {
			out = append(out, []byte(k))
		}
	}
	return out, nil
}

func (r *records) put(lsid []byte, head store.SessionHead, stmts []store.SessionStatement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.stmts[string(lsid)]
	if m == nil {
		m = map[int32]record{}
		r.stmts[string(lsid)] = m
	}
	for _, st := range stmts {
		m[st.ID] = record{head.TxnNumber, st.Outcome}
	}
	r.heads[string(lsid)] = head
}

func (r *records) Begin() (storage.Transaction, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.failNext; err != nil {
		r.failNext = nil
		return nil, err
	}
	t := &txn{r: r}
	r.txns = append(r.txns, t)
	return t, nil
}

func (r *records) MarkPending(id uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[id] = true
	return nil
}

func (r *records) Published(id uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, id)
}

func (r *records) Withdraw(db, name string, id uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, id)
	r.withdraw = append(r.withdraw, id)
	return nil
}

// txn is a storage.Transaction that notes whether it committed or
// aborted (its other methods are not used here).
type txn struct {
	storage.Transaction
	r                  *records
	committed, aborted int
	published          []uint32
	failCommit         bool
	wrote              map[uint32]bool // collections it wrote to
}

func (t *txn) Writes(id uint32) bool { return t.wrote[id] }

func (t *txn) Publish(id uint32) error {
	t.published = append(t.published, id)
	return nil
}

func (t *txn) Commit() error {
	if t.failCommit {
		return errors.New("commit failed")
	}
	t.committed++
	return nil
}

func (t *txn) Abort() { t.aborted++ }

// writes is a storage.Txn that records sessions' statements in records
// (what an Update that commits does).
type writes struct {
	storage.Txn
	r *records
}

func (w writes) PutSessionStatements(lsid []byte, head store.SessionHead, stmts []store.SessionStatement) error {
	w.r.put(lsid, head, stmts)
	return nil
}
