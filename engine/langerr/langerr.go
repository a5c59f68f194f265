// Package langerr is the error family of Parsec's language packages
// (engine/query, engine/expr, engine/update, engine/agg): an Error carries
// a category, a sentinel that names what went wrong, and the message
// MongoDB gives for it. The categories every language shares are here;
// each package declares its own for the rest. Only the command layer turns
// a category into a MongoDB error code, so no code appears here.
//
// Contract:
//
//  1. An Error is its category for errors.Is, and prints as
//     "<category>: <message>".
//  2. Message is the text the client is to read, without the category.
//  3. The package imports none of Parsec's packages.
package langerr

import (
	"errors"
	"fmt"
)

// The categories the languages share.
var (
	ErrBadValue      = errors.New("bad value")
	ErrTypeMismatch  = errors.New("type mismatch")
	ErrFailedToParse = errors.New("failed to parse")
	// ErrNotImplemented: valid MongoDB that Parsec does not run yet.
	ErrNotImplemented = errors.New("not implemented")
)

// Error is an error of a language package: the category it belongs to and
// MongoDB's message.
type Error struct {
	Category error
	Message  string
}

func (e *Error) Error() string { return e.Category.Error() + ": " + e.Message }

// Unwrap returns the category, so that errors.Is(err, ErrBadValue) works.
func (e *Error) Unwrap() error { return e.Category }

// New is an Error of category with the message format makes of args.
func New(category error, format string, args ...any) error {
	return &Error{Category: category, Message: fmt.Sprintf(format, args...)}
}

// BadValue is New(ErrBadValue, ...).
func BadValue(format string, args ...any) error { return New(ErrBadValue, format, args...) }

// TypeMismatch is New(ErrTypeMismatch, ...).
func TypeMismatch(format string, args ...any) error {
	return New(ErrTypeMismatch, format, args...)
}

// FailedToParse is New(ErrFailedToParse, ...).
func FailedToParse(format string, args ...any) error {
	return New(ErrFailedToParse, format, args...)
}

// Message is the client's text of err, an error of category: its text
// without the "<category>: " it starts with (an error that wraps one of
// the language's errors in more context keeps its text whole).
func Message(err error, category error) string {
	s, p := err.Error(), category.Error()+": "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
