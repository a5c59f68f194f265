package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Spec is a collection's shard key: one or more fields by dotted path,
// each ranged (1) or hashed, at most one hashed. The leading field places
// documents (Point): by its hash when hashed, by its value when ranged.
// The zero Rest and Ranged make the single hashed key {Path: "hashed"},
// so Spec{Path: p} is that key.
type Spec struct {
	// Path is the leading field's path.
	Path string
	// Ranged: the leading field is ranged ({Path: 1}), not hashed.
	Ranged bool
	// Rest are the fields after the leading one (compound keys), in order.
	Rest []Field
}

// Field is one field of a compound shard key after the leading one.
type Field struct {
	Path   string `bson:"path"`
	Hashed bool   `bson:"hashed,omitempty"`
}

// Fields is every field of the key, the leading one first.
func (s Spec) Fields() []Field {
	out := make([]Field, 0, 1+len(s.Rest))
	out = append(out, Field{Path: s.Path, Hashed: !s.Ranged})
	return append(out, s.Rest...)
}

// Compound reports whether the key has more than one field.
func (s Spec) Compound() bool { return len(s.Rest) > 0 }

// Hashed reports whether any field of the key is hashed.
func (s Spec) Hashed() bool {
	if !s.Ranged {
		return true
	}
	for _, f := range s.Rest {
		if f.Hashed {
			return true
		}
	}
	return false
}

// Equal reports whether s and o are the same key.
func (s Spec) Equal(o Spec) bool {
	if s.Path != o.Path || s.Ranged != o.Ranged || len(s.Rest) != len(o.Rest) {
		return false
	}
	for i := range s.Rest {
		if s.Rest[i] != o.Rest[i] {
			return false
		}
	}
	return true
}

// Errors of shard-key specs and extraction. Callers test with errors.Is
// and read the detail from *KeyError.
var (
	// ErrRangeKey: a field that is neither 1 nor "hashed" (a descending
	// -1, say), which MongoDB refuses.
	ErrRangeKey = errors.New("shard key fields must be 1 or \"hashed\"")
	// ErrCompoundKey: more than one hashed field in the key.
	ErrCompoundKey = errors.New("a shard key can contain at most one hashed field")
	// ErrDuplicateField: a field named twice, or one a prefix of another.
	ErrDuplicateField = errors.New("shard key fields overlap")
	// ErrBadSpec: the key spec is malformed (empty, bad path, bad value).
	ErrBadSpec = errors.New("invalid shard key")
	// ErrMissing: a document has no value at the shard key's path.
	ErrMissing = errors.New("document does not contain shard key")
	// ErrArray: the value at (or a field along) the path is an array.
	ErrArray = errors.New("shard key cannot contain array values or array descendants")
	// ErrRegex: the value is a regular expression, which equality
	// filters could not target.
	ErrRegex = errors.New("shard key cannot be a regular expression")
)

// KeyError is a shard-key error with the path it concerns.
type KeyError struct {
	Err  error // one of the Err* values
	Path string
	Msg  string // detail, may be empty
}

func (e *KeyError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return fmt.Sprintf("%v at '%s'", e.Err, e.Path)
}

func (e *KeyError) Unwrap() error { return e.Err }

// MaxCosmosPaths is how many levels a Cosmos DB hierarchical partition
// key may have.
const MaxCosmosPaths = 3

