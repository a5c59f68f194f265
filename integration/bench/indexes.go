package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The index workloads (issue 9, item 7) run on a server of their own. Each
// is compared with a baseline measured in the same run, interleaved with
// it round by round:
//
//	indexById           findOne {_id} on ixDocs documents of docSize bytes
//	indexByField        findOne {seq} through the index {seq: 1}, on the
//	                    same collection; goal: >= ixPointGoal x indexById,
//	                    at every -clients level
//	indexRange          find {seq: [a, a+ixRangeKeys)} through the index
//	indexRangeCollscan  the same find with hint {$natural: 1}: a collection
//	                    scan filtered to the same documents
//	indexSortLimit      find {seq: {$gte: a}} sort {seq: 1} limit
//	                    ixSortLimit, the order coming from the index
//	indexSortLimitMem   the same with hint {$natural: 1}: COLLSCAN + SORT
//	                    of the ixDocs-a matching documents
//	indexSortRange      the ixRangeKeys-key range sorted {seq: -1}: the
//	                    index read backwards
//	indexSortRangeMem   the same with hint {$natural: 1}: COLLSCAN + SORT
//	indexBuild          createIndexes over the ixDocs documents, one
//	                    index per round ({n: 1}, {ts: 1}, then {seq: 1}),
//	                    in documents per second, with indexInsertMany0's
//	                    documents per second for reference
//	indexInsert0/1/4    insertOne at the largest -clients level into a
//	                    collection with 0, 1 and 4 secondary indexes
//	indexInsertMany0/1/4  insertMany of insertManyBatch documents at the
//	                    smallest -clients level, with 0, 1 and 4 indexes
//
// seq, n and ts are permutations of _id uncorrelated with it (seq = _id x
// 7919 mod ixDocs, and so on), so that an index range fetches documents
// from all over the collection, as an index on any field but _id does.
// The builds index n, ts and seq in turn: three builds of the same work
// without dropping an index in between (a drop would take longer than
// the build: see indexBuilds). Range and sort workloads run at one
// client: a collection scan per operation saturates the machine on its
// own.
//
// Every read is explained (executionStats) once before it is measured, and
// the phase fails unless the plan is the one named: IXSCAN on seq_1 with no
// SORT stage, COLLSCAN with a SORT stage, IDHACK for _id.
//
// Only the point lookups have a goal; the other ratios are reported.
var indexWorkloads = []string{
	"indexById", "indexByField",
	"indexRange", "indexRangeCollscan", "indexSortLimit", "indexSortLimitMem", "indexSortRange", "indexSortRangeMem",
	"indexBuild",
	"indexInsert0", "indexInsert1", "indexInsert4",
	"indexInsertMany0", "indexInsertMany1", "indexInsertMany4",
}

const (
	ixDocs      = 100_000
	ixRangeKeys = 1000
	ixSortLimit = 100
	ixCats      = 100
	ixPointGoal = 0.7
)

// ixIndexes are the secondary indexes of the indexInsert4 collections; the
// first alone is indexInsert1's, and the index the reads use.
var ixIndexes = []bson.D{
	{{Key: "seq", Value: 1}},
	{{Key: "cat", Value: 1}},
	{{Key: "n", Value: 1}},
	{{Key: "ts", Value: 1}},
}

// ixDocBuilder builds docSize-byte documents {_id, seq, cat, n, ts, pad}.
type ixDocBuilder struct {
	padInt, padOID string // pad for an int64 and an ObjectID _id
	cats           []string
}

func newIxDocBuilder() ixDocBuilder {
	b := ixDocBuilder{}
	for i := range ixCats {
		b.cats = append(b.cats, fmt.Sprintf("cat-%03d", i))
	}
	n := len(b.appendDoc(nil, bsoncore.Value{Type: bsoncore.TypeInt64, Data: make([]byte, 8)}, 0, 0, 0, 0))
	b.padInt = strings.Repeat("p", docSize-n)
	b.padOID = b.padInt[4:] // an ObjectID is 4 bytes longer than an int64
	return b
}

