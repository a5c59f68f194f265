package shard

import (
	"errors"
	"math"
	oldrand "math/rand"
	"slices"
	"testing"
	"testing/quick"
)

// naiveMap is the reference the Map is checked against: owner ids per
// range, kept as a flat list searched linearly, split by rewriting it.
type naiveMap struct {
	ranges []naiveRange
	next   int
}

type naiveRange struct {
	id       int
	lo, hi   uint64 // inclusive
	ancestry []int
}

func (n *naiveMap) owner(p uint64) int {
	for _, r := range n.ranges {
		if r.lo <= p && p <= r.hi {
			return r.id
		}
	}
	return -1
}

func (n *naiveMap) split(id int, at uint64) bool {
	for i, r := range n.ranges {
		if r.id != id {
			continue
		}
		if at <= r.lo || at > r.hi {
			return false
		}
		anc := append(slices.Clone(r.ancestry), r.id)
		left := naiveRange{id: n.next, lo: r.lo, hi: at - 1, ancestry: anc}
		right := naiveRange{id: n.next + 1, lo: at, hi: r.hi, ancestry: slices.Clone(anc)}
		n.next += 2
		n.ranges = append(n.ranges[:i], append([]naiveRange{left, right}, n.ranges[i+1:]...)...)
		return true
	}
	return false
}

// splitOp is one random split: which partition (by position) and where.
type splitOp struct {
	Which uint8
	Frac  uint64 // the split point inside the partition, as a fraction of 2^64
	Edge  uint8  // sometimes pick the partition's edges instead
}

// TestMapMatchesNaive: after any sequence of splits (valid or not), the
// Map and the naive reference agree on every point's owner, on ids and on
// ancestry, and the Map tiles the space (Validate).
func TestMapMatchesNaive(t *testing.T) {
	check := func(initial uint8, ops []splitOp, probes []uint64) bool {
		n := int(initial%8) + 1
		m := NewMap(n)
		ref := &naiveMap{next: n}
		for i := 0; i < n; i++ {
			p := m.At(i)
			ref.ranges = append(ref.ranges, naiveRange{id: p.ID, lo: p.Min, hi: p.Max})
		}
		for _, op := range ops {
			p := m.At(int(op.Which) % m.Len())
			at := p.Min + uint64(float64(p.Width())*(float64(op.Frac)/math.MaxUint64))
			switch op.Edge % 5 {
			case 1:
				at = p.Min // invalid: empty left child
			case 2:
				at = p.Max
			case 3:
				at = p.Midpoint()
			}
			next, err := m.Split(p.ID, at)
			okRef := ref.split(p.ID, at)
			if (err == nil) != okRef {
				t.Logf("split %d at %#x: map err %v, reference ok %v", p.ID, at, err, okRef)
				return false
			}
			if err != nil {
				if !errors.Is(err, ErrBadSplit) {
					return false
				}
				continue
			}
			m = next
		}
		if err := m.Validate(); err != nil {
			t.Log(err)
			return false
		}
		if m.Len() != len(ref.ranges) || m.NextID() != ref.next {
			return false
		}
		for i, r := range ref.ranges {
			p := m.At(i)
			if p.ID != r.id || p.Min != r.lo || p.Max != r.hi || !slices.Equal(p.Parents, r.ancestry) {
				t.Logf("partition %d: map %+v, reference %+v", i, p, r)
				return false
			}
		}
		probes = append(probes, 0, math.MaxUint64)
		for _, r := range ref.ranges {
			probes = append(probes, r.lo, r.hi)
		}
		for _, pt := range probes {
			if got, want := m.At(m.Lookup(pt)).ID, ref.owner(pt); got != want {
				t.Logf("owner of %#x: map %d, reference %d", pt, got, want)
				return false
			}
		}
		return true
	}
	cfg := &quick.Config{MaxCount: 500, Rand: newRand(1)}
	if err := quick.Check(check, cfg); err != nil {
		t.Fatal(err)
	}
}

