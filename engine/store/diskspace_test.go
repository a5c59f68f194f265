package store

import (
	"errors"
	"testing"
	"time"
)

// TestDiskGuard: writes that add data keep reserve+deleteReserve free,
// deletes only the reserve; bytes admitted between looks count; freed
// space is seen at the next write.
func TestDiskGuard(t *testing.T) {
	capacity, written := int64(100<<20), int64(0)
	looks := 0
	now := time.Unix(0, 0)
	g := &diskGuard{dir: "/data", reserve: 20 << 20, deleteReserve: 4 << 20,
		statfs: func(string) (int64, int64, error) { looks++; return capacity - written, 1 << 30, nil },
		now:    func() time.Time { return now }}
	// Between looks, what was admitted counts as written: 76 MiB fit
	// above the 24 MiB kept for writes, then the guard looks again.
	for range 76 {
		if err := g.admit(1<<20, true); err != nil {
			t.Fatalf("admit with %d MiB free: %v", (capacity-g.admitted)>>20, err)
		}
	}
	if looks != 1 {
		t.Errorf("%d looks for 76 writes within %v", looks, diskLook)
	}
	written = 76 << 20 // the writes landed
	err := g.admit(1<<20, true)
	var full *DiskFullError
	if !errors.As(err, &full) || !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a write into the reserve: %v", err)
	}
	if full.Dir != "/data" || full.Free != 24<<20 || full.Need != 25<<20 {
		t.Errorf("refusal = %+v", full)
	}
	if !g.full {
		t.Errorf("guard does not say it is full")
	}
	// Deletes go on into the delete reserve, not into Badger's.
	for range 4 {
		if err := g.admit(1<<20, false); err != nil {
			t.Fatalf("delete with %d MiB free: %v", (capacity-written-g.admitted)>>20, err)
		}
		written += 1 << 20
	}
	if err := g.admit(1, false); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a delete into Badger's reserve: %v", err)
	}
	// Space freed by anyone is seen by the next write, without waiting
	// for diskLook.
	written -= 30 << 20
	if err := g.admit(1<<20, true); err != nil {
		t.Fatalf("after space was freed: %v", err)
	}
	if g.full {
		t.Errorf("guard still says full")
	}
	// A nil guard (in memory) admits everything.
	var none *diskGuard
	if err := none.admit(1<<40, true); err != nil || !none.spare(1<<40) {
		t.Errorf("nil guard refused: %v", err)
	}
}
