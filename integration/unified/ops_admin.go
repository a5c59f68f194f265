package unified

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// collectionAdminOp: indexes, change streams, rename, search indexes.
func (t *testRun) collectionAdminOp(coll *mongo.Collection, name string, a *args) (execFunc, error) {
	switch name {
	case "createIndex":
		keys, err := a.requiredDoc("keys")
		if err != nil {
			return nil, err
		}
		io := options.Index()
		if s, ok, err := a.str("name"); err != nil {
			return nil, err
		} else if ok {
			io.SetName(s)
		}
		for _, k := range []string{"unique", "sparse", "hidden"} {
			b, ok, err := a.boolean(k)
			if err != nil {
				return nil, err
			}
			if ok {
				switch k {
				case "unique":
					io.SetUnique(b)
				case "sparse":
					io.SetSparse(b)
				case "hidden":
					io.SetHidden(b)
				}
			}
		}
		if n, ok, err := a.integer("expireAfterSeconds"); err != nil {
			return nil, err
		} else if ok {
			io.SetExpireAfterSeconds(int32(n))
		}
		model := mongo.IndexModel{Keys: keys, Options: io}
		return func(ctx context.Context) opResult {
			return valueResult(coll.Indexes().CreateOne(ctx, model))
		}, nil
	case "dropIndex":
		idx, ok, err := a.str("name")
		if err != nil || !ok {
			return nil, fmt.Errorf("runner: dropIndex needs a name: %v", err)
		}
		return func(ctx context.Context) opResult {
			return errResult(coll.Indexes().DropOne(ctx, idx))
		}, nil
	case "dropIndexes":
		return func(ctx context.Context) opResult {
			return errResult(coll.Indexes().DropAll(ctx))
		}, nil
	case "listIndexes":
		opts := options.ListIndexes()
		if n, ok, err := a.integer("batchSize"); err != nil {
			return nil, err
		} else if ok {
			opts.SetBatchSize(int32(n))
		}
		return func(ctx context.Context) opResult {
			cur, err := coll.Indexes().List(ctx, opts)
			return allDocs(ctx, cur, err)
		}, nil
	case "listIndexNames":
		return func(ctx context.Context) opResult {
			specs, err := coll.Indexes().ListSpecifications(ctx)
			if err != nil {
				return errResult(err)
			}
			names := bson.A{}
			for _, s := range specs {
				names = append(names, s.Name)
			}
			return valueResult(names, nil)
		}, nil
	case "createChangeStream":
		pipeline, opts, err := changeStreamArgs(a)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) opResult {
			cs, err := coll.Watch(ctx, pipeline, opts)
			return changeStreamResult(cs, err)
		}, nil
	case "drop":
		return func(ctx context.Context) opResult { return errResult(coll.Drop(ctx)) }, nil
	case "rename":
		// The Go driver has no rename helper: send the renameCollection
		// command a driver's helper sends.
		to, ok, err := a.str("to")
		if err != nil || !ok {
			return nil, fmt.Errorf("runner: rename needs to: %v", err)
		}
		db := coll.Database().Name()
		cmd := bson.D{{Key: "renameCollection", Value: db + "." + coll.Name()}, {Key: "to", Value: db + "." + to}}
		if b, ok, err := a.boolean("dropTarget"); err != nil {
			return nil, err
		} else if ok {
			cmd = append(cmd, bson.E{Key: "dropTarget", Value: b})
		}
		admin := coll.Database().Client().Database("admin")
		return func(ctx context.Context) opResult {
			return errResult(admin.RunCommand(ctx, cmd).Err())
		}, nil
	case "createSearchIndex", "createSearchIndexes":
		var raws []bson.Raw
		if name == "createSearchIndex" {
			d, err := a.requiredDoc("model")
			if err != nil {
				return nil, err
			}
			raws = []bson.Raw{d}
		} else {
			vals, _, err := a.array("models")
			if err != nil {
				return nil, err
			}
			for _, v := range vals {
				raws = append(raws, v.Document())
			}
		}
		models := make([]mongo.SearchIndexModel, len(raws))
		for i, r := range raws {
			ma := newArgs("search index model", r)
			def, err := ma.requiredDoc("definition")
			if err != nil {
				return nil, err
			}
			so := options.SearchIndexes()
			if s, ok, err := ma.str("name"); err != nil {
				return nil, err
			} else if ok {
				so.SetName(s)
			}
			if s, ok, err := ma.str("type"); err != nil {
				return nil, err
			} else if ok {
				so.SetType(s)
			}
			if err := ma.finish(); err != nil {
				return nil, err
			}
			models[i] = mongo.SearchIndexModel{Definition: def, Options: so}
		}
		return func(ctx context.Context) opResult {
			if name == "createSearchIndex" {
				return valueResult(coll.SearchIndexes().CreateOne(ctx, models[0]))
			}
			names, err := coll.SearchIndexes().CreateMany(ctx, models)
			if err != nil {
				return errResult(err)
			}
			return valueResult(names, nil)
		}, nil
	case "dropSearchIndex":
		idx, _, err := a.str("name")
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) opResult {
			return errResult(coll.SearchIndexes().DropOne(ctx, idx))
		}, nil
	case "updateSearchIndex":
		idx, _, err := a.str("name")
		if err != nil {
			return nil, err
		}
		def, err := a.requiredDoc("definition")
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) opResult {
			return errResult(coll.SearchIndexes().UpdateOne(ctx, idx, def))
		}, nil
	case "listSearchIndexes":
		var opts *options.SearchIndexesOptionsBuilder
		if s, ok, err := a.str("name"); err != nil {
			return nil, err
		} else if ok {
			opts = options.SearchIndexes().SetName(s)
		}
		lso := &options.ListSearchIndexesOptionsBuilder{}
		if d, ok, err := a.doc("aggregationOptions"); err != nil {
			return nil, err
		} else if ok {
			aa := newArgs("aggregationOptions", d)
			agg := &options.AggregateOptions{}
			if n, ok, err := aa.integer("batchSize"); err != nil {
				return nil, err
			} else if ok {
				bs := int32(n)
				agg.BatchSize = &bs
			}
			if err := aa.finish(); err != nil {
				return nil, err
			}
			lso.Opts = append(lso.Opts, func(o *options.ListSearchIndexesOptions) error {
				o.AggregateOptions = agg
				return nil
			})
		}
		return func(ctx context.Context) opResult {
			if opts == nil {
				opts = options.SearchIndexes()
			}
			cur, err := coll.SearchIndexes().List(ctx, opts, lso)
			return allDocs(ctx, cur, err)
		}, nil
	}
	return nil, notImplemented(name, "a collection")
}

