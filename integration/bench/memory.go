package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The memory section checks that --memory-limit bounds the server's
// anonymous memory under sustained writes: 8 writers insert docSize-byte
// documents for -memory-duration (3 minutes; at most memoryMaxDocs) into
// a `parsec serve` process of its own, sampling its resident memory from
// /proc/<pid>/status every memoryEvery: RssAnon (heap, memtables,
// caches) and RssFile (the memory-mapped data files, which the kernel
// reclaims). It runs twice: with --memory-limit memoryLimit, and with a
// limit so large it does not bind (memoryUnbound).
//
// Goals: the limited run's anonymous memory stays at or under the limit
// at every sample, and its insert rate is at least memoryRateGoal times
// the unbound run's.
//
//	go run ./integration/bench -only memory -memory-duration 60s

var memoryDuration = flag.Duration("memory-duration", 3*time.Minute, "how long each run of the memory section inserts")

const (
	memoryWorkload = "memory"
	memoryLimit    = 1 << 30
	memoryUnbound  = 64 << 30
	memoryWriters  = 8
	memoryMaxDocs  = 20_000_000
	memoryEvery    = 5 * time.Second
	memoryRateGoal = 0.9
)

// memoryRun is one run's samples and insert rate.
type memoryRun struct {
	Limit   int64          `json:"memory_limit"`
	Inserts int64          `json:"inserts"`
	Seconds float64        `json:"seconds"`
	Rate    float64        `json:"inserts_per_second"`
	MaxAnon int64          `json:"max_rss_anon"`
	Samples []memorySample `json:"samples"`
}

type memorySample struct {
	Seconds float64 `json:"seconds"`
	Anon    int64   `json:"rss_anon"`
	File    int64   `json:"rss_file"`
	RSS     int64   `json:"vm_rss"`
	Inserts int64   `json:"inserts"`
}

// memoryPhase runs the section (memoryGoals judges it).
func memoryPhase(ctx context.Context, rep *report) error {
	bin, err := buildParsec()
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(bin))
	var runs []*memoryRun
	for _, limit := range []int64{memoryLimit, memoryUnbound} {
		progress("memory: %v of inserts with --memory-limit %d MiB", *memoryDuration, limit>>20)
		r, err := memoryLoad(ctx, bin, limit)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	rep.Memory = runs
	printMemory(os.Stdout, runs)
	return nil
}

// memoryGoals judges the memory section's runs, after the report's goals
// were set.
func memoryGoals(rep *report) {
	if len(rep.Memory) != 2 {
		return
	}
	lim, unb := rep.Memory[0], rep.Memory[1]
	g := goal{Name: fmt.Sprintf("memory: RssAnon <= --memory-limit (%d MiB) at every sample", lim.Limit>>20), Workload: memoryWorkload, Max: 1, Status: "FAIL"}
	g.Ratio = float64(lim.MaxAnon) / float64(lim.Limit)
	if lim.MaxAnon <= lim.Limit && len(lim.Samples) > 0 {
		g.Status = "PASS"
	}
	rep.Goals = append(rep.Goals, g)
	g = goal{Name: fmt.Sprintf("memory: insert rate with the limit >= %.1f x without", memoryRateGoal), Workload: memoryWorkload, Clients: memoryWriters, Min: memoryRateGoal, Status: "FAIL"}
	if unb.Rate > 0 {
		g.Ratio = lim.Rate / unb.Rate
		if g.Ratio >= memoryRateGoal {
			g.Status = "PASS"
		}
	}
	rep.Goals = append(rep.Goals, g)
}

// buildParsec builds the server into a temporary directory.
func buildParsec() (string, error) {
	dir, err := os.MkdirTemp("", "parsec-bench-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "parsec")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/parsecdb/parsec").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

var memoryAddrRE = regexp.MustCompile(`address=(127\.0\.0\.1:\d+)`)

// memoryLoad starts a server with limit, inserts into it and samples it.
func memoryLoad(ctx context.Context, bin string, limit int64) (*memoryRun, error) {
	dataDir, err := os.MkdirTemp("", "parsec-bench-memory-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--memory-limit", strconv.FormatInt(limit, 10))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := memoryAddrRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var uri string
	select {
	case a := <-addr:
		uri = "mongodb://" + a + "/"
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("memory: the server did not start")
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMaxPoolSize(memoryWriters * 2))
	if err != nil {
		return nil, err
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	coll := client.Database("bench").Collection("memory")

	run := &memoryRun{Limit: limit}
	lctx, cancel := context.WithTimeout(ctx, *memoryDuration)
	defer cancel()
	var inserted atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	pad := strings.Repeat("m", docSize-60)
	start := time.Now()
	for w := range memoryWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < memoryMaxDocs && lctx.Err() == nil; i += memoryWriters {
				_, err := coll.InsertOne(lctx, bson.D{{Key: "_id", Value: int64(i)}, {Key: "w", Value: int32(w)}, {Key: "pad", Value: pad}})
				if err != nil {
					// The driver refuses to send an insert the deadline
					// would cut short: that is the end of the run.
					if lctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
						errOnce.Do(func() { firstErr = err; cancel() })
					}
					return
				}
				inserted.Add(1)
			}
		}()
	}
	sample := func() {
		s, ok := procStatus(cmd.Process.Pid)
		if !ok {
			return
		}
		s.Seconds, s.Inserts = time.Since(start).Seconds(), inserted.Load()
		run.Samples = append(run.Samples, s)
		run.MaxAnon = max(run.MaxAnon, s.Anon)
	}
	tick := time.NewTicker(memoryEvery)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for {
		select {
		case <-tick.C:
			sample()
		case <-done:
			break loop
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	sample()
	if firstErr != nil {
		return nil, fmt.Errorf("memory: insert: %w", firstErr)
	}
	run.Inserts, run.Seconds = inserted.Load(), elapsed.Seconds()
	run.Rate = float64(run.Inserts) / elapsed.Seconds()
	return run, nil
}

// procStatus reads a process's RssAnon, RssFile and VmRSS in bytes.
func procStatus(pid int) (memorySample, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memorySample{}, false
	}
	var s memorySample
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "RssAnon":
			s.Anon = n << 10
		case "RssFile":
			s.File = n << 10
		case "VmRSS":
			s.RSS = n << 10
		}
	}
	return s, s.RSS > 0
}

func printMemory(w io.Writer, runs []*memoryRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nmemory: %d writers inserting %d-byte documents, /proc/<pid>/status every %v (MiB)\n", memoryWriters, docSize, memoryEvery)
	for _, r := range runs {
		fmt.Fprintf(tw, "limit %d MiB\tseconds\tinserts\tRssAnon\tRssFile\tVmRSS\t\n", r.Limit>>20)
		for _, s := range r.Samples {
			fmt.Fprintf(tw, "\t%.0f\t%d\t%d\t%d\t%d\t\n", s.Seconds, s.Inserts, s.Anon>>20, s.File>>20, s.RSS>>20)
		}
		fmt.Fprintf(tw, "\t%.0f s\t%d\t%.0f/s\tmax anon %d\t\t\n", r.Seconds, r.Inserts, r.Rate, r.MaxAnon>>20)
	}
	_ = tw.Flush()
}