func (b ixDocBuilder) appendDoc(dst []byte, id bsoncore.Value, seq int64, cat int, n, ts int64) []byte {
	pad := b.padInt
	if id.Type == bsoncore.TypeObjectID {
		pad = b.padOID
	}
	start, d := bsoncore.AppendDocumentStart(dst)
	d = bsoncore.AppendValueElement(d, "_id", id)
	d = bsoncore.AppendInt64Element(d, "seq", seq)
	d = bsoncore.AppendStringElement(d, "cat", b.cats[cat%ixCats])
	d = bsoncore.AppendInt64Element(d, "n", n)
	d = bsoncore.AppendInt64Element(d, "ts", ts)
	d = bsoncore.AppendStringElement(d, "pad", pad)
	d, _ = bsoncore.AppendDocumentEnd(d, start)
	return d
}

// preloaded is the document with _id i of the read collection.
func (b ixDocBuilder) preloaded(dst []byte, i int64) []byte {
	var idb [8]byte
	// Strides coprime with ixDocs = 2^5 x 5^5 make permutations.
	return b.appendDoc(dst, int64Value(idb[:], i), i*7919%ixDocs, int(i), i*6007%ixDocs, i*3001%ixDocs)
}

// fresh is a new document with an ObjectID _id and random field values
// (ts increasing, like a timestamp).
func (b ixDocBuilder) fresh(dst []byte, rng *rand.Rand) []byte {
	oid := bson.NewObjectID()
	return b.appendDoc(dst, bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}, rng.Int64(), rng.IntN(ixCats), rng.Int64(), time.Now().UnixNano())
}

// ixRead is one measured read: its command (for explain), how it runs
// through the driver, and the plan it must have.
type ixRead struct {
	name    string
	command func(a int64) bson.D // the find command for a random start a
	run     func(ctx context.Context, coll *mongo.Collection, a int64) (int, error)
	span    int64 // a is drawn from [0, ixDocs-span]
	want    int   // documents returned
	plan    planWant
}

// planWant is what explain must show.
type planWant struct {
	leaf      string // IDHACK, IXSCAN or COLLSCAN
	sort      bool   // a SORT stage above the leaf
	direction string // of the IXSCAN, if not ""
	maxKeys   int64  // totalKeysExamined at most (IXSCAN)
	docs      int64  // totalDocsExamined exactly
}

