package update

import (
	"math"
	"math/bits"

	"github.com/parsecdb/parsec/engine/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func isNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

func int32Value(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

func int64Value(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

func doubleValue(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

func asInt64(v bsoncore.Value) int64 {
	if v.Type == bsoncore.TypeInt32 {
		return int64(v.Int32())
	}
	return v.Int64()
}

func asFloat(v bsoncore.Value) float64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return float64(v.Int32())
	case bsoncore.TypeInt64:
		return float64(v.Int64())
	case bsoncore.TypeDouble:
		return v.Double()
	}
	return math.NaN()
}

// add and mul follow MongoDB's numeric promotion: decimal if either is
// decimal, else double if either is double, else long if either is long,
// else int, widened to long when an int result overflows. A long result
// that overflows has no value (ok false): MongoDB refuses the update.
func add(a, b bsoncore.Value) (bsoncore.Value, bool) {
	switch {
	case a.Type == bsoncore.TypeDecimal128 || b.Type == bsoncore.TypeDecimal128:
		return value.AddDecimal(value.DecimalOf(a), value.DecimalOf(b)).Value(), true
	case a.Type == bsoncore.TypeDouble || b.Type == bsoncore.TypeDouble:
		return doubleValue(asFloat(a) + asFloat(b)), true
	case a.Type == bsoncore.TypeInt64 || b.Type == bsoncore.TypeInt64:
		x, y := asInt64(a), asInt64(b)
		s := x + y
		if (x >= 0) == (y >= 0) && (s >= 0) != (x >= 0) {
			return bsoncore.Value{}, false
		}
		return int64Value(s), true
	}
	s := int64(a.Int32()) + int64(b.Int32())
	if s >= math.MinInt32 && s <= math.MaxInt32 {
		return int32Value(int32(s)), true
	}
	return int64Value(s), true
}

func mul(a, b bsoncore.Value) (bsoncore.Value, bool) {
	switch {
	case a.Type == bsoncore.TypeDecimal128 || b.Type == bsoncore.TypeDecimal128:
		return value.MulDecimal(value.DecimalOf(a), value.DecimalOf(b)).Value(), true
	case a.Type == bsoncore.TypeDouble || b.Type == bsoncore.TypeDouble:
		return doubleValue(asFloat(a) * asFloat(b)), true
	case a.Type == bsoncore.TypeInt64 || b.Type == bsoncore.TypeInt64:
		p, ok := mulInt64(asInt64(a), asInt64(b))
		if !ok {
			return bsoncore.Value{}, false
		}
		return int64Value(p), true
	}
	p := int64(a.Int32()) * int64(b.Int32())
	if p >= math.MinInt32 && p <= math.MaxInt32 {
		return int32Value(int32(p)), true
	}
	return int64Value(p), true
}

func mulInt64(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	neg := (x < 0) != (y < 0)
	ux, uy := absU(x), absU(y)
	hi, lo := bits.Mul64(ux, uy)
	if hi != 0 {
		return 0, false
	}
	if neg {
		if lo > 1<<63 {
			return 0, false
		}
		return int64(-lo), true //nolint:gosec // checked above
	}
	if lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-x) // -MinInt64 wraps to itself, whose uint64 is 2^63
	}
	return uint64(x)
}

// zeroLike is 0 of v's numeric type ($mul on a missing field).
func zeroLike(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeInt64:
		return int64Value(0)
	case bsoncore.TypeDouble:
		return doubleValue(0)
	case bsoncore.TypeDecimal128:
		return value.Decimal{}.Value()
	}
	return int32Value(0)
}

// debugNumber renders a number as MongoDB's SafeNum does in messages.
func debugNumber(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt32:
		return "(NumberInt)" + value.Render(v)
	case bsoncore.TypeInt64:
		return "(NumberLong)" + value.Render(v)
	case bsoncore.TypeDouble:
		return "(NumberDouble)" + value.Render(v)
	case bsoncore.TypeDecimal128:
		return "(NumberDecimal)" + value.Render(v)
	}
	return "(EOO)"
}
