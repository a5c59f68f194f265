package expr

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Missing is the value of a path that reaches nothing.
var Missing = bsoncore.Value{}

// IsMissing reports whether v is the missing value.
func IsMissing(v bsoncore.Value) bool { return v.Type == 0 }

// Null is BSON null.
var Null = bsoncore.Value{Type: bsoncore.TypeNull}

// isNullish: null, undefined or missing.
func isNullish(v bsoncore.Value) bool {
	return v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined
}

// Int32, Int64, Double, String, Bool, ... build values.
func Int32(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

func Int64(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

func Double(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

func String(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

func Bool(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

func Decimal(d bson.Decimal128) bsoncore.Value {
	h, l := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

func DateTime(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

// Array builds an array value; missing elements become null.
func Array(vals []bsoncore.Value) bsoncore.Value {
	idx, b := bsoncore.AppendArrayStart(nil)
	for i, v := range vals {
		if v.Type == 0 {
			v = Null
		}
		b = bsoncore.AppendValueElement(b, strconv.Itoa(i), v)
	}
	b, _ = bsoncore.AppendArrayEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b}
}

// Field is one field of a document being built.
type Field struct {
	Key string
	Val bsoncore.Value
}

// Document builds a document value; missing fields are left out.
func Document(fields []Field) bsoncore.Value {
	idx, b := bsoncore.AppendDocumentStart(nil)
	for _, f := range fields {
		if f.Val.Type == 0 {
			continue
		}
		b = bsoncore.AppendValueElement(b, f.Key, f.Val)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}
}

// Elements returns the values of an array (or a document's values).
func Elements(v bsoncore.Value) []bsoncore.Value {
	var out []bsoncore.Value
	for e := range value.All(v.Data) {
		out = append(out, e.Value())
	}
	return out
}

// Fields returns the fields of a document value.
func Fields(v bsoncore.Value) []Field {
	var out []Field
	for e := range value.All(v.Data) {
		out = append(out, Field{Key: e.Key(), Val: e.Value()})
	}
	return out
}

// lookup finds field name in a document without allocating. It is the
// hot path of every field path, so it walks the elements itself: type,
// key, then the value's length by type.
func lookup(doc []byte, name string) (bsoncore.Value, bool) {
	if len(doc) < 5 {
		return Missing, false
	}
	rem := doc[4 : len(doc)-1]
	for len(rem) > 0 {
		t := bsoncore.Type(rem[0])
		rem = rem[1:]
		k := bytes.IndexByte(rem, 0)
		if k < 0 {
			return Missing, false
		}
		key := rem[:k]
		rem = rem[k+1:]
		n := valueLength(t, rem)
		if n < 0 || n > len(rem) {
			return Missing, false
		}
		if string(key) == name {
			return bsoncore.Value{Type: t, Data: rem[:n]}, true
		}
		rem = rem[n:]
	}
	return Missing, false
}

// valueLength is the length of a value of type t at the start of b (-1
// when b is too short or t unknown).
func valueLength(t bsoncore.Type, b []byte) int {
	i32 := func(off int) int {
		if len(b) < off+4 {
			return -1
		}
		return int(int32(binary.LittleEndian.Uint32(b[off:])))
	}
	switch t {
	case bsoncore.TypeDouble, bsoncore.TypeDateTime, bsoncore.TypeTimestamp, bsoncore.TypeInt64:
		return 8
	case bsoncore.TypeInt32:
		return 4
	case bsoncore.TypeDecimal128:
		return 16
	case bsoncore.TypeObjectID:
		return 12
	case bsoncore.TypeBoolean:
		return 1
	case bsoncore.TypeNull, bsoncore.TypeUndefined, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return 0
	case bsoncore.TypeString, bsoncore.TypeJavaScript, bsoncore.TypeSymbol:
		if n := i32(0); n >= 1 {
			return 4 + n
		}
		return -1
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeCodeWithScope:
		if n := i32(0); n >= 5 {
			return n
		}
		return -1
	case bsoncore.TypeBinary:
		if n := i32(0); n >= 0 {
			return 5 + n
		}
		return -1
	case bsoncore.TypeDBPointer:
		if n := i32(0); n >= 1 {
			return 4 + n + 12
		}
		return -1
	case bsoncore.TypeRegex:
		p := bytes.IndexByte(b, 0)
		if p < 0 {
			return -1
		}
		q := bytes.IndexByte(b[p+1:], 0)
		if q < 0 {
			return -1
		}
		return p + 1 + q + 1
	}
	return -1
}

// Truthy is how expressions read a value as a boolean: false, null,
// undefined, missing and numeric zero are false; everything else
// (including empty arrays and strings) is true.
func Truthy(v bsoncore.Value) bool {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f := value.Float(v)
		return f != 0 || math.IsNaN(f)
	}
	return true
}

// Compare orders values as aggregation does: the BSON order, with
// missing and undefined below null.
func Compare(a, b bsoncore.Value) int { return CompareWith(a, b, nil) }

// CompareWith is Compare with strings ordered by the collation coll (nil:
// by their bytes).
func CompareWith(a, b bsoncore.Value, coll *value.Collator) int {
	ra, rb := rank(a), rank(b)
	if ra != rb {
		if ra < rb {
			return -1
		}
		return 1
	}
	if ra < 5 { // missing/undefined
		return 0
	}
	return value.CompareWith(a, b, coll)
}

func rank(v bsoncore.Value) int {
	switch v.Type {
	case 0, bsoncore.TypeUndefined:
		return 2
	case bsoncore.TypeMinKey:
		return 1
	}
	return int(value.TypeRank(v.Type))
}

func isNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// TypeName is what $type returns for v ("missing" for missing).
func TypeName(v bsoncore.Value) string {
	if v.Type == 0 {
		return "missing"
	}
	if n := value.TypeAlias(v.Type); n != "" {
		return n
	}
	return "unknown"
}

func stringOf(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeString:
		s, _ := v.StringValueOK()
		return s
	case bsoncore.TypeSymbol:
		s, _ := v.SymbolOK()
		return s
	}
	return ""
}

func isString(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeString || v.Type == bsoncore.TypeSymbol
}

// formatDouble writes a double as MongoDB does in strings ($toString,
// $concat of converted values): integral values without a fraction.
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
