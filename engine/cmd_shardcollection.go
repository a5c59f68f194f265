package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdShardCollection shards a collection by a hashed key:
// {shardCollection: "db.coll", key: {region: "hashed"}}. A collection that
// does not exist is created with as many partitions as its throughput
// needs (ceil(T/6000), or numInitialChunks if more); one that has
// documents has them re-placed by their shard key. A range key is
// refused: Parsec, like Cosmos DB, places documents by hash only.
// Sharding again by the same key succeeds and changes nothing.
func (e *Engine) cmdShardCollection(_ context.Context, req *request) ([]byte, error) {
	v := req.body.Index(0).Value()
	ns, ok := v.StringValueOK()
	if !ok {
		return nil, wrongType(req.name, req.name, v, "string")
	}
	db, coll, found := strings.Cut(ns, ".")
	if !found || coll == "" {
		return nil, errorf(ErrInvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	if err := validateCollName(db, coll); err != nil {
		return nil, err
	}
	switch db {
	case "admin":
		return nil, errorf(ErrIllegalOperation, "can't shard the admin db")
	case "config":
		return nil, errorf(ErrIllegalOperation, "only special collections in the config db may be sharded")
	}
	var key bsoncore.Document
	numChunks := int64(0)
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "key":
			key, err = docArg(req.name, k, v)
		case "unique":
			var unique bool
			if unique, err = boolArg(req.name, k, v); err == nil && unique {
				err = errorf(ErrInvalidOptions, "Hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.")
			}
		case "numInitialChunks":
			if numChunks, err = int64Arg(req.name, k, v); err == nil && (numChunks < 0 || numChunks > 8192) {
				err = errorf(ErrInvalidOptions, "numInitialChunks must be between 0 and 8192, got %d", numChunks)
			}
		case "presplitHashedZones", "implicitlyCreateIndex", "enforceUniquenessCheck":
			_, err = boolArg(req.name, k, v)
		case "collation":
			var d bsoncore.Document
			if d, err = docArg(req.name, k, v); err == nil {
				// The shard key compares by bytes: only the simple collation.
				var c *value.Collator
				if c, err = parseCollation(d); err == nil && c != nil {
					err = errorf(ErrBadValue, "The collation for shardCollection must be {locale: 'simple'}, but found: %s", value.RenderDocument(d))
				}
			}
		case "timeseries":
			err = errorf(ErrCommandNotSupported, "time-series collections are not supported by Parsec")
		default:
			if !genericFields[k] {
				err = unknownField(req.name, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if key == nil {
		return nil, missingField(req.name, "key")
	}
	spec, err := shard.ParseSpec(key)
	if err != nil {
		return nil, shardKeyError(err)
	}
	if e.isView(db, coll) {
		return nil, errorf(ErrCommandNotSupportedOnView, "Views cannot be sharded.")
	}
	c, err := e.shardCollection(db, coll, spec, int(numChunks))
	if err != nil {
		return nil, err
	}
	e.cursors.CloseForNamespace(c.Namespace())
	e.units.CatalogChanged()
	return okReply(
		bson.E{Key: "_t", Value: "ShardCollectionResponse"},
		bson.E{Key: "collectionsharded", Value: ns},
		bson.E{Key: "collectionUUID", Value: bson.Binary{Subtype: 4, Data: c.UUID}},
	)
}

// shardCollection shards db.coll by spec (shardCollection and Cosmos
// DB's CreateCollection of an existing collection) with at least
// minPartitions partitions when it is new.
func (e *Engine) shardCollection(db, coll string, spec shard.Spec, minPartitions int) (*store.Collection, error) {
	t := e.newCollectionThroughput(db)
	if cur := e.store.Collection(db, coll); cur != nil && !cur.Throughput.IsZero() {
		t = cur.Throughput // an existing collection keeps its own
	}
	if cur := e.store.Collection(db, coll); cur != nil && cur.Capped {
		return nil, errorf(ErrInvalidOptions, "can't shard a capped collection")
	}
	if cur := e.store.Collection(db, coll); cur != nil && !cur.Sharded() {
		for _, ix := range cur.Indexes {
			if ix.Unique && (len(ix.Fields) == 0 || ix.Fields[0].Path != spec.Path) {
				return nil, errorf(ErrInvalidOptions, "can't shard collection '%s' with unique index on %s and proposed shard key { %s: \"hashed\" }. Uniqueness can't be maintained unless shard key is a prefix",
					namespaceOf(db, coll), shellString(docValue(ix.Key)), spec.Path)
			}
		}
	}
	parts := max(minPartitions, 1)
	if !t.IsZero() {
		parts = max(parts, e.initialPartitions(throughputOf(t)))
	}
	c, err := e.store.ShardCollection(db, coll, spec, parts, t)
	switch {
	case errors.Is(err, store.ErrAlreadySharded):
		if c.ShardKey == spec.Path {
			return c, nil
		}
		return nil, errorf(ErrAlreadyInitialized, "sharding already enabled for collection %s with options { key: { %s: \"hashed\" } }", c.Namespace(), c.ShardKey)
	case errors.Is(err, store.ErrConflict):
		return nil, errorf(ErrConflictingOperationInProgress, "%s is being sharded by another operation", namespaceOf(db, coll))
	case err != nil:
		return nil, shardKeyError(err)
	}
	return c, nil
}

// newCollectionThroughput is what a collection created without throughput
// gets: none of its own in a database with shared throughput, else the
// default (--default-throughput).
func (e *Engine) newCollectionThroughput(db string) store.Throughput {
	if d := e.store.Database(db); d != nil && !d.Throughput.IsZero() {
		return store.Throughput{}
	}
	return store.Throughput{RUs: e.limits.DefaultThroughput}
}
