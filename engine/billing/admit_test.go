package billing

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/parsecdb/parsec/ru"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestMeter(t *testing.T) {
	var m Meter
	if !m.Idle() || m.Charge() != CommandRU {
		t.Fatalf("a new meter: idle %v, charge %v; want idle at the command price %v", m.Idle(), m.Charge(), CommandRU)
	}
	m.Add(5.337)
	if m.Idle() || m.Charge() != 5.34 || m.Total() != 5.337 {
		t.Fatalf("after 5.337 RU: idle %v, charge %v, total %v", m.Idle(), m.Charge(), m.Total())
	}
	var internal *Meter
	internal.Add(3) // an internal operation's charge goes to no request
}

// A 400 RU/s partition holds 400 RU: 300 pass, 200 more wait 250 ms for
// the 100 RU missing, and a refusal changes nothing.
func TestAdmitRefusesOverBudget(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	a := testAccounts(cat, clk, Options{RateLimiting: true}, nil)
	p := onePartition(t, a, cat, 400)
	ctx := context.Background()
	var m Meter
	if err := a.Admit(ctx, &m, p, nil, 300); err != nil {
		t.Fatalf("300 RU of 400: %v", err)
	}
	err := a.Admit(ctx, &m, p, nil, 200)
	var refused *RateTooLarge
	if !errors.As(err, &refused) || refused.RetryAfter != 250*time.Millisecond {
		t.Fatalf("200 RU with 100 left: %v, want RateTooLarge retrying after 250ms", err)
	}
	if m.Charge() != 300 || m.Idle() {
		t.Fatalf("meter after the refusal: charge %v, idle %v; want 300, not idle", m.Charge(), m.Idle())
	}
	if st := p.Stats(clk.now()); st.Throttled != 1 || st.RU != 300 || !near(st.Balance, 100) {
		t.Fatalf("partition after the refusal: %+v", st)
	}
	clk.advance(249 * time.Millisecond)
	if err := a.Admit(ctx, &m, p, nil, 200); !errors.As(err, &refused) || ru.RetryAfterMillis(refused.RetryAfter) != 1 {
		t.Fatalf("1 ms early: %v, want a refusal retrying after 1 ms", err)
	}
	clk.advance(time.Millisecond)
	if err := a.Admit(ctx, &m, p, nil, 200); err != nil {
		t.Fatalf("after RetryAfter: %v", err)
	}
	if m.Charge() != 500 {
		t.Fatalf("charge %v, want 500", m.Charge())
	}

	// Rule 5: with the balance negative, even an operation of unknown
	// price (prepay 0) waits until it is paid back.
	a.ChargeTo(&m, p, nil, 500) // the balance was 0: now -500
	if err := a.Admit(ctx, &m, p, nil, 0); !errors.As(err, &refused) || refused.RetryAfter != 1250*time.Millisecond {
		t.Fatalf("prepay 0 on a negative balance: %v, want a refusal retrying after 1.25s", err)
	}
	// An internal operation (nil meter) is never refused.
	if err := a.Admit(ctx, nil, p, nil, 50); err != nil {
		t.Fatalf("internal operation: %v", err)
	}
	if st := p.Stats(clk.now()); st.RU != 1050 {
		t.Fatalf("partition RU %v, want 1050", st.RU)
	}
}

// Without rate limiting nothing is refused: what Cosmos DB would have
// refused is charged and counted.
func TestAdmitWithoutRateLimiting(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	a := testAccounts(cat, clk, Options{}, nil)
	p := onePartition(t, a, cat, 400)
	var m Meter
	for range 3 {
		if err := a.Admit(context.Background(), &m, p, nil, 300); err != nil {
			t.Fatalf("rate limiting off: %v", err)
		}
	}
	st := p.Stats(clk.now())
	if m.Charge() != 900 || st.RU != 900 || st.Throttled != 2 {
		t.Fatalf("charge %v, partition %+v; want 900 RU charged, 2 would-be throttles", m.Charge(), st)
	}
}

