// Package store keeps Parsec's catalog, documents and counters as the
// keys of one key-value store per node (engine/kv: Badger, through
// engine/kv/badgerkv). It is the document layer: it turns documents into
// keys, keeps their index entries and counters in step, checks unique
// indexes, and commits each write as one kv transaction; it never names
// Badger.
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
// All keys start with a one-byte space tag and a slash; keys.go builds
// every one of them, and its OwnerOf says where each belongs (a physical
// partition's point, the catalog, or with the documents of its
// transaction):
//
//	m/db/<db>                          -> database metadata (BSON), incl. shared throughput
//	m/coll/<db> 0x00 <coll>            -> collection metadata (BSON): id, epoch, shard key
//	                                      (its fields), partition map, throughput
//	m/view/<db> 0x00 <view>            -> a view (BSON): the namespace it reads and its pipeline;
//	                                      no collection id, so no document, counter or index key (views.go)
//	m/user/<db> 0x00 <name>            -> a user (BSON, opaque to the store: engine/auth defines it)
//	m/pending/<collID:4>               -> a collection created by a transaction still open; its commit deletes the key (pending.go)
//	m/reshard/<db> 0x00 <coll>         -> a resharding in progress or left to clean up (BSON: Resharding, reshard.go)
//	m/reshardcopy/<db> 0x00 <coll> 0x00 <range:1> -> one range of a resharding's copy, while it copies (BSON: CopyRange)
//	m/seq/coll                         -> last collection id handed out (uint32 BE)
//	m/boot                             -> boot counter (uint64 BE), +1 per open
//	d/<collID:4><point:8><shardKey><id> -> document (raw BSON)
//	d/<collID:4><0:8><seq:9><id>       -> document of a capped collection: seq, its insertion
//	                                      sequence, stands where a shard key would (capped.go)
//	c/<collID:4>k<point:8>b            -> collection counter base (int64 BE: docs, data bytes, key bytes, and secondary index bytes when not 0)
//	c/<collID:4>k<point:8>d<boot:8><seq:8> -> collection counter delta written by one transaction
//	c/<collID:4>l<point:8><shardKey>b  -> logical-partition counter base (sharded collections)
//	c/<collID:4>l<point:8><shardKey>d<boot:8><seq:8> -> logical-partition counter delta
//	c/<collID:4>s                      -> a capped collection's last insertion sequence (uint64 BE)
//	x/<collID:4><ixID:4><ixKey>[<point:8><shardKey><id>] -> <point:8><shardKey><id>: a secondary index entry (indexes.go; unique indexes leave the bracketed suffix out of the key)
//	x/<collID:4>00000000<id><point:8><shardKey><id> -> <point:8><shardKey><id>: the _id index of a sharded collection (idindex.go)
//	u/<collID:4><ixID:4><ixKey>        -> never stored: a guard each write of ixKey to an index being made unique reads and deletes (uniqueconv.go)
//	s/h<lsid:16>[<home:12>]            -> retryable writes: a session's head in one physical partition (sessions.go)
//	s/r<lsid:16><stmtId:4>[<home:12>]  -> retryable writes: one statement's outcome (sessions.go)
//	r/a<shardID:8>                     -> reserved for cluster/: a replicated group's applied index, written with its data (cluster/doc.go)
//	l/e<ts:8><index:4>[<collID:4><point:8>] -> change event (BSON) of the commit at cluster time ts, index-th
//	                                      of it, with its document's collection and point (changes.go)
//	l/r<document key>                  -> the position of the event that names the stored version by reference
//	l/i<ts:8><index:4>[<collID:4><point:8>] -> that version, kept when the document changed
//	l/h                                -> change-log horizon (uint64 BE): events before it may be trimmed
//
// collID is a uint32, big endian, never reused, so a dropped collection's
// leftovers can never be mistaken for a new one's. point is the document's
// place in the point space (shard.Spec.Point of its shard-key value, big
// endian), computed from the key's leading field: MongoDB's hashed-index
// hash with the sign bit flipped when that field is hashed, the first 8
// bytes of its value's key encoding when it is ranged (order preserving:
// the documents of a ranged key sort by it). shardKey is the whole value:
// the field's value, or for a compound key the document of its fields'
// values (shard.Spec.Extract), so that a compound key's logical
// partitions stay apart, and sort by every field, within one point.
// Unsharded collections have point 0 and an empty shardKey. shardKey and id are encoded by value.EncodeKey: order
// preserving and self-delimiting (value.KeyLen finds where one ends), so
// documents of a collection sort by (point, shard key, _id):
//
//	d/ 00 00 00 07 | 3f 1a .. 09 | 0f 45 55 00 01 | 0a 05 80 01 0b 00
//	   collID 7    | point        | shard key "EU" | _id 1
//	               '-------- logical partition --------'
//
// A capped collection's documents sort by insertion sequence instead,
// which is its natural order, and it keeps the _id index of a sharded
// collection to find them by _id (capped.go).
//
// A value whose encoding is longer than value.MaxKeyLen is cut to a
// prefix and a hash (value's package comment), so every document key and
// index entry fits Badger's key limit (MaxKeyBytes; sizes.go refuses what
// still would not): keys of cut values that share the prefix order by
// hash, and an index or collection that has held one is marked
// (cutkeys.go) so that readers sort such reads in memory.
//
// A logical partition (one shard-key value) is a contiguous key range at
// one point, and a physical partition, the points [Min, Max] of the
// partition map, is the key range [d/<collID><Min>, d/<collID><Max+1>).
// A split changes the map in the catalog entry and moves no document.
//
// # Owners
//
// Every stored key belongs to exactly one physical partition or to the
// catalog (OwnerOf), and a key of a partition says which from itself or
// its value, by a point inside the partition: documents, logical-partition
// counters and version markers by their document key's point; index
// entries by their value (the document's <point><shardKey><id>);
// collection counter cells, retryable-write records (home: the first
// point of the partition the writing transaction wrote in) and change
// events and images (their document's point) by a suffix of their key. So
// a split moves no key either: the keys at the points of the new range
// are the new partition's, which is what lets a physical partition be a
// replicated group of its own that a split divides in place. What has no
// document — catalog changes' events, the horizon, the records of a
// transaction that wrote no document — belongs to the catalog. A
// collection's total counts are the sum of all its cells wherever they
// are; a partition folds only the cells at its points (foldRange).
//
// # Counters
//
// Collection counters (documents, data bytes, key bytes) are a base plus
// one delta per transaction. Sharded collections also keep the same three
// counters per logical partition, base plus deltas, under the logical
// partition's <point><shardKey>. A physical partition's counters are not
// stored at all: they are the sum of its logical partitions', read by one
// scan of c/<collID>l from Min to Max (PartitionStats). So a split, which
// only changes the range boundaries, needs no counter re-base: the sums
// over the children's ranges are exact the moment the new map is
// published, and no state can disagree with the map after a crash. The
// cost is reading one key per logical partition for statistics, which
// are rare; writers never read counters except as the size check below
// needs.
//
// The store keeps in memory, per collection written since Open, an
// estimate of each physical partition's size (a tracker: seeded from the
// exact sums, then fed the deltas of every commit). It decides two
// things cheaply and never anything exactly: when a partition may be over
// the size limit (the splitter then decides on exact sums), and when a
// write may be near the logical-partition limit (the write then reads
// its logical partition's exact counters in its transaction).
//
// # Invariants
//
//  1. A document key exists iff the document exists; its collection and
//     logical-partition counters are changed in the same Badger
//     transaction as the document.
//  2. Counters are never read-modify-written by writers: each transaction
//     writes one fresh delta key per collection and per logical partition
//     it changed, so concurrent writers never conflict on counters. Fold,
//     run by readers when deltas pile up (and at Close), sums deltas into
//     the base and deletes them in one transaction. The sum of base and
//     deltas is therefore exact after any crash. One writer sets a base
//     without reading it: a resharding's copy, for a logical partition
//     of its hidden collection that has no counters yet and that no
//     other batch of the copy holds (copyfilter.go), so there is nothing
//     the base could overwrite.
//  3. Every document write holds its collection's fence shared until it
//     commits and checks that its entry (id, epoch, index version) is the
//     published one; a drop, a rename, a re-placement (sharding a
//     collection with data) or an index change holds the fence exclusively
//     (fence.go). A write racing them either commits first or fails with
//     ErrCollectionChanged and is retried against the new catalog, instead
//     of leaving orphans, documents at unsharded keys, or documents an
//     index misses. Secondary index entries change in the transaction
//     that changes their document, after every unique check passed (a
//     refused write leaves the transaction as it was); their bytes count
//     in the document's logical partition (Counts.IndexBytes).
//  4. Replace, Modify and Delete read the key they write and fail with
//     ErrNotFound when it holds no document, so counters cannot be
//     decremented for a document that is not there, and two transactions
//     deleting the same document conflict instead of both counting it.
//  5. Background folds (started by Counts, PartitionStats and the size
//     check) are waited for by Close, which then folds every collection
//     once more.
//  6. The partition map is part of the catalog entry and changes in one
//     transaction (SplitPartition, SetThroughput): after a crash it is the
//     old map or the new one, and either tiles the hash space. Readers use
//     the map of the entry they looked up; since maps only ever refine the
//     same key space, a scan of every range of any map visits each
//     document exactly once.
//  7. A write that would grow a logical partition (an unsharded collection
//     is one) past Limits.LogicalPartitionBytes fails with
//     *LogicalPartitionFullError and writes nothing. Concurrent writers to
//     one logical partition each see the others' committed bytes only, so
//     together they may pass the limit by what they write at once.
//  8. A namespace is a collection or a view, never both: CreateView,
//     CreateCollection, EnsureCollection (ErrIsView) and RenameCollection
//     (ErrIsView for a view target) check both maps under the catalog
//     lock, and DropDatabase drops the database's views with its
//     collections.
//  9. Every transaction that changes a document or the catalog writes
//     its change events (l/e, changes.go) in the same Badger transaction,
//     at a commit time taken just before Badger commits and greater than
//     every commit time taken before it. A reader reads only up to
//     ChangesVisible, the time below every commit still in flight, so it
//     never passes an event that commits later with a smaller time. The
//     horizon l/h is moved forward before events are trimmed: everything
//     before it may be gone, everything after it is still there.
//
// # Change log
//
// The change log is what change streams read (Cosmos DB's change feed).
// An event is a BSON document: op, db, coll, the collection's uuid, the
// document's point (pt, for per-partition feeds), documentKey (dk), the
// document after (doc: inserts, replaces, updates of collections keeping
// images; an insert's or replace's names the stored document instead,
// ref, while it is the current version: changes.go), the document before (pre, when images are kept), the update
// description (ud), a rename's target (tdb, tcoll), a catalog change's
// description (desc), the lsid and txnNumber of a multi-statement
// transaction, and the wall time. Commit times are the cluster clock's
// (SetChangeClock), so they are the clusterTime of the events and compare
// with operation times; at open the clock moves past the last time
// logged. Retention (SetChangeRetention) trims whole commits, oldest
// first, by age and by size.
//
// # Durability
//
// A committed transaction is in Badger's write-ahead log (a memory-mapped
// file) before Commit returns, so it survives the process being killed.
// Sync additionally fsyncs, and is what `j: true` waits for; concurrent
// callers share one fsync. A background loop fsyncs every SyncInterval.
package store
