package ru

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestWindows: per-second buckets on the injected clock; "last second" is
// the current second, "last minute" the 60 seconds ending with it.
func TestWindows(t *testing.T) {
	pool := NewPool(Manual(1000), Options{})
	p := pool.NewPartition(at(0))
	var total float64
	for _, c := range []struct {
		now                      time.Duration
		charge                   float64 // charged at now, before the snapshot
		second, minute, peak, nr float64
	}{
		{0, 100, 100, 100, 100, 10},
		{999 * time.Millisecond, 50, 150, 150, 150, 15},
		{time.Second, 0, 0, 150, 150, 15},
		{1500 * time.Millisecond, 10.25, 10.25, 160.25, 150, 15},
		{30 * time.Second, 700, 700, 860.25, 700, 70},
		{59 * time.Second, 0, 0, 860.25, 700, 70},
		{59*time.Second + 1, 5, 5, 865.25, 700, 70},
		{60 * time.Second, 0, 0, 715.25, 700, 70}, // second 0 has left the minute
		{61 * time.Second, 0, 0, 705, 700, 70},
		{89*time.Second + 999*time.Millisecond, 0, 0, 705, 700, 70},
		{90 * time.Second, 0, 0, 5, 5, 0.5},
		{118 * time.Second, 0, 0, 5, 5, 0.5},
		{119 * time.Second, 0, 0, 0, 0, 0},
		{time.Hour, 0, 0, 0, 0, 0},
	} {
		if c.charge > 0 {
			p.Charge(at(c.now), nil, c.charge)
			total += c.charge
		}
		s := p.Stats(at(c.now))
		if s.LastSecondRU != c.second || s.LastMinuteRU != c.minute || s.PeakSecondRU != c.peak || s.NormalizedRU != c.nr {
			t.Errorf("at %v: last second %v, last minute %v, peak %v, normalized %v%%; want %v, %v, %v, %v%%",
				c.now, s.LastSecondRU, s.LastMinuteRU, s.PeakSecondRU, s.NormalizedRU, c.second, c.minute, c.peak, c.nr)
		}
		if s.RU != total {
			t.Errorf("at %v: total %v RU, want %v", c.now, s.RU, total)
		}
	}
}

// TestWindowClockBack: a charge stamped earlier than the latest (goroutines
// race to the lock) lands in its own second while that is in the minute.
func TestWindowClockBack(t *testing.T) {
	pool := NewPool(Manual(1000), Options{})
	p := pool.NewPartition(at(0))
	p.Charge(at(100*time.Second), nil, 1)
	p.Charge(at(99*time.Second), nil, 2)                      // in the window
	p.Charge(at(30*time.Second), nil, 4)                      // out of it: counted in the total only
	p.Charge(at(40*time.Second+500*time.Millisecond), nil, 8) // second 40 is out too
	s := p.Stats(at(100 * time.Second))
	if s.LastSecondRU != 1 || s.LastMinuteRU != 3 || s.RU != 15 {
		t.Errorf("last second %v, last minute %v, total %v; want 1, 3, 15", s.LastSecondRU, s.LastMinuteRU, s.RU)
	}
}

// TestNormalizedFollowsRate: each second is measured against the budget in
// force when it was charged.
func TestNormalizedFollowsRate(t *testing.T) {
	pool := NewPool(Manual(400), Options{})
	p := pool.NewPartition(at(0))
	p.Charge(at(0), nil, 200) // 50% of 400
	pool.SetThroughput(at(time.Second), Manual(1000))
	p.Charge(at(time.Second), nil, 400) // 40% of 1000
	if got := p.Stats(at(time.Second)).NormalizedRU; got != 50 {
		t.Errorf("normalized %v%%, want 50%%", got)
	}
	// Throttling off: consumption beyond the budget shows above 100%.
	p.Charge(at(2*time.Second), nil, 2500)
	if got := p.Stats(at(2 * time.Second)).NormalizedRU; got != 250 {
		t.Errorf("normalized %v%%, want 250%%", got)
	}
}

func TestThrottledCount(t *testing.T) {
	pool := NewPool(Manual(400), Options{})
	p := pool.NewPartition(at(0))
	mustCharge(t, p, at(0), 400)
	for range 3 {
		if ok, _ := p.TryCharge(at(0), []byte("k"), 1); ok {
			t.Fatal("paid from an empty bucket")
		}
	}
	s := p.Stats(at(0))
	if s.Throttled != 3 || s.Requests != 1 || s.RU != 400 || len(s.HotKeys) != 0 {
		t.Errorf("stats %+v: want 3 throttled, 1 request, 400 RU, no key charged", s)
	}
	// Admission charges (0 RU) are neither requests nor throttles when paid.
	if ok, _ := p.TryCharge(at(2*time.Second), nil, 0); !ok {
		t.Fatal("admission refused on a refilled bucket")
	}
	if s := p.Stats(at(2 * time.Second)); s.Requests != 1 || s.Throttled != 3 {
		t.Errorf("after admission: %d requests, %d throttled; want 1, 3", s.Requests, s.Throttled)
	}
}