func TestServerSideRetry(t *testing.T) {
	ctx := context.Background()
	t.Run("waits", func(t *testing.T) {
		clk, cat := newClock(), newCatalog()
		var waits []time.Duration
		a := testAccounts(cat, clk, Options{ServerSideRetry: true}, &waits)
		p := onePartition(t, a, cat, 400)
		var m Meter
		start := clk.now()
		_ = a.Admit(ctx, &m, p, nil, 300)
		if err := a.Admit(ctx, &m, p, nil, 200); err != nil {
			t.Fatalf("server-side retry: %v", err)
		}
		if got := clk.now().Sub(start); got != 250*time.Millisecond || len(waits) != 1 {
			t.Fatalf("waited %v in %v, want 250ms in one wait", got, waits)
		}
		if m.Charge() != 500 {
			t.Fatalf("charge %v, want 500", m.Charge())
		}
	})
	t.Run("limit", func(t *testing.T) {
		clk, cat := newClock(), newCatalog()
		var waits []time.Duration
		a := testAccounts(cat, clk, Options{ServerSideRetry: true, RetryLimit: 100 * time.Millisecond}, &waits)
		p := onePartition(t, a, cat, 400)
		var m Meter
		_ = a.Admit(ctx, &m, p, nil, 300)
		if err := a.Admit(ctx, &m, p, nil, 200); !errors.Is(err, ErrRetryLimit) {
			t.Fatalf("250ms needed, 100ms allowed: %v, want ErrRetryLimit", err)
		}
		if len(waits) != 0 || m.Charge() != 300 {
			t.Fatalf("waits %v, charge %v: want no wait and nothing more charged", waits, m.Charge())
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		clk, cat := newClock(), newCatalog()
		var waits []time.Duration
		a := testAccounts(cat, clk, Options{ServerSideRetry: true}, &waits)
		p := onePartition(t, a, cat, 400)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		var m Meter
		_ = a.Admit(cctx, &m, p, nil, 300)
		if err := a.Admit(cctx, &m, p, nil, 200); !errors.Is(err, context.Canceled) {
			t.Fatalf("client gone while waiting: %v", err)
		}
	})
}

// An item's admission is decided once: a transaction that reruns gets
// the same answer without paying or being counted again.
func TestPayItem(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	a := testAccounts(cat, clk, Options{RateLimiting: true}, nil)
	p := onePartition(t, a, cat, 400)
	var m Meter
	var first, second ItemAdmission
	for range 2 {
		if wait, err := a.PayItem(&m, p, nil, 300, &first, true); wait != 0 || err != nil {
			t.Fatalf("first item: %v, %v", wait, err)
		}
	}
	var refused *RateTooLarge
	for range 2 {
		if _, err := a.PayItem(&m, p, nil, 200, &second, true); !errors.As(err, &refused) {
			t.Fatalf("second item: %v, want RateTooLarge", err)
		}
	}
	clk.advance(time.Second)
	if _, err := a.PayItem(&m, p, nil, 200, &second, true); !errors.As(err, &refused) {
		t.Fatalf("the refused item, later: %v, want its refusal kept", err)
	}
	if st := p.Stats(clk.now()); st.RU != 300 || st.Throttled != 1 || m.Charge() != 300 {
		t.Fatalf("partition %+v, charge %v: want 300 RU, one throttle", st, m.Charge())
	}
}

func TestPayItemServerSideRetry(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	var waits []time.Duration
	a := testAccounts(cat, clk, Options{ServerSideRetry: true}, &waits)
	p := onePartition(t, a, cat, 400)
	var m Meter
	var first, second, third ItemAdmission
	_, _ = a.PayItem(&m, p, nil, 300, &first, true)
	wait, err := a.PayItem(&m, p, nil, 200, &second, true)
	if err != nil || wait != 250*time.Millisecond {
		t.Fatalf("inside the transaction: wait %v, %v; want to wait 250ms", wait, err)
	}
	if err := a.WaitItem(context.Background(), &m, p, nil, 200, wait, &second); err != nil {
		t.Fatalf("waiting outside it: %v", err)
	}
	if wait, err := a.PayItem(&m, p, nil, 200, &second, true); wait != 0 || err != nil || m.Charge() != 500 {
		t.Fatalf("the rerun: wait %v, %v, charge %v; want it paid once (500)", wait, err, m.Charge())
	}
	// Once retry gave up, the items left are refused at once.
	if _, err := a.PayItem(&m, p, nil, 400, &third, false); !errors.Is(err, ErrRetryLimit) {
		t.Fatalf("after giving up: %v, want ErrRetryLimit", err)
	}
}

func TestChargeSplit(t *testing.T) {
	clk := newClock()
	a := testAccounts(newCatalog(), clk, Options{}, nil)
	parts := ru.NewPool(ru.Manual(3000), ru.Options{}).Change(clk.now(), nil, nil, 3)
	for _, tc := range []struct {
		weights []float64
		want    []float64
	}{
		{[]float64{1, 1, 2}, []float64{2.5, 2.5, 5}},
		{nil, []float64{3.33, 3.33, 3.34}},
		{[]float64{0, 0, 0}, []float64{3.33, 3.33, 3.34}},
	} {
		before := make([]float64, 3)
		for i, p := range parts {
			before[i] = p.Stats(clk.now()).RU
		}
		var m Meter
		a.ChargeSplit(&m, parts, tc.weights, 10)
		for i, p := range parts {
			if got := p.Stats(clk.now()).RU - before[i]; !near(got, tc.want[i]) {
				t.Errorf("weights %v: part %d charged %v, want %v", tc.weights, i, got, tc.want[i])
			}
		}
		if m.Charge() != 10 {
			t.Errorf("weights %v: request charged %v, want 10", tc.weights, m.Charge())
		}
	}
}
