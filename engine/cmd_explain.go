package engine

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/parsecdb/parsec/engine/plan"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// explainShardName names this node in explain output, which Parsec gives
// in mongos's shape: one entry under winningPlan.shards per physical
// partition read (today each collection is one partition, "0"), each
// with its partitionKeyRangeId as Cosmos DB names it.
const explainShardName = "shard-0"

// shardName is the shard that holds the data, as explain, listShards,
// config.shards and config.chunks name it: shard-0 for a single server;
// in a cluster the node whose replica leads the data's group, the writer
// (node<id>), so sh.status() shows where each chunk is served from.
func (e *Engine) shardName() string {
	if e.cfg.NodeID != 0 {
		return fmt.Sprintf("node%d", e.cfg.NodeID)
	}
	return explainShardName
}

// explainVerbosity orders explain's verbosity levels.
type explainVerbosity int

const (
	verbosityQueryPlanner explainVerbosity = iota
	verbosityExecutionStats
	verbosityAllPlans
)

func (e *Engine) cmdExplain(ctx context.Context, req *request) ([]byte, error) {
	inner, ok := req.body.Index(0).Value().DocumentOK()
	if !ok {
		return nil, errorf(ErrFailedToParse, "explain command requires a nested object")
	}
	verbosity := verbosityAllPlans
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "verbosity":
			s, err := stringArg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			switch s {
			case "queryPlanner":
				verbosity = verbosityQueryPlanner
			case "executionStats":
				verbosity = verbosityExecutionStats
			case "allPlansExecution":
				verbosity = verbosityAllPlans
			default:
				return nil, errorf(ErrBadValue, "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}")
			}
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	first, err := inner.IndexErr(0)
	if err != nil {
		return nil, errorf(ErrFailedToParse, "explain command requires a nested object")
	}
	cmd := first.Key()
	coll, ok := first.Value().StringValueOK()
	if !ok && (cmd == "find" || cmd == "count" || cmd == "distinct") {
		return nil, errorf(ErrInvalidNamespace, "collection name has invalid type %s", TypeName(first.Value().Type))
	}
	aggBody := inner
	if (cmd == "find" || cmd == "count" || cmd == "distinct") && e.isView(req.db, coll) {
		// As MongoDB does: the aggregate the read of a view runs.
		if aggBody, err = viewReadAsAggregate(cmd, coll, inner); err != nil {
			return nil, err
		}
		cmd = "aggregate"
	}
	if cmd == "aggregate" {
		out, err := e.explainAggregateCommand(ctx, req, aggBody, verbosity)
		if err != nil {
			return nil, err
		}
		return okReply(append(smallInts(out), bson.E{Key: "serverInfo", Value: e.serverInfo(req)},
			bson.E{Key: "command", Value: rawToD(inner)})...)
	}
	var ex *explained
	switch cmd {
	case "find":
		ex, err = e.explainFind(ctx, req.db, coll, inner, verbosity)
	case "count":
		ex, err = e.explainCount(ctx, req.db, coll, inner, verbosity)
	case "distinct":
		ex, err = e.explainDistinct(ctx, req.db, coll, inner, verbosity)
	case "update", "delete", "findAndModify", "findandmodify":
		ex, err = e.explainWrite(ctx, req.db, e.commands[cmd].name, inner, verbosity)
	default:
		if _, known := e.commands[cmd]; known {
			return nil, errorf(ErrCommandNotSupported, "explain of %s is not supported by Parsec yet", cmd)
		}
		return nil, errorf(ErrCommandNotFound, "Explain failed due to unknown command: %s", cmd)
	}
	if err != nil {
		return nil, err
	}
	command := append(bson.D{}, rawToD(inner)...)
	if _, err := inner.LookupErr("$db"); err != nil {
		command = append(command, bson.E{Key: "$db", Value: req.db})
	}
	return okReply(append(smallInts(ex.reply(verbosity)),
		bson.E{Key: "serverInfo", Value: e.serverInfo(req)},
		bson.E{Key: "command", Value: command},
	)...)
}

