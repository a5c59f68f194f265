package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/kv/badgerkv"
)

// Replicated is engine/kv's seam over one group: a transaction reads the node's
// replica of the group (its applied state, in one Badger read
// transaction) with its own writes on top, and its commit proposes one
// Batch holding those writes, guarded by the digests of every key it read
// (kv's invariant 3: a commit loses to a transaction that changed what it
// read). Propose returns once this node applied the batch, so a
// transaction begun after a commit reads it here.
//
// Reads are as fresh as the replica: on the group's leader they include
// every write it acknowledged; elsewhere they may lag (a read-only
// transaction there is stale, and a writing one fails its guards and is
// run again by the document layer).
type Replicated struct {
	n       *Node
	shardID uint64
	spans   []Span                       // the group's: keys outside them are not the store's
	owns    func(key, value []byte) bool // the group's GroupConfig.Owns
	// Timeout bounds one commit's proposal (0: the node's default).
	Timeout time.Duration

	// fenceKey and fenceValue, when set, guard every commit: it applies
	// only while fenceKey holds fenceValue (Fence).
	fenceKey, fenceValue []byte
	// route, when set, makes this the seam over every group the node
	// holds a replica of (Node.Routed): each commit goes to the group
	// route names, guarded by that group's fence (groupFences).
	route       Route
	fenceMu     sync.Mutex
	groupFences map[uint64]fence
	// Last, on a routed store, is the group CommitEach commits last (the
	// catalog's: what records progress goes after what it records).
	Last uint64
	// Gate, when set on a routed store, is held from routing a commit to
	// its proposal's end (release): what changes routing (a split)
	// waits for commits in flight and holds new ones back. Route is
	// called once before it too, and may then take locks the holder of
	// the gate's exclusive side takes.
	Gate func() (release func())
	// OnFenced, when set, is called (once per commit that finds it) when
	// a commit fails because another writer's claim replaced the fence,
	// before the commit returns kv.ErrFenced.
	OnFenced func()

	// proposed is when this store last proposed to each group: Journal
	// makes the groups of the last moments durable.
	proposedMu sync.Mutex
	proposed   map[uint64]time.Time
	// Far, when set on a routed store, reaches the groups this node
	// holds no replica of (Far).
	Far Far
}

// Far reaches, for a routed store, the groups its node holds no replica
// of, through nodes that hold one: their reads are linearizable
// (ReadIndex on the holder), so a transaction sees every write
// committed before the read, its own included; they are not one
// snapshot with the node's own replicas (a read-write transaction's
// guards still make its commit lose to a change of what it read in the
// group it writes).
type Far interface {
	// Held is whether this node runs a replica of group.
	Held(group uint64) bool
	// Under is the groups this node holds no replica of that may own
	// keys under prefix (none when it holds them all).
	Under(prefix []byte) []uint64
	// Propose is Node.Propose run by a node holding a replica of group,
	// with the same errors (ErrConflict, *RejectedError,
	// ErrUnknownOutcome).
	Propose(ctx context.Context, group uint64, b *Batch) error
	// Get and Scan are Node.Get and Node.Scan, linearizable, run by a
	// node holding a replica of group.
	Get(ctx context.Context, group uint64, key []byte) ([]byte, bool, error)
	Scan(ctx context.Context, group uint64, q ScanQuery) (ScanResult, error)
	// GroupOf is the group that owns key holding value, judged without
	// registering anything (known false: no group does yet).
	GroupOf(key, value []byte) (group uint64, known bool)
}

// far is whether group is reached through Far.
func (k *Replicated) far(group uint64) bool {
	return k.route != nil && k.Far != nil && !k.Far.Held(group)
}

// farTimeout bounds one read of a group through Far.
const farTimeout = 10 * time.Second

// Route says which group keeps a key, judged from the key and the value
// it holds or is written with (nil: a delete, or a key read absent);
// known is false when that cannot say (an index entry being deleted),
// and the transaction's other keys then decide.
type Route func(key, value []byte) (shardID uint64, known bool, err error)

// ErrCrossGroup is a commit whose writes belong to more than one group:
// no one entry can apply them atomically.
var ErrCrossGroup = errors.New("cluster: a transaction's writes belong to more than one group")

type fence struct{ key, value []byte }

