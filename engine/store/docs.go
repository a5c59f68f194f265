package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/shard"
)

// ErrCollectionChanged means the collection a transaction wrote to was
// dropped or renamed meanwhile; the caller should look it up again.
var ErrCollectionChanged = errors.New("collection was dropped or renamed during the operation")

// Txn is a read-write or read-only transaction over documents. Counters of
// the collections it writes are kept in step and written at commit.
type Txn struct {
	s       *Store
	t       kv.Txn
	checked map[uint32]bool
	deltas  map[uint32]*Counts
	// deltaPts is where each collection's delta is kept: the point of
	// the transaction's first document in it (keys.go: cells).
	deltaPts map[uint32]uint64
	// cells are the deltas by collection and partition (its first
	// point), kept when each is set: committed group by group, each
	// partition's cell goes with its documents.
	cells map[cellAt]*Counts
	home  home // the partition of the first document written
	// each lets a kv that keeps groups apart commit the writes group by
	// group (kv.EachCommitter): a resharding's copy and catch-up, which
	// are redone from their progress record after a crash.
	each bool
	// planned says Plan chose plannedGroup, the kv group the
	// transaction commits in.
	planned      bool
	plannedGroup uint64
	lps          map[string]*lpDelta    // sharded collections' logical partitions written, by collID + lp
	written      map[uint32]*Collection // collections written, for the size tracker after commit
	stored       map[uint32]*Counts     // unsharded collections' counters, when the size check read them
	hot          []lpRef                // logical partitions whose deltas piled up: fold after commit
	ixWork       IndexWork              // secondary index entries written
	fences       []*sync.RWMutex        // collections' fences held shared until the end (fence.go)
	owner        *Transaction           // the multi-statement transaction this is, or nil
	// added is what set and del wrote, for the disk guard; grows says
	// set wrote something (diskspace.go).
	added int64
	grows bool
	// changes are the change events of the writes so far, written to
	// the change log at commit (changes.go); replacing makes the next
	// Replace or Modify a replacement.
	changes   []*ChangeEvent
	replacing bool
	// unlogged writes make no change events (a resharding's hidden
	// copy); versions that events name are still kept.
	unlogged bool
	// quiet commits ask no sync of the background loop: what they write
	// carries its own resume point in the same transaction (a
	// resharding's copy), so a machine's crash that loses it only has it
	// redone. Badger's log is written in commit order, so the next sync
	// anyone asks for makes it durable with the rest.
	quiet bool
	// absent, when set, says that a key holds no document, so Insert
	// need not read it (a resharding's copy: copyfilter.go).
	absent func(key []byte) bool
	// freshLP, when set, says that a logical partition (<point><shard
	// key>) of the collection written has no counters and no other
	// writer until this transaction ends, so its counters go in as a
	// base rather than a delta (a resharding's copy: copyfilter.go):
	// nothing has to fold them later.
	freshLP func(lp []byte) bool
	acct    acctCache
	lpKey   []byte // lpDelta's lookup key, reused
}

// cellAt is a collection and the first point of one of its partitions.
type cellAt struct {
	coll  uint32
	point uint64
}

// lpDelta is what a transaction changes in one logical partition.
type lpDelta struct {
	coll   uint32
	lp     []byte // <point:8><shardKey>
	d      Counts
	read   bool   // stored holds the partition's counters as this transaction sees them
	stored Counts //
	fresh  bool   // the partition had no counters: d is written as its base (Txn.freshLP)
}

type lpRef struct {
	coll uint32
	lp   []byte
}

// Counts are a collection's document count, data bytes (the sum of its
// documents' BSON sizes) and key bytes (the sum of its document keys'
// sizes: the primary _id index).
type Counts struct {
	Docs     int64
	Bytes    int64
	KeyBytes int64
	// IndexBytes is the size of the secondary index entries (keys and
	// values) of the documents.
	IndexBytes int64
}

