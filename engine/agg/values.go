package agg

import (
	"math/rand/v2"
	"strings"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func typeName(v bsoncore.Value) string { return expr.TypeName(v) }

func stringOf(v bsoncore.Value) string {
	s, _ := v.StringValueOK()
	return s
}

func isNumeric(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

func docValue(d bsoncore.Document) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

// subScope makes a scope with the env's variables in their slots and
// names declared after them; it returns the first extra slot.
func (e *env) subScope(names ...string) (*expr.Scope, int) {
	s := expr.NewScope()
	for _, n := range e.declaredNames() {
		s.Declare(n)
	}
	base := s.Slots()
	for _, n := range names {
		s.Declare(n)
	}
	return s, base
}

// newRand makes a random source for one run.
func (e *env) newRand() *rand.Rand {
	e.randMu.Lock()
	a, b := e.rng.Uint64(), e.rng.Uint64()
	e.randMu.Unlock()
	return rand.New(rand.NewPCG(a, b))
}

// pathValues calls fn with every value path reaches in doc the way a
// query's equality sees them: through arrays, each array met at the end
// of the path both whole and element by element; null when the path
// reaches nothing.
func pathValues(doc bsoncore.Document, path []string, fn func(bsoncore.Value)) {
	found := false
	walkPath(docValue(doc), path, func(v bsoncore.Value) {
		found = true
		fn(v)
	})
	if !found {
		fn(expr.Null)
	}
}

func walkPath(v bsoncore.Value, path []string, fn func(bsoncore.Value)) {
	if len(path) == 0 {
		fn(v)
		if v.Type == bsoncore.TypeArray {
			for _, x := range expr.Elements(v) {
				fn(x)
			}
		}
		return
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		x, err := v.Document().LookupErr(path[0])
		if err != nil {
			return
		}
		walkPath(x, path[1:], fn)
	case bsoncore.TypeArray:
		if isIndex(path[0]) {
			if x, err := bsoncore.Document(v.Data).LookupErr(path[0]); err == nil {
				walkPath(x, path[1:], fn)
			}
		}
		for _, x := range expr.Elements(v) {
			if x.Type == bsoncore.TypeEmbeddedDocument {
				walkPath(x, path, fn)
			}
		}
	}
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

func splitPath(p string) []string { return strings.Split(p, ".") }

// keyOf encodes v so that values MongoDB considers equal (1, 1.0,
// NumberLong(1)) encode alike: the key of $group and joins.
//
// Under a collation (coll), strings it holds equal encode alike too.
func keyOf(dst []byte, v bsoncore.Value, coll *value.Collator) []byte {
	if v.Type == 0 || v.Type == bsoncore.TypeUndefined {
		v = expr.Null
	}
	return value.EncodeKeyWith(dst, v, coll)
}

// setField returns doc with field name set to v (replaced in place, or
// appended); a missing v removes the field.
func setField(doc bsoncore.Document, name string, v bsoncore.Value) bsoncore.Document {
	fields := expr.Fields(docValue(doc))
	done := false
	for i := range fields {
		if fields[i].Key == name {
			fields[i].Val = v
			done = true
		}
	}
	if !done {
		fields = append(fields, expr.Field{Key: name, Val: v})
	}
	return expr.Document(fields).Data
}

// setPath sets a dotted path in doc, creating or replacing embedded
// documents along the way (as $lookup's "as" and $unwind do).
func setPath(doc bsoncore.Document, path []string, v bsoncore.Value) bsoncore.Document {
	if len(path) == 1 {
		return setField(doc, path[0], v)
	}
	cur, err := doc.LookupErr(path[0])
	sub := emptyDoc
	if err == nil && cur.Type == bsoncore.TypeEmbeddedDocument {
		sub = cur.Document()
	}
	return setField(doc, path[0], docValue(setPath(sub, path[1:], v)))
}

// getPath reads a dotted path through embedded documents only.
func getPath(doc bsoncore.Document, path []string) bsoncore.Value {
	v := docValue(doc)
	for _, p := range path {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return expr.Missing
		}
		x, err := v.Document().LookupErr(p)
		if err != nil {
			return expr.Missing
		}
		v = x
	}
	return v
}
