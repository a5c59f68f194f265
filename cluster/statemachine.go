package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	sm "github.com/lni/dragonboat/v4/statemachine"
)

// Entry results (statemachine.Result.Value) every replica computes alike.
const (
	ResultApplied  = 1 // the batch's writes are in the state
	ResultRejected = 2 // the batch is invalid and wrote nothing; Result.Data says why
	ResultConflict = 3 // an expectation of the batch failed; it wrote nothing
)

// ErrClosed is returned by Lookup on a closed state machine.
var ErrClosed = errors.New("cluster: state machine closed")

// StateMachine is one replica of one group: the group's spans in the
// node's Badger, plus the group's applied index under the metadata prefix.
// It implements dragonboat's statemachine.IOnDiskStateMachine; dragonboat
// serialises Update, Sync, PrepareSnapshot, RecoverFromSnapshot and Close,
// and lets Lookup and SaveSnapshot run beside them.
type StateMachine struct {
	db      *badger.DB
	sync    func() error // makes db's writes durable (nil: db.Sync)
	shardID uint64
	spans   []Span // sorted
	// owns, when set, narrows spans to the keys it accepts
	// (GroupConfig.Owns).
	owns func(key, value []byte) bool
	// ownsByKey, when set, says which keys owns judges by the key alone
	// (GroupConfig.OwnsByKey): a put of one needs no read.
	ownsByKey func(key []byte) bool
	closed    atomic.Bool
	// watch is the prefix whose writes move gen (GroupConfig.Watch);
	// watched says the commit being built wrote under it.
	watch   []byte
	gen     *atomic.Uint64
	watched bool
	// observe and onApply are GroupConfig's Observe and OnApply;
	// observed holds the observed writes of the entry being applied.
	observe  []byte
	onApply  func(key, value []byte)
	observed []KV
	// seen holds, for the Badger transaction being built, the value of
	// every key an entry read or wrote in it, as the transaction sees
	// it: a key the entries of one commit keep reading (the writer's
	// fence) is read from Badger once.
	seen map[string]seenValue
	// ops and overlay are applyEntry's, kept from one entry to the next;
	// opsUsed is the most ops an entry of the commit being built had (what
	// the commit clears: clearing the whole capacity, which a large batch
	// leaves behind, was a twentieth of a follower's CPU under inserts).
	ops     []Op
	opsUsed int
	overlay overlay
	// badgerReads counts txnValue's reads from Badger, for ApplyStats.
	badgerReads int64
	freeze      func() func(key, value []byte) bool
	// logger, when set, gets a line per snapshot streamed or restored.
	logger *slog.Logger

	// applied is the last index in Badger; only the serialised methods
	// write it.
	applied atomic.Uint64

	// restore counts the restore under way or the last one
	// (CopyProgress).
	restore restoreCount

	mu    sync.Mutex
	stats ApplyStats
}

// ApplyStats count what one StateMachine instance did since it was made.
type ApplyStats struct {
	OpenIndex    uint64 // the applied index Open found in Badger
	Entries      int64  // entries Update applied (or rejected)
	Rejected     int64  // of which rejected or in conflict (wrote nothing)
	FirstIndex   uint64 // index of the first entry Update saw, 0 when none
	LastIndex    uint64 // index of the last one
	Commits      int64  // Badger commits Update made
	Snapshots    int64  // snapshots SaveSnapshot wrote
	Restores     int64  // snapshots RecoverFromSnapshot applied
	RestoredKeys int64  // keys those snapshots held
	EntryBytes   int64  // bytes of the commands of the entries applied
	Reads        int64  // keys the entries read from Badger (guards, counters, owners)
}

// NewStateMachine is the replica of group shardID over db, owning spans.
func NewStateMachine(db *badger.DB, shardID uint64, spans []Span) (*StateMachine, error) {
	sorted, err := checkSpans(spans)
	if err != nil {
		return nil, err
	}
	return &StateMachine{db: db, shardID: shardID, spans: sorted}, nil
}

var _ sm.IOnDiskStateMachine = (*StateMachine)(nil)

// Stats is a copy of the counts so far.
func (m *StateMachine) Stats() ApplyStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Applied is the last applied index (what Badger holds).
func (m *StateMachine) Applied() uint64 { return m.applied.Load() }

