package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The reshard section measures reshardCollection (online resharding) on
// reshardDocs documents of about 200 bytes, sharded by {tenant:
// "hashed"}. A million, because what a copy costs grows with the data
// around it: at 200,000 documents the copy met its goals while at a
// million it ran at half the rate and the foreground at 0.3 x (Badger's
// compactions, and a read transaction held open for the whole copy).
// The section takes about 12 minutes on two cores:
//
//	copy rate     reshardCollection to {k: 1} with nothing else running:
//	              documents copied per second of the copy (from the
//	              command's start until $currentOp's recipientState
//	              leaves "cloning"); goal >= reshardCopyGoal docs/s
//	foreground    reshardWorkers clients, half doing insertOne, half point reads
//	              (findOne by the full shard key of any layout) for
//	              reshardBefore, then the same load while reshardCollection
//	              to {g: "hashed"} copies; goal: ops/s during the copy >=
//	              reshardForegroundGoal x before. The load pauses by
//	              itself, copy or not: every 25-30 s Badger compacts level
//	              0 into the base level (a rewrite of all of it, the keys
//	              being scattered), and for 2-7 s its builder goroutines
//	              (up to 13 a compaction) leave the requests' goroutines
//	              few turns. Per-second rates over 150 s of the load alone:
//	              mean 18,112 ops/s, median 20,907, 9 seconds under a
//	              tenth of it; a 3 s window saw 20,894 at the median, a 30
//	              s one 18,340. So "before" is 30 s, and the section
//	              counts the seconds under a tenth of the before rate in
//	              both windows.
//
//	switch        writers paced at reshardSwitchRate writes/s in all (inserts
//	              and updates by the full shard key) while reshardCollection
//	              to {tenant: "hashed"} runs start to end: the longest a
//	              write took (the critical section blocks writes; MongoDB
//	              bounds it at 2 s) and the rate reached; goal: longest
//	              write <= reshardSwitchGoal
//
//	badger alone  the same number of documents of the same size, each
//	              with two index entries, written straight into a Badger
//	              of its own in scattered key order (the copy's floor)
//
//	go run ./integration/bench -only reshard
//	go run ./integration/bench -only '^reshard$' -cpuprofile /tmp/cpu.pprof   # /tmp/cpu.reshard-copy-0.pprof: the copy alone (reshard-before-0, reshard-during-0: the load)
const (
	reshardWorkload       = "reshard"
	reshardDocs           = 1_000_000
	reshardWorkers        = 8
	reshardBefore         = 30 * time.Second
	reshardCopyGoal       = 50_000.0
	reshardForegroundGoal = 0.6
	reshardSwitchRate     = 1000
	reshardSwitchGoal     = 2 * time.Second
)

// reshardReport is the section's figures.
type reshardReport struct {
	Documents    int64   `json:"documents"`
	CopySeconds  float64 `json:"copy_seconds"`
	CopyDocsPerS float64 `json:"copy_docs_per_s"`
	// BadgerAloneDocsPerS is Badger alone taking in the copy's writes
	// (badgerIngest), measured in the same run.
	BadgerAloneDocsPerS float64 `json:"badger_alone_docs_per_s"`
	CommandSeconds      float64 `json:"command_seconds"`
	ForegroundBefore    float64 `json:"foreground_ops_per_s_before"`
	ForegroundDuring    float64 `json:"foreground_ops_per_s_during_copy"`
	ForegroundRatio     float64 `json:"foreground_ratio"`
	// Seconds of each window in which the load ran at under a tenth of
	// the before rate.
	SlowSecondsBefore int     `json:"foreground_slow_seconds_before"`
	SlowSecondsDuring int     `json:"foreground_slow_seconds_during_copy"`
	LoadedCopySeconds float64 `json:"copy_seconds_under_load"`
	// LoadedCopied is what that copy copied, of LoadedToCopy documents
	// at its start.
	LoadedCopied int64 `json:"copied_under_load"`
	LoadedToCopy int64 `json:"to_copy_under_load"`
	// The switch: the longest write and the 99th percentile while a
	// resharding ran under SwitchRate paced writes a second (the rate
	// reached), and how long that resharding took.
	SwitchLongestMS float64 `json:"switch_longest_write_ms"`
	SwitchP99MS     float64 `json:"switch_p99_write_ms"`
	SwitchRate      float64 `json:"switch_writes_per_s"`
	SwitchSeconds   float64 `json:"switch_reshard_seconds"`
}

