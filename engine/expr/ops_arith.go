package expr

import (
	"math"
	"math/big"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// numKind orders numeric types by width: arithmetic results take the
// widest operand's type.
type numKind int

const (
	kInt32 numKind = iota
	kInt64
	kDouble
	kDecimal
)

func kindOf(v bsoncore.Value) numKind {
	switch v.Type {
	case bsoncore.TypeInt32:
		return kInt32
	case bsoncore.TypeInt64:
		return kInt64
	case bsoncore.TypeDouble:
		return kDouble
	}
	return kDecimal
}

func asInt(v bsoncore.Value) int64 {
	i, _ := value.AsExactInt(v)
	return i
}

// decimalPrec is the precision of decimal128 arithmetic done in big.Float:
// enough that rounding to 34 digits afterwards is right.
const decimalPrec = 256

// bigOf converts a finite number to a big.Float; ok is false for NaN and
// infinities.
func bigOf(v bsoncore.Value) (*big.Float, bool) {
	f := new(big.Float).SetPrec(decimalPrec)
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return f.SetInt64(asInt(v)), true
	case bsoncore.TypeDouble:
		d := v.Double()
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return nil, false
		}
		return f.SetFloat64(d), true
	}
	d := bson.NewDecimal128(v.Decimal128())
	bi, exp, err := d.BigInt()
	if err != nil {
		return nil, false
	}
	f.SetInt(bi)
	if exp != 0 {
		p := new(big.Float).SetPrec(decimalPrec).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil))
		if exp > 0 {
			f.Mul(f, p)
		} else {
			f.Quo(f, p)
		}
	}
	return f, true
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// decimalOf rounds a big.Float to a decimal128 value.
func decimalOf(f *big.Float) bsoncore.Value {
	d, err := bson.ParseDecimal128(f.Text('e', 33))
	if err != nil {
		d, _ = bson.ParseDecimal128("NaN")
	}
	return Decimal(d)
}

// decimalFromFloat converts a float64 result to decimal128 (15
// significant digits, as MongoDB converts doubles).
func decimalFromFloat(f float64) bsoncore.Value { return value.DecimalOfFloat(f).Value() }

// toDecimal converts any number to decimal128.
func toDecimal(v bsoncore.Value) bsoncore.Value {
	if v.Type == bsoncore.TypeDecimal128 {
		return v
	}
	return value.DecimalOf(v).Value()
}

// arith applies a binary operation to two numbers, widening as MongoDB
// does: int32 overflow gives int64, int64 overflow gives double, any
// double gives double, any decimal gives decimal.
func arith(a, b bsoncore.Value, ints func(x, y int64) (int64, bool), floats func(x, y float64) float64, decs func(x, y value.Decimal) value.Decimal) bsoncore.Value {
	k := max(kindOf(a), kindOf(b))
	switch k {
	case kInt32, kInt64:
		if r, ok := ints(asInt(a), asInt(b)); ok {
			if k == kInt32 && r == int64(int32(r)) {
				return Int32(int32(r))
			}
			return Int64(r)
		}
		return Double(floats(value.Float(a), value.Float(b)))
	case kDouble:
		return Double(floats(value.Float(a), value.Float(b)))
	}
	x, y := value.DecimalOf(a), value.DecimalOf(b)
	if x.Special() || y.Special() {
		return decimalFromFloat(floats(value.Float(a), value.Float(b)))
	}
	return decs(x, y).Value()
}

func addInts(x, y int64) (int64, bool) {
	r := x + y
	if (x >= 0) == (y >= 0) && (r >= 0) != (x >= 0) {
		return 0, false
	}
	return r, true
}

func subInts(x, y int64) (int64, bool) {
	r := x - y
	return r, !((x >= 0) != (y >= 0) && (r >= 0) != (x >= 0))
}

func mulInts(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	r := x * y
	if r/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
		return 0, false
	}
	return r, true
}

func addFn(name string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	sum := Int32(0)
	var date *int64
	for _, a := range args {
		switch {
		case isNullish(a):
			return Null, nil
		case a.Type == bsoncore.TypeDateTime:
			if date != nil {
				return Missing, langerr.New(ErrAddTwoDates, "only one date allowed in an $add expression")
			}
			ms := a.DateTime()
			date = &ms
		case isNumber(a):
			sum = arith(sum, a, addInts, func(x, y float64) float64 { return x + y }, value.AddDecimal)
		default:
			return Missing, langerr.TypeMismatch("$add only supports numeric or date types, not %s", TypeName(a))
		}
	}
	if date != nil {
		return DateTime(*date + roundToInt64(value.Float(sum))), nil
	}
	return sum, nil
}