// Update runs fn in a read-write transaction and commits it. Conflicts with
// concurrent transactions rerun fn (up to a bound), so fn must have no
// effects outside the transaction.
func (s *Store) Update(fn func(*Txn) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	for attempt := 0; ; attempt++ {
		tx := &Txn{s: s, t: s.db.NewTransaction(true)}
		err := fn(tx)
		if err == nil {
			err = tx.commit()
		}
		tx.t.Discard()
		tx.releaseFences()
		if errors.Is(err, kv.ErrConflict) && attempt < 1000 {
			continue
		}
		var wait *lockWaitError
		if errors.As(err, &wait) {
			select {
			case <-wait.done:
				continue
			case <-time.After(lockWaitLimit):
				return fmt.Errorf("%w: a transaction in progress holds a document this write changes", ErrConflict)
			}
		}
		if err == nil {
			if !tx.quiet {
				s.dirty.Store(true)
			}
			s.afterCommit(tx)
		}
		return mapKVErr(err)
	}
}

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(*Txn) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	tx := &Txn{s: s, t: s.db.NewTransaction(false)}
	defer tx.releaseFences()
	defer tx.t.Discard()
	return mapKVErr(fn(tx))
}

func (t *Txn) commit() error {
	if len(t.changes) > 0 {
		ts := t.s.changes.reserve()
		defer t.s.changes.release(ts)
		if err := t.putChanges(ts, t.changes); err != nil {
			return err
		}
	}
	if t.added > 0 {
		if err := t.s.disk.admit(t.added, t.grows); err != nil {
			return err
		}
	}
	if t.each {
		for at, d := range t.cells {
			if *d == (Counts{}) {
				continue
			}
			if err := t.t.Set(t.s.deltaKey(at.coll, at.point), encodeCounts(*d)); err != nil {
				return err
			}
		}
	} else {
		for id, d := range t.deltas {
			if *d == (Counts{}) {
				continue
			}
			if err := t.t.Set(t.s.deltaKey(id, t.deltaPts[id]), encodeCounts(*d)); err != nil {
				return err
			}
		}
	}
	for _, l := range t.lps {
		if l.d == (Counts{}) {
			continue
		}
		key := lpBaseKey(l.coll, l.lp)
		if !l.fresh {
			key = t.s.lpDeltaKey(l.coll, l.lp)
		}
		if err := t.t.Set(key, encodeCounts(l.d)); err != nil {
			return err
		}
	}
	commit := t.t.Commit
	if ec, ok := t.t.(kv.EachCommitter); ok && t.each {
		commit = ec.CommitEach
	}
	if err := commit(); err != nil {
		return err
	}
	t.s.recent.add(t.changes) // before the deferred release makes them visible
	return nil
}

// checkCollection holds c's fence shared until the transaction ends and
// fails with ErrCollectionChanged when c is no longer the published entry
// writers must use (dropped, renamed, re-placed, or its indexes changed):
// see fence.go.
func (t *Txn) checkCollection(c *Collection) error {
	if t.checked[c.ID] {
		return nil
	}
	if t.s.waitResharding(c) {
		return ErrCollectionChanged // re-placed meanwhile: c is out of date
	}
	f := t.s.fence(c.ID)
	if t.owner == nil {
		f.RLock()
	} else if !tryRLock(f, txnLockTimeout) {
		return ErrLockTimeout
	}
	t.fences = append(t.fences, f)
	t.s.catMu.RLock()
	cur := t.s.colls[c.Namespace()]
	t.s.catMu.RUnlock()
	if cur == nil || cur.ID != c.ID || cur.Epoch != c.Epoch || cur.IndexVersion != c.IndexVersion {
		return ErrCollectionChanged
	}
	if t.checked == nil {
		t.checked = map[uint32]bool{}
	}
	t.checked[c.ID] = true
	return nil
}

func (t *Txn) delta(id uint32) *Counts {
	if t.deltas == nil {
		t.deltas = map[uint32]*Counts{}
	}
	d := t.deltas[id]
	if d == nil {
		d = &Counts{}
		t.deltas[id] = d
	}
	return d
}

