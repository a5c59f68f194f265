package engine

import (
	"encoding/binary"
	"strconv"

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
func queryError(err error) error { return languageError(err) }

// negativeValue is the IDL's error for a negative count.
func negativeValue(field string, n int64) *CommandError {
	return errorf(ErrValueNegative, "BSON field '%s' value must be >= 0, actual value '%d'", field, n)
}

var emptyArray = bsoncore.NewArrayBuilder().Build()

// batchArray encodes documents as a BSON array.
func batchArray(docs [][]byte) []byte {
	size := 5
	for i, d := range docs {
		size += 2 + decimalLen(i) + len(d) // type byte, index key and its NUL, document
	}
	idx, b := bsoncore.AppendArrayStart(make([]byte, 0, size))
	for i, d := range docs {
		// an element: type, the index as a C string, the document
		b = append(b, byte(bsoncore.TypeEmbeddedDocument))
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(append(b, 0), d...)
	}
	b, _ = bsoncore.AppendArrayEnd(b, idx)
	return b
}

// decimalLen is the number of decimal digits of n >= 0.
func decimalLen(n int) int {
	l := 1
	for ; n >= 10; n /= 10 {
		l++
	}
	return l
}

// positionalError prefixes errors raised while producing results as
// MongoDB's executor does.
func positionalError(err error) error {
	if ce, ok := err.(*CommandError); ok && (ce.Code == errPositionalNoMatch || ce.Code == ErrBadValue || ce.Code == ErrTypeMismatch) {
		return errorf(ce.Code, "Executor error during find command :: caused by :: %s", ce.Msg)
	}
	return err
}

// appendElement returns a copy of document doc with the encoded element el
// added at its end (doc itself is left as it is: replies may be shared).
func appendElement(doc, el []byte) []byte {
	if len(doc) < 5 {
		return doc
	}
	out := append(doc[:len(doc)-1:len(doc)-1], el...)
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}
