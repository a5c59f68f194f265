package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdCustomAction runs Azure Cosmos DB's extension commands for the
// MongoDB API, {customAction: "<name>", ...} on a database:
//
//	CreateDatabase, UpdateDatabase, GetDatabase
//	    offerThroughput: n | autoScaleSettings: {maxThroughput: n}
//	    (database-level throughput, shared by its collections that have
//	    none of their own)
//	CreateCollection, UpdateCollection, GetCollection
//	    collection, shardKey ("a.b": a hashed key; ["/a", "/b", "/c"]: a
//	    hierarchical key of up to three levels, the shard key {a:
//	    "hashed", b: 1, c: 1}), offerThroughput, autoScaleSettings, indexes
//	GetPartitionStats (Parsec's own; cmd_customaction_stats.go)
//	    collection (optional: all of the database's, or every database's
//	    on admin), top
//	AnalyzePartitionKey (Parsec's own; advisor.go)
//	    collection, key | keys, offerThroughput | autoScaleSettings,
//	    sampleSize
//
// Replies and errors follow Cosmos DB's documentation of these commands.
func (e *Engine) cmdCustomAction(ctx context.Context, req *request) ([]byte, error) {
	v := req.body.Index(0).Value()
	action, ok := v.StringValueOK()
	if !ok {
		return nil, wrongType(req.name, req.name, v, "string")
	}
	if err := validateDBName(req.db); err != nil {
		return nil, err
	}
	args, err := parseCustomAction(req)
	if err != nil {
		return nil, err
	}
	if limit := e.limits.MaxThroughput; !args.throughput.IsZero() && args.throughput.Limit() > float64(limit) {
		field := "offerThroughput"
		if args.throughput.IsAutoscale() {
			field = "autoScaleSettings.maxThroughput"
		}
		return nil, errorf(ErrBadValue, "%s %.0f is above the most a collection or database may have, %d RU/s (--max-throughput)", field, args.throughput.Limit(), limit)
	}
	switch action {
	case "CreateDatabase":
		return e.createDatabase(req.db, args)
	case "UpdateDatabase":
		return e.updateDatabase(req.db, args)
	case "GetDatabase":
		return e.getDatabase(req.db)
	case "CreateCollection":
		return e.createCollection(req.db, args)
	case "UpdateCollection":
		return e.updateCollection(req.db, args)
	case "GetCollection":
		return e.getCollection(req.db, args)
	case "GetPartitionStats":
		return e.getPartitionStats(ctx, req.db, args)
	case "AnalyzePartitionKey":
		return e.analyzePartitionKey(ctx, req, args)
	}
	return nil, errorf(ErrCommandNotFound, "Custom action %q is not supported: Parsec knows CreateDatabase, UpdateDatabase, GetDatabase, CreateCollection, UpdateCollection, GetCollection, GetPartitionStats and AnalyzePartitionKey", action)
}

// customActionArgs are the fields of a custom action.
type customActionArgs struct {
	collection    string
	hasCollection bool
	shardKey      string
	hasShardKey   bool
	hierarchical  bool          // shardKey was a list of paths
	shardPaths    []string      // its paths
	throughput    ru.Throughput // zero: none given
	top           int
}

