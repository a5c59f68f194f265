// Package cluster replicates Parsec's data across nodes: every group (one
// per physical partition, one for the catalog) is a dragonboat Raft shard
// of replicas, and each node's replicas apply their group's log into that
// node's one Badger database.
//
// Contract: consensus is dragonboat's (Raft logs live in its own log
// store under <dir>/raft); this package only defines what an entry means
// and applies it. A StateMachine owns a fixed set of key spans of the
// node's Badger and writes nothing outside them except its own metadata
// keys. Every replica that applies the same log from the same state
// reaches the same bytes in its spans: Update reads nothing but the
// entries and the state (no clock, no randomness). cluster imports
// nothing of Parsec but engine/kv, the seam it implements (Replicated,
// kv.go: engine/store's document layer runs on a group through it), and
// badgerkv's view of a Badger transaction. `parsec serve --initial-members`
// (clusterserve.go, groups.go) runs a group per physical partition and
// one for the catalog, through a routed seam (Node.Routed) that commits
// each transaction in the group its keys belong to.
//
// # Entries
//
// An entry is one Batch: a version byte, then writes in order:
//
//	01 | op*
//	op = 'p' uvarint(len) key uvarint(len) value      put
//	   | 'd' uvarint(len) key                         delete
//	   | 'a' uvarint(len) key uvarint(n) n x int64 BE  add to a counter vector
//	   | 'e' uvarint(len) key 00                      expect the key absent
//	   | 'e' uvarint(len) key 01 uvarint(len) value   expect the key to hold value
//	   | 'h' uvarint(len) key 01 digest               expect the key's value to have digest
//
// A digest is SHA-256 of the value cut to 16 bytes (ValueDigest): the
// replicated key-value store (KV) guards what a transaction read with
// digests, so a read-modify-write of a large document costs 16 bytes of
// guard, not the document again.
//
// A counter vector is a value of n big-endian int64s (engine/store's
// counter values have this shape); 'a' adds fieldwise, treating an absent
// key as zeros. An 'e' or 'h' reads the key as the batch has left it so far; if
// it fails, the whole batch writes nothing (ResultConflict). Every key
// must lie in the group's spans.
//
// # Invariants
//
//  1. An entry is applied whole or not at all. A batch whose expectation
//     fails writes nothing (ResultConflict). A batch that is malformed,
//     of an unknown version, writes outside the spans or adds to a value
//     that is not a counter vector is rejected (Result.Value
//     ResultRejected, the reason in Result.Data) and writes nothing; the
//     decision depends only on the entry and the state, so every replica
//     rejects it alike. Its index still counts as applied.
//  2. The applied index is stored in the same Badger transaction as the
//     writes of the entries up to it: r/a<shardID:8> -> index (uint64 BE).
//     Update commits whole entries per transaction (one for the whole
//     batch dragonboat hands it, more only when Badger's transaction
//     limit demands), so Badger always holds the result of a prefix of
//     the log and its index. Open returns that index and dragonboat
//     replays only what follows: a restart re-applies nothing.
//  3. Writes are in Badger's write-ahead log when Update returns but are
//     fsynced only by Sync (dragonboat calls it before every snapshot,
//     and compacts the log only up to a snapshot) or Badger's own syncs;
//     a crash may lose a suffix of applied entries together with their
//     index, never a part of one, and the Raft log still holds them.
//  4. Groups sharing a node's Badger own disjoint spans (Node.StartGroup
//     refuses overlaps); no span may overlap the metadata prefix r/,
//     which no engine/store key uses.
//
// A group started with a Watch prefix counts, per node, the commits of
// entries that write under it, snapshot restores and restarts
// (Node.Generation): a reader caching what is under the prefix (a
// standby's catalog) knows when to read it again.
//
// # Snapshots
//
// PrepareSnapshot opens a Badger read transaction while Update cannot
// run, so it sees exactly the state at the applied index; SaveSnapshot
// streams the spans from it in key order (format in snapshot.go) with the
// applied index in the header. RecoverFromSnapshot writes the marker
// r/s<shardID:8>, deletes the spans but the observed keys, writes the
// snapshot's keys (its observed keys overwrite the replica's), then
// deletes the observed keys the snapshot lacked, stores the applied index
// and removes the marker in one commit. Open finding the marker clears
// the spans the same way, judging ownership by the observed keys it
// loads first, and returns 0, so an interrupted restore is redone and
// never mixes two states, and never deletes the keys of a group split
// off the replica's range since it was created.
//
// # Reads
//
// Lookup answers GetQuery, ScanQuery (bounded, forward or reverse) and
// AppliedQuery from the replica's state. Node.Read runs them linearizably
// through ReadIndex (SyncRead) or locally and possibly stale (StaleRead).
//
// A routed store (Node.Routed) whose node holds no replica of some groups
// reaches them through Far, which a node holding one serves: a Get, and
// an iterator that merges the node's own keys with pages of ScanQuery
// from each far group (fariter.go), are linearizable but not one
// snapshot with the node's replicas; a commit to a far group is proposed
// by the holder, with the same errors as Propose. Keys a replica moved
// away left in the node's Badger (until it dropped them) are skipped.
//
// # Cost
//
// Raft logs live in tan, dragonboat's log-structured log store: one
// append and one fsync per Raft update, no memtable flushes or
// compactions (the pebble log store rewrote every entry again in its
// flushes and compactions, about a sixth of a follower's CPU under
// inserts). A node whose logs an earlier version kept in pebble keeps
// using pebble (dragonboat opens a log store only as the kind it was made
// with). A node runs about 170 goroutines (about 300 with pebble) and
// keeps tan's encoding buffers to 16 x 1 MB. At the default timing (RTT
// 10 ms, a heartbeat every 2 RTTs, an election after 20) three idle nodes
// on one machine use about 6-7% of one core, and each idle group about
// 0.7% more (all three replicas); groups started with Quiesce stop
// heartbeating when idle (20 idle groups: 11% instead of 21%).
//
// A write costs, beyond the leader's own work, per Raft update (one for
// all the entries proposed since the last): a log append and fsync on
// every replica, a message to each follower and its answer; and per entry
// its Badger writes on every replica. Concurrent proposals already share
// updates: with 16 writers inserting 1 KB documents a follower fsyncs
// once for 6-9 entries. Combining concurrent batches into one entry
// before proposing (at most one or two such entries in flight) made
// entries 5-8 times fewer, but the replicas' CPU per insert did not drop
// and throughput fell by a third: it leaves dragonboat fewer proposals to
// pipeline, and per-entry costs are small beside per-update ones.
//
// What dragonboat itself costs here is measured beside it: the bench's
// cluster section (clusterRaftAlone) runs three processes with a group
// whose state machine only counts, and 16 goroutines in the leader
// proposing 1,200-byte entries. On two shared cores that commits
// 4,800-6,700 entries a second (0.6-1.1 times the single server's
// insertOne at 16 clients, measured in the same run) at 170-275 us of
// CPU per commit for the three processes, where an insert costs the
// cluster's three nodes 0.85-1.1 ms. The difference is Parsec's own work
// on each node, and the time it adds to each write's trip: at 16 clients
// a follower fsyncs once for 5-6 entries, dragonboat alone once for 12;
// a proposal waits 8-10 ms for its entry to be applied on the leader
// (3 ms alone), of which about 1.1 ms is the leader's apply of the
// entry's commit (Badger reads for the batch's expectations, the
// writes, and Badger's commit, about 0.4 ms). Per insert a replica
// applies eight writes (the document, its change-log record, the
// retryable-write and session records, the counters) and two
// expectations (the writer's fence and the new document's absence);
// within one Badger commit a key is read once (the fence, once for all
// the commit's entries). A group that shares its spans (GroupConfig.Owns)
// must not overwrite a key another group owns, and reading each key
// before its put to judge the value there was a fifth of a follower's
// CPU under inserts (skiplist searches in memtables of random keys).
// Every Parsec key but an index entry's names its owner itself
// (GroupConfig.OwnsByKey), so a replica judges the value it puts instead:
// an insert now reads the new document's absence and, once per commit,
// the fence and nothing else (BenchmarkApplyInserts: 36-49 against 54 us
// per insert over 30,000 inserts, 94 against 119 us over 1,000,000), and
// the cluster's CPU per insert at 16 clients fell from 1.0-1.14 ms to
// 0.82-0.94 ms.
//
// Messages between nodes go through Parsec's own transport
// (transport.go, dragonboat's Expert.TransportFactory; dragonboat's
// batching, ordering, retries and snapshot chunking are unchanged). Its
// TCP transport writes each message as three writes (a magic number, a
// header, the payload) and reads it as three, and between processes of
// one machine each is a trip through the network stack and often a
// wake-up: a follower made 4-7 write calls per Raft update. With one
// framed write per message and reads through a buffer it makes 2 (the
// answer and the log append) and half the reads, and in eight
// alternating runs the cluster's CPU per insert was about 8% lower (843
// against 920 us on average) and its inserts 0.22-0.31 against
// 0.22-0.26 times the single server's.
//
// tan fsyncs every Raft update that saves entries or changes the term or
// vote (it has no per-entry choice), and the three nodes of the bench
// share one disk. With the log files' fsync made a no-op, as a
// measurement, the cluster's inserts at 16 clients went from 0.25-0.26 to
// 0.36-0.41 times the single server's in three alternating pairs of runs,
// and the cluster's CPU per insert from 369-453 to 294-329 us: without
// the wait for the disk, more entries share each update. So the log's
// fsync of entries is deferred (logsync.go, NodeConfig.LogSyncInterval,
// serve's --raft-sync-interval, 100 ms): tan still writes every update to
// its file before the node answers for it, which a killed process does not
// lose; the file's Sync only marks it dirty, and a loop fsyncs dirty log
// files once per interval. The log store (logdb.go) fsyncs before it
// returns whatever Raft's safety needs on disk: a new term or vote, a
// snapshot, a membership change. A write with j: true is made durable by
// a durable barrier (an entry of version 2, empty) in the groups its store
// proposed to lately: a replica fsyncs its log before it saves one, so
// when the barrier commits a majority has the write on disk. The single
// server acknowledges before its fsync too (Badger's log, fsynced every
// 100 ms), so both now compare alike. After a power loss a node's Badger
// may hold entries applied from a log suffix the log lost (Badger writes
// tables on its own schedule); dragonboat's on-disk state machine skips
// the entries up to the index Open returns (rsm's entryInInitDiskSM), so
// the leader's sending them again applies nothing twice.
//
// tan, though, fsynced more than that: dragonboat leaves an update's
// State empty when term, vote and commit index are unchanged, and tan
// took the empty State for a change to term 0, writing it and syncing,
// then syncing again at the next update carrying the real state. A
// follower receiving entries one at a time synced three times per entry
// (the entry, the commit index moving, an update of messages only),
// about twice per entry under one client's inserts. The log store Parsec
// hands dragonboat (logdb.go) fills an empty State with the replica's
// last one, so an update syncs only when it saves entries or a snapshot
// or changes term or vote: 50 entries saved as a follower saves them
// take 50 fsyncs instead of 150 (TestLogStoreSyncsEntriesOnly). One
// client's inserts went from 451-581 to 647-694 a second (bench -only
// cluster); at 16 clients concurrent proposals already shared their
// updates' fsyncs (one per 10 entries on a follower), and the gain is
// smaller.
//
// # Groups sharing spans
//
// Groups may share spans when each judges, with GroupConfig.Owns, which
// keys of them are its own, by key and value (the physical partitions of
// a collection share its index entries' span: an index entry belongs to
// the partition of the document its value names). A group applies,
// reads, snapshots and restores only the keys it owns, and rejects a
// batch touching another's. State that ownership depends on (a range a
// split narrows) lives in keys the group observes (GroupConfig.Observe,
// OnApply): an entry writing one ends its Badger commit, and the next
// entries are judged with the new state; a snapshot filters with the
// ownership as of its point (GroupConfig.Freeze).
//
// # Moving a replica
//
// Every node may hold a replica of a group under a replica ID of its
// own; a replica moves from node A to node B while the group takes
// writes:
//
//  1. AddNonVoting(id, B's address) through a member, then StartGroup on
//     B with Join and NonVoting. A non-voting member receives the log or,
//     when the log is compacted, a snapshot, but neither votes nor counts
//     toward a quorum. dragonboat requires a replica that joined
//     non-voting to start non-voting every time (as a voter it panics
//     replaying its own addition), so the node marks it, r/v<shardID:8>
//     -> replica ID, durably before the first start, and later starts of
//     that replica are non-voting whatever the caller says; once the
//     membership it loads (from a snapshot or the log) names it a voter,
//     dragonboat makes it a follower.
//  2. Catch-up: dragonboat does not tell a leader's node what a remote
//     replica applied. The mover takes CommitIndex from a caught-up
//     member (a ReadIndex round: at least the commit index when it began)
//     and B's node waits until its own replica applied that far
//     (WaitApplied, or polling Applied).
//  3. AddReplica with the same ID and address promotes it to a voter;
//     then RemoveReplica of A's replica. Each returns once the membership,
//     read linearizably, shows it, asking again when a request is lost.
//  4. DropGroup on A: it refuses a replica the group still counts (when A
//     can read the membership), makes r/d<shardID:8> -> replica ID
//     durable, stops the replica, removes dragonboat's data of it, deletes
//     the keys of the group's spans that its Owns accepts (other groups'
//     keys in shared spans stay) in batches of bounded size, and in one
//     last commit its Observe keys, r/a, r/s, r/v and r/d. Every step can
//     be done again: a crash after the mark leaves it (DroppingGroups
//     lists it), and StartGroup of the group, or FinishDrop with the
//     configuration the replica would start with, finishes the drop
//     first, judging ownership with the group's observed keys as Badger
//     still holds them (a split's narrowed range), not only the range the
//     configuration was created with.
//
// Replica IDs: dragonboat never lets a removed replica ID back into its
// group (ErrReplicaIDUsed), so a replica moved to a node that held the
// group before takes a new ID: Membership(...).NewReplicaID, one more
// than any ID the group names, members and removed alike. Choosing IDs is
// the caller's, one move of a group at a time.
//
// Catch-up speed: a snapshot is SaveSnapshot's stream, cut by dragonboat
// into 2 MB chunks, written to files on the receiver and then restored.
// Locally SaveSnapshot streams 20 MB of 4 KB values at about 700 MB/s
// warm (70-120 MB/s right after the writes, beside Badger's memtable
// flushes) and RecoverFromSnapshot restores them at 180-260 MB/s; the
// whole catch-up of a 20 MB group by a fourth loopback node under writes,
// on two shared cores running four nodes, took 0.4-1.1 s (18-48 MB/s).
// A 101 MB partition of 1 KB documents (314,788 records with its _id
// index entries and change-log events) between server processes: the
// leader streams it in 1.1-1.2 s, the target restores it in 3.3-3.5 s,
// as fast as Badger alone takes in the same documents in a database of
// its own on the same machine at the same time (2.8-3.8 s; 1.6-1.8 s on
// an idle machine): its one write goroutine inserts every record into the
// memtable's skiplist and write-ahead log. dragonboat restores a
// snapshot only once it received all of it, so a move takes at least
// the stream and that (`bench -only elastic` measures both). Badger's
// bulk path that bypasses the write goroutine (StreamWriter, also in
// its incremental mode) blocks every write of the database, stops its
// compactions and replaces its transaction oracle: not for a node whose
// other replicas keep serving.
//
// The leader often streams a large snapshot a second time beside the
// restore: it learns the stream ended when it sent the last chunk, and
// 100 ms later sends the target entries after the snapshot; a target
// that has not installed the snapshot yet refuses them, and the leader,
// finding the entries it needs compacted, sends another. The target
// installs it once the received file is synced; receivingFS starts the
// writeback of each chunk as it is written, which shortened that sync
// (from 0.26 to 0.16 s for 128 MB between stream end and restore) but
// does not always win the race. Refusing the second stream from
// SaveSnapshot would count as a failed stream against the target's
// address in the transport's circuit breaker, so it is left alone.
//
// # Exactly once
//
// Node.Propose uses dragonboat's no-op session. A proposal forwarded to
// a leader that just lost its place is dropped without an answer, so it
// times out with ErrUnknownOutcome and may or may not have applied; 'a'
// ops are not idempotent. A batch that expects a key it creates to be
// absent applies at most once and can be proposed again (a conflict on
// the retry means the first attempt applied).
package cluster
