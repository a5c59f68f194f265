package unified

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// execFunc runs a prepared operation. Operations parse and check all their
// arguments first, so an unsupported argument fails the test before
// anything is sent.
type execFunc func(ctx context.Context) opResult

func notImplemented(op, on string) error {
	return fmt.Errorf("runner: operation %s not implemented (on %s)", op, on)
}

// Options shared by many CRUD operations.
type crudOpts struct {
	collation *options.Collation
	hint      any
	let       bson.Raw
	comment   any
	bypass    *bool
	sort      any
	upsert    *bool
	filters   []any // arrayFilters
}

// readCrudOpts takes the listed optional arguments.
func readCrudOpts(a *args, keys ...string) (crudOpts, error) {
	var o crudOpts
	for _, k := range keys {
		switch k {
		case "collation":
			d, ok, err := a.doc(k)
			if err != nil {
				return o, err
			}
			if ok {
				if o.collation, err = parseCollation(d); err != nil {
					return o, err
				}
			}
		case "hint":
			o.hint, _ = a.anyValue(k)
		case "let":
			d, _, err := a.doc(k)
			if err != nil {
				return o, err
			}
			o.let = d
		case "comment":
			o.comment, _ = a.anyValue(k)
		case "bypassDocumentValidation":
			b, ok, err := a.boolean(k)
			if err != nil {
				return o, err
			}
			if ok {
				o.bypass = &b
			}
		case "sort":
			o.sort, _ = a.anyValue(k)
		case "upsert":
			b, ok, err := a.boolean(k)
			if err != nil {
				return o, err
			}
			if ok {
				o.upsert = &b
			}
		case "arrayFilters":
			vals, ok, err := a.array(k)
			if err != nil {
				return o, err
			}
			if ok {
				o.filters = anySlice(vals)
			}
		default:
			panic("readCrudOpts: " + k)
		}
	}
	return o, nil
}

// filterArg is a filter argument, {} when absent and optional.
func filterArg(a *args, required bool) (bson.Raw, error) {
	d, ok, err := a.doc("filter")
	if err != nil {
		return nil, err
	}
	if !ok {
		if required {
			return nil, fmt.Errorf("runner: %s needs a filter", a.op)
		}
		return bson.Raw{5, 0, 0, 0, 0}, nil
	}
	return d, nil
}

// updateArg is an update document or pipeline.
func updateArg(a *args) (any, error) {
	v, ok := a.anyValue("update")
	if !ok {
		return nil, fmt.Errorf("runner: %s needs an update", a.op)
	}
	return v, nil
}

// collectionOp prepares an operation on a collection entity.
func (t *testRun) collectionOp(coll *mongo.Collection, name string, a *args) (execFunc, error) {
	switch name {
	case "insertOne", "insertMany", "deleteOne", "deleteMany", "updateOne", "updateMany", "replaceOne":
		return writeOp(coll, name, a)
	case "find", "findOne", "countDocuments", "estimatedDocumentCount", "count", "distinct", "aggregate":
		return readOp(coll, name, a)
	case "findOneAndDelete", "findOneAndReplace", "findOneAndUpdate":
		return findAndModify(coll, name, a)
	case "bulkWrite":
		return bulkWrite(coll, a)
	}
	return t.collectionAdminOp(coll, name, a)
}

