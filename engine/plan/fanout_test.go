package plan

import (
	"errors"
	"testing"

	"github.com/parsecdb/parsec/engine/agg"
)

// TestRunParallelRecoversPanics: a worker that panics fails its request
// with an agg.PanicError that holds its stack (which the command layer
// reports as an InternalError that names no internals), and the other
// workers' goroutines end normally.
func TestRunParallelRecoversPanics(t *testing.T) {
	ran := make([]bool, 8)
	err := runParallel(len(ran), func(i int) error {
		ran[i] = true
		if i == 3 {
			var m map[string]int
			m["x"]++ // a nil-map write: panics
		}
		return nil
	})
	var pe *agg.PanicError
	if !errors.As(err, &pe) || len(pe.Stack) == 0 {
		t.Fatalf("runParallel with a panicking worker: %v", err)
	}
	if !ran[3] {
		t.Fatal("the panicking worker did not run")
	}
}