func roundToInt64(f float64) int64 {
	if math.IsNaN(f) {
		return 0
	}
	return truncInt64(math.Round(f))
}

func truncInt64(f float64) int64 {
	switch {
	case f >= 9.223372036854775807e18:
		return math.MaxInt64
	case f <= -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(f)
}

func multiplyFn(_ string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	prod := Int32(1)
	for _, a := range args {
		switch {
		case isNullish(a):
			return Null, nil
		case isNumber(a):
			prod = arith(prod, a, mulInts, func(x, y float64) float64 { return x * y }, value.MulDecimal)
		default:
			return Missing, langerr.TypeMismatch("$multiply only supports numeric types, not %s", TypeName(a))
		}
	}
	return prod, nil
}

func subtractFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case isNullish(x) || isNullish(y):
		return Null, nil
	case isNumber(x) && isNumber(y):
		return arith(x, y, subInts, func(p, q float64) float64 { return p - q }, func(p, q value.Decimal) value.Decimal { return value.AddDecimal(p, value.NegDecimal(q)) }), nil
	case x.Type == bsoncore.TypeDateTime && y.Type == bsoncore.TypeDateTime:
		return Int64(x.DateTime() - y.DateTime()), nil
	case x.Type == bsoncore.TypeDateTime && isNumber(y):
		return DateTime(x.DateTime() - roundToInt64(value.Float(y))), nil
	case x.Type == bsoncore.TypeDateTime:
		return Missing, langerr.TypeMismatch("can't $subtract %s from Date", TypeName(y))
	}
	return Missing, langerr.TypeMismatch("can't $subtract %s from %s", TypeName(y), TypeName(x))
}

func numericArgs(name string, a []bsoncore.Value) (null bool, err error) {
	for _, v := range a {
		if isNullish(v) {
			null = true
		} else if !isNumber(v) {
			return false, langerr.TypeMismatch("%s only supports numeric types, not %s", name, TypeName(v))
		}
	}
	return null, nil
}

func isZero(v bsoncore.Value) bool {
	if v.Type == bsoncore.TypeDecimal128 {
		b, ok := bigOf(v)
		return ok && b.Sign() == 0
	}
	return value.Float(v) == 0
}

func divideFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if null, err := numericArgs(name, a); err != nil || null {
		if err != nil {
			return Missing, langerr.TypeMismatch("$divide only supports numeric types, not %s and %s", TypeName(a[0]), TypeName(a[1]))
		}
		return Null, nil
	}
	if isZero(a[1]) {
		return Missing, langerr.New(ErrDivideByZero, "can't $divide by zero")
	}
	if kindOf(a[0]) == kDecimal || kindOf(a[1]) == kDecimal {
		return value.DivDecimal(value.DecimalOf(a[0]), value.DecimalOf(a[1])).Value(), nil
	}
	return Double(value.Float(a[0]) / value.Float(a[1])), nil
}

func modFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if null, err := numericArgs(name, a); err != nil || null {
		if err != nil {
			return Missing, langerr.New(ErrModType, "$mod only supports numeric types, not %s and %s", TypeName(a[0]), TypeName(a[1]))
		}
		return Null, nil
	}
	if isZero(a[1]) {
		if kindOf(a[0]) == kDecimal || kindOf(a[1]) == kDecimal {
			return Missing, langerr.New(ErrModByZeroDecimal, "can't $mod by zero")
		}
		return Missing, langerr.New(ErrModByZero, "can't $mod by zero")
	}
	k := max(kindOf(a[0]), kindOf(a[1]))
	switch k {
	case kInt32, kInt64:
		x, y := asInt(a[0]), asInt(a[1])
		r := int64(0)
		if y != -1 {
			r = x % y
		}
		if k == kInt32 {
			return Int32(int32(r)), nil
		}
		return Int64(r), nil
	case kDouble:
		return Double(math.Mod(value.Float(a[0]), value.Float(a[1]))), nil
	}
	return toDecimal(Double(math.Mod(value.Float(a[0]), value.Float(a[1])))), nil
}

