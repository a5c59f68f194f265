package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Limits are the storage limits of partitions (0: none).
type Limits struct {
	// PartitionBytes: a physical partition whose data and key bytes pass
	// it splits (when its data is in more than one logical partition).
	PartitionBytes int64
	// LogicalPartitionBytes: a write that would grow a logical partition
	// past it fails with *LogicalPartitionFullError.
	LogicalPartitionBytes int64
}

// SetLimits sets the partition limits; they apply from the next write.
func (s *Store) SetLimits(l Limits) {
	s.partLimit.Store(l.PartitionBytes)
	s.lpLimit.Store(l.LogicalPartitionBytes)
}

// Limits returns the partition limits in force.
func (s *Store) Limits() Limits {
	return Limits{PartitionBytes: s.partLimit.Load(), LogicalPartitionBytes: s.lpLimit.Load()}
}

// partitionState is what the store keeps in memory about partitions:
// the size tracker of each collection written since Open, the split
// queue, and collections being re-placed.
type partitionState struct {
	partLimit atomic.Int64
	lpLimit   atomic.Int64

	trackers sync.Map // collection id -> *tracker; read without locks by every write

	splitMu    sync.Mutex
	splitCond  *sync.Cond
	splitQueue map[uint32]bool
	splitting  bool // the splitter is working on a collection

	reshardMu sync.Mutex
	resharded map[string]chan struct{} // by namespace: closed when done
	// copyFilters are the filters of the resharding copies in progress,
	// by temporary collection id (*copyFilter, copyfilter.go).
	copyFilters sync.Map

	splits splitHistory // splits published since Open (splitlog.go)
	tables tableWatch   // Badger's tables at the last look (enginestats.go)

	// sizesRead, when set (by tests, before any write), runs after
	// partitionSizes read the exact sums a tracker is built from.
	sizesRead func()
}

// tracker estimates the size (data and key bytes) of each physical
// partition of one collection, to decide cheaply when a partition needs a
// split check and when a write needs the exact logical-partition size
// check. It starts from exact counters and adds what each transaction
// commits; concurrent commits may reach it in any order, so it is an
// estimate: every decision it triggers is made on exact counters.
//
// It must never be low, or a partition over the limit is never checked
// and a logical partition near its limit is not read: installTracker
// publishes it before it reads the exact sums, so that a commit the read
// misses still reaches it (a commit may be counted twice, which only
// costs a check).
type tracker struct {
	m       *shard.Map
	version int64 // the MapVersion of m
	sizes   []atomic.Int64
	checkAt []atomic.Int64 // size at which a partition is next checked for a split
	// A partition found unsplittable (its data at one point) is checked
	// again when it grows past checkAt, or when a write adds to it at
	// another point, which makes it splittable.
	unsplittable []atomic.Bool
	onePoint     []atomic.Uint64
	ready        atomic.Bool // sizes include the exact sums, not only the commits since
}

func newTracker(c *Collection, limit int64) *tracker {
	m := c.Map()
	tr := &tracker{m: m, version: c.MapVersion, sizes: make([]atomic.Int64, m.Len()), checkAt: make([]atomic.Int64, m.Len()),
		unsplittable: make([]atomic.Bool, m.Len()), onePoint: make([]atomic.Uint64, m.Len())}
	for i := range tr.checkAt {
		tr.checkAt[i].Store(limit)
	}
	return tr
}

// installTracker publishes a new tracker of c's map, reads the exact
// sizes of c's partitions and adds them to it. A commit that the read
// does not see comes after the tracker was published, so it adds itself
// to it (or to a tracker published later, which reads again). A commit
// that adds itself before the sums finds a partial size and may not
// request the check its partition needs, so over says whether a
// partition's tracked size, sums included, is past its check size.
// Partitions keep the back-off of prev when it tracks the same map.
func (s *Store) installTracker(c *Collection, prev *tracker) (tr *tracker, sizes []int64, over bool, err error) {
	limit := s.partLimit.Load()
	tr = newTracker(c, limit)
	if prev != nil && prev.version == c.MapVersion && prev.m.Len() == tr.m.Len() {
		for i := range tr.checkAt { // keep the back-off of unsplittable partitions
			tr.checkAt[i].Store(max(limit, prev.checkAt[i].Load()))
			if prev.unsplittable[i].Load() {
				tr.markUnsplittable(i, prev.onePoint[i].Load())
			}
		}
	}
	s.trackers.Store(c.ID, tr)
	sizes, err = s.partitionSizes(c, tr.m)
	if err != nil {
		// Without the sums it is low: the next write seeds another.
		s.trackers.CompareAndDelete(c.ID, tr)
		return nil, nil, false, err
	}
	for i, sz := range sizes {
		if n := tr.sizes[i].Add(sz); n > tr.checkAt[i].Load() {
			over = true
		}
	}
	tr.ready.Store(true)
	return tr, sizes, over, nil
}

