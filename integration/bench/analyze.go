package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The analyze section times the shard-key analysis on one unsharded
// collection loaded to 100,000 and then to -growth-max documents (1M by
// default) of about 200 bytes, with fields of known distributions:
//
//	_id     int64, 0, 1, 2, ... (insertion order)
//	user    "user-000000" ... one of 100,000, uniform (a good key)
//	region  "region-00" ... one of 20, uniform (few values)
//	ts      a date growing with _id (monotonic)
//	amount  int64, a 64-bit mix of _id mod 10,000
//	pad     filling the document to 200 bytes
//
// At each size, with default sampling:
//
//	analyzeKey       analyzeShardKey {user: 1}
//	analyzeCompound  analyzeShardKey {region: 1, ts: 1}
//	analyzeWhatIf    {customAction: "AnalyzePartitionKey", keys: ["user", {ts: 1}]}
//
// Goal: each under 10 s at the largest size (MongoDB's analyzeShardKey
// samples rather than reading everything, and so must Parsec's). The
// summary prints seconds, documents per second and how the time grew
// from one size to the next.
var analyzeOps = []string{"analyzeKey", "analyzeCompound", "analyzeWhatIf"}

const (
	analyzeFirst   = 100_000
	analyzeGoal    = 10 * time.Second
	analyzeUsers   = 100_000
	analyzeRegions = 20
	analyzeColl    = "analyze"
)

// analyzeSizes are the sizes measured: 100,000 then ten times as many up
// to max (max alone when it is smaller).
func analyzeSizes(max int64) []int64 {
	if max <= analyzeFirst {
		return []int64{max}
	}
	var out []int64
	for n := int64(analyzeFirst); n < max; n *= 10 {
		out = append(out, n)
	}
	return append(out, max)
}

// analyzeWorkloads are the section's names for cfg's sizes.
func analyzeWorkloads(cfg config) []string {
	var out []string
	for _, n := range analyzeSizes(cfg.GrowthMax) {
		for _, op := range analyzeOps {
			out = append(out, growthName(op, n))
		}
	}
	return out
}

// analyzeReport is the section's timings.
type analyzeReport struct {
	Sizes []analyzeSize `json:"sizes"`
}

type analyzeSize struct {
	Docs      int64   `json:"docs"`
	LoadS     float64 `json:"load_s"`
	DataBytes int64   `json:"data_bytes"`
	// Seconds and Sampled per operation (analyzeOps).
	Seconds map[string]float64 `json:"seconds"`
	Sampled map[string]int64   `json:"docs_sampled"`
}

type analyzeDocs struct{ pad string }

func newAnalyzeDocs() analyzeDocs {
	g := analyzeDocs{}
	g.pad = strings.Repeat("p", max(0, 200-len(g.appendDoc(nil, 0))))
	return g
}

var analyzeEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

func (g analyzeDocs) appendDoc(dst []byte, id int64) []byte {
	x := uint64(id)*0x9e3779b97f4a7c15 ^ uint64(id)>>7
	start, d := bsoncore.AppendDocumentStart(dst)
	d = bsoncore.AppendInt64Element(d, "_id", id)
	d = bsoncore.AppendStringElement(d, "user", fmt.Sprintf("user-%06d", (x>>11)%analyzeUsers))
	d = bsoncore.AppendStringElement(d, "region", fmt.Sprintf("region-%02d", (x>>40)%analyzeRegions))
	d = bsoncore.AppendDateTimeElement(d, "ts", analyzeEpoch+id*100)
	d = bsoncore.AppendInt64Element(d, "amount", int64(x%10_000))
	d = bsoncore.AppendStringElement(d, "pad", g.pad)
	d, _ = bsoncore.AppendDocumentEnd(d, start)
	return d
}

// analyzeLoad inserts _id [from, to) with growthLoaders concurrent
// insertMany calls of growthBatch documents.
func analyzeLoad(ctx context.Context, coll *mongo.Collection, g analyzeDocs, from, to int64) error {
	return parallelLoad(ctx, coll, from, to, func(id int64) []byte { return g.appendDoc(make([]byte, 0, 224), id) })
}

