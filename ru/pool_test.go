package ru

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestThroughputValidate(t *testing.T) {
	for _, c := range []struct {
		t  Throughput
		ok bool
	}{
		{Manual(400), true},
		{Manual(500), true},
		{Manual(1_000_000), true},
		{Manual(300), false},
		{Manual(450), false},
		{Manual(-400), false},
		{Autoscale(1000), true},
		{Autoscale(4000), true},
		{Autoscale(500), false},
		{Autoscale(1500), false},
		{Throughput{}, false},
		{Throughput{RUs: 400, MaxRUs: 4000}, false},
	} {
		err := c.t.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", c.t, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidThroughput) {
			t.Errorf("%+v: %v does not wrap ErrInvalidThroughput", c.t, err)
		}
	}
	for n, want := range map[int]int{0: 400, 1: 400, 4: 400, 5: 500, 8: 800, 25: 2500} {
		if got := MinSharedRUs(n); got != want {
			t.Errorf("MinSharedRUs(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestThroughputRates(t *testing.T) {
	for _, c := range []struct {
		t     Throughput
		n     int
		limit float64
		rate  float64
	}{
		{Manual(400), 1, 400, 400},
		{Manual(1000), 3, 1000, 1000.0 / 3},
		{Autoscale(20000), 2, 20000, 10000},
		{Manual(400), 0, 400, 0},
		{Throughput{}, 4, 0, 0},
	} {
		if got := c.t.Limit(); got != c.limit {
			t.Errorf("%+v: Limit() = %v, want %v", c.t, got, c.limit)
		}
		if got := c.t.PartitionRate(c.n); got != c.rate {
			t.Errorf("%+v: PartitionRate(%d) = %v, want %v", c.t, c.n, got, c.rate)
		}
	}
}

// TestAutoscaleScaled: autoscale scales instantly to what the busiest
// partition needs, times the number of partitions, within [0.1×Tmax, Tmax].
func TestAutoscaleScaled(t *testing.T) {
	a := Autoscale(20000)
	for _, c := range []struct {
		busiest float64
		n       int
		want    float64
	}{
		{0, 2, 2000},      // idle: the floor
		{500, 2, 2000},    // below the floor
		{8000, 2, 16000},  // Cosmos's example: P1 6,000, P2 8,000 RU in a second
		{10000, 2, 20000}, // at the ceiling
		{15000, 2, 20000}, // beyond (a burst or throttling off): the ceiling
		{3000, 1, 3000},   // one partition
		{1500, 4, 6000},   // four partitions
		{1500, 0, 2000},   // no partition counts as one
	} {
		if got := a.Scaled(c.busiest, c.n); got != c.want {
			t.Errorf("Scaled(%v, %d) = %v, want %v", c.busiest, c.n, got, c.want)
		}
	}
	if got := Manual(400).Scaled(5000, 2); got != 400 {
		t.Errorf("manual Scaled = %v, want T", got)
	}
}

func rates(parts ...*Partition) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += " "
		}
		p.mu.Lock()
		s += fmt.Sprintf("%.2f/%.2f", p.bucket.rate, p.bucket.burst)
		p.mu.Unlock()
	}
	return s
}

func TestPoolRedivides(t *testing.T) {
	pool := NewPool(Manual(400), Options{})
	a := pool.NewPartition(at(0))
	if got, want := rates(a), "400.00/400.00"; got != want {
		t.Fatalf("one partition: %s, want %s", got, want)
	}
	if ok, _ := a.TryCharge(at(0), nil, 350); !ok {
		t.Fatal("a full partition refused 350 of 400 RU")
	}
	// A split: the parent's share halves, the child starts full.
	b := pool.NewPartition(at(0))
	if got, want := rates(a, b), "200.00/200.00 200.00/200.00"; got != want {
		t.Fatalf("two partitions: %s, want %s", got, want)
	}
	if got := a.Stats(at(0)).Balance; got != 50 {
		t.Errorf("a's balance after the split = %v, want 50 (kept)", got)
	}
	if got := b.Stats(at(0)).Balance; got != 200 {
		t.Errorf("b's balance = %v, want 200 (full)", got)
	}
	// Raising the throughput re-divides at once.
	pool.SetThroughput(at(500*time.Millisecond), Manual(1000))
	if got, want := rates(a, b), "500.00/500.00 500.00/500.00"; got != want {
		t.Fatalf("at 1000 RU/s: %s, want %s", got, want)
	}
	if got := a.Stats(at(500 * time.Millisecond)).Balance; got != 150 {
		t.Errorf("a's balance = %v, want 50 + 0.5 s × 200 RU/s = 150, refilled at the old rate until the change", got)
	}
	c := pool.NewPartition(at(time.Second))
	pool.Detach(at(time.Second), a)
	if got, want := rates(b, c), "500.00/500.00 500.00/500.00"; got != want {
		t.Fatalf("after detaching a: %s, want %s", got, want)
	}
	if got, want := rates(a), "333.33/333.33"; got != want {
		t.Errorf("detached a keeps its last share: %s, want %s", got, want)
	}
	if pool.Len() != 2 || pool.PartitionRate() != 500 {
		t.Errorf("Len %d PartitionRate %v, want 2, 500", pool.Len(), pool.PartitionRate())
	}
	pool.Detach(at(time.Second), a) // not a member: nothing
	pool.Attach(at(time.Second), b) // already a member: nothing
	if pool.Len() != 2 {
		t.Errorf("Len %d after no-op Detach and Attach, want 2", pool.Len())
	}
}