// TestRouteMatchesNaive: Route is the sorted set of owners of the points.
func TestRouteMatchesNaive(t *testing.T) {
	check := func(splits uint8, probes []uint64) bool {
		m := NewMap(1).SplitTo(int(splits%40) + 1)
		got := m.Route(probes)
		var want []int
		for _, p := range probes {
			for i := range m.Len() {
				if m.At(i).Contains(p) && !slices.Contains(want, i) {
					want = append(want, i)
				}
			}
		}
		slices.Sort(want)
		return slices.Equal(got, want)
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 300, Rand: newRand(2)}); err != nil {
		t.Fatal(err)
	}
}

func TestNewMapEqualRanges(t *testing.T) {
	for n := 1; n <= 64; n++ {
		m := NewMap(n)
		if err := m.Validate(); err != nil {
			t.Fatalf("NewMap(%d): %v", n, err)
		}
		if m.Len() != n || m.NextID() != n {
			t.Fatalf("NewMap(%d): %d partitions, next id %d", n, m.Len(), m.NextID())
		}
		for i := range n {
			p := m.At(i)
			if p.ID != i || len(p.Parents) != 0 {
				t.Fatalf("NewMap(%d) partition %d: %+v", n, i, p)
			}
			// widths differ by at most one point
			if d := int64(p.Width()) - int64(m.At(0).Width()); d > 1 || d < -1 {
				t.Fatalf("NewMap(%d): partition %d width %d vs %d", n, i, p.Width(), m.At(0).Width())
			}
		}
	}
	if got := NewMap(2).At(1).Min; got != 1<<63 {
		t.Fatalf("NewMap(2) splits at %#x, want 2^63", got)
	}
}

func TestSplitToAndMapOf(t *testing.T) {
	m := NewMap(1).SplitTo(16)
	if m.Len() != 16 {
		t.Fatalf("SplitTo(16): %d partitions", m.Len())
	}
	for i := range 16 {
		if p := m.At(i); p.Min != uint64(i)<<60 {
			t.Fatalf("partition %d starts at %#x, want %#x", i, p.Min, uint64(i)<<60)
		}
	}
	// Lowering never merges; SplitTo of fewer is the same map.
	if m.SplitTo(3) != m {
		t.Fatal("SplitTo(3) of 16 partitions changed the map")
	}
	again, err := MapOf(slices.Clone(m.Partitions()), m.NextID())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(again.Partitions(), m.Partitions(), func(a, b Partition) bool {
		return a.ID == b.ID && a.Min == b.Min && a.Max == b.Max && slices.Equal(a.Parents, b.Parents)
	}) {
		t.Fatal("MapOf did not rebuild the same map")
	}
	bad := slices.Clone(m.Partitions())
	bad[3].Max--
	if _, err := MapOf(bad, m.NextID()); !errors.Is(err, ErrBadMap) {
		t.Fatalf("MapOf with a gap: %v", err)
	}
	dup := slices.Clone(m.Partitions())
	dup[1].ID = dup[0].ID
	if _, err := MapOf(dup, m.NextID()); !errors.Is(err, ErrBadMap) {
		t.Fatalf("MapOf with a repeated id: %v", err)
	}
	// A one-point partition cannot split further.
	single, _ := MapOf([]Partition{{ID: 0, Min: 0, Max: 0}, {ID: 1, Min: 1, Max: math.MaxUint64}}, 2)
	if got := single.SplitTo(3); got.Len() != 3 || got.At(0).Width() != 0 {
		t.Fatalf("SplitTo from a one-point partition: %+v", got.Partitions())
	}
}

