package ru

import (
	"math"
	"time"
)

// Never is the retry-after of a bucket that cannot ever pay: one that
// refills at zero RU/s.
const Never = time.Duration(math.MaxInt64)

// slack absorbs floating-point error at the boundary: a balance within a
// millionth of an RU of the charge pays it. Charges have two decimals, so
// no real charge is ever decided by it.
const slack = 1e-6

// Bucket is the token bucket of one physical partition: it refills at Rate
// RU per second up to Burst RU and starts full. Time is an argument of every
// call (an injected clock); a Bucket never reads the clock, so the same
// calls give the same answers.
//
// Rules:
//  1. A charge c is paid when the balance is at least c. Paying subtracts c.
//  2. A charge larger than Burst is paid when the bucket is full: the
//     balance goes negative and later charges wait while it refills, so a
//     huge operation can run but is paid back in full.
//  3. A refused charge changes nothing.
//  4. The retry-after of a refused charge is the time until rule 1 or 2
//     would pay it if nothing else were charged meanwhile.
//  5. A charge of 0 is paid while the balance is not negative: the
//     admission test for an operation whose price is known only after it
//     runs (see Partition.TryCharge).
//  6. Time never runs backwards for a bucket: a call at an earlier time
//     than a previous one acts at the previous time.
//
// A Bucket is not safe for concurrent use; Partition wraps one with a mutex.
type Bucket struct {
	rate   float64 // RU per second
	burst  float64 // capacity in RU
	tokens float64 // balance in RU at last; may be negative (rule 2)
	last   time.Time
}

// NewBucket returns a full bucket at now. Negative, NaN or infinite
// rate and burst count as zero.
func NewBucket(now time.Time, rate, burst float64) *Bucket {
	rate, burst = nonNeg(rate), nonNeg(burst)
	return &Bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// Rate is the refill rate in RU per second.
func (b *Bucket) Rate() float64 { return b.rate }

// Burst is the capacity in RU.
func (b *Bucket) Burst() float64 { return b.burst }

// Balance is the balance at now, which is negative while an oversized
// charge is being paid back.
func (b *Bucket) Balance(now time.Time) float64 { return b.advance(now) }

// TryTake pays ru at now if the bucket can (rules 1, 2, 5); otherwise it
// changes nothing and says how long to wait (rule 4). Negative, NaN or
// infinite ru counts as zero. It does not allocate.
func (b *Bucket) TryTake(now time.Time, ru float64) (ok bool, retryAfter time.Duration) {
	ru = nonNeg(ru)
	if ru > 0 && b.rate <= 0 {
		return false, Never
	}
	tokens := b.advance(now)
	need := min(ru, b.burst)
	if tokens >= need-slack {
		b.set(now, tokens-ru)
		return true, 0
	}
	return false, b.wait(need - tokens)
}

// Take pays ru at now unconditionally, letting the balance go negative: for
// charges known only after the operation ran, and for when throttling is
// off.
func (b *Bucket) Take(now time.Time, ru float64) {
	b.set(now, b.advance(now)-nonNeg(ru))
}

// SetRate changes the refill rate and the capacity at now, keeping the
// balance (capped at the new capacity).
func (b *Bucket) SetRate(now time.Time, rate, burst float64) {
	tokens := b.advance(now)
	b.rate, b.burst = nonNeg(rate), nonNeg(burst)
	b.set(now, min(tokens, b.burst))
}

// advance is the balance at now; it does not change b.
func (b *Bucket) advance(now time.Time) float64 {
	elapsed := now.Sub(b.last)
	if elapsed <= 0 || b.tokens >= b.burst {
		return b.tokens
	}
	return min(b.tokens+b.rate*elapsed.Seconds(), b.burst)
}

func (b *Bucket) set(now time.Time, tokens float64) {
	b.tokens = tokens
	if now.After(b.last) {
		b.last = now
	}
}

// wait is the time to refill deficit RU, rounded up to the nanosecond. A
// thousandth of a nanosecond of float error is forgiven so that round
// figures stay round; the slack covers the RU it stands for.
func (b *Bucket) wait(deficit float64) time.Duration {
	ns := math.Ceil(deficit/b.rate*1e9 - 1e-3)
	if ns >= float64(Never) {
		return Never
	}
	return time.Duration(max(ns, 1))
}

// nonNeg maps negative, NaN and infinite values to zero.
func nonNeg(x float64) float64 {
	if x > 0 && x <= math.MaxFloat64 {
		return x
	}
	return 0
}