// Routed is engine/kv's seam over all the groups this node holds a
// replica of, which together hold every key (each group owning its keys
// by GroupConfig.Owns): a transaction reads the node's Badger, and its
// commit proposes one batch to the one group route names for its writes,
// guarded by the digests of what it read in that group (reads of other
// groups' keys guard nothing: a transaction is atomic and isolated
// within one group) and by that group's fence (FenceGroup).
func (n *Node) Routed(route Route) *Replicated {
	return &Replicated{n: n, spans: DataSpans, route: route, groupFences: map[uint64]fence{}}
}

// GroupOf is the group a write of key goes to (kv.Grouped): for a
// store over one group, that group; for a routed one, the group route
// names (known false when the key alone cannot say, or no group has it
// yet).
func (k *Replicated) GroupOf(key []byte) (uint64, bool) {
	if k.route == nil {
		return k.shardID, true
	}
	g, known, err := k.route(key, nil)
	return g, known && err == nil
}

// FenceGroup makes later commits to group shardID through this routed
// store conditional on key holding value in that group (Fence, for one
// group of many).
func (k *Replicated) FenceGroup(shardID uint64, key, value []byte) {
	k.fenceMu.Lock()
	defer k.fenceMu.Unlock()
	k.groupFences[shardID] = fence{bytes.Clone(key), bytes.Clone(value)}
}

// ClaimGroup is Claim in group shardID.
func (k *Replicated) ClaimGroup(ctx context.Context, shardID uint64, key, value []byte) error {
	b := NewBatch()
	b.Put(key, value)
	return k.ProposeTo(ctx, shardID, b)
}

// ProposeTo proposes b to group shardID, here or through Far (a routed
// store: a group this node holds no replica of).
func (k *Replicated) ProposeTo(ctx context.Context, shardID uint64, b *Batch) error {
	if k.n.logs.lazy() && !b.Durable() {
		k.proposedMu.Lock()
		if k.proposed == nil {
			k.proposed = map[uint64]time.Time{}
		}
		k.proposed[shardID] = time.Now()
		k.proposedMu.Unlock()
	}
	if k.far(shardID) {
		return k.Far.Propose(ctx, shardID, b)
	}
	return k.n.Propose(ctx, shardID, b)
}

// fenceOf is the fence guarding commits to group shardID (zero: none).
func (k *Replicated) fenceOf(shardID uint64) fence {
	if k.route == nil {
		return fence{k.fenceKey, k.fenceValue}
	}
	k.fenceMu.Lock()
	defer k.fenceMu.Unlock()
	return k.groupFences[shardID]
}

// Fence makes every later commit through this store conditional on key
// holding value in the group. A node that takes over as the one writer
// of a group first commits its own claim to key (Claim); from that entry
// of the log on, a store fenced with an older claim can commit nothing,
// even if it has not yet learned that it lost its place.
func (k *Replicated) Fence(key, value []byte) {
	k.fenceKey, k.fenceValue = bytes.Clone(key), bytes.Clone(value)
}

// Claim writes value to key unconditionally and returns once this node
// applied it: the claim a writer then fences its commits with.
func (k *Replicated) Claim(ctx context.Context, key, value []byte) error {
	b := NewBatch()
	b.Put(key, value)
	return k.n.Propose(ctx, k.shardID, b)
}

// fenced is whether group shardID's fence no longer holds on this
// node's replica (which applied the conflicting entry before Propose
// returned).
func (k *Replicated) fenced(shardID uint64) bool {
	f := k.fenceOf(shardID)
	if f.key == nil {
		return false
	}
	if k.far(shardID) {
		ctx, cancel := context.WithTimeout(context.Background(), farTimeout)
		defer cancel()
		v, found, err := k.Far.Get(ctx, shardID, f.key)
		return err == nil && !(found && bytes.Equal(v, f.value))
	}
	var holds bool
	_ = k.n.db.View(func(txn *badger.Txn) error {
		v, found, err := getValue(txn, f.key)
		holds = found && bytes.Equal(v, f.value)
		return err
	})
	return !holds
}

// guard adds group shardID's fence expectation to b.
func (k *Replicated) guard(shardID uint64, b *Batch) {
	if f := k.fenceOf(shardID); f.key != nil {
		b.Expect(f.key, f.value)
	}
}