// Open returns the applied index stored with the data. A snapshot restore
// that did not finish leaves its marker: the spans then hold an unknown
// mix, so Open empties them (but the observed keys, which say what the
// group owns) and returns 0, and dragonboat restores the snapshot (or
// replays the log) again.
func (m *StateMachine) Open(stop <-chan struct{}) (uint64, error) {
	var applied uint64
	var restoring bool
	err := m.db.View(func(txn *badger.Txn) error {
		if _, err := txn.Get(restoringKey(m.shardID)); err == nil {
			restoring = true
			return nil
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		v, found, err := getValue(txn, appliedKey(m.shardID))
		if err != nil || !found {
			return err
		}
		if len(v) != 8 {
			return fmt.Errorf("applied index of group %d has %d bytes", m.shardID, len(v))
		}
		applied = binary.BigEndian.Uint64(v)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("open group %d: %w", m.shardID, err)
	}
	if restoring {
		// Ownership is judged with the observed keys as Badger holds
		// them (a restore keeps them until its last commit): the range
		// the configuration was created with may cover keys a split
		// handed to another group since.
		if err := m.loadObserved(); err != nil {
			return 0, fmt.Errorf("open group %d: %w", m.shardID, err)
		}
		if err := m.clear(stop); errors.Is(err, sm.ErrSnapshotStopped) {
			return 0, sm.ErrOpenStopped
		} else if err != nil {
			return 0, fmt.Errorf("open group %d: clear an unfinished restore: %w", m.shardID, err)
		}
		if err := m.db.Update(func(txn *badger.Txn) error {
			if err := txn.Delete(appliedKey(m.shardID)); err != nil {
				return err
			}
			return txn.Delete(restoringKey(m.shardID))
		}); err != nil {
			return 0, fmt.Errorf("open group %d: %w", m.shardID, err)
		}
		applied = 0
	}
	m.applied.Store(applied)
	if err := m.loadObserved(); err != nil {
		return 0, fmt.Errorf("open group %d: %w", m.shardID, err)
	}
	m.mu.Lock()
	m.stats.OpenIndex = applied
	m.mu.Unlock()
	return applied, nil
}

// loadObserved reports every key under the Observe prefix to OnApply.
func (m *StateMachine) loadObserved() error {
	if m.onApply == nil || len(m.observe) == 0 {
		return nil
	}
	return m.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: m.observe})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			m.onApply(it.Item().KeyCopy(nil), v)
		}
		return nil
	})
}

// Update applies entries in as few Badger commits as fit: each commit
// holds whole entries and the index of its last one, so the state on disk
// is always the result of a prefix of the log.
func (m *StateMachine) Update(entries []sm.Entry) ([]sm.Entry, error) {
	for rest := entries; len(rest) > 0; {
		n, err := m.commitPrefix(rest)
		if err != nil {
			return nil, fmt.Errorf("group %d: apply entries %d..: %w", m.shardID, rest[0].Index, err)
		}
		rest = rest[n:]
	}
	return entries, nil
}

// commitPrefix applies the longest prefix of entries that fits one Badger
// transaction and commits it; it returns the prefix's length.
func (m *StateMachine) commitPrefix(entries []sm.Entry) (int, error) {
	txn := m.db.NewTransaction(true)
	defer txn.Discard()
	m.observed = m.observed[:0]
	if m.seen == nil {
		m.seen = map[string]seenValue{}
	}
	clear(m.seen)
	var rejected int64
	for i := range entries {
		e := &entries[i]
		if e.Index <= m.applied.Load() {
			return 0, fmt.Errorf("entry %d is already applied (applied index %d)", e.Index, m.applied.Load())
		}
		r, err := m.applyEntry(txn, e.Cmd)
		if errors.Is(err, badger.ErrTxnTooBig) && i > 0 {
			txn.Discard()
			return m.commitPrefix(entries[:i])
		}
		if errors.Is(err, badger.ErrTxnTooBig) {
			// Alone too big: failing would stop the replica on this entry
			// at every restart. Node.Propose refuses such batches, and
			// every node has the same Badger options, so every replica
			// rejects it alike.
			txn.Discard()
			return m.commitRejected(e, "the batch does not fit one transaction")
		}
		if err != nil {
			return 0, err
		}
		if r.Value != ResultApplied {
			rejected++
		}
		e.Result = r
		if len(m.observed) > 0 {
			// Observed state changed: the entries after this one are
			// judged with it, so the commit ends here.
			entries = entries[:i+1]
			break
		}
	}
	// The reused buffers let go of the entries' bytes.
	clear(m.ops[:min(m.opsUsed, cap(m.ops))]) // (a batch that failed to decode leaves none)
	m.opsUsed = 0
	m.overlay.release()
	last := entries[len(entries)-1].Index
	err := txn.Set(appliedKey(m.shardID), binary.BigEndian.AppendUint64(nil, last))
	if errors.Is(err, badger.ErrTxnTooBig) && len(entries) > 1 {
		txn.Discard()
		return m.commitPrefix(entries[:len(entries)-1])
	}
	if err != nil {
		return 0, err
	}
	if err := txn.Commit(); err != nil {
		return 0, err
	}
	m.applied.Store(last)
	for _, o := range m.observed {
		m.onApply(o.Key, o.Value)
	}
	m.observed = m.observed[:0]
	if m.watched && m.gen != nil {
		m.gen.Add(1)
	}
	m.watched = false
	m.mu.Lock()
	if m.stats.FirstIndex == 0 {
		m.stats.FirstIndex = entries[0].Index
	}
	m.stats.LastIndex = last
	m.stats.Entries += int64(len(entries))
	for _, e := range entries {
		m.stats.EntryBytes += int64(len(e.Cmd))
	}
	m.stats.Rejected += rejected
	m.stats.Commits++
	m.stats.Reads = m.badgerReads
	m.mu.Unlock()
	return len(entries), nil
}

