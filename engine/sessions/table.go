package sessions

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
)

// SessionTimeout is logicalSessionTimeoutMinutes, as hello reports it: a
// session unused this long is forgotten.
const SessionTimeout = 30 * time.Minute

// Store is what sessions ask of storage: the sessions' records, and for
// transactions a storage transaction and the pending state of the
// collections they create. storage.Storage implements it.
type Store interface {
	storage.SessionRecords
	Begin() (storage.Transaction, error)
	MarkPending(id uint32) error
	Published(id uint32)
	Withdraw(db, name string, id uint32) error
}

// AfterFunc calls f once d has passed, on a goroutine of its own, until
// stop is called (time.AfterFunc's contract). Transactions' lifetimes
// run on it.
type AfterFunc func(d time.Duration, f func()) (stop func() bool)

// Table is the logical sessions that ran retryable writes or
// transactions, by session id.
type Table struct {
	store  Store
	logger *slog.Logger // for what no command can report
	after  AfterFunc

	mu sync.Mutex
	m  map[string]*Session
	// openTxns is the number of transactions in progress; active holds
	// them (*Transaction -> struct{}).
	openTxns atomic.Int64
	active   sync.Map
}

// NewTable makes an empty table over store. after starts transactions'
// lifetime timers (nil: time.AfterFunc).
func NewTable(st Store, logger *slog.Logger, after AfterFunc) *Table {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if after == nil {
		after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &Table{store: st, logger: logger, after: after, m: map[string]*Session{}}
}

// Session is one logical session. Its fields other than lastUse belong
// to whoever holds the checkout (invariant 1).
type Session struct {
	t       *Table
	id      []byte
	slot    chan struct{} // holds a token while a command runs in the session
	lastUse atomic.Int64  // Unix nanoseconds of the last use
	gone    bool          // removed from the table: look the session up again
	loaded  bool          // txnNumber and span were read from the store
	// txnNumber is the highest transaction number seen (-1: none); span
	// is one past the highest statement id recorded since the store's
	// records were last deleted (store.SessionHead.Span).
	txnNumber int64
	span      int32
	// txn is the session's multi-statement transaction with number
	// txnNumber, in progress or ended (nil: none).
	txn *Transaction
}

func (t *Table) entry(lsid []byte) *Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[string(lsid)]
	if s == nil {
		s = &Session{t: t, id: append([]byte(nil), lsid...), slot: make(chan struct{}, 1), txnNumber: -1}
		t.m[string(lsid)] = s
	}
	return s
}

