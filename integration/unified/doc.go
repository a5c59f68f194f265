// Package unified runs MongoDB driver specification tests written in the
// unified test format (mongodb/specifications,
// source/unified-test-format) against a server, through the official Go
// driver's public API only.
//
// Contract:
//   - LoadFile parses one JSON test file (relaxed or canonical Extended
//     JSON, key order kept).
//   - A Runner, made by NewRunner from a connection string, runs every
//     test of a file and returns one Result per test: Passed only when
//     every operation, expected result, expected error, expected event and
//     final collection content matched; Skipped only when the test's (or
//     its file's) runOnRequirements are not met by the server, or the test
//     has a skipReason; Failed otherwise. An operation or argument the
//     runner does not implement fails the test with a reason starting
//     "runner:", it never skips it.
//   - Match implements the format's matching rules (root documents allow
//     extra keys, flexible numerics, the $$ special operators); its first
//     mismatch comes with a path into the document.
//
// The runner never copies test data anywhere: it reads the files it is
// given and talks to the server.
package unified
