package plan

import (
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Where a document lives: its storage key places it in one logical
// partition (its shard-key value) and, through the partition map, in one
// physical partition.

// DocKey is the storage key of doc, whose _id is id, in c. In a sharded
// collection the document must hold a valid shard-key value (else a
// *shard.KeyError); its key is d/<coll><point><shard key><_id>.
func DocKey(c *store.Collection, doc bsoncore.Document, id bsoncore.Value) ([]byte, error) {
	if !c.Sharded() {
		return IDKey(c, id), nil
	}
	sk, err := c.Spec().Extract(doc)
	if err != nil {
		return nil, err
	}
	return ShardedKey(c, sk, id), nil
}

// IDKey is the storage key of a document in an unsharded collection; in
// a capped one, the key Insert takes (store/capped.go places the
// document by insertion order).
func IDKey(c *store.Collection, id bsoncore.Value) []byte {
	return store.DocKey(c.ID, 0, nil, value.EncodeKey(nil, id))
}

// ShardedKey is the key of the document with shard-key value sk and _id
// id in the sharded collection c.
func ShardedKey(c *store.Collection, sk, id bsoncore.Value) []byte {
	skEnc := value.EncodeKey(make([]byte, 0, 32), sk)
	return store.DocKey(c.ID, c.Spec().Point(sk), skEnc, value.EncodeKey(nil, id))
}

// PointKey is the one key a filter can match, when it pins one: _id
// equality in an unsharded collection that is not capped; _id equality
// and one shard-key value in a sharded one. nil otherwise.
//
// Under a collation (f.Collation) a string _id or shard-key value pins
// nothing: equal strings need not have equal bytes.
func PointKey(c *store.Collection, f *query.Filter, filter bsoncore.Document) []byte {
	id, ok := f.IDEquality()
	if c.Capped {
		return nil // keyed by insertion order: found through the _id index
	}
	if coll := f.Collation(); coll != nil {
		if ok && value.Collatable(id) {
			return nil
		}
		filter = Uncollated(filter, coll)
	}
	if !c.Sharded() {
		if !ok {
			return nil
		}
		return IDKey(c, id)
	}
	if !ok {
		// {_id: v, <shard key>: k, ...}: the usual point read of a sharded
		// collection, whose filter is more than an _id equality.
		if id, ok = IDPinned(filter); !ok {
			return nil
		}
	}
	vals, ok := c.Spec().Values(filter)
	if !ok || len(vals) != 1 {
		return nil
	}
	return ShardedKey(c, vals[0], id)
}

// IDPinned is the one _id value a filter pins by equality (through $and
// and $in of one value), when it is a plain value a key can hold (as
// query.Filter.IDEquality accepts).
func IDPinned(filter bsoncore.Document) (bsoncore.Value, bool) {
	vals, ok := idSpec.Values(filter)
	if !ok || len(vals) != 1 {
		return bsoncore.Value{}, false
	}
	switch vals[0].Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeNull, bsoncore.TypeUndefined,
		bsoncore.TypeRegex, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return bsoncore.Value{}, false
	}
	return vals[0], true
}
