package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The growth workloads measure how cost grows with the data: a path that
// is fast on 10,000 documents and scans on 1,000,000 shows here as a
// failed goal. One collection, sharded on {region: "hashed"} with 1,000
// region values and a secondary index {sku: 1} (a value per document), is
// loaded with docSize-byte documents to 10,000, then 100,000, then
// 1,000,000 (-growth-max) on the same server, and at each size the same
// operations are measured, in interleaved rounds at the largest -clients
// level (one level keeps the section within 5 minutes):
//
//	growthPing    ping, the wire protocol's own limit at that moment
//	growthPoint   find {region, _id} limit 1: a point read
//	growthByKey   find {region} limit 10: one logical partition
//	growthById    find {_id} limit 1, without the shard key
//	growthBySku   find {sku}: equality on the secondary index
//	growthInsert  insertOne of a new document
//
// Each result is named <workload>-<size> (growthPoint-1M). After each
// load the section waits (growthSettle at most) for the server to go idle,
// so that compactions the load left behind are not billed to the size,
// then records the server's resident memory (VmRSS: this process's when
// the server runs in it, -server-pid's with -uri), the data directory's
// allocated size on disk and, once per read, explain's
// executionStats.totalDocsExamined.
//
// Goals: each operation's rate at the largest size is at least
// growthRateGoal times its rate at 10,000, and each read examines at most
// growthDocsGoal times as many documents at the largest size as at
// 10,000.
//
// Every read carries maxTimeMS growthOpCap, so that a read that scans the
// collection cannot hold a round for long: one cut short counts as an
// operation that took the whole cap (the rate is then an upper bound) and
// is reported. insertOne runs after the reads' rounds (it adds several
// times 10,000 documents), not interleaved with them, and the documents it
// adds at one size are deleted before the next load: each size is the
// number of documents the reads see.
var growthOps = []string{"growthPing", "growthPoint", "growthByKey", "growthById", "growthBySku", "growthInsert"}

const (
	growthFirst      = 10_000
	growthRegions    = 1000
	growthRateGoal   = 0.8
	growthDocsGoal   = 1.5
	growthOpCap      = 2 * time.Second
	growthLoaders    = 4
	growthBatch      = 1000
	growthLoadBudget = 4 * time.Minute // all loads together
	// growthSettle bounds the wait, after each load, for the server's
	// CPU use to fall below growthIdle cores over growthIdleWindow.
	growthSettle     = 30 * time.Second
	growthIdle       = 0.2
	growthIdleWindow = 500 * time.Millisecond
	// growthInsertBase is the first _id insertOne uses, far above any
	// loaded _id, so that those documents can be deleted by range.
	growthInsertBase = int64(1) << 40
	growthColl       = "growth"
)

// growthSizes are the sizes measured: 10,000, then ten times as many
// while below max, then max.
func growthSizes(max int64) []int64 {
	var out []int64
	for n := int64(growthFirst); n < max; n *= 10 {
		out = append(out, n)
	}
	return append(out, max)
}

// sizeLabel is n shortened: 10k, 1M, 250k, 12345.
func sizeLabel(n int64) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.FormatInt(n, 10)
}

func growthName(op string, size int64) string { return op + "-" + sizeLabel(size) }

// growthWorkloads are the names of every growth result for cfg's sizes.
func growthWorkloads(cfg config) []string {
	var out []string
	for _, n := range growthSizes(cfg.GrowthMax) {
		for _, op := range growthOps {
			out = append(out, growthName(op, n))
		}
	}
	return out
}

// growthReport is what the section records besides its results.
type growthReport struct {
	Clients int          `json:"clients"`
	Sizes   []growthSize `json:"sizes"`
	Seconds float64      `json:"seconds"` // the whole section's
	// Note says why the section stopped before -growth-max, if it did.
	Note string `json:"note,omitempty"`
}

