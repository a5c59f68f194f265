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
