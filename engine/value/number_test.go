package value

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// refNumber is an independent reference for numbers: an order class (NaN,
// -Inf, finite, +Inf) and, when finite, the exact value as a big.Rat,
// computed with math/big from the driver's view of the bits.
type refNumber struct {
	class int // 0 NaN, 1 -Inf, 2 finite, 3 +Inf
	r     *big.Rat
}

var (
	decimalLimit = new(big.Int).Exp(big.NewInt(10), big.NewInt(34), nil)
	refPow10     = map[int]*big.Int{}
)

func refPow(n int) *big.Int {
	p, ok := refPow10[n]
	if !ok {
		p = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
		refPow10[n] = p
	}
	return p
}

func refOf(v bsoncore.Value) refNumber {
	switch v.Type {
	case bsoncore.TypeInt32:
		return refNumber{2, new(big.Rat).SetInt64(int64(v.Int32()))}
	case bsoncore.TypeInt64:
		return refNumber{2, new(big.Rat).SetInt64(v.Int64())}
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return refNumber{class: 0}
		case math.IsInf(f, -1):
			return refNumber{class: 1}
		case math.IsInf(f, 1):
			return refNumber{class: 3}
		}
		return refNumber{2, new(big.Rat).SetFloat64(f)}
	}
	d := bson.NewDecimal128(v.Decimal128())
	switch {
	case d.IsNaN():
		return refNumber{class: 0}
	case d.IsInf() < 0:
		return refNumber{class: 1}
	case d.IsInf() > 0:
		return refNumber{class: 3}
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		panic(err)
	}
	// IEEE 754 (and MongoDB) read a coefficient of 10^34 or more as zero;
	// the driver does not.
	if new(big.Int).Abs(coef).Cmp(decimalLimit) >= 0 {
		return refNumber{2, new(big.Rat)}
	}
	r := new(big.Rat).SetInt(coef)
	if exp > 0 {
		r.Mul(r, new(big.Rat).SetInt(refPow(exp)))
	} else if exp < 0 {
		r.Quo(r, new(big.Rat).SetInt(refPow(-exp)))
	}
	return refNumber{2, r}
}

func refCompare(a, b bsoncore.Value) int {
	ra, rb := refOf(a), refOf(b)
	if ra.class != rb.class || ra.class != 2 {
		return sign(ra.class - rb.class)
	}
	return ra.r.Cmp(rb.r)
}

func (g *gen) number() bsoncore.Value {
	switch g.pick(4) {
	case 0:
		return i32(int32(g.int64()))
	case 1:
		return i64(g.int64())
	case 2:
		return dbl(g.float())
	}
	return g.decimal()
}

// TestNumbersAgainstReference is the central property for numbers:
// Compare and the byte order of EncodeKey both agree with exact rational
// arithmetic, for random pairs of all four types, and equal numbers encode
// identically.
func TestNumbersAgainstReference(t *testing.T) {
	g := newGen(5)
	fails, equal := 0, 0
	for i := 0; i < 100000 && fails < 10; i++ {
		a := g.number()
		b := g.mutate(a)
		if g.pick(3) == 0 {
			b = g.number()
		}
		want := refCompare(a, b)
		if want == 0 {
			equal++
		}
		if got := sign(Compare(a, b)); got != want {
			fails++
			t.Errorf("Compare(%s, %s) = %d, exact comparison says %d", show(a), show(b), got, want)
		}
		ea, eb := enc(a), enc(b)
		if got := sign(bytes.Compare(ea, eb)); got != want {
			fails++
			t.Errorf("EncodeKey order of %s and %s is %d, exact comparison says %d\n%x\n%x", show(a), show(b), got, want, ea, eb)
		}
		if want == 0 && !bytes.Equal(ea, eb) {
			fails++
			t.Errorf("equal numbers %s and %s encode differently\n%x\n%x", show(a), show(b), ea, eb)
		}
		if n, ok := KeyLen(append(ea, 0x0a, numZero)); !ok || n != len(ea) {
			fails++
			t.Errorf("KeyLen of %s's encoding %x = %d, %v", show(a), ea, n, ok)
		}
	}
	if equal < 10000 {
		t.Errorf("only %d of the pairs were equal; the generator has drifted", equal)
	}
}

