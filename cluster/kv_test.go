package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/kv/kvtest"
)

// allSpans are every key but the groups' own metadata (r/).
var allSpans = DataSpans

// closingKV closes the node and its Badger with the store.
type closingKV struct {
	*Replicated
	close func() error
}

func (c closingKV) Close() error { return c.close() }

// TestReplicatedKVInvariants: the replicated store keeps every invariant
// of engine/kv that Badger keeps, on a group of one replica (a reopen
// restarts the node on the same directory and address).
func TestReplicatedKVInvariants(t *testing.T) {
	addrs := map[string]string{}
	kvtest.Run(t, func(t *testing.T, dir string) kv.DB {
		tn, r := oneReplica(t, addrs, dir)
		return closingKV{r, func() error { tn.stop(); return nil }}
	})
}

// oneReplica starts a node on dir (on the address it had there before,
// kept in addrs) with a one-replica group over every key, and returns its
// store.
func oneReplica(t *testing.T, addrs map[string]string, dir string) (*testNode, *Replicated) {
	t.Helper()
	addr, ok := addrs[dir]
	if !ok {
		addr = freeAddr(t, "127.0.0.1")
		addrs[dir] = addr
	}
	tn := &testNode{t: t, addr: addr, dir: dir}
	tn.start()
	if err := tn.node.StartGroup(GroupConfig{ShardID: 1, ReplicaID: 1, Members: map[uint64]string{1: addr}, Spans: allSpans}); err != nil {
		tn.stop()
		t.Fatal(err)
	}
	r, err := tn.node.KV(1)
	if err != nil {
		tn.stop()
		t.Fatal(err)
	}
	return tn, r
}

