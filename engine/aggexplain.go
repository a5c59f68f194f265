package engine

import (
	"context"
	"sync/atomic"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// explainAggregate describes how an aggregate runs, in mongos's shape for
// a split pipeline: the part every targeted partition runs
// (splitPipeline.shardsPart), the part run once on their merged stream
// (mergerPart), and per partition its stages, led by the $cursor that
// reads it. With executionStats (and no $out/$merge) the pipeline is run
// and the documents read and returned are reported.
func (e *Engine) explainAggregate(ctx context.Context, db, coll string, p *agg.Pipeline, c *store.Collection, v explainVerbosity) (bson.D, error) {
	split := p.Split()
	shardsPart, mergerPart := split.Explain()
	var spans []partitionSpan
	var examined atomic.Int64
	var nReturned int64
	var millis int64
	executed := false
	if v >= verbosityExecutionStats && !p.Writes() {
		started := e.now()
		it := e.runPipeline(ctx, db, coll, p, c, &examined, &spans, nil)
		err := agg.Drain(ctx, it, func(bsoncore.Document) error { nReturned++; return nil })
		if err != nil {
			return nil, aggError(err)
		}
		millis = e.now().Sub(started).Milliseconds()
		executed = true
	} else if p.NeedsInput() && c != nil {
		spans = plan.RoutePartitions(c, plan.Uncollated(p.LeadingMatch(), p.Collation()))
	} else {
		spans = []partitionSpan{{ID: "0"}}
	}
	ns := namespaceOf(db, coll)
	filter := p.LeadingMatch()
	parsed := bson.Raw(emptyDocument)
	if filter != nil {
		parsed = bson.Raw(filter)
	}
	scanStage := "COLLSCAN"
	if c == nil {
		scanStage = "EOF"
	} else if !c.Sharded() && !c.Capped && filter != nil {
		if f, err := query.Compile(filter); err == nil {
			if id, ok := f.IDEquality(); ok && (p.Collation() == nil || !value.Collatable(id)) {
				scanStage = "IDHACK"
			}
		}
	}
	winning := bson.D{{Key: "stage", Value: scanStage}, {Key: "direction", Value: "forward"}}
	if c != nil && scanStage == "COLLSCAN" && len(filter) > 5 {
		plain := func(d bson.D, _ int64, _ ...bson.E) bson.D { return d }
		routed := plan.RoutePartitions(c, plan.Uncollated(filter, p.Collation()))
		probe := &readPlan{Coll: c, Spans: routed, Index: plan.IndexForCollation(c, filter, nil, p.Collation()), ShardKeyScan: plan.ByShardKey(routed), Collation: p.Collation()}
		e.planner().WeighShardKeyScan(probe)
		switch {
		case probe.Index != nil:
			winning = indexStages(probe, filter, planStats{}, plain)
		case probe.ShardKeyScan:
			winning = shardKeyStages(c, filter, planStats{}, plain)
		}
	}
	var partitions bson.A
	var ids bson.A
	for _, s := range spans {
		ids = append(ids, s.ID)
		stages := bson.A{}
		if p.NeedsInput() {
			stages = append(stages, bson.D{{Key: "$cursor", Value: bson.D{
				{Key: "queryPlanner", Value: bson.D{
					{Key: "namespace", Value: ns},
					{Key: "parsedQuery", Value: parsed},
					{Key: "winningPlan", Value: winning},
					{Key: "rejectedPlans", Value: bson.A{}},
				}},
			}}})
		}
		for _, st := range shardsPart {
			stages = append(stages, bson.Raw(st))
		}
		partitions = append(partitions, bson.D{{Key: "partitionKeyRangeId", Value: s.ID}, {Key: "stages", Value: stages}})
	}
	stagesOf := func(docs []bsoncore.Document) bson.A {
		out := bson.A{}
		for _, d := range docs {
			out = append(out, bson.Raw(d))
		}
		return out
	}
	mergeType := "mongos"
	if len(mergerPart) == 0 && len(spans) == 1 {
		mergeType = "partition"
	}
	out := bson.D{
		{Key: "explainVersion", Value: "1"},
		{Key: "mergeType", Value: mergeType},
		{Key: "splitPipeline", Value: bson.D{
			{Key: "shardsPart", Value: stagesOf(shardsPart)},
			{Key: "mergerPart", Value: append(bson.A{bson.D{{Key: "$mergeCursors", Value: bson.D{
				{Key: "partitions", Value: ids}, {Key: "parallel", Value: len(spans) > 1},
			}}}}, stagesOf(mergerPart)...)},
		}},
		{Key: "partitionsTargeted", Value: ids},
		{Key: "shards", Value: bson.D{{Key: e.shardName(), Value: bson.D{
			{Key: "host", Value: e.hostPort()},
			{Key: "partitions", Value: partitions},
		}}}},
	}
	if executed {
		out = append(out, bson.E{Key: "executionStats", Value: bson.D{
			{Key: "nReturned", Value: nReturned},
			{Key: "executionTimeMillis", Value: millis},
			{Key: "totalKeysExamined", Value: int64(0)},
			{Key: "totalDocsExamined", Value: examined.Load()},
		}})
	}
	return out, nil
}

// explainAggregateCommand is explain's inner {aggregate: ...}.
func (e *Engine) explainAggregateCommand(ctx context.Context, req *request, inner bsoncore.Document, v explainVerbosity) (bson.D, error) {
	sub := &request{name: "aggregate", db: req.db, body: inner, c: req.c}
	coll, dbLevel, err := aggregateTarget(sub)
	if err != nil {
		return nil, err
	}
	args, err := parseAggregate("aggregate", inner)
	if err != nil {
		return nil, err
	}
	if !dbLevel {
		if coll, err = e.resolveAggregateView(req.db, coll, args); err != nil {
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
	c := e.store.Collection(req.db, coll)
	if err := e.checkAggregateHint(c, req.db, coll, args); err != nil {
		return nil, err
	}
	return e.explainAggregate(ctx, req.db, coll, p, c, v)
}
