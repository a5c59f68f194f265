package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestTrackerMissesNoCommit: a commit that lands after a size tracker's
// exact read but before the tracker holds the sums still counts, so the
// partition it grows is split once it passes the limit. The commit is
// forced into that window by running it from the sizesRead hook, both
// for the splitter's read and for the seed of a collection's first
// write since Open.
func TestTrackerMissesNoCommit(t *testing.T) {
	const limit = 64 << 10
	for _, tc := range []struct {
		name string
		// trigger makes the store read exact sizes for a tracker and
		// returns how many documents it deleted.
		trigger func(t *testing.T, s *Store, c *Collection) int64
		// inWindow is the collection size the commit in the window
		// reaches, after is the size the writes after it reach.
		inWindow, after int64
	}{
		{"split check", requestCheck, limit * 85 / 100, limit * 110 / 100},
		{"seed", seedByDelete, limit * 85 / 100, limit * 110 / 100},
		// The commit in the window passes the limit itself: it finds the
		// tracker without the sums, so the check must come from the sums.
		{"split check, window passes the limit", requestCheck, limit * 120 / 100, 0},
		{"seed, window passes the limit", seedByDelete, limit * 120 / 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openMem(t)
			s.SetLimits(Limits{PartitionBytes: limit})
			c := mustShard(t, s, "db", "c", 1)
			var next int32
			// fill inserts batches of 10 documents over 300 shard keys
			// until the collection holds at least target bytes (one batch
			// when target is 0).
			fill := func(target int64) error {
				for {
					err := s.Update(func(tx *Txn) error {
						for range 10 {
							doc := skDoc(next, fmt.Sprintf("key-%d", next%300), 100)
							next++
							if err := tx.Insert(c, skKey(t, c, doc), doc); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						return err
					}
					counts, err := s.Counts(c)
					if err != nil {
						return err
					}
					if counts.Size() >= target {
						return nil
					}
				}
			}
			mustFill := func(target int64) {
				t.Helper()
				if err := fill(target); err != nil {
					t.Fatal(err)
				}
			}
			settle := func() {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if err := s.SettleSplits(ctx); err != nil {
					t.Fatal(err)
				}
			}

			mustFill(limit * 60 / 100)
			settle()
			if n := current(s, c).Map().Len(); n != 1 {
				t.Fatalf("%d partitions below the limit, want 1", n)
			}
			var ran, failed atomic.Bool
			s.sizesRead = func() {
				if ran.Swap(true) {
					return
				}
				if err := fill(tc.inWindow); err != nil { // may run on the splitter's goroutine
					t.Error(err)
					failed.Store(true)
				}
			}
			deleted := tc.trigger(t, s, c)
			settle()
			if !ran.Load() || failed.Load() {
				t.Fatalf("no commit ran between the exact read and the tracker (ran %v, failed %v)", ran.Load(), failed.Load())
			}
			if tc.after > 0 {
				mustFill(tc.after)
				settle()
			}

			c = current(s, c)
			stats := checkPartitions(t, s, c, int64(next)-deleted)
			if len(stats) < 2 {
				t.Errorf("%d partition(s) holding more than the limit", len(stats))
			}
			for _, ps := range stats {
				if ps.Counts.Size() > limit && ps.LogicalPartitions > 1 {
					t.Errorf("partition %d holds %d bytes in %d logical partitions: not split", ps.Partition.ID, ps.Counts.Size(), ps.LogicalPartitions)
				}
			}
		})
	}
}

// requestCheck queues a split check of c, which reads exact sizes.
func requestCheck(t *testing.T, s *Store, c *Collection) int64 {
	s.requestSplit(c.ID)
	return 0
}

// seedByDelete forgets c's tracker, as Open does, and deletes _id 0: the
// delete seeds a new tracker from exact sizes and, shrinking its
// partition, requests no split check itself.
func seedByDelete(t *testing.T, s *Store, c *Collection) int64 {
	s.dropTracker(c.ID)
	doc := skDoc(0, "key-0", 100)
	err := s.Update(func(tx *Txn) error { return tx.Delete(c, skKey(t, c, doc), len(doc)) })
	if err != nil {
		t.Fatal(err)
	}
	return 1
}

// settleAndCheckSplits waits for split checks and asserts that no
// partition of c holding more than one logical partition is over limit.
func settleAndCheckSplits(t *testing.T, s *Store, c *Collection, docs int64, limit int64) []PartitionStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.SettleSplits(ctx); err != nil {
		t.Fatal(err)
	}
	c = current(s, c)
	stats := checkPartitions(t, s, c, docs)
	for _, ps := range stats {
		if ps.Counts.Size() > limit && ps.LogicalPartitions > 1 {
			t.Errorf("partition %d holds %d bytes in %d logical partitions: not split", ps.Partition.ID, ps.Counts.Size(), ps.LogicalPartitions)
		}
	}
	return stats
}

// TestSplitCheckBeyondMaxSplits: one commit that needs more splits than
// one check makes (maxSplitsPerCheck) is split to the end.
func TestSplitCheckBeyondMaxSplits(t *testing.T) {
	const limit = 1 << 10
	s := openMem(t)
	s.SetLimits(Limits{PartitionBytes: limit})
	c := mustShard(t, s, "db", "c", 1)
	const n = 800
	err := s.Update(func(tx *Txn) error {
		for i := range int32(n) {
			doc := skDoc(i, fmt.Sprintf("key-%d", i), 100)
			if err := tx.Insert(c, skKey(t, c, doc), doc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stats := settleAndCheckSplits(t, s, c, n, limit)
	if len(stats) <= maxSplitsPerCheck+1 {
		t.Fatalf("%d partitions: the data needs more than one check's %d splits", len(stats), maxSplitsPerCheck)
	}
}

// TestUnsplittableGetsSecondLogicalPartition: a partition over the limit
// with its data in one logical partition waits to grow by an eighth of
// the limit before it is checked again, but a write of a second logical
// partition into it makes it splittable, and it splits.
func TestUnsplittableGetsSecondLogicalPartition(t *testing.T) {
	const limit = 16 << 10
	s := openMem(t)
	s.SetLimits(Limits{PartitionBytes: limit})
	c := mustShard(t, s, "db", "c", 1)
	var n int32
	put := func(region string) {
		t.Helper()
		doc := skDoc(n, region, 100)
		n++
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, skKey(t, c, doc), doc) }); err != nil {
			t.Fatal(err)
		}
	}
	// Settled after each write, the check that finds it unsplittable
	// reads what the writes left: it is checked again an eighth of the
	// limit later, far more than one more document.
	for !backedOff(s, c, limit) {
		if n > 1000 {
			t.Fatal("no split check found the partition unsplittable")
		}
		put("only")
		settleAndCheckSplits(t, s, c, int64(n), limit)
	}
	if stats := settleAndCheckSplits(t, s, c, int64(n), limit); len(stats) != 1 || stats[0].Counts.Size() <= limit {
		t.Fatalf("want one partition over the limit: %+v", stats)
	}
	put("other")
	stats := settleAndCheckSplits(t, s, c, int64(n), limit)
	if len(stats) != 2 {
		t.Errorf("%d partitions, want 2: the second logical partition makes it splittable", len(stats))
	}
}

// backedOff says whether c's first partition waits to grow before its
// next split check.
func backedOff(s *Store, c *Collection, limit int64) bool {
	tr := s.trackerOf(c.ID)
	return tr != nil && tr.checkAt[0].Load() > limit
}