func ixReads() []ixRead {
	natural := bson.D{{Key: "$natural", Value: 1}}
	rangeFilter := func(a int64) bson.D {
		return bson.D{{Key: "seq", Value: bson.D{{Key: "$gte", Value: a}, {Key: "$lt", Value: a + ixRangeKeys}}}}
	}
	count := func(cur *mongo.Cursor, err error) (int, error) {
		if err != nil {
			return 0, err
		}
		defer cur.Close(context.Background())
		n := 0
		for cur.Next(context.Background()) {
			if len(cur.Current) != docSize {
				return n, fmt.Errorf("a document of %d bytes, want %d", len(cur.Current), docSize)
			}
			n++
		}
		return n, cur.Err()
	}
	point := func(field string) ixRead {
		name := "indexById"
		leaf := planWant{leaf: "IDHACK", docs: 1}
		if field != "_id" {
			name, leaf = "indexByField", planWant{leaf: "IXSCAN", maxKeys: 2, docs: 1}
		}
		return ixRead{
			name: name, span: 1, want: 1, plan: leaf,
			command: func(a int64) bson.D {
				return bson.D{{Key: "find", Value: "ix"}, {Key: "filter", Value: bson.D{{Key: field, Value: a}}}, {Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}}
			},
		}
	}
	ranged := func(name string, hint bson.D, plan planWant) ixRead {
		return ixRead{
			name: name, span: ixRangeKeys, want: ixRangeKeys, plan: plan,
			command: func(a int64) bson.D {
				c := bson.D{{Key: "find", Value: "ix"}, {Key: "filter", Value: rangeFilter(a)}}
				if hint != nil {
					c = append(c, bson.E{Key: "hint", Value: hint})
				}
				return c
			},
			run: func(ctx context.Context, coll *mongo.Collection, a int64) (int, error) {
				o := options.Find()
				if hint != nil {
					o.SetHint(hint)
				}
				return count(coll.Find(ctx, rangeFilter(a), o))
			},
		}
	}
	sortLimit := func(name string, hint bson.D, plan planWant) ixRead {
		filter := func(a int64) bson.D { return bson.D{{Key: "seq", Value: bson.D{{Key: "$gte", Value: a}}}} }
		sort := bson.D{{Key: "seq", Value: 1}}
		return ixRead{
			name: name, span: ixSortLimit, want: ixSortLimit, plan: plan,
			command: func(a int64) bson.D {
				c := bson.D{{Key: "find", Value: "ix"}, {Key: "filter", Value: filter(a)}, {Key: "sort", Value: sort}, {Key: "limit", Value: int64(ixSortLimit)}}
				if hint != nil {
					c = append(c, bson.E{Key: "hint", Value: hint})
				}
				return c
			},
			run: func(ctx context.Context, coll *mongo.Collection, a int64) (int, error) {
				o := options.Find().SetSort(sort).SetLimit(ixSortLimit)
				if hint != nil {
					o.SetHint(hint)
				}
				return count(coll.Find(ctx, filter(a), o))
			},
		}
	}
	sortRange := func(name string, hint bson.D, plan planWant) ixRead {
		sort := bson.D{{Key: "seq", Value: -1}}
		return ixRead{
			name: name, span: ixRangeKeys, want: ixRangeKeys, plan: plan,
			command: func(a int64) bson.D {
				c := bson.D{{Key: "find", Value: "ix"}, {Key: "filter", Value: rangeFilter(a)}, {Key: "sort", Value: sort}}
				if hint != nil {
					c = append(c, bson.E{Key: "hint", Value: hint})
				}
				return c
			},
			run: func(ctx context.Context, coll *mongo.Collection, a int64) (int, error) {
				o := options.Find().SetSort(sort)
				if hint != nil {
					o.SetHint(hint)
				}
				return count(coll.Find(ctx, rangeFilter(a), o))
			},
		}
	}
	return []ixRead{
		point("_id"),
		point("seq"),
		ranged("indexRange", nil, planWant{leaf: "IXSCAN", direction: "forward", maxKeys: ixRangeKeys + 1, docs: ixRangeKeys}),
		ranged("indexRangeCollscan", natural, planWant{leaf: "COLLSCAN", docs: ixDocs}),
		sortLimit("indexSortLimit", nil, planWant{leaf: "IXSCAN", direction: "forward", maxKeys: ixSortLimit + 1, docs: ixSortLimit}),
		sortLimit("indexSortLimitMem", natural, planWant{leaf: "COLLSCAN", sort: true, docs: ixDocs}),
		sortRange("indexSortRange", nil, planWant{leaf: "IXSCAN", direction: "backward", maxKeys: ixRangeKeys + 1, docs: ixRangeKeys}),
		sortRange("indexSortRangeMem", natural, planWant{leaf: "COLLSCAN", sort: true, docs: ixDocs}),
	}
}