// explained is what explain reports about one command's plan.
type explained struct {
	shard      string // the shard name (Engine.shardName)
	ns         string
	parsed     bsoncore.Document
	plan       bson.D // the per-partition winning plan (stage tree)
	stats      planStats
	nReturned  int64 // what executionStats reports (count: 0)
	millis     int64
	partitions []string
	executed   bool
	// perPartition are each partition's statistics when a read fanned
	// out (nil: the totals are the one partition's).
	perPartition map[string]planStats
}

func (x *explained) reply(v explainVerbosity) bson.D {
	parsed := bson.Raw(x.parsed)
	if len(x.parsed) == 0 {
		parsed = bson.Raw(emptyDocument)
	}
	stage := "SINGLE_SHARD"
	if len(x.partitions) > 1 {
		stage = "SHARD_MERGE"
	}
	var shards bson.A
	for _, pk := range x.partitions {
		shards = append(shards, bson.D{
			{Key: "shardName", Value: x.shard},
			{Key: "partitionKeyRangeId", Value: pk},
			{Key: "connectionString", Value: x.shard},
			{Key: "namespace", Value: x.ns},
			{Key: "indexFilterSet", Value: false},
			{Key: "parsedQuery", Value: parsed},
			{Key: "maxIndexedOrSolutionsReached", Value: false},
			{Key: "maxIndexedAndSolutionsReached", Value: false},
			{Key: "maxScansToExplodeReached", Value: false},
			{Key: "winningPlan", Value: stripStats(x.plan)},
			{Key: "rejectedPlans", Value: bson.A{}},
		})
	}
	out := bson.D{{Key: "queryPlanner", Value: bson.D{
		{Key: "mongosPlannerVersion", Value: int32(1)},
		{Key: "winningPlan", Value: bson.D{{Key: "stage", Value: stage}, {Key: "shards", Value: shards}}},
	}}}
	if v < verbosityExecutionStats {
		return out
	}
	var shardStats bson.A
	for _, pk := range x.partitions {
		n, keys, docs := x.nReturned, x.stats.KeysExamined, x.stats.DocsExamined
		if st, ok := x.perPartition[pk]; ok {
			n, keys, docs = st.Returned, st.KeysExamined, st.DocsExamined
		}
		s := bson.D{
			{Key: "shardName", Value: x.shard},
			{Key: "partitionKeyRangeId", Value: pk},
			{Key: "executionSuccess", Value: true},
			{Key: "nReturned", Value: n},
			{Key: "executionTimeMillis", Value: x.millis},
			{Key: "totalKeysExamined", Value: keys},
			{Key: "totalDocsExamined", Value: docs},
			{Key: "executionStages", Value: x.plan},
		}
		if v == verbosityAllPlans {
			s = append(s, bson.E{Key: "allPlansExecution", Value: bson.A{}})
		}
		shardStats = append(shardStats, s)
	}
	return append(out, bson.E{Key: "executionStats", Value: bson.D{
		{Key: "nReturned", Value: x.nReturned},
		{Key: "executionTimeMillis", Value: x.millis},
		{Key: "totalKeysExamined", Value: x.stats.KeysExamined},
		{Key: "totalDocsExamined", Value: x.stats.DocsExamined},
		{Key: "executionStages", Value: bson.D{
			{Key: "stage", Value: stage},
			{Key: "nReturned", Value: x.nReturned},
			{Key: "executionTimeMillis", Value: x.millis},
			{Key: "totalKeysExamined", Value: x.stats.KeysExamined},
			{Key: "totalDocsExamined", Value: x.stats.DocsExamined},
			{Key: "totalChildMillis", Value: x.millis},
			{Key: "shards", Value: shardStats},
		}},
	}})
}

// statKeys are the execution statistics a stage carries; queryPlanner
// output leaves them out.
var statKeys = map[string]bool{"nReturned": true, "executionTimeMillisEstimate": true, "docsExamined": true,
	"keysExamined": true, "isEOF": true, "nCounted": true, "works": true, "advanced": true}

