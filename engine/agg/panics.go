package agg

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic recovered in a goroutine that ran part of one
// request (a partition's branch of a pipeline, a partition's scan): it
// becomes that request's error instead of ending the process. Stack is
// for the server's log, never for the client.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Recovered turns a recovered panic value into a *PanicError with the
// stack of the goroutine that panicked; nil stays nil.
func Recovered(p any) error {
	if p == nil {
		return nil
	}
	return &PanicError{Value: p, Stack: debug.Stack()}
}
