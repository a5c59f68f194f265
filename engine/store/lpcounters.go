package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Logical-partition counters (see doc.go): under c/<collID>l, one base and
// any number of deltas per logical partition <point:8><shardKey>.

// logicalPartitionOf is the <point:8><shardKey> part of a sharded
// collection's document key d/<collID:4><point:8><shardKey><id>.
func logicalPartitionOf(key []byte) ([]byte, error) {
	if len(key) < 14 {
		return nil, fmt.Errorf("%w: document key %x is too short for a sharded collection", ErrCorrupted, key)
	}
	n, ok := value.KeyLen(key[14:])
	if !ok || 14+n >= len(key) {
		return nil, fmt.Errorf("%w: document key %x has no shard-key value and _id", ErrCorrupted, key)
	}
	return key[6 : 14+n], nil
}

// parseLPCounterKey splits a key under lpPrefix into its logical
// partition and whether it is a delta.
func parseLPCounterKey(k []byte) (lp []byte, delta bool, ok bool) {
	rest := k[7:] // c/<id:4>l
	if len(rest) < 9 {
		return nil, false, false
	}
	n, ok := value.KeyLen(rest[8:])
	if !ok || 8+n >= len(rest) {
		return nil, false, false
	}
	switch rest[8+n] {
	case lpBase:
		return rest[:8+n], false, true
	case lpDeltaT:
		return rest[:8+n], true, true
	}
	return nil, false, false
}

// readLogical sums one logical partition's base and deltas in txn and
// says how many deltas there were. The keys read make txn conflict with a
// concurrent fold of the partition.
func readLogical(txn kv.Txn, id uint32, lp []byte) (Counts, int, error) {
	var total Counts
	deltas := 0
	prefix := lpKeyPrefix(id, lp)
	it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if item.KeySize() > int64(len(prefix)+1) { // base: prefix + 'b'; delta: + 'd' + 16 bytes
			deltas++
		}
		if err := item.Value(func(v []byte) error {
			c, err := decodeCounts(v)
			total.add(c)
			return err
		}); err != nil {
			return Counts{}, 0, err
		}
	}
	return total, deltas, nil
}

// LogicalPartition is one logical partition's counters.
type LogicalPartition struct {
	Point  uint64
	Key    []byte // the shard-key value as value.EncodeKey encodes it
	Counts Counts
}

// scanLogical visits the logical partitions of collection id whose points
// are in [from, to] in key order, with their summed counters (partitions
// whose counters add up to nothing are skipped), and counts the deltas it
// read.
func scanLogical(txn kv.Txn, id uint32, from, to uint64, fn func(LogicalPartition) error) (int, error) {
	prefix := lpPrefix(id)
	start := binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), from)
	it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	var cur LogicalPartition
	var curLP []byte
	deltas := 0
	flush := func() error {
		if curLP == nil || cur.Counts == (Counts{}) {
			return nil
		}
		return fn(cur)
	}
	for it.Seek(start); it.Valid(); it.Next() {
		item := it.Item()
		lp, delta, ok := parseLPCounterKey(item.Key())
		if !ok {
			return deltas, fmt.Errorf("%w: logical-partition counter key %x", ErrCorrupted, item.Key())
		}
		point := binary.BigEndian.Uint64(lp)
		if point > to {
			break
		}
		if delta {
			deltas++
		}
		if !bytes.Equal(lp, curLP) {
			if err := flush(); err != nil {
				return deltas, err
			}
			curLP = append(curLP[:0], lp...)
			cur = LogicalPartition{Point: point, Key: append([]byte(nil), lp[8:]...)}
		}
		if err := item.Value(func(v []byte) error {
			c, err := decodeCounts(v)
			cur.Counts.add(c)
			return err
		}); err != nil {
			return deltas, err
		}
	}
	return deltas, flush()
}

// foldLogical sums the deltas of collection id's logical partitions
// (those of one partition when lp is not nil) into their bases and deletes
// them, in transactions that read at most foldReads keys (bases and
// deltas; one logical partition is never split). A logical partition left
// with no documents and no bytes loses its base too. Writers never read
// these keys except in the logical-partition size check, whose
// transaction then conflicts with the fold and is retried.
func (s *Store) foldLogical(id uint32, lp []byte) error {
	return s.foldLogicalRange(id, lp, 0, math.MaxUint64)
}

