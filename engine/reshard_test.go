package engine

import (
	"testing"
	"time"
)

// TestCatchUpStopsAtARoundToBlockWritesFor: the resharding's catch-up
// stops when it has caught up, or, when it does not shrink, at a round
// short enough to apply again with writes blocked; never after a round
// of minutes, whose changes the critical section would then apply.
func TestCatchUpStopsAtARoundToBlockWritesFor(t *testing.T) {
	for _, c := range []struct {
		name        string
		round, n    int
		took, since time.Duration
		committed   bool
		want        bool
	}{
		{"few changes", 3, reshardSmallLag - 1, 2 * time.Second, 2 * time.Second, false, true},
		{"a quick round", 3, 50_000, reshardQuickRound / 2, 3 * time.Second, false, true},
		{"commitReshardCollection", 1, 50_000, 3 * time.Second, 3 * time.Second, true, true},
		{"too many rounds", reshardMaxRounds, 50_000, time.Minute, time.Hour, false, true},
		{"shrinking, early", 1, 50_000, 800 * time.Millisecond, 2 * time.Second, false, false},
		{"the first round after a long copy", 0, 2_000_000, 90 * time.Second, 90 * time.Second, false, false},
		{"the second, still long", 1, 400_000, 20 * time.Second, 110 * time.Second, false, false},
		{"not shrinking, a round to block for", 6, 20_000, reshardBlockingRound, 2 * time.Minute, false, true},
	} {
		if got := caughtUp(c.round, c.n, c.took, c.since, c.committed); got != c.want {
			t.Errorf("%s: caughtUp = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCopyBatchShrinksWithTheLoad: under a heavy load (or one not yet
// measured) the copy commits small batches, under a light one larger,
// never growing as the load does.
func TestCopyBatchShrinksWithTheLoad(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
	}{
		{-1, reshardCopyBatch},
		{0, reshardCopyBatchLight},
		{1000, reshardCopyBatchLight},
		{2000, 40},
		{reshardHeavyLoad, reshardCopyBatch},
		{50_000, reshardCopyBatch},
	} {
		if got := pacedBatch(c.rate); got != c.want {
			t.Errorf("pacedBatch(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
	prev := pacedBatch(0)
	for rate := 100.0; rate < 2*reshardHeavyLoad; rate += 100 {
		b := pacedBatch(rate)
		if b > prev || b < reshardCopyBatch || b > reshardCopyBatchLight {
			t.Fatalf("pacedBatch(%v) = %d after %d", rate, b, prev)
		}
		prev = b
	}
}

// TestCopyLoadMeasuresTheRate: the copy's view of the load is paced
// while operations were seen within reshardQuietAfter, and its rate is
// the operations over the last whole window.
func TestCopyLoadMeasuresTheRate(t *testing.T) {
	var ops int64
	t0 := time.Unix(1_000, 0)
	l := newCopyLoad(func() int64 { return ops }, t0)
	if busy, rate := l.look(t0.Add(time.Millisecond)); busy || rate >= 0 {
		t.Fatalf("no operations yet: busy %v, rate %v; want idle and no rate", busy, rate)
	}
	ops += 100
	if busy, rate := l.look(t0.Add(10 * time.Millisecond)); !busy || rate >= 0 {
		t.Fatalf("100 operations inside the first window: busy %v, rate %v; want busy and no rate yet", busy, rate)
	}
	ops += 400
	busy, rate := l.look(t0.Add(reshardLoadWindow))
	if want := 500 / reshardLoadWindow.Seconds(); !busy || rate != want {
		t.Fatalf("after a window of 500 operations: busy %v, rate %v; want busy at %v", busy, rate, want)
	}
	// Quiet: paced until reshardQuietAfter after the last operation seen.
	at := t0.Add(reshardLoadWindow + reshardQuietAfter - time.Millisecond)
	if busy, _ := l.look(at); !busy {
		t.Fatalf("just under reshardQuietAfter after the last operation: not busy")
	}
	busy, rate = l.look(t0.Add(2*reshardLoadWindow + reshardQuietAfter))
	if busy || rate != 0 {
		t.Fatalf("a whole quiet window later: busy %v, rate %v; want idle at 0", busy, rate)
	}
}