// commitRejected commits e as rejected: only the applied index moves.
func (m *StateMachine) commitRejected(e *sm.Entry, reason string) (int, error) {
	if err := m.db.Update(func(txn *badger.Txn) error {
		return txn.Set(appliedKey(m.shardID), binary.BigEndian.AppendUint64(nil, e.Index))
	}); err != nil {
		return 0, err
	}
	e.Result = rejectResult(reason)
	m.applied.Store(e.Index)
	m.mu.Lock()
	if m.stats.FirstIndex == 0 {
		m.stats.FirstIndex = e.Index
	}
	m.stats.LastIndex = e.Index
	m.stats.Entries++
	m.stats.Rejected++
	m.stats.Commits++
	m.mu.Unlock()
	return 1, nil
}

// applyEntry writes one entry's batch into txn, or nothing when the batch
// is rejected or an expectation fails. The decision depends only on the entry and the state, so
// every replica makes the same one.
func (m *StateMachine) applyEntry(txn *badger.Txn, cmd []byte) (sm.Result, error) {
	ops, err := decodeBatchInto(m.ops[:0], cmd)
	m.ops = ops[:0]
	m.opsUsed = max(m.opsUsed, len(ops))
	if err != nil {
		return rejectResult(err.Error()), nil
	}
	// Evaluate into an overlay first so that a refused batch leaves txn
	// as it was.
	o := &m.overlay
	o.reset()
	for _, op := range ops {
		if !inSpans(m.spans, op.Key) {
			return rejectResult(fmt.Sprintf("key %q is outside the group's spans", op.Key)), nil
		}
		w := &o.writes[o.at(op.Key)]
		// cur and found are the key's value at this point of the batch.
		cur, found := w.value, w.exists
		if !w.written && m.reads(op) {
			if cur, found, err = m.txnValue(txn, op.Key); err != nil {
				return sm.Result{}, err
			}
		}
		// A key another group owns is not this group's to read or
		// write, whatever the batch would make of it.
		if m.owns != nil && (found && !m.owns(op.Key, cur) || op.Kind == OpPut && !m.owns(op.Key, op.Value)) {
			return rejectResult(fmt.Sprintf("key %q belongs to another group", op.Key)), nil
		}
		switch op.Kind {
		case OpExpect:
			if op.Absent && found {
				return sm.Result{Value: ResultConflict, Data: fmt.Appendf(nil, "key %q exists", op.Key)}, nil
			}
			if !op.Absent && (!found || !bytes.Equal(cur, op.Value)) {
				return sm.Result{Value: ResultConflict, Data: fmt.Appendf(nil, "key %q does not hold the expected value", op.Key)}, nil
			}
		case OpExpectHash:
			if !found || ValueDigest(cur) != [DigestLen]byte(op.Value) {
				return sm.Result{Value: ResultConflict, Data: fmt.Appendf(nil, "key %q does not hold the expected value", op.Key)}, nil
			}
		case OpPut:
			*w = write{value: op.Value, exists: true, written: true}
		case OpDelete:
			*w = write{written: true}
		case OpAdd:
			v, err := addCounters(cur, op.Deltas)
			if err != nil {
				return rejectResult(fmt.Sprintf("key %q: %v", op.Key, err)), nil
			}
			if m.owns != nil && !m.owns(op.Key, v) {
				return rejectResult(fmt.Sprintf("key %q belongs to another group", op.Key)), nil
			}
			*w = write{value: v, exists: true, written: true}
		}
	}
	for i, k := range o.keys {
		w := &o.writes[i]
		if !w.written {
			continue
		}
		if len(m.watch) > 0 && bytes.HasPrefix(k, m.watch) {
			m.watched = true
		}
		if m.onApply != nil && len(m.observe) > 0 && bytes.HasPrefix(k, m.observe) {
			var v []byte
			if w.exists {
				v = bytes.Clone(w.value)
			}
			m.observed = append(m.observed, KV{Key: bytes.Clone(k), Value: v})
		}
		// A later read in this commit goes to txn, which sees the write.
		if _, ok := m.seen[string(k)]; ok {
			delete(m.seen, string(k))
		}
		// The key and value are the entry's own bytes (or a counter
		// vector of this batch): Badger holds them until the commit,
		// which ends before Update returns, and copies them in it.
		if w.exists {
			err = txn.Set(k, w.value)
		} else {
			err = txn.Delete(k)
		}
		if err != nil {
			return sm.Result{}, err
		}
	}
	return sm.Result{Value: ResultApplied}, nil
}

