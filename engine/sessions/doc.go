// Package sessions keeps the state that outlives one command: MongoDB's
// logical sessions, the bookkeeping of their retryable writes, their
// multi-document transactions, the snapshots that snapshot reads share,
// open cursors, and the cluster clock that names snapshots and orders a
// causally consistent session's reads. The engine runs the commands
// (parsing, replies, MongoDB error codes); this package holds what those
// commands leave behind for the next one, and enforces the rules below.
//
// What it keeps, and where:
//
//   - Table (table.go): the logical sessions that ran retryable writes or
//     transactions, by session id (lsid.id, 16 bytes), each with the
//     highest txnNumber seen and its transaction.
//   - Attempt and Outcome (records.go): one attempt of a retryable write,
//     and what each of its statements did, recorded through
//     storage.Txn.PutSessionStatements in the same storage transaction as
//     the documents the statements changed.
//   - Transaction (transaction.go): a session's multi-statement
//     transaction over a storage.Transaction, and its state.
//   - Snapshots (snapshots.go): storage snapshots named by cluster time.
//   - Cursors (cursors.go): open cursors by id.
//   - ClusterClock (clock.go): cluster times.
//
// # Invariants
//
//  1. One attempt of a session at a time: a Session is used only between
//     Table.Checkout (or TryCheckout) and Session.Release; a second
//     Checkout of the same session waits until the first is released (or
//     its context ends). The fields of a Session other than its last use
//     belong to whoever holds the checkout. A session removed from the
//     table while a checkout waited is never handed out: the waiter gets
//     a fresh one.
//  2. A checkout of a session whose records are in storage (from before a
//     restart) first reads its head (txnNumber, statement span), so a
//     txnNumber lower than one ever seen is refused (TooOldError), and a
//     retry sees every statement its first attempt recorded.
//  3. A statement's outcome is recorded with its writes, in one storage
//     Update or Transaction: a change and its record exist both or
//     neither. An Attempt answers Executed for exactly the statements of
//     its txnNumber that were recorded; a newer txnNumber ignores older
//     records (and deletes them once more than StaleRecordsKept may be
//     left).
//  4. A session has at most one transaction in progress; a newer
//     txnNumber (a transaction or a retryable write) aborts it. A
//     transaction leaves the active state exactly once, by Commit or
//     Abort (a failed commit aborts), and counts among the table's open
//     transactions while active. An aborted transaction withdraws the
//     collections it created.
//  5. Time-outs: a session unused for SessionTimeout is forgotten, in
//     memory and in storage (Table.Expire); a transaction is aborted once
//     it has been open for its lifetime (the engine's
//     transactionLifetimeLimitSeconds), by a timer of the table's
//     AfterFunc; a snapshot unused for SnapshotWindow is closed
//     (Snapshots.Expire); a cursor idle longer than the registry's
//     timeout, not in use and not noCursorTimeout, is closed
//     (Cursors.ReapIdle). Clocks are passed in; nothing here reads the
//     time itself.
//  6. A cursor serves one request at a time (Cursors.Checkout), and its
//     source is closed exactly once, when the cursor goes however it
//     goes: exhausted, killed, reaped, or with its session, connection or
//     collection — after the request that holds it, if one does.
//  7. Cluster times only grow: each Next is later than every time handed
//     out before.
//
// Errors are plain Go errors: this package's typed errors (errors.go)
// say what went wrong with the fields a message needs, and the engine
// turns them into MongoDB's codes and messages.
//
// Contract: package sessions may import engine/storage, engine/store (its
// data types) and engine/value, and nothing else of Parsec: never the
// engine (layout_test.go).
package sessions
