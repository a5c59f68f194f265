package unified

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// readOp: find, counts, distinct and aggregate.
func readOp(coll *mongo.Collection, name string, a *args) (execFunc, error) {
	switch name {
	case "find", "findOne":
		return find(coll, name, a)

	case "countDocuments":
		filter, err := filterArg(a, true)
		if err != nil {
			return nil, err
		}
		o, err := readCrudOpts(a, "collation", "hint", "comment")
		if err != nil {
			return nil, err
		}
		opts := options.Count()
		if o.collation != nil {
			opts.SetCollation(o.collation)
		}
		if o.hint != nil {
			opts.SetHint(o.hint)
		}
		if o.comment != nil {
			opts.SetComment(o.comment)
		}
		if n, ok, err := a.integer("skip"); err != nil {
			return nil, err
		} else if ok {
			opts.SetSkip(n)
		}
		if n, ok, err := a.integer("limit"); err != nil {
			return nil, err
		} else if ok {
			opts.SetLimit(n)
		}
		return func(ctx context.Context) opResult {
			return valueResult(coll.CountDocuments(ctx, filter, opts))
		}, nil

	case "estimatedDocumentCount":
		o, err := readCrudOpts(a, "comment")
		if err != nil {
			return nil, err
		}
		if maxTime, ok, err := a.integer("maxTimeMS"); err != nil {
			return nil, err
		} else if ok {
			// The v2 driver has no maxTimeMS option (it derives one from
			// timeoutMS); send the count command the operation specifies.
			cmd := bson.D{{Key: "count", Value: coll.Name()}}
			if o.comment != nil {
				cmd = append(cmd, bson.E{Key: "comment", Value: o.comment})
			}
			cmd = append(cmd, bson.E{Key: "maxTimeMS", Value: maxTime})
			return countCommand(coll, cmd), nil
		}
		opts := options.EstimatedDocumentCount()
		if o.comment != nil {
			opts.SetComment(o.comment)
		}
		return func(ctx context.Context) opResult {
			return valueResult(coll.EstimatedDocumentCount(ctx, opts))
		}, nil

	case "count":
		// The deprecated count helper is not in the Go driver: send the
		// count command the CRUD spec describes for it.
		filter, err := filterArg(a, false)
		if err != nil {
			return nil, err
		}
		o, err := readCrudOpts(a, "collation", "hint", "comment")
		if err != nil {
			return nil, err
		}
		cmd := bson.D{{Key: "count", Value: coll.Name()}, {Key: "query", Value: filter}}
		for _, k := range []string{"skip", "limit"} {
			if n, ok, err := a.integer(k); err != nil {
				return nil, err
			} else if ok {
				cmd = append(cmd, bson.E{Key: k, Value: n})
			}
		}
		if o.collation != nil {
			cmd = append(cmd, bson.E{Key: "collation", Value: a.raw.Lookup("collation")})
		}
		if o.hint != nil {
			cmd = append(cmd, bson.E{Key: "hint", Value: o.hint})
		}
		if o.comment != nil {
			cmd = append(cmd, bson.E{Key: "comment", Value: o.comment})
		}
		return countCommand(coll, cmd), nil

	case "distinct":
		field, ok, err := a.str("fieldName")
		if err != nil || !ok {
			return nil, fmt.Errorf("runner: distinct needs fieldName: %v", err)
		}
		filter, err := filterArg(a, true)
		if err != nil {
			return nil, err
		}
		o, err := readCrudOpts(a, "collation", "hint", "comment")
		if err != nil {
			return nil, err
		}
		opts := options.Distinct()
		if o.collation != nil {
			opts.SetCollation(o.collation)
		}
		if o.hint != nil {
			opts.SetHint(o.hint)
		}
		if o.comment != nil {
			opts.SetComment(o.comment)
		}
		return func(ctx context.Context) opResult {
			arr, err := coll.Distinct(ctx, field, filter, opts).Raw()
			if err != nil {
				return errResult(err)
			}
			return opResult{value: bson.RawValue{Type: bson.TypeArray, Value: arr}}
		}, nil

	case "aggregate":
		pipeline, opts, err := aggregateArgs(a)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) opResult {
			cur, err := coll.Aggregate(ctx, pipeline, opts)
			return allDocs(ctx, cur, err)
		}, nil
	}
	return nil, notImplemented(name, "a collection")
}

// countCommand runs a count command in the collection's database and
// returns its n.
func countCommand(coll *mongo.Collection, cmd bson.D) execFunc {
	return func(ctx context.Context) opResult {
		raw, err := coll.Database().RunCommand(ctx, cmd).Raw()
		if err != nil {
			return errResult(err)
		}
		n, err := raw.LookupErr("n")
		if err != nil {
			return errResult(fmt.Errorf("count reply without n: %s", raw))
		}
		return opResult{value: n}
	}
}

// allDocs drains a cursor.
func allDocs(ctx context.Context, cur *mongo.Cursor, err error) opResult {
	if err != nil {
		return docsResult(nil, err)
	}
	var docs []bson.Raw
	for cur.Next(ctx) {
		docs = append(docs, append(bson.Raw(nil), cur.Current...))
	}
	err = cur.Err()
	_ = cur.Close(ctx)
	return docsResult(docs, err)
}