var (
	_ kv.DB        = (*Replicated)(nil)
	_ kv.Journaler = (*Replicated)(nil)
)

// KV is the key-value seam over the node's replica of group shardID.
func (n *Node) KV(shardID uint64) (*Replicated, error) {
	rep, err := n.group(shardID)
	if err != nil {
		return nil, err
	}
	return &Replicated{n: n, shardID: shardID, spans: rep.spans, owns: rep.owns}, nil
}

func (k *Replicated) NewTransaction(update bool) kv.Txn {
	rt := k.n.db.NewTransaction(false)
	t := &kvTxn{k: k, rt: rt, base: badgerkv.Txn(rt), update: update}
	if update {
		t.writes = map[string]*kvWrite{}
		t.reads = map[string]kvRead{}
	}
	return t
}

func (k *Replicated) View(fn func(kv.Txn) error) error {
	t := k.NewTransaction(false)
	defer t.Discard()
	return fn(t)
}

// NewWriteBatch collects blind writes and proposes them in batches of
// at most kvBatchBytes.
func (k *Replicated) NewWriteBatch() kv.WriteBatch { return &kvBatch{k: k, b: NewBatch()} }

// Sync makes applied entries durable in the node's Badger, and the
// node's Raft log files when their fsyncs are deferred.
func (k *Replicated) Sync() error {
	if k.n.logs.lazy() {
		if err := k.n.logs.syncDirty(); err != nil {
			return err
		}
	}
	return k.n.sync()
}

// Journal makes this store's acknowledged writes durable on a majority of
// their groups' replicas (kv.Journaler: the write concern j: true). When
// the node fsyncs its Raft log before every entry counts, they already
// are, and Journal syncs the node's Badger as Sync does. When the log's
// fsyncs are deferred (NodeConfig.LogSyncInterval), Journal commits a
// durable barrier in each group this store proposed to within
// durableWindow: a majority of the group's replicas fsynced its log up to
// the barrier, so past every write committed before it. (A write another
// store proposed, such as one a new writer answers a retry of from its
// record, was committed before the failover that made this store the
// writer: longer ago than the interval, so every replica holding it has
// fsynced it since.)
func (k *Replicated) Journal() error {
	if !k.n.logs.lazy() {
		return k.n.sync()
	}
	since := time.Now().Add(-durableWindow(k.n.logs.interval))
	k.proposedMu.Lock()
	var groups []uint64
	for g, at := range k.proposed {
		if at.After(since) {
			groups = append(groups, g)
		} else {
			delete(k.proposed, g)
		}
	}
	k.proposedMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.ProposeTo(ctx, g, DurableBarrier()); err != nil {
				errs[i] = fmt.Errorf("cluster: make group %d's log durable: %w", g, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// durableWindow is how long after its proposal a write may still be
// waiting for a replica's deferred fsync: the interval, and time to spare
// for a slow disk or a follower that received the entry late.
func durableWindow(interval time.Duration) time.Duration { return 10*interval + 5*time.Second }

func (k *Replicated) Size() (tables, valueLog int64) { return k.n.db.Size() }

// Close does nothing: the node owns its Badger and its groups.
func (k *Replicated) Close() error { return nil }

func (k *Replicated) propose(shardID uint64, b *Batch) error {
	ctx := context.Background()
	if k.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, k.Timeout)
		defer cancel()
	}
	err := k.ProposeTo(ctx, shardID, b)
	var rejected *RejectedError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrConflict):
		if k.fenced(shardID) {
			if k.OnFenced != nil {
				k.OnFenced()
			}
			return kv.ErrFenced
		}
		return kv.ErrConflict
	case errors.As(err, &rejected) && bytes.Contains([]byte(rejected.Reason), []byte("does not fit one transaction")):
		return fmt.Errorf("%w: %v", kv.ErrTxnTooBig, err)
	case errors.Is(err, ErrUnknownOutcome):
		return fmt.Errorf("%w: %v", kv.ErrUnknownOutcome, err)
	}
	return err
}

// ownsItem is whether the group owns a key of its spans that the
// replica holds (always, for a group without Owns).
func (k *Replicated) ownsItem(item kv.Item) bool {
	if k.owns == nil {
		return true
	}
	owned := false
	_ = item.Value(func(v []byte) error { owned = k.owns(item.Key(), v); return nil })
	return owned
}

