package engine

import (
	"context"
	"testing"
	"time"
)

// TestAfterFuncOf: a lifetime timer on the server's clock fires once when
// its wait ends, and not at all when stopped first.
func TestAfterFuncOf(t *testing.T) {
	if afterFuncOf(nil) != nil {
		t.Fatal("no clock of its own: want nil (real timers)")
	}
	release := make(chan struct{})
	wait := func(ctx context.Context, d time.Duration) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	after := afterFuncOf(wait)
	fired := make(chan struct{}, 2)
	stop := after(time.Minute, func() { fired <- struct{}{} })
	release <- struct{}{}
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("the timer did not fire when its wait ended")
	}
	if stop() {
		t.Error("stop after firing reported that it stopped the timer")
	}

	stop = after(time.Minute, func() { fired <- struct{}{} })
	if !stop() {
		t.Error("stop before firing reported nothing to stop")
	}
	if stop() {
		t.Error("a second stop reported stopping again")
	}
	close(release) // a wait that would end now must not fire it
	select {
	case <-fired:
		t.Error("a stopped timer fired")
	case <-time.After(50 * time.Millisecond):
	}
}