func parseCustomAction(req *request) (*customActionArgs, error) {
	a := &customActionArgs{top: 5}
	manual, auto := 0, 0
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "collection":
			if a.collection, err = stringArg(req.name, k, v); err == nil {
				a.hasCollection = true
				err = validateCollName(req.db, a.collection)
			}
		case "shardKey":
			// A path, or Cosmos DB's hierarchical partition key: a list of
			// up to three paths.
			if arr, ok := v.ArrayOK(); ok {
				vals, _ := arr.Values()
				for _, x := range vals {
					p, ok := x.StringValueOK()
					if !ok {
						err = wrongType(req.name, "shardKey", x, "string")
						break
					}
					a.shardPaths = append(a.shardPaths, p)
				}
				if err == nil {
					a.hasShardKey, a.hierarchical = true, true
				}
			} else if a.shardKey, err = stringArg(req.name, k, v); err == nil {
				a.hasShardKey = true
			}
		case "offerThroughput":
			var n int64
			if n, err = int64Arg(req.name, k, v); err == nil {
				manual = int(min(max(n, -1), 1<<31))
				if manual <= 0 {
					err = errorf(ErrBadValue, "offerThroughput must be a positive number, got %d", n)
				}
			}
		case "autoScaleSettings":
			var d bsoncore.Document
			if d, err = docArg(req.name, k, v); err != nil {
				break
			}
			mv, lerr := d.LookupErr("maxThroughput")
			if lerr != nil {
				err = missingField("autoScaleSettings", "maxThroughput")
				break
			}
			var n int64
			if n, err = int64Arg("autoScaleSettings", "maxThroughput", mv); err == nil {
				auto = int(min(max(n, -1), 1<<31))
				if auto <= 0 {
					err = errorf(ErrBadValue, "autoScaleSettings.maxThroughput must be a positive number, got %d", n)
				}
			}
		case "top":
			var n int64
			if n, err = int64Arg(req.name, k, v); err == nil {
				a.top = int(min(max(n, 0), 1000))
			}
		case "key", "keys", "sampleSize":
			// AnalyzePartitionKey's, which reads them (advisor.go)
		case "indexes":
			// Index definitions belong to the indexes work; accepted and,
			// for now, only the _id index exists.
			if v.Type != bsoncore.TypeArray {
				err = wrongType(req.name, k, v, "array")
			}
		default:
			if !genericFields[k] {
				err = unknownField(req.name, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case manual > 0 && auto > 0:
		return nil, errorf(ErrBadValue, "Specify either offerThroughput or autoScaleSettings, not both")
	case manual > 0:
		a.throughput = ru.Manual(manual)
	case auto > 0:
		a.throughput = ru.Autoscale(auto)
	}
	if !a.throughput.IsZero() {
		if err := a.throughput.Validate(); err != nil {
			return nil, errorf(ErrBadValue, "%v", err)
		}
	}
	return a, nil
}

// throughputFields are the reply fields of a throughput:
// provisionedThroughput for manual, autoScaleSettings for autoscale.
func throughputFields(t ru.Throughput) []bson.E {
	switch {
	case t.IsAutoscale():
		return []bson.E{{Key: "autoScaleSettings", Value: bson.D{{Key: "maxThroughput", Value: int32(t.MaxRUs)}}}}
	case !t.IsZero():
		return []bson.E{{Key: "provisionedThroughput", Value: int32(t.RUs)}}
	}
	return nil
}

func (e *Engine) createDatabase(db string, a *customActionArgs) ([]byte, error) {
	if _, err := e.store.SetDatabaseThroughput(db, storeThroughput(a.throughput), true); err != nil {
		if errors.Is(err, store.ErrExists) {
			return nil, errorf(ErrNamespaceExists, "Database %s already exists", db)
		}
		return nil, err
	}
	e.units.CatalogChanged()
	return okReply()
}

func (e *Engine) updateDatabase(db string, a *customActionArgs) ([]byte, error) {
	d := e.store.Database(db)
	if d == nil {
		return nil, errorf(ErrNamespaceNotFound, "Database %s was not created with CreateDatabase", db)
	}
	if a.throughput.IsZero() {
		return nil, errorf(ErrBadValue, "UpdateDatabase needs offerThroughput or autoScaleSettings")
	}
	if d.Throughput.IsZero() {
		return nil, errorf(ErrBadValue, "Database %s has no shared throughput to update: its collections have their own", db)
	}
	if _, err := e.store.SetDatabaseThroughput(db, storeThroughput(a.throughput), false); err != nil {
		return nil, err
	}
	err := e.splitForShared(db, a.throughput)
	e.units.CatalogChanged()
	if err != nil {
		return nil, err
	}
	e.logger.Info("throughput changed", "database", db, "shared", true,
		"from", throughputString(throughputOf(d.Throughput)), "to", throughputString(a.throughput))
	return okReply()
}

// splitForShared gives the collections sharing db's throughput t enough
// physical partitions that none serves more than the per-partition
// maximum: ceil(T / max) in all, the missing ones made by splitting the
// sharded collections, evenly (an unsharded collection is one partition
// and cannot split). Lowering throughput never merges.
func (e *Engine) splitForShared(db string, t ru.Throughput) error {
	need := e.partitionsForThroughput(t)
	total := 0
	var sharded []string
	for _, c := range e.store.Collections(db) {
		if !c.Throughput.IsZero() {
			continue // has its own throughput
		}
		total += c.Map().Len()
		if c.Sharded() {
			sharded = append(sharded, c.Name)
		}
	}
	if total >= need || len(sharded) == 0 {
		return nil
	}
	extra := need - total
	for i, name := range sharded {
		add := extra / len(sharded)
		if i < extra%len(sharded) {
			add++
		}
		for add > 0 {
			c := e.store.Collection(db, name)
			if c == nil {
				break
			}
			_, err := e.store.SetThroughput(c, c.Throughput, c.Map().Len()+add)
			if errors.Is(err, store.ErrCollectionChanged) {
				continue // split meanwhile: apply to the new entry
			}
			if err != nil {
				return err
			}
			break
		}
	}
	return nil
}

func (e *Engine) getDatabase(db string) ([]byte, error) {
	d := e.store.Database(db)
	if d == nil && len(e.store.Collections(db)) == 0 {
		return nil, errorf(ErrNamespaceNotFound, "Database %s does not exist", db)
	}
	fields := []bson.E{{Key: "database", Value: db}}
	if d != nil {
		fields = append(fields, throughputFields(throughputOf(d.Throughput))...)
	}
	return okReply(fields...)
}

func (e *Engine) createCollection(db string, a *customActionArgs) ([]byte, error) {
	if !a.hasCollection {
		return nil, missingField("customAction", "collection")
	}
	t := storeThroughput(a.throughput)
	if t.IsZero() {
		t = e.newCollectionThroughput(db)
	}
	nc := store.NewCollection{Throughput: t, Partitions: 1}
	if a.hasShardKey {
		spec, err := shard.ParsePath(a.shardKey)
		if a.hierarchical {
			spec, err = shard.ParsePaths(a.shardPaths)
		}
		if err != nil {
			return nil, shardKeyError(err)
		}
		nc.Spec = spec
		if !t.IsZero() {
			nc.Partitions = e.initialPartitions(throughputOf(t))
		}
	} else if err := e.checkUnshardedThroughput(throughputOf(t)); err != nil {
		return nil, err
	}
	if _, err := e.store.CreateCollectionWith(db, a.collection, nc); err != nil {
		if errors.Is(err, store.ErrExists) {
			return nil, errorf(ErrNamespaceExists, "Collection %s already exists", namespaceOf(db, a.collection))
		}
		return nil, err
	}
	return okReply()
}

// checkUnshardedThroughput: an unsharded collection is one physical
// partition, which serves at most --partition-max-rus.
func (e *Engine) checkUnshardedThroughput(t ru.Throughput) error {
	if int(t.Limit()) > e.limits.MaxRUs {
		return errorf(ErrBadValue, "An unsharded collection is one physical partition and can have at most %d RU/s, not %d: give it a shardKey", e.limits.MaxRUs, int(t.Limit()))
	}
	return nil
}

func (e *Engine) updateCollection(db string, a *customActionArgs) ([]byte, error) {
	if !a.hasCollection {
		return nil, missingField("customAction", "collection")
	}
	if a.hasShardKey {
		return nil, errorf(ErrInvalidOptions, "The shard key of a collection cannot be changed")
	}
	if a.throughput.IsZero() {
		return okReply() // e.g. only indexes
	}
	for {
		c := e.store.Collection(db, a.collection)
		if c == nil {
			return nil, errorf(ErrNamespaceNotFound, "Collection %s does not exist", namespaceOf(db, a.collection))
		}
		if !c.Sharded() {
			if err := e.checkUnshardedThroughput(a.throughput); err != nil {
				return nil, err
			}
		}
		// Raising throughput past partitions x max RU/s splits partitions
		// until there are enough; lowering it never merges.
		next, err := e.store.SetThroughput(c, storeThroughput(a.throughput), e.partitionsForThroughput(a.throughput))
		if errors.Is(err, store.ErrCollectionChanged) {
			continue // split or re-placed meanwhile: apply to the new entry
		}
		if err != nil {
			return nil, err
		}
		from, _ := e.effectiveThroughput(c)
		e.logger.Info("throughput changed", "collection", c.Namespace(),
			"from", throughputString(from), "to", throughputString(a.throughput),
			"partitions_before", c.Map().Len(), "partitions", next.Map().Len())
		return okReply()
	}
}

func (e *Engine) getCollection(db string, a *customActionArgs) ([]byte, error) {
	if !a.hasCollection {
		return nil, missingField("customAction", "collection")
	}
	c := e.store.Collection(db, a.collection)
	if c == nil {
		return nil, errorf(ErrNamespaceNotFound, "Collection %s does not exist", namespaceOf(db, a.collection))
	}
	fields := []bson.E{{Key: "database", Value: db}, {Key: "collection", Value: c.Name}}
	if c.Sharded() {
		fields = append(fields, bson.E{Key: "shardKeyDefinition", Value: bson.Raw(c.Spec().Doc())})
	}
	t, shared := e.effectiveThroughput(c)
	if !shared {
		fields = append(fields, throughputFields(t)...)
	}
	return okReply(fields...)
}