func stripStats(d bson.D) bson.D {
	var out bson.D
	for _, e := range d {
		if statKeys[e.Key] {
			continue
		}
		if sub, ok := e.Value.(bson.D); ok && e.Key == "inputStage" {
			e.Value = stripStats(sub)
		}
		out = append(out, e)
	}
	return out
}

func rawToD(doc bsoncore.Document) bson.D {
	var d bson.D
	_ = bson.Unmarshal(doc, &d)
	return d
}

func (e *Engine) serverInfo(req *request) bson.D {
	host, port := e.host, int32(27017)
	if a := req.c.wc.LocalAddr(); a != nil {
		if _, p, err := net.SplitHostPort(a.String()); err == nil {
			if n, err := strconv.Atoi(p); err == nil {
				port = int32(n)
			}
		}
	}
	return bson.D{{Key: "host", Value: host}, {Key: "port", Value: port}, {Key: "version", Value: MongoVersion}, {Key: "gitVersion", Value: "parsec-" + Version}}
}

// stageTree builds the per-partition plan of a find-like read, from the
// access path up: COLLSCAN, IDHACK or FETCH+IXSCAN on _id, then SORT,
// SKIP, LIMIT and PROJECTION as the plan needs them.
func stageTree(p *readPlan, filter bsoncore.Document, projection bsoncore.Document, st planStats, executed bool) bson.D {
	withStats := func(d bson.D, n int64, extra ...bson.E) bson.D {
		if !executed {
			return d
		}
		d = append(d, bson.E{Key: "nReturned", Value: n}, bson.E{Key: "executionTimeMillisEstimate", Value: int64(0)})
		d = append(d, extra...)
		return append(d, bson.E{Key: "isEOF", Value: int32(1)})
	}
	hasFilter := len(filter) > 5
	if p.Coll == nil {
		return withStats(bson.D{{Key: "stage", Value: "EOF"}}, 0)
	}
	matched := st.Returned // documents the access path passed on after filtering
	var tree bson.D
	switch {
	case p.Point != nil:
		tree = withStats(bson.D{{Key: "stage", Value: "IDHACK"}}, matched,
			bson.E{Key: "keysExamined", Value: st.KeysExamined}, bson.E{Key: "docsExamined", Value: st.DocsExamined})
	case p.Index != nil:
		tree = indexStages(p, filter, st, withStats)
	case p.ShardKeyScan:
		tree = shardKeyStages(p.Coll, filter, st, withStats)
	case p.UseIDIndex:
		ix := withStats(bson.D{
			{Key: "stage", Value: "IXSCAN"},
			{Key: "keyPattern", Value: bson.D{{Key: "_id", Value: int32(1)}}},
			{Key: "indexName", Value: "_id_"},
			{Key: "isMultiKey", Value: false},
			{Key: "multiKeyPaths", Value: bson.D{{Key: "_id", Value: bson.A{}}}},
			{Key: "isUnique", Value: true},
			{Key: "isSparse", Value: false},
			{Key: "isPartial", Value: false},
			{Key: "indexVersion", Value: int32(2)},
			{Key: "direction", Value: "forward"},
			{Key: "indexBounds", Value: bson.D{{Key: "_id", Value: bson.A{"[MinKey, MaxKey]"}}}},
		}, st.KeysExamined, bson.E{Key: "keysExamined", Value: st.KeysExamined})
		fetch := bson.D{{Key: "stage", Value: "FETCH"}}
		if hasFilter {
			fetch = append(fetch, bson.E{Key: "filter", Value: bson.Raw(filter)})
		}
		fetch = withStats(fetch, matched, bson.E{Key: "docsExamined", Value: st.DocsExamined})
		tree = append(fetch, bson.E{Key: "inputStage", Value: ix})
	default:
		scan := bson.D{{Key: "stage", Value: "COLLSCAN"}}
		if hasFilter {
			scan = append(scan, bson.E{Key: "filter", Value: bson.Raw(filter)})
		}
		dir := "forward"
		if p.Natural < 0 && (p.Sort == nil || p.Sort.IsEmpty()) {
			dir = "backward"
		}
		scan = append(scan, bson.E{Key: "direction", Value: dir})
		tree = withStats(scan, matched, bson.E{Key: "docsExamined", Value: st.DocsExamined})
	}
	out := st.Returned
	sortedByIndex := p.StreamByID || (p.Index != nil && p.Index.Sorted)
	if p.Sort != nil && !p.Sort.IsEmpty() && !sortedByIndex {
		s := bson.D{{Key: "stage", Value: "SORT"}, {Key: "sortPattern", Value: bson.Raw(sortSpecOf(p))},
			{Key: "memLimit", Value: int64(plan.SortMemoryLimit)}}
		if p.Limit > 0 {
			s = append(s, bson.E{Key: "limitAmount", Value: p.Limit + p.Skip})
		}
		s = append(s, bson.E{Key: "type", Value: "simple"})
		tree = append(withStats(s, out), bson.E{Key: "inputStage", Value: tree})
	}
	if p.Skip > 0 {
		tree = append(withStats(bson.D{{Key: "stage", Value: "SKIP"}, {Key: "skipAmount", Value: p.Skip}}, out),
			bson.E{Key: "inputStage", Value: tree})
	}
	if p.Limit > 0 && (p.Sort == nil || p.Sort.IsEmpty() || sortedByIndex) {
		tree = append(withStats(bson.D{{Key: "stage", Value: "LIMIT"}, {Key: "limitAmount", Value: p.Limit}}, out),
			bson.E{Key: "inputStage", Value: tree})
	}
	if !p.Proj.IsEmpty() {
		kind := "PROJECTION_DEFAULT"
		if simpleProjection(projection) {
			kind = "PROJECTION_SIMPLE"
		}
		tree = append(withStats(bson.D{{Key: "stage", Value: kind}, {Key: "transformBy", Value: bson.Raw(projection)}}, out),
			bson.E{Key: "inputStage", Value: tree})
	}
	return tree
}

