package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/store"
)

var lsid = []byte("0123456789abcdef")

func TestCheckoutIsExclusive(t *testing.T) {
	c := newClock()
	tab := NewTable(newRecords(), nil, nil)
	s, err := tab.Checkout(context.Background(), lsid)
	if err != nil {
		t.Fatal(err)
	}
	// A second command of the session waits until its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error)
	go func() {
		_, err := tab.Checkout(ctx, lsid)
		waited <- err
	}()
	select {
	case err := <-waited:
		t.Fatalf("a second checkout did not wait: %v", err)
	default:
	}
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("second checkout: %v", err)
	}
	if _, ok := tab.TryCheckout(lsid); ok {
		t.Fatal("TryCheckout took a session in use")
	}
	// Another session is not held up.
	other, ok := tab.TryCheckout([]byte("fedcba9876543210"))
	if !ok {
		t.Fatal("another session was held")
	}
	other.Release(c.now())

	// A waiter gets the session once it is released, not before.
	got := make(chan *Session)
	go func() {
		s2, _ := tab.Checkout(context.Background(), lsid)
		got <- s2
	}()
	select {
	case <-got:
		t.Fatal("the waiter got a session still held")
	default:
	}
	s.Release(c.now())
	s2 := <-got
	if s2 != s {
		t.Fatal("the waiter got another session")
	}

	// Removed while a waiter waits: the waiter gets a fresh session.
	go func() {
		s3, _ := tab.Checkout(context.Background(), lsid)
		got <- s3
	}()
	tab.Remove(s2)
	s3 := <-got
	if s3 == s2 || s3.gone {
		t.Fatal("the waiter got the removed session")
	}
	if tab.Len() != 2 {
		t.Fatalf("%d sessions, want 2", tab.Len())
	}
	s3.Release(c.now())
}

func TestSessionsExpire(t *testing.T) {
	c := newClock()
	recs := newRecords()
	tab := NewTable(recs, nil, nil)
	s, _ := tab.Checkout(context.Background(), lsid)
	a, err := s.Attempt(1, nil, 0, c.now())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Record(writes{r: recs}, c.now(), Record{0, Outcome{Op: "i", N: 1}}); err != nil {
		t.Fatal(err)
	}
	a.Committed()
	a.Release(c.now())
	// Only the store knows this one (from before a restart).
	stored := []byte("fedcba9876543210")
	recs.put(stored, store.SessionHead{TxnNumber: 3, LastUse: c.now().Add(-time.Hour)}, nil)

	c.advance(SessionTimeout - time.Minute)
	tab.Expire(c.now())
	if _, ok, _ := recs.SessionHead(lsid); !ok || tab.Len() != 1 {
		t.Fatal("a session idle for less than the timeout was forgotten")
	}
	if _, ok, _ := recs.SessionHead(stored); ok {
		t.Fatal("a stored session idle past the timeout was kept")
	}

	// A session in use is not forgotten, however idle.
	c.advance(2 * time.Minute)
	held, _ := tab.Checkout(context.Background(), lsid)
	tab.Expire(c.now())
	if tab.Len() != 1 {
		t.Fatal("a session in use was forgotten")
	}
	held.Release(c.now().Add(-SessionTimeout - time.Second)) // last used long ago
	tab.Expire(c.now())
	if _, ok, _ := recs.SessionHead(lsid); ok || tab.Len() != 0 {
		t.Fatal("a session idle past the timeout is still held")
	}

	// Forgotten, it starts afresh: an older txnNumber is no longer refused.
	s, _ = tab.Checkout(context.Background(), lsid)
	if _, err := s.Attempt(0, nil, 0, c.now()); err != nil {
		t.Fatalf("a forgotten session refuses txnNumber 0: %v", err)
	}
	s.Release(c.now())
	tab.ForgetAll(c.now())
	if tab.Len() != 0 {
		t.Fatal("ForgetAll left a session")
	}
}

func TestIDString(t *testing.T) {
	got := IDString([]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef})
	want := "01234567-89ab-cdef-0123-456789abcdef - 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	if got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
