package shard

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
)

// Partition is one physical partition: the points [Min, Max] of the hash
// space (Max inclusive, so that the last partition can end at 2^64-1), an
// id (Cosmos DB's partitionKeyRangeId) and the ids of the partitions it
// descends from, oldest first.
type Partition struct {
	ID      int
	Min     uint64
	Max     uint64
	Parents []int
}

// IDString is the id as Cosmos DB writes it: "0", "1", ...
func (p Partition) IDString() string { return strconv.Itoa(p.ID) }

// Width is the number of points the partition owns, minus one (so that
// the whole space fits in a uint64).
func (p Partition) Width() uint64 { return p.Max - p.Min }

// Contains reports whether point is in the partition.
func (p Partition) Contains(point uint64) bool { return p.Min <= point && point <= p.Max }

// End is the first point after the partition and whether there is one
// (false for the partition that ends the space).
func (p Partition) End() (uint64, bool) {
	if p.Max == math.MaxUint64 {
		return 0, false
	}
	return p.Max + 1, true
}

// Map is a collection's partition map: partitions sorted by Min that tile
// the hash space. A Map is immutable: Split and SplitTo return new maps.
type Map struct {
	parts  []Partition
	nextID int
}

// ErrBadSplit: a split that the map cannot make (unknown partition, or a
// split point that would leave a child empty).
var ErrBadSplit = errors.New("invalid split")

// ErrBadMap: partitions that do not tile the hash space.
var ErrBadMap = errors.New("partitions do not tile the hash space")

// NewMap divides the space into n equal partitions with ids 0..n-1 (n < 1
// counts as 1). Boundaries are floor(i * 2^64 / n).
func NewMap(n int) *Map {
	n = max(n, 1)
	m := &Map{parts: make([]Partition, n), nextID: n}
	for i := range n {
		m.parts[i] = Partition{ID: i, Min: boundary(i, n)}
		if i+1 < n {
			m.parts[i].Max = boundary(i+1, n) - 1
		} else {
			m.parts[i].Max = math.MaxUint64
		}
	}
	return m
}

// boundary is floor(i * 2^64 / n) for 0 <= i < n.
func boundary(i, n int) uint64 {
	if i == 0 {
		return 0
	}
	q, _ := bits.Div64(uint64(i), 0, uint64(n)) // (i << 64) / n
	return q
}

