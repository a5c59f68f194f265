package auth

import (
	"sync"
	"testing"
	"time"
)

// TestLoginBackoff: an address's first Threshold failures in a window cost
// nothing; past them attempts wait Base, then twice as long after each
// further failure, up to Max; parallel attempts take successive slots;
// other addresses are not slowed; a new window starts free.
func TestLoginBackoff(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewLoginBackoff(BackoffLimits{Threshold: 3, Window: time.Minute, Base: 100 * time.Millisecond, Max: 400 * time.Millisecond, LogInterval: time.Minute})
	const a, other = "10.0.0.1", "10.0.0.2"
	now := t0
	for i := 0; i < 3; i++ {
		if d := b.Admit(a, now); d != 0 {
			t.Fatalf("attempt %d under the threshold waits %v", i+1, d)
		}
		b.Failure(a, now)
	}
	// Past the threshold, a failure makes the next attempt wait; every
	// failure doubles the delay, up to Max.
	b.Failure(a, now) // 4 failures: 100 ms
	if d := b.Admit(a, now); d != 100*time.Millisecond {
		t.Fatalf("attempt after 4 failures waits %v, want 100ms", d)
	}
	// A parallel attempt at the same instant waits for the next slot.
	if d := b.Admit(a, now); d != 200*time.Millisecond {
		t.Fatalf("a parallel attempt waits %v, want 200ms", d)
	}
	now = now.Add(200 * time.Millisecond)
	b.Failure(a, now) // 5: 200 ms
	b.Failure(a, now) // 6: 400 ms
	b.Failure(a, now) // 7: still 400 ms (Max)
	if got := b.delay(5); got != 200*time.Millisecond {
		t.Errorf("delay after 5 failures %v, want 200ms", got)
	}
	if got := b.delay(1000); got != 400*time.Millisecond {
		t.Errorf("delay after 1000 failures %v, want the 400ms cap", got)
	}
	d1 := b.Admit(a, now)
	d2 := b.Admit(a, now)
	if d1 != 400*time.Millisecond || d2 != 800*time.Millisecond {
		t.Errorf("attempts after 7 failures wait %v then %v, want 400ms then 800ms", d1, d2)
	}
	if d := b.Admit(other, now); d != 0 {
		t.Errorf("another address waits %v", d)
	}
	// After the window (and the slots handed out), the address is free.
	now = t0.Add(time.Minute + time.Second)
	if d := b.Admit(a, now); d != 0 {
		t.Errorf("a new window waits %v", d)
	}
	if n := b.Failures(a, now); n != 0 {
		t.Errorf("%d failures in the new window", n)
	}
}

// TestLoginBackoffReports: the first failure of an address is reported at
// once, later ones once per interval with their count, and Sweep reports
// what an address that stopped failing left, then forgets it.
func TestLoginBackoffReports(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewLoginBackoff(BackoffLimits{Threshold: 10, Window: time.Minute, LogInterval: 10 * time.Second})
	const a = "10.0.0.1"
	if n, ok := b.Failure(a, t0); !ok || n != 1 {
		t.Fatalf("first failure: report %v with %d", ok, n)
	}
	for i := 1; i <= 4; i++ {
		if _, ok := b.Failure(a, t0.Add(time.Duration(i)*time.Second)); ok {
			t.Fatalf("failure %d within the interval was reported", i+1)
		}
	}
	if n, ok := b.Failure(a, t0.Add(10*time.Second)); !ok || n != 5 {
		t.Fatalf("failure after the interval: report %v with %d, want 5 (4 held and itself)", ok, n)
	}
	b.Failure(a, t0.Add(11*time.Second))
	b.Failure(a, t0.Add(12*time.Second))
	if r := b.Sweep(t0.Add(15 * time.Second)); len(r) != 0 {
		t.Fatalf("sweep within the interval reported %v", r)
	}
	r := b.Sweep(t0.Add(20 * time.Second))
	if len(r) != 1 || r[0] != (Report{Addr: a, Count: 2}) {
		t.Fatalf("sweep after the interval: %v, want [{%s 2}]", r, a)
	}
	if b.tracked() != 1 {
		t.Fatalf("the address was forgotten inside its window")
	}
	if r := b.Sweep(t0.Add(2 * time.Minute)); len(r) != 0 || b.tracked() != 0 {
		t.Fatalf("sweep after the window: %v, %d addresses kept", r, b.tracked())
	}
}

// TestLoginBackoffConcurrent: concurrent attempts from one address past
// its threshold each get a slot of their own.
func TestLoginBackoffConcurrent(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewLoginBackoff(BackoffLimits{Threshold: 1, Base: time.Second, Max: time.Second})
	b.Failure("a", now)
	b.Failure("a", now)
	var mu sync.Mutex
	seen := map[time.Duration]bool{}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := b.Admit("a", now)
			mu.Lock()
			seen[d] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	for i := 0; i < 20; i++ {
		if !seen[time.Duration(i+1)*time.Second] {
			t.Fatalf("slots %v: no attempt waits %ds", seen, i+1)
		}
	}
}
