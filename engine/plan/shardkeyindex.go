package plan

import (
	"bytes"
	"strings"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The shard-key index. A sharded collection's documents are stored in
// (point, shard key, _id) order (store/doc.go), so the document layout is
// itself an index on the shard key: hashed for a hashed leading field,
// in key order for a ranged one (whose point preserves order); every
// logical partition is one contiguous key range. Catalog commands list
// it as MongoDB names it, the planner reads logical partitions through it
// (routing.go), and it cannot be dropped while the collection is sharded.

// ShardKeyIndexName is the name of c's shard-key index ("" when c is not
// sharded): MongoDB's default name of its key pattern, <path>_hashed,
// <path>_1, <a>_1_<b>_hashed, ...
func ShardKeyIndexName(c *store.Collection) string {
	if c == nil || !c.Sharded() {
		return ""
	}
	var b strings.Builder
	for i, f := range c.Spec().Fields() {
		if i > 0 {
			b.WriteByte('_')
		}
		b.WriteString(f.Path)
		if f.Hashed {
			b.WriteString("_hashed")
		} else {
			b.WriteString("_1")
		}
	}
	return b.String()
}

// ShardKeyIndexKey is the key pattern of c's shard-key index, the shard
// key: {<path>: "hashed"}, {<a>: 1, <b>: 1}, ...
func ShardKeyIndexKey(c *store.Collection) bson.D {
	var d bson.D
	for _, f := range c.Spec().Fields() {
		if f.Hashed {
			d = append(d, bson.E{Key: f.Path, Value: "hashed"})
		} else {
			d = append(d, bson.E{Key: f.Path, Value: int32(1)})
		}
	}
	return d
}

// shardKeyIndexSpec is c's shard-key index as listIndexes shows it.
func shardKeyIndexSpec(c *store.Collection) bson.D {
	return bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: ShardKeyIndexKey(c)}, {Key: "name", Value: ShardKeyIndexName(c)}}
}

// IsShardKeyIndexKey reports whether key is the key pattern of c's
// shard-key index.
func IsShardKeyIndexKey(c *store.Collection, key bsoncore.Document) bool {
	if c == nil || !c.Sharded() {
		return false
	}
	want, err := bson.Marshal(ShardKeyIndexKey(c))
	return err == nil && SameKey(want, bson.Raw(key))
}

// ShardKeyIndexKeyRaw is ShardKeyIndexKey as BSON.
func ShardKeyIndexKeyRaw(c *store.Collection) bson.Raw {
	raw, _ := bson.Marshal(ShardKeyIndexKey(c)) // strings and int32s: always marshals
	return raw
}

// ShardKeyIndexSpecRaw is shardKeyIndexSpec as BSON.
func ShardKeyIndexSpecRaw(c *store.Collection) bson.Raw {
	raw, _ := bson.Marshal(shardKeyIndexSpec(c)) // strings and an int32: always marshals
	return raw
}

// SameKey reports whether two key patterns are the same (field names and
// directions; 1 and 1.0 alike).
func SameKey(a, b bson.Raw) bool {
	ea, _ := bsoncore.Document(a).Elements()
	eb, _ := bsoncore.Document(b).Elements()
	if len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if ea[i].Key() != eb[i].Key() {
			return false
		}
		fa, oka := numberFloat(ea[i].Value())
		fb, okb := numberFloat(eb[i].Value())
		if oka != okb || (oka && (fa < 0) != (fb < 0)) {
			return false
		}
		if !oka && !bytes.Equal(ea[i].Value().Data, eb[i].Value().Data) {
			return false
		}
	}
	return true
}

// numberFloat converts any numeric value to float64.
func numberFloat(v bsoncore.Value) (float64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return value.Float(v), true
	}
	return 0, false
}
