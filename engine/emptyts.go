package engine

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MongoDB replaces an empty timestamp, Timestamp(0, 0), in a top-level
// field other than _id of an inserted document or of a replacement
// document (since 5.0) with the current cluster time; update operators
// and pipelines store it as given. A write with bypassEmptyTsReplacement:
// true stores it as given everywhere.

// replaceEmptyTimestamps is doc with its top-level empty timestamps
// (but _id's) set to the current cluster time; doc itself when it has
// none or is not a well-formed document.
func (e *Engine) replaceEmptyTimestamps(doc bsoncore.Document) bsoncore.Document {
	out, _ := e.replacedEmptyTimestamps(doc)
	return out
}

// replacedEmptyTimestamps is replaceEmptyTimestamps, and whether it
// replaced any.
func (e *Engine) replacedEmptyTimestamps(doc bsoncore.Document) (bsoncore.Document, bool) {
	elems, err := doc.Elements()
	if err != nil {
		return doc, false
	}
	found := false
	for _, el := range elems {
		if isEmptyTimestamp(el) {
			found = true
			break
		}
	}
	if !found {
		return doc, false
	}
	start, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)))
	for _, el := range elems {
		if isEmptyTimestamp(el) {
			ts := e.clock.Next(e.now())
			b = bsoncore.AppendTimestampElement(b, el.Key(), ts.T, ts.I)
			continue
		}
		b = append(b, el...)
	}
	out, _ := bsoncore.AppendDocumentEnd(b, start)
	return out, true
}

func isEmptyTimestamp(el bsoncore.Element) bool {
	if el.Key() == "_id" {
		return false
	}
	v := el.Value()
	if v.Type != bsoncore.TypeTimestamp {
		return false
	}
	t, i := v.Timestamp()
	return t == 0 && i == 0
}

// replaceEmptyTimestampsIn applies replaceEmptyTimestamps to an update
// argument u when it is a replacement document (its first field is not
// an operator); operator updates and pipelines are returned as they are.
func (e *Engine) replaceEmptyTimestampsIn(u bsoncore.Value) bsoncore.Value {
	d, ok := u.DocumentOK()
	if !ok {
		return u
	}
	if first, err := d.IndexErr(0); err == nil && len(first.Key()) > 0 && first.Key()[0] == '$' {
		return u
	}
	if out, replaced := e.replacedEmptyTimestamps(d); replaced {
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out}
	}
	return u
}