// checkPlan explains cmd with executionStats and compares the winning plan
// with want.
func checkPlan(ctx context.Context, db *mongo.Database, name string, cmd bson.D, nWant int, want planWant) error {
	x, err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "executionStats"}}).Raw()
	if err != nil {
		return fmt.Errorf("%s: explain: %w", name, err)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s measures the wrong plan: %s; explain: %v", name, fmt.Sprintf(format, args...), x)
	}
	plan, err := x.LookupErr("queryPlanner", "winningPlan")
	if err != nil {
		return fail("no winningPlan")
	}
	doc := plan.Document()
	if sh, err := doc.LookupErr("shards"); err == nil { // as mongos explains: per partition
		first, _ := sh.Array().Values()
		if len(first) != 1 {
			return fail("%d partitions, want 1", len(first))
		}
		doc = first[0].Document().Lookup("winningPlan").Document()
	}
	var stages []string
	for {
		s, _ := doc.Lookup("stage").StringValueOK()
		stages = append(stages, s)
		in, err := doc.LookupErr("inputStage")
		if err != nil {
			break
		}
		doc = in.Document()
	}
	if leaf := stages[len(stages)-1]; leaf != want.leaf {
		return fail("stages %v, want %s at the bottom", stages, want.leaf)
	}
	if slices.Contains(stages, "SORT") != want.sort {
		return fail("stages %v: a SORT stage is %v, want %v", stages, !want.sort, want.sort)
	}
	if want.leaf == "IXSCAN" {
		if ix, _ := doc.Lookup("indexName").StringValueOK(); ix != "seq_1" {
			return fail("index %q, want seq_1", ix)
		}
		if want.direction != "" {
			if d, _ := doc.Lookup("direction").StringValueOK(); d != want.direction {
				return fail("direction %q, want %s", d, want.direction)
			}
		}
	}
	stat := func(key string) int64 {
		v, err := x.LookupErr("executionStats", key)
		if err != nil {
			return -1
		}
		n, ok := v.AsInt64OK()
		if !ok {
			return -1
		}
		return n
	}
	if n := stat("nReturned"); n != int64(nWant) {
		return fail("nReturned %d, want %d", n, nWant)
	}
	if n := stat("totalDocsExamined"); n != want.docs {
		return fail("totalDocsExamined %d, want %d", n, want.docs)
	}
	if n := stat("totalKeysExamined"); want.maxKeys > 0 && n > want.maxKeys {
		return fail("totalKeysExamined %d, want at most %d", n, want.maxKeys)
	}
	return nil
}

// indexPhase loads the read collection, times the index builds, checks
// the plans, then runs the reads and the inserts.
func indexPhase(ctx context.Context, cfg config, rep *report, want func(string) bool) (err error) {
	srv, stop, err := launchPhase("index", integration.ServerOptions{})
	if err != nil {
		return err
	}
	defer stop(&err)
	mcs, err := connect(cfg.ClientMode, srv.URI(), slices.Max(cfg.Clients))
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range mcs {
			_ = c.Disconnect(context.Background())
		}
	}()
	db := mcs[0].Database("bench")
	coll := func(w int, name string) *mongo.Collection { return mcs[w%len(mcs)].Database("bench").Collection(name) }
	b := newIxDocBuilder()
	reads := ixReads()

	needReads := slices.ContainsFunc(reads, func(r ixRead) bool { return want(r.name) })
	if needReads || want("indexBuild") {
		progress("index: preloading %d documents of %d bytes", ixDocs, docSize)
		ix := db.Collection("ix")
		t0 := time.Now()
		for i := int64(0); i < ixDocs; i += insertManyBatch {
			docs := make([]any, 0, insertManyBatch)
			for j := i; j < min(i+insertManyBatch, ixDocs); j++ {
				docs = append(docs, bson.Raw(b.preloaded(make([]byte, 0, docSize), j)))
			}
			if _, err := ix.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
				return fmt.Errorf("index preload: %w", err)
			}
		}
		progress("index: preloaded in %.2fs", time.Since(t0).Seconds())
		if err := indexBuilds(ctx, cfg, rep, want, ix); err != nil {
			return err
		}
	}

	if needReads {
		var wls []workload
		for i, r := range reads {
			if want(r.name) {
				if err := checkPlan(ctx, db, r.name, r.command(ixDocs/3), r.want, r.plan); err != nil {
					return err
				}
			}
			wls = append(wls, workload{r.name, "server-index", func(w int) opFunc {
				rng := rand.New(rand.NewPCG(uint64(w)+1, uint64(i)))
				return ixReadOp(coll(w, "ix"), r, rng)
			}})
		}
		// The point lookups at every -clients level; range and sorts at
		// one, for a third of the time: their ratios are large, and
		// explain has run each once already.
		if err := runPhase(ctx, cfg, rep, want, wls[:2]); err != nil {
			return err
		}
		if err := runPhase(ctx, shortened(cfg, 1, 3), rep, want, wls[2:]); err != nil {
			return err
		}
	}

	var ones, manys []workload
	for _, k := range []int{0, 1, 4} {
		one, many := fmt.Sprintf("indexInsert%d", k), fmt.Sprintf("indexInsertMany%d", k)
		for _, name := range []string{one, many} {
			if !want(name) {
				continue
			}
			if k > 0 {
				var models []mongo.IndexModel
				for _, key := range ixIndexes[:k] {
					models = append(models, mongo.IndexModel{Keys: key})
				}
				if _, err := db.Collection(name).Indexes().CreateMany(ctx, models); err != nil {
					return fmt.Errorf("%s: create indexes: %w", name, err)
				}
			} else if err := db.CreateCollection(ctx, name); err != nil {
				return err
			}
			specs, err := db.Collection(name).Indexes().ListSpecifications(ctx)
			if err != nil {
				return err
			}
			if len(specs) != 1+k {
				return fmt.Errorf("%s: %d indexes, want %d", name, len(specs), 1+k)
			}
		}
		ones = append(ones, workload{one, "server-index", func(w int) opFunc {
			return ixInsertOp(coll(w, one), b, rand.New(rand.NewPCG(uint64(w)+1, uint64(k))))
		}})
		manys = append(manys, workload{many, "server-index", func(w int) opFunc {
			return ixInsertManyOp(coll(w, many), b, rand.New(rand.NewPCG(uint64(w)+1, uint64(k))))
		}})
	}
	if err := runPhase(ctx, shortened(cfg, slices.Max(cfg.Clients), 2), rep, want, ones); err != nil {
		return err
	}
	return runPhase(ctx, shortened(cfg, slices.Min(cfg.Clients), 2), rep, want, manys)
}

