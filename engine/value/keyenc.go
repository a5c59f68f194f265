package value

import (
	"encoding/binary"
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TypeRank is MongoDB's canonical order of BSON types when values of
// different types are compared: all numbers rank alike, as do string and
// symbol, and null and undefined.
func TypeRank(t bsoncore.Type) byte {
	switch t {
	case bsoncore.TypeMinKey: // MinKey
		return 1
	case bsoncore.TypeUndefined, bsoncore.TypeNull:
		return 5
	case bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return 10
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return 15
	case bsoncore.TypeEmbeddedDocument:
		return 20
	case bsoncore.TypeArray:
		return 25
	case bsoncore.TypeBinary:
		return 30
	case bsoncore.TypeObjectID:
		return 35
	case bsoncore.TypeBoolean:
		return 40
	case bsoncore.TypeDateTime:
		return 45
	case bsoncore.TypeTimestamp:
		return 47
	case bsoncore.TypeRegex:
		return 50
	case bsoncore.TypeDBPointer:
		return 55
	case bsoncore.TypeJavaScript:
		return 60
	case bsoncore.TypeCodeWithScope:
		return 65
	case bsoncore.TypeMaxKey:
		return 127
	}
	return 0
}

const endOfDoc = 0x00 // terminates an encoded document or array; sorts before any element

// EncodeKey appends an order-preserving, self-delimiting encoding of v to
// dst: for values a and b, bytes.Compare(EncodeKey(a), EncodeKey(b)) has the
// sign of MongoDB's comparison of a and b, and numerically equal numbers of
// different types encode alike (so _id 1 and _id 1.0 collide, as in MongoDB).
//
// Numbers: rank, then the value as an order-preserving float64, then the
// signed difference between the exact integer and that float64 (non-zero
// only for int64 values past 2^53). Decimal128 values are ordered by their
// nearest float64.
func EncodeKey(dst []byte, v bsoncore.Value) []byte {
	dst = append(dst, TypeRank(v.Type))
	switch v.Type {
	case bsoncore.TypeDouble:
		return appendNumber(dst, v.Double(), 0)
	case bsoncore.TypeInt32:
		return appendNumber(dst, float64(v.Int32()), 0)
	case bsoncore.TypeInt64:
		i := v.Int64()
		f := float64(i)
		var rem int64
		if f >= -9.223372036854775808e18 && f < 9.223372036854775808e18 {
			rem = i - int64(f)
		} else { // f rounded up to 2^63
			rem = i - math.MaxInt64 - 1
		}
		return appendNumber(dst, f, rem)
	case bsoncore.TypeDecimal128:
		return appendNumber(dst, DecimalFloat(v), 0)
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
		return appendEscaped(dst, stringBytes(v))
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		it := elementsOf(v.Data)
		for e, ok := it.next(); ok; e, ok = it.next() {
			ev := e.Value()
			// Within a document the element's type rank leads, then its name.
			dst = append(dst, TypeRank(ev.Type))
			if v.Type == bsoncore.TypeEmbeddedDocument {
				dst = appendEscaped(dst, e.KeyBytes())
			}
			dst = EncodeKey(dst, ev)
		}
		return append(dst, endOfDoc)
	case bsoncore.TypeBinary:
		sub, data := binaryParts(v)
		// MongoDB orders binary by length, then subtype, then bytes.
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(data)))
		dst = append(dst, sub)
		return append(dst, data...)
	case bsoncore.TypeObjectID:
		oid := v.ObjectID()
		return append(dst, oid[:]...)
	case bsoncore.TypeBoolean:
		if v.Boolean() {
			return append(dst, 1)
		}
		return append(dst, 0)
	case bsoncore.TypeDateTime:
		return binary.BigEndian.AppendUint64(dst, uint64(v.DateTime())^(1<<63))
	case bsoncore.TypeTimestamp:
		t, i := v.Timestamp()
		dst = binary.BigEndian.AppendUint32(dst, t)
		return binary.BigEndian.AppendUint32(dst, i)
	case bsoncore.TypeRegex:
		p, o := v.Regex()
		dst = appendEscaped(dst, []byte(p))
		return appendEscaped(dst, []byte(o))
	case bsoncore.TypeDBPointer:
		ns, oid := v.DBPointer()
		dst = appendEscaped(dst, []byte(ns))
		return append(dst, oid[:]...)
	case bsoncore.TypeCodeWithScope:
		code, scope, ok := v.CodeWithScopeOK()
		if !ok { // malformed: encode the raw bytes rather than panic
			return appendEscaped(dst, v.Data)
		}
		dst = appendEscaped(dst, []byte(code))
		return EncodeKey(dst, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: scope})
	}
	return dst // MinKey, MaxKey, null, undefined: the rank says it all
}

// appendNumber encodes f so that byte order is numeric order; NaN sorts
// below every other number, as in MongoDB, and -0 equals 0.
func appendNumber(dst []byte, f float64, rem int64) []byte {
	var bits uint64
	switch {
	case math.IsNaN(f):
		bits = 0
	case f == 0:
		bits = 1 << 63
	default:
		bits = math.Float64bits(f)
		if bits&(1<<63) != 0 {
			bits = ^bits
		} else {
			bits |= 1 << 63
		}
		if bits == 0 { // -Inf must still sort above NaN
			bits = 1
		}
	}
	dst = binary.BigEndian.AppendUint64(dst, bits)
	return binary.BigEndian.AppendUint64(dst, uint64(rem)^(1<<63))
}

// appendEscaped writes s with 0x00 escaped as 0x00 0xFF and terminated by
// 0x00 0x01, which keeps byte order and makes the encoding self-delimiting.
func appendEscaped(dst, s []byte) []byte {
	for _, c := range s {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, 0, 1)
}

// DecimalFloat is the float64 nearest a Decimal128 value (rounded once:
// rounding to an intermediate precision first is wrong about once in 2^11).
func DecimalFloat(v bsoncore.Value) float64 {
	d := bson.NewDecimal128(v.Decimal128())
	bi, exp, err := d.BigInt()
	if err == nil && bi.IsInt64() && exp >= -22 && exp <= 22 {
		// Both the coefficient and 10^|exp| are exact float64s, so one
		// multiplication or division rounds correctly.
		if c := bi.Int64(); c > -1<<53 && c < 1<<53 {
			if exp < 0 {
				return float64(c) / pow10[-exp]
			}
			return float64(c) * pow10[exp]
		}
	}
	// Infinity, NaN and everything else: strconv rounds correctly and
	// returns ±Inf or 0 when the value is out of float64's range.
	f, _ := strconv.ParseFloat(d.String(), 64)
	return f
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
