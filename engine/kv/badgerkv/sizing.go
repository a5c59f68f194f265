package badgerkv

import (
	"github.com/dgraph-io/badger/v4"
)

// DefaultMemoryLimit is the memory limit Open sizes Badger for when
// Options.MemoryLimit is 0.
const DefaultMemoryLimit = 1 << 30

// Sizes are the sizes Parsec gives Badger, chosen from the memory
// limit (memtables and caches are a share of it) and from the size of the
// data directory's filesystem (files small enough that the free space
// kept for Badger's own writes, the reserve, is a small part of the disk).
//
// Badger writes without being asked: the write-ahead log of the current
// memtable grows into a sparse memory-mapped file, flushes write a table
// per memtable, compactions write new tables before they delete the old.
// All of these write through memory maps, where a full disk is not an
// error but SIGBUS, which kills the process. So the reserve must hold all
// of them at once, and writes that would eat into it are refused
// (engine/store's disk guard).
type Sizes struct {
	MemTable       int64 // bytes per memtable, and per level-0 table
	numMemtables   int   // memtables in memory at once, the current one included
	baseTable      int64 // bytes per table at the base level
	baseLevel      int64 // bytes of the base level
	l0, l0Stall    int   // level-0 tables that start a compaction, that stop flushes
	valueThreshold int64 // values at least this big go to the value log
	VlogFile       int64 // bytes per value-log file
	indexCache     int64 // bytes of table indexes and Bloom filters kept in memory
	compactors     int   // compactions that run at once

	// Reserve is the free space Badger's own writes need: the current
	// write-ahead log filling up, a flush, the largest compaction, and a
	// little for the manifest and the value log's headers.
	Reserve int64
	// DeleteReserve is kept on top of the reserve for deletes and drops,
	// which write tombstones: writes that add data are refused while
	// less than reserve+delete reserve is free, deletes only below
	// the reserve.
	DeleteReserve int64
}

const (
	mib = 1 << 20
	// maxDocumentValue is the largest value a document needs: BSON's
	// 16 MiB and a margin for the value log's entry header and key.
	maxDocumentValue = 16*mib + 64<<10
)

// sizeFor chooses Badger's sizes for a memory limit and a filesystem
// of fsSize bytes (0 when unknown).
func sizeFor(memLimit, fsSize int64) Sizes {
	if memLimit <= 0 {
		memLimit = DefaultMemoryLimit
	}
	if fsSize <= 0 {
		fsSize = 1 << 40
	}
	var z Sizes
	// Three memtables take 3/16 of the limit; a memtable is also at most
	// 1/256 of the filesystem, since the reserve is a multiple of it.
	z.MemTable = clamp(min(memLimit/16, fsSize/256), 1*mib, 64*mib) &^ (mib - 1)
	z.numMemtables = 3
	// Level 0 may stall flushes at l0Stall tables of MemTable bytes
	// (Badger's default is 15); on a small disk fewer, so that compacting
	// them into the base level fits a reserve of a few percent of it.
	z.l0Stall = int(clamp(fsSize/(64*z.MemTable), 4, 10))
	z.l0 = max(2, z.l0Stall/2)
	// The base level holds about what level 0 holds when it is compacted
	// into it. Badger's 10 MiB (against five 64 MiB tables of level 0)
	// made every level-0 compaction merge into a level a thirtieth its
	// size, which then overflowed into the next ones at once: copying a
	// million documents in scattered key order (a resharding) wrote 4.4
	// KB per 380-byte document and ran at 31,000-34,500 documents a
	// second; with the base level at level 0's size and 8 MiB tables,
	// 1.5 KB and 64,000-68,800 (BenchmarkReshardCopy, PARSEC_BENCH_DOCS=
	// 1000000). On a small disk the base level stays within 1/512 of it
	// (the reserve holds it twice), and never below Badger's size.
	z.baseTable = min(8*mib, max(z.MemTable/8, min(2*mib, z.MemTable/2)))
	z.baseLevel = max(min(int64(z.l0)*z.MemTable, fsSize/512), min(10*mib, 4*z.MemTable))
	// Badger takes a transaction of up to 15 % of a memtable, and a value
	// below the threshold must fit one.
	z.valueThreshold = min(1*mib, z.MemTable/8)
	z.VlogFile = clamp(fsSize/8, 2*maxDocumentValue, 1<<30-1)
	z.indexCache = memLimit / 8

	// The largest compaction below level 0 merges one table of a level
	// with the tables of the next level under its key range, about
	// LevelSizeMultiplier (10) of them of the same share of the data;
	// tables grow 2x per level below the base, and the deepest level
	// that is compacted into another holds a tenth of the data at most.
	levels, upper := 0, z.baseLevel
	for upper*10 < fsSize && levels < 5 {
		upper *= 10
		levels++
	}
	upperTable := z.baseTable << max(0, levels-1)
	deep := 11 * upperTable
	// Level 0 into the base level: every level-0 table (with those the
	// memtables in memory become) and the base level, which may have
	// overshot its target once.
	top := int64(z.l0Stall+z.numMemtables)*z.MemTable + 2*z.baseLevel
	// Badger runs two compactors (it refuses one), which may both be
	// writing. The write-ahead log may still grow by a memtable, and a
	// flush writes a table before it removes its log.
	z.compactors = 2
	z.Reserve = 2*z.MemTable + top + deep + 2*mib
	// The delete reserve is what a full disk keeps for deletes: a few
	// memtables of tombstones, and what a restart after a crash writes
	// before it frees anything (the memtables replayed from their logs
	// are flushed to tables while the logs are still on disk). With only
	// the first part, a 64 MB disk refused a delete after a kill -9 and
	// restart: the restart took 2.6 MiB of the 2.9 left above the reserve.
	z.DeleteReserve = max(4*mib, 2*z.MemTable) + int64(z.numMemtables)*z.MemTable
	return z
}

// apply sets the sizes on Badger's options.
func (z Sizes) apply(o badger.Options) badger.Options {
	return o.WithMemTableSize(z.MemTable).
		WithNumMemtables(z.numMemtables).
		WithBaseTableSize(z.baseTable).
		WithBaseLevelSize(z.baseLevel).
		WithNumLevelZeroTables(z.l0).
		WithNumLevelZeroTablesStall(z.l0Stall).
		WithValueThreshold(z.valueThreshold).
		WithValueLogFileSize(z.VlogFile).
		WithIndexCacheSize(z.indexCache).
		WithNumCompactors(z.compactors)
}

func clamp(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }
