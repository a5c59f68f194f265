package langerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestError(t *testing.T) {
	own := errors.New("illegal sort key")
	for _, c := range []struct {
		err      error
		category error
		text     string
		message  string
	}{
		{BadValue("x is %d", 3), ErrBadValue, "bad value: x is 3", "x is 3"},
		{TypeMismatch("%s", "t"), ErrTypeMismatch, "type mismatch: t", "t"},
		{FailedToParse("p"), ErrFailedToParse, "failed to parse: p", "p"},
		{New(ErrNotImplemented, "n"), ErrNotImplemented, "not implemented: n", "n"},
		{New(own, "bad: %v", 1.5), own, "illegal sort key: bad: 1.5", "bad: 1.5"},
		// more context around a language error: its text stays whole
		{fmt.Errorf("stage 2: %w", BadValue("v")), ErrBadValue, "stage 2: bad value: v", "stage 2: bad value: v"},
	} {
		if !errors.Is(c.err, c.category) {
			t.Errorf("%v is not its category %v", c.err, c.category)
		}
		if got := c.err.Error(); got != c.text {
			t.Errorf("Error() = %q, want %q", got, c.text)
		}
		if got := Message(c.err, c.category); got != c.message {
			t.Errorf("Message(%v) = %q, want %q", c.err, got, c.message)
		}
	}
	if errors.Is(BadValue("v"), ErrTypeMismatch) {
		t.Error("a BadValue error is also a TypeMismatch")
	}
	var e *Error
	if !errors.As(fmt.Errorf("ctx: %w", TypeMismatch("m")), &e) || e.Category != ErrTypeMismatch || e.Message != "m" {
		t.Errorf("errors.As found %+v", e)
	}
}
