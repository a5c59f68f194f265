package unified

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// databaseOp prepares an operation on a database entity.
func (t *testRun) databaseOp(db *mongo.Database, name string, a *args) (execFunc, error) {
	switch name {
	case "runCommand":
		cmd, err := a.requiredDoc("command")
		if err != nil {
			return nil, err
		}
		a.skip("commandName")
		opts := options.RunCmd()
		if d, ok, err := a.doc("readPreference"); err != nil {
			return nil, err
		} else if ok {
			rp, err := parseReadPreference(d)
			if err != nil {
				return nil, err
			}
			opts.SetReadPreference(rp)
		}
		return func(ctx context.Context) opResult {
			raw, err := db.RunCommand(ctx, cmd, opts).Raw()
			if err != nil {
				return errResult(err)
			}
			return opResult{value: docValue(raw)}
		}, nil
	case "aggregate":
		pipeline, opts, err := aggregateArgs(a)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) opResult {
			cur, err := db.Aggregate(ctx, pipeline, opts)
			return allDocs(ctx, cur, err)
		}, nil
	case "listCollections", "listCollectionNames":
		filter, err := filterArg(a, false)
		if err != nil {
			return nil, err
		}
		opts := options.ListCollections()
		if n, ok, err := a.integer("batchSize"); err != nil {
			return nil, err
		} else if ok {
			opts.SetBatchSize(int32(n))
		}
		if b, ok, err := a.boolean("nameOnly"); err != nil {
			return nil, err
		} else if ok {
			opts.SetNameOnly(b)
		}
		if b, ok, err := a.boolean("authorizedCollections"); err != nil {
			return nil, err
		} else if ok {
			opts.SetAuthorizedCollections(b)
		}
		if name == "listCollectionNames" {
			return func(ctx context.Context) opResult {
				names, err := db.ListCollectionNames(ctx, filter, opts)
				if err != nil {
					return errResult(err)
				}
				return valueResult(names, nil)
			}, nil
		}
		return func(ctx context.Context) opResult {
			cur, err := db.ListCollections(ctx, filter, opts)
			return allDocs(ctx, cur, err)
		}, nil
	case "createCollection":
		return createCollection(db, a)
	case "dropCollection":
		coll, ok, err := a.str("collection")
		if err != nil || !ok {
			return nil, fmt.Errorf("runner: dropCollection needs collection: %v", err)
		}
		return func(ctx context.Context) opResult {
			return errResult(db.Collection(coll).Drop(ctx))
		}, nil
	case "modifyCollection":
		// No collMod helper in the Go driver: send the command.
		coll, ok, err := a.str("collection")
		if err != nil || !ok {
			return nil, fmt.Errorf("runner: modifyCollection needs collection: %v", err)
		}
		cmd := bson.D{{Key: "collMod", Value: coll}}
		for _, k := range []string{"validator", "index", "changeStreamPreAndPostImages", "expireAfterSeconds", "timeseries", "validationLevel", "validationAction"} {
			if v, ok := a.anyValue(k); ok {
				cmd = append(cmd, bson.E{Key: k, Value: v})
			}
		}
		return func(ctx context.Context) opResult {
			return errResult(db.RunCommand(ctx, cmd).Err())
		}, nil
	case "createChangeStream":
		pipeline, opts, err := changeStreamArgs(a)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) opResult {
			cs, err := db.Watch(ctx, pipeline, opts)
			return changeStreamResult(cs, err)
		}, nil
	case "drop", "dropDatabase":
		return func(ctx context.Context) opResult { return errResult(db.Drop(ctx)) }, nil
	}
	return nil, notImplemented(name, "a database")
}