// MapOf rebuilds a map from its partitions (in any order) and the next id
// to hand out, checking that they tile the space with distinct ids below
// nextID.
func MapOf(parts []Partition, nextID int) (*Map, error) {
	m := &Map{parts: slices.Clone(parts), nextID: nextID}
	sort.Slice(m.parts, func(i, j int) bool { return m.parts[i].Min < m.parts[j].Min })
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Validate checks the map's invariants (see the package doc).
func (m *Map) Validate() error {
	if len(m.parts) == 0 {
		return fmt.Errorf("%w: no partitions", ErrBadMap)
	}
	ids := map[int]bool{}
	for i, p := range m.parts {
		if p.Min > p.Max {
			return fmt.Errorf("%w: partition %d has min %#x > max %#x", ErrBadMap, p.ID, p.Min, p.Max)
		}
		if i == 0 && p.Min != 0 {
			return fmt.Errorf("%w: first partition starts at %#x", ErrBadMap, p.Min)
		}
		if i > 0 && m.parts[i-1].Max+1 != p.Min {
			return fmt.Errorf("%w: gap or overlap between %#x and %#x", ErrBadMap, m.parts[i-1].Max, p.Min)
		}
		if ids[p.ID] || p.ID < 0 || p.ID >= m.nextID {
			return fmt.Errorf("%w: partition id %d repeated or not below %d", ErrBadMap, p.ID, m.nextID)
		}
		ids[p.ID] = true
	}
	if last := m.parts[len(m.parts)-1]; last.Max != math.MaxUint64 {
		return fmt.Errorf("%w: last partition ends at %#x", ErrBadMap, last.Max)
	}
	return nil
}

// Len is the number of partitions.
func (m *Map) Len() int { return len(m.parts) }

// At is the i-th partition in hash order.
func (m *Map) At(i int) Partition { return m.parts[i] }

// Partitions are the partitions in hash order; the slice must not be
// changed.
func (m *Map) Partitions() []Partition { return m.parts }

// NextID is the id the next new partition will get.
func (m *Map) NextID() int { return m.nextID }

// Lookup is the index of the partition that owns point.
func (m *Map) Lookup(point uint64) int {
	// the last partition whose Min <= point
	return sort.Search(len(m.parts), func(i int) bool { return m.parts[i].Min > point }) - 1
}

// Index is the index of the partition with id, or -1.
func (m *Map) Index(id int) int {
	for i, p := range m.parts {
		if p.ID == id {
			return i
		}
	}
	return -1
}

// Route is the indexes, ascending and distinct, of the partitions that own
// points.
func (m *Map) Route(points []uint64) []int {
	out := make([]int, 0, len(points))
	for _, p := range points {
		out = append(out, m.Lookup(p))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Split divides partition id at point at: the left child owns [Min, at-1],
// the right [at, Max]; both get new ids and the parent's parents plus the
// parent. at must leave both children non-empty (Min < at <= Max).
func (m *Map) Split(id int, at uint64) (*Map, error) {
	i := m.Index(id)
	if i < 0 {
		return nil, fmt.Errorf("%w: no partition %d", ErrBadSplit, id)
	}
	p := m.parts[i]
	if at <= p.Min || at > p.Max {
		return nil, fmt.Errorf("%w: point %#x is not inside partition %d [%#x, %#x]", ErrBadSplit, at, id, p.Min, p.Max)
	}
	parents := append(slices.Clone(p.Parents), p.ID)
	left := Partition{ID: m.nextID, Min: p.Min, Max: at - 1, Parents: parents}
	right := Partition{ID: m.nextID + 1, Min: at, Max: p.Max, Parents: slices.Clone(parents)}
	out := &Map{parts: make([]Partition, 0, len(m.parts)+1), nextID: m.nextID + 2}
	out.parts = append(out.parts, m.parts[:i]...)
	out.parts = append(out.parts, left, right)
	out.parts = append(out.parts, m.parts[i+1:]...)
	return out, nil
}

// Midpoint is the split point that halves partition p's range.
func (p Partition) Midpoint() uint64 { return p.Min + p.Width()/2 + 1 }

// SplitTo splits the widest partitions (the first of equal width) at
// their midpoints until the map has at least n partitions: how raising
// throughput adds partitions. A partition of a single point cannot split;
// when none can, the map stays smaller.
func (m *Map) SplitTo(n int) *Map {
	if m.Len() >= n {
		return m
	}
	// In rounds: the widest partitions, in map order, split one after the
	// other (their children are narrower, so the order of single splits
	// is the same), each round building the map once: O(n) per round and
	// a few rounds per halving of the width, where single splits cost
	// O(n) each.
	parts := slices.Clone(m.parts)
	nextID := m.nextID
	for len(parts) < n {
		var widest uint64
		found := false
		for _, p := range parts {
			if p.Width() > 0 && (!found || p.Width() > widest) {
				widest, found = p.Width(), true
			}
		}
		if !found {
			break
		}
		out := make([]Partition, 0, min(2*len(parts), n))
		for i, p := range parts {
			if p.Width() != widest || len(out)+len(parts)-i >= n {
				out = append(out, p)
				continue
			}
			at := p.Midpoint()
			parents := append(slices.Clone(p.Parents), p.ID)
			out = append(out,
				Partition{ID: nextID, Min: p.Min, Max: at - 1, Parents: parents},
				Partition{ID: nextID + 1, Min: at, Max: p.Max, Parents: slices.Clone(parents)})
			nextID += 2
		}
		parts = out
	}
	return &Map{parts: parts, nextID: nextID}
}

// SplitPoint chooses where to split a partition by size: given the
// distinct points that hold data in it, ascending, and the bytes at each,
// it returns a boundary b with points[j-1] < b <= points[j] for the j
// that best halves the bytes (left of b as close as possible to half the
// total; the first such j), placed midway between the two points so that
// keys yet to come spread over both children. A split there never divides
// a logical partition, whose documents all share one point. ok is false
// when there are fewer than two points: one logical partition (or several
// that share a hash) cannot be split.
func SplitPoint(points []uint64, bytes []int64) (b uint64, ok bool) {
	j, ok := splitIndex(points, bytes)
	if !ok {
		return 0, false
	}
	lo, hi := points[j-1], points[j]
	return lo + (hi-lo)/2 + 1, true
}

// SplitPoint is where a partition of this key splits by size (see the
// package SplitPoint): for a hashed leading field midway between the two
// points that best halve the bytes; for a ranged one at the right point
// itself, so that the boundary is the start of a value the data holds
// (its chunk bound reads as that value) and the split falls between two
// shard-key values, as MongoDB's ranged chunks split.
func (s Spec) SplitPoint(points []uint64, bytes []int64) (uint64, bool) {
	if !s.Ranged {
		return SplitPoint(points, bytes)
	}
	j, ok := splitIndex(points, bytes)
	if !ok {
		return 0, false
	}
	return points[j], true
}

// splitIndex is the j for which points[:j] best halve the bytes.
func splitIndex(points []uint64, bytes []int64) (int, bool) {
	if len(points) < 2 || len(points) != len(bytes) {
		return 0, false
	}
	var total int64
	for _, w := range bytes {
		total += w
	}
	bestJ := -1
	var bestDiff, left int64
	for j := 1; j < len(points); j++ {
		left += bytes[j-1]
		diff := left*2 - total
		if diff < 0 {
			diff = -diff
		}
		if bestJ < 0 || diff < bestDiff {
			bestJ, bestDiff = j, diff
		}
	}
	return bestJ, true
}

// SplitToData is SplitTo for a key placed by value (ranged): rather than
// halving ranges of the space, most of which a ranged key leaves empty, it
// splits the partition holding the most bytes where its data is best
// halved (s.SplitPoint), given the points that hold data, ascending, and
// the bytes at each; once no partition holds data at two points, the
// widest are halved as SplitTo does.
func (m *Map) SplitToData(s Spec, n int, points []uint64, bytes []int64) *Map {
	out := m
	for out.Len() < n {
		best, bestBytes := -1, int64(-1)
		var bestAt uint64
		for i, p := range out.parts {
			lo := sort.Search(len(points), func(k int) bool { return points[k] >= p.Min })
			hi := sort.Search(len(points), func(k int) bool { return points[k] > p.Max })
			at, ok := s.SplitPoint(points[lo:hi], bytes[lo:hi])
			if !ok {
				continue
			}
			var sum int64
			for _, b := range bytes[lo:hi] {
				sum += b
			}
			if sum > bestBytes {
				best, bestBytes, bestAt = i, sum, at
			}
		}
		if best < 0 {
			return out.SplitTo(n)
		}
		next, err := out.Split(out.parts[best].ID, bestAt)
		if err != nil {
			return out.SplitTo(n)
		}
		out = next
	}
	return out
}

// InitialPartitions is the number of physical partitions a collection is
// created with, as Cosmos DB provisions them: ceil(T / (0.6 x maxRUs)) for
// manual throughput T (6,000 RU/s each at the default 10,000) and
// ceil(Tmax / maxRUs) for autoscale maximum Tmax; at least one.
func InitialPartitions(manualRUs, autoscaleMaxRUs, maxRUs int) int {
	if maxRUs <= 0 {
		return 1
	}
	if autoscaleMaxRUs > 0 {
		return max(1, ceilDiv(autoscaleMaxRUs, maxRUs))
	}
	return max(1, ceilDiv(manualRUs*10, maxRUs*6))
}

// PartitionsFor is how many partitions throughput rus (manual T or the
// autoscale maximum) needs at maxRUs each: ceil(rus / maxRUs).
func PartitionsFor(rus, maxRUs int) int {
	if maxRUs <= 0 {
		return 1
	}
	return max(1, ceilDiv(rus, maxRUs))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