func analyzePhase(ctx context.Context, cfg config, rep *report, want func(string) bool) (err error) {
	var client *mongo.Client
	if cfg.InProcess {
		var srv *integration.Server
		var stop func(*error)
		if srv, stop, err = launchPhase("analyze", integration.ServerOptions{}); err != nil {
			return err
		}
		defer stop(&err)
		cfg.URI = srv.URI()
	}
	mcs, err := connect("shared", cfg.URI, growthLoaders)
	if err != nil {
		return err
	}
	client = mcs[0]
	defer func() { _ = client.Disconnect(context.Background()) }()
	db := client.Database("benchanalyze")
	if cfg.URI != "" && !cfg.InProcess {
		if err := db.Collection(analyzeColl).Drop(ctx); err != nil {
			return err
		}
	}
	coll := db.Collection(analyzeColl)
	g := newAnalyzeDocs()
	ar := &analyzeReport{}
	rep.Analyze = ar
	ns := db.Name() + "." + analyzeColl
	cmds := map[string]bson.D{
		"analyzeKey": {{Key: "analyzeShardKey", Value: ns}, {Key: "key", Value: bson.D{{Key: "user", Value: 1}}}},
		"analyzeCompound": {{Key: "analyzeShardKey", Value: ns},
			{Key: "key", Value: bson.D{{Key: "region", Value: 1}, {Key: "ts", Value: 1}}}},
		"analyzeWhatIf": {{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: analyzeColl},
			{Key: "keys", Value: bson.A{"user", bson.D{{Key: "ts", Value: 1}}}}},
	}
	loaded := int64(0)
	for _, size := range analyzeSizes(cfg.GrowthMax) {
		if !slices.ContainsFunc(analyzeOps, func(op string) bool { return want(growthName(op, size)) }) {
			continue
		}
		progress("analyze: loading %d documents", size-loaded)
		started := time.Now()
		if err := analyzeLoad(ctx, coll, g, loaded, size); err != nil {
			return err
		}
		as := analyzeSize{Docs: size, LoadS: time.Since(started).Seconds(), Seconds: map[string]float64{}, Sampled: map[string]int64{}}
		loaded = size
		var stats struct {
			Size int64 `bson:"size"`
		}
		if err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: analyzeColl}}).Decode(&stats); err == nil {
			as.DataBytes = stats.Size
		}
		for _, op := range analyzeOps {
			if !want(growthName(op, size)) {
				continue
			}
			target := client.Database("admin")
			if op == "analyzeWhatIf" {
				target = db
			}
			started := time.Now()
			raw, err := target.RunCommand(ctx, cmds[op]).Raw()
			if err != nil {
				return fmt.Errorf("%s at %d documents: %w", op, size, err)
			}
			as.Seconds[op] = time.Since(started).Seconds()
			if v, err := raw.LookupErr("keyCharacteristics", "numDocsSampled"); err == nil {
				as.Sampled[op] = v.AsInt64()
			} else if v, err := raw.LookupErr("candidates", "0", "numDocsSampled"); err == nil {
				as.Sampled[op] = v.AsInt64()
			}
			progress("analyze: %s at %d documents: %.2f s", op, size, as.Seconds[op])
		}
		ar.Sizes = append(ar.Sizes, as)
	}
	return nil
}

// analyzeGoals: each operation under analyzeGoal at the largest size.
func analyzeGoals(rep *report) {
	ar := rep.Analyze
	if ar == nil || len(ar.Sizes) == 0 {
		return
	}
	last := ar.Sizes[len(ar.Sizes)-1]
	for _, op := range analyzeOps {
		s, ok := last.Seconds[op]
		if !ok {
			continue
		}
		g := goal{Name: fmt.Sprintf("%s at %s < %.0f s", op, sizeLabel(last.Docs), analyzeGoal.Seconds()),
			Workload: growthName(op, last.Docs), Clients: 1, Max: analyzeGoal.Seconds(), Ratio: s, Status: "FAIL"}
		if s < analyzeGoal.Seconds() {
			g.Status = "PASS"
		}
		rep.Goals = append(rep.Goals, g)
	}
}

func printAnalyzeSummary(w io.Writer, rep *report) {
	ar := rep.Analyze
	if ar == nil || len(ar.Sizes) == 0 {
		return
	}
	fmt.Fprintf(w, "analyze: an unsharded collection of ~200-byte documents, default sampling; goal < %.0f s each\n", analyzeGoal.Seconds())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tload s\toperation\tseconds\tdocs/s\tsampled\tx previous size\t")
	for i, as := range ar.Sizes {
		for _, op := range analyzeOps {
			s, ok := as.Seconds[op]
			if !ok {
				continue
			}
			growth := "-"
			if i > 0 {
				if p, ok := ar.Sizes[i-1].Seconds[op]; ok && p > 0 {
					growth = fmt.Sprintf("%.2f", s/p)
				}
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%s\t%.3f\t%.0f\t%d\t%s\t\n", sizeLabel(as.Docs), as.LoadS, op, s, float64(as.Docs)/s, as.Sampled[op], growth)
		}
	}
	_ = tw.Flush()
	for _, g := range rep.Goals {
		if slices.Contains(analyzeOps, strings.SplitN(g.Workload, "-", 2)[0]) {
			fmt.Fprintf(w, "analyze: %s: %.2f s %s\n", g.Name, g.Ratio, g.Status)
		}
	}
}
