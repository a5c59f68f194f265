package query

import (
	"errors"
	"fmt"
	"strings"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Error categories; the command layer maps them to MongoDB codes.
var (
	ErrBadValue      = errors.New("bad value")
	ErrTypeMismatch  = errors.New("type mismatch")
	ErrFailedToParse = errors.New("failed to parse")
)

func badValue(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadValue, fmt.Sprintf(format, args...))
}

// Filter is a compiled query filter.
type Filter struct {
	preds []predicate
}

type predicate interface {
	match(doc bsoncore.Document) bool
}

// Compile parses filter. An empty or nil filter matches every document.
// The Filter does not alias filter.
func Compile(filter bsoncore.Document) (*Filter, error) {
	f := &Filter{}
	if len(filter) == 0 {
		return f, nil
	}
	// The filter outlives the request that carried it (cursors keep it),
	// so it must own its bytes.
	preds, err := compileDoc(append(bsoncore.Document(nil), filter...))
	if err != nil {
		return nil, err
	}
	f.preds = preds
	return f, nil
}

func compileDoc(filter bsoncore.Document) ([]predicate, error) {
	elems, err := filter.Elements()
	if err != nil {
		return nil, fmt.Errorf("%w: filter: %v", ErrFailedToParse, err)
	}
	var preds []predicate
	for _, e := range elems {
		key := e.Key()
		v := e.Value()
		if strings.HasPrefix(key, "$") {
			p, err := compileTopOperator(key, v)
			if err != nil {
				return nil, err
			}
			if p != nil {
				preds = append(preds, p)
			}
			continue
		}
		p, err := compileField(key, v)
		if err != nil {
			return nil, err
		}
		preds = append(preds, p)
	}
	return preds, nil
}

func compileTopOperator(op string, v bsoncore.Value) (predicate, error) {
	switch op {
	case "$comment":
		return nil, nil
	case "$and":
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, badValue("$and must be an array")
		}
		vals, _ := arr.Values()
		if len(vals) == 0 {
			return nil, badValue("$and/$or/$nor must be a nonempty array")
		}
		var all andPred
		for _, x := range vals {
			d, ok := x.DocumentOK()
			if !ok {
				return nil, badValue("$or/$and/$nor entries need to be full objects")
			}
			preds, err := compileDoc(d)
			if err != nil {
				return nil, err
			}
			all = append(all, preds...)
		}
		return all, nil
	}
	return nil, badValue("unknown top level operator: %s", op)
}

func compileField(path string, v bsoncore.Value) (predicate, error) {
	if d, ok := v.DocumentOK(); ok {
		elems, err := d.Elements()
		if err == nil && len(elems) > 0 && strings.HasPrefix(elems[0].Key(), "$") {
			var all andPred
			for _, e := range elems {
				switch e.Key() {
				case "$eq":
					if e.Value().Type == bsoncore.TypeUndefined {
						return nil, badValue("cannot compare to undefined")
					}
					all = append(all, &eqPred{path: strings.Split(path, "."), val: e.Value()})
				default:
					return nil, badValue("unknown operator: %s", e.Key())
				}
			}
			return all, nil
		}
	}
	if v.Type == bsoncore.TypeUndefined {
		return nil, badValue("cannot compare to undefined")
	}
	if v.Type == bsoncore.TypeRegex {
		return nil, badValue("regular expressions in filters are not supported yet (field %q)", path)
	}
	return &eqPred{path: strings.Split(path, "."), val: v}, nil
}

// Match reports whether doc satisfies the filter.
func (f *Filter) Match(doc bsoncore.Document) bool {
	for _, p := range f.preds {
		if !p.match(doc) {
			return false
		}
	}
	return true
}

// IDEquality returns the value when the filter is exactly {_id: v} (or
// {_id: {$eq: v}}) with v a plain value, so the document can be read by key.
func (f *Filter) IDEquality() (bsoncore.Value, bool) {
	if len(f.preds) != 1 {
		return bsoncore.Value{}, false
	}
	p := f.preds[0]
	if a, ok := p.(andPred); ok && len(a) == 1 {
		p = a[0]
	}
	eq, ok := p.(*eqPred)
	if !ok || len(eq.path) != 1 || eq.path[0] != "_id" {
		return bsoncore.Value{}, false
	}
	switch eq.val.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeNull, bsoncore.TypeUndefined,
		bsoncore.TypeRegex, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return bsoncore.Value{}, false
	}
	return eq.val, true
}

type andPred []predicate

func (a andPred) match(doc bsoncore.Document) bool {
	for _, p := range a {
		if !p.match(doc) {
			return false
		}
	}
	return true
}

type eqPred struct {
	path []string
	val  bsoncore.Value
}

func (p *eqPred) match(doc bsoncore.Document) bool {
	return walk(doc, p.path, func(v bsoncore.Value) bool {
		if v.Type == missing {
			return p.val.Type == bsoncore.TypeNull // null matches a missing field
		}
		return value.Equal(v, p.val)
	})
}

// missing is the type of the value walk reports where a path reaches
// nothing in a document (MongoDB's EOO), so {a: null} can match it.
const missing bsoncore.Type = 0

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
//     array and each of its elements; one reached by index yields only the
//     array: {"a.0": 1} does not match {a: [[1]]}.
func walk(doc bsoncore.Document, path []string, fn func(bsoncore.Value) bool) bool {
	v, err := doc.LookupErr(path[0])
	if err != nil {
		return fn(bsoncore.Value{Type: missing})
	}
	rest := path[1:]
	if len(rest) == 0 {
		if fn(v) {
			return true
		}
		if v.Type == bsoncore.TypeArray {
			for rem := elementsOf(v.Data); len(rem) > 0; {
				var e bsoncore.Element
				if e, rem = nextElement(rem); e != nil && fn(e.Value()) {
					return true
				}
			}
		}
		return false
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return walk(v.Data, rest, fn)
	case bsoncore.TypeArray:
		return walkArray(v.Data, rest, fn)
	}
	return fn(bsoncore.Value{Type: missing})
}

// walkArray applies path (not empty) to the elements of array arr.
func walkArray(arr bsoncore.Document, path []string, fn func(bsoncore.Value) bool) bool {
	index := isIndex(path[0])
	for rem := elementsOf(arr); len(rem) > 0; {
		var e bsoncore.Element
		if e, rem = nextElement(rem); e == nil {
			break
		}
		x := e.Value()
		if x.Type == bsoncore.TypeEmbeddedDocument && walk(x.Data, path, fn) {
			return true
		}
		if !index || string(e.KeyBytes()) != path[0] {
			continue
		}
		rest := path[1:]
		switch {
		case len(rest) == 0:
			if fn(x) {
				return true
			}
		case x.Type == bsoncore.TypeEmbeddedDocument:
			if walk(x.Data, rest, fn) {
				return true
			}
		case x.Type == bsoncore.TypeArray:
			if walkArray(x.Data, rest, fn) {
				return true
			}
		}
	}
	return false
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
