package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/kv/badgerkv"
)

// Options configure Open.
type Options struct {
	Dir      string // data directory; ignored when InMemory
	InMemory bool
	Logger   *slog.Logger
	// SyncInterval is how often written data is fsynced in the background;
	// 0 means 100ms, negative disables the loop.
	SyncInterval time.Duration
	// MemoryLimit sizes Badger's memtables and index cache (sizing.go);
	// 0 means DefaultMemoryLimit.
	MemoryLimit int64
	// KV, when set, is the key-value store to keep everything in instead
	// of a Badger database of the store's own (Dir, InMemory and
	// MemoryLimit are then unused): a replicated group's (cluster). Its
	// owner sizes, guards and closes what is under it; Close closes KV.
	KV kv.DB
	// OnePartitionTransactions keeps each multi-statement transaction's
	// writes in one physical partition (PartitionScopeError): a cluster's
	// rule, where each physical partition commits through its own group.
	OnePartitionTransactions bool
	// ReadOnly opens the store to read what another process writes
	// (a cluster standby's replica): nothing is written, no background
	// work runs, and Refresh reloads the catalog when it changed.
	ReadOnly bool
}

// Store is one node's Badger database with Parsec's catalog on top.
type Store struct {
	locks writeLocks // document keys written by open transactions (transaction.go)
	// copySnaps are the versions reshardings' copies read at
	// (copysnapshot.go).
	copySnaps copySnapshots
	// onePartition keeps transactions' writes in one physical partition
	// (Options.OnePartitionTransactions).
	onePartition bool
	// grouped is the kv, when it commits each transaction in one of
	// several groups (Txn.Plan).
	grouped  kv.Grouped
	readOnly bool // Options.ReadOnly
	// db is the node's key-value store; local is the same store when it
	// is Badger in this process (for what only that reports: levels,
	// tables, value-log garbage collection).
	db     kv.DB
	local  *badgerkv.DB
	logger *slog.Logger
	dir    string
	inMem  bool
	// maxValue is the largest value Badger takes (sizes.go).
	maxValue int64
	// sizes are Badger's file and memory sizes (sizing.go); disk refuses
	// writes that would eat into the free space they need (diskspace.go).
	sizes badgerkv.Sizes
	disk  *diskGuard

	boot     uint64        // this open's boot number, part of every delta key
	deltaSeq atomic.Uint64 // per-boot delta sequence
	dirty    atomic.Bool   // written since the last background sync

	syncMu      sync.Mutex
	syncCond    *sync.Cond
	syncStarted uint64
	syncDone    uint64
	syncRunning bool
	syncErr     error

	catMu   sync.RWMutex
	dbs     map[string]*Database
	colls   map[string]*Collection // by namespace "db.coll"
	lastCID uint32
	matcher Matcher  // compiles partial filter expressions (SetMatcher)
	fences  sync.Map // collection id -> *sync.RWMutex (fence.go)
	pending sync.Map // collection id -> struct{}: created by an open transaction (pending.go)
	orphans []uint32 // pending keys found by loadCatalog (pending.go)

	views map[string]*ViewDefinition // by namespace "db.view", under catMu (views.go)

	foldMu  sync.Mutex
	folding map[uint32]bool
	closing bool           // set by Close under foldMu: no new background folds
	folds   sync.WaitGroup // background folds started by Counts

	closed atomic.Bool

	partitionState // limits, size trackers, splits, re-placement (partitions.go)
	changeState    // the change log's clock, horizon and retention (changes.go)

	commits commitSignals // waiters for commits to a collection (capped.go)

	stop chan struct{}
	wg   sync.WaitGroup
}

