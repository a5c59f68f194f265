package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// addNode starts one more node of the cluster on host (no groups yet).
func (c *testCluster) addNode(host string) *testNode {
	c.t.Helper()
	tn := &testNode{t: c.t, addr: freeAddr(c.t, host), dir: filepath.Join(c.t.TempDir(), fmt.Sprintf("node%d", len(c.nodes)+1))}
	tn.start()
	c.nodes = append(c.nodes, tn)
	return tn
}

// keyOwner is an Owns that gives a group the keys of a shared span whose
// third byte is tag ("x/A/..." for A).
func keyOwner(tag byte) func(k, v []byte) bool {
	return func(k, _ []byte) bool { return len(k) > 2 && k[2] == tag }
}

// catchUp starts replica id of g on tn as a non-voting member added
// through via, and waits until it applied what the group had committed
// once it started; it returns how long that took from the addition.
func catchUp(t *testing.T, via, tn *testNode, g GroupConfig, id uint64, restartMidway bool) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := via.node.AddNonVoting(ctx, g.ShardID, id, tn.addr); err != nil {
		t.Fatal(err)
	}
	g.ReplicaID, g.Join, g.NonVoting, g.Members = id, true, true, nil
	if err := tn.node.StartGroup(g); err != nil {
		t.Fatal(err)
	}
	if restartMidway {
		// A replica that joined non-voting restarts non-voting whatever
		// its caller says (it would panic replaying its own addition as
		// a voter).
		tn.stop()
		tn.start()
		g.NonVoting = false
		if err := tn.node.StartGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	target, err := via.node.CommitIndex(ctx, g.ShardID)
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.node.WaitApplied(ctx, g.ShardID, target); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// TestMoveReplica moves group A's replica from node 3 to a new node 4
// while A takes writes: node 4 joins non-voting and catches up from a
// snapshot (the log is compacted), is promoted, replica 3 is removed and
// node 3 drops A. Group B shares A's span on every node and keeps its
// keys on node 3.
func TestMoveReplica(t *testing.T) {
	c := newTestCluster(t)
	const a, b = 20, 21
	ga := GroupConfig{ShardID: a, Spans: []Span{PrefixSpan([]byte("x/"))}, Owns: keyOwner('A'), SnapshotEntries: 100, CompactionOverhead: 10}
	gb := GroupConfig{ShardID: b, Spans: []Span{PrefixSpan([]byte("x/"))}, Owns: keyOwner('B')}
	c.startGroup(ga)
	c.startGroup(gb)
	c.leader(a)
	c.leader(b)

	// About 20 MB of 4 KB documents in A, some in B.
	size := 20 << 20
	if testing.Short() || raceEnabled {
		size = 4 << 20
	}
	const docSize, perBatch = 4 << 10, 32
	docs := size / docSize
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for first := w * perBatch; first < docs; first += 3 * perBatch {
				bt := NewBatch()
				for i := first; i < first+perBatch && i < docs; i++ {
					v := make([]byte, docSize)
					copy(v, fmt.Sprintf("doc %d", i))
					bt.Put(fmt.Appendf(nil, "x/A/doc/%06d", i), v)
				}
				if err := proposeOnce(c.nodes[w].node, a, bt, 5*time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i := 1; i <= 20; i++ {
		propose(t, c.nodes[i%3].node, b, writeBatch("x/B/", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tn := range c.nodes {
		if err := tn.node.CompactGroup(ctx, a); err != nil {
			t.Fatal(err)
		}
	}

	// Writes go on through node 1 during the move.
	stop := make(chan struct{})
	var acked []int
	var writerErr error
	writerDone := make(chan struct{})
	first := c.nodes[0].node // c.nodes grows below
	go func() {
		defer close(writerDone)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := proposeOnce(first, a, writeBatch("x/A/", i), 2*time.Second); err != nil {
				writerErr = err
				return
			}
			acked = append(acked, i)
		}
	}()

	n4 := c.addNode("127.0.0.4")
	took := catchUp(t, c.nodes[0], n4, ga, 4, false)
	st := n4.node.Stats(a)
	t.Logf("non-voting replica 4 caught up with %.1f MB in %v (%.1f MB/s): %d snapshot(s) restored with %d keys, then %d entries",
		float64(docs*docSize)/(1<<20), took, float64(docs*docSize)/(1<<20)/took.Seconds(), st.Restores, st.RestoredKeys, st.Entries)
	if st.Restores == 0 {
		t.Errorf("replica 4 caught up without a snapshot: %+v", st)
	}
	if err := c.nodes[0].node.AddReplica(ctx, a, 4, n4.addr); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[1].node.RemoveReplica(ctx, a, 3); err != nil {
		t.Fatal(err)
	}
	n3 := c.nodes[2]
	start := time.Now()
	if err := n3.node.DropGroup(ctx, a); err != nil {
		t.Fatal(err)
	}
	t.Logf("node 3 dropped its replica of A in %v", time.Since(start))
	time.Sleep(200 * time.Millisecond) // writes go on with the new membership
	close(stop)
	<-writerDone
	if writerErr != nil {
		t.Fatalf("a write during the move failed: %v", writerErr)
	}
	t.Logf("%d writes acknowledged during the move", len(acked))

	m, err := c.nodes[0].node.Membership(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Voters) != 3 || m.Voters[4] != n4.addr || m.Voters[3] != "" || len(m.NonVoting) != 0 || !m.Removed[3] {
		t.Errorf("membership after the move: %+v", m)
	}
	if id := m.NewReplicaID(); id != 5 {
		t.Errorf("NewReplicaID = %d, want 5", id)
	}

	// Every acknowledged write is on the new replica.
	idx, err := c.nodes[0].node.CommitIndex(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := n4.node.WaitApplied(ctx, a, idx); err != nil {
		t.Fatal(err)
	}
	pairs, more, err := n4.node.Scan(ctx, a, []byte("x/A/doc/"), []byte("x/A/doc0"), len(acked)+docs+10, Local)
	if err != nil || more {
		t.Fatalf("scan of node 4: more %v, %v", more, err)
	}
	have := map[string]bool{}
	for _, p := range pairs {
		have[string(p.Key)] = true
	}
	for i := 0; i < docs; i++ {
		if !have[fmt.Sprintf("x/A/doc/%06d", i)] {
			t.Fatalf("node 4 lacks loaded document %d", i)
		}
	}
	for _, i := range acked {
		if !have[fmt.Sprintf("x/A/doc/%05d", i)] {
			t.Fatalf("node 4 lacks acknowledged write %d", i)
		}
	}
	if got := counter(t, n4.node, a, "x/A/count"); got[0] != int64(len(pairs)-docs) {
		t.Errorf("node 4 counts %d writes and holds %d", got[0], len(pairs)-docs)
	}

	// Node 3 holds nothing of A, and all of B.
	if n3.node.Started(a) {
		t.Error("node 3 still runs A")
	}
	if s := dump(t, n3.db, "x/A"); s != "" {
		t.Errorf("node 3 still holds A's keys:\n%.500s", s)
	}
	for _, k := range [][]byte{appliedKey(a), restoringKey(a), nonVotingKey(a), droppingKey(a)} {
		if s := dump(t, n3.db, string(k)); s != "" {
			t.Errorf("node 3 still holds A's metadata %s", s)
		}
	}
	if s := dump(t, n3.db, string(appliedKey(b))); s == "" {
		t.Error("node 3 lost B's applied index")
	}
	if s3, s1 := dump(t, n3.db, "x/B/"), dump(t, c.nodes[0].db, "x/B/"); s3 == "" || s3 != s1 {
		t.Errorf("node 3's B keys differ from node 1's:\n%.500s\n%.500s", s3, s1)
	}
	propose(t, n3.node, b, writeBatch("x/B/", 21))
	if got := counter(t, n3.node, b, "x/B/count"); got[0] != 21 {
		t.Errorf("B counts %d batches on node 3, want 21", got[0])
	}

	// A survives losing one of its remaining original replicas.
	c.nodes[0].stop()
	n := len(pairs) - docs
	if err := proposeOnce(n4.node, a, writeBatch("x/A/", n+1), 2*time.Second); err != nil {
		t.Fatalf("A took no write after losing node 1: %v", err)
	}
	if got := counter(t, c.nodes[1].node, a, "x/A/count"); got[0] != int64(n+1) {
		t.Errorf("A counts %d writes on node 2 after losing node 1, want %d", got[0], n+1)
	}
}

// TestMoveBackWithNewReplicaID moves a group's replica from node 3 to
// node 4 and back: node 3 cannot rejoin as replica 3, which the group
// removed, and rejoins as a new replica 5. Both catch up from the log
// (nothing is compacted), one restarts while non-voting and one after
// its promotion, from a snapshot that names it a voter, and leads.
func TestMoveBackWithNewReplicaID(t *testing.T) {
	c := newTestCluster(t)
	const shard = 30
	prefix := "d/30/"
	g := GroupConfig{ShardID: shard, Spans: []Span{PrefixSpan([]byte(prefix))}}
	c.startGroup(g)
	c.leader(shard)
	n := 0
	write := func(via *testNode, count int) {
		for i := 0; i < count; i++ {
			n++
			propose(t, via.node, shard, writeBatch(prefix, n))
		}
	}
	write(c.nodes[0], 50)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	n3, n4 := c.nodes[2], c.addNode("127.0.0.4")
	catchUp(t, c.nodes[0], n4, g, 4, true)
	if st := n4.node.Stats(shard); st.Restores != 0 {
		t.Errorf("replica 4 restored a snapshot: %+v", st)
	}
	write(c.nodes[1], 10)
	if err := c.nodes[0].node.AddReplica(ctx, shard, 4, n4.addr); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[0].node.RemoveReplica(ctx, shard, 3); err != nil {
		t.Fatal(err)
	}
	if err := n3.node.DropGroup(ctx, shard); err != nil {
		t.Fatal(err)
	}
	if s := dump(t, n3.db, prefix) + dump(t, n3.db, metaPrefix); s != "" {
		t.Fatalf("node 3 holds keys after the drop:\n%.500s", s)
	}
	write(c.nodes[0], 10)

	// Back to node 3.
	m, err := c.nodes[0].node.Membership(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[0].node.AddNonVoting(ctx, shard, 3, n3.addr); !errors.Is(err, ErrReplicaIDUsed) {
		t.Errorf("adding removed replica 3 again: %v, want ErrReplicaIDUsed", err)
	}
	if err := c.nodes[0].node.AddReplica(ctx, shard, 3, n3.addr); !errors.Is(err, ErrReplicaIDUsed) {
		t.Errorf("adding removed replica 3 again as a voter: %v, want ErrReplicaIDUsed", err)
	}
	id := m.NewReplicaID()
	if id != 5 {
		t.Fatalf("NewReplicaID = %d, want 5 (membership %+v)", id, m)
	}
	catchUp(t, c.nodes[0], n3, g, id, false)
	if err := c.nodes[0].node.AddReplica(ctx, shard, id, n3.addr); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[0].node.RemoveReplica(ctx, shard, 4); err != nil {
		t.Fatal(err)
	}
	if err := n4.node.DropGroup(ctx, shard); err != nil {
		t.Fatal(err)
	}
	if s := dump(t, n4.db, prefix) + dump(t, n4.db, metaPrefix); s != "" {
		t.Errorf("node 4 holds keys after the drop:\n%.500s", s)
	}
	write(n3, 10)

	// Replica 5 restarts from a snapshot taken since its promotion (it
	// starts non-voting, as it joined, and its membership makes it a
	// voter) and can lead.
	if err := n3.node.CompactGroup(ctx, shard); err != nil {
		t.Fatal(err)
	}
	n3.stop()
	n3.start()
	g5 := g
	g5.ReplicaID, g5.Join = id, true
	if err := n3.node.StartGroup(g5); err != nil {
		t.Fatal(err)
	}
	idx, err := c.nodes[0].node.CommitIndex(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if err := n3.node.WaitApplied(ctx, shard, idx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if l, ok := n3.node.Leader(shard); ok && l == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica 5 never took the lead")
		}
		_ = n3.node.nh.RequestLeaderTransfer(shard, id)
		time.Sleep(100 * time.Millisecond)
	}
	write(n3, 10)
	for _, tn := range []*testNode{c.nodes[0], c.nodes[1], n3} {
		if got := counter(t, tn.node, shard, prefix+"count"); got[0] != int64(n) {
			t.Errorf("%s counts %d batches, want %d", tn.addr, got[0], n)
		}
	}
	m, err = n3.node.Membership(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Voters) != 3 || m.Voters[id] != n3.addr || !m.Removed[3] || !m.Removed[4] {
		t.Errorf("membership after moving back: %+v", m)
	}
}

// TestDropInterrupted: a drop that a crash cut short after its mark is
// finished at the next start, by FinishDrop or StartGroup, and judges
// ownership as the group's own state says (a split narrowed group 40's
// range; group 41, split from it, keeps its keys).
func TestDropInterrupted(t *testing.T) {
	tn := &testNode{t: t, addr: freeAddr(t, "127.0.0.1"), dir: t.TempDir()}
	tn.start()
	defer tn.stop()
	members := map[uint64]string{1: tn.addr}
	// Group 40 owns y/<n> for n below its limit (the observed key
	// y/!lim, 100 as created) and its limit; group 41 owns n >= 50.
	configs := func() (GroupConfig, GroupConfig) {
		limit := "100"
		var mu sync.Mutex
		g40 := GroupConfig{ShardID: 40, ReplicaID: 1, Members: members, Spans: []Span{PrefixSpan([]byte("y/"))},
			Observe: []byte("y/!lim"), OnApply: func(_, v []byte) { mu.Lock(); limit = string(v); mu.Unlock() },
			Owns: func(k, _ []byte) bool {
				mu.Lock()
				defer mu.Unlock()
				return string(k) == "y/!lim" || len(k) == 5 && k[2] != '!' && string(k[2:]) < limit
			}}
		g41 := GroupConfig{ShardID: 41, ReplicaID: 1, Members: members, Spans: []Span{PrefixSpan([]byte("y/"))},
			Owns: func(k, _ []byte) bool { return len(k) == 5 && k[2] != '!' && string(k[2:]) >= "050" }}
		return g40, g41
	}
	g40, g41 := configs()
	if err := tn.node.StartGroup(g40); err != nil {
		t.Fatal(err)
	}
	put := func(shard uint64, keys ...string) {
		b := NewBatch()
		for _, k := range keys {
			b.Put([]byte(k), []byte("v"))
		}
		propose(t, tn.node, shard, b)
	}
	var all []string
	for i := 0; i < 100; i += 10 {
		all = append(all, fmt.Sprintf("y/%03d", i))
	}
	put(40, all...)
	b := NewBatch()
	b.Put([]byte("y/!lim"), []byte("050"))
	propose(t, tn.node, 40, b)
	if err := tn.node.StartGroup(g41); err != nil {
		t.Fatal(err)
	}
	put(41, "y/095")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tn.node.DropGroup(ctx, 40); err == nil || !strings.Contains(err.Error(), "still a member") {
		t.Errorf("dropping a member's replica: %v, want refused", err)
	}
	// Both drops stop after their mark.
	for _, shard := range []uint64{40, 41} {
		if err := tn.node.beginDrop(shard, 1); err != nil {
			t.Fatal(err)
		}
	}
	tn.stop()
	tn.start()
	ids, err := tn.node.DroppingGroups()
	if err != nil || len(ids) != 2 || ids[0] != 40 || ids[1] != 41 {
		t.Fatalf("dropping groups after the restart: %v, %v", ids, err)
	}
	g40, g41 = configs()
	if err := tn.node.FinishDrop(ctx, g40); err != nil {
		t.Fatal(err)
	}
	want := `"y/050"="v"` + "\n" + `"y/060"="v"` + "\n" + `"y/070"="v"` + "\n" + `"y/080"="v"` + "\n" + `"y/090"="v"` + "\n" + `"y/095"="v"` + "\n"
	if got := dump(t, tn.db, "y/"); got != want {
		t.Errorf("after finishing group 40's drop:\n%s\nwant:\n%s", got, want)
	}
	if got := dump(t, tn.db, metaPrefix); got != dump(t, tn.db, string(appliedKey(41)))+dump(t, tn.db, string(droppingKey(41))) {
		t.Errorf("metadata after finishing group 40's drop:\n%s", got)
	}
	// Starting the dropped replica of 41 finishes its drop; dragonboat
	// then refuses the replica it removed.
	if err := tn.node.StartGroup(g41); err == nil {
		t.Error("the dropped replica of group 41 started again")
	}
	if got := dump(t, tn.db, "y/") + dump(t, tn.db, metaPrefix); got != "" {
		t.Errorf("after group 41's drop:\n%s", got)
	}
	if ids, err := tn.node.DroppingGroups(); err != nil || len(ids) != 0 {
		t.Errorf("dropping groups at the end: %v, %v", ids, err)
	}
}
