package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/lni/dragonboat/v4/logger"
)

func TestMain(m *testing.M) {
	// dragonboat's loggers are process-wide; the tests want only errors.
	logger.GetLogger("transport").SetLevel(logger.CRITICAL) // stopped nodes refuse connections
	for _, name := range []string{"dragonboat", "raft", "raft-mt", "raftpb", "rsm",
		"logdb", "LogDB", "pebblekv", "tan", "config", "settings", "grpc", "gossip", "registry", "server", "tools"} {
		logger.GetLogger(name).SetLevel(logger.ERROR)
	}
	os.Exit(m.Run())
}

// testNode is one node of a three-node cluster on loopback: its own
// address (127.0.0.N), Badger and dragonboat directories.
type testNode struct {
	t    *testing.T
	addr string
	dir  string
	db   *badger.DB
	node *Node
	// logSync is the node's NodeConfig.LogSyncInterval.
	logSync time.Duration
}

func (tn *testNode) start() {
	tn.t.Helper()
	tn.db = openBadger(tn.t, filepath.Join(tn.dir, "badger"), func(o *badger.Options) {
		o.MemTableSize = 8 << 20
	})
	n, err := NewNode(NodeConfig{RaftAddress: tn.addr, Dir: tn.dir, DB: tn.db, LogSyncInterval: tn.logSync})
	if err != nil {
		tn.db.Close()
		tn.t.Fatal(err)
	}
	tn.node = n
}

func (tn *testNode) stop() {
	if tn.node == nil {
		return
	}
	tn.node.Close()
	tn.db.Close()
	tn.node, tn.db = nil, nil
}

func (tn *testNode) running() bool { return tn.node != nil }

// freeAddr is host:port with a port free on host now.
func freeAddr(t *testing.T, host string) string {
	t.Helper()
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	defer l.Close()
	return l.Addr().String()
}

type testCluster struct {
	t     *testing.T
	nodes []*testNode
}

func newTestCluster(t *testing.T) *testCluster { return newTestClusterSyncing(t, 0) }

// newTestClusterSyncing is newTestCluster with the nodes' Raft logs
// fsynced every logSync (NodeConfig.LogSyncInterval).
func newTestClusterSyncing(t *testing.T, logSync time.Duration) *testCluster {
	c := &testCluster{t: t}
	for i := 1; i <= 3; i++ {
		tn := &testNode{t: t, addr: freeAddr(t, fmt.Sprintf("127.0.0.%d", i)), dir: filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i)), logSync: logSync}
		tn.start()
		c.nodes = append(c.nodes, tn)
	}
	t.Cleanup(func() {
		for _, tn := range c.nodes {
			tn.stop()
		}
	})
	return c
}

func (c *testCluster) members() map[uint64]string {
	m := map[uint64]string{}
	for i, tn := range c.nodes {
		m[uint64(i+1)] = tn.addr
	}
	return m
}

// startGroup starts replica i+1 of the group on node i.
func (c *testCluster) startGroup(g GroupConfig) {
	c.t.Helper()
	g.Members = c.members()
	for i, tn := range c.nodes {
		g.ReplicaID = uint64(i + 1)
		if err := tn.node.StartGroup(g); err != nil {
			c.t.Fatal(err)
		}
	}
}

