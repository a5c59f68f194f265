package ru

import (
	"math"
	"sync"
	"time"
)

// Partition is the throughput governor and usage record of one physical
// partition: its bucket, its consumption over the last minute per second,
// its throttled requests and its hottest logical partitions. A Pool
// creates it and sets its rate.
//
// Partition is safe for concurrent use: one mutex per partition, held for a
// few dozen nanoseconds per request, so operations on different partitions
// never contend and those on one partition serialize only briefly.
type Partition struct {
	mu        sync.Mutex
	bucket    Bucket
	window    window
	hot       hotKeys
	total     int64 // centi-RU charged since creation
	requests  int64 // charges of more than 0 RU
	throttled int64 // refused charges
}

func newPartition(now time.Time, rate, burst float64, hotKeys int) *Partition {
	return &Partition{bucket: *NewBucket(now, rate, burst), hot: newHotKeys(hotKeys)}
}

// TryCharge charges ru to the partition at now if its bucket can pay
// (see Bucket for the rules); otherwise it counts a throttled request,
// charges nothing and says how long to wait. key is the logical partition
// (the encoded shard-key value) the RU are attributed to; nil attributes
// them to none (a fan-out query). It does not allocate once the partition
// tracks as many keys as it can.
//
// For an operation whose price is known only after it ran (a query), admit
// it with TryCharge(now, key, 0), which succeeds while the balance is not
// negative, run it, then Charge the actual price.
func (p *Partition) TryCharge(now time.Time, key []byte, ru float64) (ok bool, retryAfter time.Duration) {
	p.mu.Lock()
	ok, retryAfter = p.bucket.TryTake(now, ru)
	if ok {
		p.record(now, key, ru)
	} else {
		p.throttled++
	}
	p.mu.Unlock()
	return ok, retryAfter
}

// Charge charges ru at now unconditionally, letting the balance go
// negative: the price of an admitted operation known only afterwards, and
// every charge when throttling is off (RU are reported either way).
func (p *Partition) Charge(now time.Time, key []byte, ru float64) {
	p.mu.Lock()
	p.bucket.Take(now, ru)
	p.record(now, key, ru)
	p.mu.Unlock()
}

// TryChargeWithin is one step of server-side retry for an operation that
// has waited waited so far: it returns 0, nil once ru is charged; a
// positive wait to sleep before calling again with waited+wait; or
// ErrRetryLimit when the total wait would pass limit (MaxRetryWait when
// limit ≤ 0). See RetryWait.
func (p *Partition) TryChargeWithin(now time.Time, key []byte, ru float64, waited, limit time.Duration) (wait time.Duration, err error) {
	ok, after := p.TryCharge(now, key, ru)
	if ok {
		return 0, nil
	}
	wait, ok = RetryWait(after, waited, limit)
	if !ok {
		return 0, ErrRetryLimit
	}
	return wait, nil
}

func (p *Partition) record(now time.Time, key []byte, ru float64) {
	c := centi(ru)
	if c == 0 {
		return
	}
	p.total += c
	p.requests++
	p.window.add(now.Unix(), c, p.bucket.rate)
	p.hot.add(key, c)
}

// setRate re-divides: called by the Pool with its lock held.
func (p *Partition) setRate(now time.Time, rate, burst float64) {
	p.mu.Lock()
	p.bucket.SetRate(now, rate, burst)
	p.mu.Unlock()
}

// PartitionStats is a snapshot of a Partition's usage.
type PartitionStats struct {
	// Rate is the partition's share of its pool's throughput, in RU/s, and
	// Burst the capacity of its bucket in RU.
	Rate, Burst float64
	// Balance is what the bucket holds now; negative while an oversized
	// charge is paid back.
	Balance float64
	// RU is the total charged since the partition was created.
	RU float64
	// LastSecondRU is the RU charged in the current second, LastMinuteRU in
	// the 60 seconds ending with it.
	LastSecondRU, LastMinuteRU float64
	// PeakSecondRU is the most RU charged in one second of the last minute.
	PeakSecondRU float64
	// NormalizedRU is Cosmos DB's "Normalized RU Consumption": the largest
	// percentage of the partition's RU/s consumed in one second of the last
	// minute. It exceeds 100 when throttling is off (Cosmos would have
	// throttled) or when the burst capacity is above one second.
	NormalizedRU float64
	// Requests counts charges of more than 0 RU; Throttled counts refused
	// charges (each refusal, including those server-side retry absorbed).
	Requests, Throttled int64
	// HotKeys are the logical partitions that consumed the most RU, most
	// first.
	HotKeys []KeyUsage
}

// Stats is a snapshot of the partition's usage at now.
func (p *Partition) Stats(now time.Time) PartitionStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	sec := now.Unix()
	peak, norm := p.window.peak(sec)
	return PartitionStats{
		Rate:         p.bucket.rate,
		Burst:        p.bucket.burst,
		Balance:      p.bucket.Balance(now),
		RU:           float64(p.total) / 100,
		LastSecondRU: float64(p.window.sum(sec, 1)) / 100,
		LastMinuteRU: float64(p.window.sum(sec, windowSeconds)) / 100,
		PeakSecondRU: peak,
		NormalizedRU: Round(norm * 100),
		Requests:     p.requests,
		Throttled:    p.throttled,
		HotKeys:      p.hot.top(),
	}
}

// centi converts a charge to hundredths of an RU, the precision of the
// statistics.
func centi(ru float64) int64 { return int64(math.Round(nonNeg(ru) * 100)) }
