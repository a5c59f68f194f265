package query

import (
	"github.com/parsecdb/parsec/engine/value"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// missing is the type of the value walk reports where a path reaches
// nothing in a document (MongoDB's EOO), so {a: null} can match it.
const missing bsoncore.Type = 0

// missingValue is what walk yields for a path that reaches nothing.
var missingValue = bsoncore.Value{Type: missing}

// visitor receives one value a path reaches; pos is the index, in the
// outermost array the path traversed, of the element it came through (-1
// when no array was traversed). Returning true stops the walk.
type visitor func(v bsoncore.Value, pos int) bool

// walk calls fn with every value path reaches in doc, until fn returns
// true, and reports whether it did. It follows MongoDB's path semantics
// (the classic matcher's BSONElementIterator):
//
//   - a path part names a field of a document; a document without it, or a
//     scalar where the path goes on, yields one missing value;
//   - where the path goes on past an array, each element that is a
//     document is walked with the rest of the path (nested arrays are not
//     entered), and a numeric part also selects the element at that index
//     (whatever its type; a scalar there yields nothing if the path goes
//     on). An array itself yields no missing value: {"a.b": null} does not
//     match {a: [1]} or {a: []};
//   - a path ending at an array reached through a field name yields the
//     array and, when expand is set, each of its elements; one reached by
//     index yields only the array: {"a.0": 1} does not match {a: [[1]]}.
//     Operators that look at arrays as a whole ($size, $elemMatch) walk
//     with expand unset.
func walk(doc bsoncore.Document, path []string, expand bool, fn visitor) bool {
	return walkDoc(doc, path, expand, -1, fn)
}

func walkDoc(doc bsoncore.Document, path []string, expand bool, pos int, fn visitor) bool {
	v, ok := lookupField(doc, path[0])
	if !ok {
		return fn(missingValue, pos)
	}
	rest := path[1:]
	if len(rest) == 0 {
		if fn(v, pos) {
			return true
		}
		if expand && v.Type == bsoncore.TypeArray {
			i := 0
			for rem := elementsOf(v.Data); len(rem) > 0; i++ {
				var e bsoncore.Element
				if e, rem = nextElement(rem); e == nil {
					break
				}
				p := pos
				if p < 0 {
					p = i
				}
				if fn(e.Value(), p) {
					return true
				}
			}
		}
		return false
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return walkDoc(v.Data, rest, expand, pos, fn)
	case bsoncore.TypeArray:
		return walkArray(v.Data, rest, expand, pos, fn)
	}
	return fn(missingValue, pos)
}

// walkArray applies path (not empty) to the elements of array arr.
func walkArray(arr bsoncore.Document, path []string, expand bool, pos int, fn visitor) bool {
	index := isIndex(path[0])
	i := 0
	for rem := elementsOf(arr); len(rem) > 0; i++ {
		var e bsoncore.Element
		if e, rem = nextElement(rem); e == nil {
			break
		}
		p := pos
		if p < 0 {
			p = i
		}
		x := e.Value()
		if x.Type == bsoncore.TypeEmbeddedDocument && walkDoc(x.Data, path, expand, p, fn) {
			return true
		}
		if !index || string(e.KeyBytes()) != path[0] {
			continue
		}
		rest := path[1:]
		switch {
		case len(rest) == 0:
			if fn(x, p) {
				return true
			}
		case x.Type == bsoncore.TypeEmbeddedDocument:
			if walkDoc(x.Data, rest, expand, p, fn) {
				return true
			}
		case x.Type == bsoncore.TypeArray:
			if walkArray(x.Data, rest, expand, p, fn) {
				return true
			}
		}
	}
	return false
}

// lookupField finds the first field called name in doc without
// allocating.
func lookupField(doc bsoncore.Document, name string) (bsoncore.Value, bool) {
	for e := range value.All(doc) {
		if string(e.KeyBytes()) == name {
			return e.Value(), true
		}
	}
	return bsoncore.Value{}, false
}

// elementsOf returns the elements part of a document or array, to be
// consumed with nextElement; unlike Elements it does not allocate.
func elementsOf(doc []byte) []byte {
	if len(doc) < 5 {
		return nil
	}
	return doc[4 : len(doc)-1]
}

// nextElement returns the first element of rem and the rest, or nil at the
// end or on malformed input.
func nextElement(rem []byte) (bsoncore.Element, []byte) {
	e, rest, ok := bsoncore.ReadElement(rem)
	if !ok {
		return nil, nil
	}
	return e, rest
}

// arrayValues returns the elements of an array value.
func arrayValues(arr []byte) []bsoncore.Value {
	var out []bsoncore.Value
	for e := range value.All(arr) {
		out = append(out, e.Value())
	}
	return out
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// splitPath splits a dotted path into its parts.
func splitPath(path string) []string { return strings.Split(path, ".") }
