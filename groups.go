package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/cluster"
	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/shard"
)

// Partition groups (--partition-groups): every physical partition of
// every collection is a Raft group of its own, and the catalog is one
// more (dataGroup). Each group owns, in every node's Badger, the keys
// store.OwnerOf gives its collection and point range (the catalog group
// the catalog's), so the groups share key spans and judge ownership by
// key and value (cluster.GroupConfig.Owns).
//
// The registry of groups is in the catalog group: m/group/<shardID:8> ->
// <collID:4><min:8><max:8><parent:8><born:16><node id:8>*, the nodes
// being the members the group was created with and, flagged by the top
// bit, those added since (addNode adds a node to every group), and
// m/seq/group the last shardID handed out. A group is created on three
// of the cluster's nodes (all of them when there are three or fewer),
// those holding the fewest groups; a node starts its replica of a group
// only when it is one of its members, as one it was created with or as
// one added later (Join), or when it already holds one. The groups a
// node holds no replica of it reaches through the nodes that do (peers
// in peers.go, cluster.Far).
// The writer registers a collection's partitions the first time a write
// goes to one of them (ensure), starts its replicas and claims each
// group (m/gfence/<shardID:8>, a key the group owns: the writer's
// commits to the group are fenced by it as its catalog commits are by
// m/writer). Every node starts the replicas of every registered group it
// does not run yet when its catalog replica changes (startGroups), so a
// group's three replicas start within moments of its registration.
//
// A split is an entry in the group's own log: the writer, finding a
// partition boundary of the collection's map inside a group's range
// (reconcile), reserves the new group's id in the catalog
// (m/gsplit/<parent:8>), commits the parent's narrowed range to the
// parent (m/grange/<shardID:8> -> <min:8><max:8>, a key the group owns,
// which its replicas observe as they apply it: from that entry on they
// own the narrower range), then registers both ranges in the catalog.
// The new group starts on the same replicas from the keys they already
// hold: a node starts its replica of it once its replica of the parent
// has applied the split. A writer that dies part way is followed by one
// that finishes the split from what the catalog and the parent's range
// say (reconcile again).

var (
	groupRegistryPrefix = []byte("m/group/")
	groupSeqKey         = []byte("m/seq/group")
	groupFencePrefix    = []byte("m/gfence/")
)

// idKey is prefix followed by a group's id.
func idKey(prefix []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(prefix), id)
}

func groupKey(id uint64) []byte      { return idKey(groupRegistryPrefix, id) }
func groupFenceKey(id uint64) []byte { return idKey(groupFencePrefix, id) }

// partitionGroup is one registered group: collection coll's points
// [min, max].
type partitionGroup struct {
	id       uint64
	coll     uint32
	min, max uint64
	// parent is the group this one was split from (0: none): a node
	// starts its replica once its replica of the parent no longer owns
	// min, so the parent's entries before the split all apply first.
	parent uint64
	// born is the range it was created with: its spans (every replica's
	// alike, whenever it starts), which its splits never change.
	born  [2]uint64
	nodes []uint64 // the members it was created with
	// joined are nodes added to its members since (a replica moved
	// there, or addNode of an earlier version).
	joined []uint64
	// replicas are the replica IDs of members whose ID is not their
	// node's (a replica moved to a node that held the group before: a
	// removed ID never rejoins its group).
	replicas map[uint64]uint64
}

// members are the nodes that hold a replica of g.
func (g partitionGroup) members() []uint64 {
	return append(slices.Clone(g.nodes), g.joined...)
}

// replicaOf is node's replica ID in g.
func (g partitionGroup) replicaOf(node uint64) uint64 {
	if r, ok := g.replicas[node]; ok {
		return r
	}
	return node
}

// nodeOf is the member whose replica ID in g is replica (ok false: none).
func (g partitionGroup) nodeOf(replica uint64) (uint64, bool) {
	for _, n := range g.members() {
		if g.replicaOf(n) == replica {
			return n, true
		}
	}
	return 0, false
}

// A registry entry's member is <flags:1 bit><replica ID:31 bits, 0 when
// the node's id><node id:32 bits>; joinedFlag marks a node added to the
// group's members after it was created.
const (
	joinedFlag  = 1 << 63
	replicaMask = 1<<31 - 1
)

func (g partitionGroup) memberEntry(node uint64, joined bool) uint64 {
	e := node
	if r := g.replicaOf(node); r != node {
		e |= (r & replicaMask) << 32
	}
	if joined {
		e |= joinedFlag
	}
	return e
}

const groupEntryFixed = 4 + 8 + 8 + 8 + 16