func TestPoolBurstSeconds(t *testing.T) {
	pool := NewPool(Manual(1000), Options{BurstSeconds: 5})
	p := pool.NewPartition(at(0))
	if got, want := rates(p), "1000.00/5000.00"; got != want {
		t.Fatalf("rates %s, want %s", got, want)
	}
	for i := range 5 {
		if ok, _ := p.TryCharge(at(0), nil, 1000); !ok {
			t.Fatalf("charge %d of 5 × 1000 RU refused with 5 s of burst", i+1)
		}
	}
	if ok, after := p.TryCharge(at(0), nil, 1000); ok || after != time.Second {
		t.Errorf("sixth charge: ok=%v retry-after=%v, want refused, 1s", ok, after)
	}
}

// TestSharedThroughput: a database's throughput is divided evenly among the
// physical partitions of the collections that have none of their own; a
// collection that gets its own throughput leaves the shared pool.
func TestSharedThroughput(t *testing.T) {
	db := NewPool(Manual(1000), Options{})
	orders := []*Partition{db.NewPartition(at(0)), db.NewPartition(at(0))}
	users := []*Partition{db.NewPartition(at(0)), db.NewPartition(at(0)), db.NewPartition(at(0))}
	if got, want := rates(append(orders, users...)...), "200.00/200.00 200.00/200.00 200.00/200.00 200.00/200.00 200.00/200.00"; got != want {
		t.Fatalf("shared: %s, want %s", got, want)
	}
	users[0].Charge(at(0), []byte("u1"), 150)

	// users gets 600 RU/s of its own.
	own := NewPool(Manual(600), Options{})
	for _, p := range users {
		db.Detach(at(0), p)
		own.Attach(at(0), p)
	}
	if got, want := rates(orders...), "500.00/500.00 500.00/500.00"; got != want {
		t.Errorf("orders after users left: %s, want %s", got, want)
	}
	if got, want := rates(users...), "200.00/200.00 200.00/200.00 200.00/200.00"; got != want {
		t.Errorf("users on its own: %s, want %s", got, want)
	}
	st := users[0].Stats(at(0))
	if st.RU != 150 || st.Balance != 50 {
		t.Errorf("a moved partition keeps its statistics and balance: RU %v balance %v, want 150, 50", st.RU, st.Balance)
	}
	if got := db.Stats(at(0)); got.Partitions != 2 || got.PartitionRate != 500 || got.RU != 0 {
		t.Errorf("db stats %+v", got)
	}
	if got := own.Stats(at(0)); got.Partitions != 3 || got.RU != 150 {
		t.Errorf("users stats %+v", got)
	}
}

// TestAutoscalePool reproduces Cosmos DB's normalized-RU example: Tmax
// 20,000 RU/s over two partitions (10,000 each); in one second P1 consumes
// 6,000 RU and P2 8,000: 60% and 80%, 80% for the container, which scaled
// to 16,000 RU/s.
func TestAutoscalePool(t *testing.T) {
	pool := NewPool(Autoscale(20000), Options{})
	p1, p2 := pool.NewPartition(at(0)), pool.NewPartition(at(0))
	if s := pool.Stats(at(0)); s.ScaledRUs != 2000 {
		t.Errorf("idle: scaled to %v, want the floor 2000", s.ScaledRUs)
	}
	for i := range 6 {
		mustCharge(t, p1, at(time.Duration(i)*100*time.Millisecond), 1000)
	}
	for i := range 8 {
		mustCharge(t, p2, at(time.Duration(i)*100*time.Millisecond), 1000)
	}
	now := at(900 * time.Millisecond)
	if got := p1.Stats(now).NormalizedRU; got != 60 {
		t.Errorf("P1 normalized %v%%, want 60%%", got)
	}
	if got := p2.Stats(now).NormalizedRU; got != 80 {
		t.Errorf("P2 normalized %v%%, want 80%%", got)
	}
	s := pool.Stats(now)
	if s.NormalizedRU != 80 || s.ScaledRUs != 16000 || s.LastSecondRU != 14000 {
		t.Errorf("pool: normalized %v%%, scaled %v RU/s, last second %v RU; want 80, 16000, 14000", s.NormalizedRU, s.ScaledRUs, s.LastSecondRU)
	}
	// A minute later the peak has left the window.
	s = pool.Stats(at(61 * time.Second))
	if s.NormalizedRU != 0 || s.ScaledRUs != 2000 || s.RU != 14000 || s.LastMinuteRU != 0 {
		t.Errorf("a minute later: %+v", s)
	}
}

