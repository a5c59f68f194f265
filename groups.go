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

	"github.com/parsecdb/parsec/cluster"
	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/store"
)

// Partition groups (--partition-groups): every physical partition of
// every collection is a Raft group of its own, and the catalog is one
// more (dataGroup). Each group owns, in every node's Badger, the keys
// store.OwnerOf gives its collection and point range (the catalog group
// the catalog's), so the groups share key spans and judge ownership by
// key and value (cluster.GroupConfig.Owns).
//
// The registry of groups is in the catalog group: m/group/<shardID:8> ->
// <collID:4><min:8><max:8><node id:8>*, the nodes being the members the
// group was created with, and m/seq/group the last shardID handed out. A
// node starts its replica of a group as one of those members, or, when
// it is not one of them, as a replica added later (addNode adds every
// node to every group the node was not created with).
// The writer registers a collection's partitions the first time a write
// goes to one of them (ensure), starts its replicas and claims each
// group (m/gfence/<shardID:8>, a key the group owns: the writer's
// commits to the group are fenced by it as its catalog commits are by
// m/writer). Every node starts the replicas of every registered group it
// does not run yet when its catalog replica changes (startGroups), so a
// group's three replicas start within moments of its registration.
//
// A group's range is fixed for its life: a partition map that changes
// for a collection with groups (a split, sharding a collection that has
// data) is refused for now.

var (
	groupRegistryPrefix = []byte("m/group/")
	groupSeqKey         = []byte("m/seq/group")
	groupFencePrefix    = []byte("m/gfence/")
)

func groupKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(groupRegistryPrefix), id)
}

func groupFenceKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(groupFencePrefix), id)
}

// partitionGroup is one registered group: collection coll's points
// [min, max].
type partitionGroup struct {
	id       uint64
	coll     uint32
	min, max uint64
	nodes    []uint64 // the members it was created with
}

func (g partitionGroup) encode() []byte {
	b := binary.BigEndian.AppendUint32(nil, g.coll)
	b = binary.BigEndian.AppendUint64(b, g.min)
	b = binary.BigEndian.AppendUint64(b, g.max)
	for _, n := range g.nodes {
		b = binary.BigEndian.AppendUint64(b, n)
	}
	return b
}

func decodeGroup(key, v []byte) (partitionGroup, error) {
	if len(key) != len(groupRegistryPrefix)+8 || len(v) < 20 || (len(v)-20)%8 != 0 {
		return partitionGroup{}, fmt.Errorf("group registry entry %x=%x is malformed", key, v)
	}
	g := partitionGroup{
		id:   binary.BigEndian.Uint64(key[len(groupRegistryPrefix):]),
		coll: binary.BigEndian.Uint32(v), min: binary.BigEndian.Uint64(v[4:]), max: binary.BigEndian.Uint64(v[12:]),
	}
	for rest := v[20:]; len(rest) > 0; rest = rest[8:] {
		g.nodes = append(g.nodes, binary.BigEndian.Uint64(rest))
	}
	return g, nil
}

// registry is the registered groups, by collection in point order.
type registry struct {
	byColl map[uint32][]partitionGroup
	all    []partitionGroup
}

func readRegistry(t kv.Txn) (*registry, error) {
	r := &registry{byColl: map[uint32][]partitionGroup{}}
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
		r.all = append(r.all, g)
		r.byColl[g.coll] = append(r.byColl[g.coll], g)
	}
	for _, gs := range r.byColl {
		sort.Slice(gs, func(i, j int) bool { return gs[i].min < gs[j].min })
	}
	return r, nil
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
	if bytes.HasPrefix(k, groupFencePrefix) {
		return false
	}
	o, err := store.OwnerOf(k, v)
	return err == nil && o.Scope == store.ScopeCatalog
}

// owns is g's share.
func (g partitionGroup) owns() func(k, v []byte) bool {
	fence := groupFenceKey(g.id)
	return func(k, v []byte) bool {
		if bytes.HasPrefix(k, groupFencePrefix) {
			return bytes.Equal(k, fence)
		}
		o, err := store.OwnerOf(k, v)
		return err == nil && o.Scope == store.ScopePartition && o.Coll == g.coll && o.Point >= g.min && o.Point <= g.max
	}
}