// foldReads bounds the keys one fold transaction reads. Badger checks a
// committing transaction's reads against every transaction committed
// since it began, one by one, while it holds the lock that every other
// commit and every new transaction's read time need. A fold that read all
// the bases of a collection with a million logical partitions (a key
// unique per document) stopped the whole server for 35 s at its commit,
// under 4 writers (bench -only '^reshard$', whose reshardCollection
// counts the collection, which starts a fold). Bases are read to find the
// deltas, so they count too; a thousand keys take about a millisecond to
// read, so few commits land meanwhile to check them against.
const foldReads = 1000

// foldLogicalRange folds like foldLogical, the logical partitions at
// points lo..hi only when lp is nil: what one physical partition owns.
func (s *Store) foldLogicalRange(id uint32, lp []byte, lo, hi uint64) error {
	prefix := lpPrefix(id)
	if lp != nil {
		prefix = lpKeyPrefix(id, lp)
	}

	var resume []byte
	for {
		more := false
		var next []byte
		err := s.update(func(txn kv.Txn) error {
			more, next = false, nil
			it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
			defer it.Close()
			type group struct {
				lp     []byte
				total  Counts
				keys   [][]byte
				deltas int
			}
			var g *group
			read := 0
			finish := func() error {
				if g == nil || g.deltas == 0 {
					return nil
				}
				for _, k := range g.keys {
					if err := txn.Delete(k); err != nil {
						return err
					}
				}
				if g.total == (Counts{}) {
					return nil // base deleted with the deltas
				}
				return txn.Set(lpBaseKey(id, g.lp), encodeCounts(g.total))
			}
			seek := prefix
			if lp == nil && lo > 0 {
				seek = binary.BigEndian.AppendUint64(bytes.Clone(prefix), lo)
			}
			if resume != nil {
				seek = resume
			}
			for it.Seek(seek); it.Valid(); it.Next() {
				item := it.Item()
				klp, delta, ok := parseLPCounterKey(item.Key())
				if !ok {
					return fmt.Errorf("%w: logical-partition counter key %x", ErrCorrupted, item.Key())
				}
				if lp == nil && binary.BigEndian.Uint64(klp) > hi {
					break // past the physical partition
				}
				if g == nil || !bytes.Equal(klp, g.lp) {
					if err := finish(); err != nil {
						return err
					}
					if read >= foldReads { // keep the transaction small; go on from this partition
						more, next = true, append([]byte(nil), item.Key()...)
						g = nil
						return nil
					}
					g = &group{lp: append([]byte(nil), klp...)}
				}
				if delta {
					g.deltas++
				}
				read++
				g.keys = append(g.keys, item.KeyCopy(nil))
				if err := item.Value(func(v []byte) error {
					c, err := decodeCounts(v)
					g.total.add(c)
					return err
				}); err != nil {
					return err
				}
			}
			return finish()
		})
		if err != nil || !more {
			return err
		}
		resume = next
	}
}

// PartitionStats are one physical partition's counters.
type PartitionStats struct {
	Partition shard.Partition
	Counts    Counts
	// LogicalPartitions is how many logical partitions hold documents;
	// Largest the biggest of them by bytes (data and key bytes), largest
	// first, at most the number asked for.
	LogicalPartitions int64
	Largest           []LogicalPartition
}