// shortened is cfg at one concurrency for 1/div of its time (warmup
// included), so that the phase's fifteen workloads fit in under a minute.
func shortened(cfg config, clients int, div int) config {
	cfg.Clients = []int{clients}
	cfg.Duration /= time.Duration(div)
	cfg.Warmup /= time.Duration(div)
	cfg.MaxOps = max(cfg.MaxOps/int64(div), int64(cfg.Rounds))
	return cfg
}

// ixBuildKeys are the indexes indexBuilds times, one per round, the last
// being the one the reads use: three int64 fields, each a permutation of
// _id.
var ixBuildKeys = []bson.D{{{Key: "n", Value: 1}}, {{Key: "ts", Value: 1}}, ixIndexes[0]}

// indexBuilds times up to cfg.Rounds builds over the loaded collection
// (the last of ixBuildKeys, one per round), leaving the indexes in place.
// Each round builds an index of its own rather than dropping and
// rebuilding one: dropIndexes takes time quadratic in the index's size
// (its removeEntries rewinds to the start of the index, over the
// tombstones of the entries it has deleted already, for every batch of
// 1,000), 3.9s for 100,000 entries and 15s for 200,000.
func indexBuilds(ctx context.Context, cfg config, rep *report, want func(string) bool, ix *mongo.Collection) error {
	keys := ixBuildKeys[len(ixBuildKeys)-min(cfg.Rounds, len(ixBuildKeys)):]
	if !want("indexBuild") {
		keys = keys[len(keys)-1:]
		_, err := ix.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: keys[0]})
		return err
	}
	// Warm up: one collection scan, as every build is one.
	if err := ix.FindOne(ctx, bson.D{{Key: "pad", Value: "none"}}).Err(); err != mongo.ErrNoDocuments {
		return fmt.Errorf("index: warm-up scan: %v", err)
	}
	res := result{Workload: "indexBuild", Kind: "server-index", Clients: 1}
	for rd, key := range keys {
		if ctx.Err() != nil {
			return nil
		}
		cpu0, start := cpuTime(), time.Now()
		if _, err := ix.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: key}); err != nil {
			return fmt.Errorf("index build: %w", err)
		}
		elapsed, cpu := time.Since(start), cpuTime()-cpu0
		res.Ops += ixDocs
		res.Seconds += elapsed.Seconds()
		res.cpu += cpu
		res.Rounds = append(res.Rounds, round{Ops: ixDocs, Seconds: elapsed.Seconds(), OpsPerS: ixDocs / elapsed.Seconds(), StopBy: "count"})
		progress("%-13s round %d/%d  %9d docs indexed in %.2fs  %10.0f docs/s  %.2f cores", res.Workload, rd+1, len(keys), ixDocs,
			elapsed.Seconds(), ixDocs/elapsed.Seconds(), cpu.Seconds()/elapsed.Seconds())
	}
	res.OpsPerS = float64(res.Ops) / res.Seconds
	res.CPUPerOpUS = us(res.cpu / time.Duration(res.Ops))
	rep.Results = append(rep.Results, res)
	return nil
}