// unaryMath applies a float function, keeping integers for functions
// that map integers to themselves (ints non-nil).
func unaryMath(name string, v bsoncore.Value, f func(float64) float64, ints func(int64) (int64, bool)) (bsoncore.Value, error) {
	switch {
	case isNullish(v):
		return Null, nil
	case !isNumber(v):
		return Missing, langerr.New(ErrNotNumeric, "%s only supports numeric types, not %s", name, TypeName(v))
	}
	switch kindOf(v) {
	case kInt32, kInt64:
		if ints != nil {
			if r, ok := ints(asInt(v)); ok {
				if v.Type == bsoncore.TypeInt32 && r == int64(int32(r)) {
					return Int32(int32(r)), nil
				}
				return Int64(r), nil
			}
		}
		return Double(f(value.Float(v))), nil
	case kDouble:
		return Double(f(v.Double())), nil
	}
	return toDecimal(Double(f(value.Float(v)))), nil
}

func absFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if a[0].Type == bsoncore.TypeInt64 && a[0].Int64() == math.MinInt64 {
		return Missing, langerr.New(ErrAbsOverflow, "can't take $abs of long long min")
	}
	if a[0].Type == bsoncore.TypeDecimal128 {
		if d := value.DecimalOf(a[0]); !d.Special() {
			d.Coef.Abs(&d.Coef)
			return d.Value(), nil
		}
	}
	return unaryMath(name, a[0], math.Abs, func(i int64) (int64, bool) {
		if i < 0 {
			return -i, true
		}
		return i, true
	})
}

func identity(i int64) (int64, bool) { return i, true }

func ceilFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return unaryMath(name, a[0], math.Ceil, identity)
}

func floorFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return unaryMath(name, a[0], math.Floor, identity)
}

func sqrtFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNumber(a[0]) && value.Float(a[0]) < 0 {
		return Missing, langerr.New(ErrSqrtDomain, "$sqrt's argument must be greater than or equal to 0")
	}
	return unaryMath(name, a[0], math.Sqrt, nil)
}

func expFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return unaryMath(name, a[0], math.Exp, nil)
}

func lnFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNumber(a[0]) && value.Float(a[0]) <= 0 {
		return Missing, langerr.New(ErrLnDomain, "$ln's argument must be a positive number, but is %s", value.Render(a[0]))
	}
	return unaryMath(name, a[0], math.Log, nil)
}

func log10Fn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNumber(a[0]) && value.Float(a[0]) <= 0 {
		return Missing, langerr.New(ErrLog10Domain, "$log10's argument must be a positive number, but is %s", value.Render(a[0]))
	}
	return unaryMath(name, a[0], math.Log10, nil)
}

// operandPair checks the two operands of $log or $pow: null if either is
// null or missing, else each must be a number (MongoDB's own assertion
// for each, worded by firstFmt and secondFmt with the type's name).
func operandPair(a []bsoncore.Value, first error, firstFmt string, second error, secondFmt string) (null bool, err error) {
	if isNullish(a[0]) || isNullish(a[1]) {
		return true, nil
	}
	if !isNumber(a[0]) {
		return false, langerr.New(first, firstFmt, TypeName(a[0]))
	}
	if !isNumber(a[1]) {
		return false, langerr.New(second, secondFmt, TypeName(a[1]))
	}
	return false, nil
}

func logFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if null, err := operandPair(a, ErrLogArgType, "$log's argument must be numeric, not %s", ErrLogBaseType, "$log's base must be numeric, not %s"); err != nil || null {
		if err != nil {
			return Missing, err
		}
		return Null, nil
	}
	x, b := value.Float(a[0]), value.Float(a[1])
	if x <= 0 {
		return Missing, langerr.New(ErrLogDomain, "$log's argument must be a positive number, but is %s", value.Render(a[0]))
	}
	if b <= 0 || b == 1 {
		return Missing, langerr.New(ErrLogBase, "$log's base must be a positive number not equal to 1, but is %s", value.Render(a[1]))
	}
	r := math.Log(x) / math.Log(b)
	if kindOf(a[0]) == kDecimal || kindOf(a[1]) == kDecimal {
		return toDecimal(Double(r)), nil
	}
	return Double(r), nil
}

func powFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if null, err := operandPair(a, ErrPowBaseType, "$pow's base must be numeric, not %s", ErrPowExpType, "$pow's exponent must be numeric, not %s"); err != nil || null {
		if err != nil {
			return Missing, err
		}
		return Null, nil
	}
	base, exp := a[0], a[1]
	if isZero(base) && value.Float(exp) < 0 {
		return Missing, langerr.New(ErrPowZeroBase, "$pow cannot take a base of 0 and a negative exponent")
	}
	k := max(kindOf(base), kindOf(exp))
	if k <= kInt64 {
		if r, ok := intPow(asInt(base), asInt(exp)); ok {
			if k == kInt32 && r == int64(int32(r)) {
				return Int32(int32(r)), nil
			}
			return Int64(r), nil
		}
	}
	r := math.Pow(value.Float(base), value.Float(exp))
	if k == kDecimal {
		return toDecimal(Double(r)), nil
	}
	return Double(r), nil
}

// roundTo rounds (or truncates) v to place decimal places.
func roundTo(name string, a []bsoncore.Value, trunc bool) (bsoncore.Value, error) {
	// MongoDB checks the number before the place.
	v := a[0]
	if isNullish(v) {
		return Null, nil
	}
	if !isNumber(v) {
		return Missing, langerr.New(ErrRoundType, "%s only supports numeric types, not %s", name, TypeName(v))
	}
	place := int64(0)
	if len(a) == 2 {
		if isNullish(a[1]) {
			return Null, nil
		}
		if !isNumber(a[1]) {
			return Missing, langerr.TypeMismatch("%s requires \"place\" to be a numeric type, found %s", name, TypeName(a[1]))
		}
		p, ok := exactInt(a[1])
		if !ok {
			return Missing, langerr.New(ErrRoundPlaceInt, "precision argument to  %s must be a integral value", name)
		}
		if p < -20 || p > 100 {
			return Missing, langerr.New(ErrRoundPlaceRange, "cannot apply %s with precision value %d value must be in [-20, 100]", name, p)
		}
		place = p
	}
	op := func(f float64) float64 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return f
		}
		p := math.Pow(10, float64(place))
		x := f * p
		if trunc {
			x = math.Trunc(x)
		} else {
			x = math.RoundToEven(x)
		}
		return x / p
	}
	if (v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64) && place >= 0 {
		return v, nil
	}
	if v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64 {
		r := op(value.Float(v))
		if v.Type == bsoncore.TypeInt32 {
			return Int32(int32(r)), nil
		}
		return Int64(int64(r)), nil
	}
	return unaryMath(name, v, op, nil)
}

func roundFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return roundTo(name, a, false)
}

func truncFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return roundTo(name, a, true)
}

// exactInt reads a number with an integral value.
func exactInt(v bsoncore.Value) (int64, bool) {
	if i, ok := value.AsExactInt(v); ok {
		return i, true
	}
	if !isNumber(v) {
		return 0, false
	}
	f := value.Float(v)
	if f != math.Trunc(f) || math.IsInf(f, 0) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return 0, false
	}
	return int64(f), true
}

// accumulate lists the values $sum, $avg, $min and $max work on: the
// elements of a single array argument, or the arguments.
func accumulate(args []bsoncore.Value) []bsoncore.Value {
	if len(args) == 1 && args[0].Type == bsoncore.TypeArray {
		return Elements(args[0])
	}
	return args
}

func sumFn(_ string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	var s Sum
	for _, v := range accumulate(args) {
		s.Add(v)
	}
	return s.Total(), nil
}

func avgFn(_ string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	var s Sum
	for _, v := range accumulate(args) {
		s.Add(v)
	}
	return s.Average(), nil
}

func minFn(_ string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return extreme(accumulate(args), -1), nil
}

func maxFn(_ string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return extreme(accumulate(args), 1), nil
}

// extreme is the smallest (sign -1) or largest value, ignoring null and
// missing; null when there is none.
func extreme(vals []bsoncore.Value, sign int) bsoncore.Value {
	best := Null
	found := false
	for _, v := range vals {
		if isNullish(v) {
			continue
		}
		if !found || Compare(v, best)*sign > 0 {
			best, found = v, true
		}
	}
	return best
}

// intPow is b**e for integers when the result is an integer that fits
// int64 (a negative exponent only for bases 1 and -1).
func intPow(b, e int64) (int64, bool) {
	switch {
	case b == 1:
		return 1, true
	case b == -1:
		return 1 - 2*(e&1), true
	case e < 0:
		return 0, false
	case b == 0:
		if e == 0 {
			return 1, true
		}
		return 0, true
	}
	r := int64(1)
	for range e { // |b| >= 2: overflows within 63 steps
		var ok bool
		if r, ok = mulInts(r, b); !ok {
			return 0, false
		}
	}
	return r, true
}
