package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/logger"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/lni/vfs"
)

// NodeConfig says where a node's replicas live.
type NodeConfig struct {
	// RaftAddress is host:port the node's replicas talk Raft on; it is
	// the node's identity in its groups and must stay the same across
	// restarts.
	RaftAddress string
	// Dir holds dragonboat's own files (Raft logs, snapshots) in Dir/raft.
	Dir string
	// DB is the node's Badger database, shared by all its replicas. The
	// caller opens it before NewNode and closes it after Close.
	DB *badger.DB
	// Sync makes DB's writes durable (nil: DB.Sync); the node's open of
	// DB may have a quicker one (badgerkv's flushes the logs before it
	// takes Badger's lock).
	Sync func() error
	// RTTMillisecond is the round trip between nodes that timing is
	// measured in (heartbeats, elections); 0 means 10, for loopback and
	// LAN.
	RTTMillisecond uint64
	// LogSyncInterval is how long an entry saved in a replica's Raft log
	// may wait for its fsync (logsync.go); 0 fsyncs every update that
	// saves entries before it counts. Entries a write with j: true ends
	// with, votes, term changes, membership changes and snapshots are
	// fsynced before they count either way.
	LogSyncInterval time.Duration
	// DeploymentID keeps nodes of different clusters from talking to each
	// other by mistake; 0 means 1.
	DeploymentID uint64
	// Logger gets a line for each snapshot a replica streams to another
	// or restores (nil: none).
	Logger *slog.Logger
}

// GroupConfig is one group's replica on a node.
type GroupConfig struct {
	ShardID   uint64
	ReplicaID uint64
	// Members, replica ID to raft address, are the initial members when
	// the group is created. A replica the node already holds restarts
	// from its own state and ignores Members; so does one that Joins.
	Members map[uint64]string
	// Join starts a replica added to a running group (AddReplica).
	Join bool
	// NonVoting, with Join, starts a replica added to a running group as
	// a non-voting member (AddNonVoting). The node remembers it: every
	// later start of the same replica is non-voting too, as dragonboat
	// requires of a replica that joined so, even once it is promoted
	// (its membership then makes it a voter as it loads).
	NonVoting bool
	// Spans are the key ranges the group owns in the node's Badger.
	Spans []Span
	// Owns, when set, narrows the spans to the keys it accepts, judged
	// by key and value: groups that each have Owns may share spans (the
	// physical partitions of one collection share its index entries'
	// span, each owning the entries of its documents). The functions of
	// groups sharing a span must accept disjoint keys and must depend on
	// nothing but their arguments, so that every replica judges alike.
	Owns func(key, value []byte) bool
	// OwnsByKey, when set with Owns, reports whether Owns judges key by
	// the key alone (the same answer whatever the value). A replica then
	// puts such a key without reading what it holds first: a value
	// already there has the same owner as the one put.
	OwnsByKey func(key []byte) bool
	// Observe, when set, is a key prefix whose writes the group reports
	// to OnApply (value nil: deleted), in log order, each once the entry
	// writing it is committed to Badger and before the next entry is
	// applied; and once per key under it at every start and after every
	// snapshot restore, from Badger. State that Owns depends on (a
	// range that a split narrows) lives in such keys, so that every
	// replica judges each entry with the state the entries before it left.
	Observe []byte
	OnApply func(key, value []byte)
	// Freeze, when set, is Owns as it judges now, unchanged by later
	// entries: what a snapshot, whose point is fixed before it is
	// written while entries go on applying, filters its keys with.
	Freeze func() func(key, value []byte) bool
	// ElectionRTT and HeartbeatRTT are in RTTs; 0 means 20 and 2 (with
	// the default RTT, a heartbeat every 20 ms and an election after
	// 200-400 ms of silence: slack for a loaded machine's scheduling).
	ElectionRTT, HeartbeatRTT uint64
	// SnapshotEntries is how many applied entries make a snapshot (and
	// let the log before it be compacted, keeping CompactionOverhead
	// entries); 0 means 10,000 and 5,000.
	SnapshotEntries, CompactionOverhead uint64
	// Quiesce lets an idle group stop heartbeating (dragonboat marks it
	// experimental). Each idle group otherwise costs its three nodes
	// about 0.7% of a core together at the default timing.
	Quiesce bool
	// Watch, when set, is a key prefix whose changes Generation counts.
	Watch []byte
}

