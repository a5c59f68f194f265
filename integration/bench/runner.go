package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/integration"
)

// opFunc runs one operation of a workload. Each worker owns its opFunc, so
// it may keep per-worker state (buffers, random source) in the closure.
type opFunc func(ctx context.Context) error

// result is one workload at one concurrency, summed over its rounds.
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
	// CPUPerOpUS is this process's CPU time (user+system, all threads) per
	// operation: client and in-process server together. Unlike ops/s it
	// hardly moves when other tenants take the CPU.
	CPUPerOpUS float64 `json:"cpu_per_op_us"`
	// ServerCPUPerOpUS is the CPU time per operation of a server in its own
	// process (-uri with -server-pid): CPUPerOpUS is then the client's alone.
	ServerCPUPerOpUS float64 `json:"server_cpu_per_op_us,omitempty"`
	// FaultsPerOp is the process's minor page faults per operation: pages
	// the kernel had to supply, each costly on some virtual machines (see
	// pageCost).
	FaultsPerOp float64 `json:"faults_per_op"`
	Rounds      []round `json:"rounds"`
	// Ratios of ops/s over all rounds (0: no baseline).
	VsPing   float64 `json:"ratio_vs_ping,omitempty"`
	VsBadger float64 `json:"ratio_vs_badger,omitempty"`

	samples   []time.Duration
	cpu       time.Duration
	serverCPU time.Duration
	faults    int64
}

// round is one measured slice of a workload.
type round struct {
	Ops     int64   `json:"ops"`
	Seconds float64 `json:"seconds"`
	OpsPerS float64 `json:"ops_per_sec"`
	StopBy  string  `json:"stopped_by"` // "time", "count" or "interrupt"
	VsPing  float64 `json:"ratio_vs_ping,omitempty"`
}

// totalCPU is the CPU time per operation of client and server: this
// process's, plus a separate server's when measured.
func (r *result) totalCPU() float64 { return r.CPUPerOpUS + r.ServerCPUPerOpUS }

// add merges one slice into r.
func (r *result) add(s slice) {
	r.samples = append(r.samples, s.samples...)
	r.Ops += int64(len(s.samples))
	r.Errors += s.errors
	if r.FirstErr == "" && s.firstErr != nil {
		r.FirstErr = s.firstErr.Error()
	}
	r.Seconds += s.elapsed.Seconds()
	r.cpu += s.cpu
	r.faults += s.faults
	r.serverCPU += s.serverCPU
	rd := round{Ops: int64(len(s.samples)), Seconds: s.elapsed.Seconds(), StopBy: s.stopBy}
	if rd.Seconds > 0 {
		rd.OpsPerS = float64(rd.Ops) / rd.Seconds
	}
	r.Rounds = append(r.Rounds, rd)
}

// finish computes throughput and percentiles over all rounds.
func (r *result) finish() {
	all := r.samples
	r.samples = nil
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	r.OpsPerS = float64(len(all)) / r.Seconds
	r.MeanUS = us(sum / time.Duration(len(all)))
	r.P50US = us(percentile(all, 50))
	r.P99US = us(percentile(all, 99))
	r.MaxUS = us(all[len(all)-1])
	r.CPUPerOpUS = us(r.cpu / time.Duration(len(all)))
	r.FaultsPerOp = float64(r.faults) / float64(len(all))
	r.ServerCPUPerOpUS = us(r.serverCPU / time.Duration(len(all)))
}

