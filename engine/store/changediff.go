package store

import (
	"bytes"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// UpdateDescription is an update event's description of how old became
// doc, as MongoDB's change events give it: updatedFields (dotted paths
// to their new values; a changed embedded document or array element is
// described inside, a grown array by its new elements), removedFields
// (paths that are gone) and truncatedArrays ({field, newSize} for arrays
// that got shorter).
func UpdateDescription(old, doc []byte) bsoncore.Document {
	var d docDiff
	d.documents("", old, doc)
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
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

type docDiff struct {
	updated   []byte // elements of updatedFields
	removed   []string
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

func (d *docDiff) set(path string, v bsoncore.Value) {
	d.updated = bsoncore.AppendValueElement(d.updated, path, v)
}

func (d *docDiff) documents(prefix string, old, doc bsoncore.Document) {
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
		switch {
		case !had:
			d.set(join(prefix, k), v)
		case sameValue(ov, v):
		case ov.Type == bsoncore.TypeEmbeddedDocument && v.Type == bsoncore.TypeEmbeddedDocument:
			d.documents(join(prefix, k), ov.Document(), v.Document())
		case ov.Type == bsoncore.TypeArray && v.Type == bsoncore.TypeArray:
			d.arrays(join(prefix, k), ov.Array(), v.Array())
		default:
			d.set(join(prefix, k), v)
		}
	}
	for _, e := range olds {
		if !after[e.Key()] {
			d.removed = append(d.removed, join(prefix, e.Key()))
		}
	}
}

func (d *docDiff) arrays(path string, old, arr bsoncore.Array) {
	olds, _ := old.Values()
	news, _ := arr.Values()
	if len(news) < len(olds) {
		d.truncated = append(d.truncated, struct {
			field string
			size  int
		}{path, len(news)})
	}
	for i, v := range news {
		p := join(path, strconv.Itoa(i))
		if i >= len(olds) {
			d.set(p, v)
			continue
		}
		ov := olds[i]
		switch {
		case sameValue(ov, v):
		case ov.Type == bsoncore.TypeEmbeddedDocument && v.Type == bsoncore.TypeEmbeddedDocument:
			d.documents(p, ov.Document(), v.Document())
		default:
			d.set(p, v)
		}
	}
}
