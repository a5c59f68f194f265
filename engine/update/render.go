package update

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Rendering of values in error messages, the way MongoDB's BSON toString
// writes them: {a: 1} elements, { a: 1 } documents, [ 1, 2 ] arrays.

func renderValue(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bsoncore.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return "nan.0"
		case math.IsInf(f, 1):
			return "inf.0"
		case math.IsInf(f, -1):
			return "-inf.0"
		case f == math.Trunc(f) && math.Abs(f) < 1e15:
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bsoncore.TypeDecimal128:
		return "NumberDecimal(\"" + bson.NewDecimal128(v.Decimal128()).String() + "\")"
	case bsoncore.TypeString:
		return strconv.Quote(v.StringValue())
	case bsoncore.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeUndefined:
		return "undefined"
	case bsoncore.TypeMinKey:
		return "MinKey"
	case bsoncore.TypeMaxKey:
		return "MaxKey"
	case bsoncore.TypeObjectID:
		oid := v.ObjectID()
		return "ObjectId('" + hex.EncodeToString(oid[:]) + "')"
	case bsoncore.TypeDateTime:
		return "new Date(" + strconv.FormatInt(v.DateTime(), 10) + ")"
	case bsoncore.TypeTimestamp:
		t, i := v.Timestamp()
		return "Timestamp(" + strconv.FormatUint(uint64(t), 10) + ", " + strconv.FormatUint(uint64(i), 10) + ")"
	case bsoncore.TypeRegex:
		p, o := v.Regex()
		return "/" + p + "/" + o
	case bsoncore.TypeEmbeddedDocument:
		return renderDoc(v.Data)
	case bsoncore.TypeArray:
		vals, _ := bsoncore.Document(v.Data).Values()
		if len(vals) == 0 {
			return "[]"
		}
		parts := make([]string, len(vals))
		for i, x := range vals {
			parts[i] = renderValue(x)
		}
		return "[ " + strings.Join(parts, ", ") + " ]"
	case bsoncore.TypeBinary:
		st, b := v.Binary()
		return "BinData(" + strconv.Itoa(int(st)) + ", " + strings.ToUpper(hex.EncodeToString(b)) + ")"
	}
	return v.String()
}

func renderDoc(d []byte) string {
	elems, _ := bsoncore.Document(d).Elements()
	if len(elems) == 0 {
		return "{}"
	}
	parts := make([]string, len(elems))
	for i, e := range elems {
		parts[i] = e.Key() + ": " + renderValue(e.Value())
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// renderElem is "name: value".
func renderElem(name string, v bsoncore.Value) string { return name + ": " + renderValue(v) }

// typeName is MongoDB's alias for a BSON type.
func typeName(t bsoncore.Type) string {
	if n := value.TypeAlias(t); n != "" {
		return n
	}
	return "missing" // type 0: the field is absent
}