// ParseSpec reads a shardCollection key document, as MongoDB accepts it:
// fields whose values are 1 (ranged) or "hashed", at most one hashed:
// {a: "hashed"}, {a: 1}, {a: 1, b: 1}, {a: "hashed", b: 1}, {a: 1, b:
// "hashed"}. Errors are MongoDB's messages (BadValue).
func ParseSpec(key bsoncore.Document) (Spec, error) {
	elems, err := key.Elements()
	if err != nil {
		return Spec{}, &KeyError{Err: ErrBadSpec, Msg: fmt.Sprintf("invalid shard key document: %v", err)}
	}
	if len(elems) == 0 {
		return Spec{}, &KeyError{Err: ErrBadSpec, Msg: "Shard key cannot be empty"}
	}
	var spec Spec
	hashed := 0
	paths := make([]string, 0, len(elems))
	for i, el := range elems {
		path := el.Key()
		if err := checkPath(path); err != nil {
			return Spec{}, err
		}
		for _, p := range paths {
			if p == path || strings.HasPrefix(path, p+".") || strings.HasPrefix(p, path+".") {
				return Spec{}, &KeyError{Err: ErrDuplicateField, Path: path, Msg: fmt.Sprintf(
					"Shard key %s has fields that overlap: '%s' and '%s'", renderKey(key), p, path)}
			}
		}
		paths = append(paths, path)
		v := el.Value()
		isHashed := false
		if s, ok := v.StringValueOK(); ok && s == "hashed" {
			isHashed = true
			hashed++
		}
		switch {
		case isHashed && hashed > 1:
			return Spec{}, &KeyError{Err: ErrCompoundKey, Path: path, Msg: fmt.Sprintf(
				"Shard key %s can contain at most one 'hashed' field, and/or multiple numerical fields set to a value of 1. Failed to parse field %s",
				renderKey(key), path)}
		case !isHashed && !isOne(v):
			err := ErrBadSpec
			if isNumber(v) {
				err = ErrRangeKey
			}
			return Spec{}, &KeyError{Err: err, Path: path, Msg: fmt.Sprintf(
				"Shard key %s can contain at most one 'hashed' field, and/or multiple numerical fields set to a value of 1. Failed to parse field %s",
				renderKey(key), path)}
		}
		if i == 0 {
			spec.Path, spec.Ranged = path, !isHashed
			continue
		}
		spec.Rest = append(spec.Rest, Field{Path: path, Hashed: isHashed})
	}
	return spec, nil
}

func isNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// isOne is MongoDB's test of a ranged field: a number whose integer part
// (safeNumberInt) is 1.
func isOne(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32:
		return v.Int32() == 1
	case bsoncore.TypeInt64:
		return v.Int64() == 1
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		d := value.Float(v)
		return d >= 1 && d < 2
	}
	return false
}

// renderKey writes a key pattern as MongoDB's messages show it:
// { a: 1, b: "hashed" }.
func renderKey(key bsoncore.Document) string {
	elems, _ := key.Elements()
	var b strings.Builder
	b.WriteString("{ ")
	for i, el := range elems {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(el.Key())
		b.WriteString(": ")
		v := el.Value()
		if s, ok := v.StringValueOK(); ok {
			b.WriteString(strconv.Quote(s))
		} else {
			b.WriteString(value.Render(v))
		}
	}
	b.WriteString(" }")
	return b.String()
}

// String is the key pattern as MongoDB's messages show it.
func (s Spec) String() string { return renderKey(s.Doc()) }

// ParsePaths reads a Cosmos DB hierarchical partition key: one to
// MaxCosmosPaths paths ("/tenantId" or "tenantId"), each level ranged
// below a hashed first: Cosmos DB hashes the whole key to place it, and
// Parsec places by the first level's hash and keeps the levels' order
// within it, which is {first: "hashed", second: 1, third: 1}.
func ParsePaths(paths []string) (Spec, error) {
	switch {
	case len(paths) == 0:
		return Spec{}, &KeyError{Err: ErrBadSpec, Msg: "shard key paths cannot be empty"}
	case len(paths) > MaxCosmosPaths:
		return Spec{}, &KeyError{Err: ErrBadSpec, Msg: fmt.Sprintf("a hierarchical partition key has at most %d paths, got %d", MaxCosmosPaths, len(paths))}
	}
	key := bsoncore.NewDocumentBuilder()
	for i, p := range paths {
		p = strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", ".")
		if i == 0 {
			key.AppendString(p, "hashed")
		} else {
			key.AppendInt32(p, 1)
		}
	}
	return ParseSpec(key.Build())
}

// ParsePath reads a Cosmos DB shardKey: a dotted path string, the single
// hashed key.
func ParsePath(path string) (Spec, error) {
	if err := checkPath(path); err != nil {
		return Spec{}, err
	}
	return Spec{Path: path}, nil
}