// sharedSpans hold keys of the catalog and of every partition.
var sharedSpans = []cluster.Span{cluster.PrefixSpan([]byte("s/")), cluster.PrefixSpan([]byte("l/"))}

func collPrefix(tag byte, coll uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{tag, '/'}, coll)
}

// spans are where g's keys can be: its documents' range, its
// collection's counters, index entries and unique guards, the shared
// spans, and its fence.
func (g partitionGroup) spans() []cluster.Span {
	docs := cluster.Span{Start: binary.BigEndian.AppendUint64(collPrefix('d', g.coll), g.min)}
	if g.max == ^uint64(0) {
		docs.End = cluster.PrefixSpan(collPrefix('d', g.coll)).End
	} else {
		docs.End = binary.BigEndian.AppendUint64(collPrefix('d', g.coll), g.max+1)
	}
	return append([]cluster.Span{docs,
		cluster.PrefixSpan(collPrefix('c', g.coll)),
		cluster.PrefixSpan(collPrefix('x', g.coll)),
		cluster.PrefixSpan(collPrefix('u', g.coll)),
		cluster.PrefixSpan(groupFenceKey(g.id)),
	}, sharedSpans...)
}

// catalogGroupConfig is the catalog group's configuration in a cluster
// of partition groups.
func catalogGroupConfig(g cluster.GroupConfig) cluster.GroupConfig {
	g.Spans = append([]cluster.Span{cluster.PrefixSpan([]byte("m/"))}, sharedSpans...)
	g.Owns = catalogOwns
	return g
}

// groups is a node's partition groups: the registry as it last read it,
// and (on the writer) the registration of new ones.
type groups struct {
	h  *clusterHandler
	mu sync.Mutex // serialises startGroups and ensure
	// reg is the registry as last read or written (replaced whole).
	reg   *registry
	regMu sync.RWMutex
	// seen is the catalog generation startGroups last read.
	seen uint64
}

func (gs *groups) registry() *registry {
	gs.regMu.RLock()
	defer gs.regMu.RUnlock()
	return gs.reg
}

// config is this node's replica of g: one of the members g was created
// with, or one added since (Join).
func (gs *groups) config(g partitionGroup) cluster.GroupConfig {
	cfg := cluster.GroupConfig{ShardID: g.id, ReplicaID: gs.h.self, Spans: g.spans(), Owns: g.owns()}
	if !slices.Contains(g.nodes, gs.h.self) {
		cfg.Join = true
		return cfg
	}
	raft := gs.h.view.Load().raft
	cfg.Members = map[uint64]string{}
	for _, n := range g.nodes {
		cfg.Members[n] = raft[n]
	}
	return cfg
}

// startGroups starts this node's replica of every registered group it
// does not run yet, when the catalog changed since it last looked.
func (gs *groups) startGroups() error {
	gen := gs.h.node.Generation(dataGroup)
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gen == gs.seen && gs.reg != nil {
		return nil
	}
	kvs, err := gs.h.node.KV(dataGroup)
	if err != nil {
		return err
	}
	var reg *registry
	if err := kvs.View(func(t kv.Txn) error { reg, err = readRegistry(t); return err }); err != nil {
		return err
	}
	for _, g := range reg.all {
		if gs.h.node.Started(g.id) {
			continue
		}
		if err := gs.h.node.StartGroup(gs.config(g)); err != nil {
			return err
		}
	}
	gs.regMu.Lock()
	gs.reg = reg
	gs.regMu.Unlock()
	gs.seen = gen
	return nil
}

// route says which group keeps a key; w is the writer whose store asks
// (it registers the groups of a collection written for the first time).
func (gs *groups) route(w *writer) cluster.Route {
	return func(key, value []byte) (uint64, bool, error) {
		if len(key) > 0 && key[0] == 'x' && len(value) < 8 {
			return 0, false, nil // an index entry is judged by its value
		}
		if bytes.HasPrefix(key, groupFencePrefix) && len(key) == len(groupFencePrefix)+8 {
			return binary.BigEndian.Uint64(key[len(groupFencePrefix):]), true, nil
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
			return g.id, true, nil
		}
		if w == nil {
			return 0, false, fmt.Errorf("no group holds collection %d's point %#x", o.Coll, o.Point)
		}
		g, err := gs.ensure(w, o.Coll, o.Point)
		return g.id, err == nil, err
	}
}