// Open opens (creating if needed) the store. A directory already held by
// another process gives ErrLocked.
func Open(opts Options) (*Store, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{logger: logger, dir: opts.Dir, inMem: opts.InMemory, folding: map[uint32]bool{}, stop: make(chan struct{}), onePartition: opts.OnePartitionTransactions, readOnly: opts.ReadOnly}
	var guard *diskGuard
	if opts.KV != nil {
		s.db, s.dir = opts.KV, "" // nothing of the store's own on disk
		s.grouped, _ = opts.KV.(kv.Grouped)
	} else {
		var total int64
		if !opts.InMemory {
			var free int64
			var err error
			if free, total, err = statfs(opts.Dir); err == nil {
				defer func() { logger.Debug("storage sizes", "free", free, "filesystem", total) }()
			}
		}
		db, err := badgerkv.Open(badgerkv.Options{Dir: opts.Dir, InMemory: opts.InMemory, Logger: logger, MemoryLimit: opts.MemoryLimit, FilesystemBytes: total})
		if err != nil {
			if errors.Is(err, badgerkv.ErrLocked) {
				return nil, fmt.Errorf("open %s: %w (%v)", opts.Dir, ErrLocked, err)
			}
			return nil, err
		}
		sizes := db.Sizes()
		if !opts.InMemory && total > 0 {
			guard = &diskGuard{dir: opts.Dir, reserve: sizes.Reserve, deleteReserve: sizes.DeleteReserve, statfs: statfs, now: time.Now}
			logger.Debug("storage reserve", "memtable", sizes.MemTable, "reserve", sizes.Reserve, "delete_reserve", sizes.DeleteReserve)
		}
		s.db, s.local, s.maxValue, s.sizes = db, db, db.MaxValue(), sizes
	}
	db := s.db
	s.syncCond = sync.NewCond(&s.syncMu)
	s.splitQueue = map[uint32]bool{}
	s.splitCond = sync.NewCond(&s.splitMu)
	s.resharded = map[string]chan struct{}{}
	if err := s.loadCatalog(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.openChangeLog(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if s.readOnly {
		s.disk = guard
		return s, nil
	}
	if err := s.withdrawOrphans(s.orphans); err != nil {
		_ = db.Close()
		return nil, err
	}
	interval := opts.SyncInterval
	if interval == 0 {
		interval = 100 * time.Millisecond
	}
	if interval > 0 && !s.inMem {
		s.wg.Add(1)
		go s.syncLoop(interval)
	}
	// Writes of the catalog's load (the boot number) are not refused: a
	// restart on a full disk must come up to serve reads.
	if guard != nil {
		guard.compaction = s.largestLevel
	}
	s.disk = guard
	s.wg.Add(3)
	go s.gcLoop()
	go s.splitLoop()
	go s.trimLoop()
	s.buildIDIndexes()
	return s, nil
}

// Close folds counters, syncs and closes Badger. Later calls to Close,
// Update, View and Counts give ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	close(s.stop)
	s.wg.Wait()
	s.dropCopySnapshots(nil, -1)
	if s.readOnly {
		return s.db.Close()
	}
	// A background fold must not outlive Badger, and while it runs, Close's
	// own fold of that collection would be skipped.
	s.foldMu.Lock()
	s.closing = true
	s.foldMu.Unlock()
	s.folds.Wait()
	s.catMu.RLock()
	ids := make([]uint32, 0, len(s.colls))
	for _, c := range s.colls {
		ids = append(ids, c.ID)
	}
	s.catMu.RUnlock()
	for _, id := range ids {
		if err := s.fold(id); err != nil {
			s.logger.Warn("folding counters on close", "collection", id, "err", err)
		}
	}
	if !s.inMem {
		_ = s.db.Sync()
	}
	return s.db.Close()
}

// Dir is the data directory ("" in memory).
func (s *Store) Dir() string { return s.dir }

// InMemory reports whether nothing is kept on disk.
func (s *Store) InMemory() bool { return s.inMem }

// Sync makes every transaction committed before the call durable on disk.
// Concurrent callers share fsyncs.
func (s *Store) Sync() error {
	if s.inMem {
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	ticket := s.syncStarted + 1 // a sync that starts after our commit
	for s.syncDone < ticket {
		if s.syncRunning {
			s.syncCond.Wait()
			continue
		}
		s.syncRunning = true
		s.syncStarted++
		gen := s.syncStarted
		s.dirty.Store(false)
		s.syncMu.Unlock()
		err := s.db.Sync()
		s.syncMu.Lock()
		s.syncRunning = false
		s.syncDone = gen
		s.syncErr = err
		s.syncCond.Broadcast()
	}
	return s.syncErr
}

// Journal makes every write committed before the call durable as the
// write concern j: true means it: Sync, or the kv.DB's Journal when it
// has one (a cluster's: on a majority of replicas).
func (s *Store) Journal() error {
	if j, ok := s.db.(kv.Journaler); ok && !s.inMem {
		return j.Journal()
	}
	return s.Sync()
}

func (s *Store) syncLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.dirty.Load() {
				if err := s.Sync(); err != nil {
					s.logger.Error("background sync", "err", err)
				}
			}
		}
	}
}

func (s *Store) gcLoop() {
	defer s.wg.Done()
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			// Garbage collection rewrites a value-log file's live values.
			if s.local != nil && !s.inMem && s.disk.spare(s.sizes.VlogFile) {
				s.local.CollectGarbage(0.5)
			}
		}
	}
}

// Size returns the bytes Badger uses on disk (LSM and value log).
func (s *Store) Size() int64 {
	lsm, vlog := s.db.Size()
	return lsm + vlog
}

// update runs fn in a read-write transaction, retrying on conflicts;
// the change events evs are logged in the same transaction (changes.go).
func (s *Store) update(fn func(txn kv.Txn) error, evs ...*ChangeEvent) error {
	for attempt := 0; ; attempt++ {
		txn := s.db.NewTransaction(true)
		err := fn(txn)
		if err == nil {
			// Catalog changes are small: they need the reserve only.
			err = s.disk.admit(1<<10, false)
		}
		var ts uint64
		if err == nil && len(evs) > 0 {
			ts = s.changes.reserve()
			err = (&Txn{s: s, t: txn}).putChanges(ts, evs)
		}
		if err == nil {
			err = txn.Commit()
		}
		if err == nil && ts != 0 {
			s.recent.add(evs)
		}
		if ts != 0 {
			s.changes.release(ts)
		}
		txn.Discard()
		if errors.Is(err, kv.ErrConflict) && attempt < 100 {
			continue
		}
		if err == nil {
			s.dirty.Store(true)
		}
		return mapKVErr(err)
	}
}

func mapKVErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kv.ErrConflict):
		// Clients see these messages: they speak of Parsec, not Badger.
		return fmt.Errorf("%w: a concurrent write changed what this one read", ErrConflict)
	case errors.Is(err, kv.ErrTxnTooBig):
		return fmt.Errorf("%w: the write is larger than one storage transaction holds", ErrTooLarge)
	case errors.Is(err, kv.ErrFenced):
		return fmt.Errorf("%w: %v", ErrClosed, err)
	case errors.Is(err, kv.ErrClosed):
		return ErrClosed
	case isNoSpace(err):
		return fmt.Errorf("%w: %v", ErrDiskFull, err)
	}
	return err
}

func u32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// DefaultMemoryLimit is the memory limit Open sizes the key-value store
// for when Options.MemoryLimit is 0.
const DefaultMemoryLimit = badgerkv.DefaultMemoryLimit