// Checkout waits until no other command runs in session lsid and returns
// it, held; Release gives it back. It fails only when ctx ends first.
func (t *Table) Checkout(ctx context.Context, lsid []byte) (*Session, error) {
	for {
		s := t.entry(lsid)
		select {
		case s.slot <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !s.gone {
			return s, nil
		}
		<-s.slot
	}
}

// TryCheckout is Checkout that gives up when a command runs in the
// session.
func (t *Table) TryCheckout(lsid []byte) (*Session, bool) {
	s := t.entry(lsid)
	select {
	case s.slot <- struct{}{}:
	default:
		return nil, false
	}
	if s.gone {
		<-s.slot
		return nil, false
	}
	return s, true
}

// Release gives the session back; now is its last use.
func (s *Session) Release(now time.Time) {
	s.Touch(now)
	<-s.slot
}

// Touch notes a use of the session at now.
func (s *Session) Touch(now time.Time) { s.lastUse.Store(now.UnixNano()) }

// ID is the session's id (lsid.id's 16 bytes).
func (s *Session) ID() []byte { return s.id }

// Remove drops s, held by the caller, from the table and releases it.
func (t *Table) Remove(s *Session) {
	s.gone = true
	t.mu.Lock()
	if t.m[string(s.id)] == s {
		delete(t.m, string(s.id))
	}
	t.mu.Unlock()
	<-s.slot
}

// Idle lists the sessions last used before cutoff.
func (t *Table) Idle(cutoff time.Time) [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out [][]byte
	for k, s := range t.m {
		if s.lastUse.Load() < cutoff.UnixNano() {
			out = append(out, []byte(k))
		}
	}
	return out
}

// UsedSince reports whether session lsid was used at or after since.
func (t *Table) UsedSince(lsid []byte, since time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[string(lsid)]
	return s != nil && s.lastUse.Load() >= since.UnixNano()
}

// Len is the number of sessions the table holds.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// OpenTransactions is the number of transactions in progress.
func (t *Table) OpenTransactions() int64 { return t.openTxns.Load() }

// AbortWriters aborts the transactions in progress that wrote to
// collection id, each saying why to the statements that come after
// (251 NoSuchTransaction); it returns how many it aborted. A statement
// in progress in one ends first.
func (t *Table) AbortWriters(id uint32, why string) int {
	n := 0
	t.active.Range(func(k, _ any) bool {
		if tx := k.(*Transaction); tx.st.Writes(id) {
			if tx.abort(why) {
				n++
			}
		}
		return true
	})
	return n
}

// load reads the session's txnNumber and statement span from the store
// the first time the session is checked out (invariant 2).
func (s *Session) load() error {
	if s.loaded {
		return nil
	}
	h, ok, err := s.t.store.SessionHead(s.id)
	if err != nil {
		return err
	}
	if ok {
		s.txnNumber, s.span = h.TxnNumber, h.Span
	}
	s.loaded = true
	return nil
}

// Forget drops session lsid from memory and the store, unless a command
// runs in it or, when idleBefore is set, it was used since. Its
// transaction in progress, if any, is aborted.
func (t *Table) Forget(lsid []byte, idleBefore time.Time) {
	s, ok := t.TryCheckout(lsid)
	if !ok {
		return
	}
	if !idleBefore.IsZero() && s.lastUse.Load() >= idleBefore.UnixNano() {
		<-s.slot
		return
	}
	s.EndTransaction()
	if err := t.store.DeleteSession(lsid); err != nil && !errors.Is(err, store.ErrClosed) {
		t.logger.Warn("forgetting a session", "lsid", IDString(lsid), "err", err)
	}
	t.Remove(s)
}

// ForgetAll forgets every session (killAllSessions): those in memory and
// those only the store knows. A session running a command is left to
// finish it.
func (t *Table) ForgetAll(now time.Time) {
	future := now.Add(time.Hour) // every session was idle before then
	for _, lsid := range t.Idle(future) {
		t.Forget(lsid, time.Time{})
	}
	stored, err := t.store.IdleSessions(future)
	if err != nil {
		return
	}
	for _, lsid := range stored {
		t.Forget(lsid, time.Time{})
	}
}

// Expire forgets the sessions idle for SessionTimeout at now: those in
// memory, and those only the store knows (from before a restart).
func (t *Table) Expire(now time.Time) {
	cutoff := now.Add(-SessionTimeout)
	for _, lsid := range t.Idle(cutoff) {
		t.Forget(lsid, cutoff)
	}
	stored, err := t.store.IdleSessions(cutoff)
	if err != nil {
		if !errors.Is(err, store.ErrClosed) {
			t.logger.Warn("listing idle sessions", "err", err)
		}
		return
	}
	for _, lsid := range stored {
		if !t.UsedSince(lsid, cutoff) {
			t.Forget(lsid, cutoff)
		}
	}
}

// noAuthUID is what MongoDB shows as a session's uid without
// authentication: the SHA-256 of the empty user name, base64.
var noAuthUID = base64.StdEncoding.EncodeToString([]byte{
	0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
	0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
})

// IDString renders a session id as MongoDB's messages do: the UUID and
// the user's uid.
func IDString(lsid []byte) string {
	h := hex.EncodeToString(lsid)
	if len(h) != 32 {
		return h
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + " - " + noAuthUID
}
