package store

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestSessionStatements(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	lsid := bytes.Repeat([]byte{7}, SessionIDLen)
	other := bytes.Repeat([]byte{8}, SessionIDLen)
	if _, ok, err := s.SessionHead(lsid); ok || err != nil {
		t.Fatalf("head of an unknown session: ok %v err %v", ok, err)
	}
	now := time.UnixMilli(1_700_000_000_000)

	// A statement record commits with its document, or neither does.
	boom := errors.New("boom")
	err := s.Update(func(tx *Txn) error {
		if err := tx.Insert(c, idKey(c, 1), mkDoc(1, 1)); err != nil {
			return err
		}
		if err := tx.PutSessionStatements(lsid, SessionHead{TxnNumber: 3, LastUse: now, Span: 1}, []SessionStatement{{0, []byte("zero")}}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update: %v", err)
	}
	if _, ok, _ := s.SessionHead(lsid); ok {
		t.Fatal("head written by a transaction that failed")
	}
	err = s.Update(func(tx *Txn) error {
		if err := tx.Insert(c, idKey(c, 1), mkDoc(1, 1)); err != nil {
			return err
		}
		return tx.PutSessionStatements(lsid, SessionHead{TxnNumber: 3, LastUse: now, Span: 2},
			[]SessionStatement{{0, []byte("zero")}, {1, []byte("one")}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(tx *Txn) error {
		return tx.PutSessionStatements(other, SessionHead{TxnNumber: 1, LastUse: now.Add(time.Hour), Span: 1}, []SessionStatement{{0, []byte("x")}})
	}); err != nil {
		t.Fatal(err)
	}
	head, ok, err := s.SessionHead(lsid)
	if err != nil || !ok || head.TxnNumber != 3 || head.Span != 2 || !head.LastUse.Equal(now) {
		t.Fatalf("head %+v ok %v err %v", head, ok, err)
	}
	got, err := s.SessionStatements(lsid, 3)
	if err != nil || len(got) != 2 || string(got[0]) != "zero" || string(got[1]) != "one" {
		t.Fatalf("statements of txn 3: %q, %v", got, err)
	}
	// Transaction 4 rewrites statement 0: statement 1 is stale.
	if err := s.Update(func(tx *Txn) error {
		return tx.PutSessionStatements(lsid, SessionHead{TxnNumber: 4, LastUse: now, Span: 1}, []SessionStatement{{0, []byte("four")}})
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SessionStatements(lsid, 4); len(got) != 1 || string(got[0]) != "four" {
		t.Fatalf("statements of txn 4: %q", got)
	}

	idle, err := s.IdleSessions(now.Add(time.Minute))
	if err != nil || len(idle) != 1 || !bytes.Equal(idle[0], lsid) {
		t.Fatalf("idle sessions: %x, %v", idle, err)
	}
	if err := s.ResetSession(lsid, SessionHead{TxnNumber: 9, LastUse: now}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SessionStatements(lsid, 4); len(got) != 0 {
		t.Fatalf("statements after reset: %q", got)
	}
	if head, _, _ := s.SessionHead(lsid); head.TxnNumber != 9 {
		t.Fatalf("head after reset: %+v", head)
	}
	if err := s.DeleteSession(lsid); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.SessionHead(lsid); ok {
		t.Fatal("head survives DeleteSession")
	}
	if got, _ := s.SessionStatements(other, 1); len(got) != 1 {
		t.Fatalf("another session's statements: %q", got)
	}
	if err := s.DeleteSession([]byte("short")); err == nil {
		t.Fatal("a session id of 5 bytes was accepted")
	}
}

func TestSessionDeleteChunks(t *testing.T) {
	s := openMem(t)
	lsid := bytes.Repeat([]byte{1}, SessionIDLen)
	n := sessionDeleteChunk + 10
	stmts := make([]SessionStatement, n)
	for i := range stmts {
		stmts[i] = SessionStatement{int32(i), []byte{1}}
	}
	for i := 0; i < n; i += 5000 {
		if err := s.Update(func(tx *Txn) error {
			return tx.PutSessionStatements(lsid, SessionHead{TxnNumber: 1, Span: int32(n)}, stmts[i:min(i+5000, n)])
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.SessionStatements(lsid, 1); len(got) != n {
		t.Fatalf("%d statements, want %d", len(got), n)
	}
	if err := s.DeleteSession(lsid); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SessionStatements(lsid, 1); len(got) != 0 {
		t.Fatalf("%d statements left", len(got))
	}
}

// TestSessionHeadsPerPartition: a session that writes in two physical
// partitions keeps a head and its statements in each (as a MongoDB
// session keeps a record on each shard); readers see them merged, and a
// reset or a delete removes them all.
func TestSessionHeadsPerPartition(t *testing.T) {
	s := openMem(t)
	c := mustShard(t, s, "db", "sh", 4)
	lsid := bytes.Repeat([]byte{9}, SessionIDLen)
	early, late := time.UnixMilli(1_700_000_000_000), time.UnixMilli(1_700_000_009_000)
	write := func(id int32, region string, txn int64, use time.Time, span int32, stmt int32) {
		t.Helper()
		d := skDoc(id, region, 1)
		err := s.Update(func(tx *Txn) error {
			if err := tx.Insert(c, skKey(t, c, d), d); err != nil {
				return err
			}
			return tx.PutSessionStatements(lsid, SessionHead{TxnNumber: txn, LastUse: use, Span: span}, []SessionStatement{{ID: stmt, Outcome: []byte(region)}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Two regions in different partitions of the 4.
	a, b := "EU", ""
	pa := c.Map().Lookup(pointOf(skKey(t, c, skDoc(1, a, 1))))
	for _, r := range []string{"US", "APAC", "LATAM", "MEA", "ANZ", "AF"} {
		if c.Map().Lookup(pointOf(skKey(t, c, skDoc(1, r, 1)))) != pa {
			b = r
			break
		}
	}
	if b == "" {
		t.Fatal("no two regions in different partitions")
	}
	write(1, a, 7, late, 1, 0)
	write(2, b, 7, early, 3, 2)
	if n := rawKeys(t, s, sessionHeadsPrefix(lsid)); n != 2 {
		t.Fatalf("%d heads, want one in each of the two partitions written", n)
	}
	head, ok, err := s.SessionHead(lsid)
	if err != nil || !ok || head.TxnNumber != 7 || !head.LastUse.Equal(late) || head.Span != 3 {
		t.Fatalf("merged head %+v ok %v err %v; want txn 7, the later use, span 3", head, ok, err)
	}
	stmts, err := s.SessionStatements(lsid, 7)
	if err != nil || string(stmts[0]) != a || string(stmts[2]) != b {
		t.Fatalf("statements %q, %v; want 0 from %s and 2 from %s", stmts, err, a, b)
	}
	if idle, err := s.IdleSessions(late); err != nil || len(idle) != 0 {
		t.Errorf("idle before its latest use: %x, %v", idle, err)
	}
	if idle, err := s.IdleSessions(late.Add(time.Second)); err != nil || len(idle) != 1 || !bytes.Equal(idle[0], lsid) {
		t.Errorf("idle sessions %x, %v; want the session once", idle, err)
	}
	if err := s.ResetSession(lsid, SessionHead{TxnNumber: 8, LastUse: late}); err != nil {
		t.Fatal(err)
	}
	if n := rawKeys(t, s, sessionHeadsPrefix(lsid)); n != 1 {
		t.Errorf("%d heads after a reset, want 1", n)
	}
	if n := rawKeys(t, s, sessionStmtsPrefix(lsid)); n != 0 {
		t.Errorf("%d statements after a reset", n)
	}
	if head, _, _ := s.SessionHead(lsid); head.TxnNumber != 8 {
		t.Errorf("head after reset %+v", head)
	}
	if err := s.DeleteSession(lsid); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.SessionHead(lsid); ok {
		t.Error("head left after DeleteSession")
	}
}
