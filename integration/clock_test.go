package integration

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestClock: the harness clock stands still until advanced, and releases
// a waiter exactly when it has moved the waiter's time ahead.
func TestClock(t *testing.T) {
	clk := NewClock()
	start := clk.Now()
	if got := clk.Now(); !got.Equal(start) {
		t.Fatalf("a stopped clock moved: %v, then %v", start, got)
	}
	released := make(chan error, 1)
	go func() { released <- clk.Wait(context.Background(), 50*time.Millisecond) }()
	if !clk.Until(5*time.Second, func(waiting int) bool { return waiting == 1 }) {
		t.Fatal("Wait did not register its caller")
	}
	clk.Advance(49 * time.Millisecond)
	if !clk.Until(5*time.Second, func(waiting int) bool { return waiting == 1 }) {
		t.Fatal("released 1 ms before its time")
	}
	clk.Advance(time.Millisecond)
	if err := <-released; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if got := clk.Now().Sub(start); got != 50*time.Millisecond {
		t.Errorf("advanced by %v, want 50ms", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { released <- clk.Wait(ctx, time.Hour) }()
	clk.Until(5*time.Second, func(waiting int) bool { return waiting == 1 })
	cancel()
	if err := <-released; !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after its context was cancelled: %v", err)
	}
	if !clk.Until(5*time.Second, func(waiting int) bool { return waiting == 0 }) {
		t.Error("a cancelled waiter is still counted")
	}
	if clk.Until(10*time.Millisecond, func(int) bool { return false }) {
		t.Error("Until reported a condition that never held")
	}
}