func (g partitionGroup) encode() []byte {
	b := binary.BigEndian.AppendUint32(nil, g.coll)
	b = binary.BigEndian.AppendUint64(b, g.min)
	b = binary.BigEndian.AppendUint64(b, g.max)
	b = binary.BigEndian.AppendUint64(b, g.parent)
	b = binary.BigEndian.AppendUint64(b, g.born[0])
	b = binary.BigEndian.AppendUint64(b, g.born[1])
	for _, n := range g.nodes {
		b = binary.BigEndian.AppendUint64(b, g.memberEntry(n, false))
	}
	for _, n := range g.joined {
		b = binary.BigEndian.AppendUint64(b, g.memberEntry(n, true))
	}
	return b
}

func decodeGroup(key, v []byte) (partitionGroup, error) {
	if len(key) != len(groupRegistryPrefix)+8 || len(v) < groupEntryFixed || (len(v)-groupEntryFixed)%8 != 0 {
		return partitionGroup{}, fmt.Errorf("group registry entry %x=%x is malformed", key, v)
	}
	g := partitionGroup{
		id:   binary.BigEndian.Uint64(key[len(groupRegistryPrefix):]),
		coll: binary.BigEndian.Uint32(v), min: binary.BigEndian.Uint64(v[4:]), max: binary.BigEndian.Uint64(v[12:]),
		parent: binary.BigEndian.Uint64(v[20:]),
		born:   [2]uint64{binary.BigEndian.Uint64(v[28:]), binary.BigEndian.Uint64(v[36:])},
	}
	for rest := v[groupEntryFixed:]; len(rest) > 0; rest = rest[8:] {
		e := binary.BigEndian.Uint64(rest)
		n := e & (1<<32 - 1)
		if r := e >> 32 & replicaMask; r != 0 {
			if g.replicas == nil {
				g.replicas = map[uint64]uint64{}
			}
			g.replicas[n] = r
		}
		if e&joinedFlag != 0 {
			g.joined = append(g.joined, n)
		} else {
			g.nodes = append(g.nodes, n)
		}
	}
	return g, nil
}

// registry is the registered groups, by collection in point order.
type registry struct {
	byColl map[uint32][]partitionGroup
	all    []partitionGroup
}

func readRegistry(t kv.Txn) (*registry, error) {
	var all []partitionGroup
	it := t.NewIterator(kv.IterOptions{Prefix: groupRegistryPrefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var g partitionGroup
		err := it.Item().Value(func(v []byte) error {
			var err error
			g, err = decodeGroup(it.Item().Key(), v)
			return err
		})
		if err != nil {
			return nil, err
		}
		all = append(all, g)
	}
	return (&registry{}).with(all...), nil
}

// find is the group of coll that holds point.
func (r *registry) find(coll uint32, point uint64) (partitionGroup, bool) {
	gs := r.byColl[coll]
	i := sort.Search(len(gs), func(i int) bool { return gs[i].max >= point })
	if i < len(gs) && gs[i].min <= point {
		return gs[i], true
	}
	return partitionGroup{}, false
}

// catalogOwns is the catalog group's share of the spans it shares.
func catalogOwns(k, v []byte) bool {
	if bytes.HasPrefix(k, groupFencePrefix) || bytes.HasPrefix(k, groupRangePrefix) {
		return false
	}
	o, err := store.OwnerOf(k, v)
	return err == nil && o.Scope == store.ScopeCatalog
}

var (
	groupRangePrefix = []byte("m/grange/")
	groupSplitPrefix = []byte("m/gsplit/")
)

func groupRangeKey(id uint64) []byte     { return idKey(groupRangePrefix, id) }
func groupSplitKey(parent uint64) []byte { return idKey(groupSplitPrefix, parent) }

// groupRange is the points a group's replica on this node owns now: its
// registered range, narrowed by the splits its log has applied.
type groupRange struct {
	id       uint64
	coll     uint32
	min, max atomic.Uint64
}

// newGroupRange is g's range as its replica starts: the range it was
// created with, until the replica's own state (its range key, read at
// open or applied from its log) says a split narrowed it. Not the
// registry's current range: a replica that has not applied the split
// yet still owns the upper part, and the group split from it must not
// start on this node before it has.
func newGroupRange(g partitionGroup) *groupRange {
	r := &groupRange{id: g.id, coll: g.coll}
	r.min.Store(g.born[0])
	r.max.Store(g.born[1])
	return r
}

// apply observes a write of the range key (cluster.GroupConfig.OnApply).
func (r *groupRange) apply(_, v []byte) {
	if len(v) == 16 {
		r.min.Store(binary.BigEndian.Uint64(v))
		r.max.Store(binary.BigEndian.Uint64(v[8:]))
	}
}

// owns is the group's share of its spans, judged with lo..hi (nil: the
// range as it is at each call).
func (r *groupRange) owns(fixed *[2]uint64) func(k, v []byte) bool {
	fence, rng := groupFenceKey(r.id), groupRangeKey(r.id)
	return func(k, v []byte) bool {
		if bytes.HasPrefix(k, groupFencePrefix) || bytes.HasPrefix(k, groupRangePrefix) {
			return bytes.Equal(k, fence) || bytes.Equal(k, rng)
		}
		o, err := store.OwnerOf(k, v)
		if err != nil || o.Scope != store.ScopePartition || o.Coll != r.coll {
			return false
		}
		lo, hi := r.min.Load(), r.max.Load()
		if fixed != nil {
			lo, hi = fixed[0], fixed[1]
		}
		return o.Point >= lo && o.Point <= hi
	}
}

// freeze is owns with the range as it is now.
func (r *groupRange) freeze() func(k, v []byte) bool {
	return r.owns(&[2]uint64{r.min.Load(), r.max.Load()})
}

// sharedSpans hold keys of the catalog and of every partition.
var sharedSpans = []cluster.Span{cluster.PrefixSpan([]byte("s/")), cluster.PrefixSpan([]byte("l/"))}

func collPrefix(tag byte, coll uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{tag, '/'}, coll)
}

