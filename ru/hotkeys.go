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
// Counters form a min-heap on count, indexed by a 64-bit FNV-1a hash of the
// key, so a charge costs one map lookup and O(log k) swaps, and once the k
// counters exist it does not allocate: a replaced counter reuses its key
// buffer. Two keys whose hashes collide share nothing: the second is not
// tracked (probability about k/2^64 per key). Amounts are centi-RU.
type hotKeys struct {
	k    int
	pos  map[uint64]int // hash -> index in heap
	heap []counter
}

type counter struct {
	hash  uint64
	key   []byte
	count int64
	err   int64
}

func newHotKeys(k int) hotKeys {
	return hotKeys{k: k, pos: make(map[uint64]int, k), heap: make([]counter, 0, k)}
}

func (h *hotKeys) add(key []byte, centi int64) {
	if h.k <= 0 || centi <= 0 || key == nil {
		return
	}
	hash := fnv1a(key)
	if i, ok := h.pos[hash]; ok {
		if bytes.Equal(h.heap[i].key, key) {
			h.heap[i].count += centi
			h.down(i)
		}
		return
	}
	if len(h.heap) < h.k {
		h.heap = append(h.heap, counter{hash: hash, key: bytes.Clone(key), count: centi})
		i := len(h.heap) - 1
		h.pos[hash] = i
		h.up(i)
		return
	}
	c := &h.heap[0]
	delete(h.pos, c.hash)
	c.hash = hash
	c.key = append(c.key[:0], key...)
	c.err = c.count
	c.count += centi
	h.pos[hash] = 0
	h.down(0)
}

// top returns the tracked keys, largest count first (ties by key), with
// copies of the keys.
func (h *hotKeys) top() []KeyUsage {
	out := make([]KeyUsage, len(h.heap))
	for i, c := range h.heap {
		out[i] = KeyUsage{Key: bytes.Clone(c.key), RU: float64(c.count) / 100, MaxError: float64(c.err) / 100}
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
	h.pos[h.heap[i].hash] = i
	h.pos[h.heap[j].hash] = j
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
