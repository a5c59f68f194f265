// Package badgerkv is kv over one Badger database in this process: the
// key-value store of a single Parsec node. It also sizes Badger for the
// node's memory and disk (sizing.go) and reports what an operator watches
// (levels, tables, value log).
//
// Contract: badgerkv imports kv and Badger and nothing else of Parsec; it
// is the only package of the engine that names Badger (layout_test.go).
package badgerkv

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/parsecdb/parsec/engine/kv"
)

// MaxKeyBytes is the longest key Badger stores (its txn.go: keys' lengths
// must fit a uint16 with room for a timestamp).
const MaxKeyBytes = 65000

// ErrLocked: another process holds the data directory.
var ErrLocked = errors.New("data directory in use by another process")

// Options open a DB.
type Options struct {
	Dir      string
	InMemory bool
	Logger   *slog.Logger
	// MemoryLimit sizes memtables and caches (0: DefaultMemoryLimit);
	// FilesystemBytes is the size of Dir's filesystem (0: unknown).
	MemoryLimit, FilesystemBytes int64
}

// DB is an open Badger database.
type DB struct {
	db       *badger.DB
	dir      string // "" in memory
	sizes    Sizes
	maxValue int64
}

var _ kv.DB = (*DB)(nil)

// Open opens (creating if needed) the database at opts.Dir.
func Open(opts Options) (*DB, error) {
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
	var sizes Sizes
	if opts.InMemory {
		bo = bo.WithInMemory(true).WithDir("").WithValueDir("").WithMemTableSize(32 << 20)
	} else {
		sizes = sizeFor(opts.MemoryLimit, opts.FilesystemBytes)
		bo = sizes.apply(bo)
	}
	db, err := badger.Open(bo)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("%w (%v)", ErrLocked, err)
		}
		return nil, fmt.Errorf("open badger at %s: %w", opts.Dir, err)
	}
	maxValue := bo.ValueLogFileSize
	if bo.InMemory {
		// In memory values stay in the LSM tree: at most the threshold.
		maxValue = bo.ValueThreshold
	}
	dir := opts.Dir
	if opts.InMemory {
		dir = ""
	}
	return &DB{db: db, dir: dir, sizes: sizes, maxValue: maxValue}, nil
}

// Badger is the database itself, for the replicated partitions' state
// machines (cluster), which apply raw batches to it.
func (d *DB) Badger() *badger.DB { return d.db }

// Sizes are the sizes Open chose (zero in memory).
func (d *DB) Sizes() Sizes { return d.sizes }

// MaxValue is the largest value the database takes: one value-log file,
// or in memory the value threshold.
func (d *DB) MaxValue() int64 { return d.maxValue }

func (d *DB) NewTransaction(update bool) kv.Txn { return txn{d.db.NewTransaction(update)} }

func (d *DB) View(fn func(kv.Txn) error) error {
	t := d.db.NewTransaction(false)
	defer t.Discard()
	return fn(txn{t})
}

func (d *DB) NewWriteBatch() kv.WriteBatch { return batch{d.db.NewWriteBatch()} }

// Sync makes every write committed so far durable (writeBack first).
func (d *DB) Sync() error {
	d.writeBack()
	return mapErr(d.db.Sync())
}

func (d *DB) Size() (tables, valueLog int64) { return d.db.Size() }

func (d *DB) Close() error { return mapErr(d.db.Close()) }

// CollectGarbage rewrites value-log files whose share of dead values is
// at least ratio, until none is left (Badger's value-log GC).
func (d *DB) CollectGarbage(ratio float64) {
	for d.db.RunValueLogGC(ratio) == nil {
	}
}

// Level is one level of the LSM tree.
type Level struct {
	Level, Tables int
	Bytes         int64
}

// Levels lists the LSM tree's levels (in-memory metadata, no I/O).
func (d *DB) Levels() []Level {
	var ls []Level
	for _, l := range d.db.Levels() {
		ls = append(ls, Level{Level: l.Level, Tables: l.NumTables, Bytes: l.Size})
	}
	return ls
}

// Table is one table of the LSM tree.
type Table struct {
	ID    uint64
	Level int
}