// spans are where g's keys can be: the documents of the range it was
// created with, its collection's counters, index entries and unique
// guards, the shared spans, its fence and its range.
func (g partitionGroup) spans() []cluster.Span {
	docs := cluster.Span{Start: binary.BigEndian.AppendUint64(collPrefix('d', g.coll), g.born[0])}
	if g.born[1] == ^uint64(0) {
		docs.End = cluster.PrefixSpan(collPrefix('d', g.coll)).End
	} else {
		docs.End = binary.BigEndian.AppendUint64(collPrefix('d', g.coll), g.born[1]+1)
	}
	return append([]cluster.Span{docs,
		cluster.PrefixSpan(collPrefix('c', g.coll)),
		cluster.PrefixSpan(collPrefix('x', g.coll)),
		cluster.PrefixSpan(collPrefix('u', g.coll)),
		cluster.PrefixSpan(groupFenceKey(g.id)),
		cluster.PrefixSpan(groupRangeKey(g.id)),
	}, sharedSpans...)
}

// catalogGroupConfig is the catalog group's configuration in a cluster
// of partition groups.
func catalogGroupConfig(g cluster.GroupConfig) cluster.GroupConfig {
	g.Spans = append([]cluster.Span{cluster.PrefixSpan([]byte("m/"))}, sharedSpans...)
	g.Owns, g.OwnsByKey = catalogOwns, store.OwnerInKey
	return g
}

// groups is a node's partition groups: the registry as it last read it,
// the ranges its replicas own, and (on the writer) the registration and
// splitting of groups.
type groups struct {
	h  *clusterHandler
	mu sync.Mutex // serialises startGroups, ensure and reconcile
	// reg is the registry as last read or written (replaced whole).
	reg   *registry
	regMu sync.RWMutex
	// ranges are this node's replicas' ranges, by group.
	ranges sync.Map // uint64 -> *groupRange
	// seen is the catalog generation startGroups last read; waiting says
	// a split group waits for its parent's replica to apply the split.
	seen    uint64
	waiting bool
	// unclaimed are groups the writer started but has not claimed yet:
	// a commit routed to one waits for its channel to close.
	unclaimed sync.Map // uint64 -> chan struct{}
	// reconciled is the catalog generation reconcile last finished at.
	reconciled atomic.Uint64
	// routing is held shared by every routed commit and exclusively by a
	// split while it changes what owns what (cluster.Replicated.Gate).
	routing sync.RWMutex
	// far are the registered groups this node runs no replica of
	// (refreshFar), reached through peers.
	far   atomic.Pointer[[]partitionGroup]
	peers *peers
	bal   *balancer
	// dropping are the groups whose replica here is being dropped.
	dropping sync.Map // uint64 -> struct{}
	// finished says the drops a crash interrupted were finished.
	finished bool
	// moving are the replica moves recorded in the catalog as
	// startGroups last read it, by group.
	moving atomic.Pointer[map[uint64]groupMove]
}

// noteMove adds a move this writer just recorded to those startGroups
// read, before it reads them again.
func (gs *groups) noteMove(m groupMove) {
	for {
		old := gs.moving.Load()
		next := map[uint64]groupMove{m.group: m}
		if old != nil {
			for id, o := range *old {
				if id != m.group {
					next[id] = o
				}
			}
		}
		if gs.moving.CompareAndSwap(old, &next) {
			return
		}
	}
}

// moveOf is the recorded move of group id's replica, if any.
func (gs *groups) moveOf(id uint64) (groupMove, bool) {
	mp := gs.moving.Load()
	if mp == nil {
		return groupMove{}, false
	}
	m, ok := (*mp)[id]
	return m, ok
}

// routed is the node's routed store over every group, those it holds no
// replica of reached through peers; w is the writer it is for (nil: a
// standby's reads).
func (gs *groups) routed(w *writer) *cluster.Replicated {
	kvs := gs.h.node.Routed(gs.route(w))
	kvs.Far = gs.peers
	return kvs
}

