package engine

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdShardCollection shards a collection: {shardCollection: "db.coll",
// key: {region: "hashed"}}, or a ranged or compound key as MongoDB takes
// them ({a: 1}, {a: 1, b: 1}, {a: "hashed", b: 1}, {a: 1, b: "hashed"};
// shard.ParseSpec). A collection that does not exist is created with as
// many partitions as its throughput needs (ceil(T/6000), or
// numInitialChunks if more, which only a hashed leading field takes, as in
// MongoDB); one that has documents has them re-placed by their shard key
// (a ranged key's partitions then split where its data is). unique: true
// takes a ranged key only (MongoDB refuses it with a hashed field) and
// makes the key's values unique with a unique index on the key. Sharding
// again by the same key succeeds and changes nothing.
func (e *Engine) cmdShardCollection(_ context.Context, req *request) ([]byte, error) {
	ns, db, coll, err := namespaceArg(req)
	if err != nil {
		return nil, err
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
	unique := false
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "key":
			key, err = docArg(req.name, k, v)
		case "unique":
			unique, err = boolArg(req.name, k, v)
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
	if unique && spec.Hashed() {
		return nil, errorf(ErrInvalidOptions, "Hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.")
	}
	if numChunks > 0 && spec.Ranged {
		return nil, errorf(ErrInvalidOptions, "numInitialChunks is only supported when the collection is empty and has a hashed field in the shard key pattern")
	}
	if e.isView(db, coll) {
		return nil, errorf(ErrCommandNotSupportedOnView, "Views cannot be sharded.")
	}
	c, err := e.shardCollection(db, coll, spec, int(numChunks))
	if err != nil {
		return nil, err
	}
	if unique {
		if c, err = e.ensureUniqueShardKeyIndex(c); err != nil {
			return nil, err
		}
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
			if ix.Unique && !uniqueKeeps(ix, spec) {
				return nil, errorf(ErrInvalidOptions, "can't shard collection '%s' with unique index on %s and proposed shard key %s. Uniqueness can't be maintained unless shard key is a prefix",
					namespaceOf(db, coll), shellString(docValue(ix.Key)), spec)
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
		if c.Spec().Equal(spec) {
			return c, nil
		}
		return nil, errorf(ErrAlreadyInitialized, "sharding already enabled for collection %s with options { key: %s }", c.Namespace(), c.Spec())
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

// uniqueKeeps reports whether a unique index ix can stay unique in a
// collection sharded by spec (keyPrefixCovers).
func uniqueKeeps(ix *store.Index, spec shard.Spec) bool {
	paths := make([]string, len(ix.Fields))
	for i, f := range ix.Fields {
		paths[i] = f.Path
	}
	return keyPrefixCovers(paths, spec)
}

// keyPrefixCovers reports whether an index on paths starts with the
// fields of the shard key spec (in any order), as MongoDB requires of a
// unique index on a sharded collection.
func keyPrefixCovers(paths []string, spec shard.Spec) bool {
	fields := spec.Fields()
	if len(paths) < len(fields) {
		return false
	}
	for _, f := range fields {
		if !slices.Contains(paths[:len(fields)], f.Path) {
			return false
		}
	}
	return true
}

// ensureUniqueShardKeyIndex gives c, sharded by a ranged key with unique:
// true, a unique index on its key ("<shard-key index name>_unique"), which
// keeps the key's values unique: indexes span every partition. A
// collection that already has it keeps it; documents that already share
// a value fail the build with a duplicate key error.
func (e *Engine) ensureUniqueShardKeyIndex(c *store.Collection) (*store.Collection, error) {
	name := plan.ShardKeyIndexName(c) + "_unique"
	if ix := c.Index(name); ix != nil {
		return c, nil
	}
	raw := bsoncore.NewDocumentBuilder().
		AppendDocument("key", c.Spec().Doc()).
		AppendString("name", name).
		AppendBoolean("unique", true).Build()
	is, err := parseIndexSpec(raw, c)
	if err != nil {
		return nil, err
	}
	db, coll := c.DB, c.Name
	for attempt := 0; ; attempt++ {
		_, err := e.store.CreateIndexesWithProgress(context.Background(), c, []store.Index{is.ix}, &store.BuildProgress{})
		if errors.Is(err, store.ErrCollectionChanged) && attempt < 10 {
			if c = e.store.Collection(db, coll); c == nil {
				return nil, errorf(ErrNamespaceNotFound, "Collection %s was dropped", namespaceOf(db, coll))
			}
			if c.Index(name) != nil {
				break
			}
			continue
		}
		if err != nil {
			return nil, indexBuildError(err, []indexSpec{is})
		}
		break
	}
	if cur := e.store.Collection(db, coll); cur != nil {
		c = cur
	}
	return c, nil
}

// namespaceArg reads the "db.coll" a command names as its first field
// (shardCollection, reshardCollection and its abort and commit).
func namespaceArg(req *request) (ns, db, coll string, err error) {
	v := req.body.Index(0).Value()
	ns, ok := v.StringValueOK()
	if !ok {
		return "", "", "", wrongType(req.name, req.name, v, "string")
	}
	db, coll, found := strings.Cut(ns, ".")
	if !found || db == "" || coll == "" {
		return "", "", "", errorf(ErrInvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	return ns, db, coll, nil
}