func checkPath(path string) error {
	if path == "" {
		return &KeyError{Err: ErrBadSpec, Msg: "shard key path cannot be empty"}
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return &KeyError{Err: ErrBadSpec, Path: path, Msg: fmt.Sprintf("shard key path '%s' has an empty field name", path)}
		}
		if part[0] == '$' {
			return &KeyError{Err: ErrBadSpec, Path: path, Msg: fmt.Sprintf("shard key path '%s' has a field name starting with '$'", path)}
		}
		if strings.IndexByte(part, 0) >= 0 {
			return &KeyError{Err: ErrBadSpec, Path: path, Msg: "shard key path contains a NUL byte"}
		}
	}
	return nil
}

// Extract returns the shard-key value of doc: the value at the key's path,
// or for a compound key a document of the values at its paths, named by
// the paths in key order ({"a": 1, "b.c": "x"}). A missing value is
// ErrMissing; an array at or along a path is ErrArray; a regular
// expression is ErrRegex. A single field's value aliases doc.
func (s Spec) Extract(doc bsoncore.Document) (bsoncore.Value, error) {
	first, err := extractPath(doc, s.Path)
	if err != nil || len(s.Rest) == 0 {
		return first, err
	}
	idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, 16+len(s.Path)+len(first.Data)))
	b = bsoncore.AppendValueElement(b, s.Path, first)
	for _, f := range s.Rest {
		v, err := extractPath(doc, f.Path)
		if err != nil {
			return bsoncore.Value{}, err
		}
		b = bsoncore.AppendValueElement(b, f.Path, v)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}, nil
}

// Leading is the leading field's value of a shard-key value sk (as
// Extract returns it).
func (s Spec) Leading(sk bsoncore.Value) bsoncore.Value {
	if len(s.Rest) == 0 {
		return sk
	}
	if d, ok := sk.DocumentOK(); ok {
		if el, err := d.IndexErr(0); err == nil {
			return el.Value()
		}
	}
	return sk
}

// Point is the place of the shard-key value sk (as Extract returns it) in
// the point space: the hash point of its leading field's value when that
// field is hashed (Point), an order-preserving prefix of its value when
// ranged (RangePoint).
func (s Spec) Point(sk bsoncore.Value) uint64 {
	lead := s.Leading(sk)
	if s.Ranged {
		return RangePoint(lead)
	}
	return Point(lead)
}

// Compose builds a compound shard-key value from one value per field, in
// key order (Extract's form); a single field's value is itself.
func (s Spec) Compose(vals []bsoncore.Value) bsoncore.Value {
	if len(s.Rest) == 0 {
		return vals[0]
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	for i, f := range s.Fields() {
		b = bsoncore.AppendValueElement(b, f.Path, vals[i])
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}
}

func extractPath(doc bsoncore.Document, path string) (bsoncore.Value, error) {
	cur := doc
	rest := path
	for {
		name, tail, more := strings.Cut(rest, ".")
		v, err := cur.LookupErr(name)
		if err != nil {
			return bsoncore.Value{}, &KeyError{Err: ErrMissing, Path: path,
				Msg: fmt.Sprintf("document does not contain shard key at '%s'", path)}
		}
		if v.Type == bsoncore.TypeArray {
			return bsoncore.Value{}, &KeyError{Err: ErrArray, Path: path,
				Msg: fmt.Sprintf("Shard key cannot contain array values or array descendants (at '%s')", path)}
		}
		if !more {
			if v.Type == bsoncore.TypeRegex {
				return bsoncore.Value{}, &KeyError{Err: ErrRegex, Path: path,
					Msg: fmt.Sprintf("Shard key cannot be a regular expression (at '%s')", path)}
			}
			return v, nil
		}
		sub, ok := v.DocumentOK()
		if !ok {
			return bsoncore.Value{}, &KeyError{Err: ErrMissing, Path: path,
				Msg: fmt.Sprintf("document does not contain shard key at '%s'", path)}
		}
		cur, rest = sub, tail
	}
}

// Doc is the key as shardCollection takes it: {<path>: "hashed"},
// {<path>: 1, ...}.
func (s Spec) Doc() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, f := range s.Fields() {
		if f.Hashed {
			b.AppendString(f.Path, "hashed")
		} else {
			b.AppendInt32(f.Path, 1)
		}
	}
	return b.Build()
}