// sortSpecOf is the sort pattern a plan sorts by, as given.
func sortSpecOf(p *readPlan) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, path := range p.Sort.Paths() {
		b.AppendInt32(path, 1)
	}
	return b.Build()
}

// simpleProjection: only top-level inclusions or exclusions.
func simpleProjection(spec bsoncore.Document) bool {
	for _, el := range mustElements(spec) {
		v := el.Value()
		if _, isNum := numberFloat(v); !isNum && v.Type != bsoncore.TypeBoolean {
			return false
		}
		for _, c := range el.Key() {
			if c == '.' || c == '$' {
				return false
			}
		}
	}
	return true
}

func (e *Engine) explainFind(ctx context.Context, db, coll string, inner bsoncore.Document, v explainVerbosity) (*explained, error) {
	if err := validateCollName(db, coll); err != nil {
		return nil, err
	}
	args, err := parseFind("find", inner)
	if err != nil {
		return nil, err
	}
	p, err := e.planFind(db, coll, args)
	if err != nil {
		return nil, err
	}
	x := &explained{shard: e.shardName(), ns: p.NS, parsed: args.filter, partitions: p.Partitions()}
	if v >= verbosityExecutionStats {
		start := time.Now()
		src := e.source(p)
		for {
			_, done, err := src.nextBatch(ctx, 0, maxBatchBytes)
			if err != nil {
				return nil, err
			}
			if done {
				break
			}
		}
		x.stats, x.perPartition = src.Stats(), src.PartitionStats()
		x.millis = time.Since(start).Milliseconds()
		x.nReturned, x.executed = x.stats.Returned, true
	}
	x.plan = stageTree(p, args.filter, args.projection, x.stats, x.executed)
	if p.Sort != nil && !p.Sort.IsEmpty() {
		replaceSortPattern(x.plan, args.sort)
	}
	return x, nil
}