func (gs *groups) registry() *registry {
	gs.regMu.RLock()
	defer gs.regMu.RUnlock()
	if gs.reg == nil {
		return &registry{byColl: map[uint32][]partitionGroup{}}
	}
	return gs.reg
}

func (gs *groups) setRegistry(r *registry) {
	gs.regMu.Lock()
	gs.reg = r
	gs.regMu.Unlock()
	gs.refreshFar()
}

// byID is the registered group id.
func (r *registry) byID(id uint64) (partitionGroup, bool) {
	i, ok := slices.BinarySearchFunc(r.all, id, func(g partitionGroup, id uint64) int {
		switch {
		case g.id < id:
			return -1
		case g.id > id:
			return 1
		}
		return 0
	})
	if !ok {
		return partitionGroup{}, false
	}
	return r.all[i], true
}

func (gs *groups) rangeOf(id uint64) *groupRange {
	if r, ok := gs.ranges.Load(id); ok {
		return r.(*groupRange)
	}
	return nil
}

// gate is the routed store's commit gate.
func (gs *groups) gate() func() {
	gs.routing.RLock()
	return gs.routing.RUnlock
}

// start starts this node's replica of g: one of the members g was
// created with, or one added since (Join).
func (gs *groups) start(g partitionGroup) error {
	return gs.startAs(g, g.replicaOf(gs.h.self), false)
}

// startAs starts this node's replica of g with replica ID id; nonVoting:
// one a move adds, which joins as a non-voting member.
func (gs *groups) startAs(g partitionGroup, id uint64, nonVoting bool) error {
	cfg, r := gs.config(g)
	cfg.ReplicaID, cfg.NonVoting = id, nonVoting
	if slices.Contains(g.nodes, gs.h.self) && !nonVoting {
		raft := gs.h.view.Load().raft
		cfg.Members = map[uint64]string{}
		for _, n := range g.nodes {
			cfg.Members[g.replicaOf(n)] = raft[n]
		}
	} else {
		cfg.Join = true
	}
	gs.ranges.Store(g.id, r)
	if err := gs.h.node.StartGroup(cfg); err != nil {
		gs.ranges.Delete(g.id)
		return err
	}
	if g.parent != 0 {
		go gs.compact(g.id)
	}
	return nil
}

// config is g's configuration on this node (its replica ID and members
// left to the caller), and the range its ownership is judged by.
func (gs *groups) config(g partitionGroup) (cluster.GroupConfig, *groupRange) {
	r := newGroupRange(g)
	return cluster.GroupConfig{ShardID: g.id, Spans: g.spans(),
		Owns: r.owns(nil), OwnsByKey: store.OwnerInKey, Freeze: r.freeze, Observe: groupRangeKey(g.id), OnApply: r.apply}, r
}

// compact makes this node's replica of a group split from another start
// its log with a snapshot, once the replica runs (CompactGroup).
func (gs *groups) compact(id uint64) {
	for try := 0; try < 50; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := gs.h.node.CompactGroup(ctx, id)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	gs.h.logger.Warn("no snapshot of a split group's replica: a replica added to it later replays its log", "group", id)
}

// startGroups starts this node's replica of every registered group it
// does not run yet, when the catalog changed since it last looked (or a
// split group waits for its parent).
func (gs *groups) startGroups() error {
	gen := gs.h.node.Generation(dataGroup)
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gen == gs.seen && gs.reg != nil && !gs.waiting {
		return nil
	}
	kvs, err := gs.h.node.KV(dataGroup)
	if err != nil {
		return err
	}
	var reg *registry
	var bs balanceState
	if err := kvs.View(func(t kv.Txn) error {
		if reg, err = readRegistry(t); err != nil {
			return err
		}
		bs, err = readBalanceState(t)
		return err
	}); err != nil {
		return err
	}
	gs.moving.Store(&bs.moves)
	if !gs.finished {
		gs.finishDrops(reg)
	}
	waiting := false
	for _, g := range reg.all { // parents before the groups split from them
		mv, moving := bs.moves[g.id]
		target := moving && mv.to == gs.h.self
		member := slices.Contains(g.members(), gs.h.self) || target
		switch {
		case gs.h.node.Started(g.id):
			if !member {
				gs.drop(g.id)
			}
			continue
		case !member && gs.h.node.HasReplica(g.id, gs.h.self):
			// A replica moved away while this node was down: started to
			// be dropped.
		case !member:
			continue
		}
		if g.parent != 0 {
			if p := gs.rangeOf(g.parent); p == nil || p.max.Load() >= g.min {
				waiting = true // the parent's replica here has not applied the split yet
				continue
			}
		}
		var err error
		if target && !slices.Contains(g.members(), gs.h.self) {
			err = gs.startAs(g, mv.toReplica, true)
		} else {
			err = gs.start(g)
		}
		if err != nil {
			return err
		}
		if !member {
			gs.drop(g.id)
		}
	}
	gs.setRegistry(reg)
	gs.seen, gs.waiting = gen, waiting
	return nil
}