// writeOp: insert, delete, update and replace.
func writeOp(coll *mongo.Collection, name string, a *args) (execFunc, error) {
	switch name {
	case "insertOne":
		doc, err := a.requiredDoc("document")
		if err != nil {
			return nil, err
		}
		o, err := readCrudOpts(a, "comment", "bypassDocumentValidation")
		if err != nil {
			return nil, err
		}
		opts := options.InsertOne()
		if o.comment != nil {
			opts.SetComment(o.comment)
		}
		if o.bypass != nil {
			opts.SetBypassDocumentValidation(*o.bypass)
		}
		return func(ctx context.Context) opResult {
			r, err := coll.InsertOne(ctx, doc, opts)
			if err != nil {
				return errResult(err)
			}
			return valueResult(insertOneDoc(r), nil)
		}, nil

	case "insertMany":
		vals, ok, err := a.array("documents")
		if err != nil || !ok {
			return nil, fmt.Errorf("runner: insertMany needs documents: %v", err)
		}
		o, err := readCrudOpts(a, "comment", "bypassDocumentValidation")
		if err != nil {
			return nil, err
		}
		opts := options.InsertMany()
		if ordered, ok, err := a.boolean("ordered"); err != nil {
			return nil, err
		} else if ok {
			opts.SetOrdered(ordered)
		}
		if o.comment != nil {
			opts.SetComment(o.comment)
		}
		if o.bypass != nil {
			opts.SetBypassDocumentValidation(*o.bypass)
		}
		docs := anySlice(vals)
		return func(ctx context.Context) opResult {
			r, err := coll.InsertMany(ctx, docs, opts)
			if r == nil {
				return errResult(err)
			}
			return opResult{value: mustValue(insertManyDoc(r, len(docs))), err: err}
		}, nil

	case "deleteOne", "deleteMany":
		filter, err := filterArg(a, true)
		if err != nil {
			return nil, err
		}
		o, err := readCrudOpts(a, "collation", "hint", "let", "comment")
		if err != nil {
			return nil, err
		}
		if name == "deleteOne" {
			opts := options.DeleteOne()
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
			return func(ctx context.Context) opResult {
				r, err := coll.DeleteOne(ctx, filter, opts)
				if err != nil {
					return errResult(err)
				}
				return valueResult(deleteDoc(r), nil)
			}, nil
		}
		opts := options.DeleteMany()
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
		return func(ctx context.Context) opResult {
			r, err := coll.DeleteMany(ctx, filter, opts)
			if err != nil {
				return errResult(err)
			}
			return valueResult(deleteDoc(r), nil)
		}, nil

	case "updateOne", "updateMany", "replaceOne":
		filter, err := filterArg(a, true)
		if err != nil {
			return nil, err
		}
		keys := []string{"collation", "hint", "let", "comment", "bypassDocumentValidation", "upsert"}
		if name != "replaceOne" {
			keys = append(keys, "arrayFilters")
		}
		if name != "updateMany" {
			keys = append(keys, "sort")
		}
		o, err := readCrudOpts(a, keys...)
		if err != nil {
			return nil, err
		}
		switch name {
		case "updateOne":
			update, err := updateArg(a)
			if err != nil {
				return nil, err
			}
			opts := options.UpdateOne()
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
			if o.upsert != nil {
				opts.SetUpsert(*o.upsert)
			}
			if o.filters != nil {
				opts.SetArrayFilters(o.filters)
			}
			if o.sort != nil {
				opts.SetSort(o.sort)
			}
			return func(ctx context.Context) opResult {
				r, err := coll.UpdateOne(ctx, filter, update, opts)
				if err != nil {
					return errResult(err)
				}
				return valueResult(updateDoc(r), nil)
			}, nil
		case "updateMany":
			update, err := updateArg(a)
			if err != nil {
				return nil, err
			}
			opts := options.UpdateMany()
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
			if o.upsert != nil {
				opts.SetUpsert(*o.upsert)
			}
			if o.filters != nil {
				opts.SetArrayFilters(o.filters)
			}
			return func(ctx context.Context) opResult {
				r, err := coll.UpdateMany(ctx, filter, update, opts)
				if err != nil {
					return errResult(err)
				}
				return valueResult(updateDoc(r), nil)
			}, nil
		}
		replacement, err := a.requiredDoc("replacement")
		if err != nil {
			return nil, err
		}
		opts := options.Replace()
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
		if o.upsert != nil {
			opts.SetUpsert(*o.upsert)
		}
		if o.sort != nil {
			opts.SetSort(o.sort)
		}
		return func(ctx context.Context) opResult {
			r, err := coll.ReplaceOne(ctx, filter, replacement, opts)
			if err != nil {
				return errResult(err)
			}
			return valueResult(updateDoc(r), nil)
		}, nil
	}
	return nil, notImplemented(name, "a collection")
}
