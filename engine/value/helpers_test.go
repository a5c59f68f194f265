package value

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Constructors for test values.

func i32(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

func i64(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

func dbl(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

func dec(s string) bsoncore.Value {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(fmt.Sprintf("decimal %q: %v", s, err))
	}
	h, l := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

func str(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

func sym(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeSymbol, Data: bsoncore.AppendSymbol(nil, s)}
}

func js(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeJavaScript, Data: bsoncore.AppendJavaScript(nil, s)}
}

func bin(sub byte, b ...byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, sub, b)}
}

func oid(last byte) bsoncore.Value {
	var o bson.ObjectID
	o[11] = last
	return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: o[:]}
}

func boolean(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

func date(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

func ts(t, i uint32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, t, i)}
}

func regex(p, o string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, p, o)}
}

func dbptr(ns string, last byte) bsoncore.Value {
	var o bson.ObjectID
	o[11] = last
	return bsoncore.Value{Type: bsoncore.TypeDBPointer, Data: bsoncore.AppendDBPointer(nil, ns, o)}
}

func cws(code string, scope bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeCodeWithScope, Data: bsoncore.AppendCodeWithScope(nil, code, scope.Data)}
}

var (
	null      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefined = bsoncore.Value{Type: bsoncore.TypeUndefined}
	minKey    = bsoncore.Value{Type: bsoncore.TypeMinKey}
	maxKey    = bsoncore.Value{Type: bsoncore.TypeMaxKey}
)

// doc builds a document from alternating keys and values.
func doc(kv ...any) bsoncore.Value {
	idx, b := bsoncore.AppendDocumentStart(nil)
	for i := 0; i < len(kv); i += 2 {
		b = bsoncore.AppendValueElement(b, kv[i].(string), kv[i+1].(bsoncore.Value))
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}
}

func arr(vs ...bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil, vs...)}
}

func enc(v bsoncore.Value) []byte { return EncodeKey(nil, v) }

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// gen makes random BSON values of every type. Its alphabets are small on
// purpose, so that equal and nearly equal values (1 and 1.0, "a" and
// "a\x00", {a: 1} and {a: 1.0}) turn up often.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) pick(n int) int { return g.r.IntN(n) }

var (
	specialInt64s = []int64{
		0, 1, -1, 2, 42, -42,
		1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<53 + 2, 1<<53 + 3, -(1 << 53), -(1<<53 + 1),
		1<<62 + 1, math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 511, math.MaxInt64 - 512, math.MaxInt64 - 1023,
		math.MinInt64, math.MinInt64 + 1, math.MinInt64 + 512, math.MinInt64 + 1025,
		math.MaxInt32, math.MinInt32,
	}
	specialFloats = []float64{
		0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 1.5, 2, 42, -42.25,
		math.Inf(1), math.Inf(-1), math.NaN(), -math.NaN(), math.Float64frombits(0x7ff8000000000001),
		1 << 53, 1<<53 + 2, -(1 << 53), 1 << 63, -(1 << 63), 1<<63 - 1024, 1 << 64,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		0.1, 1e300, -1e-300,
	}
	specialDecimals = []string{
		"0", "-0", "1", "1.0", "1.00", "1E0", "-1", "0.5", "1.5", "42", "0.1", "-0.1",
		"NaN", "-NaN", "Infinity", "-Infinity",
		"9007199254740992", "9007199254740993", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "1E400", "-1E400", "1E-400", "1E6144", "1E-6176",
		"1234567890123456789012345678901234", "0.1000000000000000055511151231257827",
	}
	strAtoms = []string{"", "a", "b", "\x00", "\x01", "\xff", "ab", "é"}
	keyAtoms = []string{"a", "b", "", "a\x01", "0", "1", "ab"} // cstrings: no zero bytes
)

func (g *gen) str() string {
	s := ""
	for n := g.pick(4); n > 0; n-- {
		s += strAtoms[g.pick(len(strAtoms))]
	}
	return s
}

