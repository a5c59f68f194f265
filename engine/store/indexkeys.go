package store

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ErrParallelArrays refuses a document that has arrays in two fields of
// one compound index (MongoDB's "cannot index parallel arrays").
var ErrParallelArrays = errors.New("cannot index parallel arrays")

// IndexField is one field of an index's key pattern.
type IndexField struct {
	Path string
	Desc bool
}

// nullKey and undefinedKey are the encoded keys of a missing field (null)
// and of an empty array (undefined), as MongoDB indexes them.
var (
	nullValue      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefinedValue = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// IndexKeys returns the encoded keys ix stores for doc, without
// duplicates, and whether doc made ix multikey (an array in an indexed
// field). No keys and no error: doc is not indexed (sparse or partial).
func (ix *Index) IndexKeys(doc []byte) (keys [][]byte, multikey bool, err error) {
	if ix.partialMatch != nil {
		ok, err := ix.partialMatch(doc)
		if err != nil || !ok {
			return nil, false, err
		}
	}
	if ix.Wildcard {
		return ix.wildcardKeys(doc)
	}
	// Values of each field; at most one field may be an array, or several
	// under one array (a.b and a.c of an array of documents a).
	var single [8]bsoncore.Value
	var multi [][]bsoncore.Value
	var multiAt []int
	present := false
	fields := ix.Fields
	var vals []bsoncore.Value
	if len(fields) <= len(single) {
		vals = single[:len(fields)]
	} else {
		vals = make([]bsoncore.Value, len(fields))
	}
	for i, f := range fields {
		got, isArray := valuesAt(bsoncore.Document(doc), f.Path, nil)
		switch {
		case len(got) == 0:
			vals[i] = nullValue
		case isArray:
			present = true
			if len(multiAt) > 0 && firstComponent(fields[multiAt[0]].Path) != firstComponent(f.Path) {
				return nil, false, ErrParallelArrays
			}
			multiAt, multi = append(multiAt, i), append(multi, got)
		default:
			present = true
			vals[i] = got[0]
		}
	}
	if ix.Sparse && !present {
		return nil, false, nil
	}
	if len(multiAt) == 0 {
		return [][]byte{ix.encode(nil, vals)}, false, nil
	}
	// Every combination (for fields under one array, a superset of the
	// element-wise pairs: the filter still decides).
	var combine func(j int)
	combine = func(j int) {
		if j == len(multiAt) {
			k := ix.encode(nil, vals)
			if !containsKey(keys, k) {
				keys = append(keys, k)
			}
			return
		}
		for _, v := range multi[j] {
			vals[multiAt[j]] = v
			combine(j + 1)
		}
	}
	combine(0)
	return keys, true, nil
}

func firstComponent(path string) string {
	name, _, _ := strings.Cut(path, ".")
	return name
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, o := range keys {
		if bytes.Equal(o, k) {
			return true
		}
	}
	return false
}

// encode appends the index key of one combination of field values.
func (ix *Index) encode(dst []byte, vals []bsoncore.Value) []byte {
	for i, v := range vals {
		start := len(dst)
		dst = value.EncodeKeyWith(dst, v, ix.coll)
		if ix.Fields[i].Desc {
			invert(dst[start:])
		}
	}
	return dst
}

// EncodeField appends the encoding of v as field i of ix stores it.
func (ix *Index) EncodeField(dst []byte, i int, v bsoncore.Value) []byte {
	start := len(dst)
	dst = value.EncodeKeyWith(dst, v, ix.coll)
	if i < len(ix.Fields) && ix.Fields[i].Desc {
		invert(dst[start:])
	}
	return dst
}

func invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// valuesAt collects the values at a dotted path as an index sees them:
// arrays on the way are traversed (and numeric components also select an
// element), an array at the end contributes its elements (an empty one
// undefined), and an array element where the rest of the path is missing
// contributes null. isArray reports whether an array was expanded.
func valuesAt(doc bsoncore.Document, path string, out []bsoncore.Value) ([]bsoncore.Value, bool) {
	name, rest, more := strings.Cut(path, ".")
	v, err := doc.LookupErr(name)
	if err != nil {
		return out, false
	}
	return valuesIn(v, rest, more, out)
}

func valuesIn(v bsoncore.Value, rest string, more bool, out []bsoncore.Value) ([]bsoncore.Value, bool) {
	if !more {
		if v.Type == bsoncore.TypeArray {
			elems, _ := bsoncore.Document(v.Data).Values()
			if len(elems) == 0 {
				return append(out, undefinedValue), true
			}
			return append(out, elems...), true
		}
		return append(out, v), false
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return valuesAt(bsoncore.Document(v.Data), rest, out)
	case bsoncore.TypeArray:
		arr := bsoncore.Document(v.Data)
		name, after, deeper := strings.Cut(rest, ".")
		if _, err := strconv.Atoi(name); err == nil {
			if e, err := arr.LookupErr(name); err == nil {
				var isArray bool
				out, isArray = valuesIn(e, after, deeper, out)
				if isArray {
					return out, true
				}
			}
		}
		elems, _ := arr.Values()
		for _, e := range elems {
			before := len(out)
			if e.Type == bsoncore.TypeEmbeddedDocument {
				out, _ = valuesAt(bsoncore.Document(e.Data), rest, out)
			}
			if len(out) == before {
				out = append(out, nullValue)
			}
		}
		return out, true
	}
	return out, false
}

// wildcardKeys indexes every leaf under the index's root (the whole
// document for "$**", field f for "f.$**"): each key is the leaf's path
// (a string) then its value. _id is left out of "$**", as in MongoDB.
func (ix *Index) wildcardKeys(doc []byte) ([][]byte, bool, error) {
	var keys [][]byte
	multikey := false
	add := func(path string, v bsoncore.Value) {
		k := value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, path)})
		k = value.EncodeKeyWith(k, v, ix.coll)
		if !containsKey(keys, k) {
			keys = append(keys, k)
		}
	}
	var walk func(prefix string, d bsoncore.Document)
	var leaf func(path string, v bsoncore.Value)
	leaf = func(path string, v bsoncore.Value) {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			if elems, _ := bsoncore.Document(v.Data).Elements(); len(elems) == 0 {
				add(path, v)
				return
			}
			walk(path+".", bsoncore.Document(v.Data))
		case bsoncore.TypeArray:
			multikey = true
			elems, _ := bsoncore.Document(v.Data).Values()
			if len(elems) == 0 {
				add(path, undefinedValue)
			}
			for _, e := range elems {
				if e.Type == bsoncore.TypeEmbeddedDocument {
					leaf(path, e)
				} else {
					add(path, e)
				}
			}
		default:
			add(path, v)
		}
	}
	walk = func(prefix string, d bsoncore.Document) {
		elems, _ := d.Elements()
		for _, e := range elems {
			if prefix == "" && ix.WildcardRoot == "" && e.Key() == "_id" {
				continue
			}
			leaf(prefix+e.Key(), e.Value())
		}
	}
	if ix.WildcardRoot == "" {
		walk("", doc)
	} else if v, err := bsoncore.Document(doc).LookupErr(strings.Split(ix.WildcardRoot, ".")...); err == nil {
		leaf(ix.WildcardRoot, v)
	}
	return keys, multikey, nil
}