// Tables lists the LSM tree's tables.
func (d *DB) Tables() []Table {
	ts := d.db.Tables()
	out := make([]Table, len(ts))
	for i, t := range ts {
		out[i] = Table{ID: t.ID, Level: t.Level}
	}
	return out
}

// mapErr turns Badger's errors into kv's, keeping the original's text
// for the ones kv has no word for.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return kv.ErrNotFound
	case errors.Is(err, badger.ErrConflict):
		return kv.ErrConflict
	case errors.Is(err, badger.ErrTxnTooBig):
		return kv.ErrTxnTooBig
	case errors.Is(err, badger.ErrDBClosed):
		return kv.ErrClosed
	}
	return err
}

// Txn is kv's view of a Badger transaction opened elsewhere: the
// replicated store (cluster) reads its replica's state through it.
func Txn(t *badger.Txn) kv.Txn { return txn{t} }

type txn struct{ t *badger.Txn }

func (t txn) Get(key []byte) (kv.Item, error) {
	item, err := t.t.Get(key)
	if err != nil {
		return nil, mapErr(err)
	}
	return item, nil
}

func (t txn) Set(key, value []byte) error { return mapErr(t.t.Set(key, value)) }
func (t txn) Delete(key []byte) error     { return mapErr(t.t.Delete(key)) }
func (t txn) Commit() error               { return mapErr(t.t.Commit()) }
func (t txn) Discard()                    { t.t.Discard() }

// ReadVersion is the transaction's read timestamp (kv.ReadVersioner);
// the items it reads are *badger.Item, whose Version is the commit
// timestamp that wrote them (kv.VersionedItem).
func (t txn) ReadVersion() uint64 { return t.t.ReadTs() }

func (t txn) NewIterator(o kv.IterOptions) kv.Iterator {
	if !o.Reverse || len(o.Prefix) == 0 {
		return iter{t.t.NewIterator(badger.IteratorOptions{Prefix: o.Prefix, PrefetchValues: o.Prefetch})}
	}
	// Badger's reverse Rewind starts at the end of the whole key space,
	// past the prefix: this iterator keeps the prefix itself and starts
	// at the prefix's last key.
	return &reverseIter{it: t.t.NewIterator(badger.IteratorOptions{Reverse: true, PrefetchValues: o.Prefetch}), prefix: o.Prefix, end: successor(o.Prefix)}
}

type iter struct{ *badger.Iterator }

func (i iter) Item() kv.Item { return i.Iterator.Item() }

// reverseIter walks the keys under prefix from the last one down.
type reverseIter struct {
	it     *badger.Iterator
	prefix []byte
	end    []byte // the first key after every key under prefix (nil: none)
}

func (r *reverseIter) Rewind() { r.Seek(r.end) }

func (r *reverseIter) Seek(key []byte) {
	if r.end == nil {
		if key == nil {
			r.it.Rewind()
			return
		}
	} else if key == nil || bytes.Compare(key, r.end) >= 0 {
		key = r.end
	}
	r.it.Seek(key)
	// Seek stands at the last key at or before key: only end itself can
	// be there and outside the prefix.
	if r.end != nil && r.it.Valid() && bytes.Equal(r.it.Item().Key(), r.end) {
		r.it.Next()
	}
}

func (r *reverseIter) Valid() bool {
	return r.it.Valid() && bytes.HasPrefix(r.it.Item().Key(), r.prefix)
}

func (r *reverseIter) Next()         { r.it.Next() }
func (r *reverseIter) Item() kv.Item { return r.it.Item() }
func (r *reverseIter) Close()        { r.it.Close() }

// successor is the first key after every key that starts with prefix,
// or nil when there is none (prefix is all 0xff).
func successor(prefix []byte) []byte {
	s := bytes.Clone(prefix)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != 0xff {
			s[i]++
			return s[:i+1]
		}
	}
	return nil
}

type batch struct{ b *badger.WriteBatch }

func (b batch) Set(key, value []byte) error { return mapErr(b.b.Set(key, value)) }
func (b batch) Delete(key []byte) error     { return mapErr(b.b.Delete(key)) }
func (b batch) Flush() error                { return mapErr(b.b.Flush()) }
func (b batch) Cancel()                     { b.b.Cancel() }

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
