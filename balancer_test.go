package main

import (
	"testing"
	"time"
)

// TestPlanMovesApart: moves planned beside others under way count them
// as done and use neither their nodes nor their groups; a group due to
// split does not move; a draining node is emptied first.
func TestPlanMovesApart(t *testing.T) {
	h := &clusterHandler{}
	h.view.Store(newMemberView(map[uint64]string{1: "a:1", 2: "b:1", 3: "c:1", 4: "d:1", 5: "e:1"}, 1))
	gs := &groups{h: h}
	var all []partitionGroup
	for id := uint64(10); id < 16; id++ {
		all = append(all, partitionGroup{id: id, coll: 1, min: id << 32, max: id<<32 | 0xffffffff, nodes: []uint64{1, 2, 3}})
	}
	gs.reg = (&registry{}).with(all...)
	none := func(partitionGroup) bool { return false }
	st := balanceState{enabled: true, maxMoves: 2, moves: map[uint64]groupMove{}, drains: map[uint64]time.Time{}}

	first, ok := gs.planMove(st, nil, none, nil)
	if !ok || first.from == 0 || first.to < 4 {
		t.Fatalf("first move %+v, %v: want one from node 1-3 to node 4 or 5", first, ok)
	}
	second, ok := gs.planMove(st, []groupMove{first}, none, nil)
	if !ok || second.group == first.group || second.from == first.from || second.to == first.to || second.to < 4 {
		t.Fatalf("second move %+v beside %+v, %v: want another group between other nodes", second, first, ok)
	}
	// Four of the five nodes are busy: no third move.
	if third, ok := gs.planMove(st, []groupMove{first, second}, none, nil); ok {
		t.Errorf("a third move %+v beside %+v and %+v", third, first, second)
	}
	// Groups due to split stay where they are.
	if m, ok := gs.planMove(st, nil, func(g partitionGroup) bool { return g.id != 13 }, nil); !ok || m.group != 13 {
		t.Errorf("with every group but 13 due to split: %+v, %v", m, ok)
	}
	if m, ok := gs.planMove(st, nil, func(partitionGroup) bool { return true }, nil); ok {
		t.Errorf("with every group due to split: %+v", m)
	}
	// A draining node's replicas go first, to the nodes holding fewest.
	st.drains[2] = time.Now()
	if m, ok := gs.planMove(st, nil, none, nil); !ok || m.from != 2 || m.to < 4 {
		t.Errorf("with node 2 draining: %+v, %v", m, ok)
	}
	// Balanced counts: nothing to move.
	delete(st.drains, 2)
	var spread []partitionGroup
	for i, g := range all[:5] {
		g.nodes = []uint64{uint64(i%5 + 1), uint64((i+1)%5 + 1), uint64((i+2)%5 + 1)}
		spread = append(spread, g)
	}
	gs.reg = (&registry{}).with(spread...)
	if m, ok := gs.planMove(st, nil, none, nil); ok {
		t.Errorf("balanced groups: planned %+v", m)
	}
}

// TestBalancerSettings: m/balancer's value round-trips, and the
// one-byte value of earlier versions reads with the default count.
func TestBalancerSettings(t *testing.T) {
	for _, c := range []struct {
		on bool
		n  int
	}{{true, 1}, {false, 3}, {true, 16}} {
		if on, n := decodeBalancerSettings(encodeBalancerSettings(c.on, c.n)); on != c.on || n != c.n {
			t.Errorf("%v, %d read back as %v, %d", c.on, c.n, on, n)
		}
	}
	if on, n := decodeBalancerSettings([]byte{0}); on || n != defaultMaxMoves {
		t.Errorf("an earlier version's stopped balancer reads %v, %d", on, n)
	}
	if on, n := decodeBalancerSettings(nil); !on || n != defaultMaxMoves {
		t.Errorf("no setting reads %v, %d", on, n)
	}
	if _, n := decodeBalancerSettings(encodeBalancerSettings(true, 99)); n != defaultMaxMoves {
		t.Errorf("an out-of-range count reads %d", n)
	}
}

// TestPlanBytesMove: with counts even, a replica moves from the node
// holding the most bytes to the one holding the fewest when that one
// holds a replica fewer, choosing the replica that evens them most; not
// for a small difference, nor when the counts would then differ by two.
func TestPlanBytesMove(t *testing.T) {
	h := &clusterHandler{}
	h.view.Store(newMemberView(map[uint64]string{1: "a:1", 2: "b:1", 3: "c:1", 4: "d:1"}, 1))
	gs := &groups{h: h}
	// Groups 10-13 on nodes 1-3 and group 14 on 1, 2, 4: node 4 holds
	// one replica, the others five or four.
	var all []partitionGroup
	for id := uint64(10); id < 14; id++ {
		all = append(all, partitionGroup{id: id, coll: 1, min: id << 32, max: id<<32 | 0xffffffff, nodes: []uint64{1, 2, 3}})
	}
	all = append(all, partitionGroup{id: 14, coll: 1, min: 14 << 32, max: 14<<32 | 0xffffffff, nodes: []uint64{1, 2, 4}})
	// Counts 5, 5, 4, 1 differ by more than one: the count rule first.
	gs.reg = (&registry{}).with(all...)
	none := func(partitionGroup) bool { return false }
	st := balanceState{enabled: true, maxMoves: 1, moves: map[uint64]groupMove{}, drains: map[uint64]time.Time{}}
	if m, ok := gs.planMove(st, nil, none, nil); !ok || m.to != 4 {
		t.Fatalf("uneven counts: %+v, %v", m, ok)
	}
	// Even counts, 3 on every node, but nodes 1 and 2 hold the big
	// groups: a bytes move would leave the counts 2 apart.
	set := func(nodes ...[]uint64) {
		all = all[:0]
		for i, ns := range nodes {
			id := uint64(10 + i)
			all = append(all, partitionGroup{id: id, coll: 1, min: id << 32, max: id<<32 | 0xffffffff, nodes: ns})
		}
		gs.reg = (&registry{}).with(all...)
	}
	set([]uint64{1, 2, 3}, []uint64{1, 2, 4}, []uint64{1, 3, 4}, []uint64{2, 3, 4})
	const mb = int64(1 << 20)
	sizes := map[uint64]int64{10: 900 * mb, 11: 300 * mb, 12: 10 * mb, 13: 10 * mb, 14: 200 * mb}
	if m, ok := gs.planMove(st, nil, none, sizes); ok {
		t.Errorf("even counts: planned %+v", m)
	}
	// Counts 4, 4, 4, 3 and node 4 holds 320 MB to node 1's 1410: group
	// 14 (not 10, which would overshoot further) moves from 1 to 4.
	set([]uint64{1, 2, 3}, []uint64{1, 2, 4}, []uint64{1, 3, 4}, []uint64{2, 3, 4}, []uint64{1, 2, 3})
	m, ok := gs.planMove(st, nil, none, sizes)
	if !ok || m.group != 14 || m.from != 1 || m.to != 4 {
		t.Fatalf("bytes uneven: %+v, %v", m, ok)
	}
	// A difference under bytesBalanceMin moves nothing.
	small := map[uint64]int64{10: 30 * mb, 11: 10 * mb, 12: mb, 13: mb, 14: 5 * mb}
	if m, ok := gs.planMove(st, nil, none, small); ok {
		t.Errorf("a small difference: planned %+v", m)
	}
}
