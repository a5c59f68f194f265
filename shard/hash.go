package shard

import (
	"crypto/md5"
	"encoding/binary"
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Hash is MongoDB's hashed-index hash of a shard-key value: the value
// convertShardKeyToHashed returns and hashed shard keys place chunks by.
// It is the first 8 bytes of an MD5 digest, read as a little-endian
// int64, over a canonical encoding of the value:
//
//	seed            int32 LE, always 0
//	value           canonical type (int32 LE) then its bytes:
//	  numbers       int64 LE of the value truncated to an integer (see toHashInt)
//	  documents,    each element as canonical type, field name with its NUL,
//	  arrays        value; then the end marker (type 0, no name)
//	  code w/scope  the code string with its NUL, then the scope as a document
//	  anything else its BSON value bytes as stored (strings with length
//	                prefix and NUL, ObjectId's 12 bytes, ...)
//
// So equal numbers of different types hash alike (1, 1L, 1.0 and
// Decimal128 "1"), as do 1.2 and 1.9: a logical partition may share its
// hash with others, never split across two.
func Hash(v bsoncore.Value) int64 {
	h := md5.New()
	var buf [8]byte
	h.Write(buf[:4]) // seed 0
	hashValue(h, v, &buf)
	var sum [md5.Size]byte
	h.Sum(sum[:0])
	return int64(binary.LittleEndian.Uint64(sum[:8]))
}

// Point is v's place in the hash space: its Hash shifted from the signed
// range to [0, 2^64) so that unsigned order is the order of MongoDB's
// NumberLong chunk bounds.
func Point(v bsoncore.Value) uint64 { return PointOf(Hash(v)) }

// PointOf maps a signed hash onto the unsigned hash space, order kept.
func PointOf(hash int64) uint64 { return uint64(hash) ^ (1 << 63) }

// HashOf is the inverse of PointOf.
func HashOf(point uint64) int64 { return int64(point ^ (1 << 63)) }

type writer interface{ Write([]byte) (int, error) }

func writeInt32(h writer, buf *[8]byte, n int32) {
	binary.LittleEndian.PutUint32(buf[:4], uint32(n))
	h.Write(buf[:4])
}

func hashValue(h writer, v bsoncore.Value, buf *[8]byte) {
	writeInt32(h, buf, canonicalType(v.Type))
	hashBody(h, v, buf)
}

// hashBody hashes what follows a value's canonical type.
func hashBody(h writer, v bsoncore.Value, buf *[8]byte) {
	switch v.Type {
	case bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		binary.LittleEndian.PutUint64(buf[:], uint64(toHashInt(v)))
		h.Write(buf[:])
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		hashElements(h, v.Data, buf)
	case bsoncore.TypeCodeWithScope:
		// int32 total, int32 code length (with its NUL), code, scope
		if len(v.Data) >= 8 {
			n := int(int32(binary.LittleEndian.Uint32(v.Data[4:8])))
			if n >= 0 && 8+n <= len(v.Data) {
				h.Write(v.Data[8 : 8+n])
				hashElements(h, v.Data[8+n:], buf)
				return
			}
		}
		h.Write(v.Data) // malformed: hash the bytes rather than fail
	default:
		h.Write(v.Data)
	}
}

// hashElements hashes a document's (or array's) elements, each as its
// canonical type, its name with the NUL, and its value; then the end
// marker: canonical type 0 alone (MongoDB hashes the end-of-object element
// with no name bytes).
func hashElements(h writer, doc []byte, buf *[8]byte) {
	elems, err := bsoncore.Document(doc).Elements()
	if err != nil {
		h.Write(doc)
		return
	}
	for _, el := range elems {
		val := el.Value()
		writeInt32(h, buf, canonicalType(val.Type))
		h.Write(el.KeyBytes())
		h.Write(nul[:])
		hashBody(h, val, buf)
	}
	writeInt32(h, buf, 0)
}

var nul = [1]byte{0}

// canonicalType is MongoDB's canonical type number, which hashing and
// comparison share: types that compare alike get the same number.
func canonicalType(t bsoncore.Type) int32 {
	switch t {
	case bsoncore.TypeMinKey:
		return -1
	case bsoncore.TypeMaxKey:
		return 127
	case bsoncore.TypeUndefined:
		return 0
	case bsoncore.TypeNull:
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
	}
	return int32(t)
}

// twoTo63 is 2^63, the least double past int64's range.
const twoTo63 = 9223372036854775808.0

// toHashInt is the integer MongoDB hashes a number as
// (BSONElement::safeNumberLongForHash): NaN is 0; doubles are truncated
// toward zero and clamped to int64's range, except that exactly 2^63
// becomes -2^63 (an old overflow kept for compatibility with stored
// hashes); Decimal128 values are clamped, then rounded half to even.
func toHashInt(v bsoncore.Value) int64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32())
	case bsoncore.TypeInt64:
		return v.Int64()
	case bsoncore.TypeDouble:
		d := v.Double()
		switch {
		case math.IsNaN(d):
			return 0
		case d == twoTo63:
			return math.MinInt64
		case d > twoTo63:
			return math.MaxInt64
		case d < -twoTo63:
			return math.MinInt64
		}
		return int64(d)
	case bsoncore.TypeDecimal128:
		return decimalHashInt(v)
	}
	return 0
}

var (
	bigMaxInt64 = new(big.Rat).SetInt64(math.MaxInt64)
	bigMinInt64 = new(big.Rat).SetInt64(math.MinInt64)
)

func decimalHashInt(v bsoncore.Value) int64 {
	hi, lo := v.Decimal128()
	d := bson.NewDecimal128(hi, lo)
	if d.IsNaN() {
		return 0
	}
	if inf := d.IsInf(); inf != 0 {
		if inf > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		return 0
	}
	r := new(big.Rat).SetInt(coef)
	if exp != 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
		if exp > 0 {
			r.Mul(r, new(big.Rat).SetInt(p))
		} else {
			r.Quo(r, new(big.Rat).SetInt(p))
		}
	}
	switch {
	case r.Cmp(bigMaxInt64) > 0:
		return math.MaxInt64
	case r.Cmp(bigMinInt64) < 0:
		return math.MinInt64
	}
	return roundHalfEven(r)
}

// roundHalfEven rounds r (within int64's range) to the nearest integer,
// ties to even.
func roundHalfEven(r *big.Rat) int64 {
	num, den := r.Num(), r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int)) // truncated toward zero
	twice := new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2))
	switch c := twice.Cmp(den); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q.Int64()
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