func TestHotKeysExactWhenFew(t *testing.T) {
	h := newHotKeys(4)
	h.add([]byte("a"), 100)
	h.add([]byte("b"), 300)
	h.add([]byte("a"), 250)
	h.add([]byte("c"), 5)
	h.add(nil, 1000) // unattributed
	h.add([]byte("d"), 0)
	got := h.top()
	want := []KeyUsage{{Key: []byte("a"), RU: 3.5}, {Key: []byte("b"), RU: 3}, {Key: []byte("c"), RU: 0.05}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("top = %v, want %v", got, want)
	}
	got[0].Key[0] = 'z' // a copy
	if h.top()[0].Key[0] != 'a' {
		t.Error("top returned the tracker's own key buffer")
	}
	none := newHotKeys(0)
	none.add([]byte("a"), 1)
	if len(none.top()) != 0 {
		t.Error("a tracker of 0 keys tracked one")
	}
}

// TestHotKeysFindsHeavyHitters: a million requests over a hundred thousand
// keys, Zipf-distributed, tracked in 32 counters: every key above total/k
// is found, each count is an upper bound within its error, errors are
// within total/k, and the memory is the k counters.
func TestHotKeysFindsHeavyHitters(t *testing.T) {
	const k, keys, requests = 32, 100_000, 1_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.2, 1, keys-1)
	h := newHotKeys(k)
	exact := map[string]int64{}
	var total int64
	for range requests {
		key := []byte("user-" + strconv.FormatUint(zipf.Uint64(), 10))
		c := int64(100 + rng.IntN(1000)) // 1 to 11 RU
		h.add(key, c)
		exact[string(key)] += c
		total += c
	}
	if len(h.counters) != k || len(h.heap) != k || len(h.byHash) != k {
		t.Fatalf("tracker holds %d counters, %d heap entries and %d index entries, want %d", len(h.counters), len(h.heap), len(h.byHash), k)
	}
	top := h.top()
	tracked := map[string]KeyUsage{}
	for _, u := range top {
		tracked[string(u.Key)] = u
		truth := float64(exact[string(u.Key)]) / 100
		if u.RU < truth || u.RU-u.MaxError > truth+1e-9 {
			t.Errorf("%s: estimate %v ± %v, true %v", u.Key, u.RU, u.MaxError, truth)
		}
		if u.MaxError > float64(total)/100/k {
			t.Errorf("%s: error %v above total/k = %v", u.Key, u.MaxError, float64(total)/100/k)
		}
	}
	var heavy []string
	for key, c := range exact {
		if c > total/k {
			heavy = append(heavy, key)
			if _, ok := tracked[key]; !ok {
				t.Errorf("heavy key %s (%v RU of %v) not tracked", key, float64(c)/100, float64(total)/100)
			}
		}
	}
	if len(heavy) < 3 {
		t.Errorf("only %d heavy keys: the workload does not test the guarantee", len(heavy))
	}
	// The top of the list is the true top.
	ranked := slices.SortedFunc(func(yield func(string) bool) {
		for key := range exact {
			if !yield(key) {
				return
			}
		}
	}, func(a, b string) int { return int(exact[b] - exact[a]) })
	for i := range 3 {
		if !bytes.Equal(top[i].Key, []byte(ranked[i])) {
			t.Errorf("hot key #%d is %s, truly %s", i+1, top[i].Key, ranked[i])
		}
	}
}

func BenchmarkPartitionTryCharge(b *testing.B) {
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, 99_999)
	for _, c := range []struct {
		name string
		keys func(i int) []byte
		n    int
	}{
		{"no-key", func(int) []byte { return nil }, 1},
		{"one-key", func(int) []byte { return []byte("tenant-0") }, 1},
		// Zipf over 100,000 keys: mostly charges to tracked keys.
		{"zipf-100k-keys", func(int) []byte { return []byte("tenant-" + strconv.FormatUint(zipf.Uint64(), 10)) }, 1 << 16},
		// Uniform over 10,000 keys: nearly every charge evicts a counter.
		{"uniform-10k-keys", func(i int) []byte { return []byte("tenant-" + strconv.Itoa(i)) }, 10_000},
	} {
		b.Run(c.name, func(b *testing.B) {
			pool := NewPool(Manual(1_000_000_000), Options{})
			p := pool.NewPartition(at(0))
			keys := make([][]byte, c.n)
			for i := range keys {
				keys[i] = c.keys(i)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				p.TryCharge(at(time.Duration(i)*time.Microsecond), keys[i%len(keys)], 5.5)
			}
		})
	}
}