// slice is one measured run of a workload.
type slice struct {
	samples  []time.Duration // unsorted
	errors   int64
	firstErr error
	elapsed  time.Duration
	cpu      time.Duration
	faults   int64
	// serverCPU is the server process's CPU time (-server-pid; 0: not
	// measured).
	serverCPU time.Duration
	stopBy    string
}

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// runSlice drives clients workers, each calling its own op in a closed
// loop, for warmup (unmeasured) and then until duration has passed or
// maxOps measured operations have completed, whichever comes first. Every
// measured operation's latency is a time.Since sample appended to the
// worker's preallocated slice; the slices are merged at the end. An
// operation counts when it completes after the warmup; the elapsed time
// runs until the last of them has completed.
//
// With serverPID (a server in its own process, -uri), the slice also
// measures that process's CPU time.
func runSlice(ctx context.Context, name string, clients int, warmup, duration time.Duration, maxOps int64, ops []opFunc, serverPID int) slice {
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
	// Workers cannot do more than maxOps together; twice the fair share
	// leaves room for uneven scheduling without regrowing in the loop.
	perWorker := min(maxOps, 2*maxOps/int64(clients)+1024)
	samples := make([][]time.Duration, clients)
	for w := range clients {
		samples[w] = make([]time.Duration, 0, perWorker)
		wg.Add(1)
		go pprof.Do(ctx, pprof.Labels("side", "client", "workload", name), func(ctx context.Context) {
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
				// An operation counts when it completes after the warmup,
				// with its whole latency: a stall that began in the warmup
				// must show, not vanish.
				p = phase.Load()
				if err != nil {
					if nerr.Add(1) == 1 {
						errOnce.Do(func() { firstErr = err })
					}
					if ctx.Err() != nil {
						break
					}
					continue
				}
				if p != phaseWarmup {
					s = append(s, d)
					if measured.Add(1) >= maxOps {
						fullOnce.Do(func() { close(full) })
					}
				}
			}
			samples[w] = s
		})
	}
	close(start)
	select {
	case <-time.After(warmup):
	case <-ctx.Done():
	}
	cpu0, faults0 := usage()
	srv0 := processCPU(serverPID)
	measureStart := time.Now()
	phase.Store(phaseMeasure)
	stopBy := "time"
	timer := time.NewTimer(duration)
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
	cpu1, faults1 := usage()
	out := slice{elapsed: time.Since(measureStart), cpu: cpu1 - cpu0, serverCPU: processCPU(serverPID) - srv0, faults: faults1 - faults0, errors: nerr.Load(), firstErr: firstErr, stopBy: stopBy}
	n := 0
	for _, s := range samples {
		n += len(s)
	}
	out.samples = make([]time.Duration, 0, n)
	for _, s := range samples {
		out.samples = append(out.samples, s...)
	}
	return out
}

// percentile is the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100 // ceil(n*p/100)
	return sorted[max(i-1, 0)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// withCPUProfile runs fn while writing a CPU profile to path ("" runs fn
// only). Benchmark workers (and the driver's own goroutines) run under the
// pprof label side=client, so in an in-process run the server's share is
// what remains after `-tagignore side=client`.
func withCPUProfile(path string, fn func()) error {
	if path == "" {
		fn()
		return nil
	}
	f, err := os.Create(path)
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

// launchPhase starts a server for one phase with its data in a temporary
// directory of its own. stop stops it, removes the directory and reports
// a failure to stop in *err, unless *err already holds an error.
func launchPhase(name string, opts integration.ServerOptions) (*integration.Server, func(err *error), error) {
	dir, err := os.MkdirTemp("", "parsec-bench-"+name+"-")
	if err != nil {
		return nil, nil, err
	}
	opts.Dir = dir
	srv, err := integration.Launch(opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("start server: %w", err)
	}
	return srv, func(err *error) {
		if serr := srv.Stop(); serr != nil && *err == nil {
			*err = fmt.Errorf("stop server: %w", serr)
		}
		_ = os.RemoveAll(dir)
	}, nil
}

// ratioOf compares a with b (ops/s) over all rounds and round by round,
// and by CPU time per operation (b's over a's); 0 when either is missing.
func ratioOf(a, b *result) (ratio float64, perRound []float64, cpu float64) {
	if a == nil || b == nil || b.OpsPerS <= 0 {
		return 0, nil, 0
	}
	for i := range min(len(a.Rounds), len(b.Rounds)) {
		if b.Rounds[i].OpsPerS > 0 {
			perRound = append(perRound, a.Rounds[i].OpsPerS/b.Rounds[i].OpsPerS)
		}
	}
	if a.totalCPU() > 0 {
		cpu = b.totalCPU() / a.totalCPU()
	}
	return a.OpsPerS / b.OpsPerS, perRound, cpu
}

// perRound is g's ratio in each round, each formatted with verb (such as
// "%.2f"), separated by spaces.
func (g goal) perRound(verb string) string {
	s := make([]string, len(g.PerRound))
	for i, x := range g.PerRound {
		s[i] = fmt.Sprintf(verb, x)
	}
	return strings.Join(s, " ")
}

// judge fills g's ratio of a to b and its status against g.Min: n/a
// when either was not measured.
func (g goal) judge(a, b *result) goal {
	g.Status = "n/a"
	r, per, cpu := ratioOf(a, b)
	if r <= 0 {
		return g
	}
	g.Ratio, g.PerRound, g.CPURatio, g.Status = r, per, cpu, "FAIL"
	if r >= g.Min {
		g.Status = "PASS"
	}
	return g
}