// ensure registers, starts and claims the groups of collection coll's
// partitions, and returns the one holding point.
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
	c := st.CollectionByID(coll)
	if c == nil {
		return partitionGroup{}, fmt.Errorf("collection %d has no groups and no longer exists", coll)
	}
	have := gs.registry().byColl[coll]
	var added []partitionGroup
	tx := w.kv.NewTransaction(true)
	defer tx.Discard()
	var seq uint64
	if item, err := tx.Get(groupSeqKey); err == nil {
		if err := item.Value(func(v []byte) error { seq = binary.BigEndian.Uint64(v); return nil }); err != nil {
			return partitionGroup{}, err
		}
	} else if !errors.Is(err, kv.ErrNotFound) {
		return partitionGroup{}, err
	}
	seq = max(seq, dataGroup)
	for _, p := range c.Map().Partitions() {
		exact := false
		for _, g := range have {
			switch {
			case g.min == p.Min && g.max == p.Max:
				exact = true
			case g.min <= p.Max && p.Min <= g.max:
				return partitionGroup{}, fmt.Errorf("collection %s's partition [%#x, %#x] overlaps its group %d [%#x, %#x]: changing a partition map of a collection with groups (a split) is not available yet with --partition-groups",
					c.Namespace(), p.Min, p.Max, g.id, g.min, g.max)
			}
		}
		if exact {
			continue
		}
		seq++
		g := partitionGroup{id: seq, coll: coll, min: p.Min, max: p.Max, nodes: slices.Sorted(maps.Keys(gs.h.view.Load().raft))}
		if err := tx.Set(groupKey(g.id), g.encode()); err != nil {
			return partitionGroup{}, err
		}
		added = append(added, g)
	}
	if err := tx.Set(groupSeqKey, binary.BigEndian.AppendUint64(nil, seq)); err != nil {
		return partitionGroup{}, err
	}
	if err := tx.Commit(); err != nil {
		return partitionGroup{}, fmt.Errorf("registering collection %s's groups: %w", c.Namespace(), err)
	}
	reg := &registry{byColl: map[uint32][]partitionGroup{}}
	old := gs.registry()
	reg.all = append(slices.Clone(old.all), added...)
	for _, g := range reg.all {
		reg.byColl[g.coll] = append(reg.byColl[g.coll], g)
	}
	for _, l := range reg.byColl {
		sort.Slice(l, func(i, j int) bool { return l[i].min < l[j].min })
	}
	gs.regMu.Lock()
	gs.reg = reg
	gs.regMu.Unlock()
	for _, g := range added {
		if err := gs.h.node.StartGroup(gs.config(g)); err != nil {
			return partitionGroup{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	if err := gs.claim(ctx, w, added); err != nil {
		return partitionGroup{}, err
	}
	g, ok := reg.find(coll, point)
	if !ok {
		return partitionGroup{}, fmt.Errorf("collection %s has no partition holding point %#x", c.Namespace(), point)
	}
	return g, nil
}

// claimTimeout bounds the claims of new groups, which wait for their
// first election.
const claimTimeout = 15_000_000_000 // 15 s

// claim makes w the writer of every group in list, in parallel: its
// claim is committed in each, and its commits to each are fenced by it.
func (gs *groups) claim(ctx context.Context, w *writer, list []partitionGroup) error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	value := w.claim
	for i, g := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = w.kv.ClaimGroup(ctx, g.id, groupFenceKey(g.id), value); errs[i] == nil {
				w.kv.FenceGroup(g.id, groupFenceKey(g.id), value)
				// Leading the group saves each commit a hop; dragonboat
				// forwards proposals to a leader elsewhere meanwhile.
				_ = gs.h.node.TransferLeader(g.id, gs.h.self)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// forEachGroup runs fn on every partition group, the registry's as this
// node last read it.
func (gs *groups) forEachGroup(fn func(shardID uint64) error) error {
	if err := gs.startGroups(); err != nil {
		return err
	}
	for _, g := range gs.registry().all {
		if err := fn(g.id); err != nil {
			return fmt.Errorf("group %d: %w", g.id, err)
		}
	}
	return nil
}
