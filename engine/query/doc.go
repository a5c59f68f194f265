// Package query compiles MongoDB query filters and matches documents
// against them. Documents are raw BSON; nothing is decoded into Go values.
//
// Contract: Compile validates a filter once and returns a Filter that is
// safe for concurrent use. Errors wrap one of ErrBadValue, ErrTypeMismatch
// or ErrFailedToParse so the command layer can give MongoDB's codes; this
// package knows no codes itself.
//
// Supported today: equality on field paths (implicit or $eq), with
// MongoDB's array semantics (an array field matches when it equals the
// value or any element does), null matching missing fields, and $and.
// Other operators are refused with ErrBadValue naming the operator.
package query