// Node is one Parsec node's share of the cluster: a dragonboat NodeHost
// and the replicas it runs over the node's Badger.
type Node struct {
	nh     *dragonboat.NodeHost
	db     *badger.DB
	sync   func() error // NodeConfig.Sync
	logger *slog.Logger
	logs   *logSyncer

	mu     sync.Mutex
	groups map[uint64]*replica

	readRetries atomic.Int64 // linearizable read attempts that were tried again
}

type replica struct {
	replicaID uint64
	spans     []Span
	owns      func(key, value []byte) bool
	observe   []byte // GroupConfig.Observe
	watch     []byte
	gen       atomic.Uint64 // Generation
	sm        *StateMachine // the current instance (dragonboat makes a new one on restart)
}

// defaultTimeout bounds calls whose context has no deadline (dragonboat
// needs one).
const defaultTimeout = 5 * time.Second

// NewNode starts the node's NodeHost.
func NewNode(cfg NodeConfig) (*Node, error) {
	if cfg.DB == nil {
		return nil, errors.New("cluster: NodeConfig.DB is required")
	}
	rtt := cfg.RTTMillisecond
	if rtt == 0 {
		rtt = 10
	}
	dep := cfg.DeploymentID
	if dep == 0 {
		dep = 1
	}
	dir := filepath.Join(cfg.Dir, "raft")
	logs := newLogSyncer(cfg.LogSyncInterval, cfg.Logger)
	start := func(logDB config.LogDBFactory) (*dragonboat.NodeHost, error) {
		expert := config.GetDefaultExpertConfig()
		// The default log store reserves up to 8 GB of write buffers; the
		// tiny profile keeps pebble's to 256 MB a node.
		expert.LogDB = config.GetTinyMemLogDBConfig()
		if logDB != nil {
			// tan allocates one encoding buffer of this size per log
			// shard (16) at start, on the Go heap that --memory-limit
			// bounds; a Raft update larger than it gets a buffer of its
			// own.
			expert.LogDB.KVWriteBufferSize = 1 << 20
		}
		expert.LogDBFactory = logDB
		// Frames of one write each instead of dragonboat's three
		// (transport.go).
		expert.TransportFactory = TransportFactory{Logger: cfg.Logger}
		if logDB != nil {
			// (dragonboat's pebble log store refuses any file system
			// but its default.)
			expert.FS = receivingFS{logFS{IFS: vfs.Default, s: logs}}
		}
		return dragonboat.NewNodeHost(config.NodeHostConfig{
			DeploymentID:   dep,
			NodeHostDir:    dir,
			WALDir:         dir,
			RTTMillisecond: rtt,
			RaftAddress:    cfg.RaftAddress,
			Expert:         expert,
		})
	}
	// Raft logs live in tan, dragonboat's log-structured store: a
	// pebble log store (dragonboat's default) flushes and compacts every
	// entry again, a sixth of a follower's CPU under inserts. A node whose
	// logs an earlier Parsec kept in pebble keeps them there: dragonboat
	// refuses to open one kind as the other.
	nh, err := start(tanFactory{syncer: logs})
	if err != nil && strings.Contains(err.Error(), errLogDBTypeChanged) {
		logs.close()
		logs = newLogSyncer(0, nil) // pebble syncs every update itself
		nh, err = start(nil)
	}
	if err != nil {
		logs.close()
		return nil, fmt.Errorf("cluster: start node %s: %w", cfg.RaftAddress, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sync := cfg.Sync
	if sync == nil {
		sync = cfg.DB.Sync
	}
	return &Node{nh: nh, db: cfg.DB, sync: sync, logger: logger, logs: logs, groups: map[uint64]*replica{}}, nil
}

// errLogDBTypeChanged is the text of dragonboat's error for a NodeHost
// directory made with another kind of log store (internal/server's
// ErrLogDBType, which it does not export).
const errLogDBTypeChanged = "logdb type changed"

// HasReplica is whether the node's Raft log store holds a replica of
// the group (one it ran before, which StartGroup restarts from its own
// state).
func (n *Node) HasReplica(shardID, replicaID uint64) bool {
	return n.nh.HasNodeInfo(shardID, replicaID)
}

// ReplicaID is the ID of this node's replica of the group (ok false:
// it runs none).
func (n *Node) ReplicaID(shardID uint64) (uint64, bool) {
	rep, err := n.group(shardID)
	if err != nil {
		return 0, false
	}
	return rep.replicaID, true
}

// StartGroup starts (creates, restarts or joins) the node's replica of a
// group.
func (n *Node) StartGroup(g GroupConfig) error {
	spans, err := checkSpans(g.Spans)
	if err != nil {
		return fmt.Errorf("cluster: group %d: %w", g.ShardID, err)
	}
	if g.NonVoting && !g.Join {
		return fmt.Errorf("cluster: group %d: a non-voting replica joins a running group (Join)", g.ShardID)
	}
	n.mu.Lock()
	if _, ok := n.groups[g.ShardID]; ok {
		n.mu.Unlock()
		return fmt.Errorf("cluster: group %d is already started on this node", g.ShardID)
	}
	for id, r := range n.groups {
		if r.owns != nil && g.Owns != nil {
			continue // they share spans by ownership
		}
		for _, a := range r.spans {
			for _, b := range spans {
				if a.overlaps(b) {
					n.mu.Unlock()
					return fmt.Errorf("cluster: group %d: span %v overlaps group %d's %v", g.ShardID, b, id, a)
				}
			}
		}
	}
	rep := &replica{replicaID: g.ReplicaID, spans: spans, owns: g.Owns, observe: bytes.Clone(g.Observe), watch: bytes.Clone(g.Watch)}
	n.groups[g.ShardID] = rep
	n.mu.Unlock()
	fail := func(err error) error {
		n.mu.Lock()
		delete(n.groups, g.ShardID)
		n.mu.Unlock()
		return fmt.Errorf("cluster: start group %d replica %d: %w", g.ShardID, g.ReplicaID, err)
	}
	// A drop a crash interrupted is finished first (with this
	// configuration's ownership); dragonboat then refuses to start the
	// dropped replica again, but not a new one of the same group.
	if dropping, _, err := metaUint64(n.db, droppingKey(g.ShardID)); err != nil {
		return fail(err)
	} else if dropping {
		if err := n.finishDrop(g.ShardID, dropTarget{spans: spans, owns: g.Owns, observe: g.Observe, onApply: g.OnApply}); err != nil {
			return fail(err)
		}
	}
	nonVoting, err := n.startsNonVoting(g)
	if err != nil {
		return fail(err)
	}

	members := map[uint64]dragonboat.Target{}
	if !g.Join && !n.nh.HasNodeInfo(g.ShardID, g.ReplicaID) {
		for id, addr := range g.Members {
			members[id] = addr
		}
	}
	cfg := config.Config{
		ShardID:            g.ShardID,
		ReplicaID:          g.ReplicaID,
		ElectionRTT:        orDefault(g.ElectionRTT, 20),
		HeartbeatRTT:       orDefault(g.HeartbeatRTT, 2),
		CheckQuorum:        true,
		PreVote:            true,
		SnapshotEntries:    orDefault(g.SnapshotEntries, 10000),
		CompactionOverhead: orDefault(g.CompactionOverhead, 5000),
		Quiesce:            g.Quiesce,
		IsNonVoting:        nonVoting,
	}
	create := func(shardID, replicaID uint64) sm.IOnDiskStateMachine {
		m := &StateMachine{db: n.db, sync: n.sync, logger: n.logger, shardID: shardID, spans: spans, owns: g.Owns, ownsByKey: g.OwnsByKey, watch: rep.watch, gen: &rep.gen,
			observe: bytes.Clone(g.Observe), onApply: g.OnApply, freeze: g.Freeze}
		rep.gen.Add(1) // a new instance: what it opens may differ
		n.mu.Lock()
		rep.sm = m
		n.mu.Unlock()
		return m
	}
	if err := n.nh.StartOnDiskReplica(members, g.Join, create, cfg); err != nil {
		return fail(err)
	}
	return nil
}

// startsNonVoting says whether g's replica starts non-voting: one that
// joins so now, or one that joined so before (r/v<shardID>). The mark is
// made durable before dragonboat records the replica: a replica that
// joined non-voting and restarted as a voter would panic replaying its
// own addition.
func (n *Node) startsNonVoting(g GroupConfig) (bool, error) {
	key := nonVotingKey(g.ShardID)
	if g.NonVoting {
		if err := n.db.Update(func(txn *badger.Txn) error {
			return txn.Set(key, binary.BigEndian.AppendUint64(nil, g.ReplicaID))
		}); err != nil {
			return false, err
		}
		return true, n.sync()
	}
	found, id, err := metaUint64(n.db, key)
	return found && id == g.ReplicaID, err
}

// metaUint64 reads a metadata key holding a uint64.
func metaUint64(db *badger.DB, key []byte) (found bool, v uint64, err error) {
	err = db.View(func(txn *badger.Txn) error {
		b, ok, err := getValue(txn, key)
		if err != nil || !ok {
			return err
		}
		if len(b) != 8 {
			return fmt.Errorf("metadata key %q holds %d bytes", key, len(b))
		}
		found, v = true, binary.BigEndian.Uint64(b)
		return nil
	})
	return found, v, err
}

func orDefault(v, d uint64) uint64 {
	if v == 0 {
		return d
	}
	return v
}

// ErrConflict is a batch whose expectation failed (Batch.Expect): every
// replica left the state as it was.
var ErrConflict = errors.New("cluster: batch expectation failed")

// ErrUnknownOutcome wraps a proposal that timed out after it may have
// entered the log: it may still be applied. Propose it again only if it
// applies at most once (Batch.ExpectAbsent).
var ErrUnknownOutcome = errors.New("cluster: proposal outcome unknown")

// RejectedError is a batch every replica refused (and wrote nothing of).
type RejectedError struct{ Reason string }

func (e *RejectedError) Error() string { return "cluster: batch rejected: " + e.Reason }

// maxBatchBytes bounds a proposed batch. One entry must also fit one
// Badger transaction on every replica (Update rejects one that does not),
// so every node of a cluster uses the same Badger options.
const maxBatchBytes = 8 << 20

// fitsOneTxn is whether a batch surely fits one transaction of db, with
// the group's applied index: Badger counts a key and value plus a few
// bytes per write.
func fitsOneTxn(db *badger.DB, b *Batch) bool {
	ops := int64(b.Len()) + 1
	return ops <= db.MaxBatchCount() && int64(len(b.Encoded()))+ops*32 <= db.MaxBatchSize()
}

// Propose replicates b through the group and returns once a majority
// committed it and this node applied it. Until a leader is known the
// proposal is retried; a timeout leaves its fate unknown
// (ErrUnknownOutcome): a proposal forwarded to a leader that has just
// lost its place is dropped without an answer.
func (n *Node) Propose(ctx context.Context, shardID uint64, b *Batch) error {
	rep, err := n.group(shardID)
	if err != nil {
		return err
	}
	if b.Len() == 0 && !b.Durable() {
		return nil
	}
	if len(b.Encoded()) > maxBatchBytes || !fitsOneTxn(n.db, b) {
		return &RejectedError{Reason: fmt.Sprintf("batch of %d writes and %d bytes does not fit one transaction", b.Len(), len(b.Encoded()))}
	}
	ops, err := DecodeBatch(b.Encoded())
	if err != nil {
		return err
	}
	for _, op := range ops {
		if !inSpans(rep.spans, op.Key) || op.Kind == OpPut && rep.owns != nil && !rep.owns(op.Key, op.Value) {
			return &RejectedError{Reason: fmt.Sprintf("key %q is outside the group's spans", op.Key)}
		}
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	session := n.nh.GetNoOPSession(shardID)
	for {
		r, err := n.nh.SyncPropose(ctx, session, b.Encoded())
		if err == nil {
			switch r.Value {
			case ResultApplied:
				return nil
			case ResultConflict:
				return fmt.Errorf("%w: %s", ErrConflict, r.Data)
			default:
				return &RejectedError{Reason: string(r.Data)}
			}
		}
		if errors.Is(err, dragonboat.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: group %d: %w", ErrUnknownOutcome, shardID, err)
		}
		if !retryable(err) {
			return fmt.Errorf("cluster: propose to group %d: %w", shardID, err)
		}
		if werr := pause(ctx); werr != nil {
			return fmt.Errorf("cluster: propose to group %d: %w (last: %v)", shardID, werr, err)
		}
	}
}

// retryable errors are proposals and reads that never entered the log:
// no leader yet, or a full queue.
func retryable(err error) bool {
	return errors.Is(err, dragonboat.ErrShardNotReady) || errors.Is(err, dragonboat.ErrSystemBusy)
}

func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(20 * time.Millisecond):
		return nil
	}
}

func withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultTimeout)
}