// DupKey is the {field: value, ...} document of the key doc has in ix, for
// duplicate-key messages.
func (ix *Index) DupKey(doc []byte, key []byte) bson.D {
	out := bson.D{}
	for _, f := range ix.Fields {
		got, isArray := valuesAt(bsoncore.Document(doc), f.Path, nil)
		var v bsoncore.Value
		switch {
		case len(got) == 0:
			v = nullValue
		case !isArray:
			v = got[0]
		default:
			v = got[0]
			for _, g := range got { // the element whose key collided
				k := ix.EncodeField(nil, 0, g)
				if len(ix.Fields) == 1 && bytes.Equal(k, key) {
					v = g
				}
			}
		}
		out = append(out, bson.E{Key: f.Path, Value: bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}})
	}
	return out
}

// KeyDocument is the {field: value, ...} of doc in ix, as returnKey shows
// an index key: for an array, its first element; for a missing field,
// null.
func (ix *Index) KeyDocument(doc []byte) []byte {
	b := bsoncore.NewDocumentBuilder()
	for _, f := range ix.Fields {
		got, _ := valuesAt(bsoncore.Document(doc), f.Path, nil)
		v := nullValue
		if len(got) > 0 {
			v = got[0]
		}
		b.AppendValue(f.Path, v)
	}
	return b.Build()
}
