package query

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// DistinctValues calls fn with each value the distinct command takes
// from doc for a dotted path: the values the path reaches through
// embedded documents and arrays of documents, with arrays at the end of
// the path unwound into their elements (nested arrays stay whole). A
// numeric part also indexes into an array. Missing fields give nothing.
func DistinctValues(doc bsoncore.Document, path string, fn func(bsoncore.Value)) {
	distinctIn(doc, splitPath(path), fn)
}

func distinctIn(doc bsoncore.Document, path []string, fn func(bsoncore.Value)) {
	v, ok := lookupField(doc, path[0])
	if !ok {
		return
	}
	distinctOf(v, path[1:], fn)
}

func distinctOf(v bsoncore.Value, rest []string, fn func(bsoncore.Value)) {
	if len(rest) == 0 {
		if v.Type != bsoncore.TypeArray {
			fn(v)
			return
		}
		for _, x := range arrayValues(v.Data) {
			fn(x)
		}
		return
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		distinctIn(v.Data, rest, fn)
	case bsoncore.TypeArray:
		if isIndex(rest[0]) {
			if x, ok := lookupField(v.Data, rest[0]); ok {
				distinctOf(x, rest[1:], fn)
				return
			}
		}
		for _, x := range arrayValues(v.Data) {
			if x.Type == bsoncore.TypeEmbeddedDocument {
				distinctIn(x.Data, rest, fn)
			}
		}
	}
}