// markUnsplittable records that partition i holds data at point only.
func (tr *tracker) markUnsplittable(i int, point uint64) {
	tr.onePoint[i].Store(point)
	tr.unsplittable[i].Store(true)
}

// add adds a logical partition's size change at point and reports
// whether its partition needs a split check: it grew past its check
// size, or it was unsplittable and now has data at a second point (its
// back-off ends: the check splits it if it is over the limit).
func (tr *tracker) add(point uint64, delta int64) bool {
	i := tr.m.Lookup(point)
	n := tr.sizes[i].Add(delta)
	if delta <= 0 {
		return false
	}
	if tr.unsplittable[i].Load() && tr.onePoint[i].Load() != point {
		tr.unsplittable[i].Store(false)
		tr.checkAt[i].Store(0) // the limit, once a check copies it
		return true
	}
	return n > tr.checkAt[i].Load()
}

// estimate is the tracked size of the physical partition of c holding
// point, if c is tracked (and its tracker holds the exact sums already).
func (s *Store) estimate(c *Collection, point uint64) (int64, bool) {
	tr := s.trackerOf(c.ID)
	if tr == nil || !tr.ready.Load() {
		return 0, false
	}
	return tr.sizes[tr.m.Lookup(point)].Load(), true
}

// tracker returns c's tracker, seeding it from exact counters when c has
// none or its map changed.
func (s *Store) tracker(c *Collection) (*tracker, error) {
	tr := s.trackerOf(c.ID)
	// A writer may hold an entry older than the tracker's (split since it
	// looked it up): the tracker's map still places its points.
	if tr != nil && (tr.version >= c.MapVersion || !c.Sharded()) {
		return tr, nil
	}
	return s.seedTracker(c)
}

func (s *Store) seedTracker(c *Collection) (*tracker, error) {
	tr, _, over, err := s.installTracker(c, nil)
	if err != nil {
		return nil, err
	}
	if over && c.Sharded() && s.partLimit.Load() > 0 {
		s.requestSplit(c.ID)
	}
	return tr, nil
}

func (s *Store) trackerOf(id uint32) *tracker {
	if tr, ok := s.trackers.Load(id); ok {
		return tr.(*tracker)
	}
	return nil
}

func (s *Store) dropTracker(id uint32) {
	s.trackers.Delete(id)
}

// afterCommit adds a committed transaction's size changes to the trackers,
// queues split checks for partitions that grew past the limit and folds
// logical partitions whose deltas piled up.
func (s *Store) afterCommit(tx *Txn) {
	s.signalCommit(tx.written)
	for id, c := range tx.written {
		tr, err := s.tracker(c)
		if err != nil {
			s.logger.Debug("seeding the partition size tracker", "collection", c.Namespace(), "err", err)
			continue
		}
		over := false
		if c.Sharded() {
			for _, l := range tx.lps {
				if l.coll != id {
					continue
				}
				if tr.add(binary.BigEndian.Uint64(l.lp), l.d.size()) {
					over = true
				}
			}
		} else if d := tx.deltas[id]; d != nil {
			tr.sizes[0].Add(d.size())
		}
		if over && s.partLimit.Load() > 0 {
			s.requestSplit(id)
		}
	}
	for _, h := range tx.hot {
		s.foldLogicalInBackground(h)
	}
}

// foldLogicalInBackground folds one logical partition's counters, unless
// the store is closing (Close folds everything itself).
func (s *Store) foldLogicalInBackground(h lpRef) {
	s.foldMu.Lock()
	defer s.foldMu.Unlock()
	if s.closing {
		return
	}
	s.folds.Add(1)
	go func() {
		defer s.folds.Done()
		if err := s.foldLogical(h.coll, h.lp); err != nil {
			s.logger.Debug("folding logical-partition counters", "err", err)
		}
	}()
}

