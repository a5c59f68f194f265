package unified

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// findAndModify prepares findOneAndDelete, findOneAndReplace and
// findOneAndUpdate.
func findAndModify(coll *mongo.Collection, name string, a *args) (execFunc, error) {
	filter, err := filterArg(a, true)
	if err != nil {
		return nil, err
	}
	keys := []string{"collation", "hint", "let", "comment", "sort"}
	if name != "findOneAndDelete" {
		keys = append(keys, "bypassDocumentValidation", "upsert")
	}
	if name == "findOneAndUpdate" {
		keys = append(keys, "arrayFilters")
	}
	o, err := readCrudOpts(a, keys...)
	if err != nil {
		return nil, err
	}
	projection, _, err := a.doc("projection")
	if err != nil {
		return nil, err
	}
	var returnDoc *options.ReturnDocument
	if s, ok, err := a.str("returnDocument"); err != nil {
		return nil, err
	} else if ok {
		var rd options.ReturnDocument
		switch strings.ToLower(s) {
		case "before":
			rd = options.Before
		case "after":
			rd = options.After
		default:
			return nil, fmt.Errorf("runner: returnDocument %q", s)
		}
		returnDoc = &rd
	}
	switch name {
	case "findOneAndDelete":
		opts := options.FindOneAndDelete()
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
		if returnDoc != nil {
			return nil, fmt.Errorf("runner: argument [returnDocument] not supported by the runner (in findOneAndDelete)")
		}
		return func(ctx context.Context) opResult {
			return singleDocResult(coll.FindOneAndDelete(ctx, filter, opts))
		}, nil
	case "findOneAndReplace":
		replacement, err := a.requiredDoc("replacement")
		if err != nil {
			return nil, err
		}
		opts := options.FindOneAndReplace()
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
		if o.bypass != nil {
			opts.SetBypassDocumentValidation(*o.bypass)
		}
		if o.upsert != nil {
			opts.SetUpsert(*o.upsert)
		}
		if returnDoc != nil {
			opts.SetReturnDocument(*returnDoc)
		}
		return func(ctx context.Context) opResult {
			return singleDocResult(coll.FindOneAndReplace(ctx, filter, replacement, opts))
		}, nil
	}
	update, err := updateArg(a)
	if err != nil {
		return nil, err
	}
	opts := options.FindOneAndUpdate()
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
	if o.bypass != nil {
		opts.SetBypassDocumentValidation(*o.bypass)
	}
	if o.upsert != nil {
		opts.SetUpsert(*o.upsert)
	}
	if o.filters != nil {
		opts.SetArrayFilters(o.filters)
	}
	if returnDoc != nil {
		opts.SetReturnDocument(*returnDoc)
	}
	return func(ctx context.Context) opResult {
		return singleDocResult(coll.FindOneAndUpdate(ctx, filter, update, opts))
	}, nil
}

// writeModel reads one {insertOne: {...}} style request of bulkWrite.
func writeModel(raw bson.Raw) (mongo.WriteModel, error) {
	elems, err := raw.Elements()
	if err != nil || len(elems) != 1 {
		return nil, fmt.Errorf("runner: bulkWrite request %s", raw)
	}
	kind := elems[0].Key()
	a := newArgs("bulkWrite "+kind, elems[0].Value().Document())
	var m mongo.WriteModel
	switch kind {
	case "insertOne":
		doc, err := a.requiredDoc("document")
		if err != nil {
			return nil, err
		}
		m = mongo.NewInsertOneModel().SetDocument(doc)
	case "deleteOne", "deleteMany":
		filter, err := filterArg(a, true)
		if err != nil {
			return nil, err
		}
		o, err := readCrudOpts(a, "collation", "hint")
		if err != nil {
			return nil, err
		}
		if kind == "deleteOne" {
			dm := mongo.NewDeleteOneModel().SetFilter(filter)
			if o.collation != nil {
				dm.SetCollation(o.collation)
			}
			if o.hint != nil {
				dm.SetHint(o.hint)
			}
			m = dm
		} else {
			dm := mongo.NewDeleteManyModel().SetFilter(filter)
			if o.collation != nil {
				dm.SetCollation(o.collation)
			}
			if o.hint != nil {
				dm.SetHint(o.hint)
			}
			m = dm
		}
	case "updateOne", "updateMany":
		filter, err := filterArg(a, true)
		if err != nil {
			return nil, err
		}
		update, err := updateArg(a)
		if err != nil {
			return nil, err
		}
		keys := []string{"collation", "hint", "upsert", "arrayFilters"}
		if kind == "updateOne" {
			keys = append(keys, "sort")
		}
		o, err := readCrudOpts(a, keys...)
		if err != nil {
			return nil, err
		}
		if kind == "updateOne" {
			um := mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(update)
			if o.collation != nil {
				um.SetCollation(o.collation)
			}
			if o.hint != nil {
				um.SetHint(o.hint)
			}
			if o.upsert != nil {
				um.SetUpsert(*o.upsert)
			}
			if o.filters != nil {
				um.SetArrayFilters(o.filters)
			}
			if o.sort != nil {
				um.SetSort(o.sort)
			}
			m = um
		} else {
			um := mongo.NewUpdateManyModel().SetFilter(filter).SetUpdate(update)
			if o.collation != nil {
				um.SetCollation(o.collation)
			}
			if o.hint != nil {
				um.SetHint(o.hint)
			}
			if o.upsert != nil {
				um.SetUpsert(*o.upsert)
			}
			if o.filters != nil {
				um.SetArrayFilters(o.filters)
			}
			m = um
		}
	case "replaceOne":
		filter, err := filterArg(a, true)
		if err != nil {
			return nil, err
		}
		replacement, err := a.requiredDoc("replacement")
		if err != nil {
			return nil, err
		}
		o, err := readCrudOpts(a, "collation", "hint", "upsert", "sort")
		if err != nil {
			return nil, err
		}
		rm := mongo.NewReplaceOneModel().SetFilter(filter).SetReplacement(replacement)
		if o.collation != nil {
			rm.SetCollation(o.collation)
		}
		if o.hint != nil {
			rm.SetHint(o.hint)
		}
		if o.upsert != nil {
			rm.SetUpsert(*o.upsert)
		}
		if o.sort != nil {
			rm.SetSort(o.sort)
		}
		m = rm
	default:
		return nil, fmt.Errorf("runner: bulkWrite request type %s not implemented", kind)
	}
	return m, a.finish()
}

// bulkWrite prepares a collection bulkWrite.
func bulkWrite(coll *mongo.Collection, a *args) (execFunc, error) {
	reqs, ok, err := a.array("requests")
	if err != nil || !ok {
		return nil, fmt.Errorf("runner: bulkWrite needs requests: %v", err)
	}
	models := make([]mongo.WriteModel, len(reqs))
	for i, r := range reqs {
		if models[i], err = writeModel(r.Document()); err != nil {
			return nil, err
		}
	}
	o, err := readCrudOpts(a, "let", "comment", "bypassDocumentValidation")
	if err != nil {
		return nil, err
	}
	opts := options.BulkWrite()
	if ordered, ok, err := a.boolean("ordered"); err != nil {
		return nil, err
	} else if ok {
		opts.SetOrdered(ordered)
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
	return func(ctx context.Context) opResult {
		r, err := coll.BulkWrite(ctx, models, opts)
		if r == nil {
			return errResult(err)
		}
		return opResult{value: mustValue(bulkWriteDoc(r)), err: err}
	}, nil
}