// Plan reports whether a write of key in c may join this transaction.
// It always may, unless the store's kv commits each transaction in one
// of several groups (kv.Grouped: a cluster, where each physical
// partition is a group): then the first key planned chooses the group,
// and a key of another belongs in a transaction of its own. Writers that
// gather many documents into one transaction (a batch insert, an update
// or delete of many, a TTL pass, an index build) end it before a key
// that does not fit.
func (t *Txn) Plan(c *Collection, key []byte) bool { return t.planKey(key) }

func (t *Txn) planKey(key []byte) bool {
	if t.s.grouped == nil || t.owner != nil {
		// A multi-statement transaction cannot be cut in two: its
		// writes to a second partition are refused (checkScope).
		return true
	}
	g, known := t.s.grouped.GroupOf(key)
	switch {
	case !known:
		return true
	case !t.planned:
		t.planned, t.plannedGroup = true, g
		return true
	}
	return g == t.plannedGroup
}

// lpDelta is the transaction's change to the logical partition of key, a
// document key of sharded collection c.
func (t *Txn) lpDelta(c *Collection, key []byte) (*lpDelta, error) {
	lp, err := logicalPartitionOf(key)
	if err != nil {
		return nil, err
	}
	// An insert counts its document, then its _id entry: the same one.
	if l := t.acct.lp; l != nil && l.coll == c.ID && bytes.Equal(l.lp, lp) {
		return l, nil
	}
	t.lpKey = append(binary.BigEndian.AppendUint32(t.lpKey[:0], c.ID), lp...)
	l := t.lps[string(t.lpKey)]
	if l == nil {
		if t.lps == nil {
			t.lps = map[string]*lpDelta{}
		}
		l = &lpDelta{coll: c.ID, lp: append([]byte(nil), lp...), fresh: t.freshLP != nil && t.freshLP(lp)}
		t.lps[string(t.lpKey)] = l
	}
	t.acct.lp = l
	return l, nil
}

// acctCache is what account last looked up: a batch writes one
// collection document after document, and an insert counts its
// document and then its index entries in the same places.
type acctCache struct {
	c                *Collection
	delta            *Counts
	lp               *lpDelta
	cell             *Counts // the cell of c's partition [cellMin, cellMax]
	cellMin, cellMax uint64
}

// account adds d to the counters of c and, when c is sharded, of the
// logical partition of key.
func (t *Txn) account(c *Collection, key []byte, d Counts) error {
	if c.Sharded() {
		l, err := t.lpDelta(c, key)
		if err != nil {
			return err
		}
		l.d.add(d)
	}
	a := &t.acct
	if a.c != c {
		a.c, a.delta, a.cell = c, t.delta(c.ID), nil
		if t.deltaPts == nil {
			t.deltaPts = map[uint32]uint64{}
		}
		if _, ok := t.deltaPts[c.ID]; !ok {
			t.deltaPts[c.ID] = pointOf(key)
		}
		if !t.home.ok {
			m := c.Map()
			t.home = home{coll: c.ID, point: m.At(m.Lookup(pointOf(key))).Min, ok: true}
		}
		if t.written == nil {
			t.written = map[uint32]*Collection{}
		}
		t.written[c.ID] = c
	}
	a.delta.add(d)
	if t.each {
		if p := pointOf(key); a.cell == nil || p < a.cellMin || p > a.cellMax {
			m := c.Map()
			part := m.At(m.Lookup(p))
			at := cellAt{c.ID, part.Min}
			if t.cells == nil {
				t.cells = map[cellAt]*Counts{}
			}
			if t.cells[at] == nil {
				t.cells[at] = &Counts{}
			}
			a.cell, a.cellMin, a.cellMax = t.cells[at], part.Min, part.Max
		}
		a.cell.add(d)
	}
	return nil
}

