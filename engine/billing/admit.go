package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parsecdb/parsec/ru"
)

// RateTooLarge is a partition's refusal of an operation over its budget:
// Cosmos DB's 16500 TooManyRequests, which the command layer replies
// with RetryAfterMs.
type RateTooLarge struct {
	// RetryAfter is the time until the budget can pay the operation.
	RetryAfter time.Duration
}

func (e *RateTooLarge) Error() string {
	return fmt.Sprintf("request rate is large: retry after %d ms", ru.RetryAfterMillis(e.RetryAfter))
}

// ErrRetryLimit is server-side retry giving up: the operation waited as
// long as the retry limit allows (Cosmos DB's ExceededTimeLimit).
var ErrRetryLimit = ru.ErrRetryLimit

// Admit lets an operation on partition p start: it pays prepay now (the
// part of its price known before it runs; 0 only checks that the
// balance is not negative). key is the logical partition the RU go to
// (nil: none). A nil meter is an internal operation, never refused (the
// writes of $out and $merge, which their aggregate was admitted for).
// Refused, it returns a *RateTooLarge, ErrRetryLimit, or the context's
// error if the request went away while server-side retry waited.
func (a *Accounts) Admit(ctx context.Context, m *Meter, p *ru.Partition, key []byte, prepay float64) error {
	switch {
	case p == nil:
		m.Add(prepay)
		return nil
	case m == nil:
		p.Charge(a.now(), key, prepay)
		return nil
	}
	now := a.now()
	ok, after := p.TryCharge(now, key, prepay)
	switch {
	case ok:
	case !a.opts.Limiting():
		// Counted as throttled by TryCharge: Cosmos DB would have refused it.
		p.Charge(now, key, prepay)
	case a.opts.ServerSideRetry:
		if err := a.retryCharge(ctx, p, key, prepay, after); err != nil {
			m.throttled = true
			return err
		}
	default:
		m.throttled = true
		return &RateTooLarge{RetryAfter: after}
	}
	m.Add(prepay)
	return nil
}

// AdmitAll admits an operation on several partitions (a fan-out), paying
// nothing in advance.
func (a *Accounts) AdmitAll(ctx context.Context, m *Meter, parts []*ru.Partition) error {
	for _, p := range parts {
		if err := a.Admit(ctx, m, p, nil, 0); err != nil {
			return err
		}
	}
	return nil
}

// ChargeTo charges amount, known after the operation ran, to p.
func (a *Accounts) ChargeTo(m *Meter, p *ru.Partition, key []byte, amount float64) {
	if amount <= 0 {
		return
	}
	if p != nil {
		p.Charge(a.now(), key, amount)
	}
	m.Add(amount)
}

// ChargeSplit charges amount to parts, by weight (nil or all zero:
// evenly), the last part taking the rounding so that the parts add up to
// amount.
func (a *Accounts) ChargeSplit(m *Meter, parts []*ru.Partition, weights []float64, amount float64) {
	if amount <= 0 {
		return
	}
	m.Add(amount)
	if len(parts) == 0 {
		return
	}
	now := a.now()
	if len(parts) == 1 {
		parts[0].Charge(now, nil, amount)
		return
	}
	var sum float64
	for _, w := range weights {
		sum += w
	}
	left := amount
	for i, p := range parts {
		share := amount / float64(len(parts))
		if sum > 0 {
			share = amount * weights[i] / sum
		}
		share = ru.Round(share)
		if i == len(parts)-1 {
			share = left
		}
		left -= share
		p.Charge(now, nil, share)
	}
}

// retryCharge is server-side retry: it sleeps until p can pay amount,
// then pays it, or gives up past the retry limit (ErrRetryLimit).
func (a *Accounts) retryCharge(ctx context.Context, p *ru.Partition, key []byte, amount float64, after time.Duration) error {
	limit := a.opts.RetryLimit
	wait, ok := ru.RetryWait(after, 0, limit)
	sleep := a.wait
	if sleep == nil {
		sleep = sleepTimer
	}
	var waited time.Duration
	for {
		if !ok {
			return ErrRetryLimit
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		waited += wait
		next, err := p.TryChargeWithin(a.now(), key, amount, waited, limit)
		if err != nil {
			return err
		}
		if next == 0 {
			return nil
		}
		wait = next
	}
}

// sleepTimer waits d on a real timer, or until ctx is done.
func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ItemAdmission is one item's admission by its partition, kept across
// reruns of the transaction that writes it. The zero value is an item not
// yet admitted.
type ItemAdmission struct {
	state uint8 // admitNone, admitPaid or admitRefused
	err   error
}

const (
	admitNone uint8 = iota
	admitPaid
	admitRefused
)

// PayItem admits one item of a write whose price is known before it is
// written, from inside the transaction that writes it: it never waits.
// It returns the item's error when refused (*RateTooLarge, or
// ErrRetryLimit when server-side retry is on but retry is not set); or,
// when server-side retry applies (retry set), how long to wait: the
// caller commits what it wrote, then calls WaitItem outside the
// transaction. ad keeps the decision.
func (a *Accounts) PayItem(m *Meter, p *ru.Partition, key []byte, price float64, ad *ItemAdmission, retry bool) (time.Duration, error) {
	switch ad.state {
	case admitPaid:
		return 0, nil
	case admitRefused:
		return 0, ad.err
	}
	now := a.now()
	switch {
	case p == nil:
		ad.state = admitPaid
		m.Add(price)
		return 0, nil
	case m == nil: // an internal write, never refused
		ad.state = admitPaid
		p.Charge(now, key, price)
		return 0, nil
	}
	ok, after := p.TryCharge(now, key, price)
	switch {
	case ok:
	case !a.opts.Limiting():
		p.Charge(now, key, price) // what Cosmos DB would have refused, counted as throttled
	case a.opts.ServerSideRetry && retry:
		return max(after, time.Nanosecond), nil
	default:
		ad.state, ad.err = admitRefused, &RateTooLarge{RetryAfter: after}
		if a.opts.ServerSideRetry {
			ad.err = ErrRetryLimit
		}
		m.throttled = true
		return 0, ad.err
	}
	ad.state = admitPaid
	m.Add(price)
	return 0, nil
}

// WaitItem is server-side retry for an item PayItem could not admit
// after a refusal that asked to wait after: it waits until p pays price.
// Past the retry limit it records the item as refused (ErrRetryLimit)
// and returns ErrRetryLimit.
func (a *Accounts) WaitItem(ctx context.Context, m *Meter, p *ru.Partition, key []byte, price float64, after time.Duration, ad *ItemAdmission) error {
	err := a.retryCharge(ctx, p, key, price, after)
	switch {
	case err == nil:
		ad.state = admitPaid
		m.Add(price)
	case errors.Is(err, ErrRetryLimit):
		ad.state, ad.err = admitRefused, ErrRetryLimit
		m.throttled = true
	}
	return err
}