// leader waits for a running node to know a leader and returns the index
// of the leader's node (replica ID - 1 while IDs follow node order).
func (c *testCluster) leader(shardID uint64) int {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, tn := range c.nodes {
			if !tn.running() {
				continue
			}
			if id, ok := tn.node.Leader(shardID); ok && int(id) <= len(c.nodes) && c.nodes[id-1].running() {
				return int(id) - 1
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("group %d elected no leader", shardID)
	return -1
}

// any is a running node.
func (c *testCluster) any() *testNode {
	for _, tn := range c.nodes {
		if tn.running() {
			return tn
		}
	}
	c.t.Fatal("no node running")
	return nil
}

// converge waits until every running node's replica has applied the same
// index as the others, and returns it.
func (c *testCluster) converge(shardID uint64) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var got []uint64
	for time.Now().Before(deadline) {
		got = got[:0]
		for _, tn := range c.nodes {
			if tn.running() {
				got = append(got, tn.node.Applied(shardID))
			}
		}
		same := got[0] > 0
		for _, a := range got {
			same = same && a == got[0]
		}
		if same {
			return got[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("group %d: applied indexes %v never converged", shardID, got)
	return 0
}

// sameState checks that every running node holds the same keys under
// prefix and the same applied index for the group.
func (c *testCluster) sameState(shardID uint64, prefix string) string {
	c.t.Helper()
	var first string
	for i, tn := range c.nodes {
		if !tn.running() {
			continue
		}
		s := dump(c.t, tn.db, prefix) + dump(c.t, tn.db, string(appliedKey(shardID)))
		if first == "" {
			first = s
		} else if s != first {
			c.t.Errorf("node %d's state of group %d differs:\n%.2000s\nfirst:\n%.2000s", i+1, shardID, s, first)
		}
	}
	return first
}

// writeBatch is batch i of a test: one document-like key, guarded so
// the batch applies at most once, and a counter of batches.
func writeBatch(prefix string, i int) *Batch {
	b := NewBatch()
	key := fmt.Appendf(nil, "%sdoc/%05d", prefix, i)
	b.ExpectAbsent(key)
	b.Put(key, fmt.Appendf(nil, "value of %d", i))
	b.Add([]byte(prefix+"count"), 1, int64(i))
	return b
}

// retriedProposals counts proposals tried again after a timeout.
var retriedProposals atomic.Int64

// proposeOnce proposes a writeBatch until it is known applied exactly
// once: an attempt that timed out is tried again, and a conflict after
// one means that the earlier attempt applied.
func proposeOnce(n *Node, shardID uint64, b *Batch, attempt time.Duration) error {
	deadline := time.Now().Add(15 * time.Second)
	for retried := false; ; retried = true {
		ctx, cancel := context.WithTimeout(context.Background(), attempt)
		err := n.Propose(ctx, shardID, b)
		cancel()
		switch {
		case err == nil, retried && errors.Is(err, ErrConflict):
			return nil
		case errors.Is(err, ErrUnknownOutcome) && time.Now().Before(deadline):
			retriedProposals.Add(1)
		default:
			return err
		}
	}
}

func propose(t *testing.T, n *Node, shardID uint64, b *Batch) {
	t.Helper()
	if err := proposeOnce(n, shardID, b, 2*time.Second); err != nil {
		t.Fatal(err)
	}
}

func counter(t *testing.T, n *Node, shardID uint64, key string) []int64 {
	t.Helper()
	v, found, err := n.Get(context.Background(), shardID, []byte(key), Linearizable)
	if err != nil || !found {
		t.Fatalf("get %s from %s: found %v, %v", key, n.nh.RaftAddress(), found, err)
	}
	if r := n.readRetries.Load(); r > 0 {
		t.Logf("%s: %d linearizable read attempts retried so far", n.nh.RaftAddress(), r)
	}
	c, err := Counters(v)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestThreeReplicasApplyEveryBatch(t *testing.T) {
	goroutines0 := runtime.NumGoroutine()
	c := newTestCluster(t)
	const shard = 1
	c.startGroup(GroupConfig{ShardID: shard, Spans: []Span{PrefixSpan([]byte("d/1/"))}})
	start := time.Now()
	c.leader(shard)
	t.Logf("leader elected in %v", time.Since(start))

	const batches = 500
	start = time.Now()
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(tn *testNode) {
			defer wg.Done()
			for i := int(next.Add(1)); i <= batches; i = int(next.Add(1)) {
				if err := proposeOnce(tn.node, shard, writeBatch("d/1/", i), 2*time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		}(c.nodes[w%3])
	}
	wg.Wait()
	t.Logf("%d batches proposed through all three nodes in %v (%d attempts timed out in this process so far)", batches, time.Since(start), retriedProposals.Load())
	applied := c.converge(shard)
	if applied < batches {
		t.Fatalf("applied index %d < %d batches", applied, batches)
	}
	c.sameState(shard, "d/1/")
	for i, tn := range c.nodes {
		if got := counter(t, tn.node, shard, "d/1/count"); got[0] != batches || got[1] != batches*(batches+1)/2 {
			t.Errorf("node %d: counter %v, want [%d %d]", i+1, got, batches, batches*(batches+1)/2)
		}
		pairs, more, err := tn.node.Scan(context.Background(), shard, []byte("d/1/doc/"), []byte("d/1/doc0"), 1000, Local)
		if err != nil || more || len(pairs) != batches {
			t.Errorf("node %d: local scan %d pairs, more %v, %v", i+1, len(pairs), more, err)
		}
		if st := tn.node.Stats(shard); st.Entries-st.Rejected != batches {
			t.Errorf("node %d: stats %+v", i+1, st)
		}
	}

	// What three idle NodeHosts (and their Badgers) cost this process.
	time.Sleep(200 * time.Millisecond)
	before, goroutines := cpuTime(t), runtime.NumGoroutine()
	const idle = 2 * time.Second
	time.Sleep(idle)
	used := cpuTime(t) - before
	t.Logf("idle, three nodes, one group: %d goroutines (%d before), %.1f%% of one core (%v CPU in %v)",
		goroutines, goroutines0, 100*used.Seconds()/idle.Seconds(), used, idle)
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestLeaderLossAndRestart(t *testing.T) {
	c := newTestCluster(t)
	const shard = 2
	prefix := "d/2/"
	g := GroupConfig{ShardID: shard, Spans: []Span{PrefixSpan([]byte(prefix))}}
	c.startGroup(g)
	l := c.leader(shard)
	n := 0
	for ; n < 100; n++ {
		propose(t, c.nodes[l].node, shard, writeBatch(prefix, n+1))
	}
	c.converge(shard)

	old := c.nodes[l]
	stopped := time.Now()
	old.stop()
	var survivor *testNode
	for _, tn := range c.nodes {
		if tn.running() {
			survivor = tn
			break
		}
	}
	// Proposals go on through a survivor; the first ones wait out the
	// election.
	elected := make(chan time.Duration, 1)
	go func() {
		for time.Since(stopped) < 15*time.Second {
			if id, ok := survivor.node.Leader(shard); ok && int(id) != l+1 {
				elected <- time.Since(stopped)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		elected <- -1
	}()
	retried := retriedProposals.Load()
	if err := proposeOnce(survivor.node, shard, writeBatch(prefix, n+1), 250*time.Millisecond); err != nil {
		t.Fatalf("no proposal succeeded after losing the leader: %v", err)
	}
	n++
	gap := time.Since(stopped)
	nl := c.leader(shard)
	if nl == l {
		t.Fatalf("leader is still node %d", l+1)
	}
	t.Logf("leader node %d closed: node %d leads after %v; first proposal committed after %v (%d attempts of 250ms timed out)", l+1, nl+1, <-elected, gap, retriedProposals.Load()-retried)
	downFrom := n
	for ; n < downFrom+99; n++ {
		propose(t, survivor.node, shard, writeBatch(prefix, n+1))
	}
	whileDown := n - downFrom + 1

	// Restart on the same directories: the replica resumes from the
	// index stored with its data.
	old.start()
	if err := old.node.StartGroup(GroupConfig{ShardID: shard, ReplicaID: uint64(l + 1), Members: c.members(), Spans: g.Spans}); err != nil {
		t.Fatal(err)
	}
	applied := c.converge(shard)
	state := c.sameState(shard, prefix)
	if state == "" {
		t.Fatal("no state")
	}
	st := old.node.Stats(shard)
	t.Logf("restarted node %d: opened at %d, applied %d entries (%d..%d), group at %d", l+1, st.OpenIndex, st.Entries, st.FirstIndex, st.LastIndex, applied)
	if st.OpenIndex < 100 {
		t.Errorf("restart opened at index %d, before the 100 batches it had applied", st.OpenIndex)
	}
	if st.FirstIndex <= st.OpenIndex {
		t.Errorf("restart re-applied entry %d (open index %d)", st.FirstIndex, st.OpenIndex)
	}
	// Entries that conflicted are retries of batches already applied.
	if got := st.Entries - st.Rejected; got != int64(whileDown) {
		t.Errorf("restart applied %d batches (%d entries); %d were committed while it was down", got, st.Entries, whileDown)
	}
	// Counters are not idempotent: a re-applied entry would show here.
	for i, tn := range c.nodes {
		if got := counter(t, tn.node, shard, prefix+"count"); got[0] != int64(n) || got[1] != int64(n*(n+1)/2) {
			t.Errorf("node %d: counter %v, want [%d %d]", i+1, got, n, n*(n+1)/2)
		}
	}

	// And the restarted replica takes part: it can lead and propose.
	propose(t, old.node, shard, writeBatch(prefix, n+1))
	c.converge(shard)
	c.sameState(shard, prefix)
}

func TestWipedReplicaRebuiltFromSnapshot(t *testing.T) {
	c := newTestCluster(t)
	const shard = 3
	prefix := "d/3/"
	g := GroupConfig{ShardID: shard, Spans: []Span{PrefixSpan([]byte(prefix))}, SnapshotEntries: 20, CompactionOverhead: 5}
	c.startGroup(g)
	c.leader(shard)
	for i := 1; i <= 100; i++ {
		propose(t, c.nodes[0].node, shard, writeBatch(prefix, i))
	}
	c.converge(shard)

	// Node 3 loses its disk. Its replica 3 leaves the group and a new
	// replica 4 on the same address joins with nothing.
	lost := c.nodes[2]
	lost.stop()
	if err := os.RemoveAll(lost.dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.nodes[0].node.RemoveReplica(ctx, shard, 3); err != nil {
		t.Fatal(err)
	}
	for i := 101; i <= 150; i++ {
		propose(t, c.nodes[0].node, shard, writeBatch(prefix, i))
	}
	if err := c.nodes[0].node.AddReplica(ctx, shard, 4, lost.addr); err != nil {
		t.Fatal(err)
	}
	lost.start()
	if err := lost.node.StartGroup(GroupConfig{ShardID: shard, ReplicaID: 4, Join: true, Spans: g.Spans,
		SnapshotEntries: g.SnapshotEntries, CompactionOverhead: g.CompactionOverhead}); err != nil {
		t.Fatal(err)
	}
	applied := c.converge(shard)
	c.sameState(shard, prefix)
	st := lost.node.Stats(shard)
	t.Logf("rebuilt replica: %d snapshot(s) restored with %d keys, then %d entries applied; group at %d", st.Restores, st.RestoredKeys, st.Entries, applied)
	if st.Restores == 0 {
		t.Errorf("the wiped replica caught up without a snapshot: %+v", st)
	}
	for i := 151; i <= 160; i++ {
		propose(t, lost.node, shard, writeBatch(prefix, i))
	}
	c.converge(shard)
	c.sameState(shard, prefix)
	if got := counter(t, lost.node, shard, prefix+"count"); got[0] != 160 {
		t.Errorf("rebuilt replica counts %d batches, want 160", got[0])
	}
}

func TestGroupsStayInTheirSpans(t *testing.T) {
	c := newTestCluster(t)
	c.startGroup(GroupConfig{ShardID: 10, Spans: []Span{PrefixSpan([]byte("d/a/")), PrefixSpan([]byte("c/a/"))}})
	c.startGroup(GroupConfig{ShardID: 11, Spans: []Span{PrefixSpan([]byte("d/b/"))}, Quiesce: true})
	if err := c.nodes[0].node.StartGroup(GroupConfig{ShardID: 12, ReplicaID: 1, Members: c.members(),
		Spans: []Span{{Start: []byte("d/b/5"), End: []byte("d/c")}}}); err == nil {
		t.Error("a group overlapping another's span started")
	}
	c.leader(10)
	c.leader(11)
	for i := 1; i <= 30; i++ {
		b := writeBatch("d/a/", i)
		b.Add([]byte("c/a/docs"), 1)
		propose(t, c.nodes[i%3].node, 10, b)
		propose(t, c.nodes[(i+1)%3].node, 11, writeBatch("d/b/", i))
	}
	// Writing into the other group's span is refused and writes nothing.
	bad := NewBatch()
	bad.Put([]byte("d/a/doc/99999"), []byte("x"))
	bad.Put([]byte("d/b/doc/99999"), []byte("x"))
	var rej *RejectedError
	if err := c.nodes[0].node.Propose(context.Background(), 10, bad); !errors.As(err, &rej) {
		t.Errorf("cross-group batch: %v, want rejected", err)
	}
	// So is a batch too big for one Badger transaction (these nodes'
	// take about 1.2 MB).
	big := NewBatch()
	big.Put([]byte("d/a/big"), make([]byte, 2<<20))
	if err := c.nodes[0].node.Propose(context.Background(), 10, big); !errors.As(err, &rej) {
		t.Errorf("2 MB batch: %v, want rejected", err)
	}
	if err := c.nodes[0].node.StartGroup(GroupConfig{ShardID: 10, ReplicaID: 1, Spans: []Span{PrefixSpan([]byte("d/a/"))}}); err == nil {
		t.Error("group 10 started twice on node 1")
	}
	c.converge(10)
	c.converge(11)
	a := c.sameState(10, "d/a/")
	b := c.sameState(11, "d/b/")
	c.sameState(10, "c/a/")
	for i, tn := range c.nodes {
		if got := counter(t, tn.node, 10, "c/a/docs"); got[0] != 30 {
			t.Errorf("node %d: c/a/docs = %v", i+1, got)
		}
		if _, _, err := tn.node.Get(context.Background(), 10, []byte("d/b/count"), Local); err == nil {
			t.Errorf("node %d: group 10 read group 11's key", i+1)
		}
		// 30 docs + count per group; nothing else under d/.
		if n := countLines(dump(t, tn.db, "d/")); n != 62 {
			t.Errorf("node %d: %d keys under d/, want 62", i+1, n)
		}
		if n := countLines(dump(t, tn.db, metaPrefix)); n != 2 {
			t.Errorf("node %d: %d metadata keys, want one applied index per group", i+1, n)
		}
	}
	if countLines(a) != 32 || countLines(b) != 32 { // 31 keys + the applied index
		t.Errorf("group states have %d and %d lines", countLines(a), countLines(b))
	}
}

func countLines(s string) int {
	n := 0
	for _, r := range s {
		if r == '\n' {
			n++
		}
	}
	return n
}
