package engine

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// aggArgs are the parsed options of aggregate.
type aggArgs struct {
	pipeline     bsoncore.Document // BSON array
	batchSize    int64             // -1: not given
	hasCursor    bool
	explain      bool
	allowDiskUse *bool
	maxTimeMS    int64
	let          bsoncore.Document
	hint         hintArg
	sessions     []bsoncore.Document
	currentOps   []bsoncore.Document // what $currentOp lists
	sampled      []bsoncore.Document // what $listSampledQueries lists
	collation    collationOpt
}

// dbAggregateStages may open a database-level aggregate ({aggregate: 1}).
var dbAggregateStages = map[string]bool{
	"$documents": true, "$currentOp": true, "$listLocalSessions": true, "$changeStream": true,
	"$listSessions": true, "$queryStats": true, "$listSampledQueries": true,
}

// cmdAggregate runs an aggregation pipeline (engine/agg) on a collection,
// or on the database with {aggregate: 1}. The pipeline is split as a
// router splits it: its partition-local prefix (and a partial $group)
// runs on every physical partition its leading $match can match, in
// parallel, and the rest once on their merged stream (runPipeline). The
// result is a cursor, as find's; $out and $merge run to completion first
// and return an empty one. explain: true returns the plan instead
// (aggexplain.go). On a view it runs on the collection the view reads,
// the view's pipeline first (views.go).
func (e *Engine) cmdAggregate(ctx context.Context, req *request) ([]byte, error) {
	started := e.now()
	coll, dbLevel, err := aggregateTarget(req)
	if err != nil {
		return nil, err
	}
	args, err := parseAggregate(req.name, req.body)
	if err != nil {
		return nil, err
	}
	if spec, ok, err := changeStreamStage(args.pipeline); err != nil {
		return nil, err
	} else if ok {
		return e.openChangeStream(ctx, req, coll, dbLevel, args, spec)
	}
	view := coll // a view's cursor reports the view's namespace
	if !dbLevel {
		if coll, err = e.resolveAggregateView(req.db, coll, args); err != nil {
			return nil, err
		}
	}
	args.sessions = callerSessions(req.body, e.now())
	if spec, ok := currentOpSpec(args.pipeline); ok {
		if args.currentOps, err = e.currentOps(req, spec); err != nil {
			return nil, err
		}
	}
	if spec, ok := leadingStageSpec(args.pipeline, "$listSampledQueries"); ok {
		if args.sampled, err = e.listSampledQueries(spec); err != nil {
			return nil, err
		}
	}
	p, err := e.parsePipeline(req.db, coll, args)
	if err != nil {
		return nil, err
	}
	if err := checkAggregateTarget(req.db, dbLevel, p); err != nil {
		return nil, err
	}
	if p.Writes() && readConcernLevel(req.body) == "linearizable" {
		return nil, errorf(ErrInvalidOptions, "cannot use $out or $merge with readConcern level linearizable")
	}
	c := e.store.Collection(req.db, coll)
	if err := e.checkAggregateHint(c, req.db, coll, args); err != nil {
		return nil, err
	}
	if args.explain {
		out, err := e.explainAggregate(ctx, req.db, coll, p, c, verbosityQueryPlanner)
		if err != nil {
			return nil, err
		}
		return okReply(append(out, bson.E{Key: "serverInfo", Value: e.serverInfo(req)},
			bson.E{Key: "command", Value: rawToD(req.body)})...)
	}
	if !args.hasCursor {
		return nil, errorf(ErrFailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	ns := namespaceOf(req.db, view)
	if dbLevel {
		ns = namespaceOf(req.db, "$cmd.aggregate")
	}
	// Request units: admitted on the partitions the leading $match routes
	// to, then charged for what the partitions' readers read.
	tally := &aggTally{}
	var input *store.Collection
	var spans []partitionSpan
	if _, virtual := e.virtualDocs(req.db, coll); c != nil && !virtual && p.NeedsInput() {
		input, spans = c, plan.RoutePartitions(c, plan.Uncollated(p.LeadingMatch(), p.Collation()))
	}
	bill := e.newReadBill(req, input, spans, nil, p.LeadingMatch(), tally)
	if err := e.admitRead(ctx, req, &bill); err != nil {
		return nil, err
	}
	if p.Writes() {
		ctx = withValidationBypass(ctx, req)
	}
	src := &aggSource{it: e.runPipeline(ctx, req.db, coll, p, c, nil, nil, tally), reads: tally}
	if p.Writes() {
		// $out and $merge run to completion before the reply, which has
		// no documents and no cursor.
		_, _, err := src.nextBatch(ctx, 0, maxBatchBytes)
		src.close()
		e.chargeRead(req, &bill, 0)
		if err != nil {
			return nil, err
		}
		return cursorReply(0, ns, "firstBatch", emptyArray), nil
	}
	first := int64(defaultFirstBatch)
	if args.batchSize >= 0 {
		first = args.batchSize
	}
	var docs [][]byte
	done := false
	if first > 0 {
		docs, done, err = src.nextBatch(ctx, int(first), maxBatchBytes)
		e.chargeRead(req, &bill, len(docs))
		if err != nil {
			src.close()
			return nil, err
		}
	} else {
		e.chargeRead(req, &bill, 0)
	}
	var id int64
	if done {
		src.close()
	} else {
		var budget time.Duration
		if args.maxTimeMS > 0 {
			budget = time.Duration(args.maxTimeMS)*time.Millisecond - e.now().Sub(started)
			if budget <= 0 {
				src.close()
				return nil, errorf(ErrMaxTimeMSExpired, "operation exceeded time limit")
			}
		}
		kept := bill
		id = e.cursors.open(ns, req.c.wc.ID(), requestSession(req.body), src, cursorOptions{budget: budget, bill: &kept, owner: req.c.cursorOwner(), snap: snapshotOf(ctx), txn: txnOf(ctx)})
	}
	return cursorReply(id, ns, "firstBatch", batchArray(docs)), nil
}

// aggregateTarget reads the first field: a collection name, or 1 for a
// database-level aggregate.
func aggregateTarget(req *request) (coll string, dbLevel bool, err error) {
	v := req.body.Index(0).Value()
	if s, ok := v.StringValueOK(); ok {
		if err := validateCollName(req.db, s); err != nil {
			return "", false, err
		}
		return s, false, nil
	}
	if f, ok := numberFloat(v); ok && f == 1 {
		if err := validateDBName(req.db); err != nil {
			return "", false, err
		}
		return "", true, nil
	}
	return "", false, errorf(ErrFailedToParse, "Invalid %s: {aggregate: %s}. Must be either string or 1", req.name, shellString(v))
}

// checkAggregateTarget applies the rules of database-level aggregates.
func checkAggregateTarget(db string, dbLevel bool, p *agg.Pipeline) error {
	first := p.FirstStage()
	switch {
	case dbLevel && !dbAggregateStages[first]:
		if first == "" {
			return errorf(ErrInvalidNamespace, "{aggregate: 1} is not valid for an empty pipeline.")
		}
		return errorf(ErrInvalidNamespace, "{aggregate: 1} is not valid for '%s'; a collection is required.", first)
	case (first == "$currentOp" || first == "$listLocalSessions" || first == "$listSampledQueries") && !dbLevel:
		return errorf(ErrInvalidNamespace, "%s must be run against the 'admin' database with {aggregate: 1}", first)
	case (first == "$currentOp" || first == "$listSampledQueries") && db != "admin":
		return errorf(ErrInvalidNamespace, "%s must be run against the 'admin' database with {aggregate: 1}", first)
	}
	return nil
}

func parseAggregate(cmd string, body bsoncore.Document) (*aggArgs, error) {
	a := &aggArgs{batchSize: -1}
	hasPipeline := false
	elems, _ := body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "pipeline":
			if v.Type != bsoncore.TypeArray {
				return nil, wrongType(cmd, k, v, "array")
			}
			a.pipeline, hasPipeline = v.Data, true
		case "cursor":
			d, derr := docArg(cmd, k, v)
			if derr != nil {
				return nil, derr
			}
			a.hasCursor = true
			cel, _ := d.Elements()
			for _, c := range cel {
				switch c.Key() {
				case "batchSize":
					if a.batchSize, err = int64Arg(cmd, "cursor.batchSize", c.Value()); err == nil && a.batchSize < 0 {
						err = negativeValue("batchSize", a.batchSize)
					}
				default:
					err = unknownField(cmd, "cursor."+c.Key())
				}
				if err != nil {
					return nil, err
				}
			}
		case "explain":
			a.explain, err = boolArg(cmd, k, v)
		case "allowDiskUse":
			var b bool
			if b, err = boolArg(cmd, k, v); err == nil {
				a.allowDiskUse = &b
			}
		case "maxTimeMS":
			a.maxTimeMS, err = int64Arg(cmd, k, v)
		case "let":
			a.let, err = docArg(cmd, k, v)
		case "hint":
			if !a.hint.parse(v) {
				err = errorf(ErrFailedToParse, "hint must be a string or an object")
			}
		case "collation":
			err = a.collation.parse(cmd, k, v)
		case "bypassDocumentValidation", "fromMongos", "needsMerge", "isMapReduceCommand", "fromRouter",
			"$_generateV2ResumeTokens", "exchange", "collectionUUID", "use44SortKeys", "$_requestReshardingResumeToken",
			"$_passthroughToShard", "query_stats", "includeQueryStatsMetrics", "encryptionInformation":
		default:
			if !genericFields[k] {
				err = unknownField(cmd, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if !hasPipeline {
		return nil, missingField(cmd, "pipeline")
	}
	return a, nil
}

// parsePipeline compiles an aggregate's pipeline. allowDiskUse defaults
// to true, as MongoDB 7.0's allowDiskUseByDefault does: only an explicit
// allowDiskUse: false makes blocking stages fail past their memory limit.
func (e *Engine) parsePipeline(db, coll string, a *aggArgs) (*agg.Pipeline, error) {
	opts := agg.Options{
		DB: db, Coll: coll, Let: a.let, Now: e.now(), AllowDiskUse: a.allowDiskUse == nil || *a.allowDiskUse,
		MemoryLimit: e.aggMemoryLimit(), Collections: aggCollections{e: e}, Sessions: a.sessions, CurrentOps: a.currentOps, SampledQueries: a.sampled,
		Collation: a.collation.resolve(e, db, coll),
	}
	p, err := agg.Parse(a.pipeline, opts)
	if err != nil {
		return nil, aggError(err)
	}
	return p, nil
}

// aggMemoryLimit is what each blocking stage may hold.
func (e *Engine) aggMemoryLimit() int64 {
	if e.cfg.AggMemoryLimit > 0 {
		return e.cfg.AggMemoryLimit
	}
	return agg.DefaultMemoryLimit
}

// checkAggregateHint accepts the hints find accepts (only _id_ exists).
func (e *Engine) checkAggregateHint(c *store.Collection, db, coll string, a *aggArgs) error {
	if !a.hint.set || c == nil {
		return nil
	}
	p := &readPlan{NS: namespaceOf(db, coll), Coll: c, Filter: &query.Filter{}}
	return e.applyHint(p, a.hint, nil, nil)
}

// runPipeline runs p over the partitions of c its leading $match can
// match: the partition-local part on each (in parallel), the rest on
// their merged stream.
//
// tally (nil: none) counts what each partition's reader reads, for
// request units.
func (e *Engine) runPipeline(ctx context.Context, db, coll string, p *agg.Pipeline, c *store.Collection, examined *atomic.Int64, spansOut *[]partitionSpan, tally *aggTally) agg.Iterator {
	split := p.Split()
	var its []agg.Iterator
	var spans []partitionSpan
	if p.NeedsInput() {
		spans, its = e.aggPartitionSources(e.viewOf(ctx), db, coll, c, p, examined)
		tally.count(its)
	} else {
		spans, its = []partitionSpan{{ID: "0"}}, []agg.Iterator{agg.Empty()}
	}
	if spansOut != nil {
		*spansOut = spans
	}
	return split.Run(its, runtime.GOMAXPROCS(0))
}

// aggSource is a cursor's view of a running pipeline.
type aggSource struct {
	it      agg.Iterator
	pending []byte // a document that did not fit the last batch
	done    bool
	reads   *aggTally
}

// aggTally counts what an aggregation's partition readers read, per
// partition (in routing order): what request units are charged for.
type aggTally struct {
	parts []readCounter
}

type readCounter struct{ docs, bytes atomic.Int64 }

// count has the partition readers among its count into t.
func (t *aggTally) count(its []agg.Iterator) {
	if t == nil {
		return
	}
	t.parts = make([]readCounter, len(its))
	for i, it := range its {
		switch r := it.(type) {
		case *partitionReader:
			r.counter = &t.parts[i]
		case *plan.IndexIterator:
			r.Docs, r.Bytes = &t.parts[i].docs, &t.parts[i].bytes
		}
	}
}

func (t *aggTally) tally(i int) planStats {
	if t == nil || i >= len(t.parts) {
		return planStats{}
	}
	return planStats{DocsExamined: t.parts[i].docs.Load(), BytesRead: t.parts[i].bytes.Load()}
}

func (s *aggSource) tally(i int) planStats { return s.reads.tally(i) }

func (s *aggSource) nextBatch(ctx context.Context, max, maxBytes int) ([][]byte, bool, error) {
	var docs [][]byte
	bytes := 0
	if s.pending != nil {
		docs, bytes, s.pending = append(docs, s.pending), len(s.pending), nil
	}
	for !s.done && (max <= 0 || len(docs) < max) {
		d, err := s.it.Next(ctx)
		if err != nil {
			s.close()
			return nil, false, aggError(err)
		}
		if d == nil {
			s.close()
			break
		}
		if len(d) > maxBSONDocument {
			s.close()
			return nil, false, errorf(ErrBSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and 16793600(16MB)", len(d), len(d))
		}
		doc := append([]byte(nil), d...)
		if len(docs) > 0 && bytes+len(doc) > maxBytes {
			s.pending = doc
			break
		}
		docs = append(docs, doc)
		bytes += len(doc)
	}
	return docs, s.done && s.pending == nil, nil
}

// maxBSONDocument is the largest document a reply may carry (16 MB plus
// MongoDB's internal slack).
const maxBSONDocument = 16*1024*1024 + 16*1024

func (s *aggSource) close() {
	if !s.done {
		s.done = true
		s.it.Close()
	}
}

// readConcernLevel is the command's readConcern.level ("" when none).
func readConcernLevel(body bsoncore.Document) string {
	v, err := body.LookupErr("readConcern", "level")
	if err != nil {
		return ""
	}
	return stringOf(v)
}

// callerSessions is what $listLocalSessions shows: Parsec keeps no
// session cache, so the only session it knows is the caller's own.
func callerSessions(body bsoncore.Document, now time.Time) []bsoncore.Document {
	id, err := body.LookupErr("lsid", "id")
	if err != nil {
		return nil
	}
	// uid is the SHA-256 of the (empty) user name, as MongoDB computes it
	// without authentication.
	uid := []byte{0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
		0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55}
	sid := bsoncore.NewDocumentBuilder().AppendValue("id", id).AppendBinary("uid", 0, uid).Build()
	return []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendDocument("_id", sid).
		AppendDateTime("lastUse", now.UnixMilli()).Build()}
}

// currentOpSpec is the argument of a pipeline's leading $currentOp stage.
func currentOpSpec(pipeline bsoncore.Document) (bsoncore.Document, bool) {
	first, err := pipeline.IndexErr(0)
	if err != nil {
		return nil, false
	}
	stage, ok := first.Value().DocumentOK()
	if !ok {
		return nil, false
	}
	el, err := stage.IndexErr(0)
	if err != nil || el.Key() != "$currentOp" {
		return nil, false
	}
	spec, _ := el.Value().DocumentOK() // a wrong type is the stage parser's to refuse
	return spec, true
}

// currentOps are the operations $currentOp lists for req: with access
// control and without allUsers, only those of req's own user.
func (e *Engine) currentOps(req *request, spec bsoncore.Document) ([]bsoncore.Document, error) {
	allUsers := false
	for el := range value.All(spec) {
		switch k, v := el.Key(), el.Value(); k {
		case "allUsers":
			b, err := boolArg("$currentOp", k, v)
			if err != nil {
				return nil, err
			}
			allUsers = b
		case "idleConnections", "idleCursors", "idleSessions", "localOps", "truncateOps", "backtrace", "targetAllNodes":
			if _, err := boolArg("$currentOp", k, v); err != nil {
				return nil, err
			}
		default:
			return nil, errorf(ErrFailedToParse, "Unrecognized option '%s' in $currentOp stage.", k)
		}
	}
	var only func(*conn) bool
	if e.cfg.Auth && !allUsers {
		me := req.c.cursorOwner()
		only = func(c *conn) bool { return c.cursorOwner() == me }
	}
	docs := currentOpDocs(e.running.snapshot(), e.hostPort(), e.now(), only)
	if only == nil {
		docs = append(docs, e.reshardingOpDocs(e.hostPort(), e.now())...)
	}
	return docs, nil
}