func (g *gen) cstr() string {
	s := ""
	for n := g.pick(3); n > 0; n-- {
		s += keyAtoms[g.pick(len(keyAtoms))]
	}
	return s
}

func (g *gen) int64() int64 {
	switch g.pick(3) {
	case 0:
		return specialInt64s[g.pick(len(specialInt64s))]
	case 1:
		return int64(g.pick(7)) - 3
	}
	return int64(g.r.Uint64())
}

func (g *gen) float() float64 {
	switch g.pick(4) {
	case 0:
		return specialFloats[g.pick(len(specialFloats))]
	case 1:
		return float64(g.pick(13)-6) / 2
	case 2:
		return float64(g.int64())
	}
	return math.Float64frombits(g.r.Uint64()) // anything, NaNs included
}

func (g *gen) decimal() bsoncore.Value {
	switch g.pick(6) {
	case 0:
		return dec(specialDecimals[g.pick(len(specialDecimals))])
	case 1:
		return dec(fmt.Sprintf("%dE%d", g.pick(2001)-1000, g.pick(9)-4))
	case 2:
		// Any bits: NaNs and infinities with payloads, non-canonical
		// coefficients (which mean zero), every exponent.
		return decBits(g.r.Uint64(), g.r.Uint64())
	case 3:
		// Near a double: its shortest form, or its exact expansion cut
		// to at most 34 digits.
		f := g.float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dec(fmt.Sprint(f))
		}
		if g.pick(2) == 0 {
			return dec(strconv.FormatFloat(f, 'e', -1, 64))
		}
		return dec(strconv.FormatFloat(f, 'e', g.pick(34), 64))
	}
	// A random coefficient of up to 34 digits and a random exponent,
	// sometimes anywhere in decimal128's range.
	digits := 1 + g.pick(34)
	s := ""
	if g.pick(2) == 0 {
		s = "-"
	}
	for i := 0; i < digits; i++ {
		s += string(rune('0' + g.pick(10)))
	}
	exp := g.pick(700) - 350
	if g.pick(4) == 0 {
		exp = g.pick(6112+6176) - 6176
		if exp > 6111-digits+1 {
			exp = 6111 - digits + 1
		}
	}
	return dec(fmt.Sprintf("%sE%d", s, exp))
}

// value returns a random value; depth bounds nesting.
func (g *gen) value(depth int) bsoncore.Value {
	kinds := 22
	if depth <= 0 {
		kinds = 19 // no documents, arrays or code with scope
	}
	switch g.pick(kinds) {
	case 0:
		return i32(int32(g.int64()))
	case 1:
		return i64(g.int64())
	case 2:
		return dbl(g.float())
	case 3:
		return g.decimal()
	case 4:
		return str(g.str())
	case 5:
		return sym(g.str())
	case 6:
		sub := []byte{0, 1, 2, 4, 5, 0x80, 0xff}[g.pick(7)]
		b := make([]byte, g.pick(6))
		for i := range b {
			b[i] = byte(g.pick(3))
		}
		return bin(sub, b...)
	case 7:
		return oid(byte(g.pick(3)))
	case 8:
		return boolean(g.pick(2) == 0)
	case 9:
		return date([]int64{0, 1, -1, math.MinInt64, math.MaxInt64, 1700000000000}[g.pick(6)])
	case 10:
		return ts([]uint32{0, 1, 1 << 31, math.MaxUint32}[g.pick(4)], uint32(g.pick(3)))
	case 11:
		return null
	case 12:
		return undefined
	case 13:
		return minKey
	case 14:
		return maxKey
	case 15:
		return regex(g.cstr(), []string{"", "i", "im", "s"}[g.pick(4)])
	case 16:
		return dbptr(g.cstr(), byte(g.pick(2)))
	case 17:
		return js(g.str())
	case 18:
		return i32(int32(g.pick(5)) - 2)
	case 19:
		var kv []any
		for n := g.pick(4); n > 0; n-- {
			kv = append(kv, g.cstr(), g.value(depth-1))
		}
		return doc(kv...)
	case 20:
		var vs []bsoncore.Value
		for n := g.pick(4); n > 0; n-- {
			vs = append(vs, g.value(depth-1))
		}
		return arr(vs...)
	}
	var kv []any
	for n := g.pick(3); n > 0; n-- {
		kv = append(kv, g.cstr(), g.value(depth-1))
	}
	return cws(g.cstr(), doc(kv...))
}

