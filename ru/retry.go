package ru

import (
	"errors"
	"time"
)

// MaxRetryWait bounds Cosmos DB's server-side retry: an operation that
// could not run within it fails (MongoDB error 50, ExceededTimeLimit).
const MaxRetryWait = 60 * time.Second

// ErrRetryLimit is returned when server-side retry would wait longer than
// its limit.
var ErrRetryLimit = errors.New("ru: server-side retry time limit exceeded")

// RetryWait is one decision of server-side retry: an operation has already
// waited waited and was just refused with retryAfter. It returns how long
// to sleep before trying again, retryAfter rounded up to the millisecond
// (the unit of RetryAfterMs, and a floor that keeps contending retries from
// spinning), or ok false when that sleep would take the total past limit
// (MaxRetryWait when limit ≤ 0): retryAfter is a lower bound, so waiting
// less could not help. The caller sleeps, not ru.
func RetryWait(retryAfter, waited, limit time.Duration) (wait time.Duration, ok bool) {
	if limit <= 0 {
		limit = MaxRetryWait
	}
	if retryAfter >= limit {
		return 0, false
	}
	wait = time.Duration(RetryAfterMillis(retryAfter)) * time.Millisecond
	if waited+wait > limit {
		return 0, false
	}
	return wait, true
}

// RetryAfterMillis is d in whole milliseconds, rounded up and at least 1:
// the RetryAfterMs of a TooManyRequests error.
func RetryAfterMillis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return max(ms, 1)
}
