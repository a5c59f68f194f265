package store

import (
	"bytes"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// UpdateDescription is an update event's description of how old became
// doc, as MongoDB's change events give it: updatedFields (dotted paths
// to their new values; a changed embedded document or array element is
// described inside, a grown array by its new elements), removedFields
// (paths that are gone) and truncatedArrays ({field, newSize} for arrays
// that got shorter), and disambiguatedPaths: the components of every
// path among them that holds an array index or a field name of digits.
func UpdateDescription(old, doc []byte) bsoncore.Document {
	var d docDiff
	d.documents("", nil, old, doc)
	idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, 64+len(d.updated)))
	uidx, b := bsoncore.AppendDocumentElementStart(b, "updatedFields")
	b = append(b, d.updated...)
	b, _ = bsoncore.AppendDocumentEnd(b, uidx)
	ridx, b := bsoncore.AppendArrayElementStart(b, "removedFields")
	for i, f := range d.removed {
		b = bsoncore.AppendStringElement(b, strconv.Itoa(i), f)
	}
	b, _ = bsoncore.AppendArrayEnd(b, ridx)
	tidx, b := bsoncore.AppendArrayElementStart(b, "truncatedArrays")
	for i, t := range d.truncated {
		eidx, bb := bsoncore.AppendDocumentElementStart(b, strconv.Itoa(i))
		bb = bsoncore.AppendStringElement(bb, "field", t.field)
		bb = bsoncore.AppendInt32Element(bb, "newSize", int32(t.size))
		b, _ = bsoncore.AppendDocumentEnd(bb, eidx)
	}
	b, _ = bsoncore.AppendArrayEnd(b, tidx)
	didx, b := bsoncore.AppendDocumentElementStart(b, "disambiguatedPaths")
	b = append(b, d.ambiguous...)
	b, _ = bsoncore.AppendDocumentEnd(b, didx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

type docDiff struct {
	updated   []byte // elements of updatedFields
	removed   []string
	ambiguous []byte // elements of disambiguatedPaths
	truncated []struct {
		field string
		size  int
	}
}

func sameValue(a, b bsoncore.Value) bool {
	return a.Type == b.Type && bytes.Equal(a.Data, b.Data)
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func (d *docDiff) set(path string, comps []any, v bsoncore.Value) {
	d.updated = bsoncore.AppendValueElement(d.updated, path, v)
	d.disambiguate(path, comps)
}

// disambiguate records the components of a path that reads two ways: one
// with an array index or a field name made of digits (MongoDB's
// disambiguatedPaths, shown with showExpandedEvents).
func (d *docDiff) disambiguate(path string, comps []any) {
	ambiguous := false
	for _, c := range comps {
		switch c := c.(type) {
		case int:
			ambiguous = true
		case string:
			if c != "" && strings.Trim(c, "0123456789") == "" || strings.Contains(c, ".") {
				ambiguous = true
			}
		}
	}
	if !ambiguous {
		return
	}
	aidx, b := bsoncore.AppendArrayElementStart(d.ambiguous, path)
	for i, c := range comps {
		switch c := c.(type) {
		case int:
			b = bsoncore.AppendInt32Element(b, strconv.Itoa(i), int32(c))
		case string:
			b = bsoncore.AppendStringElement(b, strconv.Itoa(i), c)
		}
	}
	d.ambiguous, _ = bsoncore.AppendArrayEnd(b, aidx)
}

func with(comps []any, c any) []any {
	return append(append(make([]any, 0, len(comps)+1), comps...), c)
}

func (d *docDiff) documents(prefix string, comps []any, old, doc bsoncore.Document) {
	olds, _ := old.Elements()
	news, _ := doc.Elements()
	before := make(map[string]bsoncore.Value, len(olds))
	for _, e := range olds {
		before[e.Key()] = e.Value()
	}
	after := make(map[string]bool, len(news))
	for _, e := range news {
		k, v := e.Key(), e.Value()
		after[k] = true
		ov, had := before[k]
		cs := with(comps, k)
		switch {
		case !had:
			d.set(join(prefix, k), cs, v)
		case sameValue(ov, v):
		case ov.Type == bsoncore.TypeEmbeddedDocument && v.Type == bsoncore.TypeEmbeddedDocument:
			d.documents(join(prefix, k), cs, ov.Document(), v.Document())
		case ov.Type == bsoncore.TypeArray && v.Type == bsoncore.TypeArray:
			d.arrays(join(prefix, k), cs, ov.Array(), v.Array())
		default:
			d.set(join(prefix, k), cs, v)
		}
	}
	for _, e := range olds {
		if !after[e.Key()] {
			d.removed = append(d.removed, join(prefix, e.Key()))
			d.disambiguate(join(prefix, e.Key()), with(comps, e.Key()))
		}
	}
}

func (d *docDiff) arrays(path string, comps []any, old, arr bsoncore.Array) {
	olds, _ := old.Values()
	news, _ := arr.Values()
	if len(news) < len(olds) {
		d.truncated = append(d.truncated, struct {
			field string
			size  int
		}{path, len(news)})
		d.disambiguate(path, comps)
	}
	for i, v := range news {
		p, cs := join(path, strconv.Itoa(i)), with(comps, i)
		if i >= len(olds) {
			d.set(p, cs, v)
			continue
		}
		ov := olds[i]
		switch {
		case sameValue(ov, v):
		case ov.Type == bsoncore.TypeEmbeddedDocument && v.Type == bsoncore.TypeEmbeddedDocument:
			d.documents(p, cs, ov.Document(), v.Document())
		default:
			d.set(p, cs, v)
		}
	}
}
