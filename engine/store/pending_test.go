package store

import (
	"testing"
)

// TestPendingAcrossRestart: a collection created by a transaction that
// never committed (the server stopped while it was open) is gone after a
// restart, unless a write from outside committed a document into it; one
// whose transaction committed stays.
func TestPendingAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	cut := mustCreate(t, s, "db", "cut")         // its transaction never ends
	written := mustCreate(t, s, "db", "written") // ... but an outside write lands in it
	done := mustCreate(t, s, "db", "done")       // its transaction commits
	for _, c := range []*Collection{cut, written, done} {
		if err := s.MarkPending(c.ID); err != nil {
			t.Fatal(err)
		}
		if !s.Pending(c.ID) {
			t.Fatalf("%s is not pending", c.Name)
		}
	}
	insert(t, s, written, 1, 10)
	txn, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Update(func(tx *Txn) error { return tx.Insert(done, idKey(done, 1), mkDoc(1, 10)) }); err != nil {
		t.Fatal(err)
	}
	if err := txn.Publish(done.ID); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	s.Published(done.ID)
	open, err := s.Begin() // still open when the store closes
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Update(func(tx *Txn) error { return tx.Insert(cut, idKey(cut, 1), mkDoc(1, 10)) }); err != nil {
		t.Fatal(err)
	}
	open.Abort()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDir(t, dir)
	if s.Collection("db", "cut") != nil {
		t.Error("the collection of a transaction cut off is back after the restart")
	}
	for _, name := range []string{"written", "done"} {
		c := s.Collection("db", name)
		if c == nil {
			t.Fatalf("%s is gone after the restart", name)
		}
		if s.Pending(c.ID) {
			t.Errorf("%s is still pending after the restart", name)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Nothing left to withdraw: the keys went with the first restart.
	s = openDir(t, dir)
	if len(s.orphans) != 0 {
		t.Errorf("pending keys after a second restart: %v", s.orphans)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWithdraw: an aborted transaction's empty collection is dropped; one
// that another writer is writing to (holding its fence) stays.
func TestWithdraw(t *testing.T) {
	s := openMem(t)
	empty := mustCreate(t, s, "db", "empty")
	busy := mustCreate(t, s, "db", "busy")
	for _, c := range []*Collection{empty, busy} {
		if err := s.MarkPending(c.ID); err != nil {
			t.Fatal(err)
		}
	}
	other, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Abort()
	if err := other.Update(func(tx *Txn) error { return tx.Insert(busy, idKey(busy, 1), mkDoc(1, 10)) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Collection{empty, busy} {
		if err := s.Withdraw(c.DB, c.Name, c.ID); err != nil {
			t.Fatal(err)
		}
		if s.Pending(c.ID) {
			t.Errorf("%s is still pending after Withdraw", c.Name)
		}
	}
	if s.Collection("db", "empty") != nil {
		t.Error("an empty withdrawn collection stays")
	}
	if s.Collection("db", "busy") == nil {
		t.Error("a collection another transaction writes to was dropped")
	}
}
