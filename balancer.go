package main

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/cluster"
	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/store"
)

// The balancer (on the writer, the catalog group's leader) spreads the
// partition groups' replicas and leaders over the cluster's nodes, and
// drains a node being removed (removeShard).
//
// A replica moves from node A to node B by membership changes of its
// group (cluster package, "Moving a replica"), each step recorded first
// in the catalog so that a writer that dies part way is followed by one
// that finishes the move:
//
//  1. m/gmove/<group:8> -> <from:8><from replica:8><to:8><to replica:8>
//     <started ms:8><bytes:8> is written; the replica ID on B is one the
//     group never used. B starts a non-voting replica on seeing it.
//  2. The replica is added non-voting and catches up, by snapshot when
//     the log is compacted: the writer takes the group's commit index
//     from a member and waits until B's replica applied that far.
//  3. It is promoted to a voter, A's replica is removed, and the
//     registry entry (A replaced by B) is written with the record's
//     deletion (and the move log's record of it, movelog.go) in one
//     catalog commit. A, seeing it is no longer a member,
//     drops its replica: its Raft data and its keys.
//
// A move from no node (from 0) adds a replica to a group that has fewer
// than three (one of its members was removed).
//
// A round resumes recorded moves, and plans new ones until
// maxConcurrentMoves (balancerStart's; 1 unless set) run at once, no node
// taking part in two and no group moving while it is due to split (a
// group split off during a move would not start on the move's target):
// a replica for a group short of one, off a draining node
// (m/drain/<node:8>; while one drains, nothing else moves), else from the node holding the most replicas to
// the one holding the fewest when they differ by more than one, else
// (counts even) from the node holding the most bytes to the one holding
// the fewest (planBytesMove); then, when replicas are spread, it moves
// at most one leader every leaderEvery (balanceLeaders): to even out how
// many groups each node leads, then to keep hot partitions' leaders on
// different nodes. It does nothing while a member does not answer.
// balancerStop (m/balancer) stops new moves; one under way is finished.

var (
	groupMovePrefix = []byte("m/gmove/")
	balancerKey     = []byte("m/balancer")
	drainPrefix     = []byte("m/drain/")
)

func groupMoveKey(id uint64) []byte { return idKey(groupMovePrefix, id) }
func drainKey(node uint64) []byte   { return idKey(drainPrefix, node) }

// groupMove is one replica move under way.
type groupMove struct {
	group             uint64
	from, fromReplica uint64
	to, toReplica     uint64
	started           time.Time
	bytes             int64 // the partition's bytes when it began
	phase             string
	done              bool
	copied            int64 // the bytes the target copied in (watchCopy)
}

func (m groupMove) encode() []byte {
	b := make([]byte, 0, 48)
	for _, v := range []uint64{m.from, m.fromReplica, m.to, m.toReplica, uint64(m.started.UnixMilli()), uint64(m.bytes)} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func decodeMove(key, v []byte) (groupMove, error) {
	if len(key) != len(groupMovePrefix)+8 || len(v) != 48 {
		return groupMove{}, fmt.Errorf("move record %x=%x is malformed", key, v)
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(v[8*i:]) }
	return groupMove{group: binary.BigEndian.Uint64(key[len(groupMovePrefix):]), from: u(0), fromReplica: u(1),
		to: u(2), toReplica: u(3), started: time.UnixMilli(int64(u(4))), bytes: int64(u(5))}, nil
}

// balanceState is what the catalog says of the balancer.
type balanceState struct {
	enabled  bool
	maxMoves int                  // replica moves at once (balancerStart's maxConcurrentMoves)
	moves    map[uint64]groupMove // by group
	drains   map[uint64]time.Time // draining nodes, since
}

func readBalanceState(t kv.Txn) (balanceState, error) {
	st := balanceState{enabled: true, maxMoves: defaultMaxMoves, moves: map[uint64]groupMove{}, drains: map[uint64]time.Time{}}
	if item, err := t.Get(balancerKey); err == nil {
		_ = item.Value(func(v []byte) error {
			st.enabled, st.maxMoves = decodeBalancerSettings(v)
			return nil
		})
	} else if !errors.Is(err, kv.ErrNotFound) {
		return st, err
	}
	err := scanPrefix(t, groupMovePrefix, func(k, v []byte) error {
		m, err := decodeMove(k, v)
		st.moves[m.group] = m
		return err
	})
	if err != nil {
		return st, err
	}
	err = scanPrefix(t, drainPrefix, func(k, v []byte) error {
		if len(k) != len(drainPrefix)+8 || len(v) != 8 {
			return fmt.Errorf("drain record %x=%x is malformed", k, v)
		}
		st.drains[binary.BigEndian.Uint64(k[len(drainPrefix):])] = time.UnixMilli(int64(binary.BigEndian.Uint64(v)))
		return nil
	})
	return st, err
}

// m/balancer's value: <enabled:1>[<max moves:4>] (the count absent:
// defaultMaxMoves).
func decodeBalancerSettings(v []byte) (enabled bool, maxMoves int) {
	enabled, maxMoves = len(v) == 0 || v[0] != 0, defaultMaxMoves
	if len(v) >= 5 {
		if n := int(binary.BigEndian.Uint32(v[1:])); n >= 1 && n <= engine.MaxConcurrentMoves {
			maxMoves = n
		}
	}
	return enabled, maxMoves
}

func encodeBalancerSettings(enabled bool, maxMoves int) []byte {
	v := []byte{0}
	if enabled {
		v[0] = 1
	}
	return binary.BigEndian.AppendUint32(v, uint32(maxMoves))
}

// scanPrefix calls fn with every key and value under prefix.
func scanPrefix(t kv.Txn, prefix []byte, fn func(k, v []byte) error) error {
	it := t.NewIterator(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if err := item.Value(func(v []byte) error { return fn(item.Key(), v) }); err != nil {
			return err
		}
	}
	return nil
}

// balancer is the writer's balancing loop and what it shows.
type balancer struct {
	gs      *groups
	busy    atomic.Bool // a round runs
	rounds  atomic.Int64
	mu      sync.Mutex
	current map[uint64]*groupMove // moves this writer is making, by group
	paused  string                // why the last round did nothing ("": it did not pause)
	// lastLeaderMove is when this writer last moved a leader.
	lastLeaderMove time.Time
	// failures are the error texts of failed attempts recorded, by move
	// (movelog.go).
	failures map[string]map[string]bool
}

func newBalancer(gs *groups) *balancer {
	return &balancer{gs: gs, current: map[uint64]*groupMove{}}
}

// removeWithin bounds a move's removal of the old replica (commits wait
// meanwhile when the writer's own replica leaves); a round tries again.
const removeWithin = 30 * time.Second

// defaultMaxMoves is how many replicas move at once until
// balancerStart's maxConcurrentMoves says otherwise.
const defaultMaxMoves = 1

// balanceEvery is how often the writer runs a round.
const balanceEvery = time.Second

// maybeRound starts a round on w unless one runs or ran within
// balanceEvery.
func (b *balancer) maybeRound(w *writer) {
	if !b.busy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer func() {
			time.Sleep(balanceEvery)
			b.busy.Store(false)
		}()
		if err := b.round(w); err != nil && b.gs.h.cur.Load() == w {
			b.gs.h.logger.Warn("balancing the cluster's partitions", "err", err)
		}
	}()
}

func (b *balancer) setPaused(why string) {
	b.mu.Lock()
	changed := b.paused != why
	b.paused = why
	b.mu.Unlock()
	if changed && why != "" {
		b.gs.h.logger.Info("the balancer waits", "why", why)
	}
}

// round is one balancing round on writer w.
func (b *balancer) round(w *writer) error {
	gs := b.gs
	if w.open.Load() == nil {
		return nil
	}
	b.rounds.Add(1)
	st, err := gs.balanceState()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if down := gs.downMembers(ctx); len(down) > 0 {
		b.setPaused(fmt.Sprintf("node %v does not answer", down))
		return nil
	}
	moves := slices.Collect(maps.Values(st.moves))
	if !st.enabled {
		b.setPaused("stopped (balancerStop)")
	} else {
		b.setPaused("")
		for len(moves) < st.maxMoves {
			m, ok, err := b.record(w, st, moves)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			moves = append(moves, m)
		}
	}
	if len(moves) > 0 {
		// Recorded moves are finished (a writer before this one may have
		// left them part way) beside the new ones; the next round plans
		// with the registry they leave.
		errs := make([]error, len(moves))
		var wg sync.WaitGroup
		for i, m := range moves {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := b.finish(ctx, w, m); err != nil {
					errs[i] = fmt.Errorf("moving group %d's replica from node %d to node %d: %w", m.group, m.from, m.to, err)
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if !st.enabled {
		return nil
	}
	if time.Since(b.lastLeaderMove) < leaderEvery {
		return nil
	}
	moved, err := gs.balanceLeaders(ctx)
	if moved {
		b.lastLeaderMove = time.Now()
	}
	return err
}

// balanceState reads the balancer's records from this node's catalog
// replica.
func (gs *groups) balanceState() (balanceState, error) {
	kvs, err := gs.h.node.KV(dataGroup)
	if err != nil {
		return balanceState{}, err
	}
	var st balanceState
	err = kvs.View(func(t kv.Txn) error { st, err = readBalanceState(t); return err })
	return st, err
}

// downMembers are the members that do not answer.
func (gs *groups) downMembers(ctx context.Context) []uint64 {
	v := gs.h.view.Load()
	var mu sync.Mutex
	var down []uint64
	var wg sync.WaitGroup
	for id, addr := range v.clients {
		if id == gs.h.self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if _, _, err := helloApplied(hctx, addr); err != nil {
				mu.Lock()
				down = append(down, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(down)
	return down
}

// replicaCounts are how many replicas each member holds.
func replicaCounts(reg *registry, members []uint64) map[uint64]int {
	held := map[uint64]int{}
	for _, n := range members {
		held[n] = 0
	}
	for _, g := range reg.all {
		for _, n := range g.members() {
			if _, ok := held[n]; ok {
				held[n]++
			}
		}
	}
	return held
}

// planMove chooses the next replica to move: off a draining node first,
// else from the most to the least loaded node when they differ by more
// than one. Moves under way (busy) count as done, and no node takes
// part in two at once, nor a group in two; a group due to split (skip)
// does not move.
func (gs *groups) planMove(st balanceState, busy []groupMove, skip func(partitionGroup) bool, sizes map[uint64]int64) (groupMove, bool) {
	reg := gs.registry()
	members := slices.Sorted(maps.Keys(gs.h.view.Load().raft))
	held := replicaCounts(reg, members)
	inMove := map[uint64]bool{} // nodes
	moving := map[uint64]bool{} // groups
	for _, m := range busy {
		moving[m.group] = true
		inMove[m.from], inMove[m.to] = true, true
		if _, ok := held[m.from]; ok && m.from != 0 {
			held[m.from]--
		}
		if _, ok := held[m.to]; ok {
			held[m.to]++
		}
	}
	var targets []uint64
	for _, n := range members {
		if _, draining := st.drains[n]; !draining {
			targets = append(targets, n)
		}
	}
	candidates := make([]partitionGroup, 0, len(reg.all))
	for _, g := range reg.all {
		if !moving[g.id] && !skip(g) {
			candidates = append(candidates, g)
		}
	}
	// least is the target holding fewest replicas that holds none of g.
	least := func(g partitionGroup) (uint64, bool) {
		var best uint64
		found := false
		for _, n := range targets {
			if slices.Contains(g.members(), n) || inMove[n] {
				continue
			}
			if !found || held[n] < held[best] {
				best, found = n, true
			}
		}
		return best, found
	}
	// A group with fewer replicas than it should have (a member was
	// removed, or lost) gets one on the least loaded node first.
	for _, g := range candidates {
		if len(g.members()) < replicasPerGroup {
			if to, ok := least(g); ok {
				return groupMove{group: g.id, to: to}, true
			}
		}
	}
	for _, from := range slices.Sorted(maps.Keys(st.drains)) {
		if inMove[from] {
			continue
		}
		for _, g := range candidates {
			if !slices.Contains(g.members(), from) {
				continue
			}
			if to, ok := least(g); ok {
				return groupMove{group: g.id, from: from, to: to}, true
			}
		}
	}
	if len(st.drains) > 0 || len(targets) < 2 {
		// While a node drains, only its replicas move: spreading the
		// others waits until it has left.
		return groupMove{}, false
	}
	byLoad := slices.Clone(targets)
	slices.SortStableFunc(byLoad, func(a, b uint64) int { return held[b] - held[a] })
	most := byLoad[0]
	if inMove[most] {
		return groupMove{}, false
	}
	for _, g := range candidates {
		if !slices.Contains(g.members(), most) {
			continue
		}
		if to, ok := least(g); ok && held[most]-held[to] > 1 {
			return groupMove{group: g.id, from: most, to: to}, true
		}
	}
	return planBytesMove(reg, targets, held, inMove, busy, candidates, sizes)
}

// Bytes are balanced once counts are: a replica moves from the node
// holding the most bytes to the one holding the fewest when they differ
// by more than bytesBalanceMin and bytesBalanceShare of the larger, the
// lighter holds one replica fewer (so the counts swap and stay within
// one of each other: the count rule does not move it back), and the
// replica narrows the difference by at least a fifth.
const (
	bytesBalanceMin   = 64 << 20
	bytesBalanceShare = 0.25
)

func planBytesMove(reg *registry, targets []uint64, held map[uint64]int, inMove map[uint64]bool, busy []groupMove,
	candidates []partitionGroup, sizes map[uint64]int64) (groupMove, bool) {
	if len(sizes) == 0 {
		return groupMove{}, false
	}
	bytesOf := map[uint64]int64{}
	for _, g := range reg.all {
		for _, n := range g.members() {
			bytesOf[n] += sizes[g.id]
		}
	}
	for _, m := range busy {
		if m.from != 0 {
			bytesOf[m.from] -= sizes[m.group]
		}
		bytesOf[m.to] += sizes[m.group]
	}
	var free []uint64
	for _, n := range targets {
		if !inMove[n] {
			free = append(free, n)
		}
	}
	if len(free) < 2 {
		return groupMove{}, false
	}
	slices.SortStableFunc(free, func(a, b uint64) int { return cmp.Compare(bytesOf[b], bytesOf[a]) })
	heavy, light := free[0], free[len(free)-1]
	diff := bytesOf[heavy] - bytesOf[light]
	if held[heavy] != held[light]+1 || diff <= bytesBalanceMin || float64(diff) <= bytesBalanceShare*float64(bytesOf[heavy]) {
		return groupMove{}, false
	}
	best, bestLeft := groupMove{}, diff
	for _, g := range candidates {
		members := g.members()
		if !slices.Contains(members, heavy) || slices.Contains(members, light) {
			continue
		}
		left := diff - 2*sizes[g.id] // the difference after the move
		if left < 0 {
			left = -left
		}
		if left < bestLeft {
			best, bestLeft = groupMove{group: g.id, from: heavy, to: light}, left
		}
	}
	if best.group == 0 || bestLeft > diff*4/5 {
		return groupMove{}, false
	}
	return best, true
}

// record plans the next move beside those under way (busy) and records
// it, with the new replica's ID, for finish to make; false: none is due.
// It plans, and writes the record, under the groups' lock, as a split
// runs: no group splits while a replica of it moves (the group split off
// would start without the replica being added), and no move begins
// while a split is due.
func (b *balancer) record(w *writer, st balanceState, busy []groupMove) (groupMove, bool, error) {
	gs := b.gs
	splitting := func() (func(partitionGroup) bool, error) {
		pending, err := gs.pendingSplits()
		if err != nil {
			return nil, err
		}
		return func(g partitionGroup) bool {
			_, reserved := pending[g.id]
			return reserved || gs.splitDue(w, g)
		}, nil
	}
	gs.mu.Lock()
	skip, err := splitting()
	var m groupMove
	var ok bool
	sizes := gs.groupSizes(w)
	if err == nil {
		m, ok = gs.planMove(st, busy, skip, sizes)
	}
	gs.mu.Unlock()
	if err != nil || !ok {
		return groupMove{}, false, err
	}
	g, ok := gs.registry().byID(m.group)
	if !ok {
		return groupMove{}, false, fmt.Errorf("group %d is not registered", m.group)
	}
	// The membership is read without the groups' lock (a member may be
	// slow to answer); the split check is made again with it, with the
	// record's write.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ms, err := gs.membership(ctx, g.id)
	if err != nil {
		return groupMove{}, false, err
	}
	if m.from != 0 {
		m.fromReplica = g.replicaOf(m.from)
	}
	m.toReplica = m.to
	if used(ms, m.to) {
		m.toReplica = ms.NewReplicaID()
	}
	m.started = time.Now()
	m.bytes = sizes[g.id]
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if skip, err = splitting(); err != nil {
		return groupMove{}, false, err
	}
	if now, ok := gs.registry().byID(g.id); !ok || skip(now) {
		return groupMove{}, false, nil // a split came first; the next round plans again
	}
	if err := gs.catalogTxn(w, func(tx kv.Txn) error { return tx.Set(groupMoveKey(g.id), m.encode()) }); err != nil {
		return groupMove{}, false, err
	}
	gs.noteMove(m)
	gs.h.logger.Info("moving a partition's replica", "group", g.id, "from", m.from, "to", m.to, "replica", m.toReplica, "bytes", m.bytes)
	return m, true, nil
}

// used is whether replica ID id was ever used in the group.
func used(ms cluster.Membership, id uint64) bool {
	_, voter := ms.Voters[id]
	_, nv := ms.NonVoting[id]
	return voter || nv || ms.Removed[id]
}

// finish takes recorded move m from wherever it is to its end.
func (b *balancer) finish(ctx context.Context, w *writer, m groupMove) (err error) {
	gs := b.gs
	b.mu.Lock()
	cur := &m
	b.current[m.group] = cur
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.current, m.group)
		b.mu.Unlock()
	}()
	defer func() {
		if err != nil {
			b.recordFailure(w, cur, err)
		}
	}()
	var phases []string // each phase's duration, for the log
	phaseStart := time.Now()
	phase := func(p string) {
		b.mu.Lock()
		if cur.phase != "" {
			phases = append(phases, fmt.Sprintf("%s %v", cur.phase, time.Since(phaseStart).Round(time.Millisecond)))
		}
		cur.phase = p
		phaseStart = time.Now()
		b.mu.Unlock()
	}
	g, ok := gs.registry().byID(m.group)
	if !ok {
		// The collection was dropped: nothing to move.
		return gs.catalogTxn(w, func(tx kv.Txn) error { return tx.Delete(groupMoveKey(m.group)) })
	}
	v := gs.h.view.Load()
	ms, err := gs.membership(ctx, g.id)
	if err != nil {
		return err
	}
	toAddr, ok := v.raft[m.to]
	if !ok {
		return b.abort(ctx, w, cur, g, ms, fmt.Sprintf("node %d left the cluster", m.to))
	}
	if _, voter := ms.Voters[m.toReplica]; !voter {
		if _, nv := ms.NonVoting[m.toReplica]; !nv {
			// The leader's log compacted first: the new replica then
			// catches up from a snapshot of the group's keys, not by
			// applying every entry again.
			phase("compacting")
			if leader, ok := gs.leaderNode(ctx, g); ok {
				var err error
				if leader == gs.h.self {
					err = gs.h.node.CompactGroup(ctx, g.id)
				} else {
					err = gs.peers.Compact(ctx, leader, g.id)
				}
				if err != nil {
					gs.h.logger.Warn("compacting a group's log before a move", "group", g.id, "err", err)
				}
			}
			phase("adding")
			if err := gs.memberChange(ctx, g.id, "nonVoting", m.toReplica, toAddr); err != nil {
				return err
			}
		}
		phase("catching up")
		commit, err := gs.commitIndex(ctx, g.id)
		if err != nil {
			return err
		}
		stopWatch := b.watchCopy(ctx, cur)
		err = gs.peers.WaitApplied(ctx, m.to, g.id, commit)
		stopWatch()
		if err != nil {
			return err
		}
		phase("promoting")
		if err := gs.memberChange(ctx, g.id, "add", m.toReplica, toAddr); err != nil {
			return err
		}
	}
	if b.copiedSoFar(cur) == 0 {
		b.readCopied(ctx, cur) // a move resumed after its replica caught up
	}
	removing := false
	if m.from != 0 {
		_, still := ms.Voters[m.fromReplica]
		removing = still || !ms.Removed[m.fromReplica]
	}
	if removing {
		if leader, ok := gs.leaderNode(ctx, g); ok && leader == m.from {
			phase("moving the leader")
			if err := gs.transferLeader(ctx, g, m.to); err != nil {
				return err
			}
		}
	}
	// No commit is routed while the writer's own replicas of the group
	// change: one it loses can commit nothing more, and one it gains is
	// read from only once it applied every commit acknowledged so far.
	// (The registry's lock first, as a split takes them.) A move between
	// two other nodes changes nothing the writer routes through, and
	// holds back no commit nor the node's loop while the old replica is
	// removed; the registry's lock is taken for the recording.
	own := m.from == gs.h.self || m.to == gs.h.self
	if own {
		gs.mu.Lock()
		defer gs.mu.Unlock()
		gs.routing.Lock()
		defer gs.routing.Unlock()
	}
	if removing {
		phase("removing the old replica")
		rctx, cancel := context.WithTimeout(ctx, removeWithin)
		err := gs.memberChange(rctx, g.id, "remove", m.fromReplica, "")
		cancel()
		if err != nil {
			return err
		}
		gs.h.crashPoint(crashMoveRemoved)
	}
	if !own {
		gs.mu.Lock()
		defer gs.mu.Unlock()
	}
	if m.to == gs.h.self {
		b := cluster.NewBatch()
		b.Put(groupFenceKey(g.id), w.claim)
		if err := gs.h.node.Propose(ctx, g.id, b); err != nil {
			return fmt.Errorf("catching up this node's new replica: %w", err)
		}
	}
	phase("recording")
	var now partitionGroup
	err = gs.catalogTxn(w, func(tx kv.Txn) error {
		var err error
		now, err = updateGroup(tx, g.id, func(g *partitionGroup) {
			g.dropMember(m.from)
			if !slices.Contains(g.members(), m.to) {
				g.joined = append(g.joined, m.to)
			}
			if m.toReplica != m.to {
				if g.replicas == nil {
					g.replicas = map[uint64]uint64{}
				}
				g.replicas[m.to] = m.toReplica
			}
		})
		if err != nil {
			return err
		}
		if err := writeMoveLog(tx, b.moveRecord(w, cur, g, nil)); err != nil {
			return err
		}
		return tx.Delete(groupMoveKey(g.id))
	})
	if err != nil {
		return err
	}
	gs.setRegistry(gs.registry().with(now))
	phase("")
	gs.h.logger.Info("moved a partition's replica", "group", g.id, "from", m.from, "to", m.to,
		"bytes", m.bytes, "duration", time.Since(m.started).Round(time.Millisecond).String(),
		"bytesCopied", b.copiedSoFar(cur), "phases", strings.Join(phases, ", "))
	return nil
}

// abort ends move m without its target (a node that left the cluster):
// the target's replica leaves the group's membership, and the registry
// loses the source too when its replica was removed already (the repair
// rule then adds a replica elsewhere).
func (b *balancer) abort(ctx context.Context, w *writer, cur *groupMove, g partitionGroup, ms cluster.Membership, why string) error {
	gs := b.gs
	m := *cur
	_, voter := ms.Voters[m.toReplica]
	if _, nonVoting := ms.NonVoting[m.toReplica]; voter || nonVoting {
		if err := gs.memberChange(ctx, m.group, "remove", m.toReplica, ""); err != nil {
			return fmt.Errorf("aborting the move (%s): %w", why, err)
		}
	}
	_, fromVoter := ms.Voters[m.fromReplica]
	dropFrom := m.from != 0 && !fromVoter
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gs.routing.Lock()
	defer gs.routing.Unlock()
	var now partitionGroup
	err := gs.catalogTxn(w, func(tx kv.Txn) error {
		if dropFrom {
			var err error
			if now, err = updateGroup(tx, m.group, func(g *partitionGroup) { g.dropMember(m.from) }); err != nil {
				return err
			}
		}
		if err := writeMoveLog(tx, b.moveRecord(w, cur, g, errors.New(why))); err != nil {
			return err
		}
		return tx.Delete(groupMoveKey(m.group))
	})
	if err != nil {
		return err
	}
	if dropFrom {
		gs.setRegistry(gs.registry().with(now))
	}
	gs.h.logger.Warn("gave up moving a partition's replica", "group", m.group, "from", m.from, "to", m.to, "why", why)
	return nil
}

// splitDue says a boundary of g's collection's partition map lies inside
// g's range: reconcile will split it.
func (gs *groups) splitDue(w *writer, g partitionGroup) bool {
	st := w.open.Load()
	if st == nil {
		return false
	}
	_, due := splitAt(st, g)
	return due
}

// splitAt is the first boundary of g's collection's partition map inside
// g's range, where reconcile splits it.
func splitAt(st *store.Store, g partitionGroup) (uint64, bool) {
	c := st.CollectionByID(g.coll)
	if c == nil {
		return 0, false
	}
	for _, p := range c.Map().Partitions() {
		if p.Min > g.min && p.Min <= g.max {
			return p.Min, true
		}
	}
	return 0, false
}

// groupSizes are the bytes of every registered group's partitions, from
// the writer's statistics, by group (a group unknown there is absent).
func (gs *groups) groupSizes(w *writer) map[uint64]int64 {
	out := map[uint64]int64{}
	st := w.open.Load()
	if st == nil {
		return out
	}
	for coll, groups := range gs.registry().byColl {
		c := st.CollectionByID(coll)
		if c == nil {
			continue
		}
		stats, err := st.PartitionStats(c, 0)
		if err != nil {
			continue
		}
		for _, p := range stats {
			i := sort.Search(len(groups), func(i int) bool { return groups[i].max >= p.Partition.Min })
			if i < len(groups) && groups[i].min <= p.Partition.Min {
				out[groups[i].id] += p.Counts.Bytes + p.Counts.KeyBytes + p.Counts.IndexBytes
			}
		}
	}
	return out
}

// voterHere is whether this node runs a replica of group as one of its
// registered members (not one a move is adding, which knows nothing
// before it has caught up).
func (gs *groups) voterHere(group uint64) bool {
	if group == dataGroup {
		return gs.h.node.Started(group) // every node holds the catalog
	}
	g, ok := gs.registry().byID(group)
	return ok && gs.h.node.Started(group) && slices.Contains(g.members(), gs.h.self)
}

// routesHere is whether reads and commits of group go to this node's
// replica: voterHere, but not for a replica a recorded move is taking
// away. Once removed from the group, before the registry says so (a
// writer died part way), it would hold every proposal and read until
// its time ran out; other members serve them.
func (gs *groups) routesHere(group uint64) bool {
	if m, moving := gs.moveOf(group); moving && m.from == gs.h.self && group != dataGroup {
		return false
	}
	return gs.voterHere(group)
}

// membership reads group's membership here or through a member.
func (gs *groups) membership(ctx context.Context, group uint64) (cluster.Membership, error) {
	if gs.voterHere(group) {
		// A replica a move removed before the registry said so cannot
		// read it: the other members can.
		lctx, cancel := context.WithTimeout(ctx, localMembershipWithin)
		ms, err := gs.h.node.Membership(lctx, group)
		cancel()
		if err == nil || ctx.Err() != nil {
			return ms, err
		}
	}
	return gs.peers.Membership(ctx, group)
}

// localMembershipWithin bounds a read of a group's membership through
// this node's replica before the other members are asked.
const localMembershipWithin = 5 * time.Second

// commitIndex is the group's commit index, here or through a member.
func (gs *groups) commitIndex(ctx context.Context, group uint64) (uint64, error) {
	if gs.voterHere(group) {
		return gs.h.node.CommitIndex(ctx, group)
	}
	return gs.peers.CommitIndex(ctx, group)
}

// memberChange changes group's membership (kind "add", "nonVoting" or
// "remove"), here or through a member.
func (gs *groups) memberChange(ctx context.Context, group uint64, kind string, replica uint64, addr string) error {
	local := gs.voterHere(group)
	if g, ok := gs.registry().byID(group); ok && kind == "remove" && replica == g.replicaOf(gs.h.self) {
		// A replica removed learns no more of its group's membership:
		// another member makes the change and sees it done.
		local = false
	}
	if local {
		return localMemberChange(ctx, gs.h.node, group, kind, replica, addr)
	}
	return gs.peers.Member(ctx, group, kind, replica, addr)
}

func localMemberChange(ctx context.Context, n *cluster.Node, group uint64, kind string, replica uint64, addr string) error {
	switch kind {
	case "add":
		return n.AddReplica(ctx, group, replica, addr)
	case "nonVoting":
		return n.AddNonVoting(ctx, group, replica, addr)
	case "remove":
		return n.RemoveReplica(ctx, group, replica)
	}
	return fmt.Errorf("unknown membership change %q", kind)
}

// balanceLeaders moves at most one leader: first to even out how many
// groups each node leads (from a node leading the most to a member node
// leading at least two fewer, the coldest such group), then to keep hot
// partitions' leaders apart (a group is hot when its partitions consumed
// at least 1/nodes of the request units of the last minute: a node
// leading two of them hands the cooler one to a member node leading
// none and no more groups than it).
func (gs *groups) balanceLeaders(ctx context.Context) (bool, error) {
	reg := gs.registry()
	w := gs.h.cur.Load()
	if len(reg.all) == 0 || w == nil {
		return false, nil
	}
	ru := gs.groupRU(w, reg)
	var total float64
	for _, v := range ru {
		total += v
	}
	nodes := slices.Sorted(maps.Keys(gs.h.view.Load().raft))
	hot := func(id uint64) bool { return total > 0 && ru[id]*float64(len(nodes)) >= total }
	leaders := map[uint64]uint64{} // group -> node
	count := map[uint64]int{}
	hots := map[uint64]int{}
	for _, n := range nodes {
		count[n] = 0
	}
	for _, g := range reg.all {
		leader, ok := gs.leaderNode(ctx, g)
		if !ok {
			return false, nil // an election: next round
		}
		leaders[g.id] = leader
		count[leader]++
		if hot(g.id) {
			hots[leader]++
		}
	}
	// Coldest first.
	byLoad := slices.Clone(reg.all)
	slices.SortStableFunc(byLoad, func(a, b partitionGroup) int {
		switch {
		case ru[a.id] < ru[b.id]:
			return -1
		case ru[a.id] > ru[b.id]:
			return 1
		}
		return 0
	})
	// From the nodes leading the most, in turn (the first may share no
	// group with a node leading two fewer while another does), to a
	// member leading at least two fewer: each such move narrows the
	// spread, so none is undone.
	byCount := slices.Clone(nodes)
	slices.SortStableFunc(byCount, func(a, b uint64) int { return count[b] - count[a] })
	for _, from := range byCount {
		for _, g := range byLoad {
			if leaders[g.id] != from {
				continue
			}
			for _, to := range g.members() {
				if count[to] <= count[from]-2 && (!hot(g.id) || hots[to] == 0) {
					gs.h.logger.Info("moving a partition's leader", "group", g.id, "from", from, "to", to, "why", "leaders per node")
					return true, gs.transferLeader(ctx, g, to)
				}
			}
		}
	}
	for i := len(byLoad) - 1; i >= 0; i-- { // hottest first: move the cooler of two
		g := byLoad[i]
		from := leaders[g.id]
		if !hot(g.id) || hots[from] < 2 {
			continue
		}
		hots[from]-- // the hottest stays
		for j := i - 1; j >= 0; j-- {
			c := byLoad[j]
			if leaders[c.id] != from || !hot(c.id) {
				continue
			}
			for _, to := range c.members() {
				if to != from && hots[to] == 0 && count[to] <= count[from] {
					gs.h.logger.Info("moving a partition's leader", "group", c.id, "from", from, "to", to, "why", "hot partitions apart")
					return true, gs.transferLeader(ctx, c, to)
				}
			}
		}
		break
	}
	return false, nil
}

// leaderNode is the node leading g, as a member sees it.
func (gs *groups) leaderNode(ctx context.Context, g partitionGroup) (uint64, bool) {
	var replica uint64
	var ok bool
	if gs.voterHere(g.id) {
		replica, _, ok = gs.h.node.LeaderTerm(g.id)
	} else {
		var err error
		replica, err = gs.peers.Leader(ctx, g.id)
		ok = err == nil && replica != 0
	}
	if !ok {
		return 0, false
	}
	return g.nodeOf(replica)
}

// transferLeader asks g's leader to hand its place to node to's replica
// and waits (a few seconds at most) until it has. No commit is routed
// meanwhile: a leader handing over drops the proposals it gets, whose
// outcome its clients would then not learn.
func (gs *groups) transferLeader(ctx context.Context, g partitionGroup, to uint64) error {
	gs.routing.Lock()
	defer gs.routing.Unlock()
	var err error
	if gs.voterHere(g.id) {
		err = gs.h.node.TransferLeader(g.id, g.replicaOf(to))
	} else {
		err = gs.peers.Transfer(ctx, g.id, g.replicaOf(to))
	}
	if err != nil {
		return err
	}
	from, _ := gs.leaderNode(ctx, g)
	for deadline := time.Now().Add(leaderTransferWait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if leader, ok := gs.leaderNode(ctx, g); ok && (leader == to || leader != from) {
			return nil
		}
	}
	return nil // the next round sees where it went
}

// leaderTransferWait bounds how long commits wait for a leader to hand
// over.
const leaderTransferWait = time.Second

// leaderEvery is how often at most the balancer moves a leader.
const leaderEvery = 3 * time.Second

// groupRU is the request units each group's partitions consumed lately.
func (gs *groups) groupRU(w *writer, reg *registry) map[uint64]float64 {
	out := map[uint64]float64{}
	st := w.open.Load()
	if st == nil || w.eng == nil {
		return out
	}
	for _, g := range reg.all {
		out[g.id] = w.eng.PartitionLoad(st.CollectionByID(g.coll), g.min, g.max)
	}
	return out
}

// status is what the balancer shows (balancerStatus).
func (b *balancer) status() engine.BalancerStatus {
	st, _ := b.gs.balanceState()
	b.mu.Lock()
	out := engine.BalancerStatus{Enabled: st.enabled, MaxMoves: st.maxMoves, Rounds: b.rounds.Load(), InRound: len(b.current) > 0, Paused: b.paused}
	b.mu.Unlock()
	out.Moves = b.moves()
	for n := range st.drains {
		out.Draining = append(out.Draining, n)
	}
	slices.Sort(out.Draining)
	return out
}

// moves are the moves this writer is making.
func (b *balancer) moves() []engine.MoveStatus {
	reg := b.gs.registry()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []engine.MoveStatus
	for _, m := range b.current {
		st := engine.MoveStatus{Group: m.group, From: m.from, To: m.to, Started: m.started, PartitionBytes: m.bytes,
			Tracked: true, Phase: m.phase, BytesCopied: m.copied}
		if g, ok := reg.byID(m.group); ok {
			st.Coll, st.Min, st.Max = g.coll, g.min, g.max
		}
		out = append(out, st)
	}
	return out
}

var _ engine.Balancer = (*balancer)(nil)

func (b *balancer) Status() engine.BalancerStatus { return b.status() }

func (b *balancer) SetEnabled(_ context.Context, on bool, maxMoves int) error {
	return b.setEnabled(on, maxMoves)
}

// RemoveShard starts draining node, or follows it to its end: once the
// node holds no replica of a partition, it leaves the cluster (a writer
// draining itself first hands the catalog's lead to another node, which
// finishes when asked again).
func (b *balancer) RemoveShard(ctx context.Context, node uint64) (engine.RemoveShardState, error) {
	gs := b.gs
	w := gs.h.cur.Load()
	if w == nil {
		return engine.RemoveShardState{}, errors.New("this node is no longer the cluster's writer")
	}
	v := gs.h.view.Load()
	if _, ok := v.raft[node]; !ok {
		return engine.RemoveShardState{}, engine.ShardNotFound("removeShard: node%d is not a shard of this cluster (members: %s)", node, formatMembers(v.raft))
	}
	st, err := gs.balanceState()
	if err != nil {
		return engine.RemoveShardState{}, err
	}
	if _, draining := st.drains[node]; !draining {
		for other := range st.drains {
			return engine.RemoveShardState{}, engine.ConflictingOperation("removeShard: node%d is being removed already: one node leaves at a time (ask removeShard node%d until it completes)", other, other)
		}
		if len(v.raft)-1 < replicasPerGroup {
			return engine.RemoveShardState{}, engine.IllegalOperation("removeShard: removing node%d would leave %d nodes: a cluster keeps at least %d, one per replica of a partition", node, len(v.raft)-1, replicasPerGroup)
		}
		ms := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixMilli()))
		if err := gs.catalogTxn(w, func(tx kv.Txn) error { return tx.Set(drainKey(node), ms) }); err != nil {
			return engine.RemoveShardState{}, err
		}
		gs.h.logger.Info("draining a node", "node", node)
		return engine.RemoveShardState{State: "started"}, nil
	}
	var remaining int64
	for _, g := range gs.registry().all {
		if slices.Contains(g.members(), node) {
			remaining++
		}
	}
	if remaining > 0 || len(st.moves) > 0 {
		return engine.RemoveShardState{State: "ongoing", Remaining: remaining}, nil
	}
	if node == gs.h.self {
		for other := range v.raft {
			if other != node {
				gs.h.logger.Info("handing the writer's place over before leaving the cluster", "to", other)
				_ = gs.h.node.TransferLeader(dataGroup, other)
				break
			}
		}
		return engine.RemoveShardState{State: "ongoing"}, nil
	}
	if err := gs.h.removeNode(ctx, node); err != nil {
		return engine.RemoveShardState{}, err
	}
	if err := gs.catalogTxn(w, func(tx kv.Txn) error { return tx.Delete(drainKey(node)) }); err != nil {
		return engine.RemoveShardState{}, err
	}
	return engine.RemoveShardState{State: "completed"}, nil
}

// setEnabled starts or stops the balancer (balancerStart, balancerStop),
// and sets how many moves it makes at once (maxMoves; 0 leaves it).
func (b *balancer) setEnabled(on bool, maxMoves int) error {
	w := b.gs.h.cur.Load()
	if w == nil {
		return errors.New("this node is no longer the cluster's writer")
	}
	return b.gs.catalogTxn(w, func(tx kv.Txn) error {
		if maxMoves == 0 {
			maxMoves = defaultMaxMoves
			if item, err := tx.Get(balancerKey); err == nil {
				if err := item.Value(func(v []byte) error { _, maxMoves = decodeBalancerSettings(v); return nil }); err != nil {
					return err
				}
			} else if !errors.Is(err, kv.ErrNotFound) {
				return err
			}
		}
		return tx.Set(balancerKey, encodeBalancerSettings(on, maxMoves))
	})
}

// status is every partition group as the writer sees it: its members,
// its leader (asked of a member for a group this node holds no replica
// of) and the move under way.
func (gs *groups) status(ctx context.Context) []engine.GroupStatus {
	reg := gs.registry()
	out := make([]engine.GroupStatus, len(reg.all))
	moves := map[uint64]engine.MoveStatus{}
	for _, m := range gs.bal.moves() { // (status() would read the catalog too)
		moves[m.Group] = m
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, g := range reg.all {
		st := engine.GroupStatus{ID: g.id, Coll: g.coll, Min: g.min, Max: g.max, Replicas: g.members()}
		if m, ok := moves[g.id]; ok {
			st.Moving = &m
		}
		out[i] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if leader, ok := gs.leaderNode(ctx, g); ok {
				out[i].Leader = leader
			}
		}()
	}
	wg.Wait()
	return out
}
