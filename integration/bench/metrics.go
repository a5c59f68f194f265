package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/console"
	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The metrics workloads measure what serving /metrics costs a point read
// under full load: one server with its HTTP console, a sharded collection
// (4 physical partitions, 1,000 logical partitions, 10,000 documents of
// 1 KB), and point reads by shard key and _id, in two workloads
// interleaved in rounds:
//
//	metricsUnscraped  nobody reads /metrics
//	metricsScraped    a scraper GETs /metrics every second, as Prometheus
//	                  would, while (and only while) this workload runs
//
// Goal: metricsScraped >= 0.98 x metricsUnscraped (scraping costs at most
// 2% of point-read throughput).
var metricsWorkloads = []string{"metricsUnscraped", "metricsScraped"}

const (
	metricsDocs      = 10_000
	metricsKeys      = 1_000
	metricsGoal      = 0.98
	metricsCollction = "scraped"
	metricsEvery     = time.Second
)

func metricsPhase(ctx context.Context, cfg config, rep *report, want func(string) bool) (err error) {
	srv, stop, err := launchPhase("metrics", integration.ServerOptions{})
	if err != nil {
		return err
	}
	defer stop(&err)
	con, err := srv.LaunchConsole(console.Options{})
	if err != nil {
		return err
	}
	defer con.Stop()
	mcs, err := connect(cfg.ClientMode, srv.URI(), max(slicesMax(cfg.Clients), 1))
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range mcs {
			_ = c.Disconnect(context.Background())
		}
	}()
	db := mcs[0].Database("bench")
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: metricsCollction},
		{Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 40_000}}).Err(); err != nil {
		return fmt.Errorf("metrics: create the collection: %w", err)
	}
	progress("metrics: preloading %d documents over %d shard-key values", metricsDocs, metricsKeys)
	pad := strings.Repeat("x", 1000)
	for i := 0; i < metricsDocs; i += 1000 {
		docs := make([]any, 0, 1000)
		for j := i; j < min(i+1000, metricsDocs); j++ {
			docs = append(docs, bson.D{{Key: "_id", Value: int64(j)}, {Key: "k", Value: int64(j % metricsKeys)}, {Key: "pad", Value: pad}})
		}
		if _, err := db.Collection(metricsCollction).InsertMany(ctx, docs); err != nil {
			return fmt.Errorf("metrics: preload: %w", err)
		}
	}

	// The scraper reads /metrics every second while metricsScraped runs
	// (its operations stamp active).
	var active atomic.Int64
	var scrapes, scrapeBytes atomic.Int64
	var scrapeTime atomic.Int64
	sctx, stopScraper := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopScraper(); wg.Wait() }()
	wg.Add(1)
	var scrapeErr atomic.Value
	go func() {
		defer wg.Done()
		hc := &http.Client{Timeout: 10 * time.Second}
		t := time.NewTicker(metricsEvery)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
			if time.Since(time.Unix(0, active.Load())) > 200*time.Millisecond {
				continue
			}
			start := time.Now()
			n, err := scrape(sctx, hc, con.URL+"/metrics")
			if err != nil {
				if sctx.Err() == nil {
					scrapeErr.Store(err)
				}
				continue
			}
			scrapes.Add(1)
			scrapeBytes.Add(n)
			scrapeTime.Add(int64(time.Since(start)))
		}
	}()

	coll := func(w int) *mongo.Collection { return mcs[w%len(mcs)].Database("bench").Collection(metricsCollction) }
	err = runPhase(ctx, cfg, rep, want, []workload{
		{"metricsUnscraped", "server-metrics", func(w int) opFunc { return metricsPointOp(coll(w), uint64(w)+31, nil) }},
		{"metricsScraped", "server-metrics", func(w int) opFunc { return metricsPointOp(coll(w), uint64(w)+31, &active) }},
	})
	if err != nil {
		return err
	}
	if e, ok := scrapeErr.Load().(error); ok {
		return fmt.Errorf("metrics: scraping /metrics: %w", e)
	}
	if n := scrapes.Load(); n > 0 {
		progress("metrics: %d scrapes of %d bytes on average, %.1f ms each", n, scrapeBytes.Load()/n, float64(scrapeTime.Load())/float64(n)/1e6)
		rep.Metrics = &metricsReport{Scrapes: n, Bytes: scrapeBytes.Load() / n, MeanMS: float64(scrapeTime.Load()) / float64(n) / 1e6}
	} else if want("metricsScraped") {
		return fmt.Errorf("metrics: no scrape happened while metricsScraped ran")
	}
	return nil
}

// metricsReport is what the scraper saw.
type metricsReport struct {
	Scrapes int64   `json:"scrapes"`
	Bytes   int64   `json:"bytes_per_scrape"`
	MeanMS  float64 `json:"mean_ms_per_scrape"`
}

// scrape reads url to the end and returns how many bytes it had.
func scrape(ctx context.Context, hc *http.Client, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return n, err
}

// metricsPointOp reads one preloaded document by shard key and _id; when
// active is set it stamps it, so the scraper knows the load runs.
func metricsPointOp(coll *mongo.Collection, seed uint64, active *atomic.Int64) opFunc {
	x := seed*0x9E3779B97F4A7C15 + 1
	return func(ctx context.Context) error {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		id := int64(x % metricsDocs)
		if active != nil {
			active.Store(time.Now().UnixNano())
		}
		raw, err := coll.FindOne(ctx, bson.D{{Key: "k", Value: id % metricsKeys}, {Key: "_id", Value: id}}).Raw()
		if err != nil {
			return err
		}
		if len(raw) < 1000 {
			return fmt.Errorf("point read %d: %d bytes", id, len(raw))
		}
		return nil
	}
}

// metricsGoals adds the scraping goal.
func metricsGoals(rep *report) {
	clients := 16
	if rep.find("metricsUnscraped", clients) == nil {
		clients = 1
	}
	base, r := rep.find("metricsUnscraped", clients), rep.find("metricsScraped", clients)
	if base == nil || r == nil {
		return
	}
	g := goal{Name: fmt.Sprintf("metricsScraped@%d >= %.2f x metricsUnscraped@%d", clients, metricsGoal, clients), Workload: "metricsScraped", Clients: clients, Min: metricsGoal}
	rep.Goals = append(rep.Goals, g.judge(r, base))
}

func printMetricsSummary(w io.Writer, rep *report) {
	for _, g := range rep.Goals {
		if g.Workload != "metricsScraped" {
			continue
		}
		fmt.Fprintf(w, "metrics: %s: %.3f (rounds: %s; from cpu/op: %.3f) %s\n", g.Name, g.Ratio, g.perRound("%.3f"), g.CPURatio, g.Status)
	}
	if m := rep.Metrics; m != nil {
		fmt.Fprintf(w, "metrics: %d scrapes of /metrics, %d bytes and %.1f ms each\n", m.Scrapes, m.Bytes, m.MeanMS)
	}
}