// ReadMode is how fresh a read is.
type ReadMode int

const (
	// Linearizable reads confirm with a majority (ReadIndex) that this
	// replica has applied everything committed when the read began.
	Linearizable ReadMode = iota
	// Local reads this replica's applied state as it is: possibly stale.
	Local
)

// Read runs a query (GetQuery, ScanQuery, AppliedQuery) on the node's
// replica of a group.
func (n *Node) Read(ctx context.Context, shardID uint64, q interface{}, mode ReadMode) (interface{}, error) {
	if _, err := n.group(shardID); err != nil {
		return nil, err
	}
	if mode == Local {
		return n.nh.StaleRead(shardID, q)
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	for {
		// A read has no effect, so one whose ReadIndex request was lost
		// (dragonboat then waits out the whole timeout) is tried again.
		attempt, cancelAttempt := context.WithTimeout(ctx, readAttempt)
		v, err := n.nh.SyncRead(attempt, shardID, q)
		cancelAttempt()
		if err == nil {
			return v, nil
		}
		if !retryable(err) && !errors.Is(err, dragonboat.ErrTimeout) {
			return nil, fmt.Errorf("cluster: read group %d: %w", shardID, err)
		}
		n.readRetries.Add(1)
		if werr := pause(ctx); werr != nil {
			return nil, fmt.Errorf("cluster: read group %d: %w (last: %v)", shardID, werr, err)
		}
	}
}

// readAttempt bounds one ReadIndex round; it takes a few RTTs when the
// group is healthy.
const readAttempt = time.Second

// Get reads one key of a group.
func (n *Node) Get(ctx context.Context, shardID uint64, key []byte, mode ReadMode) ([]byte, bool, error) {
	v, err := n.Read(ctx, shardID, GetQuery{Key: key}, mode)
	if err != nil {
		return nil, false, err
	}
	r := v.(GetResult)
	return r.Value, r.Found, nil
}

// Scan reads up to limit pairs of [start, end) of a group, in key order;
// more says there are others.
func (n *Node) Scan(ctx context.Context, shardID uint64, start, end []byte, limit int, mode ReadMode) ([]KV, bool, error) {
	v, err := n.Read(ctx, shardID, ScanQuery{Start: start, End: end, Limit: limit}, mode)
	if err != nil {
		return nil, false, err
	}
	r := v.(ScanResult)
	return r.Pairs, r.More, nil
}

// Leader is the group's leader as this node knows it.
func (n *Node) Leader(shardID uint64) (replicaID uint64, ok bool) {
	id, _, ok, err := n.nh.GetLeaderID(shardID)
	return id, ok && err == nil
}

// LeaderTerm is the group's leader as this node knows it, with the Raft
// term it leads in (terms only grow, so a later leader has a larger one).
func (n *Node) LeaderTerm(shardID uint64) (replicaID, term uint64, ok bool) {
	id, term, ok, err := n.nh.GetLeaderID(shardID)
	return id, term, ok && err == nil
}

// TransferLeader asks the group's leader to hand its place to replica
// (dragonboat's leader transfer; it may not happen, and the caller sees
// the leader later).
func (n *Node) TransferLeader(shardID, replicaID uint64) error {
	if _, err := n.group(shardID); err != nil {
		return err
	}
	return n.nh.RequestLeaderTransfer(shardID, replicaID)
}

// Barrier returns once the node's replica has applied everything the
// group committed before the call (a ReadIndex round).
func (n *Node) Barrier(ctx context.Context, shardID uint64) error {
	_, err := n.Read(ctx, shardID, AppliedQuery{}, Linearizable)
	return err
}

// Applied is the applied index of the node's replica (0 before it opened).
func (n *Node) Applied(shardID uint64) uint64 {
	if m := n.machine(shardID); m != nil {
		return m.Applied()
	}
	return 0
}

// Stats are the apply counts of the node's current replica instance.
func (n *Node) Stats(shardID uint64) ApplyStats {
	if m := n.machine(shardID); m != nil {
		return m.Stats()
	}
	return ApplyStats{}
}

// AddReplica adds a member to a group (the new replica then starts with
// GroupConfig.Join on its node and catches up, by snapshot when the log
// is compacted). It returns once the member is in the group's
// membership, trying again when a request is lost. Adding a non-voting
// member (AddNonVoting) again, with its ID and address, promotes it to a
// voter. An ID the group removed is refused (ErrReplicaIDUsed).
func (n *Node) AddReplica(ctx context.Context, shardID, replicaID uint64, addr string) error {
	return n.changeMembership(ctx, shardID, fmt.Sprintf("add replica %d to group %d", replicaID, shardID),
		func(m *dragonboat.Membership) (bool, error) {
			if err := usable(m, replicaID, addr); err != nil {
				return false, err
			}
			return m.Nodes[replicaID] == addr, nil
		},
		func(ctx context.Context) error { return n.nh.SyncRequestAddReplica(ctx, shardID, replicaID, addr, 0) })
}

// RemoveReplica removes a member from a group; like AddReplica it returns
// once the membership says so.
func (n *Node) RemoveReplica(ctx context.Context, shardID, replicaID uint64) error {
	return n.changeMembership(ctx, shardID, fmt.Sprintf("remove replica %d from group %d", replicaID, shardID),
		func(m *dragonboat.Membership) (bool, error) { _, ok := m.Removed[replicaID]; return ok, nil },
		func(ctx context.Context) error { return n.nh.SyncRequestDeleteReplica(ctx, shardID, replicaID, 0) })
}

// membershipAttempt bounds one membership request or query.
const membershipAttempt = 2 * time.Second

// changeMembership requests a change until the membership shows it done.
// A request can be lost (or rejected because an earlier, timed-out one
// already applied), so the membership, read linearizably, is the answer;
// done's error is a change the membership makes impossible.
func (n *Node) changeMembership(ctx context.Context, shardID uint64, what string,
	done func(*dragonboat.Membership) (bool, error), request func(context.Context) error) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var last error
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, membershipAttempt)
		m, err := n.nh.SyncGetShardMembership(attempt, shardID)
		if err == nil {
			ok, derr := done(m)
			if derr != nil || ok {
				cancelAttempt()
				if derr != nil {
					return fmt.Errorf("cluster: %s: %w", what, derr)
				}
				return nil
			}
		}
		if err == nil {
			err = request(attempt)
		}
		cancelAttempt()
		if err != nil {
			last = err
		}
		if werr := pause(ctx); werr != nil {
			return fmt.Errorf("cluster: %s: %w (last: %v)", what, werr, last)
		}
	}
}