// kvWrite is a transaction's last write of a key.
type kvWrite struct {
	value   []byte
	deleted bool
}

// kvRead is what a transaction read at a key: absent, or a value with
// this digest.
type kvRead struct {
	absent bool
	digest [DigestLen]byte
	// group keeps the key (routed stores; known false: it cannot tell).
	group uint64
	known bool
}

type kvTxn struct {
	k      *Replicated
	rt     *badger.Txn
	base   kv.Txn
	update bool
	writes map[string]*kvWrite
	order  []string // keys in the order first written
	sorted []string // the written keys in order, for iterators (nil: stale)
	reads  map[string]kvRead
	done   bool
}

// read notes what the transaction saw at key, the first time it reads
// it from the replica.
func (t *kvTxn) read(key []byte, value []byte, absent bool) {
	if !t.update {
		return
	}
	if _, ok := t.reads[string(key)]; ok {
		return
	}
	r := kvRead{absent: absent}
	if !absent {
		r.digest = ValueDigest(value)
	}
	if t.k.route != nil {
		var err error
		if r.group, r.known, err = t.k.route(key, value); err != nil {
			r.known = false
		}
	}
	t.reads[string(key)] = r
}

func (t *kvTxn) Get(key []byte) (kv.Item, error) {
	if t.update {
		if w := t.writes[string(key)]; w != nil {
			if w.deleted {
				return nil, kv.ErrNotFound
			}
			return &kvItem{key: key, value: w.value}, nil
		}
	}
	if !inSpans(t.k.spans, key) {
		return nil, kv.ErrNotFound
	}
	var far []uint64
	if t.k.route != nil && t.k.Far != nil {
		far = t.k.Far.Under(key)
	}
	item, err := t.base.Get(key)
	if err == nil && (!t.k.ownsItem(item) || len(far) > 0 && t.farItem(item, far)) {
		err = kv.ErrNotFound // another group's
	}
	if errors.Is(err, kv.ErrNotFound) && len(far) > 0 {
		item, err = t.farGet(key, far)
	}
	if errors.Is(err, kv.ErrNotFound) {
		t.read(key, nil, true)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if t.update {
		if err := item.Value(func(v []byte) error { t.read(key, v, false); return nil }); err != nil {
			return nil, err
		}
	}
	return item, nil
}

// farItem is whether a key the node's Badger holds belongs to one of
// far, groups this node holds no replica of (what a replica moved away
// left before its keys were deleted): not the group's current state.
func (t *kvTxn) farItem(item kv.Item, far []uint64) bool {
	var g uint64
	var known bool
	_ = item.Value(func(v []byte) error { g, known = t.k.Far.GroupOf(item.Key(), v); return nil })
	return known && slices.Contains(far, g)
}

// farGet reads key from the first of groups, reached through Far, that
// holds it.
func (t *kvTxn) farGet(key []byte, groups []uint64) (kv.Item, error) {
	ctx, cancel := context.WithTimeout(context.Background(), farTimeout)
	defer cancel()
	for _, g := range groups {
		v, found, err := t.k.Far.Get(ctx, g, key)
		if err != nil {
			return nil, err
		}
		if found {
			return &kvItem{key: bytes.Clone(key), value: v}, nil
		}
	}
	return nil, kv.ErrNotFound
}

func (t *kvTxn) Set(key, value []byte) error { return t.write(key, value, false) }
func (t *kvTxn) Delete(key []byte) error     { return t.write(key, nil, true) }

func (t *kvTxn) write(key, value []byte, deleted bool) error {
	if !t.update {
		return errors.New("cluster: write in a read-only transaction")
	}
	if !inSpans(t.k.spans, key) || !deleted && t.k.owns != nil && !t.k.owns(key, value) {
		return fmt.Errorf("cluster: key %q is outside group %d's spans", key, t.k.shardID)
	}
	if t.done {
		return errors.New("cluster: write after the transaction ended")
	}
	k := string(key)
	if w := t.writes[k]; w != nil {
		w.value, w.deleted = bytes.Clone(value), deleted
		return nil
	}
	t.writes[k] = &kvWrite{value: bytes.Clone(value), deleted: deleted}
	t.order = append(t.order, k)
	t.sorted = nil
	return nil
}

// end ends the transaction for a commit; false: nothing to commit.
func (t *kvTxn) end() (bool, error) {
	if t.done {
		return false, errors.New("cluster: commit of an ended transaction")
	}
	t.done = true
	return t.update && len(t.writes) > 0, nil
}

func (t *kvTxn) Commit() error {
	defer t.rt.Discard()
	if ok, err := t.end(); !ok {
		return err
	}
	group := t.k.shardID
	if t.k.route != nil {
		// Routing first outside the gate (it may register groups), then
		// again inside it, where no split changes the answer.
		if _, err := t.target(); err != nil {
			return err
		}
		if t.k.Gate != nil {
			defer t.k.Gate()()
		}
		var err error
		if group, err = t.target(); err != nil {
			return err
		}
	}
	b := NewBatch()
	t.k.guard(group, b)
	// Guards first, in key order so that every proposal of the same
	// reads encodes alike.
	keys := make([]string, 0, len(t.reads))
	for k, r := range t.reads {
		if t.k.route == nil || !r.known || r.group == group {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if r := t.reads[k]; r.absent {
			b.ExpectAbsent([]byte(k))
		} else {
			b.ExpectHash([]byte(k), r.digest)
		}
	}
	for _, k := range t.order {
		if w := t.writes[k]; w.deleted {
			b.Delete([]byte(k))
		} else {
			b.Put([]byte(k), w.value)
		}
	}
	return t.k.propose(group, b)
}

// CommitEach commits a routed transaction's writes group by group
// (kv.EachCommitter): each group's in one entry, guarded by its fence and
// by what the transaction read of that group, Last's after the others.
// The groups' entries are not atomic together: for writes that may land
// one group at a time (a copy and the record of its progress, redone
// from the record after a crash). An unrouted store commits as Commit.
func (t *kvTxn) CommitEach() error {
	if t.k.route == nil {
		return t.Commit()
	}
	defer t.rt.Discard()
	if ok, err := t.end(); !ok {
		return err
	}
	for _, k := range t.order { // outside the gate: routing may register groups
		if _, _, err := t.k.routeWrite([]byte(k), t.writes[k].value, t.writes[k].deleted); err != nil {
			return err
		}
	}
	if t.k.Gate != nil {
		defer t.k.Gate()()
	}
	byGroup := map[uint64][]string{}
	for _, k := range t.order {
		g, known, err := t.k.routeWrite([]byte(k), t.writes[k].value, t.writes[k].deleted)
		switch {
		case err != nil:
			return err
		case known:
			byGroup[g] = append(byGroup[g], k)
		case !t.writes[k].deleted:
			return fmt.Errorf("cluster: no group keeps key %q", k)
		}
	}
	groups := make([]uint64, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b uint64) int {
		switch {
		case a == b:
			return 0
		case a == t.k.Last:
			return 1
		case b == t.k.Last:
			return -1
		case a < b:
			return -1
		}
		return 1
	})
	reads := make([]string, 0, len(t.reads))
	for k := range t.reads {
		reads = append(reads, k)
	}
	sort.Strings(reads)
	for _, g := range groups {
		b := NewBatch()
		t.k.guard(g, b)
		for _, k := range reads {
			if r := t.reads[k]; r.known && r.group == g {
				if r.absent {
					b.ExpectAbsent([]byte(k))
				} else {
					b.ExpectHash([]byte(k), r.digest)
				}
			}
		}
		for _, k := range byGroup[g] {
			if w := t.writes[k]; w.deleted {
				b.Delete([]byte(k))
			} else {
				b.Put([]byte(k), w.value)
			}
		}
		if err := t.k.propose(g, b); err != nil {
			return err
		}
	}
	return nil
}

// target is the one group a routed transaction's writes belong to.
func (t *kvTxn) target() (uint64, error) {
	var group uint64
	found := false
	for _, k := range t.order {
		g, known, err := t.k.routeWrite([]byte(k), t.writes[k].value, t.writes[k].deleted)
		if err != nil {
			return 0, err
		}
		switch {
		case !known:
		case !found:
			group, found = g, true
		case g != group:
			return 0, fmt.Errorf("%w: key %q is group %d's, an earlier one group %d's", ErrCrossGroup, k, g, group)
		}
	}
	if !found {
		return 0, fmt.Errorf("cluster: no group keeps any key of the transaction (first %q)", t.order[0])
	}
	return group, nil
}

// routeWrite routes a write of a routed store; a delete whose key cannot
// say is routed by the value the replica holds (known false when it
// holds none: the delete changes nothing).
func (k *Replicated) routeWrite(key, value []byte, deleted bool) (uint64, bool, error) {
	if deleted {
		value = nil
	}
	g, known, err := k.route(key, value)
	if err != nil || known || !deleted {
		return g, known, err
	}
	var cur []byte
	var found bool
	if err := k.n.db.View(func(txn *badger.Txn) error {
		cur, found, err = getValue(txn, key)
		return err
	}); err != nil {
		return 0, false, err
	}
	if found {
		if g, known, err := k.route(key, cur); err != nil || known && !k.far(g) {
			return g, known, err
		}
	}
	if k.Far == nil {
		return 0, false, nil
	}
	// Not here, or here only as what a replica moved away left: the
	// groups held elsewhere may have it.
	ctx, cancel := context.WithTimeout(context.Background(), farTimeout)
	defer cancel()
	for _, g := range k.Far.Under(key) {
		v, found, err := k.Far.Get(ctx, g, key)
		if err != nil {
			return 0, false, err
		}
		if found {
			return k.route(key, v)
		}
	}
	return 0, false, nil
}

func (t *kvTxn) Discard() {
	if !t.done {
		t.done = true
		t.rt.Discard()
	}
}

func (t *kvTxn) NewIterator(o kv.IterOptions) kv.Iterator {
	base := t.base.NewIterator(o)
	if t.k.route != nil && t.k.Far != nil {
		if far := t.k.Far.Under(o.Prefix); len(far) > 0 {
			base = newFarIter(t.k, base, o, far)
		}
	}
	it := &mergeIter{t: t, base: base, prefix: o.Prefix, reverse: o.Reverse}
	if t.update && len(t.writes) > 0 {
		if t.sorted == nil {
			t.sorted = append([]string(nil), t.order...)
			sort.Strings(t.sorted)
		}
		// The written keys under the prefix.
		lo := sort.SearchStrings(t.sorted, string(o.Prefix))
		hi := lo
		for hi < len(t.sorted) && bytes.HasPrefix([]byte(t.sorted[hi]), o.Prefix) {
			hi++
		}
		it.own = t.sorted[lo:hi]
	}
	return it
}

// mergeIter walks the replica's keys and the transaction's own writes
// together: a written key hides the replica's, a deleted one is skipped.
type mergeIter struct {
	t       *kvTxn
	base    kv.Iterator
	prefix  []byte
	reverse bool
	own     []string // written keys under the prefix, ascending
	pos     int      // next own key in the direction of travel (-1 or len: none)
	onOwn   bool     // the current key is the transaction's own
}

func (m *mergeIter) Rewind() {
	m.base.Rewind()
	if m.reverse {
		m.pos = len(m.own) - 1
	} else {
		m.pos = 0
	}
	m.settle()
}

func (m *mergeIter) Seek(key []byte) {
	m.base.Seek(key)
	if m.reverse {
		// The last own key <= key.
		m.pos = sort.Search(len(m.own), func(i int) bool { return m.own[i] > string(key) }) - 1
	} else {
		m.pos = sort.SearchStrings(m.own, string(key))
	}
	m.settle()
}

func (m *mergeIter) ownValid() bool { return m.pos >= 0 && m.pos < len(m.own) }

func (m *mergeIter) stepOwn() {
	if m.reverse {
		m.pos--
	} else {
		m.pos++
	}
}

// before is whether a comes before b in the direction of travel.
func (m *mergeIter) before(a, b []byte) bool {
	c := bytes.Compare(a, b)
	if m.reverse {
		return c > 0
	}
	return c < 0
}

// settle makes the current key the next visible one: the nearer of the
// replica's and the transaction's, the transaction's when equal (the
// replica's then skipped), past deleted keys and past the replica's keys
// outside the group's spans (other groups', and the groups' metadata).
func (m *mergeIter) settle() {
	for {
		for m.base.Valid() && (!inSpans(m.t.k.spans, m.base.Item().Key()) || !m.t.k.ownsItem(m.base.Item())) {
			m.base.Next()
		}
		baseOK, ownOK := m.base.Valid(), m.ownValid()
		switch {
		case !baseOK && !ownOK:
			m.onOwn = false
			return
		case ownOK && (!baseOK || !m.before(m.base.Item().Key(), []byte(m.own[m.pos]))):
			if baseOK && bytes.Equal(m.base.Item().Key(), []byte(m.own[m.pos])) {
				m.base.Next()
			}
			if m.t.writes[m.own[m.pos]].deleted {
				m.stepOwn()
				continue
			}
			m.onOwn = true
			return
		default:
			m.onOwn = false
			return
		}
	}
}

func (m *mergeIter) Valid() bool { return m.onOwn || m.base.Valid() }

func (m *mergeIter) Next() {
	if m.onOwn {
		m.stepOwn()
	} else {
		m.base.Next()
	}
	m.settle()
}

func (m *mergeIter) Item() kv.Item {
	if m.onOwn {
		k := m.own[m.pos]
		return &kvItem{key: []byte(k), value: m.t.writes[k].value}
	}
	item := m.base.Item()
	if m.t.update {
		_ = item.Value(func(v []byte) error { m.t.read(item.Key(), v, false); return nil })
	}
	return item
}

func (m *mergeIter) Close() { m.base.Close() }

// kvItem is a key the transaction wrote itself.
type kvItem struct{ key, value []byte }

func (i *kvItem) Key() []byte                       { return i.key }
func (i *kvItem) KeyCopy(dst []byte) []byte         { return append(dst[:0], i.key...) }
func (i *kvItem) KeySize() int64                    { return int64(len(i.key)) }
func (i *kvItem) ValueSize() int64                  { return int64(len(i.value)) }
func (i *kvItem) Value(fn func([]byte) error) error { return fn(i.value) }
func (i *kvItem) ValueCopy(dst []byte) ([]byte, error) {
	return append(dst[:0], i.value...), nil
}

// kvBatchBytes is how many bytes of blind writes one proposal carries.
const kvBatchBytes = 1 << 20

type kvBatch struct {
	k *Replicated
	b *Batch // the writes so far; a routed store's are routed at Flush
}

func (w *kvBatch) Set(key, value []byte) error {
	w.b.Put(key, value)
	return w.maybeFlush()
}

func (w *kvBatch) Delete(key []byte) error {
	w.b.Delete(key)
	return w.maybeFlush()
}

func (w *kvBatch) maybeFlush() error {
	if len(w.b.Encoded()) < kvBatchBytes {
		return nil
	}
	return w.Flush()
}

func (w *kvBatch) Flush() error {
	collected := w.b
	w.b = NewBatch()
	if collected.Len() == 0 {
		return nil
	}
	ops, err := DecodeBatch(collected.Encoded())
	if err != nil {
		return err
	}
	if w.k.route == nil {
		return w.flush(w.k.shardID, ops)
	}
	for _, op := range ops { // outside the gate: routing may register groups
		if _, _, err := w.k.routeWrite(op.Key, op.Value, op.Kind == OpDelete); err != nil {
			return err
		}
	}
	if w.k.Gate != nil {
		defer w.k.Gate()()
	}
	groups := map[uint64][]Op{}
	for _, op := range ops {
		g, known, err := w.k.routeWrite(op.Key, op.Value, op.Kind == OpDelete)
		switch {
		case err != nil:
			return err
		case known:
			groups[g] = append(groups[g], op)
		case op.Kind != OpDelete:
			return fmt.Errorf("cluster: no group keeps key %q", op.Key)
		}
		// An unknown delete deletes nothing: the key is not there.
	}
	ids := make([]uint64, 0, len(groups))
	for g := range groups {
		ids = append(ids, g)
	}
	slices.Sort(ids)
	for _, g := range ids {
		if err := w.flush(g, groups[g]); err != nil {
			return err
		}
	}
	return nil
}

// flush proposes ops to group, guarded by its fence.
func (w *kvBatch) flush(group uint64, ops []Op) error {
	b := NewBatch()
	w.k.guard(group, b)
	for _, op := range ops {
		if op.Kind == OpDelete {
			b.Delete(op.Key)
		} else {
			b.Put(op.Key, op.Value)
		}
	}
	return w.k.propose(group, b)
}

func (w *kvBatch) Cancel() { w.b = NewBatch() }
