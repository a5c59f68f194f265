package plan

import (
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Collations. Document keys (_id, shard key) and simple indexes hold
// strings by their bytes; an index with a collation holds them by that
// collation's sort keys. A read whose collation differs from a key's may
// not bound, pin or route strings by that key: "PING" and "ping" are equal
// under a case-insensitive collation but far apart in bytes. Such reads
// plan with Uncollated filters (only the conditions that compare no
// strings); the compiled filter still applies every condition.

// Uncollated is filter as a read under the collation coll may use it to
// pin, route or bound keys held by their bytes: filter itself when coll is
// nil (the simple collation), else without the conditions whose outcome
// depends on how strings compare. The result matches a superset of what
// filter matches.
func Uncollated(filter bsoncore.Document, coll *value.Collator) bsoncore.Document {
	if coll == nil || len(filter) == 0 {
		return filter
	}
	return stripCollatable(filter)
}

// stripCollatable drops the conditions of a filter that compare strings
// (or documents and arrays holding them); $and branches are stripped one
// by one, a $or or $nor holding such a condition goes whole.
func stripCollatable(filter bsoncore.Document) bsoncore.Document {
	doc := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: filter}
	if !value.Collatable(doc) {
		return filter
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	for el := range value.All(filter) {
		k, v := el.Key(), el.Value()
		if k == "$and" && v.Type == bsoncore.TypeArray {
			ai, arr := bsoncore.AppendArrayElementStart(b, k)
			n := 0
			for x := range value.All(v.Data) {
				if d, ok := x.Value().DocumentOK(); ok {
					arr = bsoncore.AppendDocumentElement(arr, itoa(n), stripCollatable(d))
					n++
				}
			}
			if n == 0 {
				continue // b keeps its length: the started array is dropped
			}
			b, _ = bsoncore.AppendArrayEnd(arr, ai)
			continue
		}
		if value.Collatable(v) {
			continue
		}
		b = bsoncore.AppendValueElement(b, k, v)
	}
	out, _ := bsoncore.AppendDocumentEnd(b, idx)
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