func reshardPhase(ctx context.Context, cfg config, rep *report) (err error) {
	srv, stop, err := launchPhase("reshard", integration.ServerOptions{})
	if err != nil {
		return err
	}
	defer stop(&err)
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()).SetMaxPoolSize(40)) // the switch's 32 writers, the load's 8, the polls
	if err != nil {
		return err
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	admin := client.Database("admin")
	coll := client.Database("bench").Collection("reshard")
	if err := admin.RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "bench.reshard"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}}).Err(); err != nil {
		return err
	}
	progress("reshard: loading %d documents", reshardDocs)
	pad := strings.Repeat("x", 150)
	doc := func(i int64) bson.D {
		return bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: i % 1000}, {Key: "k", Value: i}, {Key: "g", Value: i % 5000}, {Key: "pad", Value: pad}}
	}
	batch := make([]any, 0, 1000)
	for i := range int64(reshardDocs) {
		batch = append(batch, doc(i))
		if len(batch) == cap(batch) {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	out := &reshardReport{Documents: reshardDocs}

	// The copy rate, alone (with -cpuprofile, profiled from the command's
	// start to the copy's end).
	profile, err := startCPUProfile(profilePath(cfg.CPUProfile, "reshard-copy", 0))
	if err != nil {
		return err
	}
	copySecs, cmdSecs, _, _, err := timeReshard(ctx, client, bson.D{{Key: "k", Value: 1}}, func(start bool) {
		if !start {
			profile()
		}
	})
	profile()
	if err != nil {
		return err
	}
	out.CopySeconds, out.CommandSeconds = copySecs, cmdSecs
	out.CopyDocsPerS = float64(reshardDocs) / copySecs
	progress("reshard: copied %d documents in %.2f s (%.0f docs/s); the command took %.2f s", reshardDocs, copySecs, out.CopyDocsPerS, cmdSecs)
	// What Badger alone takes in: the same number of documents of the
	// same size, each with its _id and shard key index entries, in the
	// scattered order a copy into another key writes them.
	alone, err := badgerIngest(ingestShape{docs: reshardDocs, docBytes: 230, extra: 2, extraBytes: 16, scattered: true})
	if err != nil {
		return err
	}
	out.BadgerAloneDocsPerS = float64(reshardDocs) / alone.Seconds()
	progress("reshard: Badger alone takes in the same documents with two index entries each at %.0f docs/s (the copy: %.2f x that)", out.BadgerAloneDocsPerS, out.CopyDocsPerS/out.BadgerAloneDocsPerS)

	// Foreground inserts and point reads, before and during a copy.
	var ops, reads atomic.Int64
	var next atomic.Int64
	next.Store(1 << 40)
	fctx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var loadErr atomic.Value
	for w := range reshardWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for i := 0; fctx.Err() == nil; i++ {
				var err error
				if w%2 == 0 {
					_, err = coll.InsertOne(fctx, doc(next.Add(1)))
				} else {
					id := rng.Int63n(reshardDocs)
					err = coll.FindOne(fctx, bson.D{{Key: "tenant", Value: id % 1000}, {Key: "k", Value: id}, {Key: "g", Value: id % 5000}, {Key: "_id", Value: id}}).Err()
				}
				if err != nil {
					if fctx.Err() == nil {
						loadErr.CompareAndSwap(nil, err)
					}
					return
				}
				ops.Add(1)
				if w%2 == 1 {
					reads.Add(1)
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // warm up
	perSecond := samplePerSecond(fctx, &ops)
	// With -cpuprofile the load before and during the copy are profiled
	// too (reshard-before, reshard-during).
	profile, err = startCPUProfile(profilePath(cfg.CPUProfile, "reshard-before", 0))
	if err != nil {
		stopLoad()
		wg.Wait()
		return err
	}
	n0, r0, t0 := ops.Load(), reads.Load(), time.Now()
	beforeFrom := perSecond.mark()
	time.Sleep(reshardBefore)
	profile()
	beforeTo := perSecond.mark()
	secs := time.Since(t0).Seconds()
	out.ForegroundBefore = float64(ops.Load()-n0) / secs
	readsBefore := float64(reads.Load()-r0) / secs
	var during, readsDuring float64
	var duringFrom, duringTo int
	loadedCopy, _, loadedCopied, loadedToCopy, err := timeReshard(ctx, client, bson.D{{Key: "g", Value: "hashed"}}, func(start bool) {
		if start {
			n0, r0, t0 = ops.Load(), reads.Load(), time.Now()
			duringFrom = perSecond.mark()
			if stop, perr := startCPUProfile(profilePath(cfg.CPUProfile, "reshard-during", 0)); perr == nil {
				profile = stop
			}
		} else {
			profile()
			duringTo = perSecond.mark()
			secs := time.Since(t0).Seconds()
			during = float64(ops.Load()-n0) / secs
			readsDuring = float64(reads.Load()-r0) / secs
		}
	})
	profile() // (the command may fail before it ends the profile)
	stopLoad()
	wg.Wait()
	if err != nil {
		return err
	}
	if e, ok := loadErr.Load().(error); ok {
		return fmt.Errorf("reshard: foreground load: %w", e)
	}
	out.LoadedCopySeconds, out.ForegroundDuring = loadedCopy, during
	out.LoadedCopied, out.LoadedToCopy = loadedCopied, loadedToCopy
	if out.ForegroundBefore > 0 {
		out.ForegroundRatio = during / out.ForegroundBefore
	}
	slow := int64(out.ForegroundBefore / 10)
	out.SlowSecondsBefore = perSecond.under(beforeFrom, beforeTo, slow)
	out.SlowSecondsDuring = perSecond.under(duringFrom, duringTo, slow)
	progress("reshard: foreground %.0f ops/s before (%.0f point reads), %.0f during the copy (%.0f point reads): %.2f x; that copy took %.2f s and copied %d documents of the %d there were when it began; seconds under %d ops: %d of %d before, %d of %d during",
		out.ForegroundBefore, readsBefore, during, readsDuring, out.ForegroundRatio, loadedCopy, loadedCopied, loadedToCopy,
		slow, out.SlowSecondsBefore, beforeTo-beforeFrom, out.SlowSecondsDuring, duringTo-duringFrom)
	if err := reshardSwitch(ctx, client, doc, out); err != nil {
		return err
	}
	rep.Reshard = out
	return nil
}

// reshardSwitch reshards bench.reshard to {tenant: "hashed"} while
// 32 writers write at reshardSwitchRate a second in all, and
// records how long each write took.
func reshardSwitch(ctx context.Context, client *mongo.Client, doc func(int64) bson.D, out *reshardReport) error {
	// Each writer's pace leaves room for a write of 32 ms (the bench's
	// p99 is 50 ms), so slow writes do not drop the rate far below the
	// goal's.
	const writers = 32
	coll := client.Database("bench").Collection("reshard")
	wctx, stopWrites := context.WithCancel(ctx)
	defer stopWrites()
	var wg sync.WaitGroup
	lat := make([][]time.Duration, writers)
	errs := make([]error, writers)
	var next atomic.Int64
	next.Store(1 << 41)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pace := time.NewTicker(time.Second * writers / reshardSwitchRate)
			defer pace.Stop()
			rng := rand.New(rand.NewSource(int64(100 + w)))
			for i := 0; ; i++ {
				select {
				case <-wctx.Done():
					return
				case <-pace.C:
				}
				start := time.Now()
				var err error
				if i%2 == 0 {
					_, err = coll.InsertOne(wctx, doc(next.Add(1)))
				} else {
					id := rng.Int63n(reshardDocs)
					_, err = coll.UpdateOne(wctx, bson.D{{Key: "tenant", Value: id % 1000}, {Key: "k", Value: id}, {Key: "g", Value: id % 5000}, {Key: "_id", Value: id}},
						bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				}
				if err != nil {
					if wctx.Err() == nil {
						errs[w] = err
					}
					return
				}
				lat[w] = append(lat[w], time.Since(start))
			}
		}()
	}
	time.Sleep(time.Second) // the writers reach their pace
	start := time.Now()
	_, cmdSecs, _, _, err := timeReshard(ctx, client, bson.D{{Key: "tenant", Value: "hashed"}}, nil)
	took := time.Since(start)
	time.Sleep(500 * time.Millisecond) // writes the switch held back end
	stopWrites()
	wg.Wait()
	if err != nil {
		return err
	}
	var all []time.Duration
	for w := range writers {
		if errs[w] != nil {
			return fmt.Errorf("reshard: paced writes: %w", errs[w])
		}
		all = append(all, lat[w]...)
	}
	if len(all) == 0 {
		return fmt.Errorf("reshard: no paced write was acknowledged")
	}
	slices.Sort(all)
	out.SwitchLongestMS = float64(all[len(all)-1]) / 1e6
	out.SwitchP99MS = float64(all[len(all)*99/100]) / 1e6
	out.SwitchRate = float64(len(all)) / (took + 1500*time.Millisecond).Seconds()
	out.SwitchSeconds = cmdSecs
	progress("reshard: under %.0f paced writes/s (%d writes), a resharding took %.2f s; the longest write %.0f ms, p99 %.1f ms",
		out.SwitchRate, len(all), cmdSecs, out.SwitchLongestMS, out.SwitchP99MS)
	return nil
}

// startCPUProfile starts a CPU profile written to path ("": none) and
// returns the function that stops it (later calls do nothing).
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		})
	}, nil
}

