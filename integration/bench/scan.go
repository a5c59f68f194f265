package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The scan workloads measure the find language's matcher where nothing
// else hides it: a find whose filter is on a field no index covers and
// matches one document, over scanDocs documents of docSize bytes, reported
// as documents examined per second, against a bare Txn.Scan over the same
// collection's key range of the same store in the same run (what any
// collection scan must pay before matching anything).
//
//	scanFilter   find {seq: <one value>} through the driver
//	badger-scan  store.Txn.Scan over the collection, touching every value
const scanDocs = 100_000

// scanGoal: scanFilter must examine documents at least this fast relative
// to the bare scan.
const scanGoal = 0.5

var scanWorkloads = []string{"scanFilter", "badger-scan"}

// scanDoc is the findById document with seq set to i.
func scanDoc(t template, i int64) []byte {
	doc := t.withIntID(i)
	elems, _ := bsoncore.Document(doc).Elements()
	start, b := bsoncore.AppendDocumentStart(make([]byte, 0, docSize))
	for _, el := range elems {
		if el.Key() == "seq" {
			b = bsoncore.AppendInt64Element(b, "seq", i)
			continue
		}
		b = append(b, el...)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	return b
}

// scanPhase starts a server of its own (it needs the server's store, so
// it runs in-process even with -uri),
// preloads it, and alternates the two workloads for cfg.Rounds rounds,
// each running for its share of cfg.Duration.
func scanPhase(ctx context.Context, cfg config, rep *report, want func(string) bool, tmpl template) (err error) {
	srv, stop, err := launchPhase("scan", integration.ServerOptions{})
	if err != nil {
		return err
	}
	defer stop(&err)
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()).SetAppName("parsec-bench"))
	if err != nil {
		return err
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	coll := client.Database("bench").Collection("scan")
	progress("scan: preloading %d documents of %d bytes", scanDocs, docSize)
	for i := int64(0); i < scanDocs; i += 1000 {
		docs := make([]any, 0, 1000)
		for j := i; j < min(i+1000, scanDocs); j++ {
			docs = append(docs, bson.Raw(scanDoc(tmpl, j)))
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			return fmt.Errorf("scan preload: %w", err)
		}
	}
	st := srv.Store()
	sc := st.Collection("bench", "scan")
	if sc == nil {
		return fmt.Errorf("scan: collection bench.scan not found in the store")
	}
	target := int64(scanDocs * 7 / 10)
	filter := bson.D{{Key: "seq", Value: target}}

	findOnce := func() (int64, error) {
		cur, err := coll.Find(ctx, filter)
		if err != nil {
			return 0, err
		}
		var got []bson.Raw
		if err := cur.All(ctx, &got); err != nil {
			return 0, err
		}
		if len(got) != 1 {
			return 0, fmt.Errorf("scanFilter matched %d documents, want 1", len(got))
		}
		return scanDocs, nil // a collection scan examines every document
	}
	scanOnce := func() (int64, error) {
		var n int64
		var sum byte
		err := st.View(func(tx *store.Txn) error {
			return tx.Scan(sc, nil, func(_, doc []byte) (bool, error) {
				n++
				sum += doc[len(doc)/2] // touch the value, as matching must
				return true, nil
			})
		})
		_ = sum
		if err == nil && n != scanDocs {
			err = fmt.Errorf("badger-scan visited %d documents, want %d", n, scanDocs)
		}
		return n, err
	}
	res := map[string]*result{
		"scanFilter":  {Workload: "scanFilter", Kind: "server-scan", Clients: 1},
		"badger-scan": {Workload: "badger-scan", Kind: "baseline-badger", Clients: 1},
	}
	runs := []struct {
		name string
		fn   func() (int64, error)
	}{{"scanFilter", findOnce}, {"badger-scan", scanOnce}}
	// Warm up both (page cache, block cache) before measuring.
	for _, r := range runs {
		if _, err := r.fn(); err != nil {
			return err
		}
	}
	share := cfg.Duration / time.Duration(cfg.Rounds)
	for rd := range cfg.Rounds {
		for _, r := range runs {
			if !want(r.name) || ctx.Err() != nil {
				continue
			}
			var docs int64
			cpu0, start := cpuTime(), time.Now()
			for time.Since(start) < share || docs == 0 {
				n, err := r.fn()
				if err != nil {
					return err
				}
				docs += n
			}
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			out := res[r.name]
			out.Ops += docs
			out.Seconds += elapsed.Seconds()
			out.cpu += cpu
			out.Rounds = append(out.Rounds, round{Ops: docs, Seconds: elapsed.Seconds(), OpsPerS: float64(docs) / elapsed.Seconds(), StopBy: "time"})
			progress("%-13s round %d/%d  %9d docs examined in %.2fs  %10.0f docs/s", r.name, rd+1, cfg.Rounds, docs, elapsed.Seconds(), float64(docs)/elapsed.Seconds())
		}
	}
	for _, name := range scanWorkloads {
		r := res[name]
		if r.Ops == 0 {
			continue
		}
		r.OpsPerS = float64(r.Ops) / r.Seconds
		r.CPUPerOpUS = us(r.cpu / time.Duration(r.Ops))
		rep.Results = append(rep.Results, *r)
	}
	if f, b := res["scanFilter"], res["badger-scan"]; f.OpsPerS > 0 && b.OpsPerS > 0 {
		for i := range rep.Results {
			if rep.Results[i].Workload == "scanFilter" {
				rep.Results[i].VsBadger = f.OpsPerS / b.OpsPerS
			}
		}
	}
	return nil
}

// scanGoals adds the scan goal to the report (after ratios, which
// rebuilds the ping goals).
func scanGoals(rep *report) {
	var f, b *result
	for i := range rep.Results {
		switch rep.Results[i].Workload {
		case "scanFilter":
			f = &rep.Results[i]
		case "badger-scan":
			b = &rep.Results[i]
		}
	}
	if f == nil && b == nil {
		return
	}
	g := goal{Name: fmt.Sprintf("scanFilter docs examined/s >= %.2f x badger-scan", scanGoal), Workload: "scanFilter", Clients: 1, Min: scanGoal}
	rep.Goals = append(rep.Goals, g.judge(f, b))
}

func printScanSummary(w io.Writer, rep *report) {
	for _, g := range rep.Goals {
		if g.Workload == "scanFilter" {
			fmt.Fprintf(w, "scan: %d documents of %d bytes, a filter matching one: %s: %.2f (rounds:", scanDocs, docSize, g.Name, g.Ratio)
			for _, r := range g.PerRound {
				fmt.Fprintf(w, " %.2f", r)
			}
			fmt.Fprintf(w, ") %s\n", g.Status)
		}
	}
}
