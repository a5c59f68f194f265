package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/sessions"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newRetryableEngine(t *testing.T) (*Engine, *fakeClock) {
	t.Helper()
	st, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := New(Config{Store: storage.Local(st), Now: clock.now})
	t.Cleanup(func() {
		e.Close()
		_ = st.Close()
	})
	return e, clock
}

func runCmd(t *testing.T, e *Engine, run func(*Engine, context.Context, *request) ([]byte, error), cmd bson.D) (bson.Raw, error) {
	t.Helper()
	body, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(e, context.Background(), &request{name: cmd[0].Key, db: "db", body: body})
	return out, err
}

func TestRetryableSessions(t *testing.T) {
	e, clock := newRetryableEngine(t)
	uuid := []byte("0123456789abcdef")
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: uuid}}}
	insert := func(txn int64, id int) bson.D {
		return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}},
			{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: txn}}
	}
	writeErrors := func(r bson.Raw) int {
		v, err := r.LookupErr("writeErrors")
		if err != nil {
			return 0
		}
		vals, _ := v.Array().Values()
		return len(vals)
	}

	if r, err := runCmd(t, e, (*Engine).cmdInsert, insert(1, 1)); err != nil || writeErrors(r) != 0 {
		t.Fatalf("insert: %v %v", r, err)
	}
	// A retry is answered from the record.
	r, err := runCmd(t, e, (*Engine).cmdInsert, insert(1, 1))
	if err != nil || writeErrors(r) != 0 || r.Lookup("n").Int32() != 1 {
		t.Fatalf("retry: %v %v", r, err)
	}
	if _, err := runCmd(t, e, (*Engine).cmdInsert, insert(0, 2)); err == nil || toCommandError(err).Code != ErrTransactionTooOld {
		t.Fatalf("older txnNumber: %v", err)
	}

	// Idle for less than the timeout: kept.
	clock.advance(sessions.SessionTimeout - time.Minute)
	e.expireSessions()
	if _, ok, _ := e.store.SessionHead(uuid); !ok {
		t.Fatal("a session idle for 29 minutes was forgotten")
	}
	// Past it: forgotten, in memory and in the store; a retry then runs
	// the statement again (and meets the document).
	clock.advance(2 * time.Minute)
	e.expireSessions()
	if _, ok, _ := e.store.SessionHead(uuid); ok {
		t.Fatal("a session idle for 31 minutes is still stored")
	}
	if r, err := runCmd(t, e, (*Engine).cmdInsert, insert(1, 1)); err != nil || writeErrors(r) != 1 {
		t.Fatalf("retry after expiry: %v %v", r, err)
	}

	// Stored sessions the engine never saw (before a restart) expire too.
	if err := e.store.Update(func(tx storage.Txn) error {
		return tx.PutSessionStatements([]byte("fedcba9876543210"), store.SessionHead{TxnNumber: 1, LastUse: clock.now().Add(-time.Hour)}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	e.expireSessions()
	if _, ok, _ := e.store.SessionHead([]byte("fedcba9876543210")); ok {
		t.Fatal("an idle stored session was kept")
	}

	// endSessions forgets at once.
	if _, err := runCmd(t, e, (*Engine).cmdInsert, insert(5, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, e, (*Engine).cmdEndSessions, bson.D{{Key: "endSessions", Value: bson.A{lsid}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.store.SessionHead(uuid); ok {
		t.Fatal("endSessions left the session stored")
	}
	if _, err := runCmd(t, e, (*Engine).cmdInsert, insert(4, 4)); err != nil {
		t.Fatalf("an ended session still refuses older txnNumbers: %v", err)
	}
}

func TestRetryableInsertRuns(t *testing.T) {
	e, _ := newRetryableEngine(t)
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	if _, err := runCmd(t, e, (*Engine).cmdInsert, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 2}}}}}); err != nil {
		t.Fatal(err)
	}
	// Unordered: statement 1 is a duplicate, the others are recorded as
	// the runs [0] and [2, 4].
	cmd := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "_id", Value: 5}},
	}}, {Key: "ordered", Value: false}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}}
	for attempt := range 2 {
		r, err := runCmd(t, e, (*Engine).cmdInsert, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if n := r.Lookup("n").Int32(); n != 4 {
			t.Fatalf("attempt %d: n %d in %v", attempt, n, r)
		}
		errs, _ := r.Lookup("writeErrors").Array().Values()
		if len(errs) != 1 || errs[0].Document().Lookup("index").Int32() != 1 {
			t.Fatalf("attempt %d: %v", attempt, r)
		}
		ids, err := r.LookupErr("retriedStmtIds")
		switch {
		case attempt == 0 && err == nil:
			t.Fatalf("first attempt has retriedStmtIds: %v", r)
		case attempt == 1:
			vals, _ := ids.Array().Values()
			var got []int32
			for _, v := range vals {
				got = append(got, v.Int32())
			}
			if len(got) != 4 || got[0] != 0 || got[1] != 2 || got[3] != 4 {
				t.Fatalf("retriedStmtIds %v, want [0 2 3 4]", got)
			}
		}
	}
	recs, err := e.store.SessionStatements([]byte("0123456789abcdef"), 1)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records (%v), want 2 runs", len(recs), err)
	}
}
