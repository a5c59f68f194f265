package sessions

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
)

// Multi-document transactions' state. A Transaction is one
// storage.Transaction held across the commands of a session's
// transaction; the engine checks which commands may run in one and what
// their replies say.

// State is where a transaction stands.
type State int

const (
	// Active: in progress.
	Active State = iota
	// Committed: committed; it stays so.
	Committed
	// Aborted: aborted, by abortTransaction, a failed statement, its
	// lifetime, a newer transaction of its session or a failed commit.
	Aborted
)

// Transaction is a session's transaction.
type Transaction struct {
	number int64
	st     storage.Transaction
	store  Store
	logger *slog.Logger // for what an abort cannot report to anyone
	// open counts the table's transactions in progress: t adds 1 when
	// it starts and takes it back when it leaves Active.
	open *atomic.Int64
	// active is the table's set of transactions in progress
	// (Table.AbortWriters): t is in it while Active.
	active *sync.Map

	ran bool // a statement has run (not only failed by a fail point)

	mu      sync.Mutex
	state   State
	why     string              // why it was aborted, when not by abortTransaction
	stop    func() bool         // stops the lifetime timer
	created []*store.Collection // pending collections it created
}

// StartTransaction starts transaction n on the session, held, for
// startTransaction: it aborts the session's transaction in progress, and
// the new one aborts itself once open for lifetime. A txnNumber lower
// than the session's is a *TooOldError; one already used is
// ErrTransactionStarted, unless it is that of a transaction whose first
// statement never ran (a driver's retry of it), which starts afresh.
func (s *Session) StartTransaction(n int64, lifetime time.Duration, now time.Time) (*Transaction, error) {
	if err := s.enter(n, now); err != nil {
		return nil, err
	}
	if t := s.txn; n == s.txnNumber && t != nil && t.number == n && !t.ran {
		// The first statement again, its first attempt refused before
		// it ran (a driver's retry): start afresh.
		t.Abort("its first statement was sent again")
	} else if n == s.txnNumber {
		return nil, ErrTransactionStarted
	}
	s.EndTransaction()
	st, err := s.t.store.Begin()
	if err != nil {
		return nil, err
	}
	t := &Transaction{number: n, st: st, store: s.t.store, logger: s.t.logger, open: &s.t.openTxns, active: &s.t.active}
	t.open.Add(1)
	t.active.Store(t, struct{}{})
	t.mu.Lock() // Abort, from the timer, reads stop under mu
	t.stop = s.t.after(lifetime, func() {
		t.Abort(fmt.Sprintf("it ran longer than transactionLifetimeLimitSeconds (%v)", lifetime))
	})
	t.mu.Unlock()
	s.txnNumber, s.txn = n, t
	return t, nil
}

// Transaction is the session's transaction n, held, for a statement that
// continues it: a *TooOldError when the session has a newer one, a
// *NotInProgressError when n is not the session's transaction. The
// transaction may have ended (CheckActive).
func (s *Session) Transaction(n int64, now time.Time) (*Transaction, error) {
	if err := s.enter(n, now); err != nil {
		return nil, err
	}
	t := s.txn
	if n > s.txnNumber || t == nil || t.number != n {
		return nil, &NotInProgressError{}
	}
	return t, nil
}

// enter notes the session's use by a statement of transaction n.
func (s *Session) enter(n int64, now time.Time) error {
	s.Touch(now)
	if err := s.load(); err != nil {
		return err
	}
	if n < s.txnNumber {
		return &TooOldError{Number: n, Newer: s.txnNumber}
	}
	return nil
}

// EndTransaction aborts the session's transaction, held, if one is in
// progress.
func (s *Session) EndTransaction() {
	if s.txn != nil {
		s.txn.Abort("a newer transaction or retryable write started on its session")
	}
}

// Number is the transaction's txnNumber.
func (t *Transaction) Number() int64 { return t.number }

// Storage is the storage transaction the transaction's statements read
// and write in.
func (t *Transaction) Storage() storage.Transaction { return t.st }

// StatementRan notes that a statement of t ran (so a startTransaction
// sent again is refused).
func (t *Transaction) StatementRan() { t.ran = true }

// State is where t stands and, when aborted, why.
func (t *Transaction) State() (State, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state, t.why
}

// CheckActive is nil while t is in progress, else ErrCommitted or a
// *NotInProgressError saying why it was aborted.
func (t *Transaction) CheckActive() error {
	switch state, why := t.State(); state {
	case Committed:
		return ErrCommitted
	case Aborted:
		return &NotInProgressError{Why: why}
	}
	return nil
}

// Abort aborts t if it is in progress; why says why, for the statements
// that come after (empty for abortTransaction).
func (t *Transaction) Abort(why string) { t.abort(why) }

// abort is Abort, reporting whether it ended t (false: t had ended).
func (t *Transaction) abort(why string) bool {
	t.mu.Lock()
	if t.state != Active {
		t.mu.Unlock()
		return false
	}
	t.state, t.why = Aborted, why
	t.open.Add(-1)
	t.active.Delete(t)
	t.stop()
	created := t.created
	t.created = nil
	t.mu.Unlock()
	t.st.Abort()
	t.withdraw(created)
	return true
}

// withdraw takes back the collections an aborted t created.
func (t *Transaction) withdraw(created []*store.Collection) {
	for _, c := range created {
		if err := t.store.Withdraw(c.DB, c.Name, c.ID); err != nil {
			// The collection stays, empty and published: a leftover the
			// user can drop, not a loss.
			t.logger.Warn("taking back a collection an aborted transaction created", "collection", c.Namespace(), "err", err)
		}
	}
}

// Create records c, which t created, as pending until t ends.
func (t *Transaction) Create(c *store.Collection) error {
	t.mu.Lock()
	t.created = append(t.created, c)
	t.mu.Unlock()
	return t.store.MarkPending(c.ID)
}

// Creates reports whether collection id is one t created.
func (t *Transaction) Creates(id uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.created {
		if c.ID == id {
			return true
		}
	}
	return false
}

// Commit commits t, in progress; it is aborted when that fails.
func (t *Transaction) Commit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != Active {
		return errors.New("transaction is not in progress")
	}
	t.stop()
	t.open.Add(-1) // committed or aborted below
	t.active.Delete(t)
	var err error
	for _, c := range t.created {
		// The pending key goes with the commit: a crash leaves either the
		// committed collection or the key that withdraws it.
		if err = t.st.Publish(c.ID); err != nil {
			break
		}
	}
	if err == nil {
		err = t.st.Commit()
	} else {
		t.st.Abort()
	}
	if err != nil {
		t.state, t.why = Aborted, "its commit failed"
		t.withdraw(t.created)
		t.created = nil
		return err
	}
	t.state = Committed
	for _, c := range t.created {
		t.store.Published(c.ID)
	}
	t.created = nil
	return nil
}