// mutate returns a value close to v (same type, or a numerically equal
// number of another type), so that random pairs are often equal or adjacent.
func (g *gen) mutate(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeInt32:
		switch g.pick(3) {
		case 0:
			return i64(int64(v.Int32()))
		case 1:
			return dbl(float64(v.Int32()))
		}
		return dec(fmt.Sprint(v.Int32()))
	case bsoncore.TypeInt64:
		switch g.pick(3) {
		case 0:
			return dbl(float64(v.Int64()))
		case 1:
			return i64(v.Int64() + int64(g.pick(3)) - 1)
		}
		return dec(fmt.Sprint(v.Int64()))
	case bsoncore.TypeDouble:
		f := v.Double()
		switch g.pick(3) {
		case 0:
			if f == math.Trunc(f) && math.Abs(f) < 1<<62 {
				return i64(int64(f))
			}
		case 1:
			// The decimal of f's exact expansion when it has at most 34
			// digits (integers, halves, ...), else close to it.
			if d, err := bson.ParseDecimal128(strconv.FormatFloat(f, 'e', 33, 64)); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				h, l := d.GetBytes()
				return decBits(h, l)
			}
		}
		return dbl(math.Nextafter(f, math.Inf(1-2*g.pick(2))))
	case bsoncore.TypeDecimal128:
		return g.mutateDecimal(v)
	case bsoncore.TypeString:
		return sym(v.StringValue())
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		vals, _ := bsoncore.Document(v.Data).Values()
		if len(vals) == 0 {
			return v
		}
		elems, _ := bsoncore.Document(v.Data).Elements()
		i := g.pick(len(vals))
		vals[i] = g.mutate(vals[i])
		if v.Type == bsoncore.TypeArray {
			return arr(vals...)
		}
		var kv []any
		for j, e := range elems {
			kv = append(kv, e.Key(), vals[j])
		}
		return doc(kv...)
	}
	return g.value(1)
}

// decBits is the decimal128 with the given bits (for non-canonical ones,
// which ParseDecimal128 never makes).
func decBits(hi, lo uint64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
}

// mutateDecimal returns a number equal to or next to decimal v: its
// nearest double, the same value with another exponent (1.5 and 1.50), a
// neighbour in the last digit, or the int64 it equals.
func (g *gen) mutateDecimal(v bsoncore.Value) bsoncore.Value {
	d := bson.NewDecimal128(v.Decimal128())
	coef, exp, err := d.BigInt()
	if err != nil || new(big.Int).Abs(coef).Cmp(decimalLimit) >= 0 {
		return dbl(DecimalFloat(v))
	}
	switch g.pick(4) {
	case 0:
		return dbl(DecimalFloat(v))
	case 1:
		if x, ok := bson.ParseDecimal128FromBigInt(new(big.Int).Mul(coef, big.NewInt(10)), exp-1); ok {
			h, l := x.GetBytes()
			return decBits(h, l)
		}
		if q, r := new(big.Int).QuoRem(coef, big.NewInt(10), new(big.Int)); r.Sign() == 0 {
			if x, ok := bson.ParseDecimal128FromBigInt(q, exp+1); ok {
				h, l := x.GetBytes()
				return decBits(h, l)
			}
		}
	case 2:
		if x, ok := bson.ParseDecimal128FromBigInt(new(big.Int).Add(coef, big.NewInt(int64(g.pick(3)-1))), exp); ok {
			h, l := x.GetBytes()
			return decBits(h, l)
		}
	case 3:
		if r := refOf(v); r.class == 2 && r.r.IsInt() && r.r.Num().IsInt64() {
			return i64(r.r.Num().Int64())
		}
	}
	return dbl(DecimalFloat(v))
}
