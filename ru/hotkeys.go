package ru

import (
	"bytes"
	"slices"
)

// KeyUsage is the RU consumed by one logical partition (one shard-key
// value), as estimated by the hot-key tracker.
type KeyUsage struct {
	// Key is the shard-key value as the engine passed it (its encoding).
	Key []byte
	// RU is an upper bound of the RU charged to Key since tracking began.
	RU float64
	// MaxError bounds the overestimate: the true figure is in
	// [RU-MaxError, RU]. Zero when Key has been tracked since its first
	// charge.
	MaxError float64
}

// hotKeys finds the logical partitions that consumed the most RU with the
// weighted Space-Saving algorithm (Metwally, Agrawal, El Abbadi 2005): k
// counters whatever the number of keys. A key not tracked takes over the
// counter with the smallest count and inherits that count as its error, so
//   - every key that consumed more than total/k RU is tracked, and
//   - a tracked key's count overestimates its consumption by at most its
//     error, which is at most total/k.
//
// Counters stay in place in a slice, indexed by a 64-bit FNV-1a hash of the
// key; a min-heap of their indexes orders them by count. A charge costs one
// map lookup and O(log k) swaps of small integers, and once the k counters
// exist it does not allocate: an evicted counter reuses its key buffer and
// the map only ever holds k entries. Two keys whose hashes collide share
// nothing: the second is not tracked (probability about k/2^64 per key).
// Amounts are centi-RU.
type hotKeys struct {
	k        int
	byHash   map[uint64]int32 // hash -> index in counters
	counters []counter
	heap     []heapEntry // a min-heap on count
}

type counter struct {
	hash uint64
	key  []byte
	err  int64
	at   int32 // position in heap, where its count is
}

// heapEntry keeps a counter's count next to the heap's links so that
// comparisons do not chase the counter.
type heapEntry struct {
	count   int64
	counter int32
}

func newHotKeys(k int) hotKeys {
	return hotKeys{k: k, byHash: make(map[uint64]int32, k), counters: make([]counter, 0, k), heap: make([]heapEntry, 0, k)}
}

func (h *hotKeys) add(key []byte, centi int64) {
	if h.k <= 0 || centi <= 0 || key == nil {
		return
	}
	hash := fnv1a(key)
	if i, ok := h.byHash[hash]; ok {
		if c := &h.counters[i]; bytes.Equal(c.key, key) {
			h.heap[c.at].count += centi
			h.down(int(c.at))
		}
		return
	}
	if len(h.counters) < h.k {
		i := int32(len(h.counters))
		h.counters = append(h.counters, counter{hash: hash, key: bytes.Clone(key), at: i})
		h.heap = append(h.heap, heapEntry{count: centi, counter: i})
		h.byHash[hash] = i
		h.up(int(i))
		return
	}
	least := &h.heap[0]
	c := &h.counters[least.counter]
	delete(h.byHash, c.hash)
	h.byHash[hash] = least.counter
	c.hash = hash
	c.key = append(c.key[:0], key...)
	c.err = least.count
	least.count += centi
	h.down(0)
}

// top returns the tracked keys, largest count first (ties by key), with
// copies of the keys.
func (h *hotKeys) top() []KeyUsage {
	out := make([]KeyUsage, len(h.counters))
	for i, c := range h.counters {
		out[i] = KeyUsage{Key: bytes.Clone(c.key), RU: float64(h.heap[c.at].count) / 100, MaxError: float64(c.err) / 100}
	}
	slices.SortFunc(out, func(a, b KeyUsage) int {
		if a.RU != b.RU {
			if a.RU > b.RU {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return out
}

func (h *hotKeys) less(i, j int) bool { return h.heap[i].count < h.heap[j].count }

func (h *hotKeys) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.counters[h.heap[i].counter].at = int32(i)
	h.counters[h.heap[j].counter].at = int32(j)
}

func (h *hotKeys) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *hotKeys) down(i int) {
	n := len(h.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func fnv1a(b []byte) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime
	}
	return h
}
