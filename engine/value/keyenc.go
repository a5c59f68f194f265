package value

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

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

// MaxKeyLen is the most bytes EncodeKey writes for one value. A longer
// encoding is cut (see the package comment): 34 cut values (the 32 fields
// of MongoDB's largest compound index, a shard-key value and an _id) and
// the prefixes and points around them stay under Badger's 65,000-byte key
// limit, so no document MongoDB accepts has a key Parsec cannot store.
const MaxKeyLen = 1900

// A cut encoding is its value's whole encoding's first cutPrefixLen bytes,
// cutMarker, and the first cutHashLen bytes of the SHA-256 of the whole
// encoding.
const (
	cutHashLen   = 16
	cutPrefixLen = MaxKeyLen - 1 - cutHashLen
	cutMarker    = 0xFE
)

// EncodeKey appends an order-preserving, self-delimiting encoding of v to
// dst: for values a and b, bytes.Compare(EncodeKey(a), EncodeKey(b)) has the
// sign of Compare(a, b), and values that compare equal encode alike (so
// _id 1, 1.0 and NumberDecimal("1.00") collide, as in MongoDB). The one
// exception to the order is two values whose encodings are both cut and
// share their prefix (CutPrefix): they order by hash. The format is in
// the package comment.
func EncodeKey(dst []byte, v bsoncore.Value) []byte { return EncodeKeyWith(dst, v, nil) }

// EncodeKeyWith is EncodeKey under the collation coll: strings and symbols,
// also nested ones, are encoded by their collation sort keys, so encodings
// order as CompareWith(a, b, coll) does and strings the collation holds
// equal encode alike. A nil coll is EncodeKey.
func EncodeKeyWith(dst []byte, v bsoncore.Value, coll *Collator) []byte {
	start := len(dst)
	dst = encodeValue(dst, v, coll)
	if len(dst)-start <= cutPrefixLen {
		return dst
	}
	sum := sha256.Sum256(dst[start:])
	dst = append(dst[:start+cutPrefixLen], cutMarker)
	return append(dst, sum[:cutHashLen]...)
}

// CutPrefix reports whether enc, one whole EncodeKey encoding, is cut, and
// if so returns the prefix it keeps of its value's whole encoding: every
// value whose encoding starts with that prefix encodes to a key that
// starts with it too, in no particular order among them.
func CutPrefix(enc []byte) ([]byte, bool) {
	if len(enc) != MaxKeyLen || enc[cutPrefixLen] != cutMarker {
		return nil, false
	}
	if _, st := keyLen(enc[:cutPrefixLen], 0); st != short {
		return nil, false
	}
	return enc[:cutPrefixLen], true
}

// encodeValue is EncodeKey without the cut: elements of documents and
// arrays are encoded whole, only the outermost value is cut.
func encodeValue(dst []byte, v bsoncore.Value, coll *Collator) []byte {
	dst = append(dst, TypeRank(v.Type))
	switch v.Type {
	case bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return appendNumber(dst, v)
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		if coll != nil {
			return appendEscaped(dst, coll.AppendKey(nil, stringBytes(v)))
		}
		return appendEscaped(dst, stringBytes(v))
	case bsoncore.TypeJavaScript:
		return appendEscaped(dst, stringBytes(v))
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		it := ElementsOf(v.Data)
		for e, ok := it.Next(); ok; e, ok = it.Next() {
			ev := e.Value()
			// Within a document the element's type rank leads, then its name.
			dst = append(dst, TypeRank(ev.Type))
			if v.Type == bsoncore.TypeEmbeddedDocument {
				dst = appendEscaped(dst, e.KeyBytes())
			}
			dst = encodeValue(dst, ev, coll)
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
		return encodeValue(dst, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: scope}, nil)
	}
	return dst // MinKey, MaxKey, null, undefined: the rank says it all
}

