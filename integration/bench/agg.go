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

// The aggregation workloads measure the pipeline where it, not the
// storage, is the work: a $group by a low-cardinality field (aggCats
// values) with $sum and $avg over aggDocs documents of docSize bytes,
// reported as documents grouped per second, against a bare Txn.Scan over
// the unsharded collection's key range of the same store in the same run.
//
//	aggGroup         the $group on an unsharded collection (one partition)
//	aggGroup4        the same on a collection sharded into 4 partitions,
//	                 which the server groups in parallel (partial $group per
//	                 partition, final $group on the merged stream)
//	badger-scan-agg  store.Txn.Scan over the unsharded collection, touching
//	                 every value
const (
	aggDocs = 200_000
	aggCats = 8
)

// aggGoal: each $group must group documents at least this fast relative to
// the bare scan.
const aggGoal = 0.4

var aggWorkloads = []string{"aggGroup", "aggGroup4", "badger-scan-agg"}

// aggDoc is a docSize-byte document {_id, cat, amt, pad}.
func aggDoc(i int64) []byte {
	build := func(pad int) []byte {
		return bsoncore.NewDocumentBuilder().
			AppendInt64("_id", i).
			AppendString("cat", fmt.Sprintf("category-%d", i%aggCats)).
			AppendInt32("amt", int32(i%1000)).
			AppendString("pad", string(make([]byte, pad))).
			Build()
	}
	d := build(0)
	return build(docSize - len(d))
}

// aggPipeline is the measured pipeline.
var aggPipeline = bson.A{bson.D{{Key: "$group", Value: bson.D{
	{Key: "_id", Value: "$cat"},
	{Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
	{Key: "total", Value: bson.D{{Key: "$sum", Value: "$amt"}}},
	{Key: "avg", Value: bson.D{{Key: "$avg", Value: "$amt"}}},
}}}}

// aggPhase starts a server of its own (it needs the server's store, so it
// runs in-process even with -uri), preloads both collections, and
// alternates the workloads for cfg.Rounds rounds, each running for its
// share of cfg.Duration.
func aggPhase(ctx context.Context, cfg config, rep *report, want func(string) bool) (err error) {
	srv, stop, err := launchPhase("agg", integration.ServerOptions{})
	if err != nil {
		return err
	}
	defer stop(&err)
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()).SetAppName("parsec-bench"))
	if err != nil {
		return err
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	db := client.Database("bench")
	// 24,000 RU/s manual throughput starts a sharded collection with
	// ceil(24000/6000) = 4 physical partitions.
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "agg4"},
		{Key: "shardKey", Value: "_id"}, {Key: "offerThroughput", Value: 24000}}).Err(); err != nil {
		return fmt.Errorf("create the sharded collection: %w", err)
	}
	progress("agg: preloading %d documents of %d bytes into an unsharded and a 4-partition collection", aggDocs, docSize)
	// Both collections load at once: each load is one client's stream.
	errs := make(chan error, 2)
	for _, name := range []string{"agg", "agg4"} {
		go func(coll *mongo.Collection) {
			for i := int64(0); i < aggDocs; i += 5000 {
				docs := make([]any, 0, 5000)
				for j := i; j < min(i+5000, aggDocs); j++ {
					docs = append(docs, bson.Raw(aggDoc(j)))
				}
				if _, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
					errs <- fmt.Errorf("agg preload of %s: %w", coll.Name(), err)
					return
				}
			}
			errs <- nil
		}(db.Collection(name))
	}
	for range 2 {
		if err := <-errs; err != nil {
			return err
		}
	}
	st := srv.Store()
	sc := st.Collection("bench", "agg")
	if sc == nil {
		return fmt.Errorf("agg: collection bench.agg not found in the store")
	}
	groupOnce := func(name string) func() (int64, error) {
		coll := db.Collection(name)
		return func() (int64, error) {
			cur, err := coll.Aggregate(ctx, aggPipeline)
			if err != nil {
				return 0, err
			}
			var got []bson.M
			if err := cur.All(ctx, &got); err != nil {
				return 0, err
			}
			n := int64(0)
			for _, g := range got {
				n += int64(g["n"].(int32))
			}
			if len(got) != aggCats || n != aggDocs {
				return 0, fmt.Errorf("%s: %d groups of %d documents, want %d of %d", name, len(got), n, aggCats, aggDocs)
			}
			return aggDocs, nil
		}
	}
	res, err := runDocRounds(ctx, cfg, want, []docRun{
		{"aggGroup", "server-agg", groupOnce("agg")},
		{"aggGroup4", "server-agg", groupOnce("agg4")},
		{"badger-scan-agg", "baseline-badger", storeScanOnce(st, sc, "badger-scan-agg", aggDocs)},
	})
	if err != nil {
		return err
	}
	base := res["badger-scan-agg"]
	for _, name := range aggWorkloads {
		r := res[name]
		if r.Ops == 0 {
			continue
		}
		if name != "badger-scan-agg" && base.Ops > 0 {
			r.VsBadger = r.OpsPerS / base.OpsPerS
		}
		rep.Results = append(rep.Results, *r)
	}
	return nil
}

// aggGoals adds the aggregation goals to the report.
func aggGoals(rep *report) {
	b := rep.find("badger-scan-agg", 1)
	for _, w := range []string{"aggGroup", "aggGroup4"} {
		r := rep.find(w, 1)
		if r == nil && b == nil {
			continue
		}
		g := goal{Name: fmt.Sprintf("%s docs/s >= %.2f x badger-scan-agg", w, aggGoal), Workload: w, Clients: 1, Min: aggGoal}
		rep.Goals = append(rep.Goals, g.judge(r, b))
	}
}

func printAggSummary(w io.Writer, rep *report) {
	for _, g := range rep.Goals {
		if g.Workload != "aggGroup" && g.Workload != "aggGroup4" {
			continue
		}
		cores := ""
		for _, r := range rep.Results {
			if r.Workload == g.Workload && r.Seconds > 0 {
				cores = fmt.Sprintf(", %.2f cores", r.cpu.Seconds()/r.Seconds)
			}
		}
		fmt.Fprintf(w, "agg: $group by %d categories with $sum and $avg over %d documents of %d bytes: %s: %.2f (rounds: %s)%s %s\n",
			aggCats, aggDocs, docSize, g.Name, g.Ratio, g.perRound("%.2f"), cores, g.Status)
	}
}