// TestDecimalFloatIsNearest checks that DecimalFloat rounds once, to the
// nearest float64.
func TestDecimalFloatIsNearest(t *testing.T) {
	g := newGen(6)
	check := func(v bsoncore.Value) {
		t.Helper()
		got := DecimalFloat(v)
		var want float64
		switch ref := refOf(v); ref.class {
		case 0:
			want = math.NaN()
		case 1:
			want = math.Inf(-1)
		case 3:
			want = math.Inf(1)
		default:
			want, _ = ref.r.Float64()
		}
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) && !(got == 0 && want == 0) {
			t.Errorf("DecimalFloat(%s) = %v (%x), nearest float64 is %v (%x)", show(v), got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for _, s := range specialDecimals {
		check(dec(s))
	}
	// Short coefficients with negative exponents are where rounding twice
	// (to an intermediate precision, then to 53 bits) goes wrong.
	for i := 0; i < 20000; i++ {
		check(dec(strconv.Itoa(1+g.pick(99999)) + "E-" + strconv.Itoa(1+g.pick(40))))
		check(g.decimal())
	}
}

// fuzzNumber makes a number of any of the four types from raw bits.
func fuzzNumber(typ byte, hi, lo uint64) bsoncore.Value {
	switch typ % 4 {
	case 0:
		return i32(int32(hi))
	case 1:
		return i64(int64(hi))
	case 2:
		return dbl(math.Float64frombits(hi))
	}
	return decBits(hi, lo)
}

// FuzzEncodeKeyOrder: for any two numbers, Compare, the byte order of
// their encodings and exact arithmetic agree, equal numbers encode alike
// and KeyLen finds where each encoding ends. The same two numbers behind
// a string of pad bytes, in an array, land before, across or after the
// cut of long encodings: their keys keep the order of Compare unless both
// are cut with one prefix, and then are equal exactly when the numbers are
// (checkKeyOrder).
func FuzzEncodeKeyOrder(f *testing.F) {
	seed := func(a, b bsoncore.Value) {
		bits := func(v bsoncore.Value) (byte, uint64, uint64) {
			switch v.Type {
			case bsoncore.TypeInt32:
				return 0, uint64(v.Int32()), 0
			case bsoncore.TypeInt64:
				return 1, uint64(v.Int64()), 0
			case bsoncore.TypeDouble:
				return 2, math.Float64bits(v.Double()), 0
			}
			h, l := v.Decimal128()
			return 3, h, l
		}
		ta, ha, la := bits(a)
		tb, hb, lb := bits(b)
		for _, pad := range []uint16{0, cutPrefixLen - 12, cutPrefixLen - 4} {
			f.Add(ta, ha, la, tb, hb, lb, pad)
		}
	}
	seed(dec("0.1"), dbl(0.1))
	seed(dec("9007199254740993"), i64(1<<53+1))
	seed(dec("1E-6176"), dbl(math.SmallestNonzeroFloat64))
	seed(dec("-9.999999999999999999999999999999999E+6144"), dbl(math.Inf(-1)))
	seed(dec("NaN"), dbl(math.NaN()))
	seed(i32(-1), dec("-1.00"))
	f.Fuzz(func(t *testing.T, ta byte, ha, la uint64, tb byte, hb, lb uint64, pad uint16) {
		a, b := fuzzNumber(ta, ha, la), fuzzNumber(tb, hb, lb)
		want := refCompare(a, b)
		if got := sign(Compare(a, b)); got != want {
			t.Fatalf("Compare(%s, %s) = %d, exact comparison says %d", show(a), show(b), got, want)
		}
		ea, eb := enc(a), enc(b)
		if got := sign(bytes.Compare(ea, eb)); got != want {
			t.Fatalf("EncodeKey order of %s and %s is %d, exact comparison says %d", show(a), show(b), got, want)
		}
		if want == 0 && !bytes.Equal(ea, eb) {
			t.Fatalf("equal numbers %s and %s encode differently: %x, %x", show(a), show(b), ea, eb)
		}
		if n, ok := KeyLen(append(ea, eb...)); !ok || n != len(ea) {
			t.Fatalf("KeyLen(%x + %x) = %d, %v", ea, eb, n, ok)
		}
		// Most pads put the numbers near the cut (the string's encoding
		// and the array's bytes take 5 more), the rest anywhere.
		n := int(pad)
		if pad&1 == 0 {
			n = cutPrefixLen - 40 + int(pad>>1)%48
		}
		pa, pb := padded(n, a), padded(n, b)
		if err := checkKeyOrder(pa, pb); err != nil {
			t.Fatalf("%s and %s behind %d bytes: %v", show(a), show(b), n, err)
		}
		if k, ok := KeyLen(append(enc(pa), eb...)); !ok || k != len(enc(pa)) {
			t.Fatalf("KeyLen of %s behind %d bytes = %d, %v", show(a), n, k, ok)
		}
	})
}

// TestDoubleKeyAgainstExpansion checks doubleKey's shortcuts (128-bit and
// multi-word arithmetic, the sticky digit) against the double's whole
// exact expansion, printed by math/big.
func TestDoubleKeyAgainstExpansion(t *testing.T) {
	g := newGen(7)
	check := func(f float64) {
		t.Helper()
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			return
		}
		// 800 digits after the point hold every double's expansion.
		s := new(big.Float).SetFloat64(math.Abs(f)).Text('e', 800)
		mant, exp, _ := strings.Cut(s, "e")
		e, err := strconv.Atoi(exp)
		if err != nil {
			t.Fatal(err)
		}
		digits := strings.Replace(mant, ".", "", 1)
		want := digitsKey(f < 0, []byte(digits), e+1-len(digits), false)
		var buf [48]byte
		got := doubleKey(f, buf[:0])
		if got.class != want.class || got.exp != want.exp || !bytes.Equal(got.digits, want.digits) {
			t.Errorf("doubleKey(%v) = %d %d %s, want %d %d %s", f, got.class, got.exp, got.digits, want.class, want.exp, want.digits)
		}
	}
	for _, f := range specialFloats {
		check(f)
	}
	for _, f := range []float64{0x1.fd33e0733a35dp-112, 0x1.031875f8654a1p-751, 0x1.68e7d29f59ae4p+213, 0x1p-1074, 0x1p-1022, 0x1.fffffffffffffp+1023, 0x1p+64, 0x1p+127, 0x1p+128, 0x1.fffffffffffffp+127} {
		check(f)
		check(-f)
	}
	for i := 0; i < 10000; i++ {
		check(g.float())
		check(math.Float64frombits(g.r.Uint64()))
		check(float64(g.r.Int64()) / float64(uint64(1)<<g.pick(64)))
	}
}

// TestAppendNumberShortcuts checks appendNumber's shortcuts (integers,
// short doubles and decimals) against the general path through numKeys.
func TestAppendNumberShortcuts(t *testing.T) {
	g := newGen(8)
	check := func(v bsoncore.Value) {
		t.Helper()
		var buf [48]byte
		want := appendNumKey(nil, numKeyOf(v, buf[:0]))
		if got := appendNumber(nil, v); !bytes.Equal(got, want) {
			t.Errorf("appendNumber(%s) = %x, want %x", show(v), got, want)
		}
	}
	for p := int64(1); p < math.MaxInt64/10; p *= 10 {
		for _, i := range []int64{p - 1, p, p + 1, 2 * p, 99 * p} {
			check(i64(i))
			check(i64(-i))
			check(dbl(float64(i) / 1024))
			check(dec(strconv.FormatInt(i, 10) + "E-3"))
		}
	}
	for _, i := range specialInt64s {
		check(i64(i))
	}
	for _, f := range specialFloats {
		check(dbl(f))
	}
	for i := 0; i < 20000; i++ {
		check(i64(g.int64()))
		check(i64(int64(g.r.Uint64()) >> g.pick(64)))
		check(dbl(g.float()))
		check(dbl(float64(int64(g.r.Uint64())>>g.pick(64)) / float64(uint64(1)<<g.pick(64))))
		check(g.decimal())
	}
}