// replaceSortPattern puts the sort as given into the SORT stage.
func replaceSortPattern(tree bson.D, spec bsoncore.Document) {
	for i := range tree {
		switch tree[i].Key {
		case "sortPattern":
			tree[i].Value = bson.Raw(spec)
		case "inputStage":
			if sub, ok := tree[i].Value.(bson.D); ok {
				replaceSortPattern(sub, spec)
			}
		}
	}
}

func (e *Engine) explainCount(ctx context.Context, db, coll string, inner bsoncore.Document, v explainVerbosity) (*explained, error) {
	if err := validateCollName(db, coll); err != nil {
		return nil, err
	}
	args, err := parseCount("count", inner)
	if err != nil {
		return nil, err
	}
	p, fast, err := e.planCount(db, coll, args)
	if err != nil {
		return nil, err
	}
	x := &explained{shard: e.shardName(), ns: p.NS, parsed: args.query, partitions: p.Partitions()}
	var n int64
	if v >= verbosityExecutionStats {
		start := time.Now()
		if n, x.stats, err = e.runCount(ctx, p, fast); err != nil {
			return nil, err
		}
		x.millis, x.executed = time.Since(start).Milliseconds(), true
	}
	if fast && p.Coll != nil {
		x.plan = bson.D{{Key: "stage", Value: "RECORD_STORE_FAST_COUNT"}}
		if x.executed {
			x.plan = append(x.plan, bson.E{Key: "nReturned", Value: int64(0)}, bson.E{Key: "nCounted", Value: n})
		}
		return x, nil
	}
	scan := &readPlan{Coll: p.Coll, Point: p.Point, UseIDIndex: p.UseIDIndex, Natural: p.Natural, Index: p.Index, ShardKeyScan: p.ShardKeyScan}
	input := stageTree(scan, args.query, nil, x.stats, x.executed)
	count := bson.D{{Key: "stage", Value: "COUNT"}}
	if x.executed {
		count = append(count, bson.E{Key: "nReturned", Value: int64(0)}, bson.E{Key: "nCounted", Value: n},
			bson.E{Key: "nSkipped", Value: min(p.Skip, x.stats.Returned+p.Skip)})
	}
	if p.Limit > 0 {
		count = append(count, bson.E{Key: "limitAmount", Value: p.Limit})
	}
	if p.Skip > 0 {
		count = append(count, bson.E{Key: "skipAmount", Value: p.Skip})
	}
	x.plan = append(count, bson.E{Key: "inputStage", Value: input})
	return x, nil
}

func (e *Engine) explainDistinct(ctx context.Context, db, coll string, inner bsoncore.Document, v explainVerbosity) (*explained, error) {
	if err := validateCollName(db, coll); err != nil {
		return nil, err
	}
	args, err := parseDistinct("distinct", inner)
	if err != nil {
		return nil, err
	}
	p, err := e.planDistinct(db, coll, args)
	if err != nil {
		return nil, err
	}
	x := &explained{shard: e.shardName(), ns: p.NS, parsed: args.query, partitions: p.Partitions()}
	if v >= verbosityExecutionStats {
		start := time.Now()
		var vals []bsoncore.Value
		if vals, x.stats, err = e.runDistinct(ctx, p, args.key); err != nil {
			return nil, err
		}
		x.millis, x.executed = time.Since(start).Milliseconds(), true
		_ = vals
		x.nReturned = x.stats.Returned
	}
	x.plan = stageTree(p, args.query, nil, x.stats, x.executed)
	return x, nil
}

// smallInts makes the counters of an explain int32 where they fit, as
// mongod appends them (appendNumber), so that shells print 12, not
// Long("12").
func smallInts(d bson.D) bson.D {
	for i := range d {
		d[i].Value = smallInt(d[i].Value)
	}
	return d
}

func smallInt(v any) any {
	switch x := v.(type) {
	case int64:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return int32(x)
		}
	case bson.D:
		return smallInts(x)
	case bson.A:
		for i := range x {
			x[i] = smallInt(x[i])
		}
	}
	return v
}
