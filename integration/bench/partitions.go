package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"

	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The partition workloads compare a sharded collection of 16 physical
// partitions with an unsharded one holding the same documents, in the
// same run, on a server of their own:
//
//	pointUnsharded  findOne {_id} on the unsharded collection
//	pointSharded16  findOne {_id, seq} (the full shard key) on the sharded one
//	scanUnsharded   find {payload: <no match>} on the unsharded collection:
//	                one partition, scanned by one goroutine
//	fanout16        the same find on the sharded collection: 16 partitions,
//	                scanned in parallel
//
// Goals: a point read by _id and shard key costs no more than an _id read
// of an unsharded collection (ratio >= 0.9 at 16 clients), and a fan-out
// scan uses every core: with GOMAXPROCS >= 2 it examines documents at
// least 1.25 times as fast as the single-threaded scan. The summary also
// prints the cores each scan kept busy (this process's CPU time over wall
// time): on a 2-core machine shared with other tenants, the speed-up is
// what the others leave, while the cores used show the parallelism.
var partitionWorkloads = []string{"pointUnsharded", "pointSharded16", "scanUnsharded", "fanout16"}

const (
	partitionDocs   = 50_000
	pointGoal       = 0.9
	fanOutGoal      = 1.25
	partitionsOfBig = 16
)

