package engine

import (
	"errors"
	"testing"

	"github.com/parsecdb/parsec/engine/agg"
)

// TestRunParallelRecoversPanics: a worker that panics fails its request
// with an InternalError that names no internals, and the other workers'
// goroutines end normally.
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
	ce := toCommandError(err)
	if ce.Code != ErrInternalError || ce.Msg != "internal error while running the request on a partition; the server log has the details" {
		t.Fatalf("the client's error: %d %q", ce.Code, ce.Msg)
	}
	if !ran[3] {
		t.Fatal("the panicking worker did not run")
	}
}