// write is a key's state in a batch's overlay: its value at this point
// of the batch, and whether the batch wrote it (false: only read).
type write struct {
	value   []byte
	exists  bool // false: deleted
	written bool
}

// overlay is a batch's keys in the order it first names them, each with
// its write; a batch of more than overlaySmall keys gets a map to find
// them.
type overlay struct {
	keys   [][]byte
	writes []write
	index  map[string]int
	used   int // the most keys since the last release
}

const overlaySmall = 16

// reads is whether applying op needs the key's value before it: a
// guard or a counter does; so does a write where the group shares its
// spans (owns), since a value another group owns there must stay, unless
// the key alone names its owner and the op puts a value, which is then
// judged instead (the same owner as any value the key holds).
func (m *StateMachine) reads(op Op) bool {
	switch op.Kind {
	case OpExpect, OpExpectHash, OpAdd:
		return true
	case OpPut:
		return m.owns != nil && (m.ownsByKey == nil || !m.ownsByKey(op.Key))
	}
	return m.owns != nil
}

func (o *overlay) reset() {
	o.used = max(o.used, len(o.keys))
	o.keys, o.writes, o.index = o.keys[:0], o.writes[:0], nil
}

// release lets go of the keys and values the overlay held since the last
// release.
func (o *overlay) release() {
	n := max(o.used, len(o.keys))
	clear(o.keys[:n])
	clear(o.writes[:n])
	o.used = 0
}

// at is the place of key in the overlay, added if new.
func (o *overlay) at(key []byte) int {
	if o.index != nil {
		if i, ok := o.index[string(key)]; ok {
			return i
		}
	} else {
		for i, k := range o.keys {
			if bytes.Equal(k, key) {
				return i
			}
		}
	}
	o.keys = append(o.keys, key)
	o.writes = append(o.writes, write{})
	i := len(o.keys) - 1
	switch {
	case o.index != nil:
		o.index[string(key)] = i
	case len(o.keys) > overlaySmall:
		o.index = make(map[string]int, 2*len(o.keys))
		for j, k := range o.keys {
			o.index[string(k)] = j
		}
	}
	return i
}

func rejectResult(reason string) sm.Result {
	return sm.Result{Value: ResultRejected, Data: []byte(reason)}
}

type seenValue struct {
	v     []byte
	found bool
}

// txnValue is key's value as txn sees it (a Badger transaction reads
// from one snapshot plus its own writes, so a value seen once stands
// until the transaction writes the key).
func (m *StateMachine) txnValue(txn *badger.Txn, key []byte) ([]byte, bool, error) {
	if s, ok := m.seen[string(key)]; ok {
		return s.v, s.found, nil
	}
	m.badgerReads++
	v, found, err := getValue(txn, key)
	if err == nil {
		m.seen[string(key)] = seenValue{v, found}
	}
	return v, found, err
}

// getValue is a copy of the value at key; found is false when there is
// none.
func getValue(txn *badger.Txn, key []byte) (v []byte, found bool, err error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err = item.ValueCopy(nil)
	if v == nil {
		v = []byte{}
	}
	return v, err == nil, err
}

// Sync makes every applied entry durable.
func (m *StateMachine) Sync() error {
	if m.sync != nil {
		return m.sync()
	}
	return m.db.Sync()
}