// requestSplit queues a split check of collection id.
func (s *Store) requestSplit(id uint32) {
	s.splitMu.Lock()
	s.splitQueue[id] = true
	s.splitMu.Unlock()
	s.splitCond.Broadcast()
}

// splitLoop runs split checks as they are queued, one collection at a
// time, until the store closes.
func (s *Store) splitLoop() {
	defer s.wg.Done()
	go func() { // wake the loop when the store stops
		<-s.stop
		s.splitMu.Lock()
		s.splitCond.Broadcast()
		s.splitMu.Unlock()
	}()
	for {
		s.splitMu.Lock()
		for len(s.splitQueue) == 0 && !s.stopped() {
			s.splitCond.Wait()
		}
		if s.stopped() {
			s.splitQueue = map[uint32]bool{}
			s.splitting = false
			s.splitMu.Unlock()
			s.splitCond.Broadcast()
			return
		}
		var id uint32
		for id = range s.splitQueue {
			break
		}
		delete(s.splitQueue, id)
		s.splitting = true
		s.splitMu.Unlock()

		if c := s.CollectionByID(id); c != nil && c.Sharded() {
			err := s.splitOversized(c)
			switch {
			case errors.Is(err, ErrCollectionChanged):
				// Split or re-placed meanwhile: check the entry now published.
				s.requestSplit(id)
			case err != nil && !errors.Is(err, ErrClosed):
				s.logger.Warn("splitting partitions", "collection", c.Namespace(), "err", err)
			}
		}

		s.splitMu.Lock()
		s.splitting = false
		s.splitMu.Unlock()
		s.splitCond.Broadcast()
	}
}

// stopped reports whether the store's background work is to stop.
func (s *Store) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// SettleSplits waits until every split check queued so far is done (or
// ctx ends): afterwards no partition is over the size limit unless its
// data sits in one logical partition.
func (s *Store) SettleSplits(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		s.splitMu.Lock()
		s.splitMu.Unlock() //nolint:staticcheck // wake the waiter under the lock
		s.splitCond.Broadcast()
	})
	defer stop()
	s.splitMu.Lock()
	defer s.splitMu.Unlock()
	for (len(s.splitQueue) > 0 || s.splitting) && !s.stopped() {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.splitCond.Wait()
	}
	return nil
}

// maxSplitsPerCheck bounds one split check.
const maxSplitsPerCheck = 64

// splitOversized splits c's partitions that are over the size limit at
// their byte medians, as often as needed, from exact counters. A
// partition whose data sits at one point cannot split; it is checked
// again after growing by another eighth of the limit, or as soon as a
// write adds data at another point in it. A partition
// that grew past its check size after the exact read, and a check that
// ends at maxSplitsPerCheck, queue another check.
func (s *Store) splitOversized(c *Collection) error {
	limit := s.partLimit.Load()
	if limit <= 0 {
		return nil
	}
	for range maxSplitsPerCheck {
		m := c.Map()
		tr, sizes, _, err := s.installTracker(c, s.trackerOf(c.ID))
		if err != nil {
			return err
		}
		split := false
		for i, sz := range sizes {
			if sz <= tr.checkAt[i].Load() { // at least the limit
				continue
			}
			started := time.Now()
			p := m.At(i)
			at, ok, err := s.splitPointOrBackOff(c, tr, i, sz, limit)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			next, err := s.SplitPartition(c, p.ID, at)
			if err != nil {
				return err
			}
			s.publishSplits(c, next, SplitReasonSize, map[int]int64{p.ID: sz}, started)
			c, split = next, true
			break
		}
		if !split {
			// Commits since the read have added themselves to tr, and
			// one may have found it without the sums: check again if
			// they took a partition past its check size.
			for i := range sizes {
				if tr.sizes[i].Load() > tr.checkAt[i].Load() {
					s.requestSplit(c.ID)
					break
				}
			}
			return nil
		}
	}
	s.requestSplit(c.ID) // more may be over: go on after other collections' checks
	return nil
}

