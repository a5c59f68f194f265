package main

import (
	"context"
	"fmt"
	"io"

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
	res, err := runDocRounds(ctx, cfg, want, []docRun{
		{"scanFilter", "server-scan", findOnce},
		{"badger-scan", "baseline-badger", storeScanOnce(st, sc, "badger-scan", scanDocs)},
	})
	if err != nil {
		return err
	}
	if f, b := res["scanFilter"], res["badger-scan"]; b.OpsPerS > 0 {
		f.VsBadger = f.OpsPerS / b.OpsPerS
	}
	for _, name := range scanWorkloads {
		if r := res[name]; r.Ops > 0 {
			rep.Results = append(rep.Results, *r)
		}
	}
	return nil
}

// scanGoals adds the scan goal to the report (after ratios, which
// rebuilds the ping goals).
func scanGoals(rep *report) {
	f, b := rep.find("scanFilter", 1), rep.find("badger-scan", 1)
	if f == nil && b == nil {
		return
	}
	g := goal{Name: fmt.Sprintf("scanFilter docs examined/s >= %.2f x badger-scan", scanGoal), Workload: "scanFilter", Clients: 1, Min: scanGoal}
	rep.Goals = append(rep.Goals, g.judge(f, b))
}

func printScanSummary(w io.Writer, rep *report) {
	for _, g := range rep.Goals {
		if g.Workload == "scanFilter" {
			fmt.Fprintf(w, "scan: %d documents of %d bytes, a filter matching one: %s: %.2f (rounds: %s) %s\n", scanDocs, docSize, g.Name, g.Ratio, g.perRound("%.2f"), g.Status)
		}
	}
}
