package engine

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// distinctArgs are the parsed fields of distinct.
type distinctArgs struct {
	key       string
	query     bsoncore.Document
	hint      hintArg
	snapshot  bool // a snapshot read: secondary indexes are not used
	collation collationOpt
}

func (e *Engine) cmdDistinct(ctx context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	if e.isView(req.db, name) {
		return e.readView(ctx, req, name)
	}
	args, err := parseDistinct(req.name, req.body)
	if err != nil {
		return nil, err
	}
	args.snapshot = snapshotOf(ctx) != nil
	plan, err := e.planDistinct(req.db, name, args)
	if err != nil {
		return nil, err
	}
	var stats statsTally
	bill := e.newReadBill(req, plan.Coll, plan.Spans, plan.Point, args.query, &stats)
	if err := e.admitRead(ctx, req, &bill); err != nil {
		return nil, err
	}
	bill.Point = false // a point lookup still answers a query
	vals, st, err := e.runDistinct(ctx, plan, args.key)
	stats = statsTally(st)
	e.chargeRead(req, &bill, len(vals))
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	size := 0
	for _, v := range vals {
		if size += len(v.Data) + 8; size > wire.MaxBSONObjectSize {
			return nil, errorf(Code(17217), "distinct too big, 16mb cap")
		}
		arr.AppendValue(v)
	}
	b := bsoncore.NewDocumentBuilder().AppendArray("values", arr.Build()).AppendDouble("ok", 1)
	return b.Build(), nil
}

func parseDistinct(cmd string, body bsoncore.Document) (*distinctArgs, error) {
	a := &distinctArgs{}
	hasKey := false
	elems, _ := body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "key":
			a.key, err = stringArg(cmd, k, v)
			hasKey = true
		case "query":
			if v.Type != bsoncore.TypeNull {
				a.query, err = docArg(cmd, k, v)
			}
		case "hint":
			if !a.hint.parse(v) {
				err = wrongTypes(cmd, k, v, "string, object")
			}
		case "collation":
			err = a.collation.parse(cmd, k, v)
		case "query_stats", "mirrored", "sampleId":
		default:
			if !genericFields[k] {
				err = unknownField(cmd, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if !hasKey {
		return nil, missingField(cmd, "key")
	}
	if a.key == "" {
		return nil, errorf(Code(40352), "FieldPath cannot be constructed with empty string")
	}
	if strings.IndexByte(a.key, 0) >= 0 {
		return nil, errorf(Code(31032), "Key field cannot contain an embedded null byte")
	}
	return a, nil
}

func (e *Engine) planDistinct(db, name string, a *distinctArgs) (*readPlan, error) {
	coll := a.collation.resolve(e, db, name)
	filter, err := query.CompileWith(a.query, query.Options{Now: e.now(), Collation: coll})
	if err != nil {
		return nil, queryError(err)
	}
	p := &readPlan{NS: namespaceOf(db, name), Coll: e.store.Collection(db, name), Filter: filter, Snapshot: a.snapshot, Collation: coll}
	if err := e.applyHint(p, a.hint, nil, nil); err != nil {
		return nil, err
	}
	if p.Coll != nil && !p.UseIDIndex {
		p.Point = plan.PointKey(p.Coll, filter, a.query)
	}
	p.Route(a.query)
	p.ChooseIndex(a.query, nil)
	e.planner().WeighShardKeyScan(p)
	return p, nil
}

// runDistinct collects the distinct values of key in the documents the
// plan matches, in BSON order (the order MongoDB returns them in);
// numerically equal values count once.
func (e *Engine) runDistinct(ctx context.Context, p *readPlan, key string) ([]bsoncore.Value, planStats, error) {
	if p.Coll == nil {
		return nil, planStats{}, nil
	}
	var vals []bsoncore.Value
	// Under a collation, strings it holds equal count once (the first
	// one seen stands for them), as in MongoDB.
	cmp := func(a, b bsoncore.Value) int { return query.CompareValuesWith(a, b, p.Collation) }
	add := func(v bsoncore.Value) {
		i, found := slices.BinarySearchFunc(vals, v, cmp)
		if !found {
			vals = slices.Insert(vals, i, bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)})
		}
	}
	src := e.planner().Scan(p)
	if p.Index != nil {
		var returned int64
		for !src.IndexDone() {
			err := src.WalkIndex(ctx, func(_, doc []byte) (bool, error) {
				returned++
				query.DistinctValues(doc, key, add)
				return true, nil
			})
			if err != nil {
				return nil, planStats{}, err
			}
		}
		st := src.Stats()
		st.Returned += returned
		return vals, st, nil
	}
	var st planStats
	examined := 0
	visit := func(doc []byte) error {
		if examined++; examined%plan.ContextCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		st.DocsExamined++
		st.BytesRead += int64(len(doc))
		ok, err := src.Match(doc)
		if err != nil || !ok {
			return err
		}
		st.Returned++
		query.DistinctValues(doc, key, add)
		return nil
	}
	err := e.viewOf(ctx).View(func(tx storage.Txn) error {
		if p.Point != nil {
			st.KeysExamined++
			doc, err := tx.Get(p.Point)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			return visit(doc)
		}
		return plan.ScanSpans(tx, p.Coll, p.Spans, nil, func(_, doc []byte) (bool, error) {
			if p.UseIDIndex {
				st.KeysExamined++
			}
			return true, visit(doc)
		})
	})
	return vals, st, err
}
