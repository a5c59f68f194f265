package ru

import (
	"slices"
	"sync"
	"time"
)

// DefaultHotKeys is how many logical partitions each Partition tracks.
const DefaultHotKeys = 32

// Options configure a Pool.
type Options struct {
	// BurstSeconds is the capacity of each partition's bucket in seconds
	// of its rate; 0 or less means 1, Cosmos DB's budget ("RU per
	// second"). A larger value resembles Cosmos burst capacity, which lets
	// idle partitions save up.
	BurstSeconds float64
	// HotKeys is how many logical partitions each partition tracks:
	// 0 means DefaultHotKeys, a negative value none.
	HotKeys int
}

// Pool is one provisioned throughput and the physical partitions that
// share it, evenly: a collection with its own throughput and its
// partitions, or a database with shared throughput and the partitions of
// all its collections that have none of their own. Adding or removing a
// partition, or changing the throughput, re-divides at once; each bucket
// keeps its balance, capped at its new capacity.
//
// Pool is safe for concurrent use. Its mutex guards membership and the
// throughput, and is never taken on the request path: requests lock only
// their Partition. Lock order: Pool, then Partition.
type Pool struct {
	mu           sync.Mutex
	throughput   Throughput
	burstSeconds float64
	hotKeys      int
	parts        []*Partition
}

// NewPool returns a pool of throughput t with no partitions. t is not
// validated (see Throughput.Validate): the zero Throughput gives every
// partition a rate of 0, which refuses every positive charge.
func NewPool(t Throughput, o Options) *Pool {
	if o.BurstSeconds <= 0 {
		o.BurstSeconds = 1
	}
	switch {
	case o.HotKeys == 0:
		o.HotKeys = DefaultHotKeys
	case o.HotKeys < 0:
		o.HotKeys = 0
	}
	return &Pool{throughput: t, burstSeconds: o.BurstSeconds, hotKeys: o.HotKeys}
}

// NewPartition adds a new partition to the pool at now, full at its share
// of the throughput, and re-divides.
func (p *Pool) NewPartition(now time.Time) *Partition {
	p.mu.Lock()
	defer p.mu.Unlock()
	rate := p.throughput.PartitionRate(len(p.parts) + 1)
	part := newPartition(now, rate, rate*p.burstSeconds, p.hotKeys)
	p.parts = append(p.parts, part)
	p.redivide(now)
	return part
}

// Attach moves an existing partition into the pool at now, keeping its
// balance and statistics: for a collection that changes between shared and
// its own throughput. Detach it from its former pool first. Attaching a
// member again does nothing.
func (p *Pool) Attach(now time.Time, part *Partition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.parts, part) {
		return
	}
	p.parts = append(p.parts, part)
	p.redivide(now)
}

// Detach removes a partition from the pool at now and re-divides among the
// rest: a partition that split (its children are new partitions) or whose
// collection was dropped or moved. The detached partition keeps its rate
// and statistics, so operations in flight on it finish normally.
func (p *Pool) Detach(now time.Time, part *Partition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.parts, part)
	if i < 0 {
		return
	}
	p.parts = slices.Delete(p.parts, i, i+1)
	p.redivide(now)
}

// Change, at now, detaches the partitions of detach, attaches those of
// attach (as Attach does) and adds n new partitions, then re-divides once:
// a change of many partitions (a collection whose map grew to thousands)
// costs O(partitions), where one Attach or NewPartition each would cost
// O(partitions²). It returns the new partitions.
func (p *Pool) Change(now time.Time, detach, attach []*Partition, n int) []*Partition {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(detach) > 0 {
		gone := make(map[*Partition]bool, len(detach))
		for _, part := range detach {
			gone[part] = true
		}
		p.parts = slices.DeleteFunc(p.parts, func(part *Partition) bool { return gone[part] })
	}
	if len(attach) > 0 {
		have := make(map[*Partition]bool, len(p.parts))
		for _, part := range p.parts {
			have[part] = true
		}
		for _, part := range attach {
			if !have[part] {
				p.parts = append(p.parts, part)
				have[part] = true
			}
		}
	}
	rate := p.throughput.PartitionRate(len(p.parts) + n)
	added := make([]*Partition, n)
	for i := range added {
		added[i] = newPartition(now, rate, rate*p.burstSeconds, p.hotKeys)
	}
	p.parts = append(p.parts, added...)
	p.redivide(now)
	return added
}

// SetThroughput changes the pool's throughput at now and re-divides.
func (p *Pool) SetThroughput(now time.Time, t Throughput) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.throughput = t
	p.redivide(now)
}

// Throughput is the pool's provisioned throughput.
func (p *Pool) Throughput() Throughput {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.throughput
}

// Len is the number of partitions sharing the pool.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parts)
}

// PartitionRate is each partition's share in RU/s.
func (p *Pool) PartitionRate() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.throughput.PartitionRate(len(p.parts))
}

func (p *Pool) redivide(now time.Time) {
	rate := p.throughput.PartitionRate(len(p.parts))
	for _, part := range p.parts {
		part.setRate(now, rate, rate*p.burstSeconds)
	}
}

// PoolStats sums up a Pool's partitions.
type PoolStats struct {
	Throughput Throughput
	// Partitions is the number of partitions; PartitionRate the RU/s of
	// each.
	Partitions    int
	PartitionRate float64
	// RU, LastSecondRU and LastMinuteRU add up the partitions' figures.
	RU, LastSecondRU, LastMinuteRU float64
	// NormalizedRU is the largest of the partitions' (Cosmos reports the
	// maximum over partition key ranges).
	NormalizedRU float64
	// ScaledRUs is, for autoscale, the throughput the pool scaled to in the
	// busiest second of the last minute (Throughput.Scaled of the busiest
	// partition's peak second); for manual throughput, T.
	ScaledRUs float64
	// Requests and Throttled add up the partitions' counts.
	Requests, Throttled int64
}

// Stats sums up the pool's partitions at now.
func (p *Pool) Stats(now time.Time) PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := PoolStats{
		Throughput:    p.throughput,
		Partitions:    len(p.parts),
		PartitionRate: p.throughput.PartitionRate(len(p.parts)),
	}
	sec := now.Unix()
	var total, second, minute int64
	var peak float64
	for _, part := range p.parts {
		part.mu.Lock()
		total += part.total
		second += part.window.sum(sec, 1)
		minute += part.window.sum(sec, windowSeconds)
		pk, norm := part.window.peak(sec)
		peak = max(peak, pk)
		s.NormalizedRU = max(s.NormalizedRU, Round(norm*100))
		s.Requests += part.requests
		s.Throttled += part.throttled
		part.mu.Unlock()
	}
	s.RU, s.LastSecondRU, s.LastMinuteRU = float64(total)/100, float64(second)/100, float64(minute)/100
	s.ScaledRUs = p.throughput.Scaled(peak, len(p.parts))
	return s
}