// LogFsyncs is how many fsyncs of Raft log files whose fsyncs are
// deferred (NodeConfig.LogSyncInterval) the node made.
func (n *Node) LogFsyncs() uint64 { return n.logs.fsyncs.Load() }

// Close stops the node's replicas and its NodeHost. The Badger database
// stays open (the caller's).
func (n *Node) Close() {
	n.nh.Close()
	n.logs.close()
}

func (n *Node) group(shardID uint64) (*replica, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.groups[shardID]
	if r == nil {
		return nil, fmt.Errorf("cluster: group %d is not started on this node", shardID)
	}
	return r, nil
}

// Generation changes whenever this node's replica of the group applies
// an entry that writes under the group's Watch prefix, restores a
// snapshot or restarts: a reader that caches what is under the prefix
// reads it again when the generation moved (0: no such group).
func (n *Node) Generation(shardID uint64) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r := n.groups[shardID]; r != nil {
		return r.gen.Load()
	}
	return 0
}

func (n *Node) machine(shardID uint64) *StateMachine {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r := n.groups[shardID]; r != nil {
		return r.sm
	}
	return nil
}

// QuietLogs keeps dragonboat's process-wide loggers to warnings and
// errors (its transport's to critical ones: a stopped member refusing
// connections is expected while it restarts).
func QuietLogs() {
	logger.GetLogger("transport").SetLevel(logger.CRITICAL)
	for _, name := range []string{"dragonboat", "raft", "raft-mt", "raftpb", "rsm",
		"logdb", "LogDB", "pebblekv", "tan", "config", "settings", "grpc", "gossip", "registry", "server", "tools"} {
		logger.GetLogger(name).SetLevel(logger.ERROR)
	}
}

// Started reports whether the node runs a replica of group shardID.
func (n *Node) Started(shardID uint64) bool {
	_, err := n.group(shardID)
	return err == nil
}

// CompactGroup takes a snapshot of this node's replica of group shardID
// and compacts its log up to it: a replica added later, or one that lost
// its state, then starts from a snapshot rather than the log's first
// entry. (A group split from another starts from keys its replicas
// already hold, which its log does not contain.)
func (n *Node) CompactGroup(ctx context.Context, shardID uint64) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := n.nh.SyncRequestSnapshot(ctx, shardID, dragonboat.SnapshotOption{OverrideCompactionOverhead: true, CompactionOverhead: 0})
	return err
}