// splitPointOrBackOff is where partition i of c (tracked by tr) splits,
// or false when its data sits at one point: then it is marked so, and
// checked again after growing by an eighth of the limit, or after a
// write elsewhere in it.
func (s *Store) splitPointOrBackOff(c *Collection, tr *tracker, i int, sz, limit int64) (uint64, bool, error) {
	p := tr.m.At(i)
	at, _, ok, err := s.splitPointOf(c, p)
	if err != nil || ok {
		return at, ok, err
	}
	tr.checkAt[i].Store(sz + max(limit/8, 1))
	tr.markUnsplittable(i, at)
	// A write at another point that committed after the read found no
	// mark to end the back-off: read again, now that writes see it.
	again, _, ok, err := s.splitPointOf(c, p)
	if err != nil || ok {
		return again, ok, err
	}
	if again != at { // the data moved to another point: no back-off
		tr.unsplittable[i].Store(false)
		tr.checkAt[i].Store(limit)
		return 0, false, nil
	}
	s.logger.Warn("partition is over the size limit but holds one logical partition: it cannot split",
		"collection", c.Namespace(), "partition", p.ID, "bytes", sz, "limit", limit)
	return 0, false, nil
}

// SplitPartition splits partition id of c at point at (see shard.Map.Split)
// and returns the new catalog entry. The change is one catalog write, so
// it is atomic and survives a crash whole or not at all; documents do not
// move, and no counter changes: a partition's counters are the sums of
// its logical partitions'. ErrCollectionChanged if c is no longer the
// current entry's map (split or re-placed meanwhile).
func (s *Store) SplitPartition(c *Collection, id int, at uint64) (*Collection, error) {
	return s.changeEntry(c, func(e *Collection) error {
		if !e.Sharded() {
			return fmt.Errorf("split %s: %w", c.Namespace(), shard.ErrBadSplit)
		}
		m, err := e.Map().Split(id, at)
		if err != nil {
			return err
		}
		e.setMap(m)
		return nil
	})
}

// SetThroughput sets c's own throughput and, for a sharded collection,
// splits its widest partitions until it has at least partitions of them
// (never fewer than it has: lowering throughput never merges). One
// catalog write.
//
// A ranged key's collection splits where its data is (shard.Map.SplitToData,
// from its logical partitions' counters read first), not at the middle of
// ranges of values it may never hold.
func (s *Store) SetThroughput(c *Collection, t Throughput, partitions int) (*Collection, error) {
	started := time.Now()
	var points []uint64
	var sizes []int64
	if c.Sharded() && c.ShardKeyRanged && partitions > c.Map().Len() {
		var err error
		if points, sizes, err = s.dataPoints(c); err != nil {
			return nil, err
		}
	}
	next, err := s.changeEntry(c, func(e *Collection) error {
		e.Throughput = t
		if e.Sharded() && partitions > e.Map().Len() {
			if e.ShardKeyRanged {
				e.setMap(e.Map().SplitToData(e.Spec(), partitions, points, sizes))
			} else {
				e.setMap(e.Map().SplitTo(partitions))
			}
		}
		return nil
	})
	if err == nil && next.MapVersion != c.MapVersion {
		s.publishSplits(c, next, SplitReasonThroughput, s.trackedSizes(c), started)
	}
	return next, err
}

// changeEntry replaces c's catalog entry by a copy that change edited, in
// one transaction, and publishes it. The current entry must have c's id
// and epoch and c's partition map (ErrCollectionChanged otherwise).
func (s *Store) changeEntry(c *Collection, change func(*Collection) error) (*Collection, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	cur := s.colls[c.Namespace()]
	if cur == nil || cur.ID != c.ID || cur.Epoch != c.Epoch || cur.MapVersion != c.MapVersion {
		return nil, ErrCollectionChanged
	}
	next := *cur
	next.Partitions = append([]PartitionEntry(nil), cur.Partitions...)
	if err := change(&next); err != nil {
		return nil, err
	}
	if next.pmap != cur.pmap {
		next.MapVersion++
	}
	raw, err := bson.Marshal(&next)
	if err != nil {
		return nil, err
	}
	if err := s.update(func(txn kv.Txn) error { return txn.Set(collKey(next.DB, next.Name), raw) }, catalogChanges(cur, &next)...); err != nil {
		return nil, fmt.Errorf("change catalog entry of %s: %w", c.Namespace(), err)
	}
	s.colls[next.Namespace()] = &next
	return &next, nil
}

// SetDatabaseThroughput records db with throughput t (creating its entry
// when create is set; ErrNotFound otherwise when it has none). With
// create, an entry that exists is ErrExists.
func (s *Store) SetDatabaseThroughput(name string, t Throughput, create bool) (*Database, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	old := s.dbs[name]
	switch {
	case create && old != nil:
		return nil, fmt.Errorf("database %s: %w", name, ErrExists)
	case !create && old == nil:
		return nil, fmt.Errorf("database %s: %w", name, ErrNotFound)
	}
	d := &Database{Name: name, Created: time.Now().UTC(), Throughput: t}
	if old != nil {
		d.Created, d.Options = old.Created, old.Options
	}
	return d, s.putDatabase(d)
}