// aggregateArgs reads an aggregate's pipeline and options.
func aggregateArgs(a *args) (bson.A, *options.AggregateOptionsBuilder, error) {
	vals, ok, err := a.array("pipeline")
	if err != nil || !ok {
		return nil, nil, fmt.Errorf("runner: %s needs a pipeline: %v", a.op, err)
	}
	o, err := readCrudOpts(a, "collation", "hint", "let", "comment", "bypassDocumentValidation")
	if err != nil {
		return nil, nil, err
	}
	opts := options.Aggregate()
	if o.collation != nil {
		opts.SetCollation(o.collation)
	}
	if o.hint != nil {
		opts.SetHint(o.hint)
	}
	if o.let != nil {
		opts.SetLet(o.let)
	}
	if o.comment != nil {
		opts.SetComment(o.comment)
	}
	if o.bypass != nil {
		opts.SetBypassDocumentValidation(*o.bypass)
	}
	if n, ok, err := a.integer("batchSize"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetBatchSize(int32(n))
	}
	if b, ok, err := a.boolean("allowDiskUse"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetAllowDiskUse(b)
	}
	if n, ok, err := a.integer("maxTimeMS"); err != nil {
		return nil, nil, err
	} else if ok {
		// No maxTimeMS option in the v2 driver: add the field itself.
		opts.SetCustom(bson.M{"maxTimeMS": n})
	}
	return bson.A(anySlice(vals)), opts, nil
}

// find prepares find and findOne.
func find(coll *mongo.Collection, name string, a *args) (execFunc, error) {
	filter, err := filterArg(a, false)
	if err != nil {
		return nil, err
	}
	o, err := readCrudOpts(a, "collation", "hint", "let", "comment", "sort")
	if err != nil {
		return nil, err
	}
	projection, _, err := a.doc("projection")
	if err != nil {
		return nil, err
	}
	ints := map[string]int64{}
	for _, k := range []string{"skip", "limit", "batchSize"} {
		if n, ok, err := a.integer(k); err != nil {
			return nil, err
		} else if ok {
			ints[k] = n
		}
	}
	bools := map[string]bool{}
	for _, k := range []string{"allowDiskUse", "returnKey", "showRecordId", "noCursorTimeout", "allowPartialResults"} {
		if b, ok, err := a.boolean(k); err != nil {
			return nil, err
		} else if ok {
			bools[k] = b
		}
	}
	minV, _, err := a.doc("min")
	if err != nil {
		return nil, err
	}
	maxV, _, err := a.doc("max")
	if err != nil {
		return nil, err
	}
	if name == "findOne" {
		opts := options.FindOne()
		for k := range ints {
			if k != "skip" {
				return nil, fmt.Errorf("runner: argument [%s] not supported by the runner (in findOne)", k)
			}
		}
		if n, ok := ints["skip"]; ok {
			opts.SetSkip(n)
		}
		if o.collation != nil {
			opts.SetCollation(o.collation)
		}
		if o.hint != nil {
			opts.SetHint(o.hint)
		}
		if o.comment != nil {
			opts.SetComment(o.comment)
		}
		if o.sort != nil {
			opts.SetSort(o.sort)
		}
		if o.let != nil {
			return nil, fmt.Errorf("runner: argument [let] not supported by the runner (in findOne)")
		}
		if projection != nil {
			opts.SetProjection(projection)
		}
		if minV != nil {
			opts.SetMin(minV)
		}
		if maxV != nil {
			opts.SetMax(maxV)
		}
		for k, b := range bools {
			switch k {
			case "returnKey":
				opts.SetReturnKey(b)
			case "showRecordId":
				opts.SetShowRecordID(b)
			case "allowPartialResults":
				opts.SetAllowPartialResults(b)
			default:
				return nil, fmt.Errorf("runner: argument [%s] not supported by the runner (in findOne)", k)
			}
		}
		return func(ctx context.Context) opResult {
			return singleDocResult(coll.FindOne(ctx, filter, opts))
		}, nil
	}
	opts := options.Find()
	if n, ok := ints["skip"]; ok {
		opts.SetSkip(n)
	}
	if n, ok := ints["limit"]; ok {
		opts.SetLimit(n)
	}
	if n, ok := ints["batchSize"]; ok {
		opts.SetBatchSize(int32(n))
	}
	if o.collation != nil {
		opts.SetCollation(o.collation)
	}
	if o.hint != nil {
		opts.SetHint(o.hint)
	}
	if o.let != nil {
		opts.SetLet(o.let)
	}
	if o.comment != nil {
		opts.SetComment(o.comment)
	}
	if o.sort != nil {
		opts.SetSort(o.sort)
	}
	if projection != nil {
		opts.SetProjection(projection)
	}
	if minV != nil {
		opts.SetMin(minV)
	}
	if maxV != nil {
		opts.SetMax(maxV)
	}
	for k, b := range bools {
		switch k {
		case "allowDiskUse":
			opts.SetAllowDiskUse(b)
		case "returnKey":
			opts.SetReturnKey(b)
		case "showRecordId":
			opts.SetShowRecordID(b)
		case "noCursorTimeout":
			opts.SetNoCursorTimeout(b)
		case "allowPartialResults":
			opts.SetAllowPartialResults(b)
		}
	}
	return func(ctx context.Context) opResult {
		cur, err := coll.Find(ctx, filter, opts)
		return allDocs(ctx, cur, err)
	}, nil
}
