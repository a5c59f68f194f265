package engine

import (
	"errors"

	"github.com/parsecdb/parsec/engine/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cursorReply builds {cursor: {<batchName>: batch, id, ns}, ok: 1}; batch
// is an encoded BSON array.
func cursorReply(id int64, ns, batchName string, batch []byte) []byte {
	b := bsoncore.NewDocumentBuilder()
	b.StartDocument("cursor").
		AppendArray(batchName, batch).
		AppendInt64("id", id).
		AppendString("ns", ns).
		FinishDocument()
	b.AppendDouble("ok", 1)
	return b.Build()
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