// growthSize is one size's figures.
type growthSize struct {
	Docs        int64   `json:"docs"`
	LoadSeconds float64 `json:"load_seconds"` // loading from the previous size
	// SettleSeconds is how long the server then took to go idle (its
	// compactions after the load), up to growthSettle.
	SettleSeconds float64 `json:"settle_seconds"`
	Settled       bool    `json:"settled"`
	// RSSBytes (of which RSSAnonBytes is anonymous memory, the rest
	// mapped files such as Badger's tables) and DiskBytes are taken once
	// settled (0: not measured).
	RSSBytes     int64 `json:"rss_bytes"`
	RSSAnonBytes int64 `json:"rss_anon_bytes"`
	DiskBytes    int64 `json:"disk_bytes"`
	// DocsExamined is explain's totalDocsExamined per read workload.
	DocsExamined map[string]int64 `json:"docs_examined"`
	// Cut counts the reads maxTimeMS stopped, per workload.
	Cut map[string]int64 `json:"cut,omitempty"`
	// Inserted is how many documents insertOne added (then deleted).
	Inserted int64 `json:"inserted"`
}

// growthDocs builds the section's documents {_id, region, sku, n, pad}.
type growthDocs struct{ pad string }

func newGrowthDocs() growthDocs {
	g := growthDocs{}
	n := len(g.appendDoc(nil, 0))
	g.pad = strings.Repeat("p", docSize-n)
	return g
}

// region is document id's shard-key value.
func growthRegion(id int64) string {
	return fmt.Sprintf("region-%03d", uint64(id)%growthRegions)
}

// growthSku is document id's sku: a 64-bit mix of id (a bijection, so
// every document has its own), in 16 hex digits.
func growthSku(id int64) string {
	x := uint64(id)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return fmt.Sprintf("sku-%016x", x)
}

func (g growthDocs) appendDoc(dst []byte, id int64) []byte {
	start, d := bsoncore.AppendDocumentStart(dst)
	d = bsoncore.AppendInt64Element(d, "_id", id)
	d = bsoncore.AppendStringElement(d, "region", growthRegion(id))
	d = bsoncore.AppendStringElement(d, "sku", growthSku(id))
	d = bsoncore.AppendInt64Element(d, "n", id)
	d = bsoncore.AppendStringElement(d, "pad", g.pad)
	d, _ = bsoncore.AppendDocumentEnd(d, start)
	return d
}

// growthRead is one read shape: its find command for document id (sent
// with maxTimeMS, explained without) and how many documents it returns.
type growthRead struct {
	name   string
	filter func(id int64) bson.D
	limit  int64 // 0: none
	want   int
}

func growthReads() []growthRead {
	return []growthRead{
		{"growthPoint", func(id int64) bson.D {
			return bson.D{{Key: "region", Value: growthRegion(id)}, {Key: "_id", Value: id}}
		}, 1, 1},
		// Every region holds at least 10 documents from 10,000 on.
		{"growthByKey", func(id int64) bson.D { return bson.D{{Key: "region", Value: growthRegion(id)}} }, 10, 10},
		{"growthById", func(id int64) bson.D { return bson.D{{Key: "_id", Value: id}} }, 1, 1},
		{"growthBySku", func(id int64) bson.D { return bson.D{{Key: "sku", Value: growthSku(id)}} }, 0, 1},
	}
}

func (r growthRead) command(id int64, capped bool) bson.D {
	c := bson.D{{Key: "find", Value: growthColl}, {Key: "filter", Value: r.filter(id)}}
	if r.limit > 0 {
		c = append(c, bson.E{Key: "limit", Value: r.limit})
	}
	c = append(c, bson.E{Key: "singleBatch", Value: true})
	if capped {
		c = append(c, bson.E{Key: "maxTimeMS", Value: growthOpCap.Milliseconds()})
	}
	return c
}