// appendNumber writes a number as the package comment lays it out:
// class, then for finite non-zero numbers the biased exponent, the digit
// pairs and the terminator, inverted when negative. Numbers whose digits
// fit a uint64 (integers, decimals with short coefficients, doubles like
// 3.25) take a shorter path than numKeys: they are most keys.
func appendNumber(dst []byte, v bsoncore.Value) []byte {
	switch v.Type {
	case bsoncore.TypeInt32:
		return appendIntKey(dst, int64(v.Int32()))
	case bsoncore.TypeInt64:
		return appendIntKey(dst, v.Int64())
	case bsoncore.TypeDouble:
		f := v.Double()
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return appendIntKey(dst, int64(f))
		}
		if b := math.Float64bits(f); b&0x7FF0000000000000 != 0 && b&0x7FF0000000000000 != 0x7FF0000000000000 {
			// Normal and not an integer below 2^63: m·2^-k, which
			// is m·5^k·10^-k, with m·5^k a uint64 when k is small.
			m := b&(1<<52-1) | 1<<52
			k := 1075 - int(b>>52&0x7FF)
			tz := bits.TrailingZeros64(m)
			m, k = m>>tz, k-tz
			if k > 0 && k < len(pow5) {
				if hi, lo := bits.Mul64(m, pow5[k]); hi == 0 {
					return appendUintKey(dst, b>>63 != 0, lo, -k)
				}
			}
		}
	case bsoncore.TypeDecimal128:
		if class, neg, chi, clo, exp := decimalParts(v.Decimal128()); chi == 0 && (class == numPos || class == numNeg) {
			return appendUintKey(dst, neg, clo, exp)
		}
	}
	var buf [48]byte
	return appendNumKey(dst, numKeyOf(v, buf[:0]))
}

func appendNumKey(dst []byte, n numKey) []byte {
	dst = append(dst, n.class)
	if n.class != numPos && n.class != numNeg {
		return dst
	}
	var inv byte
	if n.class == numNeg {
		inv = 0xFF
	}
	e := uint16(n.exp + expBias)
	dst = append(dst, byte(e>>8)^inv, byte(e)^inv)
	d := n.digits
	for i := 0; i < len(d); i += 2 {
		p := 1 + 10*(d[i]-'0')
		if i+1 < len(d) {
			p += d[i+1] - '0'
		}
		dst = append(dst, p^inv)
	}
	return append(dst, inv)
}

func appendIntKey(dst []byte, i int64) []byte {
	switch {
	case i > 0:
		return appendUintKey(dst, false, uint64(i), 0)
	case i < 0:
		return appendUintKey(dst, true, -uint64(i), 0)
	}
	return append(dst, numZero)
}

// appendUintKey is appendNumKey(dst, digitsKey(neg, u's digits, exp10,
// false)) computed directly, for u > 0: the digit pairs are u's base-100
// digits once u is stripped of trailing zeros (its last digit paired with
// a 0 if that leaves an odd number).
func appendUintKey(dst []byte, neg bool, u uint64, exp10 int) []byte {
	class, inv := numPos, byte(0)
	if neg {
		class, inv = numNeg, 0xFF
	}
	n := decimalLen(u)
	e := uint16(n + exp10 + expBias)
	for u%100 == 0 {
		u /= 100
		n -= 2
	}
	if u%10 == 0 {
		u /= 10
		n--
	}
	np := (n + 1) / 2
	k := len(dst)
	dst = slices.Grow(dst, 4+np)[:k+4+np]
	b := dst[k:]
	b[0], b[1], b[2] = class, byte(e>>8)^inv, byte(e)^inv
	j := 3 + np
	b[j] = inv
	if n%2 == 1 {
		j--
		b[j] = byte(1+10*(u%10)) ^ inv
		u /= 10
	}
	for u >= 10000 { // four digits at a time: shorter dependency chains
		q := u / 10000
		r := u - q*10000
		j -= 2
		b[j], b[j+1] = byte(1+r/100)^inv, byte(1+r%100)^inv
		u = q
	}
	switch {
	case u >= 100:
		b[j-2], b[j-1] = byte(1+u/100)^inv, byte(1+u%100)^inv
	case u > 0:
		b[j-1] = byte(1+u) ^ inv
	}
	return dst
}

var pow10u = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// decimalLen is the number of decimal digits of u > 0.
func decimalLen(u uint64) int {
	t := bits.Len64(u) * 1233 >> 12 // about log10(2^len)
	if u < pow10u[t] {
		return t
	}
	return t + 1
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
