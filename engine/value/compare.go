package value

import (
	"bytes"
	"encoding/binary"
	"iter"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Compare orders a and b as MongoDB does: first by TypeRank, then within
// the type. Numbers compare by value across int32, int64, double and
// decimal128, with NaN below every other number and equal to itself.
func Compare(a, b bsoncore.Value) int { return CompareWith(a, b, nil) }

// CompareWith is Compare with strings and symbols, also those nested in
// documents and arrays, ordered by the collation coll (nil: by their
// bytes, the simple collation).
func CompareWith(a, b bsoncore.Value, coll *Collator) int {
	ra, rb := TypeRank(a.Type), TypeRank(b.Type)
	if ra != rb {
		return cmpInt(int64(ra), int64(rb))
	}
	switch ra {
	case 1, 5, 127: // MinKey, null/undefined, MaxKey
		return 0
	case 10:
		return compareNumbers(a, b)
	case 15:
		if coll != nil {
			return coll.CompareStrings(stringBytes(a), stringBytes(b))
		}
		return bytes.Compare(stringBytes(a), stringBytes(b))
	case 20, 25:
		return compareDocs(a.Data, b.Data, ra == 20, coll)
	case 30:
		sa, da := binaryParts(a)
		sb, db := binaryParts(b)
		if len(da) != len(db) {
			return cmpInt(int64(len(da)), int64(len(db)))
		}
		if sa != sb {
			return cmpInt(int64(sa), int64(sb))
		}
		return bytes.Compare(da, db)
	case 35:
		oa, ob := a.ObjectID(), b.ObjectID()
		return bytes.Compare(oa[:], ob[:])
	case 40:
		return cmpBool(a.Boolean(), b.Boolean())
	case 45:
		return cmpInt(a.DateTime(), b.DateTime())
	case 47:
		ta, ia := a.Timestamp()
		tb, ib := b.Timestamp()
		if ta != tb {
			return cmpInt(int64(ta), int64(tb))
		}
		return cmpInt(int64(ia), int64(ib))
	case 50:
		pa, oa := a.Regex()
		pb, ob := b.Regex()
		if c := strings.Compare(pa, pb); c != 0 {
			return c
		}
		return strings.Compare(oa, ob)
	case 55:
		na, oa := a.DBPointer()
		nb, ob := b.DBPointer()
		if c := strings.Compare(na, nb); c != 0 {
			return c
		}
		return bytes.Compare(oa[:], ob[:])
	case 60:
		return bytes.Compare(stringBytes(a), stringBytes(b))
	case 65:
		ca, sa, okA := a.CodeWithScopeOK()
		cb, sb, okB := b.CodeWithScopeOK()
		if !okA || !okB { // malformed: order by bytes rather than panic
			return bytes.Compare(a.Data, b.Data)
		}
		if c := strings.Compare(ca, cb); c != 0 {
			return c
		}
		return compareDocs(sa, sb, true, nil)
	}
	return bytes.Compare(a.Data, b.Data)
}

// binaryParts returns a BinData value's subtype and payload as MongoDB
// orders them: by the length in the value's header, then subtype, then
// bytes. For the old binary subtype 2 the payload therefore keeps its inner
// length prefix (bsoncore's Binary strips it).
func binaryParts(v bsoncore.Value) (byte, []byte) {
	if len(v.Data) < 5 {
		return 0, nil
	}
	data := v.Data[5:]
	if n := binary.LittleEndian.Uint32(v.Data); uint64(n) < uint64(len(data)) {
		data = data[:n]
	}
	return v.Data[4], data
}

// EqualWith reports whether CompareWith(a, b, coll) == 0.
func EqualWith(a, b bsoncore.Value, coll *Collator) bool { return CompareWith(a, b, coll) == 0 }

// Equal reports whether Compare(a, b) == 0.
func Equal(a, b bsoncore.Value) bool { return Compare(a, b) == 0 }

// stringBytes returns the bytes of a string, symbol or JavaScript value
// without copying them (the length prefix and terminating zero removed).
func stringBytes(v bsoncore.Value) []byte {
	if len(v.Data) < 5 {
		return nil
	}
	n := binary.LittleEndian.Uint32(v.Data)
	if n < 1 || uint64(n) > uint64(len(v.Data)-4) {
		return nil
	}
	return v.Data[4 : 4+n-1]
}

// Elements iterates over the elements of a BSON document or array
// without allocating: Next returns false at the end (or on malformed
// input).
type Elements struct{ rem []byte }

// ElementsOf iterates over the elements of the document or array doc.
func ElementsOf(doc []byte) Elements {
	if len(doc) < 5 {
		return Elements{}
	}
	return Elements{rem: doc[4 : len(doc)-1]}
}

// All yields the elements of the document or array doc in order, up to
// the end or to malformed input, without allocating.
func All(doc []byte) iter.Seq[bsoncore.Element] {
	return func(yield func(bsoncore.Element) bool) {
		it := ElementsOf(doc)
		for e, ok := it.Next(); ok && yield(e); e, ok = it.Next() {
		}
	}
}

// Next is the next element; false at the end.
func (it *Elements) Next() (bsoncore.Element, bool) {
	if len(it.rem) == 0 {
		return nil, false
	}
	e, rem, ok := bsoncore.ReadElement(it.rem)
	if !ok {
		it.rem = nil
		return nil, false
	}
	it.rem = rem
	return e, true
}

func compareDocs(a, b []byte, withNames bool, coll *Collator) int {
	ia, ib := ElementsOf(a), ElementsOf(b)
	for {
		ea, okA := ia.Next()
		eb, okB := ib.Next()
		if !okA || !okB {
			return cmpBool(okA, okB)
		}
		va, vb := ea.Value(), eb.Value()
		if ra, rb := TypeRank(va.Type), TypeRank(vb.Type); ra != rb {
			return cmpInt(int64(ra), int64(rb))
		}
		if withNames {
			if c := bytes.Compare(ea.KeyBytes(), eb.KeyBytes()); c != 0 {
				return c
			}
		}
		if c := CompareWith(va, vb, coll); c != 0 {
			return c
		}
	}
}

// compareNumbers compares exactly: two integers as integers, an integer and
// a double without losing the integer's low bits, and decimals by their
// exact values (compareWithDecimal).
func compareNumbers(a, b bsoncore.Value) int {
	if a.Type == bsoncore.TypeDecimal128 || b.Type == bsoncore.TypeDecimal128 {
		return compareWithDecimal(a, b)
	}
	ai, aInt := AsExactInt(a)
	bi, bInt := AsExactInt(b)
	if aInt && bInt {
		return cmpInt(ai, bi)
	}
	af, bf := Float(a), Float(b)
	switch {
	case math.IsNaN(af) && math.IsNaN(bf):
		return 0
	case math.IsNaN(af):
		return -1
	case math.IsNaN(bf):
		return 1
	}
	if aInt && !math.IsInf(bf, 0) {
		return -compareFloatInt(bf, ai)
	}
	if bInt && !math.IsInf(af, 0) {
		return compareFloatInt(af, bi)
	}
	switch {
	case af < bf:
		return -1
	case af > bf:
		return 1
	}
	return 0
}

// compareFloatInt compares a finite float with an integer exactly.
func compareFloatInt(f float64, i int64) int {
	if f < -9.223372036854775808e18 {
		return -1
	}
	if f >= 9.223372036854775808e18 {
		return 1
	}
	t := math.Trunc(f)
	if c := cmpInt(int64(t), i); c != 0 {
		return c
	}
	switch {
	case f > t:
		return 1
	case f < t:
		return -1
	}
	return 0
}

// AsExactInt returns v as an int64 when v is an int32 or int64.
func AsExactInt(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), true
	case bsoncore.TypeInt64:
		return v.Int64(), true
	}
	return 0, false
}

// Float converts a numeric value to float64 (0 for non-numbers).
func Float(v bsoncore.Value) float64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return float64(v.Int32())
	case bsoncore.TypeInt64:
		return float64(v.Int64())
	case bsoncore.TypeDouble:
		return v.Double()
	case bsoncore.TypeDecimal128:
		return DecimalFloat(v)
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
