package auth

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// BackoffLimits bound the authentication attempts of one source address.
type BackoffLimits struct {
	// Threshold failures within Window are free; past it, attempts from
	// the address are spaced by a delay that doubles with every further
	// failure, from Base up to Max.
	Threshold int
	Window    time.Duration
	Base, Max time.Duration
	// LogInterval: an address's failures are reported at most once per
	// interval, with their count.
	LogInterval time.Duration
}

// DefaultBackoffLimits: 10 failures a minute are free; then attempts wait
// 100 ms, 200 ms, ... up to 5 s; failures are reported once a minute.
var DefaultBackoffLimits = BackoffLimits{Threshold: 10, Window: time.Minute, Base: 100 * time.Millisecond, Max: 5 * time.Second, LogInterval: time.Minute}

// LoginBackoff slows the authentication attempts of source addresses that
// keep failing. It is safe for concurrent use; the caller passes the time
// in, so it reads no clock.
type LoginBackoff struct {
	limits BackoffLimits

	mu      sync.Mutex
	sources map[string]*sourceFailures
}

// sourceFailures are one address's recent failures.
type sourceFailures struct {
	windowStart time.Time // start of the current counting window
	failures    int       // failures since windowStart
	next        time.Time // earliest time the next attempt may run
	lastReport  time.Time // when its failures were last reported
	unreported  int       // failures since then
	reported    bool      // whether they ever were
}

// NewLoginBackoff makes a LoginBackoff with limits (zero fields take
// DefaultBackoffLimits' values).
func NewLoginBackoff(limits BackoffLimits) *LoginBackoff {
	d := DefaultBackoffLimits
	if limits.Threshold <= 0 {
		limits.Threshold = d.Threshold
	}
	if limits.Window <= 0 {
		limits.Window = d.Window
	}
	if limits.Base <= 0 {
		limits.Base = d.Base
	}
	if limits.Max <= 0 {
		limits.Max = d.Max
	}
	if limits.Max < limits.Base {
		limits.Max = limits.Base
	}
	if limits.LogInterval <= 0 {
		limits.LogInterval = d.LogInterval
	}
	return &LoginBackoff{limits: limits, sources: map[string]*sourceFailures{}}
}

// Limits are the limits in force.
func (b *LoginBackoff) Limits() BackoffLimits { return b.limits }

// Admit is called when addr starts an authentication attempt at now: it
// returns how long the attempt must wait before it runs (0 while the
// address is under its threshold). A failure past the threshold makes the
// next attempt wait the delay; attempts take successive slots, so
// parallel connections from one address gain nothing.
func (b *LoginBackoff) Admit(addr string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.current(addr, now)
	if s == nil || s.failures <= b.limits.Threshold {
		return 0
	}
	slot := now
	if s.next.After(slot) {
		slot = s.next
	}
	s.next = slot.Add(b.delay(s.failures))
	return slot.Sub(now)
}

// Failure records a failed attempt from addr at now. report is true when
// the address's failures are due to be reported: count is then how many
// there were since the last report (this one included).
func (b *LoginBackoff) Failure(addr string, now time.Time) (count int, report bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.current(addr, now)
	if s == nil {
		s = &sourceFailures{windowStart: now}
		b.sources[addr] = s
	}
	s.failures++
	s.unreported++
	if s.failures > b.limits.Threshold {
		if next := now.Add(b.delay(s.failures)); next.After(s.next) {
			s.next = next
		}
	}
	if s.reported && now.Sub(s.lastReport) < b.limits.LogInterval {
		return 0, false
	}
	count = s.unreported
	s.unreported, s.lastReport, s.reported = 0, now, true
	return count, true
}

// Failures is the number of failures addr has in its current window.
func (b *LoginBackoff) Failures(addr string, now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.current(addr, now); s != nil {
		return s.failures
	}
	return 0
}

// delay is the spacing of attempts after n failures: Base once past the
// threshold, doubling with each further failure, at most Max.
func (b *LoginBackoff) delay(n int) time.Duration {
	d := b.limits.Base
	for i := b.limits.Threshold + 1; i < n && d < b.limits.Max; i++ {
		d *= 2
	}
	return min(d, b.limits.Max)
}

// current is addr's record with its window restarted when over (nil: no
// failures). A window restarts only once the address is no longer waited
// on, so that slots already handed out stay ordered.
func (b *LoginBackoff) current(addr string, now time.Time) *sourceFailures {
	s := b.sources[addr]
	if s == nil {
		return nil
	}
	if now.Sub(s.windowStart) >= b.limits.Window && !s.next.After(now) {
		s.windowStart, s.failures = now, 0
	}
	return s
}

// Report is a count of failures from one address not yet reported.
type Report struct {
	Addr  string
	Count int
}

// Sweep returns the failures not yet reported whose address's interval has
// passed (those of addresses that stopped failing), and forgets addresses
// with no failure in the last window and nothing left to report, so that
// the table stays as small as the set of addresses failing now. Call it
// every LogInterval or so.
func (b *LoginBackoff) Sweep(now time.Time) []Report {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Report
	for addr, s := range b.sources {
		if s.unreported > 0 && now.Sub(s.lastReport) >= b.limits.LogInterval {
			out = append(out, Report{Addr: addr, Count: s.unreported})
			s.unreported, s.lastReport = 0, now
		}
		if s.unreported == 0 && now.Sub(s.windowStart) >= b.limits.Window && !s.next.After(now) {
			delete(b.sources, addr)
		}
	}
	slices.SortFunc(out, func(a, b Report) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}

// tracked is the number of addresses remembered (for tests).
func (b *LoginBackoff) tracked() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sources)
}