// finishDrops finishes the drops of replicas a crash interrupted.
func (gs *groups) finishDrops(reg *registry) {
	ids, err := gs.h.node.DroppingGroups()
	if err != nil {
		gs.h.logger.Warn("listing the replicas being dropped", "err", err)
		return
	}
	for _, id := range ids {
		g, ok := reg.byID(id)
		if !ok {
			continue // the collection was dropped: its keys went with it
		}
		cfg, _ := gs.config(g)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := gs.h.node.FinishDrop(ctx, cfg)
		cancel()
		if err != nil {
			gs.h.logger.Warn("finishing the drop of a moved replica", "group", id, "err", err)
			return
		}
	}
	gs.finished = true
}

// drop drops this node's replica of group id, which moved to another
// node (once at a time; tried again at the next catalog change if it
// fails).
func (gs *groups) drop(id uint64) {
	if _, busy := gs.dropping.LoadOrStore(id, struct{}{}); busy {
		return
	}
	go func() {
		defer gs.dropping.Delete(id)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		if err := gs.h.node.DropGroup(ctx, id); err != nil {
			gs.h.logger.Warn("dropping a replica that moved to another node", "group", id, "err", err)
			return
		}
		gs.ranges.Delete(id)
		gs.refreshFar()
		gs.h.logger.Info("dropped a replica that moved to another node", "group", id, "duration", time.Since(start).Round(time.Millisecond).String())
	}()
}

// fencedGroupKey is the group whose fence or range key is key.
func fencedGroupKey(key []byte) (uint64, bool) {
	for _, p := range [][]byte{groupFencePrefix, groupRangePrefix} {
		if bytes.HasPrefix(key, p) && len(key) == len(p)+8 {
			return binary.BigEndian.Uint64(key[len(p):]), true
		}
	}
	return 0, false
}

// route says which group keeps a key; w is the writer whose store asks
// (it registers the groups of a collection written for the first time).
func (gs *groups) route(w *writer) cluster.Route {
	return func(key, value []byte) (uint64, bool, error) {
		if len(key) > 0 && key[0] == 'x' && len(value) < 8 {
			return 0, false, nil // an index entry is judged by its value
		}
		if id, ok := fencedGroupKey(key); ok {
			return id, true, nil
		}
		o, err := store.OwnerOf(key, value)
		if err != nil {
			return 0, false, err
		}
		switch o.Scope {
		case store.ScopeCatalog:
			return dataGroup, true, nil
		case store.ScopePartition:
		default:
			return 0, false, nil
		}
		if g, ok := gs.registry().find(o.Coll, o.Point); ok {
			if ch, waiting := gs.unclaimed.Load(g.id); waiting {
				select { // a group just split off: its writer's claim first
				case <-ch.(chan struct{}):
				case <-time.After(claimTimeout):
					return 0, false, fmt.Errorf("group %d was not claimed within %v", g.id, claimTimeout)
				}
			}
			return g.id, true, nil
		}
		if w == nil {
			return 0, false, fmt.Errorf("no group holds collection %d's point %#x", o.Coll, o.Point)
		}
		g, err := gs.ensure(w, o.Coll, o.Point)
		return g.id, err == nil, err
	}
}

