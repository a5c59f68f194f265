package main

import (
	"context"
	"fmt"
	"time"

	"github.com/parsecdb/parsec/engine/store"
)

// docRun is a workload measured in documents: one call of fn is one pass
// (a collection scan, an aggregation) and returns the documents it
// handled.
type docRun struct {
	name, kind string
	fn         func() (int64, error)
}

// runDocRounds measures runs as runPhase measures operations, in
// documents per second: one warm-up pass of each (page cache, Badger's
// tables), then cfg.Duration split into cfg.Rounds rounds that interleave
// the wanted runs. It returns every run's result by name, with its rate
// and CPU per document filled in; a run that was not wanted has no Ops.
func runDocRounds(ctx context.Context, cfg config, want func(string) bool, runs []docRun) (map[string]*result, error) {
	res := map[string]*result{}
	for _, r := range runs {
		res[r.name] = &result{Workload: r.name, Kind: r.kind, Clients: 1}
		if _, err := r.fn(); err != nil {
			return nil, err
		}
	}
	share := cfg.Duration / time.Duration(cfg.Rounds)
	for rd := range cfg.Rounds {
		for _, r := range runs {
			if !want(r.name) || ctx.Err() != nil {
				continue
			}
			var docs int64
			var err error
			cpu0, start := cpuTime(), time.Now()
			perr := withCPUProfile(profilePath(cfg.CPUProfile, r.name, 1), func() {
				for time.Since(start) < share || docs == 0 {
					var n int64
					if n, err = r.fn(); err != nil {
						return
					}
					docs += n
				}
			})
			if err == nil {
				err = perr
			}
			if err != nil {
				return nil, err
			}
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			out := res[r.name]
			out.Ops += docs
			out.Seconds += elapsed.Seconds()
			out.cpu += cpu
			out.Rounds = append(out.Rounds, round{Ops: docs, Seconds: elapsed.Seconds(), OpsPerS: float64(docs) / elapsed.Seconds(), StopBy: "time"})
			progress("%-15s round %d/%d  %9d docs in %.2fs  %10.0f docs/s  %.2f cores", r.name, rd+1, cfg.Rounds, docs, elapsed.Seconds(),
				float64(docs)/elapsed.Seconds(), cpu.Seconds()/elapsed.Seconds())
		}
	}
	for _, out := range res {
		if out.Ops > 0 {
			out.OpsPerS = float64(out.Ops) / out.Seconds
			out.CPUPerOpUS = us(out.cpu / time.Duration(out.Ops))
		}
	}
	return res, nil
}

// storeScanOnce is the raw-store baseline of a collection scan: one View
// transaction visiting every document of c and touching its value, as
// matching or grouping must. It fails unless it visits want documents.
func storeScanOnce(st *store.Store, c *store.Collection, name string, want int64) func() (int64, error) {
	return func() (int64, error) {
		var n int64
		var sum byte
		err := st.View(func(tx *store.Txn) error {
			return tx.Scan(c, nil, func(_, doc []byte) (bool, error) {
				n++
				sum += doc[len(doc)/2]
				return true, nil
			})
		})
		_ = sum
		if err == nil && n != want {
			err = fmt.Errorf("%s visited %d documents, want %d", name, n, want)
		}
		return n, err
	}
}