// ErrAlreadySharded is ShardCollection's error for a collection that has
// a shard key; the entry is returned with it.
var ErrAlreadySharded = errors.New("collection is already sharded")

// ShardCollection shards db.name by spec. A collection that does not
// exist is created with partitions equal partitions and throughput t. An
// unsharded one keeps its throughput (or takes t when it has none) and
// has its documents re-placed: each moves to the key of its shard-key
// value, into a new key space (a new collection id) with a new epoch;
// writers wait meanwhile and then retry against the new entry, readers
// see the old documents until the new entry is published. A document
// without a valid shard-key value aborts it (a *shard.KeyError),
// changing nothing. A sharded collection gives ErrAlreadySharded.
func (s *Store) ShardCollection(db, name string, spec shard.Spec, partitions int, t Throughput) (*Collection, error) {
	ns := db + "." + name
	s.catMu.Lock()
	cur := s.colls[ns]
	switch {
	case cur == nil:
		defer s.catMu.Unlock()
		return s.createLocked(db, name, NewCollection{Spec: spec, Partitions: partitions, Throughput: t})
	case cur.Sharded():
		s.catMu.Unlock()
		return cur, fmt.Errorf("%s: %w", ns, ErrAlreadySharded)
	}
	s.catMu.Unlock()

	// New writers of ns wait until it is released; those in flight
	// conflict with the epoch change below and retry, then wait.
	release, err := s.holdResharded(ns)
	if err != nil {
		return nil, err
	}
	defer release()
	fenced, err := s.changeEntryFenced(cur, func(e *Collection) error { e.Epoch++; return nil })
	if err != nil {
		return nil, err
	}
	s.catMu.Lock()
	target := &Collection{DB: db, Name: name, ID: s.lastCID + 1, UUID: fenced.UUID, Created: fenced.Created,
		Options: fenced.Options, Epoch: fenced.Epoch + 1, ShardedAt: time.Now().UTC(),
		Throughput: fenced.Throughput, MapVersion: fenced.MapVersion,
		Indexes: fenced.Indexes, NextIndexID: fenced.NextIndexID, IndexVersion: fenced.IndexVersion}
	target.setSpec(spec)
	target.cloneIndexes()
	target.IDIndex = newIDIndex(false)
	// The documents keep their _id keys: cut ones stay cut (cutkeys.go).
	target.CutIDs, target.IDIndex.CutKeys = fenced.CutIDs, fenced.CutIDs
	if target.Throughput.IsZero() {
		target.Throughput = t
	}
	if spec.Ranged {
		target.setMap(shard.NewMap(1)) // split where the data is, once it is placed
	} else {
		target.setMap(shard.NewMap(partitions))
	}
	// Reserve the new id now, so that no other collection takes it.
	err = s.update(func(txn kv.Txn) error { return txn.Set(seqKey, binary.BigEndian.AppendUint32(nil, target.ID)) })
	if err == nil {
		s.lastCID = target.ID
	}
	s.catMu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := s.replace(fenced, target, spec); err != nil {
		if perr := s.purge(target.ID); perr != nil {
			s.logger.Warn("cleaning up after a failed shardCollection", "collection", ns, "err", perr)
		}
		return nil, err
	}
	if spec.Ranged && partitions > 1 {
		points, sizes, err := s.dataPoints(target)
		if err != nil {
			s.purgeLogged(target.ID, ns)
			return nil, err
		}
		target.setMap(target.Map().SplitToData(spec, partitions, points, sizes))
	}
	raw, err := bson.Marshal(target)
	if err != nil {
		return nil, err
	}
	s.catMu.Lock()
	if s.colls[ns] != fenced {
		s.catMu.Unlock()
		s.purgeLogged(target.ID, ns)
		return nil, fmt.Errorf("shard %s: %w", ns, ErrCollectionChanged)
	}
	err = s.update(func(txn kv.Txn) error { return txn.Set(collKey(db, name), raw) }, catalogEvent(ChangeShard, target, shardDescription(target)))
	if err == nil {
		s.colls[ns] = target
	}
	s.catMu.Unlock()
	if err != nil {
		s.purgeLogged(target.ID, ns)
		return nil, fmt.Errorf("shard %s: %w", ns, err)
	}
	if s.partLimit.Load() > 0 {
		s.requestSplit(target.ID)
	}
	return target, s.purge(fenced.ID)
}

