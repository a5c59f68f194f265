// Package update compiles MongoDB update specifications and applies them to
// documents: update operators ($set, $inc, $push, ... with positional,
// all-positional and filtered paths), replacement documents, and the
// document an upsert inserts.
//
// Contract:
//
//   - Pure: no storage, no clock, no randomness. The time $currentDate
//     writes and the array index the positional '$' stands for are inputs
//     (Env). Parse validates a specification once; the Update it returns is
//     immutable and safe for concurrent use.
//   - Documents are raw BSON in and out (bsoncore). Apply expands only the
//     documents and arrays on the paths it changes; every other value is
//     copied as bytes.
//   - An update either succeeds as a whole or returns an error and no
//     document: callers never see a half-applied update.
//   - Apply reports whether the document changed; an update that leaves the
//     bytes as they were (a $set to the same value, an $unset of a missing
//     field, ...) is a no-op, which MongoDB counts in n but not nModified.
//   - Errors wrap one of the categories in errors.go, each standing for one
//     MongoDB error code; this package knows no codes itself. Error()
//     is MongoDB's message, without the category.
//
// Semantics follow MongoDB 7.0: operators process fields in order of their
// names (numeric names numerically), new fields are appended in that order,
// paths through missing fields are created, and arrays are padded with nulls
// when an index past their end is set.
package update