// PartitionStats returns every physical partition of c in hash order with
// its exact counters, summed from its logical partitions' counters (an
// unsharded collection is one partition and one logical partition, whose
// counters are the collection's), and its top largest logical partitions.
func (s *Store) PartitionStats(c *Collection, top int) ([]PartitionStats, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	m := c.Map()
	out := make([]PartitionStats, m.Len())
	for i := range out {
		out[i].Partition = m.At(i)
	}
	if !c.Sharded() {
		counts, err := s.Counts(c)
		if err != nil {
			return nil, err
		}
		out[0].Counts = counts
		if counts.Docs > 0 {
			out[0].LogicalPartitions = 1
			if top > 0 {
				out[0].Largest = []LogicalPartition{{Counts: counts}}
			}
		}
		return out, nil
	}
	deltas := 0
	err := s.db.View(func(txn kv.Txn) error {
		var err error
		deltas, err = scanLogical(txn, c.ID, 0, ^uint64(0), func(lp LogicalPartition) error {
			i := m.Lookup(lp.Point)
			ps := &out[i]
			ps.Counts.add(lp.Counts)
			if lp.Counts.Docs > 0 {
				ps.LogicalPartitions++
			}
			if top > 0 {
				ps.Largest = keepLargest(ps.Largest, lp, top)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("partition stats of %s: %w", c.Namespace(), err)
	}
	if deltas > foldThreshold*4 {
		s.foldInBackground(c)
	}
	return out, nil
}

// size is what the storage limits count: data and key bytes.
func (c Counts) size() int64 { return c.Bytes + c.KeyBytes + c.IndexBytes }

// Size is what the storage limits count: data and key (index) bytes.
func (c Counts) Size() int64 { return c.size() }

func keepLargest(list []LogicalPartition, lp LogicalPartition, top int) []LogicalPartition {
	if len(list) == top && list[len(list)-1].Counts.size() >= lp.Counts.size() {
		return list
	}
	i := sort.Search(len(list), func(i int) bool { return list[i].Counts.size() < lp.Counts.size() })
	list = append(list, LogicalPartition{})
	copy(list[i+1:], list[i:])
	list[i] = lp
	if len(list) > top {
		list = list[:top]
	}
	return list
}

// partitionSizes are the exact sizes (data and key bytes) of c's
// partitions, in map order, from one read.
func (s *Store) partitionSizes(c *Collection, m *shard.Map) ([]int64, error) {
	sizes := make([]int64, m.Len())
	if !c.Sharded() {
		counts, err := s.Counts(c)
		sizes[0] = counts.size()
		return sizes, err
	}
	err := s.db.View(func(txn kv.Txn) error {
		_, err := scanLogical(txn, c.ID, 0, ^uint64(0), func(lp LogicalPartition) error {
			sizes[m.Lookup(lp.Point)] += lp.Counts.size()
			return nil
		})
		return err
	})
	if s.sizesRead != nil {
		s.sizesRead()
	}
	return sizes, err
}

// splitPointOf is where partition p of c splits by size, from its
// logical partitions' counters: false when its data sits at one point,
// which is then the point returned.
func (s *Store) splitPointOf(c *Collection, p shard.Partition) (uint64, int64, bool, error) {
	var points []uint64
	var sizes []int64
	var total int64
	err := s.db.View(func(txn kv.Txn) error {
		_, err := scanLogical(txn, c.ID, p.Min, p.Max, func(lp LogicalPartition) error {
			total += lp.Counts.size()
			if n := len(points); n > 0 && points[n-1] == lp.Point {
				sizes[n-1] += lp.Counts.size()
				return nil
			}
			points, sizes = append(points, lp.Point), append(sizes, lp.Counts.size())
			return nil
		})
		return err
	})
	if err != nil {
		return 0, 0, false, err
	}
	if len(points) == 1 {
		return points[0], total, false, nil
	}
	at, ok := c.Spec().SplitPoint(points, sizes)
	return at, total, ok, nil
}

// dataPoints are the points of c that hold data, ascending, and the
// bytes at each, from its logical partitions' counters.
func (s *Store) dataPoints(c *Collection) ([]uint64, []int64, error) {
	var points []uint64
	var sizes []int64
	err := s.db.View(func(txn kv.Txn) error {
		_, err := scanLogical(txn, c.ID, 0, ^uint64(0), func(lp LogicalPartition) error {
			if n := len(points); n > 0 && points[n-1] == lp.Point {
				sizes[n-1] += lp.Counts.size()
				return nil
			}
			points, sizes = append(points, lp.Point), append(sizes, lp.Counts.size())
			return nil
		})
		return err
	})
	return points, sizes, err
}

// ShardKeyOf returns the shard-key value of logical partition lp of
// sharded collection c, read from its first document (counters keep only
// its encoding). ok is false when the partition has no document now.
func (s *Store) ShardKeyOf(c *Collection, lp LogicalPartition) (v bsoncore.Value, ok bool, err error) {
	prefix := DocKey(c.ID, lp.Point, lp.Key, nil)
	err = s.View(func(tx *Txn) error {
		return tx.Scan(c, prefix, func(key, doc []byte) (bool, error) {
			if !bytes.HasPrefix(key, prefix) {
				return false, nil
			}
			sk, err := c.Spec().Extract(doc)
			if err == nil {
				v = bsoncore.Value{Type: sk.Type, Data: append([]byte(nil), sk.Data...)}
				ok = true
			}
			return false, nil
		})
	})
	return v, ok, err
}

// LogicalPartitionDocs is how many documents the logical partitions of c
// whose document key ranges are lps hold (exact: their counters' bases
// and deltas), for a planner weighing a read of them against an index.
func (s *Store) LogicalPartitionDocs(c *Collection, lps []KeyRange) (int64, error) {
	var n int64
	err := s.db.View(func(txn kv.Txn) error {
		for _, r := range lps {
			if len(r.Start) <= docPrefixLen {
				continue
			}
			counts, _, err := readLogical(txn, c.ID, r.Start[docPrefixLen:])
			if err != nil {
				return err
			}
			n += counts.Docs
		}
		return nil
	})
	return n, err
}