// ixReadOp runs r from a random start, checking the number of documents.
func ixReadOp(coll *mongo.Collection, r ixRead, rng *rand.Rand) opFunc {
	if r.run == nil { // a point lookup: findOne, filter pre-encoded
		field := "_id"
		if r.name == "indexByField" {
			field = "seq"
		}
		buf := make([]byte, 0, 32)
		return func(ctx context.Context) error {
			k := rng.Int64N(ixDocs)
			start, f := bsoncore.AppendDocumentStart(buf[:0])
			f = bsoncore.AppendInt64Element(f, field, k)
			f, _ = bsoncore.AppendDocumentEnd(f, start)
			buf = f
			raw, err := coll.FindOne(ctx, bson.Raw(f)).Raw()
			if err != nil {
				return fmt.Errorf("%s %d: %w", r.name, k, err)
			}
			if len(raw) != docSize {
				return fmt.Errorf("%s %d: got %d bytes, want %d", r.name, k, len(raw), docSize)
			}
			return nil
		}
	}
	return func(ctx context.Context) error {
		a := rng.Int64N(ixDocs - r.span + 1)
		n, err := r.run(ctx, coll, a)
		if err == nil && n != r.want {
			err = fmt.Errorf("%s from %d: %d documents, want %d", r.name, a, n, r.want)
		}
		return err
	}
}

// ixInsertOp inserts one fresh document per call.
func ixInsertOp(coll *mongo.Collection, b ixDocBuilder, rng *rand.Rand) opFunc {
	buf := make([]byte, 0, docSize)
	return func(ctx context.Context) error {
		buf = b.fresh(buf[:0], rng)
		_, err := coll.InsertOne(ctx, bson.Raw(buf))
		return err
	}
}

// ixInsertManyOp inserts insertManyBatch fresh documents per call.
func ixInsertManyOp(coll *mongo.Collection, b ixDocBuilder, rng *rand.Rand) opFunc {
	docs := make([]any, insertManyBatch)
	bufs := make([][]byte, insertManyBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 0, docSize)
	}
	return func(ctx context.Context) error {
		for i := range docs {
			bufs[i] = b.fresh(bufs[i][:0], rng)
			docs[i] = bson.Raw(bufs[i])
		}
		res, err := coll.InsertMany(ctx, docs)
		if err == nil && len(res.InsertedIDs) != insertManyBatch {
			err = fmt.Errorf("insertMany: %d of %d inserted", len(res.InsertedIDs), insertManyBatch)
		}
		return err
	}
}

// ixPair is a workload and the baseline it is reported against.
type ixPair struct{ workload, baseline string }

