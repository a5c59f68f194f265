package query

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func isNumberType(t bsoncore.Type) bool {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// wholeNumber reads a number that must be integral and fit an int64.
func wholeNumber(what string, v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), nil
	case bsoncore.TypeInt64:
		return v.Int64(), nil
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f := value.Float(v)
		if math.IsNaN(f) {
			return 0, errorOf(ErrFailedToParse, "Expected an integer, but found NaN in: %s: %s", what, shellValue(v))
		}
		if f != math.Trunc(f) {
			return 0, errorOf(ErrFailedToParse, "Expected an integer: %s: %s", what, shellValue(v))
		}
		if f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
			return 0, errorOf(ErrFailedToParse, "Cannot represent as a 64-bit integer: %s: %s", what, shellValue(v))
		}
		return int64(f), nil
	}
	return 0, errorOf(ErrFailedToParse, "Expected a number in: %s: %s", what, shellValue(v))
}

// truthy is BSONElement::trueValue: false, 0, null, undefined and missing
// are false; everything else is true.
func truthy(v bsoncore.Value) bool {
	switch v.Type {
	case missing, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return value.Float(v) != 0 || isNaN(v)
	}
	return true
}

// shellValue renders a value as MongoDB's error messages do (close to the
// shell's notation): "x", 1, 1.5, { a: 1 }, [ 1, 2 ].
func shellValue(v bsoncore.Value) string {
	var b strings.Builder
	writeShell(&b, v)
	return b.String()
}

func writeShell(b *strings.Builder, v bsoncore.Value) {
	switch v.Type {
	case missing:
		b.WriteString("MISSING")
	case bsoncore.TypeString:
		b.WriteString(strconv.Quote(stringOf(v)))
	case bsoncore.TypeInt32:
		b.WriteString(strconv.FormatInt(int64(v.Int32()), 10))
	case bsoncore.TypeInt64:
		b.WriteString(strconv.FormatInt(v.Int64(), 10))
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			b.WriteString("nan.0")
		case math.IsInf(f, 1):
			b.WriteString("inf.0")
		case math.IsInf(f, -1):
			b.WriteString("-inf.0")
		case f == math.Trunc(f) && math.Abs(f) < 1e15:
			b.WriteString(strconv.FormatFloat(f, 'f', -1, 64) + ".0")
		default:
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case bsoncore.TypeDecimal128:
		b.WriteString(bson.NewDecimal128(v.Decimal128()).String())
	case bsoncore.TypeBoolean:
		b.WriteString(strconv.FormatBool(v.Boolean()))
	case bsoncore.TypeNull:
		b.WriteString("null")
	case bsoncore.TypeUndefined:
		b.WriteString("undefined")
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		open, close := "{", "}"
		if v.Type == bsoncore.TypeArray {
			open, close = "[", "]"
		}
		b.WriteString(open)
		first := true
		for e := range value.All(v.Data) {
			if first {
				b.WriteString(" ")
			} else {
				b.WriteString(", ")
			}
			first = false
			if v.Type == bsoncore.TypeEmbeddedDocument {
				b.WriteString(e.Key())
				b.WriteString(": ")
			}
			writeShell(b, e.Value())
		}
		if !first {
			b.WriteString(" ")
		}
		b.WriteString(close)
	case bsoncore.TypeRegex:
		p, o := v.Regex()
		b.WriteString("/" + p + "/" + o)
	case bsoncore.TypeObjectID:
		oid := v.ObjectID()
		b.WriteString("ObjectId('" + hex.EncodeToString(oid[:]) + "')")
	case bsoncore.TypeMinKey:
		b.WriteString("MinKey")
	case bsoncore.TypeMaxKey:
		b.WriteString("MaxKey")
	default:
		b.WriteString(v.String())
	}
}
