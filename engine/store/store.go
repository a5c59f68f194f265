package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
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
}

// Store is one node's Badger database with Parsec's catalog on top.
type Store struct {
	locks  writeLocks // document keys written by open transactions (transaction.go)
	db     *badger.DB
	logger *slog.Logger
	dir    string
	inMem  bool
	// maxValue is the largest value Badger takes (sizes.go).
	maxValue int64
	// sizes are Badger's file and memory sizes (sizing.go); disk refuses
	// writes that would eat into the free space they need (diskspace.go).
	sizes badgerSizes
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
	bo := badger.DefaultOptions(opts.Dir).
		WithLogger(badgerLogger{logger}).
		WithNumCompactors(2).
		WithNumVersionsToKeep(1).
		WithMetricsEnabled(false).
		// Documents are stored as they came: no block compression, so
		// flushes and compactions spend no CPU on it and point reads go
		// straight to the memory-mapped tables without a block cache.
		WithCompression(options.None).
		WithBlockCacheSize(0)
	var sizes badgerSizes
	var guard *diskGuard
	if opts.InMemory {
		bo = bo.WithInMemory(true).WithDir("").WithValueDir("").WithMemTableSize(32 << 20)
	} else {
		free, total, err := statfs(opts.Dir)
		sizes = sizeBadger(opts.MemoryLimit, total)
		bo = sizes.apply(bo)
		if err == nil {
			guard = &diskGuard{dir: opts.Dir, reserve: sizes.reserve, deleteReserve: sizes.deleteReserve, statfs: statfs, now: time.Now}
			logger.Debug("storage sizes", "memtable", sizes.memTable, "reserve", sizes.reserve, "delete_reserve", sizes.deleteReserve, "free", free, "filesystem", total)
		}
	}
	db, err := badger.Open(bo)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("open %s: %w (%v)", opts.Dir, ErrLocked, err)
		}
		return nil, fmt.Errorf("open badger at %s: %w", opts.Dir, err)
	}
	s := &Store{db: db, logger: logger, dir: opts.Dir, inMem: opts.InMemory, maxValue: maxValueOf(bo), sizes: sizes, folding: map[uint32]bool{}, stop: make(chan struct{})}
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
	if err := s.withdrawOrphans(s.orphans); err != nil {
		_ = db.Close()
		return nil, err
	}
	interval := opts.SyncInterval
	if interval == 0 {
		interval = 100 * time.Millisecond
	}
	if interval > 0 && !opts.InMemory {
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
			if !s.inMem && s.disk.spare(s.sizes.vlogFile) {
				for s.db.RunValueLogGC(0.5) == nil {
				}
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
func (s *Store) update(fn func(txn *badger.Txn) error, evs ...*ChangeEvent) error {
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
		if ts != 0 {
			s.changes.release(ts)
		}
		txn.Discard()
		if errors.Is(err, badger.ErrConflict) && attempt < 100 {
			continue
		}
		if err == nil {
			s.dirty.Store(true)
		}
		return mapBadgerErr(err)
	}
}

func mapBadgerErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrConflict):
		// Clients see these messages: they speak of Parsec, not Badger.
		return fmt.Errorf("%w: a concurrent write changed what this one read", ErrConflict)
	case errors.Is(err, badger.ErrTxnTooBig):
		return fmt.Errorf("%w: the write is larger than one storage transaction holds", ErrTooLarge)
	case errors.Is(err, badger.ErrDBClosed):
		return ErrClosed
	case isNoSpace(err):
		return fmt.Errorf("%w: %v", ErrDiskFull, err)
	}
	return err
}

func u32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (b badgerLogger) Infof(f string, a ...any) {
	b.l.Debug(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (b badgerLogger) Debugf(f string, a ...any) {}
