package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/store"
)

func newTxnTable(t *testing.T) (*Table, *records, *clock, *timers) {
	t.Helper()
	c := newClock()
	recs := newRecords()
	ts := &timers{c: c}
	return NewTable(recs, nil, ts.after), recs, c, ts
}

func TestTransactionStates(t *testing.T) {
	tab, recs, c, _ := newTxnTable(t)
	s, _ := tab.Checkout(context.Background(), lsid)
	tx, err := s.StartTransaction(1, time.Minute, c.now())
	if err != nil {
		t.Fatal(err)
	}
	if tab.OpenTransactions() != 1 || tx.CheckActive() != nil || tx.Number() != 1 {
		t.Fatal("a started transaction is not in progress")
	}
	coll := &store.Collection{ID: 9, DB: "db", Name: "c"}
	if err := tx.Create(coll); err != nil || !recs.pending[9] || !tx.Creates(9) || tx.Creates(8) {
		t.Fatal("a created collection is not pending")
	}
	// Its first statement sent again before it ran starts it afresh.
	again, err := s.StartTransaction(1, time.Minute, c.now())
	if err != nil {
		t.Fatal(err)
	}
	if st, why := tx.State(); st != Aborted || why != "its first statement was sent again" || recs.pending[9] {
		t.Fatalf("the first attempt: %v %q, pending %v", st, why, recs.pending[9])
	}
	tx = again
	tx.StatementRan()
	if _, err := s.StartTransaction(1, time.Minute, c.now()); !errors.Is(err, ErrTransactionStarted) {
		t.Fatalf("startTransaction again after a statement ran: %v", err)
	}
	if got, err := s.Transaction(1, c.now()); err != nil || got != tx {
		t.Fatalf("continuing: %v", err)
	}
	var nip *NotInProgressError
	if _, err := s.Transaction(2, c.now()); !errors.As(err, &nip) || nip.Why != "" {
		t.Fatalf("continuing a transaction never started: %v", err)
	}
	if err := tx.Create(coll); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, _ := tx.State(); st != Committed || !errors.Is(tx.CheckActive(), ErrCommitted) || tab.OpenTransactions() != 0 || recs.pending[9] {
		t.Fatal("a committed transaction")
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("a committed transaction committed again")
	}
	tx.Abort("late") // no effect
	if st, _ := tx.State(); st != Committed {
		t.Fatal("an abort undid a commit")
	}

	// A newer txnNumber, by transaction or retryable write, aborts the
	// one in progress; an older one is refused.
	tx2, _ := s.StartTransaction(2, time.Minute, c.now())
	if _, err := s.Attempt(3, nil, 0, c.now()); err != nil {
		t.Fatal(err)
	}
	if err := tx2.CheckActive(); !errors.As(err, &nip) || !strings.Contains(nip.Why, "newer transaction or retryable write") {
		t.Fatalf("after a newer retryable write: %v", err)
	}
	var old *TooOldError
	if _, err := s.StartTransaction(2, time.Minute, c.now()); !errors.As(err, &old) || old.Newer != 3 {
		t.Fatalf("an older transaction: %v", err)
	}
	if tab.OpenTransactions() != 0 {
		t.Fatalf("%d open transactions, want 0", tab.OpenTransactions())
	}
	s.Release(c.now())
}

func TestTransactionCommitFails(t *testing.T) {
	tab, recs, c, _ := newTxnTable(t)
	s, _ := tab.Checkout(context.Background(), lsid)
	defer s.Release(c.now())
	tx, _ := s.StartTransaction(1, time.Minute, c.now())
	if err := tx.Create(&store.Collection{ID: 4, DB: "db", Name: "c"}); err != nil {
		t.Fatal(err)
	}
	recs.txns[0].failCommit = true
	if err := tx.Commit(); err == nil {
		t.Fatal("the commit did not fail")
	}
	if st, why := tx.State(); st != Aborted || why != "its commit failed" {
		t.Fatalf("after a failed commit: %v %q", st, why)
	}
	if len(recs.withdraw) != 1 || recs.withdraw[0] != 4 || tab.OpenTransactions() != 0 {
		t.Fatal("a failed commit kept its collection or its count")
	}
	// A Begin that fails starts nothing.
	recs.failNext = errors.New("no")
	if _, err := s.StartTransaction(2, time.Minute, c.now()); err == nil || tab.OpenTransactions() != 0 {
		t.Fatalf("a failed Begin: %v", err)
	}
}

func TestTransactionLifetime(t *testing.T) {
	tab, recs, c, ts := newTxnTable(t)
	s, _ := tab.Checkout(context.Background(), lsid)
	tx, _ := s.StartTransaction(1, time.Minute, c.now())
	s.Release(c.now())

	c.advance(59 * time.Second)
	ts.fire()
	if tx.CheckActive() != nil {
		t.Fatal("aborted before its lifetime")
	}
	c.advance(time.Second)
	ts.fire()
	var nip *NotInProgressError
	if err := tx.CheckActive(); !errors.As(err, &nip) || !strings.Contains(nip.Why, "transactionLifetimeLimitSeconds (1m0s)") {
		t.Fatalf("after its lifetime: %v", err)
	}
	if recs.txns[0].aborted != 1 || tab.OpenTransactions() != 0 {
		t.Fatal("the storage transaction was not aborted")
	}

	// A transaction that ends first stops its timer.
	s, _ = tab.Checkout(context.Background(), lsid)
	tx, _ = s.StartTransaction(2, time.Minute, c.now())
	s.Release(c.now())
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(ts.pending) != 1 || !ts.pending[0].stopped {
		t.Fatal("a commit left its lifetime timer running")
	}
}

// AbortWriters aborts the transactions in progress that wrote to a
// collection, saying why, and leaves the others and the ended ones.
func TestAbortWriters(t *testing.T) {
	tab, recs, c, _ := newTxnTable(t)
	start := func(id string) *Transaction {
		s, _ := tab.Checkout(context.Background(), []byte(id))
		defer s.Release(c.now())
		tx, err := s.StartTransaction(1, time.Minute, c.now())
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	wrote, other, ended := start("session-1......."), start("session-2......."), start("session-3.......")
	recs.txns[0].wrote = map[uint32]bool{7: true}
	recs.txns[1].wrote = map[uint32]bool{8: true}
	recs.txns[2].wrote = map[uint32]bool{7: true}
	if err := ended.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := tab.AbortWriters(7, "its collection is being resharded"); n != 1 {
		t.Fatalf("aborted %d transactions, want 1", n)
	}
	if st, why := wrote.State(); st != Aborted || why != "its collection is being resharded" || recs.txns[0].aborted != 1 {
		t.Errorf("the writer: %v %q", st, why)
	}
	if st, _ := other.State(); st != Active || tab.OpenTransactions() != 1 {
		t.Errorf("the other transaction: %v, %d open", st, tab.OpenTransactions())
	}
	if st, _ := ended.State(); st != Committed {
		t.Errorf("the committed transaction: %v", st)
	}
	if n := tab.AbortWriters(7, "again"); n != 0 {
		t.Errorf("aborted %d transactions again", n)
	}
	other.Abort("")
	if n := tab.AbortWriters(8, "after its end"); n != 0 {
		t.Errorf("aborted %d ended transactions", n)
	}
}
