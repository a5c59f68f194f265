package main

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// opFunc runs one operation of a workload. Each worker owns its opFunc, so
// it may keep per-worker state (buffers, random source) in the closure.
type opFunc func(ctx context.Context) error

// limits bound one measured run: it stops at whichever comes first.
type limits struct {
	warmup   time.Duration
	duration time.Duration
	maxOps   int64
}

// result is one workload at one concurrency.
type result struct {
	Workload string  `json:"workload"`
	Kind     string  `json:"kind"` // "server" (through the driver) or "baseline-badger"
	Clients  int     `json:"clients"`
	Ops      int64   `json:"ops"`
	Errors   int64   `json:"errors"`
	FirstErr string  `json:"first_error,omitempty"`
	Seconds  float64 `json:"seconds"`
	OpsPerS  float64 `json:"ops_per_sec"`
	MeanUS   float64 `json:"mean_us"`
	P50US    float64 `json:"p50_us"`
	P99US    float64 `json:"p99_us"`
	MaxUS    float64 `json:"max_us"`
	StopBy   string  `json:"stopped_by"` // "time" or "count"
	// Ratios, filled in once every workload has run (0: no baseline).
	VsPing   float64 `json:"ratio_vs_ping,omitempty"`
	VsBadger float64 `json:"ratio_vs_badger,omitempty"`
}

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// run drives clients workers, each calling its own op in a closed loop, for
// lim.warmup (unmeasured) and then until lim.duration has passed or
// lim.maxOps measured operations have completed. Every measured operation's
// latency is a time.Since sample in the worker's preallocated slice; the
// slices are merged at the end.
func run(ctx context.Context, name, kind string, clients int, lim limits, mk func(worker int) opFunc) result {
	ops := make([]opFunc, clients)
	for i := range ops {
		ops[i] = mk(i)
	}
	var (
		phase    atomic.Int32
		measured atomic.Int64
		nerr     atomic.Int64
		errOnce  sync.Once
		firstErr error
		full     = make(chan struct{})
		fullOnce sync.Once
		start    = make(chan struct{})
		wg       sync.WaitGroup
	)
	// Workers cannot all do more than maxOps together; twice the fair share
	// leaves room for uneven scheduling without regrowing in the loop.
	perWorker := min(lim.maxOps, 2*lim.maxOps/int64(clients)+1024)
	samples := make([][]time.Duration, clients)
	for w := range clients {
		samples[w] = make([]time.Duration, 0, perWorker)
		wg.Add(1)
		go func() {
			defer wg.Done()
			op, s := ops[w], samples[w]
			<-start
			for {
				p := phase.Load()
				if p == phaseStop {
					break
				}
				t0 := time.Now()
				err := op(ctx)
				d := time.Since(t0)
				if err != nil {
					if nerr.Add(1) == 1 {
						errOnce.Do(func() { firstErr = err })
					}
					if ctx.Err() != nil {
						break
					}
					continue
				}
				if p == phaseMeasure {
					s = append(s, d)
					if measured.Add(1) >= lim.maxOps {
						fullOnce.Do(func() { close(full) })
					}
				}
			}
			samples[w] = s
		}()
	}
	close(start)
	select {
	case <-time.After(lim.warmup):
	case <-ctx.Done():
	}
	measureStart := time.Now()
	phase.Store(phaseMeasure)
	stopBy := "time"
	timer := time.NewTimer(lim.duration)
	select {
	case <-timer.C:
	case <-full:
		stopBy = "count"
	case <-ctx.Done():
		stopBy = "interrupt"
	}
	timer.Stop()
	phase.Store(phaseStop)
	wg.Wait()
	elapsed := time.Since(measureStart)

	var all []time.Duration
	for _, s := range samples {
		all = append(all, s...)
	}
	slices.Sort(all)
	r := result{Workload: name, Kind: kind, Clients: clients, Ops: int64(len(all)), Errors: nerr.Load(), Seconds: elapsed.Seconds(), StopBy: stopBy}
	if firstErr != nil {
		r.FirstErr = firstErr.Error()
	}
	if len(all) > 0 {
		var sum time.Duration
		for _, d := range all {
			sum += d
		}
		r.OpsPerS = float64(len(all)) / elapsed.Seconds()
		r.MeanUS = us(sum / time.Duration(len(all)))
		r.P50US = us(percentile(all, 50))
		r.P99US = us(percentile(all, 99))
		r.MaxUS = us(all[len(all)-1])
	}
	return r
}

// percentile is the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100 // ceil(n*p/100)
	return sorted[max(i-1, 0)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// withCPUProfile runs fn while writing a CPU profile to path ("" runs fn
// only). Benchmark workers run under the pprof label side=client, so in an
// in-process run the server's share is what remains after
// `-tagignore side=client` (or `-focus 'serverConn..serve'`).
func withCPUProfile(path string, fn func()) error {
	if path == "" {
		fn()
		return nil
	}
	f, err := createFile(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("cpu profile: %w", err)
	}
	fn()
	pprof.StopCPUProfile()
	return f.Close()
}