// checkGrowth refuses a write that would grow the logical partition of
// key (the whole collection, when unsharded) by growth bytes past the
// logical-partition limit. It reads the partition's counters only when
// the size tracker cannot rule that out: when the physical partition
// holding it (the upper bound of its size) plus what this transaction
// adds to the collection could pass the limit.
func (t *Txn) checkGrowth(c *Collection, key []byte, growth int64) error {
	limit := t.s.lpLimit.Load()
	if limit <= 0 || growth <= 0 {
		return nil
	}
	pendingColl := growth
	if d := t.deltas[c.ID]; d != nil {
		pendingColl += max(d.size(), 0)
	}
	if !c.Sharded() {
		stored := t.stored[c.ID]
		if stored == nil {
			if est, ok := t.s.estimate(c, 0); ok && est+pendingColl <= limit {
				return nil
			}
			var err error
			if stored, err = t.storedCounts(c); err != nil {
				return err
			}
		}
		if size := stored.size() + pendingColl; size > limit {
			return &LogicalPartitionFullError{Limit: limit, Size: size}
		}
		return nil
	}
	l, err := t.lpDelta(c, key)
	if err != nil {
		return err
	}
	if !l.read {
		if est, ok := t.s.estimate(c, binary.BigEndian.Uint64(l.lp)); ok && est+pendingColl <= limit {
			return nil
		}
		counts, deltas, err := readLogical(t.t, c.ID, l.lp)
		if err != nil {
			return err
		}
		l.stored, l.read = counts, true
		if deltas > lpFoldThreshold {
			t.hot = append(t.hot, lpRef{c.ID, l.lp})
		}
	}
	if size := l.stored.size() + l.d.size() + growth; size > limit {
		return &LogicalPartitionFullError{Limit: limit, Size: size}
	}
	return nil
}

// storedCounts are c's committed counters as this transaction read them
// (read once, then kept in t.stored).
func (t *Txn) storedCounts(c *Collection) (*Counts, error) {
	if stored := t.stored[c.ID]; stored != nil {
		return stored, nil
	}
	counts, _, err := readCounts(t.t, c.ID)
	if err != nil {
		return nil, err
	}
	if t.stored == nil {
		t.stored = map[uint32]*Counts{}
	}
	t.stored[c.ID] = &counts
	return &counts, nil
}

// lpFoldThreshold is how many deltas of one logical partition make its
// size check fold them after the write commits.
const lpFoldThreshold = 32

// Get returns the document at key, or ErrNotFound. The slice is valid
// until the transaction ends.
func (t *Txn) Get(key []byte) ([]byte, error) {
	item, err := t.t.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// Insert stores doc at key in c; a present key gives *DuplicateKeyError.
// In a capped collection key is the document's key by _id, and the
// document goes to the next insertion sequence instead (capped.go).
func (t *Txn) Insert(c *Collection, key, doc []byte) error {
	if err := t.checkCollection(c); err != nil {
		return err
	}
	if c.Capped {
		var err error
		if key, err = t.placeCapped(c, key, len(doc)); err != nil {
			return err
		}
	}
	if err := t.lockKey(key); err != nil {
		return err
	}
	if err := t.checkScope(c, key); err != nil {
		return err
	}
	if t.absent == nil || !t.absent(key) {
		_, err := t.t.Get(key)
		if err == nil {
			return &DuplicateKeyError{Key: key}
		}
		if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
	}
	if err := t.checkGrowth(c, key, int64(len(doc)+len(key))); err != nil {
		return err
	}
	var err error
	var changes []ixChange
	if len(c.Indexes) > 0 {
		if changes, err = t.indexChanges(c, key, nil, doc); err != nil {
			return err
		}
	}
	if err := t.set(key, doc); err != nil {
		return mapKVErr(err)
	}
	if err := t.putIDEntry(c, key); err != nil {
		return err
	}
	if err := t.applyIndexChanges(c, key, changes); err != nil {
		return err
	}
	if err := t.logDocChange(c, key, nil, doc); err != nil {
		return err
	}
	if err := t.account(c, key, Counts{Docs: 1, Bytes: int64(len(doc)), KeyBytes: int64(len(key))}); err != nil || !c.Capped {
		return err
	}
	return t.evictCapped(c, key)
}

// exists fails with ErrNotFound unless key holds a document. Reading the
// key also makes the transaction conflict with a concurrent write of it, so
// two transactions cannot both delete one document and count it twice.
func (t *Txn) exists(key []byte) error {
	_, err := t.t.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return fmt.Errorf("document %x: %w", key, ErrNotFound)
	}
	return err
}

