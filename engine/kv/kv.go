// Package kv is the narrow seam under Parsec's document layer: ordered
// byte keys and values, read and written in transactions. engine/store
// keeps documents, index entries, counters, retryable-write records and
// the catalog as keys of this interface and nothing else; badgerkv
// implements it over one Badger database in this process, and a
// replicated implementation (each physical partition a consensus group)
// implements the same calls: reads from the local replica's applied
// state, writes buffered in the transaction and committed as one batch
// whose expectations are the versions of the keys the transaction read.
//
// Contract: kv imports nothing of Parsec, and nothing but
// implementations of it imports a key-value engine (layout_test.go).
//
// # What the document layer relies on
//
//  1. A write transaction's Sets and Deletes commit atomically: all are
//     visible after Commit returns nil, none is after it returns an
//     error, after Discard, or when the process dies before Commit
//     returns.
//  2. A transaction reads one committed state, the one current when it
//     began, plus its own writes (read your writes), for Get and for
//     iterators alike.
//  3. Commit fails with ErrConflict when a transaction that committed
//     after this one began wrote a key this one read (by Get or by
//     iteration). So read-modify-write is safe: the caller runs its
//     function again on the new state.
//  4. Keys are ordered bytewise; an iterator visits the keys under its
//     prefix in that order (or the reverse) and Seek goes to the first
//     key at or after (reverse: at or before) the one given.
//  5. A WriteBatch is for bulk writes that read nothing (purging a
//     dropped collection): it may commit in several pieces and never
//     conflicts; a crash in the middle leaves some of it done.
//  6. What Commit acknowledged survives a kill of the process; Sync makes
//     it survive the machine's crash too.
//
// Keys belong to physical partitions by their content, not by where
// they are kept: engine/store's OwnerOf (keys.go) says of every stored
// key, from the key and its value, whether it belongs to one place in a
// collection's point space or to the catalog. An implementation that
// keeps physical partitions apart (a cluster's groups) commits each
// write transaction in the one group its keys belong to, refuses one
// whose keys lie in two, and says which group a key is in (Grouped), so
// that a writer of many documents can end a transaction before a key
// of another group.
//
// Slices returned by an Item are valid only until the iterator moves or
// the transaction ends; ValueCopy and KeyCopy make copies.
package kv

import "errors"

// Errors every implementation returns (wrapped or as they are).
var (
	// ErrNotFound: Get of a key that holds nothing.
	ErrNotFound = errors.New("key not found")
	// ErrConflict: Commit lost to a concurrent transaction (invariant 3).
	ErrConflict = errors.New("transaction conflict")
	// ErrTxnTooBig: one transaction wrote more than it can commit at once.
	ErrTxnTooBig = errors.New("transaction too big")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store closed")
	// ErrFenced: another writer took the store over (a replicated group
	// whose new leader claimed it); this one commits nothing more.
	ErrFenced = errors.New("another writer took the store over")
	// ErrUnknownOutcome: a replicated commit whose fate was not learnt
	// (its group's leader changed while it was in flight): it may or may
	// not have committed. Run again, a transaction that guards what it
	// read applies at most once.
	ErrUnknownOutcome = errors.New("commit outcome unknown")
)

// Grouped is a DB that commits each transaction in one of several groups.
type Grouped interface {
	// GroupOf is the group a write of key goes to; known is false when
	// the key alone does not say (it then goes with the transaction's
	// other keys).
	GroupOf(key []byte) (group uint64, known bool)
}

// EachCommitter is a Txn of a Grouped DB that can commit its writes
// group by group, not atomically together (each group's atomically):
// for writes that may land one group at a time and are redone after a
// crash from a record written last.
type EachCommitter interface {
	CommitEach() error
}

// Journaler is a DB whose writes are durable further than Sync makes
// them: Journal returns once every write committed before the call is
// durable where the store judges durability (a replicated store: on a
// majority of the replicas of the groups it wrote to). The write concern
// j: true waits for it; a DB without it is journaled by Sync.
type Journaler interface {
	Journal() error
}

// DB is a key-value store.
type DB interface {
	// NewTransaction begins a transaction, read-only unless update.
	NewTransaction(update bool) Txn
	// View runs fn in a read-only transaction.
	View(fn func(Txn) error) error
	// NewWriteBatch starts a batch of blind writes (invariant 5).
	NewWriteBatch() WriteBatch
	// Sync makes every committed write durable on disk.
	Sync() error
	// Size is the bytes the store holds on disk: its sorted tables and
	// its value log.
	Size() (tables, valueLog int64)
	Close() error
}

// Txn is one transaction.
type Txn interface {
	// Get is the item at key, or ErrNotFound.
	Get(key []byte) (Item, error)
	Set(key, value []byte) error
	Delete(key []byte) error
	NewIterator(opts IterOptions) Iterator
	// Commit writes what the transaction wrote (invariants 1 and 3).
	Commit() error
	// Discard ends the transaction; after Commit it does nothing.
	Discard()
}

// IterOptions choose the keys an iterator visits.
type IterOptions struct {
	Prefix  []byte
	Reverse bool
	// Prefetch reads values ahead of the iterator (for scans that read
	// every value of large entries).
	Prefetch bool
}

// Iterator walks keys in order (invariant 4).
type Iterator interface {
	Rewind()
	Seek(key []byte)
	Valid() bool
	Next()
	Item() Item
	Close()
}

// Item is one key and its value.
type Item interface {
	Key() []byte
	KeyCopy(dst []byte) []byte
	KeySize() int64
	Value(fn func(value []byte) error) error
	ValueCopy(dst []byte) ([]byte, error)
	ValueSize() int64
}

// ReadVersioner is a Txn that tells the version it reads at: every
// commit it sees has a version at or below it, every later commit one
// above (Badger's read timestamp).
type ReadVersioner interface {
	ReadVersion() uint64
}

// VersionedItem is an Item that tells the version of the commit that
// wrote it, comparable with ReadVersioner's (Badger's commit timestamp).
type VersionedItem interface {
	Version() uint64
}

// WriteBatch is a batch of blind writes.
type WriteBatch interface {
	Set(key, value []byte) error
	Delete(key []byte) error
	Flush() error
	Cancel()
}