// partitionDoc is the template with _id i and seq i/10 (the shard key:
// ten documents per logical partition).
func partitionDoc(t template, i int64) []byte {
	doc := t.withIntID(i)
	elems, _ := bsoncore.Document(doc).Elements()
	start, b := bsoncore.AppendDocumentStart(make([]byte, 0, docSize))
	for _, el := range elems {
		if el.Key() == "seq" {
			b = bsoncore.AppendInt64Element(b, "seq", i/10)
			continue
		}
		b = append(b, el...)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	return b
}

func partitionPhase(ctx context.Context, cfg config, rep *report, want func(string) bool, tmpl template) (err error) {
	srv, stop, err := launchPhase("partitions", integration.ServerOptions{})
	if err != nil {
		return err
	}
	defer stop(&err)
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
	// 96,000 RU/s of manual throughput start a collection with
	// ceil(96000/6000) = 16 physical partitions.
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "sharded"},
		{Key: "shardKey", Value: "seq"}, {Key: "offerThroughput", Value: 96000}}).Err(); err != nil {
		return fmt.Errorf("create the sharded collection: %w", err)
	}
	var ps struct {
		PartitionCount int32 `bson:"partitionCount"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: "sharded"}}).Decode(&ps); err != nil {
		return err
	}
	if ps.PartitionCount != partitionsOfBig {
		return fmt.Errorf("the sharded collection has %d partitions, want %d", ps.PartitionCount, partitionsOfBig)
	}
	progress("partitions: preloading %d documents of %d bytes into an unsharded and a %d-partition collection", partitionDocs, docSize, partitionsOfBig)
	// Interleaved, so that both collections end up alike in Badger's
	// memtable and tables.
	for i := int64(0); i < partitionDocs; i += 1000 {
		docs := make([]any, 0, 1000)
		for j := i; j < min(i+1000, partitionDocs); j++ {
			docs = append(docs, bson.Raw(partitionDoc(tmpl, j)))
		}
		for _, name := range []string{"plain", "sharded"} {
			if _, err := db.Collection(name).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
				return fmt.Errorf("partitions preload: %w", err)
			}
		}
	}
	coll := func(w int, name string) *mongo.Collection { return mcs[w%len(mcs)].Database("bench").Collection(name) }
	if err := runPhase(ctx, cfg, rep, want, []workload{
		{"pointUnsharded", "server-partitions", func(w int) opFunc { return pointOp(coll(w, "plain"), false, uint64(w)+7) }},
		{"pointSharded16", "server-partitions", func(w int) opFunc { return pointOp(coll(w, "sharded"), true, uint64(w)+7) }},
	}); err != nil {
		return err
	}
	return fanOutPhase(ctx, cfg, rep, want, db)
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// pointOp reads one document by _id (and, sharded, its shard key seq),
// uniformly at random.
func pointOp(coll *mongo.Collection, sharded bool, seed uint64) opFunc {
	rng := rand.New(rand.NewPCG(seed, 0x51ed))
	buf := make([]byte, 0, 48)
	return func(ctx context.Context) error {
		id := rng.Int64N(partitionDocs)
		start, b := bsoncore.AppendDocumentStart(buf[:0])
		b = bsoncore.AppendInt64Element(b, "_id", id)
		if sharded {
			b = bsoncore.AppendInt64Element(b, "seq", id/10)
		}
		b, _ = bsoncore.AppendDocumentEnd(b, start)
		buf = b
		raw, err := coll.FindOne(ctx, bson.Raw(b)).Raw()
		if err != nil {
			return err
		}
		if len(raw) != docSize {
			return fmt.Errorf("point read %d: got %d bytes, want %d", id, len(raw), docSize)
		}
		return nil
	}
}

// fanOutPhase times a find that matches nothing, so it examines every
// document, on both collections in alternating rounds; the figure is
// documents examined per second.
func fanOutPhase(ctx context.Context, cfg config, rep *report, want func(string) bool, db *mongo.Database) error {
	filter := bson.D{{Key: "payload", Value: "no such payload"}}
	findOnce := func(name string) func() (int64, error) {
		c := db.Collection(name)
		return func() (int64, error) {
			cur, err := c.Find(ctx, filter)
			if err != nil {
				return 0, err
			}
			var got []bson.Raw
			if err := cur.All(ctx, &got); err != nil {
				return 0, err
			}
			if len(got) != 0 {
				return 0, fmt.Errorf("%s: the filter matched %d documents", name, len(got))
			}
			return partitionDocs, nil
		}
	}
	runs := []docRun{
		{"scanUnsharded", "server-partitions-scan", findOnce("plain")},
		{"fanout16", "server-partitions-scan", findOnce("sharded")},
	}
	res, err := runDocRounds(ctx, cfg, want, runs)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if out := res[r.name]; out.Ops > 0 {
			rep.Results = append(rep.Results, *out)
		}
	}
	return nil
}

// partitionGoals adds the two partition goals (after ratios, which
// rebuilds the ping goals).
func partitionGoals(rep *report) {
	find := rep.find
	if find("pointSharded16", 0) == nil && find("fanout16", 0) == nil {
		return
	}
	clients := 16
	if find("pointSharded16", clients) == nil {
		clients = 1
	}
	point := goal{Name: fmt.Sprintf("pointSharded16@%d >= %.2f x pointUnsharded@%d", clients, pointGoal, clients), Workload: "pointSharded16", Clients: clients, Min: pointGoal}
	rep.Goals = append(rep.Goals, point.judge(find("pointSharded16", clients), find("pointUnsharded", clients)))
	fan := goal{Name: fmt.Sprintf("fanout16 docs/s >= %.2f x scanUnsharded (GOMAXPROCS %d)", fanOutGoal, runtime.GOMAXPROCS(0)), Workload: "fanout16", Clients: 1, Min: fanOutGoal}
	if runtime.GOMAXPROCS(0) < 2 {
		fan.Min = 0.9 // one core: nothing to gain, nothing to lose
	}
	rep.Goals = append(rep.Goals, fan.judge(find("fanout16", 1), find("scanUnsharded", 1)))
}

func printPartitionSummary(w io.Writer, rep *report) {
	for _, r := range rep.Results {
		if r.Kind == "server-partitions-scan" && r.Seconds > 0 {
			fmt.Fprintf(w, "partitions: %s kept %.2f cores busy (CPU time / wall time)\n", r.Workload, r.CPUPerOpUS*float64(r.Ops)/1e6/r.Seconds)
		}
	}
	for _, g := range rep.Goals {
		if g.Workload != "pointSharded16" && g.Workload != "fanout16" {
			continue
		}
		fmt.Fprintf(w, "partitions: %s: %.2f (rounds: %s; from cpu/op: %.2f) %s\n", g.Name, g.Ratio, g.perRound("%.2f"), g.CPURatio, g.Status)
	}
}
