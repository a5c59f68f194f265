package engine

import (
	"context"
	"strings"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdReshardCollection changes a sharded collection's shard key online:
// {reshardCollection: "db.coll", key: {...}} (mongosh's
// sh.reshardCollection), with MongoDB 7.0's options: unique (false
// only), numInitialChunks (the new layout's physical partitions; by
// default as many as the collection has, or its throughput needs),
// collation (simple only) and zones (none can name a zone: Parsec has
// none). The documents are copied into a hidden collection while reads
// and writes go on, the changes made meanwhile follow from the change
// log, and a short critical section switches (reshard.go); the command
// answers once done. Resharding to the key the collection has is a
// no-op; asking again for the key a running resharding is making waits
// for it, as MongoDB does.
func (e *Engine) cmdReshardCollection(ctx context.Context, req *request) ([]byte, error) {
	ns, db, coll, err := namespaceArg(req)
	if err != nil {
		return nil, err
	}
	if err := validateCollName(db, coll); err != nil {
		return nil, err
	}
	var key bsoncore.Document
	numChunks := int64(0)
	var zones bsoncore.Document
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "key":
			key, err = docArg(req.name, k, v)
		case "unique":
			var u bool
			if u, err = boolArg(req.name, k, v); err == nil && u {
				err = errorf(ErrBadValue, "The unique field must be false")
			}
		case "numInitialChunks":
			if numChunks, err = int64Arg(req.name, k, v); err == nil && (numChunks <= 0 || numChunks > 8192) {
				err = errorf(ErrBadValue, "numInitialChunks must be between 1 and 8192, got %d", numChunks)
			}
		case "collation":
			var d bsoncore.Document
			if d, err = docArg(req.name, k, v); err == nil {
				var c *value.Collator
				if c, err = parseCollation(d); err == nil && c != nil {
					err = errorf(ErrBadValue, "The collation for reshardCollection must be {locale: 'simple'}, but found: %s", value.RenderDocument(d))
				}
			}
		case "zones":
			if v.Type != bsoncore.TypeArray {
				err = wrongType(req.name, k, v, "array")
			} else {
				zones = bsoncore.Document(v.Array())
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
	if key == nil {
		return nil, missingField(req.name, "key")
	}
	spec, err := shard.ParseSpec(key)
	if err != nil {
		return nil, shardKeyError(err)
	}
	if err := checkReshardZones(zones); err != nil {
		return nil, err
	}
	if e.isView(db, coll) {
		return nil, errorf(ErrCommandNotSupportedOnView, "Namespace %s is a view, not a collection", ns)
	}
	c := e.store.Collection(db, coll)
	if c == nil || strings.HasPrefix(coll, store.ReshardTempPrefix) {
		return nil, errorf(ErrNamespaceNotFound, "Collection %s does not exist", ns)
	}
	if !c.Sharded() {
		return nil, reshardError(errNamespaceNotSharded, "Collection %s is not sharded", ns)
	}
	rst, ok := e.store.(reshardStore)
	if !ok {
		return nil, errorf(ErrCommandNotSupported, "reshardCollection is not supported by this storage")
	}
	if rs := e.reshards.get(ns); rs != nil {
		if !rs.spec.Equal(spec) {
			return nil, reshardError(errReshardCollectionInProgress, "Only one resharding operation is allowed to be active at a time: %s is being resharded to %s", ns, rs.spec)
		}
		if err := rs.wait(ctx.Done(), e.stop); err != nil {
			return nil, err
		}
		return okReply()
	}
	if c.Spec().Equal(spec) {
		return okReply() // MongoDB: the key it has already, nothing to do
	}
	for _, ix := range c.Indexes {
		if ix.Unique && !uniqueKeeps(ix, spec) {
			return nil, errorf(ErrInvalidOptions, "can't reshard collection '%s' with unique index on %s and proposed shard key %s. Uniqueness can't be maintained unless shard key is a prefix",
				ns, shellString(docValue(ix.Key)), spec)
		}
	}
	parts := int(numChunks)
	if parts == 0 {
		parts = c.Map().Len()
		if t, _ := e.effectiveThroughput(c); !t.IsZero() {
			parts = max(parts, e.initialPartitions(t))
		}
	}
	rs, err := e.startResharding(rst, c, spec, parts)
	if err != nil {
		return nil, err
	}
	if !rs.spec.Equal(spec) {
		return nil, reshardError(errReshardCollectionInProgress, "Only one resharding operation is allowed to be active at a time: %s is being resharded to %s", ns, rs.spec)
	}
	if err := rs.wait(ctx.Done(), e.stop); err != nil {
		return nil, err
	}
	return okReply()
}

// checkReshardZones checks reshardCollection's zones: each {zone (or
// tag), min, max}; a zone must exist, and Parsec has none, so only an
// empty list (or zone: null, which MongoDB takes as no zone) passes.
func checkReshardZones(zones bsoncore.Document) error {
	if zones == nil {
		return nil
	}
	vals, err := zones.Values()
	if err != nil {
		return errorf(ErrBadValue, "zones: %v", err)
	}
	for _, z := range vals {
		d, ok := z.DocumentOK()
		if !ok {
			return wrongType("reshardCollection", "zones", z, "object")
		}
		if _, err := d.LookupErr("min"); err != nil {
			return missingField("ReshardingZoneType", "min")
		}
		if _, err := d.LookupErr("max"); err != nil {
			return missingField("ReshardingZoneType", "max")
		}
		name, err := d.LookupErr("zone")
		if err != nil {
			name, err = d.LookupErr("tag")
		}
		if err != nil || name.Type == bsoncore.TypeNull {
			continue
		}
		s, _ := name.StringValueOK()
		return errorf(ErrBadValue, "Zone '%s' does not exist: a zone must be associated with a shard (addShardToZone), and Parsec has no zones", s)
	}
	return nil
}
