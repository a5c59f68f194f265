package billing

import (
	"time"

	"github.com/parsecdb/parsec/ru"
)

// Options configure request-unit accounting and throttling.
type Options struct {
	// RateLimiting refuses operations that would overdraw their
	// partition's budget (16500 TooManyRequests). Off, as in the Cosmos DB
	// emulator: request units are charged and reported either way.
	RateLimiting bool
	// ServerSideRetry makes refused operations wait and retry instead, up
	// to RetryLimit, then fail with ExceededTimeLimit (Cosmos DB's
	// server-side retry). It implies RateLimiting.
	ServerSideRetry bool
	// RetryLimit bounds server-side retry; 0 means ru.MaxRetryWait (60 s).
	RetryLimit time.Duration
	// BurstSeconds is each partition's bucket capacity in seconds of its
	// share; 0 means 1 (Cosmos DB's per-second budget).
	BurstSeconds float64
	// Bypass turns accounting off: nothing is charged, counted or
	// throttled. For measuring what accounting costs (benchmarks) only.
	Bypass bool
}

// Limiting reports whether refusals are enforced.
func (o Options) Limiting() bool { return o.RateLimiting || o.ServerSideRetry }

// Meter is one request's account: what its operations were charged and
// whether one was refused. The zero Meter has charged nothing. A request
// keeps its Meter inside it; getLastRequestStatistics reports it.
type Meter struct {
	total     float64 // RU charged so far
	charged   bool    // something was charged
	throttled bool    // the request was refused
}

// Add adds amount to the request's charge. A nil Meter (an internal
// operation) ignores it.
func (m *Meter) Add(amount float64) {
	if m != nil {
		m.total += amount
		m.charged = true
	}
}

// Charge is the request's charge as reported: its operations' charges,
// or the command price when it ran none.
func (m *Meter) Charge() float64 {
	if !m.charged && !m.throttled {
		return CommandRU
	}
	return ru.Round(m.total)
}

// Idle reports whether the request was neither charged nor refused: it
// pays CommandRU, charged to no partition.
func (m *Meter) Idle() bool { return !m.charged && !m.throttled }

// Total is what the request's operations were charged so far, unrounded.
func (m *Meter) Total() float64 { return m.total }

// CommandRU is the price of a command that charged nothing (metadata
// commands, reads of collections that do not exist).
var CommandRU = ru.Charge(ru.Usage{Kind: ru.KindCommand})
