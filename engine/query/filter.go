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
					all = append(all, &eqPred{path: strings.Split(path, "."), val: e.Value()})
				default:
					return nil, badValue("unknown operator: %s", e.Key())
				}
			}
			return all, nil
		}
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
	matched, _ := walk(doc, p.path, func(v bsoncore.Value) bool {
		if value.Equal(v, p.val) {
			return true
		}
		if v.Type == bsoncore.TypeArray {
			vals, _ := bsoncore.Document(v.Data).Values()
			for _, x := range vals {
				if value.Equal(x, p.val) {
					return true
				}
			}
		}
		return false
	})
	if matched {
		return true
	}
	// null matches a missing field
	if p.val.Type == bsoncore.TypeNull {
		return !pathExists(doc, p.path)
	}
	return false
}

// walk calls fn with every value the path reaches, descending into arrays
// as MongoDB does (a path part either indexes an array or applies to each
// of its documents). It stops at the first true and reports whether one was found.
func walk(doc bsoncore.Document, path []string, fn func(bsoncore.Value) bool) (bool, bool) {
	v, err := doc.LookupErr(path[0])
	if err != nil {
		return false, false
	}
	if len(path) == 1 {
		return fn(v), true
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return walk(v.Data, path[1:], fn)
	case bsoncore.TypeArray:
		arr := bsoncore.Document(v.Data)
		found := false
		if ev, err := arr.LookupErr(path[1]); err == nil && isIndex(path[1]) {
			found = true
			if len(path) == 2 {
				if fn(ev) {
					return true, true
				}
			} else if ev.Type == bsoncore.TypeEmbeddedDocument || ev.Type == bsoncore.TypeArray {
				if m, _ := walk(ev.Data, path[2:], fn); m {
					return true, true
				}
			}
		}
		vals, _ := arr.Values()
		for _, x := range vals {
			if x.Type == bsoncore.TypeEmbeddedDocument {
				m, ok := walk(x.Data, path[1:], fn)
				found = found || ok
				if m {
					return true, true
				}
			}
		}
		return false, found
	}
	return false, false
}

func pathExists(doc bsoncore.Document, path []string) bool {
	_, found := walk(doc, path, func(bsoncore.Value) bool { return false })
	return found
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
