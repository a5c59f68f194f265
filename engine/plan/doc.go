// Package plan is how Parsec reads a collection: which physical
// partitions a filter routes to (and which logical partitions in them),
// which secondary index serves a filter and sort, whether reading the
// routed logical partitions is cheaper than that index, and the running
// of the plan — a scan in key order or through an index, a fan-out that
// reads several partitions in parallel, a blocking sort — counting what
// it examined on each partition (the tallies a read's request units are
// charged for).
//
// The command layer (engine) parses commands, fills in a Read with what
// the command asked for, and calls Read.Route, Read.ChooseIndex and
// Planner.WeighShardKeyScan; a Planner then runs the Read as a Source
// (find, getMore), a Scan (count, distinct, TTL) or an IndexIterator per
// partition (aggregation). Explain's output, hints' errors and request
// units stay in the command layer: this package exposes what they need
// (Stats, IndexPlan.Bounds, Span).
//
// A Read under a collation (Read.Collation) pins, routes and bounds
// simple keys only with the conditions that compare no strings
// (Uncollated), and uses an index of another collation than its own that
// way too, never for a sort (collation.go).
//
// Contract:
//   - It reaches data only through engine/storage (a Planner is given a
//     storage.Storage, and a Reader per request for its transaction or
//     snapshot), and names it with engine/store's data types and key
//     layout.
//   - It may import engine/store, engine/storage, engine/query,
//     engine/value, engine/agg (for its PanicError: a panic on a
//     partition's worker becomes the request's error) and shard; never
//     engine (layout_test.go).
//   - It speaks no MongoDB error codes: what a filter or projection
//     raises, and a blocking sort past its memory limit, go through the
//     Errors a Planner is given, which the command layer implements with
//     its codes.
//   - It keeps no global state: limits are constants of MongoDB's and
//     everything else is passed in.
package plan
