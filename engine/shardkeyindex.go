package engine

import (
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
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