func createCollection(db *mongo.Database, a *args) (execFunc, error) {
	coll, ok, err := a.str("collection")
	if err != nil || !ok {
		return nil, fmt.Errorf("runner: createCollection needs collection: %v", err)
	}
	if viewOn, ok, err := a.str("viewOn"); err != nil {
		return nil, err
	} else if ok {
		pipeline := bson.A{}
		if vals, ok, err := a.array("pipeline"); err != nil {
			return nil, err
		} else if ok {
			pipeline = bson.A(anySlice(vals))
		}
		return func(ctx context.Context) opResult {
			return errResult(db.CreateView(ctx, coll, viewOn, pipeline))
		}, nil
	}
	opts := options.CreateCollection()
	if n, ok, err := a.integer("expireAfterSeconds"); err != nil {
		return nil, err
	} else if ok {
		opts.SetExpireAfterSeconds(n)
	}
	if d, ok, err := a.doc("timeseries"); err != nil {
		return nil, err
	} else if ok {
		ta := newArgs("timeseries", d)
		ts := options.TimeSeries()
		if s, ok, err := ta.str("timeField"); err != nil {
			return nil, err
		} else if ok {
			ts.SetTimeField(s)
		}
		if s, ok, err := ta.str("metaField"); err != nil {
			return nil, err
		} else if ok {
			ts.SetMetaField(s)
		}
		if s, ok, err := ta.str("granularity"); err != nil {
			return nil, err
		} else if ok {
			ts.SetGranularity(s)
		}
		if n, ok, err := ta.integer("bucketMaxSpanSeconds"); err != nil {
			return nil, err
		} else if ok {
			ts.SetBucketMaxSpan(time.Duration(n) * time.Second)
		}
		if n, ok, err := ta.integer("bucketRoundingSeconds"); err != nil {
			return nil, err
		} else if ok {
			ts.SetBucketRounding(time.Duration(n) * time.Second)
		}
		if err := ta.finish(); err != nil {
			return nil, err
		}
		opts.SetTimeSeriesOptions(ts)
	}
	if d, ok, err := a.doc("clusteredIndex"); err != nil {
		return nil, err
	} else if ok {
		opts.SetClusteredIndex(d)
	}
	if d, ok, err := a.doc("changeStreamPreAndPostImages"); err != nil {
		return nil, err
	} else if ok {
		opts.SetChangeStreamPreAndPostImages(d)
	}
	if d, ok, err := a.doc("validator"); err != nil {
		return nil, err
	} else if ok {
		opts.SetValidator(d)
	}
	if b, ok, err := a.boolean("capped"); err != nil {
		return nil, err
	} else if ok {
		opts.SetCapped(b)
	}
	if n, ok, err := a.integer("size"); err != nil {
		return nil, err
	} else if ok {
		opts.SetSizeInBytes(n)
	}
	return func(ctx context.Context) opResult {
		return errResult(db.CreateCollection(ctx, coll, opts))
	}, nil
}

// clientOp prepares an operation on a client entity.
func (t *testRun) clientOp(c *clientEntity, name string, a *args) (execFunc, error) {
	switch name {
	case "listDatabases", "listDatabaseNames":
		filter, err := filterArg(a, false)
		if err != nil {
			return nil, err
		}
		opts := options.ListDatabases()
		if b, ok, err := a.boolean("nameOnly"); err != nil {
			return nil, err
		} else if ok {
			opts.SetNameOnly(b)
		}
		if b, ok, err := a.boolean("authorizedDatabases"); err != nil {
			return nil, err
		} else if ok {
			opts.SetAuthorizedDatabases(b)
		}
		if name == "listDatabaseNames" {
			return func(ctx context.Context) opResult {
				names, err := c.client.ListDatabaseNames(ctx, filter, opts)
				if err != nil {
					return errResult(err)
				}
				return valueResult(names, nil)
			}, nil
		}
		return func(ctx context.Context) opResult {
			res, err := c.client.ListDatabases(ctx, filter, opts)
			if err != nil {
				return docsResult(nil, err)
			}
			docs := make([]bson.Raw, 0, len(res.Databases))
			for _, d := range res.Databases {
				raw, err := bson.Marshal(bson.D{{Key: "name", Value: d.Name}, {Key: "sizeOnDisk", Value: d.SizeOnDisk}, {Key: "empty", Value: d.Empty}})
				if err != nil {
					return docsResult(nil, err)
				}
				docs = append(docs, raw)
			}
			return docsResult(docs, nil)
		}, nil
	case "createChangeStream":
		pipeline, opts, err := changeStreamArgs(a)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) opResult {
			cs, err := c.client.Watch(ctx, pipeline, opts)
			return changeStreamResult(cs, err)
		}, nil
	case "clientBulkWrite":
		return clientBulkWrite(c, a)
	case "close":
		return func(ctx context.Context) opResult {
			_ = c.client.Disconnect(ctx)
			return opResult{}
		}, nil
	}
	return nil, notImplemented(name, "a client")
}
