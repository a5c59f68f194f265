package update

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Upsert builds the document an upsert inserts when its query matched
// nothing: the query's equality conditions ({a: 1}, {a: {$eq: 1}}, inside
// $and; for a replacement only _id) seeded as fields, then the update
// applied with Env.Insert set. The result has _id first when it has one;
// when it has none, the caller generates it.
func (u *Update) Upsert(q bsoncore.Document, env Env) (bsoncore.Document, error) {
	seed, err := seedFromQuery(q, u.kind == Replacement)
	if err != nil {
		return nil, err
	}
	env.Insert = true
	env.HasPosition = false
	var out bsoncore.Document
	switch u.kind {
	case Replacement:
		out, err = u.applyReplacement(seed)
	default:
		out, err = u.apply(seed, env)
	}
	if err != nil {
		return nil, err
	}
	if id, ok := lookup(out, []string{"_id"}); ok {
		switch id.Type {
		case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
			return nil, errorf(ErrInvalidIDField, "The '_id' value cannot be of type %s", typeName(id.Type))
		}
	}
	return idFirst(out), nil
}

// idFirst moves a document's _id to the front.
func idFirst(doc bsoncore.Document) bsoncore.Document {
	elems, _ := doc.Elements()
	at := -1
	for i, e := range elems {
		if e.Key() == "_id" {
			at = i
			break
		}
	}
	if at <= 0 {
		return doc
	}
	start, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)))
	b = append(b, elems[at]...)
	for i, e := range elems {
		if i != at {
			b = append(b, e...)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	return b
}

type equality struct {
	path  string
	parts []string
	v     bsoncore.Value
}

// seedFromQuery collects the equalities of a query into a document.
func seedFromQuery(q bsoncore.Document, onlyID bool) (bsoncore.Document, error) {
	var eqs []equality
	if err := collectEqualities(q, &eqs); err != nil {
		return nil, err
	}
	if onlyID {
		eqs = slices.DeleteFunc(eqs, func(e equality) bool { return e.path != "_id" })
	}
	slices.SortStableFunc(eqs, func(a, b equality) int {
		// _id first, then by path.
		switch {
		case a.path == "_id" && b.path != "_id":
			return -1
		case b.path == "_id" && a.path != "_id":
			return 1
		}
		return compareFieldNames(a.path, b.path)
	})
	for i := range eqs {
		for j := range i {
			a, b := eqs[j], eqs[i]
			switch {
			case a.path == b.path:
				return nil, errorf(ErrNotSingleValueField, "cannot infer query fields to set, path '%s' is matched twice", a.path)
			case hasPrefixPath(b.path, a.path) || hasPrefixPath(a.path, b.path):
				short, long := a.path, b.path
				if len(short) > len(long) {
					short, long = long, short
				}
				return nil, errorf(ErrNotSingleValueField, "cannot infer query fields to set, both paths '%s' and '%s' are matched", long, short)
			}
		}
	}
	root := &object{}
	for _, e := range eqs {
		o := root
		for _, p := range e.parts[:len(e.parts)-1] {
			n := o.get(p)
			if n == nil {
				n = objectNode(&object{})
				o.set(p, n)
			}
			o = n.object()
		}
		o.set(e.parts[len(e.parts)-1], rawNode(e.v))
	}
	return root.encode(nil), nil
}

func collectEqualities(q bsoncore.Document, eqs *[]equality) error {
	elems, err := q.Elements()
	if err != nil {
		return errorf(ErrFailedToParse, "invalid query: %v", err)
	}
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		if strings.HasPrefix(k, "$") {
			arr, ok := v.ArrayOK()
			if !ok {
				continue
			}
			vals, _ := arr.Values()
			// $and always; a one-clause $or is that clause.
			if k == "$and" || (k == "$or" && len(vals) == 1) {
				for _, x := range vals {
					if d, ok := x.DocumentOK(); ok {
						if err := collectEqualities(d, eqs); err != nil {
							return err
						}
					}
				}
			}
			continue
		}
		parts := strings.Split(k, ".")
		if slices.ContainsFunc(parts, func(p string) bool { return p == "" || strings.HasPrefix(p, "$") }) {
			continue
		}
		if x, ok := equalityValue(v); ok {
			*eqs = append(*eqs, equality{path: k, parts: parts, v: x})
		}
	}
	return nil
}

// equalityValue returns the value a query condition fixes a field to.
func equalityValue(v bsoncore.Value) (bsoncore.Value, bool) {
	switch v.Type {
	case bsoncore.TypeRegex:
		return bsoncore.Value{}, false
	case bsoncore.TypeEmbeddedDocument:
		d := v.Document()
		first, err := d.IndexErr(0)
		if err != nil || !strings.HasPrefix(first.Key(), "$") {
			return v, true // a whole-document equality
		}
		elems, _ := d.Elements()
		for _, e := range elems {
			switch e.Key() {
			case "$eq":
				if e.Value().Type != bsoncore.TypeRegex {
					return e.Value(), true
				}
			case "$in":
				if arr, ok := e.Value().ArrayOK(); ok {
					if vals, _ := arr.Values(); len(vals) == 1 && vals[0].Type != bsoncore.TypeRegex {
						return vals[0], true
					}
				}
			}
		}
		return bsoncore.Value{}, false
	}
	return v, true
}
