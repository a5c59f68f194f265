// Package store keeps Parsec's catalog, documents and counters in one Badger
// database per node.
//
// Contract: store knows databases, collections, raw BSON documents and
// their keys; it knows nothing of commands or MongoDB error codes. Its
// errors are the typed values in errors.go (ErrNotFound, ErrExists,
// ErrDuplicateKey, ...), wrapped with context. Every method is safe for
// concurrent use. Byte slices returned by a Txn are valid only inside the
// transaction.
//
// # Key layout
//
// All keys start with a one-byte space tag and a slash:
//
//	m/db/<db>                         -> database metadata (BSON)
//	m/coll/<db> 0x00 <coll>           -> collection metadata (BSON), incl. its id
//	m/seq/coll                        -> last collection id handed out (uint32 BE)
//	m/boot                            -> boot counter (uint64 BE), +1 per open
//	d/<collID:4><hash:8><shardKey><id> -> document (raw BSON)
//	c/<collID:4>b                     -> counter base (3 x int64 BE: docs, data bytes, key bytes)
//	c/<collID:4>d<boot:8><seq:8>      -> counter delta written by one transaction
//
// collID is a uint32, big endian, never reused, so a dropped collection's
// leftovers can never be mistaken for a new one's. hash is the 64-bit hash of
// the document's shard-key value (0 for unsharded collections, whose
// shardKey part is empty). shardKey and id are encoded by value.EncodeKey: order
// preserving and self-delimiting, so documents of a collection sort by
// (hash, shard key, _id) and a prefix scan over d/<collID> visits them in
// that order.
//
// # Invariants
//
//  1. A document key exists iff the document exists; its counters are
//     changed in the same Badger transaction as the document.
//  2. Counters are never read-modify-written by writers: each transaction
//     writes one fresh delta key, so concurrent writers never conflict on
//     counters. Fold, run by readers when deltas pile up, sums deltas into
//     the base and deletes them in one transaction. The sum of base and
//     deltas is therefore exact after any crash.
//  3. Every document write reads its collection's catalog key, so a write
//     racing a drop or rename of its collection fails with a conflict and
//     is retried against the new catalog instead of leaving orphans.
//  4. Replace, Modify and Delete read the key they write and fail with ErrNotFound
//     when it holds no document, so counters cannot be decremented for a
//     document that is not there, and two transactions deleting the same
//     document conflict instead of both counting the deletion.
//  5. Background folds (started by Counts) are waited for by Close, which
//     then folds every collection once more.
//
// # Durability
//
// A committed transaction is in Badger's write-ahead log (a memory-mapped
// file) before Commit returns, so it survives the process being killed.
// Sync additionally fsyncs, and is what `j: true` waits for; concurrent
// callers share one fsync. A background loop fsyncs every SyncInterval.
package store
