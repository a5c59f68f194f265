package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// countArgs are the parsed fields of count.
type countArgs struct {
	query       bsoncore.Document
	hint        hintArg
	skip, limit int64
	collation   collationOpt
}

func (e *Engine) cmdCount(ctx context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	if e.isView(req.db, name) {
		return e.readView(ctx, req, name)
	}
	args, err := parseCount(req.name, req.body)
	if err != nil {
		return nil, err
	}
	plan, fast, err := e.planCount(req.db, name, args)
	if err != nil {
		return nil, err
	}
	var stats statsTally
	bill := e.newReadBill(req, plan.Coll, plan.Spans, nil, args.query, &stats)
	if err := e.admitRead(ctx, req, &bill); err != nil {
		return nil, err
	}
	n, st, err := e.runCount(ctx, plan, fast)
	stats = statsTally(st)
	e.chargeRead(req, &bill, 0)
	if err != nil {
		return nil, err
	}
	return okReply(countField(n))
}

// countField is {n: <count>}: an int32 when it fits, as MongoDB replies.
func countField(n int64) bson.E {
	if n == int64(int32(n)) {
		return bson.E{Key: "n", Value: int32(n)}
	}
	return bson.E{Key: "n", Value: n}
}

func parseCount(cmd string, body bsoncore.Document) (*countArgs, error) {
	a := &countArgs{}
	elems, _ := body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "query":
			if v.Type != bsoncore.TypeNull {
				a.query, err = docArg(cmd, k, v)
			}
		case "limit":
			// A negative limit counts like its absolute value.
			if a.limit, err = int64Arg(cmd, k, v); err == nil && a.limit < 0 {
				a.limit = -a.limit
			}
		case "skip":
			if a.skip, err = int64Arg(cmd, k, v); err == nil && a.skip < 0 {
				err = negativeValue(k, a.skip)
			}
		case "hint":
			if !a.hint.parse(v) {
				err = wrongTypes(cmd, k, v, "string, object")
			}
		case "collation":
			err = a.collation.parse(cmd, k, v)
		case "fields", "query_stats", "encryptionInformation":
		default:
			if !genericFields[k] {
				err = unknownField(cmd, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return a, nil
}

// planCount makes count's plan; fast is set when the answer comes from
// the collection's counters (an empty query, MongoDB's
// RECORD_STORE_FAST_COUNT).
func (e *Engine) planCount(db, name string, a *countArgs) (*readPlan, bool, error) {
	coll := a.collation.resolve(e, db, name)
	filter, err := query.CompileWith(a.query, query.Options{Now: e.now(), Collation: coll})
	if err != nil {
		return nil, false, queryError(err)
	}
	p := &readPlan{NS: namespaceOf(db, name), Coll: e.store.Collection(db, name), Filter: filter, Skip: a.skip, Limit: a.limit, Collation: coll}
	if docs, ok := e.virtualDocs(db, name); ok {
		p.Coll, p.Virtual = nil, docs
	}
	if err := e.applyHint(p, a.hint, nil, nil); err != nil {
		return nil, false, err
	}
	if p.Coll != nil && !p.UseIDIndex {
		p.Point = plan.PointKey(p.Coll, filter, a.query)
	}
	p.Route(a.query)
	p.ChooseIndex(a.query, nil)
	e.planner().WeighShardKeyScan(p)
	return p, filter.IsEmpty() && p.Point == nil && !p.UseIDIndex && p.Natural == 0 && p.Virtual == nil, nil
}

// runCount counts what a plan matches, after skip and limit.
func (e *Engine) runCount(ctx context.Context, p *readPlan, fast bool) (int64, planStats, error) {
	if p.Coll == nil && p.Virtual == nil {
		return 0, planStats{}, nil
	}
	if fast {
		c, err := e.store.Counts(p.Coll)
		if err != nil {
			return 0, planStats{}, err
		}
		n := max(c.Docs-p.Skip, 0)
		if p.Limit > 0 {
			n = min(n, p.Limit)
		}
		return n, planStats{Returned: n}, nil
	}
	src := e.planner().Scan(p)
	n, err := src.Count(ctx)
	if err != nil {
		return 0, planStats{}, err
	}
	return n, src.Stats(), nil
}