// growthReadOp runs r on a uniformly random loaded document; a read
// maxTimeMS stops counts as done (with its whole time) and in cut.
func growthReadOp(db *mongo.Database, r growthRead, size int64, seed uint64, cut *atomic.Int64) opFunc {
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	return func(ctx context.Context) error {
		id := rng.Int64N(size)
		raw, err := db.RunCommand(ctx, r.command(id, true)).Raw()
		var ce mongo.CommandError
		if errors.As(err, &ce) && ce.Code == 50 { // MaxTimeMSExpired
			cut.Add(1)
			return nil
		}
		if err != nil {
			return err
		}
		batch, err := raw.LookupErr("cursor", "firstBatch")
		if err != nil {
			return fmt.Errorf("%s: no cursor.firstBatch in %v", r.name, raw)
		}
		docs, _ := batch.Array().Values()
		if len(docs) != r.want {
			return fmt.Errorf("%s of document %d: %d documents, want %d", r.name, id, len(docs), r.want)
		}
		return nil
	}
}

// growthInsertOp inserts new documents with _ids from growthInsertBase on.
func growthInsertOp(coll *mongo.Collection, g growthDocs, next *atomic.Int64) opFunc {
	buf := make([]byte, 0, docSize)
	return func(ctx context.Context) error {
		buf = g.appendDoc(buf[:0], growthInsertBase+next.Add(1)-1)
		_, err := coll.InsertOne(ctx, bson.Raw(buf))
		return err
	}
}

// growthLoad inserts the documents with _id in [from, to) with
// growthLoaders concurrent insertMany calls of growthBatch documents.
func growthLoad(ctx context.Context, coll *mongo.Collection, g growthDocs, from, to int64) error {
	return parallelLoad(ctx, coll, from, to, func(id int64) []byte { return g.appendDoc(make([]byte, 0, docSize), id) })
}

// parallelLoad inserts the documents doc makes for _id in [from, to)
// with growthLoaders concurrent insertMany calls of growthBatch
// documents, and fails on the first error.
func parallelLoad(ctx context.Context, coll *mongo.Collection, from, to int64, doc func(id int64) []byte) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	next.Store(from)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range growthLoaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			docs := make([]any, 0, growthBatch)
			for ctx.Err() == nil {
				lo := next.Add(growthBatch) - growthBatch
				if lo >= to {
					return
				}
				docs = docs[:0]
				for id := lo; id < min(lo+growthBatch, to); id++ {
					docs = append(docs, bson.Raw(doc(id)))
				}
				res, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
				if err == nil && len(res.InsertedIDs) != len(docs) {
					err = fmt.Errorf("%d of %d documents inserted", len(res.InsertedIDs), len(docs))
				}
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("insertMany of _id %d..%d: %w", lo, lo+int64(len(docs))-1, err) })
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// growthTarget is where the server under test lives: its data directory
// and process, for the sizes on disk and in memory.
type growthTarget struct {
	dataDir string // "" : unknown
	pid     int    // 0: this process
}

// rss is the server's resident memory in bytes, all of it and the
// anonymous part (0: unknown).
func (t growthTarget) rss() (all, anon int64) {
	path := "/proc/self/status"
	if t.pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", t.pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			all = kb << 10
		case "RssAnon:":
			anon = kb << 10
		}
	}
	return all, anon
}

// cpu is the server's CPU time so far: this process's when it runs the
// server; ok is false when the server's process is unknown.
func (t growthTarget) cpu(inProcess bool) (d time.Duration, ok bool) {
	switch {
	case inProcess:
		return cpuTime(), true
	case t.pid != 0:
		return processCPU(t.pid), true
	}
	return 0, false
}