// purgeLogged purges the documents a failed shardCollection of ns copied
// under collection id, logging (not returning) a failure: the command
// already fails with its own error, and what is left under an id that no
// catalog entry names is never read: it only costs space.
func (s *Store) purgeLogged(id uint32, ns string) {
	if err := s.purge(id); err != nil {
		s.logger.Warn("cleaning up after a failed shardCollection", "collection", ns, "err", err)
	}
}

// replace copies from's documents into to (a sharded collection not yet
// in the catalog), each under the key of its shard-key value, read
// chunkDocs documents or chunkBytes at a time and written in
// transactions that fit (updateFitting).
func (s *Store) replace(from, to *Collection, spec shard.Spec) error {
	var resume []byte
	const chunkDocs, chunkBytes = 1000, 16 << 20
	for {
		type moved struct{ key, doc []byte }
		var batch []moved
		var next []byte
		size := 0
		err := s.View(func(tx *Txn) error {
			return tx.Scan(from, resume, func(key, doc []byte) (bool, error) {
				if len(batch) == chunkDocs || size >= chunkBytes {
					next = append([]byte(nil), key...)
					return false, nil
				}
				sk, err := spec.Extract(doc)
				if err != nil {
					id, _ := bsoncore.Document(doc).LookupErr("_id")
					return false, fmt.Errorf("document with _id %s: %w", id, err)
				}
				idEnc := key[14:] // unsharded: d/<id:4><hash 0:8><_id>
				k := DocKey(to.ID, spec.Point(sk), value.EncodeKey(nil, sk), idEnc)
				batch = append(batch, moved{k, append([]byte(nil), doc...)})
				size += len(doc)
				return true, nil
			})
		})
		if err != nil {
			return err
		}
		// Documents of another group than the first's go in the next
		// transaction (Txn.Plan), and as many as fit in each.
		err = updateFitting(s, batch, func(tx *Txn, part []moved) ([]moved, error) {
			var later []moved
			for _, m := range part {
				if !tx.Plan(to, m.key) {
					later = append(later, m)
					continue
				}
				if err := tx.insertUnchecked(to, m.key, m.doc); err != nil {
					return nil, err
				}
			}
			return later, nil
		})
		if err != nil {
			return err
		}
		if next == nil {
			return nil
		}
		resume = next
	}
}

// insertUnchecked inserts into a collection that is not in the catalog
// yet (being built by ShardCollection); no size limit applies.
func (t *Txn) insertUnchecked(c *Collection, key, doc []byte) error {
	if _, err := t.t.Get(key); err == nil {
		return &DuplicateKeyError{Key: key}
	} else if !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	if err := t.set(key, doc); err != nil {
		return mapKVErr(err)
	}
	if err := t.putIDEntry(c, key); err != nil {
		return err
	}
	if len(c.Indexes) > 0 {
		changes, err := t.indexChanges(c, key, nil, doc)
		if err != nil {
			return err
		}
		if err := t.applyIndexChanges(c, key, changes); err != nil {
			return err
		}
	}
	return t.account(c, key, Counts{Docs: 1, Bytes: int64(len(doc)), KeyBytes: int64(len(key))})
}

// waitResharding waits while c's namespace is being re-placed and
// reports whether it was.
func (s *Store) waitResharding(c *Collection) bool {
	s.reshardMu.Lock()
	done := s.resharded[c.Namespace()]
	s.reshardMu.Unlock()
	if done == nil {
		return false
	}
	<-done
	return true
}

// holdResharded makes new writers of ns wait (waitResharding) until
// release; ErrConflict when another operation holds ns.
func (s *Store) holdResharded(ns string) (release func(), err error) {
	done := make(chan struct{})
	s.reshardMu.Lock()
	defer s.reshardMu.Unlock()
	if s.resharded[ns] != nil {
		return nil, fmt.Errorf("%s is being re-placed by another operation: %w", ns, ErrConflict)
	}
	s.resharded[ns] = done
	return func() {
		s.reshardMu.Lock()
		delete(s.resharded, ns)
		s.reshardMu.Unlock()
		close(done)
	}, nil
}