// ixPairs are the reported ratios, in summary order (the point lookups'
// are goals too).
var ixPairs = []ixPair{
	{"indexByField", "indexById"},
	{"indexRange", "indexRangeCollscan"},
	{"indexSortLimit", "indexSortLimitMem"},
	{"indexSortRange", "indexSortRangeMem"},
	{"indexInsert1", "indexInsert0"},
	{"indexInsert4", "indexInsert0"},
	{"indexInsertMany1", "indexInsertMany0"},
	{"indexInsertMany4", "indexInsertMany0"},
}

// indexGoals adds the point-lookup goal at each concurrency measured.
func indexGoals(rep *report) {
	for _, n := range rep.Config.Clients {
		a, b := rep.find("indexByField", n), rep.find("indexById", n)
		if a == nil && b == nil {
			continue
		}
		g := goal{Name: fmt.Sprintf("indexByField@%d >= %.2f x indexById@%d", n, ixPointGoal, n), Workload: "indexByField", Clients: n, Min: ixPointGoal, Status: "n/a"}
		rep.Goals = append(rep.Goals, g.judge(a, b))
	}
}

func printIndexSummary(w io.Writer, rep *report) {
	if !slices.ContainsFunc(rep.Results, func(r result) bool { return r.Kind == "server-index" }) {
		return
	}
	var four []string
	for _, k := range ixIndexes {
		four = append(four, k[0].Key)
	}
	fmt.Fprintf(w, "index: reads of %d documents of %d bytes through {seq: 1}, ranges of %d keys, sorts limited to %d; inserts with 4 indexes: on %s\n",
		ixDocs, docSize, ixRangeKeys, ixSortLimit, strings.Join(four, ", "))
	for _, g := range rep.Goals {
		if g.Workload == "indexByField" && g.Status != "n/a" {
			fmt.Fprintf(w, "index: %s: %.2f (rounds: %s; from cpu/op: %.2f) %s\n", g.Name, g.Ratio, g.perRound("%.2f"), g.CPURatio, g.Status)
		}
	}
	for _, p := range ixPairs[1:] {
		for _, a := range rep.Results {
			if a.Workload != p.workload {
				continue
			}
			b := rep.find(p.baseline, a.Clients)
			r, per, cpu := ratioOf(&a, b)
			if r == 0 {
				continue
			}
			docs := ""
			switch {
			case strings.HasPrefix(p.workload, "indexInsertMany"):
				docs = fmt.Sprintf("%.0f vs %.0f docs/s; ", a.OpsPerS*insertManyBatch, b.OpsPerS*insertManyBatch)
			case p.workload == "indexRange" || p.workload == "indexSortRange":
				docs = fmt.Sprintf("%.0f vs %.0f docs/s; ", a.OpsPerS*ixRangeKeys, b.OpsPerS*ixRangeKeys)
			case p.workload == "indexSortLimit":
				docs = fmt.Sprintf("%.0f vs %.0f docs/s; ", a.OpsPerS*ixSortLimit, b.OpsPerS*ixSortLimit)
			}
			fmt.Fprintf(w, "index: %s@%d / %s@%d: %.2f (%srounds: %s; from cpu/op: %.2f)\n", p.workload, a.Clients, p.baseline, b.Clients, r, docs, goal{PerRound: per}.perRound("%.2f"), cpu)
		}
	}
	if bld := rep.find("indexBuild", 0); bld != nil {
		var secs []string
		for _, rd := range bld.Rounds {
			secs = append(secs, fmt.Sprintf("%.2fs", rd.Seconds))
		}
		line := fmt.Sprintf("index: indexBuild over %d documents (an int64 field): %.0f docs/s (builds: %s; %.2f cores)", ixDocs, bld.OpsPerS, strings.Join(secs, " "), bld.cpu.Seconds()/bld.Seconds)
		if ins := rep.find("indexInsertMany0", 0); ins != nil && ins.OpsPerS > 0 {
			line += fmt.Sprintf(", %.2f x indexInsertMany0@%d's %.0f docs/s", bld.OpsPerS/(ins.OpsPerS*insertManyBatch), ins.Clients, ins.OpsPerS*insertManyBatch)
		}
		fmt.Fprintln(w, line)
	}
}