// settle waits, up to growthSettle, until the server uses less than
// growthIdle cores over growthIdleWindow: a large load leaves compactions
// behind, and the section measures each size in its steady state. It
// returns how long it waited and whether the server went idle.
func (t growthTarget) settle(ctx context.Context, inProcess bool) (time.Duration, bool) {
	start := time.Now()
	prev, ok := t.cpu(inProcess)
	if !ok {
		return 0, false
	}
	tick := time.NewTicker(growthIdleWindow)
	defer tick.Stop()
	for time.Since(start) < growthSettle {
		select {
		case <-ctx.Done():
			return time.Since(start), false
		case <-tick.C:
		}
		now, _ := t.cpu(inProcess)
		if float64(now-prev) < growthIdle*float64(growthIdleWindow) {
			return time.Since(start), true
		}
		prev = now
	}
	return time.Since(start), false
}

// remoteDataDir asks a server started elsewhere for its data directory
// (getCmdLineOpts), resolving a relative one against the process's
// working directory when its pid is known; "" when it cannot tell.
func remoteDataDir(ctx context.Context, c *mongo.Client, pid int) string {
	var reply struct {
		Parsed struct {
			DataDir  string `bson:"dataDir"`
			InMemory bool   `bson:"inMemory"`
		} `bson:"parsed"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getCmdLineOpts", Value: 1}}).Decode(&reply); err != nil {
		return ""
	}
	dir := reply.Parsed.DataDir
	if dir == "" || reply.Parsed.InMemory {
		return ""
	}
	if !filepath.IsAbs(dir) {
		if pid == 0 {
			return ""
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil {
			return ""
		}
		dir = filepath.Join(cwd, dir)
	}
	return dir
}

// docsExamined explains r's command (executionStats) for document id.
func docsExamined(ctx context.Context, db *mongo.Database, r growthRead, id int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	raw, err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: r.command(id, false)}, {Key: "verbosity", Value: "executionStats"}}).Raw()
	if err != nil {
		return 0, fmt.Errorf("%s: explain: %w", r.name, err)
	}
	v, err := raw.LookupErr("executionStats", "totalDocsExamined")
	if err != nil {
		return 0, fmt.Errorf("%s: no executionStats.totalDocsExamined in %v", r.name, raw)
	}
	n, ok := v.AsInt64OK()
	if !ok {
		return 0, fmt.Errorf("%s: totalDocsExamined is %v", r.name, v)
	}
	return n, nil
}

// growthPhase runs the section on a server of its own (or -uri's, in a
// database of its own that it drops after).
func growthPhase(ctx context.Context, cfg config, rep *report, want func(string) bool) (err error) {
	uri, dbName := cfg.URI, "bench"
	target := growthTarget{pid: cfg.ServerPID}
	if cfg.InProcess {
		srv, stop, err := launchPhase("growth", integration.ServerOptions{})
		if err != nil {
			return err
		}
		defer stop(&err)
		uri, target.dataDir = srv.URI(), srv.Dir
	} else {
		dbName = fmt.Sprintf("parsec_bench_growth_%d", os.Getpid())
	}
	clients := slicesMax(cfg.Clients)
	mcs, err := connect(cfg.ClientMode, uri, max(clients, growthLoaders))
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if !cfg.InProcess {
			_ = mcs[0].Database(dbName).Drop(dctx)
		}
		for _, c := range mcs {
			_ = c.Disconnect(dctx)
		}
	}()
	if !cfg.InProcess {
		target.dataDir = remoteDataDir(ctx, mcs[0], cfg.ServerPID)
	}
	db := func(w int) *mongo.Database { return mcs[w%len(mcs)].Database(dbName) }
	if err := db(0).RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: growthColl},
		{Key: "shardKey", Value: "region"}}).Err(); err != nil {
		return fmt.Errorf("growth: create the sharded collection: %w", err)
	}
	coll := db(0).Collection(growthColl)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}}}); err != nil {
		return fmt.Errorf("growth: create {sku: 1}: %w", err)
	}

	gr := &growthReport{Clients: clients}
	rep.Growth = gr
	began := time.Now()
	defer func() {
		gr.Seconds = time.Since(began).Seconds()
		progress("growth: %.0fs in all", gr.Seconds)
	}()
	gcfg := cfg
	gcfg.Clients = []int{clients}
	docs := newGrowthDocs()
	reads := growthReads()
	var inserted atomic.Int64 // insertOne's documents so far
	loadDeadline := time.Now().Add(growthLoadBudget)
	loaded := int64(0)
	sizes := growthSizes(cfg.GrowthMax)
	for si, size := range sizes {
		if ctx.Err() != nil {
			return nil
		}
		progress("growth: loading documents %d..%d (%d bytes each, %d regions)", loaded, size-1, docSize, growthRegions)
		lctx, cancel := context.WithDeadline(ctx, loadDeadline)
		start := time.Now()
		from := loaded
		err := growthLoad(lctx, coll, docs, from, size)
		outOfTime := lctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil {
			if outOfTime {
				gr.Note = fmt.Sprintf("loading to %d documents did not finish within %v (all loads' bound): no size above %d measured (%v)", size, growthLoadBudget, loaded, err)
				progress("growth: %s", gr.Note)
				return nil
			}
			return fmt.Errorf("growth: load: %w", err)
		}
		loaded = size
		gs := growthSize{Docs: size, LoadSeconds: time.Since(start).Seconds(), DocsExamined: map[string]int64{}, Cut: map[string]int64{}}
		progress("growth: %d documents loaded in %.1fs (%.0f docs/s)", size, gs.LoadSeconds, float64(size-from)/gs.LoadSeconds)
		waited, settled := target.settle(ctx, cfg.InProcess)
		gs.SettleSeconds, gs.Settled = waited.Seconds(), settled
		gs.RSSBytes, gs.RSSAnonBytes = target.rss()
		if target.dataDir != "" {
			gs.DiskBytes = diskUsage(target.dataDir)
		}
		progress("growth: idle after %.1fs (%v); RSS %s (anonymous %s), disk %s", gs.SettleSeconds, settled,
			fmtBytes(gs.RSSBytes), fmtBytes(gs.RSSAnonBytes), fmtBytes(gs.DiskBytes))
		probe := size * 7 / 10
		for _, r := range reads {
			if !want(growthName(r.name, size)) {
				continue
			}
			n, err := docsExamined(ctx, db(0), r, probe)
			if err != nil {
				return fmt.Errorf("growth at %d documents: %w", size, err)
			}
			gs.DocsExamined[r.name] = n
		}
		cuts := map[string]*atomic.Int64{}
		workloads := []workload{{growthName("growthPing", size), "server-growth", func(w int) opFunc { return pingOp(mcs[w%len(mcs)]) }}}
		for _, r := range reads {
			cut := new(atomic.Int64)
			cuts[r.name] = cut
			workloads = append(workloads, workload{growthName(r.name, size), "server-growth", func(w int) opFunc {
				return growthReadOp(db(w), r, size, uint64(w)+uint64(size), cut)
			}})
		}
		if err := runPhase(ctx, gcfg, rep, want, workloads); err != nil {
			return err
		}
		// insertOne after the reads, so that they read the size's
		// documents and no more: at 10,000 it adds several times as many.
		before := inserted.Load()
		if err := runPhase(ctx, gcfg, rep, want, []workload{{growthName("growthInsert", size), "server-growth", func(w int) opFunc {
			return growthInsertOp(db(w).Collection(growthColl), docs, &inserted)
		}}}); err != nil {
			return err
		}
		for name, c := range cuts {
			if n := c.Load(); n > 0 {
				gs.Cut[name] = n
			}
		}
		gs.Inserted = inserted.Load() - before
		gr.Sizes = append(gr.Sizes, gs)
		if si < len(sizes)-1 && gs.Inserted > 0 {
			// One range delete on _id, without the shard key: it reaches
			// every partition.
			dctx, cancel := context.WithTimeout(ctx, time.Minute)
			res, err := coll.DeleteMany(dctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: growthInsertBase}}}})
			cancel()
			if err != nil {
				return fmt.Errorf("growth: deleting insertOne's documents: %w", err)
			}
			if res.DeletedCount != gs.Inserted {
				return fmt.Errorf("growth: deleted %d of insertOne's documents, want %d", res.DeletedCount, gs.Inserted)
			}
		}
	}
	return nil
}

func fmtBytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MB", float64(n)/(1<<20))
}

// growthGoals fills in each growth result's ratio to growthPing at its
// size, and adds the goals: rates and documents examined at the largest
// size against the smallest.
func growthGoals(rep *report) {
	gr := rep.Growth
	if gr == nil || len(gr.Sizes) == 0 {
		return
	}
	for _, gs := range gr.Sizes {
		p := rep.find(growthName("growthPing", gs.Docs), gr.Clients)
		for _, op := range growthOps[1:] {
			if r := rep.find(growthName(op, gs.Docs), gr.Clients); r != nil && p != nil && p.OpsPerS > 0 {
				r.VsPing = r.OpsPerS / p.OpsPerS
				for i := range min(len(r.Rounds), len(p.Rounds)) {
					if p.Rounds[i].OpsPerS > 0 {
						r.Rounds[i].VsPing = r.Rounds[i].OpsPerS / p.Rounds[i].OpsPerS
					}
				}
			}
		}
	}
	first, last := gr.Sizes[0], gr.Sizes[len(gr.Sizes)-1]
	if first.Docs != growthFirst || last.Docs == first.Docs {
		return
	}
	c := gr.Clients
	for _, op := range growthOps[1:] {
		g := goal{Name: fmt.Sprintf("%s@%d at %s >= %.2f x at %s", op, c, sizeLabel(last.Docs), growthRateGoal, sizeLabel(first.Docs)),
			Workload: op, Clients: c, Min: growthRateGoal}
		a, b := rep.find(growthName(op, last.Docs), c), rep.find(growthName(op, first.Docs), c)
		if a == nil && b == nil {
			continue
		}
		rep.Goals = append(rep.Goals, g.judge(a, b))
	}
	for _, r := range growthReads() {
		d0, ok0 := first.DocsExamined[r.name]
		d1, ok1 := last.DocsExamined[r.name]
		if !ok0 && !ok1 {
			continue
		}
		g := goal{Name: fmt.Sprintf("%s docsExamined at %s <= %.1f x at %s", r.name, sizeLabel(last.Docs), growthDocsGoal, sizeLabel(first.Docs)),
			Workload: r.name, Clients: c, Max: growthDocsGoal, Status: "n/a"}
		if ok0 && ok1 {
			g.Ratio, g.Status = float64(d1)/float64(max(d0, 1)), "FAIL"
			if float64(d1) <= growthDocsGoal*float64(d0) {
				g.Status = "PASS"
			}
		}
		rep.Goals = append(rep.Goals, g)
	}
}

func printGrowthSummary(w io.Writer, rep *report) {
	gr := rep.Growth
	if gr == nil {
		return
	}
	if len(gr.Sizes) == 0 {
		if gr.Note != "" {
			fmt.Fprintf(w, "growth: %s\n", gr.Note)
		}
		return
	}
	fmt.Fprintf(w, "growth: documents of %d bytes sharded on {region: \"hashed\"} (%d values), index {sku: 1}; %d clients; reads capped at maxTimeMS %d\n",
		docSize, growthRegions, gr.Clients, growthOpCap.Milliseconds())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tload\tload docs/s\tidle after\tRSS\tanonymous\tdisk\tinserted\t")
	prev := int64(0)
	for _, gs := range gr.Sizes {
		idle := fmt.Sprintf("%.1fs", gs.SettleSeconds)
		if !gs.Settled {
			idle = "not idle " + idle
		}
		fmt.Fprintf(tw, "%s\t%.1fs\t%.0f\t%s\t%s\t%s\t%s\t%d\t\n", sizeLabel(gs.Docs), gs.LoadSeconds, float64(gs.Docs-prev)/gs.LoadSeconds, idle,
			fmtBytes(gs.RSSBytes), fmtBytes(gs.RSSAnonBytes), fmtBytes(gs.DiskBytes), gs.Inserted)
		prev = gs.Docs
	}
	_ = tw.Flush()
	first := gr.Sizes[0]
	header := "workload\t"
	for _, gs := range gr.Sizes {
		header += "ops/s " + sizeLabel(gs.Docs) + "\t"
	}
	for _, gs := range gr.Sizes[1:] {
		header += "/" + sizeLabel(first.Docs) + " at " + sizeLabel(gs.Docs) + "\t"
	}
	header += "vs ping\tdocsExamined\tcut\t"
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, header)
	for _, op := range growthOps {
		line := op + "\t"
		var vsPing, examined, cut []string
		r0 := rep.find(growthName(op, first.Docs), gr.Clients)
		for _, gs := range gr.Sizes {
			r := rep.find(growthName(op, gs.Docs), gr.Clients)
			if r == nil {
				line += "-\t"
				vsPing = append(vsPing, "-")
			} else {
				line += fmt.Sprintf("%.0f\t", r.OpsPerS)
				vsPing = append(vsPing, fmt.Sprintf("%.2f", r.VsPing))
			}
			if n, ok := gs.DocsExamined[op]; ok {
				examined = append(examined, strconv.FormatInt(n, 10))
			} else {
				examined = append(examined, "-")
			}
			cut = append(cut, strconv.FormatInt(gs.Cut[op], 10))
		}
		for _, gs := range gr.Sizes[1:] {
			r := rep.find(growthName(op, gs.Docs), gr.Clients)
			if r == nil || r0 == nil || r0.OpsPerS == 0 {
				line += "-\t"
				continue
			}
			line += fmt.Sprintf("%.2f\t", r.OpsPerS/r0.OpsPerS)
		}
		if op == "growthPing" {
			line += "\t\t\t"
		} else {
			line += strings.Join(vsPing, " ") + "\t" + strings.Join(examined, " ") + "\t" + strings.Join(cut, " ") + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "growth: ops/s over all rounds at each size, then each size's rate over the first's; vs ping, docsExamined (explain) and cut (reads maxTimeMS stopped: their rate is an upper bound) per size")
	if rep.Config.InProcess {
		fmt.Fprintln(w, "growth: RSS is this process's: the server and the benchmark's client together")
	}
	if gr.Note != "" {
		fmt.Fprintf(w, "growth: %s\n", gr.Note)
	}
	last := gr.Sizes[len(gr.Sizes)-1]
	for _, g := range rep.Goals {
		if !strings.HasPrefix(g.Workload, "growth") || g.Status == "n/a" {
			continue
		}
		if g.Max > 0 {
			fmt.Fprintf(w, "growth: %s: %.2f (%d -> %d) %s\n", g.Name, g.Ratio, first.DocsExamined[g.Workload], last.DocsExamined[g.Workload], g.Status)
			continue
		}
		// Beside the goal, the same ratio with each rate taken relative
		// to ping's at its size: what remains when the machine's load
		// moved between the two sizes.
		norm := "-"
		a, b := rep.find(growthName(g.Workload, last.Docs), g.Clients), rep.find(growthName(g.Workload, first.Docs), g.Clients)
		if a != nil && b != nil && b.VsPing > 0 {
			norm = fmt.Sprintf("%.2f", a.VsPing/b.VsPing)
		}
		fmt.Fprintf(w, "growth: %s: %.2f (rounds: %s; relative to ping: %s; from cpu/op: %.2f) %s\n", g.Name, g.Ratio, g.perRound("%.2f"), norm, g.CPURatio, g.Status)
	}
	fmt.Fprintf(w, "growth: the section took %.0fs\n", gr.Seconds)
}
