package query

import (
	"fmt"
	"strings"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Sort is a compiled sort specification. It is immutable and safe for
// concurrent use.
type Sort struct {
	fields  []sortField
	natural int // 1 or -1 for {$natural: ±1}; 0 otherwise
	coll    *value.Collator
}

type sortField struct {
	path []string
	desc bool
	coll *value.Collator // the Sort's collation; nil: simple
}

// WithCollation is s ordering strings by the collation coll (nil: by
// their bytes). s itself is unchanged.
func (s *Sort) WithCollation(coll *value.Collator) *Sort {
	if s == nil || s.coll == coll {
		return s
	}
	c := &Sort{fields: append([]sortField(nil), s.fields...), natural: s.natural, coll: coll}
	for i := range c.fields {
		c.fields[i].coll = coll
	}
	return c
}

// Collation is the collation s orders strings by; nil: simple.
func (s *Sort) Collation() *value.Collator {
	if s == nil {
		return nil
	}
	return s.coll
}

// CompileSort parses a sort specification ({a: 1, "b.c": -1}) as find's
// sort and $sort do. An empty spec sorts nothing (Compare is always 0).
// {$natural: ±1} is accepted alone and reported by Natural.
func CompileSort(spec bsoncore.Document) (*Sort, error) {
	s := &Sort{}
	if err := spec.Validate(); err != nil && len(spec) > 0 {
		return nil, langerr.New(langerr.ErrFailedToParse, "sort: %v", err)
	}
	for e := range value.All(spec) {
		key, v := e.Key(), e.Value()
		if v.Type == bsoncore.TypeEmbeddedDocument {
			first, _ := nextElement(elementsOf(v.Data))
			if first == nil || first.Key() != "$meta" {
				return nil, langerr.New(ErrBadSortMeta, "$meta is the only expression supported by $sort right now")
			}
			if countElements(v.Data) != 1 {
				return nil, langerr.New(langerr.ErrFailedToParse, "Cannot have additional keys in a $meta sort specification")
			}
			m, _ := first.Value().StringValueOK()
			switch m {
			case "textScore":
				return nil, langerr.New(langerr.ErrBadValue, "query requires text score metadata, but it is not available")
			case "randVal", "searchScore", "searchHighlights", "geoNearDistance", "geoNearPoint", "recordId", "indexKey", "sortKey", "searchScoreDetails", "searchSequenceToken", "vectorSearchScore":
				return nil, langerr.New(langerr.ErrNotImplemented, "$meta sort by '%s' is not supported by Parsec", m)
			}
			return nil, langerr.New(langerr.ErrBadValue, "Illegal $meta sort: %s: %s", key, value.Render(v))
		}
		if !isNumberType(v.Type) {
			return nil, langerr.New(ErrBadSortKey, "Illegal key in $sort specification: %s: %s", key, value.Render(v))
		}
		dir := value.Float(v)
		if dir != 1 && dir != -1 {
			return nil, langerr.New(ErrBadSortOrder, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		if key == "$natural" {
			s.natural = int(dir)
			continue
		}
		if err := checkFieldPath(key); err != nil {
			return nil, err
		}
		s.fields = append(s.fields, sortField{path: splitPath(key), desc: dir < 0})
	}
	if s.natural != 0 && len(s.fields) > 0 {
		return nil, langerr.New(langerr.ErrBadValue, "$natural sort cannot be combined with other sort keys")
	}
	return s, nil
}

// checkFieldPath applies MongoDB's FieldPath rules to a path.
func checkFieldPath(p string) error {
	if p == "" {
		return langerr.New(ErrFieldPathEmpty, "FieldPath cannot be constructed with empty string")
	}
	for _, part := range strings.Split(p, ".") {
		if part == "" {
			return langerr.New(ErrFieldPathEmptyPart, "FieldPath field names may not be empty strings.")
		}
		if part[0] == '$' {
			return langerr.New(ErrFieldPathDollar, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return nil
}

// IsEmpty reports whether the sort orders nothing (an empty spec or
// $natural).
func (s *Sort) IsEmpty() bool { return s == nil || len(s.fields) == 0 }

// Natural returns the direction of a {$natural: ±1} sort.
func (s *Sort) Natural() (dir int, ok bool) {
	if s == nil || s.natural == 0 {
		return 0, false
	}
	return s.natural, true
}

// Paths returns the sorted paths, dotted, in order.
func (s *Sort) Paths() []string {
	var out []string
	for _, f := range s.fields {
		out = append(out, strings.Join(f.path, "."))
	}
	return out
}

// String renders the spec for explain output.
func (s *Sort) String() string {
	var parts []string
	for _, f := range s.fields {
		d := 1
		if f.desc {
			d = -1
		}
		parts = append(parts, fmt.Sprintf("%s: %d", strings.Join(f.path, "."), d))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// Compare orders documents a and b as MongoDB sorts them: field by field,
// each by its sort key: the smallest (ascending) or largest (descending)
// value the path reaches, arrays contributing their elements, a missing
// field counting as null and an empty array sorting below null. Ties
// return 0.
func (s *Sort) Compare(a, b bsoncore.Document) int {
	for _, f := range s.fields {
		ka, kb := f.key(a), f.key(b)
		if c := compareSortKeysWith(ka, kb, s.coll); c != 0 {
			if f.desc {
				return -c
			}
			return c
		}
	}
	return 0
}

// Keys returns a's sort keys, one per field, to be compared with
// CompareKeys: sorting many documents extracts each key once.
func (s *Sort) Keys(doc bsoncore.Document) []bsoncore.Value {
	keys := make([]bsoncore.Value, len(s.fields))
	for i, f := range s.fields {
		keys[i] = f.key(doc)
	}
	return keys
}

// CompareKeys compares keys made by Keys, as Compare compares documents.
func (s *Sort) CompareKeys(a, b []bsoncore.Value) int {
	for i, f := range s.fields {
		if c := compareSortKeysWith(a[i], b[i], s.coll); c != 0 {
			if f.desc {
				return -c
			}
			return c
		}
	}
	return 0
}

// emptyArrayKey is the key of an empty array: below null, as MongoDB
// sorts it (its index key is undefined).
var emptyArrayKey = bsoncore.Value{Type: bsoncore.TypeUndefined}

var nullKey = bsoncore.Value{Type: bsoncore.TypeNull}

// key is the document's sort key for this field: the min (ascending) or
// max (descending) of the values its path reaches.
func (f *sortField) key(doc bsoncore.Document) bsoncore.Value {
	var best bsoncore.Value
	found := false
	sortValues(doc, f.path, func(v bsoncore.Value) {
		if !found {
			best, found = v, true
			return
		}
		c := compareSortKeysWith(v, best, f.coll)
		if (!f.desc && c < 0) || (f.desc && c > 0) {
			best = v
		}
	})
	if !found {
		return nullKey
	}
	return best
}

// compareSortKeys is value.Compare with undefined (and so the empty
// array's key) below null, as in MongoDB's canonical type order.
func compareSortKeys(a, b bsoncore.Value) int { return compareSortKeysWith(a, b, nil) }

// compareSortKeysWith is compareSortKeys with strings ordered by coll.
func compareSortKeysWith(a, b bsoncore.Value, coll *value.Collator) int {
	au, bu := a.Type == bsoncore.TypeUndefined, b.Type == bsoncore.TypeUndefined
	switch {
	case au && bu:
		return 0
	case au:
		if b.Type == bsoncore.TypeMinKey {
			return 1
		}
		return -1
	case bu:
		if a.Type == bsoncore.TypeMinKey {
			return -1
		}
		return 1
	}
	return value.CompareWith(a, b, coll)
}

// sortValues calls fn with every key value path yields in doc, as
// MongoDB's index key generation does: an array at the end of the path
// yields its elements (an empty one yields the empty-array key), an array
// along the path is entered element by element, and every branch that
// reaches nothing yields null.
func sortValues(doc bsoncore.Document, path []string, fn func(bsoncore.Value)) {
	v, ok := lookupField(doc, path[0])
	if !ok {
		fn(nullKey)
		return
	}
	sortValuesOf(v, path[1:], fn)
}

func sortValuesOf(v bsoncore.Value, rest []string, fn func(bsoncore.Value)) {
	if len(rest) == 0 {
		if v.Type != bsoncore.TypeArray {
			fn(v)
			return
		}
		n := 0
		for rem := elementsOf(v.Data); len(rem) > 0; n++ {
			var e bsoncore.Element
			if e, rem = nextElement(rem); e == nil {
				break
			}
			fn(e.Value())
		}
		if n == 0 {
			fn(emptyArrayKey)
		}
		return
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		sortValues(v.Data, rest, fn)
	case bsoncore.TypeArray:
		if isIndex(rest[0]) {
			if x, ok := lookupField(v.Data, rest[0]); ok {
				sortValuesOf(x, rest[1:], fn)
				return
			}
		}
		n := 0
		for rem := elementsOf(v.Data); len(rem) > 0; n++ {
			var e bsoncore.Element
			if e, rem = nextElement(rem); e == nil {
				break
			}
			x := e.Value()
			if x.Type == bsoncore.TypeEmbeddedDocument {
				sortValues(x.Data, rest, fn)
			} else {
				fn(nullKey)
			}
		}
		if n == 0 {
			fn(nullKey)
		}
	default:
		fn(nullKey)
	}
}

// CompareValues orders two values as sort keys (and index keys) are
// ordered: BSON order, with undefined below null.
func CompareValues(a, b bsoncore.Value) int { return compareSortKeys(a, b) }

// CompareValuesWith is CompareValues with strings ordered by the
// collation coll (nil: simple).
func CompareValuesWith(a, b bsoncore.Value, coll *value.Collator) int {
	return compareSortKeysWith(a, b, coll)
}
