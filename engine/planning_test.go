package engine

import (
	"testing"

	"github.com/parsecdb/parsec/engine/agg"
)

// TestPartitionPanicIsInternalError: a panic on a partition's worker,
// which the planner's fan-out returns as an agg.PanicError, reaches the
// client as an InternalError that names no internals.
func TestPartitionPanicIsInternalError(t *testing.T) {
	ce := toCommandError(&agg.PanicError{Value: "assignment to entry in nil map", Stack: []byte("goroutine 7 [running]:")})
	if ce.Code != ErrInternalError || ce.Msg != "internal error while running the request on a partition; the server log has the details" {
		t.Fatalf("the client's error: %d %q", ce.Code, ce.Msg)
	}
}
