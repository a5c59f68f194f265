package engine

import (
	"slices"
	"strconv"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The shard-key index. A sharded collection's documents are stored in
// (point, shard key, _id) order (store/doc.go), so the document layout is
// itself a hashed index on the shard key: every logical partition is one
// contiguous key range. Catalog commands list it as MongoDB names it,
// the planner reads logical partitions through it, and it cannot be
// dropped while the collection is sharded.

// shardKeyIndexName is the name of c's shard-key index ("" when c is not
// sharded): MongoDB's <path>_hashed.
func shardKeyIndexName(c *store.Collection) string {
	if c == nil || !c.Sharded() {
		return ""
	}
	return c.ShardKey + "_hashed"
}

// shardKeyIndexKey is the key pattern of c's shard-key index: {<path>: "hashed"}.
func shardKeyIndexKey(c *store.Collection) bson.D {
	return bson.D{{Key: c.ShardKey, Value: "hashed"}}
}

// shardKeyIndexSpec is c's shard-key index as listIndexes shows it.
func shardKeyIndexSpec(c *store.Collection) bson.D {
	return bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: shardKeyIndexKey(c)}, {Key: "name", Value: shardKeyIndexName(c)}}
}

// maxExplainedBounds caps the intervals explain lists for a shard-key
// read of many values.
const maxExplainedBounds = 1000

// shardKeyBounds are explain's intervals of a read of the logical
// partitions filter pins: MongoDB's hashed-index bounds, one [h, h] per
// value, by hash.
func shardKeyBounds(c *store.Collection, filter bsoncore.Document) bson.A {
	vals, ok := c.Spec().Values(filter)
	if !ok {
		return bson.A{"[MinKey, MaxKey]"}
	}
	hashes := make([]int64, 0, len(vals))
	for _, v := range vals {
		hashes = append(hashes, shard.Hash(v))
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	out := bson.A{}
	for i, h := range hashes {
		if i == maxExplainedBounds {
			out = append(out, "... "+strconv.Itoa(len(hashes)-i)+" more")
			break
		}
		s := strconv.FormatInt(h, 10)
		out = append(out, "["+s+", "+s+"]")
	}
	return out
}

// shardKeyStages is explain's FETCH over IXSCAN of the shard-key index
// for a read of logical partitions: the keys examined are the documents
// of those logical partitions read.
func shardKeyStages(c *store.Collection, filter bsoncore.Document, st planStats, withStats func(bson.D, int64, ...bson.E) bson.D) bson.D {
	ixscan := withStats(bson.D{
		{Key: "stage", Value: "IXSCAN"},
		{Key: "keyPattern", Value: shardKeyIndexKey(c)},
		{Key: "indexName", Value: shardKeyIndexName(c)},
		{Key: "isMultiKey", Value: false},
		{Key: "isUnique", Value: false},
		{Key: "isSparse", Value: false},
		{Key: "isPartial", Value: false},
		{Key: "indexVersion", Value: int32(2)},
		{Key: "direction", Value: "forward"},
		{Key: "indexBounds", Value: bson.D{{Key: c.ShardKey, Value: shardKeyBounds(c, filter)}}},
	}, st.keysExamined, bson.E{Key: "keysExamined", Value: st.keysExamined})
	fetch := bson.D{{Key: "stage", Value: "FETCH"}}
	if len(filter) > 5 {
		fetch = append(fetch, bson.E{Key: "filter", Value: bson.Raw(filter)})
	}
	fetch = withStats(fetch, st.returned, bson.E{Key: "docsExamined", Value: st.docsExamined})
	return append(fetch, bson.E{Key: "inputStage", Value: ixscan})
}

// isShardKeyIndexKey reports whether key is the key pattern of c's
// shard-key index.
func isShardKeyIndexKey(c *store.Collection, key bsoncore.Document) bool {
	if c == nil || !c.Sharded() {
		return false
	}
	want, err := bson.Marshal(shardKeyIndexKey(c))
	return err == nil && sameKey(want, bson.Raw(key))
}

// shardKeyIndexKeyRaw is shardKeyIndexKey as BSON.
func shardKeyIndexKeyRaw(c *store.Collection) bson.Raw {
	raw, _ := bson.Marshal(shardKeyIndexKey(c)) // a string field and value: always marshals
	return raw
}

// shardKeyIndexSpecRaw is shardKeyIndexSpec as BSON.
func shardKeyIndexSpecRaw(c *store.Collection) bson.Raw {
	raw, _ := bson.Marshal(shardKeyIndexSpec(c)) // strings and an int32: always marshals
	return raw
}