func mustCharge(t *testing.T, p *Partition, now time.Time, ru float64) {
	t.Helper()
	if ok, after := p.TryCharge(now, nil, ru); !ok {
		t.Fatalf("charge of %v RU at %v refused (retry after %v)", ru, now.Sub(t0), after)
	}
}

func TestRetryWait(t *testing.T) {
	for _, c := range []struct {
		after, waited, limit time.Duration
		wait                 time.Duration
		ok                   bool
	}{
		{time.Millisecond, 0, 0, time.Millisecond, true},
		{1500 * time.Microsecond, 0, 0, 2 * time.Millisecond, true},
		{time.Nanosecond, 0, 0, time.Millisecond, true},
		{2 * time.Second, 58 * time.Second, 0, 2 * time.Second, true},
		{2*time.Second + 1, 58 * time.Second, 0, 0, false},
		{61 * time.Second, 0, 0, 0, false},
		{Never, 0, 0, 0, false},
		{time.Second, 0, 500 * time.Millisecond, 0, false},
		{100 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, 100 * time.Millisecond, true},
	} {
		wait, ok := RetryWait(c.after, c.waited, c.limit)
		if wait != c.wait || ok != c.ok {
			t.Errorf("RetryWait(%v, %v, %v) = %v, %v; want %v, %v", c.after, c.waited, c.limit, wait, ok, c.wait, c.ok)
		}
	}
	for d, want := range map[time.Duration]int64{0: 1, 1: 1, time.Millisecond: 1, time.Millisecond + 1: 2, 2500 * time.Millisecond: 2500, Never: int64(Never/time.Millisecond) + 1} {
		if got := RetryAfterMillis(d); got != want {
			t.Errorf("RetryAfterMillis(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestServerSideRetry drives the retry loop the engine runs, with a fake
// clock that the "sleeps" advance.
func TestServerSideRetry(t *testing.T) {
	pool := NewPool(Manual(400), Options{})
	p := pool.NewPartition(at(0))
	run := func(now time.Time, ru float64) (time.Time, time.Duration, error) {
		var waited time.Duration
		for {
			wait, err := p.TryChargeWithin(now, nil, ru, waited, MaxRetryWait)
			if err != nil || wait == 0 {
				return now, waited, err
			}
			now, waited = now.Add(wait), waited+wait
		}
	}
	now, waited, err := run(at(0), 300)
	if err != nil || waited != 0 {
		t.Fatalf("first charge: waited %v, err %v", waited, err)
	}
	now, waited, err = run(now, 300)
	if err != nil || waited != 500*time.Millisecond {
		t.Errorf("second charge: waited %v, err %v; want 500ms (200 RU at 400 RU/s)", waited, err)
	}
	// 30,000 RU at 400 RU/s: the oversized charge waits for a full bucket
	// (1 s) and runs; the next would wait 74 s for the debt: past the limit.
	now, waited, err = run(now, 30000)
	if err != nil || waited != time.Second {
		t.Fatalf("oversized charge: waited %v, err %v; want 1s", waited, err)
	}
	_, waited, err = run(now, 1)
	if !errors.Is(err, ErrRetryLimit) || waited != 0 {
		t.Errorf("charge behind a 74 s debt: waited %v, err %v; want to give up at once", waited, err)
	}
	if got := p.Stats(now).Throttled; got != 3 {
		t.Errorf("throttled %d, want 3 (one refusal in each of the last three)", got)
	}
}

// TestConcurrentCharges: partitions are charged from many goroutines while
// the pool re-divides and reports; every paid charge is counted exactly.
// Run with -race.
func TestConcurrentCharges(t *testing.T) {
	pool := NewPool(Manual(4000), Options{HotKeys: 4})
	parts := []*Partition{pool.NewPartition(at(0)), pool.NewPartition(at(0))}
	const workers, per = 8, 2000
	var wg sync.WaitGroup
	paid := make([]int64, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte{byte(w)}
			for i := range per {
				now := at(time.Duration(i) * time.Millisecond)
				if ok, _ := parts[(w+i)%2].TryCharge(now, key, 1.25); ok {
					paid[w]++
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			now := at(time.Duration(i) * 10 * time.Millisecond)
			pool.SetThroughput(now, Manual(4000+100*(i%3)))
			_ = pool.Stats(now)
			_ = parts[i%2].Stats(now)
		}
	}()
	wg.Wait()
	var want int64
	for _, n := range paid {
		want += n
	}
	s := pool.Stats(at(2 * time.Second))
	if s.Requests != want || s.RU != float64(want)*1.25 {
		t.Errorf("pool counted %d requests, %v RU; goroutines were paid %d × 1.25 RU", s.Requests, s.RU, want)
	}
	if s.Requests+s.Throttled != workers*per {
		t.Errorf("requests %d + throttled %d != %d calls", s.Requests, s.Throttled, workers*per)
	}
}