// timeReshard runs reshardCollection of bench.reshard to key and returns
// how long the copy took (until $currentOp's recipientState left
// "cloning") and the whole command; mark is called when the command is
// sent and when the copy ends.
func timeReshard(ctx context.Context, client *mongo.Client, key bson.D, mark func(start bool)) (copySecs, cmdSecs float64, copied, toCopy int64, err error) {
	done := make(chan error, 1)
	start := time.Now()
	if mark != nil {
		mark(true)
	}
	go func() {
		done <- client.Database("admin").RunCommand(ctx, bson.D{{Key: "reshardCollection", Value: "bench.reshard"}, {Key: "key", Value: key}}).Err()
	}()
	var copyEnd time.Time
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case err := <-done:
			end := time.Now()
			if err != nil {
				return 0, 0, 0, 0, fmt.Errorf("reshardCollection: %w", err)
			}
			if copyEnd.IsZero() {
				copyEnd = end
				if mark != nil {
					mark(false)
				}
			}
			return copyEnd.Sub(start).Seconds(), end.Sub(start).Seconds(), copied, toCopy, nil
		case <-poll.C:
			if !copyEnd.IsZero() {
				continue
			}
			var reply bson.Raw
			err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: "bench.reshard"}, {Key: "recipientState", Value: bson.D{{Key: "$exists", Value: true}}}}).Decode(&reply)
			if err != nil {
				continue
			}
			ops, _ := reply.Lookup("inprog").Array().Values()
			if len(ops) == 0 {
				continue
			}
			op := ops[0].Document()
			if n, ok := op.Lookup("documentsCopied").AsInt64OK(); ok {
				copied = n
			}
			if n, ok := op.Lookup("approxDocumentsToCopy").AsInt64OK(); ok {
				toCopy = n
			}
			if op.Lookup("recipientState").StringValue() != "cloning" {
				copyEnd = time.Now()
				if mark != nil {
					mark(false)
				}
			}
		}
	}
}