// current is the stored version of the document at key (ErrNotFound if
// none), read as exists reads it.
func (t *Txn) current(key []byte) ([]byte, error) {
	item, err := t.t.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("document %x: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// Replace overwrites the document at key, whose current version has
// oldSize bytes. ErrNotFound if there is no document at key.
func (t *Txn) Replace(c *Collection, key, doc []byte, oldSize int) error {
	if err := t.checkCollection(c); err != nil {
		return err
	}
	if err := t.checkCappedWrite(c); err != nil {
		return err
	}
	if err := t.lockKey(key); err != nil {
		return err
	}
	if err := t.checkScope(c, key); err != nil {
		return err
	}
	var changes []ixChange
	old, err := t.current(key)
	if err != nil {
		return err
	}
	if len(c.Indexes) > 0 {
		if changes, err = t.indexChanges(c, key, old, doc); err != nil {
			return err
		}
	}
	if err := t.checkGrowth(c, key, int64(len(doc)-oldSize)); err != nil {
		return err
	}
	if err := t.set(key, doc); err != nil {
		return mapKVErr(err)
	}
	if err := t.applyIndexChanges(c, key, changes); err != nil {
		return err
	}
	if err := t.logDocChange(c, key, old, doc); err != nil {
		return err
	}
	t.replacing = false
	return t.account(c, key, Counts{Bytes: int64(len(doc) - oldSize)})
}

// Delete removes the document at key, whose current version has oldSize
// bytes. ErrNotFound if there is no document at key.
func (t *Txn) Delete(c *Collection, key []byte, oldSize int) error {
	if err := t.checkCollection(c); err != nil {
		return err
	}
	if err := t.checkCappedWrite(c); err != nil {
		return err
	}
	if err := t.lockKey(key); err != nil {
		return err
	}
	if err := t.checkScope(c, key); err != nil {
		return err
	}
	old, err := t.current(key)
	if err != nil {
		return err
	}
	if len(c.Indexes) > 0 {
		changes, err := t.indexChanges(c, key, old, nil)
		if err != nil {
			return err
		}
		if err := t.applyIndexChanges(c, key, changes); err != nil {
			return err
		}
	}
	if err := t.logDocChange(c, key, old, nil); err != nil {
		return err
	}
	if err := t.del(key); err != nil {
		return mapKVErr(err)
	}
	if err := t.removeIDEntry(c, key); err != nil {
		return err
	}
	return t.account(c, key, Counts{Docs: -1, Bytes: -int64(oldSize), KeyBytes: -int64(len(key))})
}

// Scan visits the documents of c whose keys are >= start (or all, when
// start is nil) in key order, until fn returns false or an error. key and
// doc are valid only during the call.
func (t *Txn) Scan(c *Collection, start []byte, fn func(key, doc []byte) (bool, error)) error {
	return t.scanItems(c, start, nil, nil, fn)
}

// scanItems visits the documents of c from start up to end (nil: to the
// last), passing over the items skip (if any) tells it to.
func (t *Txn) scanItems(c *Collection, start, end []byte, skip func(kv.Item) bool, fn func(key, doc []byte) (bool, error)) error {
	prefix := DocPrefix(c.ID)
	// No value prefetching: Badger prefetches each value on a goroutine of
	// its own, while documents are stored inline in the LSM tree (they are
	// far below the value threshold), so reading them in place is cheaper,
	// and parallel scans (fan-out reads) do not drown in goroutines.
	it := t.t.NewIterator(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	if bytes.Compare(start, prefix) < 0 { // nil, or before c's documents
		start = prefix
	}
	for it.Seek(start); it.Valid(); it.Next() {
		item := it.Item()
		if end != nil && bytes.Compare(item.Key(), end) >= 0 {
			return nil
		}
		if skip != nil && skip(item) {
			continue
		}
		if more, err := visitItem(item, fn); err != nil || !more {
			return err
		}
	}
	return nil
}

// visitItem passes one document, in place, to fn.
func visitItem(item kv.Item, fn func(key, doc []byte) (bool, error)) (more bool, err error) {
	err = item.Value(func(v []byte) error {
		var ferr error
		more, ferr = fn(item.Key(), v)
		return ferr
	})
	return more, err
}

// ScanRange visits the documents of c whose keys are in [start, end) in
// key order (end nil: to the end of c's documents), as Scan does: one
// physical partition, or what is left of one.
func (t *Txn) ScanRange(c *Collection, start, end []byte, fn func(key, doc []byte) (bool, error)) error {
	return t.scanItems(c, start, end, nil, fn)
}

// KeyRange is a range [Start, End) of document keys; End nil: to the
// end of the collection's documents.
type KeyRange struct{ Start, End []byte }

// ScanRanges visits the documents of c in each of ranges (ascending and
// disjoint) in key order, as Scan does, with one iterator for all of them:
// the logical partitions a read is routed to, however many.
func (t *Txn) ScanRanges(c *Collection, ranges []KeyRange, fn func(key, doc []byte) (bool, error)) error {
	if len(ranges) == 1 {
		return t.ScanRange(c, ranges[0].Start, ranges[0].End, fn)
	}
	prefix := DocPrefix(c.ID)
	it := t.t.NewIterator(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	seeked := false
	for _, r := range ranges {
		start := r.Start
		if bytes.Compare(start, prefix) < 0 {
			start = prefix
		}
		// The iterator stands at the first key after the last range: past
		// this range's end (nothing in it: no seek), inside it (read on),
		// or before it (seek). Sparse ranges cost a comparison each.
		switch {
		case !seeked:
			it.Seek(start)
			seeked = true
		case !it.Valid():
			return nil // past the collection's last document
		case r.End != nil && bytes.Compare(it.Item().Key(), r.End) >= 0:
			continue
		case bytes.Compare(it.Item().Key(), start) < 0:
			it.Seek(start)
		}
		for ; it.Valid(); it.Next() {
			item := it.Item()
			if r.End != nil && bytes.Compare(item.Key(), r.End) >= 0 {
				break
			}
			if more, err := visitItem(item, fn); err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// PartitionRange is the key range [start, end) of the documents of
// partition p of collection id; end is nil for the partition that ends
// the hash space.
func PartitionRange(id uint32, p shard.Partition) (start, end []byte) {
	start = binary.BigEndian.AppendUint64(DocPrefix(id), p.Min)
	if next, ok := p.End(); ok {
		end = binary.BigEndian.AppendUint64(DocPrefix(id), next)
	}
	return start, end
}

// Counts returns c's document count and data bytes, exact as of now.
func (s *Store) Counts(c *Collection) (Counts, error) {
	if s.closed.Load() {
		return Counts{}, ErrClosed
	}
	var total Counts
	deltas := 0
	err := s.db.View(func(txn kv.Txn) error {
		var err error
		total, deltas, err = readCounts(txn, c.ID)
		return err
	})
	if err != nil {
		return Counts{}, fmt.Errorf("counts of %s: %w", c.Namespace(), err)
	}
	if deltas > foldThreshold {
		s.foldInBackground(c)
	}
	return total, nil
}

// foldThreshold is how many deltas make Counts fold a collection's counters.
const foldThreshold = 256

func (s *Store) foldInBackground(c *Collection) {
	s.foldMu.Lock()
	defer s.foldMu.Unlock()
	if s.closing || s.folding[c.ID] {
		return
	}
	s.folds.Add(1)
	go func() {
		defer s.folds.Done()
		if err := s.fold(c.ID); err != nil {
			s.logger.Debug("folding counters", "collection", c.Namespace(), "err", err)
		}
	}()
}
