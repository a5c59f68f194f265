package store

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// ErrDiskFull is wrapped by DiskFullError.
var ErrDiskFull = errors.New("not enough free disk space")

// DiskFullError refuses a write that would leave the data directory's
// filesystem with less free space than the store keeps in reserve.
type DiskFullError struct {
	Dir  string
	Free int64 // bytes free on the filesystem when the write was refused
	Need int64 // bytes that must be free for the write: the reserve and the write
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("the data directory %s has %d bytes free, under the %d bytes this write needs with the reserve kept for the storage engine", e.Dir, e.Free, e.Need)
}

func (e *DiskFullError) Unwrap() error { return ErrDiskFull }

// diskGuard admits writes while the data directory's filesystem keeps
// the reserve free (see badgerkv.Sizes). Free space is read with statfs at
// most every diskLook, and bytes admitted since are subtracted from what
// it said; a write that does not fit looks again, so space freed by
// anyone is seen at once. A nil guard admits everything (in memory, or a
// filesystem statfs cannot read).
type diskGuard struct {
	dir           string
	reserve       int64
	deleteReserve int64
	statfs        func(dir string) (free, total int64, err error)
	now           func() time.Time
	// compaction, when set, is what the largest compaction may write
	// beyond the static reserve, read at every look (largestLevel).
	compaction func() int64

	mu       sync.Mutex
	free     int64     // at the last look
	extra    int64     // compaction's answer at the last look
	admitted int64     // bytes admitted since
	at       time.Time // of the last look
	full     bool      // the last write that added data was refused
}

const (
	// diskLook is how long one statfs answer is trusted.
	diskLook = 100 * time.Millisecond
	// entryOverhead is what Badger writes per key beside key and value:
	// its entry header, version and checksum, and a share of the table's
	// index.
	entryOverhead = 48
)

// admit reserves n bytes for a write; grows says it adds data (inserts,
// updates, index builds), which must leave reserve+deleteReserve free,
// where deletes, drops and catalog changes need only the reserve.
func (g *diskGuard) admit(n int64, grows bool) error {
	if g == nil {
		return nil
	}
	need := g.reserve + n
	if grows {
		need += g.deleteReserve
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if now.Sub(g.at) >= diskLook || g.free-g.admitted < need+g.extra {
		g.look(now)
	}
	need += g.extra
	if g.free-g.admitted < need {
		if grows {
			g.full = true
		}
		return &DiskFullError{Dir: g.dir, Free: g.free - g.admitted, Need: need}
	}
	if grows {
		g.full = false
	}
	g.admitted += n
	return nil
}

// look reads the free space again; an error leaves the last answer.
func (g *diskGuard) look(now time.Time) {
	free, _, err := g.statfs(g.dir)
	if err != nil {
		return
	}
	g.free, g.admitted, g.at = free, 0, now
	if g.compaction != nil {
		g.extra = g.compaction()
	}
}

// spare reports whether n bytes more than the reserves are free, for
// optional work that writes (value-log garbage collection).
func (g *diskGuard) spare(n int64) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.look(g.now())
	return g.free-g.admitted >= g.reserve+g.extra+g.deleteReserve+n
}

// DiskStatus is what the store knows of its filesystem's free space.
type DiskStatus struct {
	Watched       bool  // false in memory or where free space cannot be read
	Free, Total   int64 // bytes, at the last look
	Reserve       int64 // kept free for the storage engine's own writes
	DeleteReserve int64 // kept free on top of Reserve for deletes and drops
	Full          bool  // the last write that added data was refused
}

// DiskStatus reports free space and the reserves; it looks again.
func (s *Store) DiskStatus() DiskStatus {
	g := s.disk
	if g == nil {
		return DiskStatus{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.look(g.now())
	_, total, _ := g.statfs(g.dir)
	return DiskStatus{Watched: true, Free: g.free, Total: total, Reserve: g.reserve + g.extra, DeleteReserve: g.deleteReserve, Full: g.full}
}

// largestLevel is the size of the store's largest level of tables below
// level 0. Badger may rewrite a whole level in one compaction: on a 64 MB
// filesystem holding 36 MB of documents, 28 MB of new tables were seen
// written before the old ones were removed. Keeping that much free is
// what makes a full disk safe, at the cost of about half the disk.
func (s *Store) largestLevel() int64 {
	var largest int64
	for _, l := range s.local.Levels() {
		if l.Level > 0 {
			largest = max(largest, l.Bytes)
		}
	}
	return largest
}

// isNoSpace reports whether err is the filesystem's "no space left".
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
