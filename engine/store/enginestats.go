package store

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// EngineStats describe Badger under the store: its LSM tree (bytes and
// tables per level), its value log, and the tables it wrote since the
// store opened, by memtable flushes (new level-0 tables) and by
// compactions (new tables on deeper levels).
type EngineStats struct {
	LSMBytes  int64
	VlogBytes int64 // on disk (the files are sparse until written)
	Levels    []LevelStats
	// Flushes and CompactionTables count the tables seen appear since
	// Open: a flush's table compacted away before the next look counts
	// as a compaction's (Badger itself counts neither).
	Flushes          int64
	CompactionTables int64
}

// LevelStats is one level of the LSM tree.
type LevelStats struct {
	Level  int
	Tables int
	Bytes  int64
}

// tableWatch remembers the tables of the last look, to count new ones.
type tableWatch struct {
	mu                  sync.Mutex
	seen                map[uint64]bool
	primed              bool
	flushes, compaction int64
}

// EngineStats reads Badger's levels and value-log files: a listing of
// in-memory tables and of the data directory, no I/O on data.
func (s *Store) EngineStats() EngineStats {
	var st EngineStats
	if s.closed.Load() || s.local == nil {
		return st
	}
	for _, l := range s.local.Levels() {
		st.Levels = append(st.Levels, LevelStats{Level: l.Level, Tables: l.Tables, Bytes: l.Bytes})
		st.LSMBytes += l.Bytes
	}
	tables := s.local.Tables()
	w := &s.tables
	w.mu.Lock()
	now := make(map[uint64]bool, len(tables))
	for _, t := range tables {
		now[t.ID] = true
		if w.primed && !w.seen[t.ID] {
			if t.Level == 0 {
				w.flushes++
			} else {
				w.compaction++
			}
		}
	}
	w.seen, w.primed = now, true
	st.Flushes, st.CompactionTables = w.flushes, w.compaction
	w.mu.Unlock()
	if !s.inMem && s.dir != "" {
		if entries, err := os.ReadDir(s.dir); err == nil {
			for _, e := range entries {
				if !strings.HasSuffix(e.Name(), ".vlog") {
					continue
				}
				if fi, err := os.Stat(filepath.Join(s.dir, e.Name())); err == nil {
					st.VlogBytes += allocated(fi)
				}
			}
		}
	}
	return st
}