// catalogTxn runs fn in a transaction of the catalog group fenced by w's
// claim (not through the routed store, whose commits a split holds back).
func (gs *groups) catalogTxn(w *writer, fn func(kv.Txn) error) error {
	kvs, err := gs.h.node.KV(dataGroup)
	if err != nil {
		return err
	}
	kvs.Fence(fenceKey, w.claim)
	tx := kvs.NewTransaction(true)
	defer tx.Discard()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// nextGroupIDs hands out n new group ids in tx.
func nextGroupIDs(tx kv.Txn, n int) (uint64, error) {
	var seq uint64
	if item, err := tx.Get(groupSeqKey); err == nil {
		if err := item.Value(func(v []byte) error { seq = binary.BigEndian.Uint64(v); return nil }); err != nil {
			return 0, err
		}
	} else if !errors.Is(err, kv.ErrNotFound) {
		return 0, err
	}
	seq = max(seq, dataGroup)
	return seq + 1, tx.Set(groupSeqKey, binary.BigEndian.AppendUint64(nil, seq+uint64(n)))
}

// ensure registers, starts and claims groups for the points of
// collection coll's partitions that no group holds, and returns the one
// holding point.
func (gs *groups) ensure(w *writer, coll uint32, point uint64) (partitionGroup, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g, ok := gs.registry().find(coll, point); ok {
		return g, nil
	}
	st := w.open.Load()
	if st == nil {
		return partitionGroup{}, errors.New("the store is not open yet")
	}
	// A collection not in the catalog yet (one being built to be
	// published whole: sharding a collection that has documents) gets
	// one group for all its points; reconcile splits it along the
	// partition map once the collection is published.
	ns := fmt.Sprintf("collection %d", coll)
	parts := []shard.Partition{{Min: 0, Max: ^uint64(0)}}
	if c := st.CollectionByID(coll); c != nil {
		ns, parts = c.Namespace(), c.Map().Partitions()
	}
	reg := gs.registry()
	var added []partitionGroup
	members := slices.Sorted(maps.Keys(gs.h.view.Load().raft))
	err := gs.catalogTxn(w, func(tx kv.Txn) error {
		added = added[:0]
		place := newPlacer(reg, members)
		var fresh []partitionGroup
		for _, p := range parts {
			_, lo := reg.find(coll, p.Min)
			_, hi := reg.find(coll, p.Max)
			switch {
			case lo && hi:
				continue
			case lo || hi:
				return fmt.Errorf("%s's partition [%#x, %#x] is held by its groups in part", ns, p.Min, p.Max)
			}
			fresh = append(fresh, partitionGroup{coll: coll, min: p.Min, max: p.Max, born: [2]uint64{p.Min, p.Max}, nodes: place.next()})
		}
		first, err := nextGroupIDs(tx, len(fresh))
		if err != nil {
			return err
		}
		for i, g := range fresh {
			g.id = first + uint64(i)
			if err := tx.Set(groupKey(g.id), g.encode()); err != nil {
				return err
			}
			added = append(added, g)
		}
		return nil
	})
	if err != nil {
		return partitionGroup{}, fmt.Errorf("registering %s's groups: %w", ns, err)
	}
	// Started before they are routed to, claimed before a commit
	// routed to one proceeds (route waits for the claim).
	claimed := make(chan struct{})
	defer close(claimed)
	for _, g := range added {
		if slices.Contains(g.nodes, gs.h.self) {
			if err := gs.start(g); err != nil {
				return partitionGroup{}, err
			}
		}
		gs.unclaimed.Store(g.id, claimed)
	}
	next := reg.with(added...)
	gs.setRegistry(next)
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	err = gs.claim(ctx, w, added)
	for _, g := range added {
		gs.unclaimed.Delete(g.id)
	}
	if err != nil {
		return partitionGroup{}, err
	}
	g, ok := next.find(coll, point)
	if !ok {
		return partitionGroup{}, fmt.Errorf("%s has no partition holding point %#x", ns, point)
	}
	return g, nil
}

// replicasPerGroup is how many nodes a new group is created on.
const replicasPerGroup = 3

// placer chooses the nodes new groups are created on: all of the
// members when there are replicasPerGroup or fewer, else the
// replicasPerGroup holding the fewest groups (by node id when equal),
// counting the groups it placed before.
type placer struct {
	members []uint64
	held    map[uint64]int
}

func newPlacer(reg *registry, members []uint64) *placer {
	return &placer{members: members, held: replicaCounts(reg, members)}
}

func (p *placer) next() []uint64 {
	if len(p.members) <= replicasPerGroup {
		return p.members
	}
	byLoad := slices.Clone(p.members)
	slices.SortStableFunc(byLoad, func(a, b uint64) int { return p.held[a] - p.held[b] })
	nodes := slices.Sorted(slices.Values(byLoad[:replicasPerGroup]))
	for _, n := range nodes {
		p.held[n]++
	}
	return nodes
}

// with is r with groups replaced or added (by id).
func (r *registry) with(gs ...partitionGroup) *registry {
	out := &registry{byColl: map[uint32][]partitionGroup{}}
	byID := map[uint64]partitionGroup{}
	for _, g := range r.all {
		byID[g.id] = g
	}
	for _, g := range gs {
		byID[g.id] = g
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		g := byID[id]
		out.all = append(out.all, g)
		out.byColl[g.coll] = append(out.byColl[g.coll], g)
	}
	for _, l := range out.byColl {
		sort.Slice(l, func(i, j int) bool { return l[i].min < l[j].min })
	}
	return out
}

// claimTimeout bounds the claims of new groups, which wait for their
// first election.
const claimTimeout = 15 * time.Second

// claimAttempt bounds one attempt of a claim.
const claimAttempt = 700 * time.Millisecond

// claim makes w the writer of every group in list, in parallel: its
// claim is committed in each, and its commits to each are fenced by it.
func (gs *groups) claim(ctx context.Context, w *writer, list []partitionGroup) error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, g := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The group's leader may be another node: dragonboat forwards
			// proposals to it. (Moving leaders to the writer was tried:
			// proposals made while a leader hands over are dropped, and
			// commits stalled for seconds.)
			// A proposal forwarded to a leader that just died is lost
			// until it times out: claims are tried again in short
			// attempts (the same claim twice is harmless).
			for {
				attempt, cancel := context.WithTimeout(ctx, claimAttempt)
				errs[i] = w.kv.ClaimGroup(attempt, g.id, groupFenceKey(g.id), w.claim)
				cancel()
				if errs[i] == nil || ctx.Err() != nil {
					break
				}
			}
			if errs[i] == nil {
				w.kv.FenceGroup(g.id, groupFenceKey(g.id), w.claim)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// leaderOf is the node leading the group that holds point of coll.
func (gs *groups) leaderOf(coll uint32, point uint64) (uint64, bool) {
	g, ok := gs.registry().find(coll, point)
	if !ok {
		return 0, false
	}
	leader, _, ok := gs.h.node.LeaderTerm(g.id)
	return leader, ok
}

// applied is what this node's replicas of partition groups applied.
func (gs *groups) applied() map[uint64]uint64 {
	out := map[uint64]uint64{}
	gs.ranges.Range(func(k, _ any) bool {
		id := k.(uint64)
		out[id] = gs.h.node.Applied(id)
		return true
	})
	return out
}

// removeMember removes node id from every partition group it is a
// member of (removeNode), here or through a node holding the group, and
// records it in the registry.
func (gs *groups) removeMember(ctx context.Context, w *writer, id uint64) error {
	if err := gs.startGroups(); err != nil {
		return err
	}
	var changed []uint64
	for _, g := range gs.registry().all {
		if !slices.Contains(g.members(), id) {
			continue
		}
		if err := gs.memberChange(ctx, g.id, "remove", g.replicaOf(id), ""); err != nil {
			return fmt.Errorf("group %d: %w", g.id, err)
		}
		changed = append(changed, g.id)
	}
	if len(changed) == 0 {
		return nil
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var now []partitionGroup
	err := gs.catalogTxn(w, func(tx kv.Txn) error {
		now = now[:0]
		for _, gid := range changed {
			g, err := updateGroup(tx, gid, func(g *partitionGroup) { g.dropMember(id) })
			if err != nil {
				return err
			}
			now = append(now, g)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording the groups' members: %w", err)
	}
	gs.setRegistry(gs.registry().with(now...))
	return nil
}

// updateGroup changes group id's registry entry in tx as it is there now
// (a split may have narrowed it since it was last read) and returns it.
func updateGroup(tx kv.Txn, id uint64, change func(*partitionGroup)) (partitionGroup, error) {
	item, err := tx.Get(groupKey(id))
	if err != nil {
		return partitionGroup{}, err
	}
	var g partitionGroup
	if err := item.Value(func(v []byte) error { g, err = decodeGroup(groupKey(id), v); return err }); err != nil {
		return partitionGroup{}, err
	}
	change(&g)
	return g, tx.Set(groupKey(id), g.encode())
}

// dropMember takes node out of g's members.
func (g *partitionGroup) dropMember(node uint64) {
	g.nodes = slices.DeleteFunc(g.nodes, func(n uint64) bool { return n == node })
	g.joined = slices.DeleteFunc(g.joined, func(n uint64) bool { return n == node })
	delete(g.replicas, node)
}

// maybeReconcile reconciles when the catalog changed since the last
// time (or it failed).
func (gs *groups) maybeReconcile(w *writer) error {
	gen := gs.h.node.Generation(dataGroup)
	if gen == gs.reconciled.Load() {
		return nil
	}
	if err := gs.reconcile(w); errors.Is(err, errSplitDeferred) {
		return nil // tried again at the next look, the generation unrecorded
	} else if err != nil {
		return err
	}
	gs.reconciled.Store(gen)
	return nil
}

// reconcile splits, on the writer, every group whose range holds a
// boundary of its collection's partition map, and finishes the splits a
// writer before it left part way.
func (gs *groups) reconcile(w *writer) error {
	st := w.open.Load()
	if st == nil {
		return nil
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	pending, err := gs.pendingSplits()
	if err != nil {
		return err
	}
	bs, err := gs.balanceState()
	if err != nil {
		return err
	}
	for _, g := range gs.registry().all {
		if ps, ok := pending[g.id]; ok {
			if err := gs.finishSplit(w, g, ps); err != nil {
				return err
			}
		}
	}
	deferred := false
	for {
		split := false
		for _, g := range gs.registry().all {
			if _, moving := bs.moves[g.id]; moving {
				// Split once the move ends: the group split off starts on
				// the registered members, which do not name the target yet.
				deferred = deferred || gs.splitDue(w, g)
				continue
			}
			if at, due := splitAt(st, g); due {
				if err := gs.split(w, g, at); err != nil {
					return err
				}
				split = true
				break
			}
		}
		if !split {
			if deferred {
				return errSplitDeferred
			}
			return nil
		}
	}
}

// errSplitDeferred says reconcile left a split until a move ends.
var errSplitDeferred = errors.New("a split waits for a replica move to end")

// pendingSplit is a split reserved in the catalog: its new group's id
// and first point.
type pendingSplit struct{ child, at uint64 }

// pendingSplits are the splits reserved in the catalog, by parent group.
func (gs *groups) pendingSplits() (map[uint64]pendingSplit, error) {
	kvs, err := gs.h.node.KV(dataGroup)
	if err != nil {
		return nil, err
	}
	out := map[uint64]pendingSplit{}
	err = kvs.View(func(t kv.Txn) error {
		it := t.NewIterator(kv.IterOptions{Prefix: groupSplitPrefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			if err := it.Item().Value(func(v []byte) error {
				if len(k) != len(groupSplitPrefix)+8 || len(v) != 16 {
					return fmt.Errorf("split record %x is malformed", k)
				}
				out[binary.BigEndian.Uint64(k[len(groupSplitPrefix):])] = pendingSplit{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// split divides g at point at: [g.min, at-1] stays g's, [at, g.max] is a
// new group's.
func (gs *groups) split(w *writer, g partitionGroup, at uint64) error {
	start := time.Now()
	var child uint64
	err := gs.catalogTxn(w, func(tx kv.Txn) error {
		id, err := nextGroupIDs(tx, 1)
		if err != nil {
			return err
		}
		child = id
		return tx.Set(groupSplitKey(g.id), binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, id), at))
	})
	if err != nil {
		return fmt.Errorf("reserving the split of group %d: %w", g.id, err)
	}
	if err := gs.finishSplit(w, g, pendingSplit{child, at}); err != nil {
		return err
	}
	gs.h.logger.Info("partition group split", "group", g.id, "new_group", child, "at", fmt.Sprintf("%#x", at), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// rangeMax is the upper end of g's range as its log has it now: this
// node's replica's, or read from a node holding one.
func (gs *groups) rangeMax(ctx context.Context, g partitionGroup) (uint64, error) {
	if r := gs.rangeOf(g.id); r != nil && gs.h.node.Started(g.id) {
		return r.max.Load(), nil
	}
	v, found, err := gs.peers.Get(ctx, g.id, groupRangeKey(g.id))
	switch {
	case err != nil:
		return 0, err
	case !found:
		return g.born[1], nil
	case len(v) != 16:
		return 0, fmt.Errorf("group %d's range %x is malformed", g.id, v)
	}
	return binary.BigEndian.Uint64(v[8:]), nil
}

// finishSplit completes a split of g reserved in the catalog, from
// wherever it stopped: the parent's narrowed range committed in its own
// log, then both ranges in the registry, then the new group started and
// claimed.
func (gs *groups) finishSplit(w *writer, g partitionGroup, ps pendingSplit) error {
	child, at := ps.child, ps.at
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	gs.routing.Lock() // no commit is routed while what owns what changes
	upper, err := gs.rangeMax(ctx, g)
	if err != nil {
		gs.routing.Unlock()
		return fmt.Errorf("splitting group %d: %w", g.id, err)
	}
	if upper >= at {
		b := cluster.NewBatch()
		b.Expect(groupFenceKey(g.id), w.claim)
		b.Put(groupRangeKey(g.id), binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, g.min), at-1))
		if err := w.kv.ProposeTo(ctx, g.id, b); err != nil {
			gs.routing.Unlock()
			return fmt.Errorf("splitting group %d: %w", g.id, err)
		}
	}
	left := g
	left.max = at - 1
	right := partitionGroup{id: child, coll: g.coll, min: at, max: g.max, parent: g.id, born: [2]uint64{at, g.max}, nodes: g.members()}
	err = gs.catalogTxn(w, func(tx kv.Txn) error {
		if err := tx.Set(groupKey(left.id), left.encode()); err != nil {
			return err
		}
		if err := tx.Set(groupKey(right.id), right.encode()); err != nil {
			return err
		}
		return tx.Delete(groupSplitKey(g.id))
	})
	if err == nil && !gs.h.node.Started(right.id) && slices.Contains(right.nodes, gs.h.self) {
		err = gs.start(right)
	}
	claimed := make(chan struct{})
	if err == nil {
		// Commits routed to the new group wait for the claim below:
		// none may commit there unfenced.
		gs.unclaimed.Store(right.id, claimed)
		gs.setRegistry(gs.registry().with(left, right))
	}
	gs.routing.Unlock()
	if err != nil {
		return fmt.Errorf("registering the split of group %d: %w", g.id, err)
	}
	err = gs.claim(ctx, w, []partitionGroup{right})
	gs.unclaimed.Delete(right.id)
	close(claimed)
	return err
}
