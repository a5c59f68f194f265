// Package storage is the seam between Parsec's command layer and the place
// its data lives: the interfaces below are everything the engine asks of
// storage, and the engine holds nothing else (engine.Config.Store is a
// Storage). Its implementation is engine/store's document layer (Local),
// which keeps its keys through the narrower seam of engine/kv: one Badger
// database in this process (engine/kv/badgerkv), or a replicated store
// where each physical partition is a consensus group.
//
// The vocabulary is store's plain data types: catalog entries
// (*store.Collection, *store.Database, store.Index), counters
// (store.Counts), key ranges (store.KeyRange) and the key builders of
// engine/store/keys.go, which fix where a document of a physical
// partition lives. The methods are grouped by who will serve them in a
// cluster: Catalog (the catalog's group), Data and SessionRecords (the
// partitions' groups), Users (the catalog's group), Node (the local
// process).
//
// Contract: package storage may import engine/store and engine/value and
// nothing else of Parsec (layout_test.go).
//
// # What the engine relies on
//
// Every implementation keeps these; storagetest runs them against one.
//
//  1. One Update is atomic: every write its function made is visible after
//     it returns nil, none is if it returns an error or the process dies
//     before it returns. Its documents, their index entries, the
//     collection's and logical partitions' counters and the session
//     records written with PutSessionStatements change together.
//  2. Read your writes: inside one Update (and one Transaction) a Get,
//     ScanRanges or IndexReader sees the writes made before it in the same
//     function, and nothing written by others after the function began.
//  3. Two Updates that write the same document serialise: when another
//     commit changed what an Update read or wrote, the Update runs its
//     function again on the new state (so the function has no effect
//     outside its Txn), and fails with store.ErrConflict only when it
//     keeps losing or a Transaction holds the document too long. So
//     counters are never decremented twice and a unique index never takes
//     two owners.
//  4. A View sees one committed state: every write acknowledged before the
//     View began, and no part of a write that commits while it runs.
//  5. A Snapshot is that same state kept open: each of its Views sees what
//     the first saw, until Close.
//  6. A Transaction holds its writes until Commit; its Views and Updates
//     see them, nothing else does; Abort (or a commit that fails) leaves no
//     trace of them. Collections it created are pending (MarkPending)
//     until Publish.
//  7. Catalog changes (create, drop, rename, index and throughput changes,
//     splits) are atomic and durable when they return; a write racing one
//     either commits before it or fails with store.ErrCollectionChanged,
//     and the engine then re-reads the catalog and retries.
//  8. Everything an Update or a catalog change acknowledged survives a
//     crash (Sync is for the callers that ask for j: true or fsync).
//
// Byte slices handed out by a Txn are valid only until its function
// returns.
package storage

