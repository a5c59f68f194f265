package engine

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"
)

// cmdDropIndexes drops indexes by name, key pattern, list of names, or "*"
// (all but _id and the shard-key index). The shard-key index of a
// sharded collection is its document layout (engine/plan/shardkeyindex.go): dropping
// it, alone or in a list, is refused with 370 CannotDropShardKeyIndex
// as MongoDB refuses dropping the only index that supports the shard key,
// and nothing is dropped.
func (e *Engine) cmdDropIndexes(_ context.Context, req *request) ([]byte, error) {
	name, err := collectionArg(req)
	if err != nil {
		return nil, err
	}
	var target bsoncore.Value
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "index":
			target = v
		case "writeConcern", "comment":
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	if target.Type == 0 {
		return nil, missingField(req.name, "index")
	}
	if e.isView(req.db, name) {
		return nil, notOnView(req.db, name)
	}
	c := e.store.Collection(req.db, name)
	if c == nil {
		return nil, errorf(ErrNamespaceNotFound, "ns not found %s", namespaceOf(req.db, name))
	}
	was := indexCount(c)
	skName := plan.ShardKeyIndexName(c) // "" when c is not sharded
	refuseShardKey := errorf(ErrCannotDropShardKeyIndex, "Cannot drop the only compatible index for this collection's shard key")
	var names []string
	msg := ""
	switch target.Type {
	case bsoncore.TypeString:
		s := target.StringValue()
		switch s {
		case "*":
			for _, ix := range c.Indexes {
				names = append(names, ix.Name)
			}
			msg = "non-_id indexes dropped for collection"
		case idIndexName:
			return nil, errorf(ErrInvalidOptions, "cannot drop _id index")
		default:
			if skName != "" && s == skName {
				return nil, refuseShardKey
			}
			if c.Index(s) == nil {
				return nil, errorf(ErrIndexNotFound, "index not found with name [%s]", s)
			}
			names = []string{s}
		}
	case bsoncore.TypeEmbeddedDocument:
		key := target.Document()
		if sameKey(bson.Raw(key), idKeyPattern) {
			return nil, errorf(ErrInvalidOptions, "cannot drop _id index")
		}
		if skName != "" && sameKey(bson.Raw(key), plan.ShardKeyIndexKeyRaw(c)) {
			return nil, refuseShardKey
		}
		var found []string
		for _, ix := range c.Indexes {
			if sameKey(ix.Key, bson.Raw(key)) {
				found = append(found, ix.Name)
			}
		}
		switch len(found) {
		case 0:
			return nil, errorf(ErrIndexNotFound, "can't find index with key: %s", shellString(target))
		case 1:
			names = found
		default:
			return nil, errorf(ErrBadValue, "%d indexes found for key: %s, identify by name instead. Conflicting indexes: %v", len(found), shellString(target), found)
		}
	case bsoncore.TypeArray:
		vals, _ := target.Array().Values()
		for _, v := range vals {
			s, ok := v.StringValueOK()
			if !ok {
				return nil, errorf(ErrTypeMismatch, "dropIndexes %s failed to drop multiple indexes [%s]: index names must be strings", namespaceOf(req.db, name), shellString(target))
			}
			if s == idIndexName {
				return nil, errorf(ErrInvalidOptions, "cannot drop _id index")
			}
			if s == "*" {
				return nil, errorf(ErrBadValue, "'*' is not allowed in an index list")
			}
			if s == skName && skName != "" {
				return nil, refuseShardKey
			}
			if c.Index(s) == nil {
				return nil, errorf(ErrIndexNotFound, "index not found with name [%s]", s)
			}
			names = append(names, s)
		}
	default:
		return nil, errorf(ErrTypeMismatch, "dropIndexes %s failed: the 'index' field must be a string, an object or an array, not %s", namespaceOf(req.db, name), TypeName(target.Type))
	}
	for _, n := range names {
		for attempt := 0; ; attempt++ {
			_, err := e.store.DropIndex(c, n)
			if errors.Is(err, store.ErrCollectionChanged) && attempt < 10 {
				if c = e.store.Collection(req.db, name); c == nil {
					return nil, errorf(ErrNamespaceNotFound, "ns not found %s", namespaceOf(req.db, name))
				}
				continue
			}
			if errors.Is(err, store.ErrNotFound) {
				break // dropped meanwhile
			}
			if err != nil {
				return nil, fmt.Errorf("drop index %s: %w", n, err)
			}
			break
		}
		if cur := e.store.Collection(req.db, name); cur != nil {
			c = cur
		}
	}
	reply := bson.D{{Key: "nIndexesWas", Value: was}}
	if msg != "" {
		reply = append(reply, bson.E{Key: "msg", Value: msg})
	}
	return okDoc(reply)
}