// reshardGoals judges the section.
func reshardGoals(rep *report) {
	r := rep.Reshard
	if r == nil {
		return
	}
	g := goal{Name: fmt.Sprintf("reshard: copy >= %.0f docs/s (ratio to it)", reshardCopyGoal), Workload: reshardWorkload, Min: 1, Ratio: r.CopyDocsPerS / reshardCopyGoal}
	rep.Goals = append(rep.Goals, atLeast(g))
	g = goal{Name: fmt.Sprintf("reshard: foreground ops during the copy >= %.1f x before", reshardForegroundGoal), Workload: reshardWorkload, Clients: reshardWorkers, Min: reshardForegroundGoal, Ratio: r.ForegroundRatio}
	rep.Goals = append(rep.Goals, atLeast(g))
	if r.SwitchLongestMS > 0 {
		// As a ratio: the bound over the longest write, at least 1.
		g = goal{Name: fmt.Sprintf("reshard: longest write at %d writes/s <= %v (bound / longest)", reshardSwitchRate, reshardSwitchGoal), Workload: reshardWorkload, Min: 1,
			Ratio: float64(reshardSwitchGoal/time.Millisecond) / r.SwitchLongestMS}
		rep.Goals = append(rep.Goals, atLeast(g))
	}
}

// perSecondOps are the operations counted in each second since a
// sampler started.
type perSecondOps struct {
	mu   sync.Mutex
	secs []int64
}

// samplePerSecond counts what n grows by in each second until ctx ends.
func samplePerSecond(ctx context.Context, n *atomic.Int64) *perSecondOps {
	p := &perSecondOps{}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := n.Load()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := n.Load()
			p.mu.Lock()
			p.secs = append(p.secs, now-last)
			p.mu.Unlock()
			last = now
		}
	}()
	return p
}

// mark is the number of whole seconds counted so far.
func (p *perSecondOps) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.secs)
}

// under counts the seconds from..to (marks) with fewer than least
// operations.
func (p *perSecondOps) under(from, to int, least int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ops := range p.secs[from:to] {
		if ops < least {
			n++
		}
	}
	return n
}