import (
	"context"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Storage is everything the engine needs of storage.
type Storage interface {
	Catalog
	Data
	SessionRecords
	Users
	Node
	ChangeFeed
}

// Catalog is databases, collections, their indexes, shard keys,
// throughput and partition maps. Lookups are in memory and never fail;
// changes are durable when they return.
type Catalog interface {
	Databases() []string
	Database(name string) *store.Database
	Collections(db string) []*store.Collection
	Collection(db, name string) *store.Collection

	CreateCollection(db, name string, options bson.Raw) (*store.Collection, error)
	CreateCollectionWith(db, name string, nc store.NewCollection) (*store.Collection, error)
	EnsureCollection(db, name string) (c *store.Collection, created bool, err error)
	DropCollection(db, name string) error
	DropDatabase(db string) error
	RenameCollection(fromDB, from, toDB, to string, dropTarget bool) error

	// Views are read-only namespaces defined by a pipeline over another
	// namespace of their database; a name is a collection or a view,
	// never both (store.ErrExists, store.ErrIsView).
	ViewDefinitions(db string) []*store.ViewDefinition
	ViewDefinition(db, name string) *store.ViewDefinition
	CreateView(v store.ViewDefinition) (*store.ViewDefinition, error)
	ModifyView(v store.ViewDefinition) (*store.ViewDefinition, error)
	DropView(db, name string) error

	CreateIndexesWithProgress(ctx context.Context, c *store.Collection, ixs []store.Index, p *store.BuildProgress) (*store.Collection, error)
	DropIndex(c *store.Collection, name string) (*store.Collection, error)
	SetIndexOptions(c *store.Collection, name string, hidden *bool, expire *int64) (*store.Collection, error)
	SetPrepareUnique(c *store.Collection, name string, on bool) (*store.Collection, error)
	// SetOptions replaces a collection's create options (its document
	// validation); writers holding the old entry find it stale.
	SetOptions(c *store.Collection, options bson.Raw) (*store.Collection, error)
	// MakeUnique converts an index to unique, or with dryRun lists the
	// values that stop it.
	MakeUnique(c *store.Collection, name string, dryRun bool) (*store.Collection, [][]bson.RawValue, error)

	ShardCollection(db, name string, spec shard.Spec, partitions int, t store.Throughput) (*store.Collection, error)
	SetThroughput(c *store.Collection, t store.Throughput, partitions int) (*store.Collection, error)
	SetDatabaseThroughput(name string, t store.Throughput, create bool) (*store.Database, error)

	// A collection a transaction creates is pending until the transaction
	// publishes it (or withdraws it when it aborts): others do not write
	// to it meanwhile.
	MarkPending(id uint32) error
	Pending(id uint32) bool
	Published(id uint32)
	Withdraw(db, name string, id uint32) error
}

// Data is documents and their indexes and counters, kept per physical
// partition: key ranges of a collection (store.KeyRange, the key builders
// of keys.go).
type Data interface {
	// View runs fn on one committed state (invariant 4).
	View(fn func(Txn) error) error
	// Update runs fn and commits what it wrote atomically (1–3).
	Update(fn func(Txn) error) error
	// Begin starts a multi-statement transaction (6).
	Begin() (Transaction, error)
	// Snapshot keeps the state of now open for later Views (5).
	Snapshot() (Snapshot, error)

	// Counts are a collection's exact counters.
	Counts(c *store.Collection) (store.Counts, error)
	// PartitionStats are the physical partitions' counters, the top ones
	// by size when top > 0.
	PartitionStats(c *store.Collection, top int) ([]store.PartitionStats, error)
	// LogicalPartitionDocs counts the documents of some logical partitions.
	LogicalPartitionDocs(c *store.Collection, lps []store.KeyRange) (int64, error)
	// ShardKeyOf is the shard-key value of a logical partition.
	ShardKeyOf(c *store.Collection, lp store.LogicalPartition) (v bsoncore.Value, ok bool, err error)
	IndexSizes(c *store.Collection) (map[string]int64, error)
	ValidateIndexes(c *store.Collection) ([]store.IndexCheck, error)
}

// Txn reads and writes documents inside one View, Update, Snapshot View
// or Transaction.
type Txn interface {
	// Get is a document by its key (store.ErrNotFound when there is none).
	Get(key []byte) ([]byte, error)
	// Scan visits the collection's documents from start in key order;
	// ScanRange from start up to end; ScanRanges each range in turn. fn
	// returns false to stop.
	Scan(c *store.Collection, start []byte, fn func(key, doc []byte) (bool, error)) error
	ScanRange(c *store.Collection, start, end []byte, fn func(key, doc []byte) (bool, error)) error
	ScanRanges(c *store.Collection, ranges []store.KeyRange, fn func(key, doc []byte) (bool, error)) error
	// IndexReader reads one index's entries, seeking as its Scans ask.
	IndexReader(c *store.Collection, ix *store.Index, reverse bool) IndexReader

	// Insert, Replace, Delete and Modify write one document with its index
	// entries and counters; Replace, Delete and Modify fail with
	// store.ErrNotFound when the key holds no document.
	Insert(c *store.Collection, key, doc []byte) error
	Replace(c *store.Collection, key, doc []byte, oldSize int) error
	Delete(c *store.Collection, key []byte, oldSize int) error
	Modify(c *store.Collection, key []byte, fn func(doc []byte) ([]byte, error)) error
	// PutSessionStatements records retryable writes' outcomes with the
	// writes themselves.
	PutSessionStatements(lsid []byte, head store.SessionHead, stmts []store.SessionStatement) error
	// IndexWork is what the writes so far did to secondary indexes (for
	// their request-unit charge).
	IndexWork() store.IndexWork
	// Plan reports whether a write of key in c may join the transaction
	// (a cluster commits each transaction in one physical partition);
	// writers gathering many documents end a transaction before a key
	// that does not fit.
	Plan(c *store.Collection, key []byte) bool
}

// IndexReader reads one index; Close releases it.
type IndexReader interface {
	Scan(start, end []byte, fn func(store.IndexEntry) (bool, error)) error
	Close()
}

// Transaction is a multi-statement transaction (invariant 6).
type Transaction interface {
	View(fn func(Txn) error) error
	Update(fn func(Txn) error) error
	// Writes reports whether the transaction wrote to the collection.
	Writes(collID uint32) bool
	// Publish makes a collection the transaction created visible to all.
	Publish(collID uint32) error
	Commit() error
	Abort()
}

// Snapshot is a committed state kept open (invariant 5).
type Snapshot interface {
	View(fn func(Txn) error) error
	Close()
}

// SessionRecords are retryable writes' records per logical session.
type SessionRecords interface {
	SessionHead(lsid []byte) (head store.SessionHead, ok bool, err error)
	SessionStatements(lsid []byte, txnNumber int64) (map[int32][]byte, error)
	ResetSession(lsid []byte, head store.SessionHead) error
	DeleteSession(lsid []byte) error
	IdleSessions(before time.Time) ([][]byte, error)
}

// Users are the users of access control (documents engine/auth defines).
type Users interface {
	User(db, name string) ([]byte, error)
	Users(db string, all bool) ([][]byte, error)
	PutUser(db, name string, doc []byte, create bool) error
	DeleteUsers(db, name string) (int, error)
	HasUsers() (bool, error)
}

// ChangeFeed is the change log: every committed write's events, in the
// transaction of the write, ordered by commit time (store/changes.go).
type ChangeFeed interface {
	// ChangesVisible is the commit time up to which every event is
	// committed, and a channel closed when it may have moved.
	ChangesVisible() (uint64, <-chan struct{})
	// ReadChanges visits the events from `from` up to time upTo.
	ReadChanges(from store.ChangePos, upTo uint64, fn func(*store.ChangeEvent) (bool, error)) error
	// ChangeHorizon is the time before which events may be trimmed.
	ChangeHorizon() uint64
	// LastChangeTime is the latest commit time handed out.
	LastChangeTime() uint64
	// SetChangeClock sets where commit times come from (the cluster
	// clock) and the clock retention measures ages by.
	SetChangeClock(next func(after uint64) uint64, now func() time.Time)
	// SetChangeRetention bounds the log by age and size (0: unbounded).
	SetChangeRetention(age time.Duration, size int64)
	// LogModify records a collMod that changed nothing in the catalog.
	LogModify(c *store.Collection) error
}

// Node is this process's own storage: durability, disk, statistics and
// the limits and hooks the engine sets at start.
type Node interface {
	Sync() error
	// Journal makes every committed write durable as j: true means it
	// (store.Store.Journal).
	Journal() error
	InMemory() bool
	DiskStatus() store.DiskStatus
	EngineStats() store.EngineStats
	Limits() store.Limits
	SetLimits(l store.Limits)
	// SetMatcher gives the store the engine's filter matcher (partial
	// indexes).
	SetMatcher(m store.Matcher)
	// Splits are the partition splits since a time; SplitCount counts a
	// collection's; SettleSplits waits for the ones under way.
	Splits(since time.Time) []store.SplitEvent
	SplitCount(db, coll string) int64
	SettleSplits(ctx context.Context) error
	// CommitSignal is closed when the next commit that writes collection
	// c is visible: tailable cursors wait on it for new documents.
	CommitSignal(c *store.Collection) <-chan struct{}
}