// TestReplicatedKVAcrossNodes: a commit through one node's store is on
// every replica; a transaction on a node whose replica read an older
// value than the one committed since fails with kv.ErrConflict, and
// succeeds when run again there once the replica caught up.
func TestReplicatedKVAcrossNodes(t *testing.T) {
	c := newTestCluster(t)
	c.startGroup(GroupConfig{ShardID: 3, Spans: allSpans})
	lead := c.nodes[c.leader(3)]
	other := c.nodes[(c.leader(3)+1)%len(c.nodes)]
	lkv, err := lead.node.KV(3)
	if err != nil {
		t.Fatal(err)
	}
	okv, err := other.node.KV(3)
	if err != nil {
		t.Fatal(err)
	}
	set := func(db kv.DB, key, value string) error {
		tx := db.NewTransaction(true)
		defer tx.Discard()
		if _, err := tx.Get([]byte(key)); err != nil && !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		if err := tx.Set([]byte(key), []byte(value)); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := set(lkv, "k/1", "one"); err != nil {
		t.Fatal(err)
	}
	c.converge(3)
	for _, tn := range c.nodes {
		r, _ := tn.node.KV(3)
		var got string
		err := r.View(func(tx kv.Txn) error {
			item, err := tx.Get([]byte("k/1"))
			if err != nil {
				return err
			}
			v, err := item.ValueCopy(nil)
			got = string(v)
			return err
		})
		if err != nil || got != "one" {
			t.Errorf("node %s reads %q, %v", tn.addr, got, err)
		}
	}

	// A read-modify-write on the other node that began before the
	// leader's next commit loses to it.
	tx := okv.NewTransaction(true)
	defer tx.Discard()
	if _, err := tx.Get([]byte("k/1")); err != nil {
		t.Fatal(err)
	}
	if err := set(lkv, "k/1", "two"); err != nil {
		t.Fatal(err)
	}
	_ = tx.Set([]byte("k/1"), []byte("stale"))
	if err := tx.Commit(); !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("a commit over a changed read: %v, want kv.ErrConflict", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := set(okv, "k/1", "three")
		if err == nil {
			break
		}
		if !errors.Is(err, kv.ErrConflict) || time.Now().After(deadline) {
			t.Fatalf("the retried write: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.converge(3)
	if got := c.sameState(3, "k/"); !strings.HasPrefix(got, fmt.Sprintf("%q=%q\n", "k/1", "three")) {
		t.Errorf("replicas hold:\n%s", got)
	}
}

// TestReplicatedKVFence: once another node claims the fence, a store
// fenced with the older claim commits nothing (kv.ErrFenced, OnFenced
// called) while the new claimant's commits apply.
func TestReplicatedKVFence(t *testing.T) {
	c := newTestCluster(t)
	c.startGroup(GroupConfig{ShardID: 4, Spans: allSpans})
	ctx := context.Background()
	stores := make([]*Replicated, 2)
	for i := range stores {
		r, err := c.nodes[i].node.KV(4)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = r
	}
	fenceKey := []byte("m/writer")
	put := func(r *Replicated, key string) error {
		tx := r.NewTransaction(true)
		defer tx.Discard()
		_ = tx.Set([]byte(key), []byte("v"))
		return tx.Commit()
	}
	old := stores[0]
	if err := old.Claim(ctx, fenceKey, []byte("node1/term1")); err != nil {
		t.Fatal(err)
	}
	old.Fence(fenceKey, []byte("node1/term1"))
	fencedCalls := 0
	old.OnFenced = func() { fencedCalls++ }
	if err := put(old, "k/a"); err != nil {
		t.Fatalf("a write under its own claim: %v", err)
	}
	newer := stores[1]
	if err := newer.Claim(ctx, fenceKey, []byte("node2/term2")); err != nil {
		t.Fatal(err)
	}
	newer.Fence(fenceKey, []byte("node2/term2"))
	if err := put(old, "k/b"); !errors.Is(err, kv.ErrFenced) || fencedCalls != 1 {
		t.Fatalf("a write under a replaced claim: %v (OnFenced called %d times), want kv.ErrFenced once", err, fencedCalls)
	}
	if err := put(newer, "k/c"); err != nil {
		t.Fatalf("the new claimant's write: %v", err)
	}
	c.converge(4)
	if got := c.sameState(4, "k/"); !strings.HasPrefix(got, `"k/a"="v"`+"\n"+`"k/c"="v"`+"\n") {
		t.Errorf("replicas hold:\n%s", got)
	}
}

// With the Raft logs' fsyncs deferred, commits fsync nothing until the
// syncer's pass; Journal (j: true) returns once a majority of the group's
// replicas, its leader among them, fsynced its log.
func TestJournalFsyncsAMajority(t *testing.T) {
	c := newTestClusterSyncing(t, time.Hour) // no pass of the syncer during the test
	const shard = 4
	c.startGroup(GroupConfig{ShardID: shard, Spans: allSpans})
	li := c.leader(shard)
	lead := c.nodes[li]
	store, err := lead.node.KV(shard)
	if err != nil {
		t.Fatal(err)
	}
	write := func(i int) {
		t.Helper()
		txn := store.NewTransaction(true)
		if err := txn.Set(fmt.Appendf(nil, "j/%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	c.converge(shard)
	fsyncs := func() []uint64 {
		var out []uint64
		for _, tn := range c.nodes {
			out = append(out, tn.node.LogFsyncs())
		}
		return out
	}
	before := fsyncs()
	for i := 1; i <= 20; i++ {
		write(i)
	}
	if after := fsyncs(); !slices.Equal(after, before) {
		t.Errorf("20 commits fsynced the logs: %v -> %v", before, after)
	}
	if err := store.Journal(); err != nil {
		t.Fatal(err)
	}
	after := fsyncs()
	synced := 0
	for i := range after {
		if after[i] > before[i] {
			synced++
		}
	}
	if synced < 2 || after[li] == before[li] {
		t.Errorf("after Journal the logs' fsyncs went %v -> %v (leader node %d): want the leader's and another's", before, after, li+1)
	}
	// A store that proposed nothing lately has nothing to journal.
	idle, err := c.nodes[(li+1)%3].node.KV(shard)
	if err != nil {
		t.Fatal(err)
	}
	before = fsyncs()
	if err := idle.Journal(); err != nil {
		t.Fatal(err)
	}
	if after := fsyncs(); !slices.Equal(after, before) {
		t.Errorf("Journal of a store that wrote nothing fsynced: %v -> %v", before, after)
	}
}
