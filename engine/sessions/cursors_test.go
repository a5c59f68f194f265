package sessions

import (
	"errors"
	"testing"
	"time"
)

type source struct{ closed int }

func (s *source) Close() { s.closed++ }

func TestCursorsCheckoutAndReap(t *testing.T) {
	c := newClock()
	r := NewCursors[*source](c.now, 10*time.Minute)
	busy, idle, kept := &source{}, &source{}, &source{}
	busyID := r.Open("db.c", 1, "", busy, CursorOptions{Owner: "ann"})
	idleID := r.Open("db.c", 1, "", idle, CursorOptions{})
	r.Open("db.c", 1, "", kept, CursorOptions{NoTimeout: true})
	if busyID <= 0 || idleID <= 0 || busyID == idleID || r.Count() != 3 {
		t.Fatal("cursor ids")
	}

	refusal := func(err error) CursorRefusal {
		var ce *CursorError
		if !errors.As(err, &ce) {
			t.Fatalf("not a CursorError: %v", err)
		}
		return ce.Refusal
	}
	if _, err := r.Checkout(12345, "db.c", ""); refusal(err) != CursorNotFound {
		t.Fatal("an unknown id")
	}
	if _, err := r.Checkout(busyID, "db.d", "ann"); refusal(err) != CursorOtherNamespace {
		t.Fatal("another namespace")
	}
	if _, err := r.Checkout(busyID, "db.c", "bob"); refusal(err) != CursorOtherOwner {
		t.Fatal("another owner")
	}
	cur, err := r.Checkout(busyID, "db.c", "ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Checkout(busyID, "db.c", "ann"); refusal(err) != CursorInUse {
		t.Fatal("a cursor in use was checked out twice")
	}

	// Past the timeout, the idle cursor is reaped; the one in use and
	// the noCursorTimeout one are not.
	c.advance(10*time.Minute + time.Second)
	if n := r.ReapIdle(); n != 1 || idle.closed != 1 || busy.closed != 0 || kept.closed != 0 {
		t.Fatalf("reaped %d", n)
	}
	// Released, it is idle from now: not reaped before the timeout.
	r.Release(cur, false)
	c.advance(10 * time.Minute)
	if n := r.ReapIdle(); n != 0 {
		t.Fatal("a cursor used within the timeout was reaped")
	}
	c.advance(time.Second)
	if n := r.ReapIdle(); n != 1 || busy.closed != 1 {
		t.Fatal("a cursor idle past the timeout was kept")
	}
	if r.Count() != 1 {
		t.Fatalf("%d cursors, want 1", r.Count())
	}
}

func TestCursorsCloseOnce(t *testing.T) {
	c := newClock()
	r := NewCursors[*source](c.now, time.Minute)
	a, b, d := &source{}, &source{}, &source{}
	aID := r.Open("db.c", 1, "", a, CursorOptions{})
	r.Open("db.c", 2, "s1", b, CursorOptions{})
	dID := r.Open("db.d", 1, "", d, CursorOptions{})

	// Killed while a request holds it: closed when the request is done.
	cur, _ := r.Checkout(aID, "db.c", "")
	if !r.Kill(aID, "db.c", "") || a.closed != 0 {
		t.Fatal("kill of a cursor in use")
	}
	if r.Kill(aID, "db.c", "") {
		t.Fatal("killed twice")
	}
	r.Release(cur, false)
	if a.closed != 1 {
		t.Fatal("a killed cursor was not closed once its request ended")
	}

	// A connection's cursors outside sessions go with it; a session's
	// stay until the session goes.
	r.CloseForConn(2)
	if b.closed != 0 {
		t.Fatal("a session's cursor went with its connection")
	}
	r.CloseForSession("s1")
	if b.closed != 1 {
		t.Fatal("a session's cursor outlived its session")
	}
	// Exhausted: removed and closed.
	cur, _ = r.Checkout(dID, "db.d", "")
	r.Release(cur, true)
	if d.closed != 1 || r.Count() != 0 {
		t.Fatal("an exhausted cursor")
	}
	e := &source{}
	r.Open("db.e", 1, "", e, CursorOptions{})
	r.CloseForNamespace("db.e")
	r.CloseAll()
	if e.closed != 1 {
		t.Fatalf("closed %d times, want 1", e.closed)
	}
}
