package value

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Render writes v as mongod's error messages show a BSON value (its
// BSONElement::toString): every error message of Parsec that quotes a
// value renders it here, so that clients read what MongoDB would write.
//
//	{ a: 1, b: "x" }    {}        documents: "{ ", name: value, ", ", " }"
//	[ 1, 2 ]            []        arrays
//	1  5  1.5  2.0  1e+20.0  nan.0  inf.0    int32, int64, double (%.16g,
//	                                         ".0" when it has no '.')
//	1.50  Infinity      decimal128 (its canonical string)
//	"x"                 strings and symbols, in double quotes, not escaped
//	ObjectId('5f…')  new Date(1700000000000)  Timestamp(1, 2)  /ab/i
//	BinData(0, 0A0B)  UUID("…")  MinKey  MaxKey  null  undefined  true
//	MISSING             a missing value (type 0), as mongod prints one
//
// MongoDB cuts long strings and binary data in some messages; Render does
// not.
func Render(v bsoncore.Value) string {
	return string(AppendRender(nil, v))
}

// RenderDocument is Render of the document d: "{ a: 1 }", "{}".
func RenderDocument(d []byte) string {
	return string(appendElements(nil, d, true))
}

// RenderElement is an element as mongod's messages show one with its
// name: "a: 1", "a: { b: 2 }".
func RenderElement(name string, v bsoncore.Value) string {
	return string(AppendRender(append([]byte(name), ": "...), v))
}

// AppendRender appends Render(v) to dst.
func AppendRender(dst []byte, v bsoncore.Value) []byte {
	switch v.Type {
	case 0:
		return append(dst, "MISSING"...)
	case bsoncore.TypeEmbeddedDocument:
		return appendElements(dst, v.Data, true)
	case bsoncore.TypeArray:
		return appendElements(dst, v.Data, false)
	case bsoncore.TypeDouble:
		if f, ok := v.DoubleOK(); ok {
			return appendDouble(dst, f)
		}
	case bsoncore.TypeInt32:
		if i, ok := v.Int32OK(); ok {
			return strconv.AppendInt(dst, int64(i), 10)
		}
	case bsoncore.TypeInt64:
		if i, ok := v.Int64OK(); ok {
			return strconv.AppendInt(dst, i, 10)
		}
	case bsoncore.TypeDecimal128:
		if h, l, ok := v.Decimal128OK(); ok {
			return append(dst, bson.NewDecimal128(h, l).String()...)
		}
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		if s, ok := stringOrSymbol(v); ok {
			return append(append(append(dst, '"'), s...), '"')
		}
	case bsoncore.TypeJavaScript:
		if s, ok := v.JavaScriptOK(); ok {
			return append(dst, s...)
		}
	case bsoncore.TypeCodeWithScope:
		if code, scope, ok := v.CodeWithScopeOK(); ok {
			dst = append(append(dst, "CodeWScope( "...), code...)
			dst = appendElements(append(dst, ", "...), scope, true)
			return append(dst, ')')
		}
	case bsoncore.TypeBoolean:
		if b, ok := v.BooleanOK(); ok {
			return strconv.AppendBool(dst, b)
		}
	case bsoncore.TypeNull:
		return append(dst, "null"...)
	case bsoncore.TypeUndefined:
		return append(dst, "undefined"...)
	case bsoncore.TypeMinKey:
		return append(dst, "MinKey"...)
	case bsoncore.TypeMaxKey:
		return append(dst, "MaxKey"...)
	case bsoncore.TypeObjectID:
		if oid, ok := v.ObjectIDOK(); ok {
			return append(hex.AppendEncode(append(dst, "ObjectId('"...), oid[:]), "')"...)
		}
	case bsoncore.TypeDBPointer:
		if ns, oid, ok := v.DBPointerOK(); ok {
			dst = append(append(append(dst, "DBRef('"...), ns...), "',"...)
			return append(hex.AppendEncode(dst, oid[:]), ')')
		}
	case bsoncore.TypeDateTime:
		if ms, ok := v.DateTimeOK(); ok {
			return append(strconv.AppendInt(append(dst, "new Date("...), ms, 10), ')')
		}
	case bsoncore.TypeTimestamp:
		if t, i, ok := v.TimestampOK(); ok {
			dst = strconv.AppendUint(append(dst, "Timestamp("...), uint64(t), 10)
			return append(strconv.AppendUint(append(dst, ", "...), uint64(i), 10), ')')
		}
	case bsoncore.TypeRegex:
		if p, o, ok := v.RegexOK(); ok {
			return append(append(append(append(dst, '/'), p...), '/'), o...)
		}
	case bsoncore.TypeBinary:
		if st, b, ok := v.BinaryOK(); ok {
			return appendBinary(dst, st, b)
		}
	}
	return append(append(dst, "?type="...), strconv.Itoa(int(v.Type))...)
}

func stringOrSymbol(v bsoncore.Value) (string, bool) {
	if v.Type == bsoncore.TypeSymbol {
		return v.SymbolOK()
	}
	return v.StringValueOK()
}

// appendElements writes a document ({ a: 1 }) or an array ([ 1 ]), {} and
// [] when empty.
func appendElements(dst, data []byte, named bool) []byte {
	open, close := "{ ", " }"
	if !named {
		open, close = "[ ", " ]"
	}
	n := 0
	for e := range All(data) {
		if n == 0 {
			dst = append(dst, open...)
		} else {
			dst = append(dst, ", "...)
		}
		n++
		if named {
			dst = append(append(dst, e.Key()...), ": "...)
		}
		dst = AppendRender(dst, e.Value())
	}
	if n == 0 {
		return append(dst, open[0], close[1])
	}
	return append(dst, close...)
}

// appendDouble writes f as C's "%.16g" does, then ".0" when that has no
// '.' (nor 'E' or 'N', which "%g" never writes): 1.0, 1.5, 1e+20.0,
// 0.3 for 0.1+0.2, nan.0, -inf.0.
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		if math.Signbit(f) {
			return append(dst, "-nan.0"...)
		}
		return append(dst, "nan.0"...)
	case math.IsInf(f, 1):
		return append(dst, "inf.0"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf.0"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', 16, 64)
	if !strings.ContainsAny(string(dst[start:]), ".EN") {
		dst = append(dst, ".0"...)
	}
	return dst
}

// appendBinary writes BinData(<subtype>, <HEX>), or UUID("<8-4-4-4-12>")
// for a 16-byte subtype 4.
func appendBinary(dst []byte, subtype byte, b []byte) []byte {
	if subtype == bson.TypeBinaryUUID && len(b) == 16 {
		dst = append(dst, `UUID("`...)
		for i, part := range [][]byte{b[:4], b[4:6], b[6:8], b[8:10], b[10:]} {
			if i > 0 {
				dst = append(dst, '-')
			}
			dst = hex.AppendEncode(dst, part)
		}
		return append(dst, `")`...)
	}
	dst = strconv.AppendUint(append(dst, "BinData("...), uint64(subtype), 10)
	dst = append(dst, ", "...)
	dst = append(dst, strings.ToUpper(hex.EncodeToString(b))...)
	return append(dst, ')')
}
