package badgerkv

import "testing"

// TestSizeBadger: Badger's sizes follow the memory limit and the disk, and
// the reserve stays a small share of the disk.
func TestSizeBadger(t *testing.T) {
	for _, c := range []struct {
		mem, fs      int64
		memTable     int64
		reserveShare float64 // reserve+deleteReserve over fs at most
	}{
		{1 << 30, 64 << 20, 1 << 20, 0.5},
		{1 << 30, 1 << 30, 4 << 20, 0.125},
		{1 << 30, 10 << 30, 40 << 20, 0.075},
		{1 << 30, 100 << 30, 64 << 20, 0.02},
		{256 << 20, 100 << 30, 16 << 20, 0.01},
		{8 << 30, 1 << 40, 64 << 20, 0.01},
	} {
		z := sizeFor(c.mem, c.fs)
		if z.MemTable != c.memTable {
			t.Errorf("mem %d MiB, disk %d MiB: memtable %d, want %d", c.mem>>20, c.fs>>20, z.MemTable, c.memTable)
		}
		if share := float64(z.Reserve+z.DeleteReserve) / float64(c.fs); share > c.reserveShare {
			t.Errorf("mem %d MiB, disk %d MiB: reserve %d MiB is %.1f %% of the disk, want at most %.0f %%", c.mem>>20, c.fs>>20, (z.Reserve+z.DeleteReserve)>>20, share*100, c.reserveShare*100)
		}
		if z.VlogFile < maxDocumentValue {
			t.Errorf("value-log file %d cannot hold a 16 MiB document", z.VlogFile)
		}
		// Badger's own check: a value under the threshold fits a batch.
		if z.valueThreshold > z.MemTable*15/100 {
			t.Errorf("value threshold %d over 15 %% of memtable %d", z.valueThreshold, z.MemTable)
		}
		if mem := int64(z.numMemtables)*z.MemTable + z.indexCache; mem > c.mem/2 {
			t.Errorf("mem %d MiB: memtables and index cache take %d MiB", c.mem>>20, mem>>20)
		}
	}
}
