package engine

import (
	"errors"

	"github.com/parsecdb/parsec/engine/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cursorReply builds {cursor: {<batchName>: batch, id, ns}, ok: 1}; batch
// is an encoded BSON array.
func cursorReply(id int64, ns, batchName string, batch []byte) []byte {
	// One allocation of the final size: the batch is most of the reply.
	idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(batch)+len(batchName)+len(ns)+64))
	cidx, b := bsoncore.AppendDocumentElementStart(b, "cursor")
	b = bsoncore.AppendArrayElement(b, batchName, batch)
	b = bsoncore.AppendInt64Element(b, "id", id)
	b = bsoncore.AppendStringElement(b, "ns", ns)
	b, _ = bsoncore.AppendDocumentEnd(b, cidx)
	b = bsoncore.AppendDoubleElement(b, "ok", 1)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// compileFilter compiles a query filter, mapping its errors to codes.
func compileFilter(d bsoncore.Document) (*query.Filter, error) {
	f, err := query.Compile(d)
	if err != nil {
		return nil, queryError(err)
	}
	return f, nil
}

// queryError maps the query package's error categories to MongoDB codes.
func queryError(err error) error {
	switch {
	case errors.Is(err, query.ErrTypeMismatch):
		return errorf(ErrTypeMismatch, "%s", trimCategory(err))
	case errors.Is(err, query.ErrFailedToParse):
		return errorf(ErrFailedToParse, "%s", trimCategory(err))
	case errors.Is(err, query.ErrBadValue):
		return errorf(ErrBadValue, "%s", trimCategory(err))
	}
	return err
}

// trimCategory drops the "bad value: " style prefix the query package adds.
func trimCategory(err error) string {
	s := err.Error()
	for _, c := range []error{query.ErrBadValue, query.ErrTypeMismatch, query.ErrFailedToParse} {
		p := c.Error() + ": "
		if len(s) > len(p) && s[:len(p)] == p {
			return s[len(p):]
		}
	}
	return s
}