func changeStreamArgs(a *args) (bson.A, *options.ChangeStreamOptionsBuilder, error) {
	pipeline := bson.A{}
	if vals, ok, err := a.array("pipeline"); err != nil {
		return nil, nil, err
	} else if ok {
		pipeline = bson.A(anySlice(vals))
	}
	opts := options.ChangeStream()
	if n, ok, err := a.integer("batchSize"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetBatchSize(int32(n))
	}
	if s, ok, err := a.str("fullDocument"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetFullDocument(options.FullDocument(s))
	}
	if s, ok, err := a.str("fullDocumentBeforeChange"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetFullDocumentBeforeChange(options.FullDocument(s))
	}
	if b, ok, err := a.boolean("showExpandedEvents"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetShowExpandedEvents(b)
	}
	if v, ok := a.anyValue("comment"); ok {
		opts.SetComment(v)
	}
	if d, ok, err := a.doc("resumeAfter"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetResumeAfter(d)
	}
	if d, ok, err := a.doc("startAfter"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetStartAfter(d)
	}
	if v, ok := a.value("startAtOperationTime"); ok {
		ts, i, isTS := v.TimestampOK()
		if !isTS {
			return nil, nil, a.typeErr("startAtOperationTime", v, "a timestamp")
		}
		opts.SetStartAtOperationTime(&bson.Timestamp{T: ts, I: i})
	}
	if n, ok, err := a.integer("maxAwaitTimeMS"); err != nil {
		return nil, nil, err
	} else if ok {
		opts.SetMaxAwaitTime(time.Duration(n) * time.Millisecond)
	}
	return pipeline, opts, nil
}

func changeStreamResult(cs *mongo.ChangeStream, err error) opResult {
	if err != nil {
		return errResult(err)
	}
	return opResult{entity: cs}
}