// TestSplitPointMatchesNaive: SplitPoint's boundary leaves data on both
// sides, and no other boundary between two data points halves the bytes
// better.
func TestSplitPointMatchesNaive(t *testing.T) {
	check := func(raw []uint64, weights []uint16) bool {
		slices.Sort(raw)
		pts := slices.Compact(raw)
		w := make([]int64, len(pts))
		for i := range w {
			if i < len(weights) {
				w[i] = int64(weights[i])
			}
		}
		b, ok := SplitPoint(pts, w)
		if len(pts) < 2 {
			return !ok
		}
		if !ok || b <= pts[0] || b > pts[len(pts)-1] {
			return false
		}
		var total, left int64
		for i, p := range pts {
			total += w[i]
			if p < b {
				left += w[i]
			}
		}
		// no data point strictly between the two around b
		j := slices.IndexFunc(pts, func(p uint64) bool { return p >= b })
		if j < 1 || !(pts[j-1] < b && b <= pts[j]) {
			return false
		}
		best := int64(math.MaxInt64)
		var acc int64
		for k := 1; k < len(pts); k++ {
			acc += w[k-1]
			best = min(best, abs64(2*acc-total))
		}
		return abs64(2*left-total) == best
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 1000, Rand: newRand(3)}); err != nil {
		t.Fatal(err)
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestPartitionCounts(t *testing.T) {
	for _, c := range []struct{ manual, auto, maxRUs, want int }{
		{400, 0, 10000, 1}, {6000, 0, 10000, 1}, {6100, 0, 10000, 2}, {96000, 0, 10000, 16},
		{0, 4000, 10000, 1}, {0, 10000, 10000, 1}, {0, 11000, 10000, 2}, {0, 160000, 10000, 16},
		{1000, 0, 1000, 2}, {400, 0, 0, 1},
	} {
		if got := InitialPartitions(c.manual, c.auto, c.maxRUs); got != c.want {
			t.Errorf("InitialPartitions(%d, %d, %d) = %d, want %d", c.manual, c.auto, c.maxRUs, got, c.want)
		}
	}
	for _, c := range []struct{ rus, maxRUs, want int }{{400, 10000, 1}, {10000, 10000, 1}, {10100, 10000, 2}, {160000, 10000, 16}} {
		if got := PartitionsFor(c.rus, c.maxRUs); got != c.want {
			t.Errorf("PartitionsFor(%d, %d) = %d, want %d", c.rus, c.maxRUs, got, c.want)
		}
	}
}

// newRand is a fixed source for testing/quick, so failures replay.
func newRand(seed int64) *oldrand.Rand { return oldrand.New(oldrand.NewSource(seed)) }

// splitToReference is SplitTo as single splits: the widest partition
// (the first of equal width) at its midpoint, until there are n.
func splitToReference(m *Map, n int) *Map {
	out := m
	for out.Len() < n {
		best := -1
		for i, p := range out.parts {
			if p.Width() > 0 && (best < 0 || p.Width() > out.parts[best].Width()) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		p := out.parts[best]
		next, err := out.Split(p.ID, p.Midpoint())
		if err != nil {
			panic(err)
		}
		out = next
	}
	return out
}

// TestSplitToMatchesSingleSplits checks SplitTo's rounds against one split
// at a time, from maps of equal and unequal widths.
func TestSplitToMatchesSingleSplits(t *testing.T) {
	starts := []*Map{NewMap(1), NewMap(3), NewMap(7)}
	if m, err := NewMap(2).Split(0, 1<<60); err == nil {
		starts = append(starts, m)
	}
	for _, start := range starts {
		for _, n := range []int{1, 2, 3, 5, 8, 13, 64, 100, 333, 1000} {
			got, want := start.SplitTo(n), splitToReference(start, n)
			if !slices.EqualFunc(got.Partitions(), want.Partitions(), func(a, b Partition) bool {
				return a.ID == b.ID && a.Min == b.Min && a.Max == b.Max && slices.Equal(a.Parents, b.Parents)
			}) || got.NextID() != want.NextID() {
				t.Fatalf("SplitTo(%d) from %d partitions differs from single splits", n, start.Len())
			}
		}
	}
	if m := NewMap(1).SplitTo(10_000); m.Len() != 10_000 || m.Validate() != nil {
		t.Fatalf("SplitTo(10,000): %d partitions, %v", m.Len(), m.Validate())
	}
}