// Close marks the replica closed; Lookups after it fail with ErrClosed.
// The Badger database is the node's and stays open.
func (m *StateMachine) Close() error {
	m.closed.Store(true)
	return nil
}

// Queries Lookup answers.
type (
	// GetQuery reads one key; the answer is a GetResult.
	GetQuery struct{ Key []byte }
	// ScanQuery reads at most Limit (> 0) pairs of [Start, End) within
	// the group's spans, in key order (Reverse: from End down, End nil
	// meaning no bound); the answer is a ScanResult.
	ScanQuery struct {
		Start, End []byte
		Limit      int
		Reverse    bool
	}
	// AppliedQuery asks for the applied index (a uint64).
	AppliedQuery struct{}
)

// GetResult answers a GetQuery.
type GetResult struct {
	Value []byte
	Found bool
}

// KV is one pair of a ScanResult.
type KV struct{ Key, Value []byte }

// ScanResult answers a ScanQuery; More says the limit cut it short.
type ScanResult struct {
	Pairs []KV
	More  bool
}

// Lookup serves reads from the replica's committed state.
func (m *StateMachine) Lookup(q interface{}) (interface{}, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	switch q := q.(type) {
	case GetQuery:
		if !inSpans(m.spans, q.Key) {
			return nil, fmt.Errorf("key %q is outside group %d's spans", q.Key, m.shardID)
		}
		var r GetResult
		err := m.db.View(func(txn *badger.Txn) error {
			v, found, err := getValue(txn, q.Key)
			if found && m.owns != nil && !m.owns(q.Key, v) {
				v, found = nil, false
			}
			r = GetResult{Value: v, Found: found}
			return err
		})
		return r, err
	case ScanQuery:
		if q.Limit <= 0 {
			return nil, fmt.Errorf("scan limit %d: must be positive", q.Limit)
		}
		var r ScanResult
		visit := func(k, v []byte) bool {
			if len(r.Pairs) == q.Limit {
				r.More = true
				return false
			}
			r.Pairs = append(r.Pairs, KV{Key: k, Value: v})
			return true
		}
		err := m.db.View(func(txn *badger.Txn) error {
			if q.Reverse {
				return m.scanReverse(txn, q.Start, q.End, visit)
			}
			return m.scan(txn, q.Start, q.End, visit)
		})
		return r, err
	case AppliedQuery:
		return m.applied.Load(), nil
	default:
		return nil, fmt.Errorf("unknown query %T", q)
	}
}

// scan visits the group's keys in [start, end) (nil end: no bound) in key
// order, copies handed to fn, until fn returns false.
func (m *StateMachine) scan(txn *badger.Txn, start, end []byte, fn func(k, v []byte) bool) error {
	return m.scanOwned(txn, m.owns, start, end, false, fn)
}

// scanReverse is scan from the end of [start, end) down to its start.
func (m *StateMachine) scanReverse(txn *badger.Txn, start, end []byte, fn func(k, v []byte) bool) error {
	return m.scanOwned(txn, m.owns, start, end, true, fn)
}

// scanOwned is scan (or scanReverse) judging ownership with owns (nil:
// every key).
func (m *StateMachine) scanOwned(txn *badger.Txn, owns func(k, v []byte) bool, start, end []byte, reverse bool, fn func(k, v []byte) bool) error {
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Reverse: reverse})
	defer it.Close()
	for i := range m.spans {
		s := m.spans[i]
		if reverse {
			s = m.spans[len(m.spans)-1-i]
		}
		lo, hi := s.Start, s.End
		if bytes.Compare(start, lo) > 0 {
			lo = start
		}
		if end != nil && bytes.Compare(end, hi) < 0 {
			hi = end
		}
		if bytes.Compare(lo, hi) >= 0 {
			if !reverse && end != nil && bytes.Compare(end, s.Start) <= 0 || reverse && bytes.Compare(start, s.End) >= 0 {
				return nil // every span left is beyond the bound
			}
			continue
		}
		from := lo
		if reverse {
			from = hi // Seek lands at or before hi: hi itself is skipped below
		}
		for it.Seek(from); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			if !reverse && bytes.Compare(k, hi) >= 0 || reverse && bytes.Compare(k, lo) < 0 {
				break
			}
			if reverse && bytes.Compare(k, hi) >= 0 {
				continue
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if owns != nil && !owns(k, v) {
				continue
			}
			if !fn(item.KeyCopy(nil), v) {
				return nil
			}
		}
	}
	return nil
}
