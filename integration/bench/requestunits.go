package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The request-unit workloads measure what request-unit accounting and
// rate limiting cost a point read (findOne {_id} of a 1 KB document), in
// the same run, interleaved in rounds, on three servers of their own
// holding the same documents:
//
//	ruBypass   accounting bypassed (serve --ru-accounting=false): the baseline
//	ruCharged  accounting on, throttling off (the default)
//	ruLimited  accounting and --rate-limiting on, with a budget of
//	           1,000,000 RU/s, which no point-read load here reaches
//
// Goals: accounting, and accounting and limiting together, cost less than
// 5%: ruCharged and ruLimited >= 0.95 x ruBypass. An error (a throttled
// read) fails the run.
var ruWorkloads = []string{"ruBypass", "ruCharged", "ruLimited"}

const (
	ruDocs       = 10_000
	ruGoal       = 0.95
	ruBigBudget  = 1_000_000
	ruCollection = "points"
)

func ruPhase(ctx context.Context, cfg config, rep *report, want func(string) bool, tmpl template) (err error) {
	type server struct {
		name string
		opts engine.RequestUnitOptions
		mcs  []*mongo.Client
	}
	servers := []*server{
		{name: "ruBypass", opts: engine.RequestUnitOptions{Bypass: true}},
		{name: "ruCharged"},
		{name: "ruLimited", opts: engine.RequestUnitOptions{RateLimiting: true}},
	}
	var clients []*mongo.Client
	defer func() {
		for _, c := range clients {
			_ = c.Disconnect(context.Background())
		}
	}()
	for _, s := range servers {
		if !want(s.name) {
			continue
		}
		// One partition may hold the whole budget.
		srv, stop, err := launchPhase("ru", integration.ServerOptions{RequestUnits: s.opts,
			Partitions: engine.PartitionLimits{MaxRUs: ruBigBudget}})
		if err != nil {
			return err
		}
		defer stop(&err)
		mcs, err := connect(cfg.ClientMode, srv.URI(), max(slicesMax(cfg.Clients), 1))
		if err != nil {
			return err
		}
		clients = append(clients, mcs...)
		s.mcs = mcs
		db := mcs[0].Database("bench")
		if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: ruCollection},
			{Key: "offerThroughput", Value: ruBigBudget}}).Err(); err != nil {
			return fmt.Errorf("%s: create the collection: %w", s.name, err)
		}
		progress("request units: preloading %d documents of %d bytes for %s", ruDocs, docSize, s.name)
		for i := int64(0); i < ruDocs; i += 1000 {
			docs := make([]any, 0, 1000)
			for j := i; j < min(i+1000, ruDocs); j++ {
				docs = append(docs, bson.Raw(tmpl.withIntID(j)))
			}
			if _, err := db.Collection(ruCollection).InsertMany(ctx, docs); err != nil {
				return fmt.Errorf("%s: preload: %w", s.name, err)
			}
		}
	}
	var workloads []workload
	for _, s := range servers {
		if s.mcs == nil {
			continue
		}
		workloads = append(workloads, workload{s.name, "server-ru", func(w int) opFunc {
			return ruPointOp(s.mcs[w%len(s.mcs)].Database("bench").Collection(ruCollection), uint64(w)+11)
		}})
	}
	return runPhase(ctx, cfg, rep, want, workloads)
}

// ruPointOp reads one preloaded document by _id, uniformly at random.
func ruPointOp(coll *mongo.Collection, seed uint64) opFunc {
	rng := rand.New(rand.NewPCG(seed, 0x7275))
	buf := make([]byte, 0, 32)
	return func(ctx context.Context) error {
		id := rng.Int64N(ruDocs)
		buf = idFilter(buf, id)
		raw, err := coll.FindOne(ctx, bson.Raw(buf)).Raw()
		if err != nil {
			return err
		}
		if len(raw) != docSize {
			return fmt.Errorf("point read %d: got %d bytes, want %d", id, len(raw), docSize)
		}
		return nil
	}
}

// ruGoals adds the accounting goals (after ratios, which rebuilds the
// ping goals).
func ruGoals(rep *report) {
	find := rep.find
	clients := 16
	if find("ruBypass", clients) == nil {
		clients = 1
	}
	base := find("ruBypass", clients)
	if base == nil || base.OpsPerS <= 0 {
		return
	}
	for _, name := range []string{"ruCharged", "ruLimited"} {
		r := find(name, clients)
		if r == nil {
			continue
		}
		g := goal{Name: fmt.Sprintf("%s@%d >= %.2f x ruBypass@%d", name, clients, ruGoal, clients), Workload: name, Clients: clients, Min: ruGoal}
		rep.Goals = append(rep.Goals, g.judge(r, base))
	}
}

func printRUSummary(w io.Writer, rep *report) {
	for _, g := range rep.Goals {
		if g.Workload != "ruCharged" && g.Workload != "ruLimited" {
			continue
		}
		fmt.Fprintf(w, "request units: %s: %.3f (rounds: %s; from cpu/op: %.3f) %s\n", g.Name, g.Ratio, g.perRound("%.3f"), g.CPURatio, g.Status)
	}
}
