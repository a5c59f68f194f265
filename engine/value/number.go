package value

import (
	"bytes"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Classes of numbers, in MongoDB's order. A class is also the byte that
// follows the rank in a number's key encoding (see the package comment).
const (
	numNaN    byte = 0x01
	numNegInf byte = 0x02
	numNeg    byte = 0x03
	numZero   byte = 0x04
	numPos    byte = 0x05
	numPosInf byte = 0x06
)

// numKey is a number as keys and comparisons see it: a class and, for
// finite non-zero numbers, ±0.d1d2…dn × 10^exp with ASCII digits, d1 and
// dn not '0'. Integers and decimals are written exactly (they have at most
// 34 significant digits); a double whose exact expansion is longer keeps
// its first 34 digits and a sticky 35th digit 1 that stands for the rest.
// The package comment explains why order and equality survive that. Equal
// numbers of any types have equal numKeys, and ordering numKeys needs no
// arithmetic (cmpNumKeys).
type numKey struct {
	class  byte
	exp    int
	digits []byte
}

// keyDigits is how many significant digits a numKey keeps exactly: all of
// a decimal128's.
const keyDigits = 34

// expBias makes a number's decimal exponent, which lies in [-6175, 6145]
// (decimal128's extremes), a uint16 whose big-endian bytes sort in order.
const expBias = 0x8000

func cmpNumKeys(a, b numKey) int {
	if a.class != b.class {
		return cmpInt(int64(a.class), int64(b.class))
	}
	var c int
	switch a.class {
	case numPos:
		c = cmpMagnitude(a, b)
	case numNeg:
		c = -cmpMagnitude(a, b)
	}
	return c
}

// cmpMagnitude: a longer mantissa that starts with a shorter one is larger,
// as byte order of the digit strings has it.
func cmpMagnitude(a, b numKey) int {
	if a.exp != b.exp {
		return cmpInt(int64(a.exp), int64(b.exp))
	}
	return bytes.Compare(a.digits, b.digits)
}

// numKeyOf is a number's numKey; its digits are appended to buf, which
// should have room for 40 (then nothing is allocated, except for doubles
// of 2^128 and more).
func numKeyOf(v bsoncore.Value, buf []byte) numKey {
	switch v.Type {
	case bsoncore.TypeInt32:
		return intKey(int64(v.Int32()), buf)
	case bsoncore.TypeInt64:
		return intKey(v.Int64(), buf)
	case bsoncore.TypeDouble:
		return doubleKey(v.Double(), buf)
	case bsoncore.TypeDecimal128:
		hi, lo := v.Decimal128()
		return decimalKey(hi, lo, buf)
	}
	return numKey{class: numZero}
}

func intKey(i int64, buf []byte) numKey {
	switch {
	case i > 0:
		return digitsKey(false, appendUint(buf, uint64(i)), 0, false)
	case i < 0:
		return digitsKey(true, appendUint(buf, -uint64(i)), 0, false) // -MinInt64 is 2^63 as a uint64
	}
	return numKey{class: numZero}
}

// digitsKey is the numKey of ±D × 10^exp10, D the decimal integer whose
// digits (no leading zero) are given, plus something smaller than a unit
// of D's last digit when sticky is set. Sticky needs at least keyDigits
// digits: they must be exact up to the 34th.
func digitsKey(neg bool, digits []byte, exp10 int, sticky bool) numKey {
	k := numKey{class: numPos, exp: exp10 + len(digits)}
	if neg {
		k.class = numNeg
	}
	if len(digits) > keyDigits {
		for _, c := range digits[keyDigits:] {
			sticky = sticky || c != '0'
		}
		digits = digits[:keyDigits]
	}
	if sticky {
		k.digits = append(digits, '1')
		return k
	}
	k.digits = bytes.TrimRight(digits, "0")
	return k
}

// pow5 holds the powers of five that fit a uint64.
var pow5 = func() (p [28]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 5
	}
	return p
}()

func doubleKey(f float64, buf []byte) numKey {
	switch {
	case math.IsNaN(f):
		return numKey{class: numNaN}
	case math.IsInf(f, 1):
		return numKey{class: numPosInf}
	case math.IsInf(f, -1):
		return numKey{class: numNegInf}
	case f == 0:
		return numKey{class: numZero}
	}
	b := math.Float64bits(f)
	neg := b>>63 != 0
	m, e := b&(1<<52-1), int((b>>52)&0x7FF)
	if e == 0 {
		e = -1074 // subnormal
	} else {
		m |= 1 << 52
		e -= 1075
	}
	tz := bits.TrailingZeros64(m)
	m >>= tz
	e += tz
	switch n := bits.Len64(m) + e; {
	case e < 0:
		return fractionKey(neg, m, -e, buf)
	case n <= 64:
		return digitsKey(neg, appendUint(buf, m<<e), 0, false)
	case n <= 128 && e < 64:
		return digitsKey(neg, appendUint128(buf, m>>(64-e), m<<e), 0, false)
	case n <= 128:
		return digitsKey(neg, appendUint128(buf, m<<(e-64), 0), 0, false)
	}
	return largeKey(neg, m, e, buf)
}

// largeKey is the numKey of ±m·2^e ≥ 2^128, m odd: the digits of
// N = floor(m·2^e / 10^q) = floor((m·2^(e-q)) / 5^q), with q chosen to give
// N 35 to 38 digits, sticky when the division leaves a remainder.
func largeKey(neg bool, m uint64, e int, buf []byte) numKey {
	// m·2^e >= 2^(len(m)-1+e) >= 10^t, and q < e for every float64.
	t := int(math.Floor(float64(bits.Len64(m)-1+e) * log10of2))
	q := t - 35
	if q < 0 || q > e {
		return largeKeyBig(neg, m, e, buf)
	}
	var z [17]uint64 // m·2^(e-q), little-endian words: e <= 971 needs 12
	s := e - q
	z[s/64] = m << (s % 64)
	if s%64 != 0 {
		z[s/64+1] = m >> (64 - s%64)
	}
	n := s/64 + 2
	sticky := false
	for r := q; r > 0; {
		c := min(r, len(pow5)-1)
		r -= c
		var rem uint64
		for i := n - 1; i >= 0; i-- {
			z[i], rem = bits.Div64(rem, z[i], pow5[c])
		}
		sticky = sticky || rem != 0
		for n > 1 && z[n-1] == 0 {
			n--
		}
	}
	digits := appendUint128(buf, z[1], z[0])
	if n > 2 || sticky && len(digits) < keyDigits {
		return largeKeyBig(neg, m, e, buf)
	}
	return digitsKey(neg, digits, q, sticky)
}

// largeKeyBig is largeKey with every digit of m·2^e; like fractionKeyBig
// it is there in case the estimate of q is off.
func largeKeyBig(neg bool, m uint64, e int, buf []byte) numKey {
	x := new(big.Int).Lsh(new(big.Int).SetUint64(m), uint(e))
	return digitsKey(neg, x.Append(buf, 10), 0, false)
}

// log10of2 bounds a binary exponent's decimal one.
const log10of2 = 0.30102999566398120

// fractionKey is the numKey of ±m/2^k, m odd and k > 0: the digits of
// N = floor(m/2^k · 10^p) = (m·5^p) >> (k-p), with p chosen to give N 35
// to 38 digits (N < 2^128), or p = k when N is exact with fewer; sticky
// when the shift drops non-zero bits.
func fractionKey(neg bool, m uint64, k int, buf []byte) numKey {
	if k < len(pow5) { // m·5^k < 2^53·2^63: exact in 128 bits
		hi, lo := bits.Mul64(m, pow5[k])
		return digitsKey(neg, appendUint128(buf, hi, lo), -k, false)
	}
	// m/2^k >= 2^(len(m)-1-k) >= 10^t.
	t := int(math.Floor(float64(bits.Len64(m)-1-k) * log10of2))
	p := min(35-t, k)
	var z [16]uint64 // m·5^p, little-endian words: p <= 359 needs 14
	if p > 400 {
		return fractionKeyBig(neg, m, k, buf)
	}
	z[0] = m
	n := 1
	for q := p; q > 0; {
		f := pow5[min(q, len(pow5)-1)]
		q -= min(q, len(pow5)-1)
		var carry uint64
		for i := range n {
			hi, lo := bits.Mul64(z[i], f)
			var c uint64
			z[i], c = bits.Add64(lo, carry, 0)
			carry = hi + c
		}
		if carry != 0 {
			z[n] = carry
			n++
		}
	}
	s := k - p
	if (n-1)*64+bits.Len64(z[n-1])-s > 128 {
		return fractionKeyBig(neg, m, k, buf)
	}
	w, sh := s/64, uint(s%64)
	word := func(i int) uint64 {
		if i < n {
			return z[i]
		}
		return 0
	}
	sticky := word(w)&(1<<sh-1) != 0
	for i := 0; i < w; i++ {
		sticky = sticky || z[i] != 0
	}
	lo := word(w)>>sh | word(w+1)<<(64-sh) // a shift by 64 gives 0
	hi := word(w+1)>>sh | word(w+2)<<(64-sh)
	digits := appendUint128(buf, hi, lo)
	if sticky && len(digits) < keyDigits {
		return fractionKeyBig(neg, m, k, buf)
	}
	return digitsKey(neg, digits, -p, sticky)
}

// fractionKeyBig is fractionKey with every digit of m·5^k; it is not
// reached for float64s, and is there in case the estimate of p is off.
func fractionKeyBig(neg bool, m uint64, k int, buf []byte) numKey {
	x := new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(k)), nil)
	x.Mul(x, new(big.Int).SetUint64(m))
	return digitsKey(neg, x.Append(buf, 10), -k, false)
}

// 10^34, the least coefficient a decimal128 cannot hold, as two words.
const (
	decLimitHi = 0x1ED09BEAD87C0
	decLimitLo = 0x378D8E6400000000
)

// decimalParts splits a decimal128 (IEEE 754-2008, binary integer
// significand) into class, sign, 113-bit coefficient and exponent. As in
// MongoDB (and the standard), a coefficient of 10^34 or more is not
// canonical and means zero; so does the form with the implicit 0b100
// prefix, whose coefficients all exceed 2^113.
func decimalParts(hi, lo uint64) (class byte, neg bool, chi, clo uint64, exp int) {
	neg = hi>>63 != 0
	switch hi >> 58 & 0x1F {
	case 0x1F:
		return numNaN, neg, 0, 0, 0
	case 0x1E:
		if neg {
			return numNegInf, neg, 0, 0, 0
		}
		return numPosInf, neg, 0, 0, 0
	}
	if hi>>61&3 == 3 {
		return numZero, neg, 0, 0, int(hi>>47&0x3FFF) - 6176
	}
	exp = int(hi>>49&0x3FFF) - 6176
	chi = hi & (1<<49 - 1)
	if chi > decLimitHi || chi == decLimitHi && lo >= decLimitLo || chi == 0 && lo == 0 {
		return numZero, neg, 0, 0, exp
	}
	if neg {
		return numNeg, neg, chi, lo, exp
	}
	return numPos, neg, chi, lo, exp
}

func decimalKey(hi, lo uint64, buf []byte) numKey {
	class, neg, chi, clo, exp := decimalParts(hi, lo)
	if class != numPos && class != numNeg {
		return numKey{class: class}
	}
	return digitsKey(neg, appendUint128(buf, chi, clo), exp, false)
}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859606162636465666768697071727374757677787980818283848586878889" +
	"90919293949596979899"

// putUint writes u's decimal digits at the end of d and returns where
// they start.
func putUint(d *[20]byte, u uint64) int {
	i := len(d)
	for u >= 10000 { // four digits at a time: shorter dependency chains
		q := u / 10000
		r := u - q*10000
		a, b := 2*(r/100), 2*(r%100)
		i -= 4
		d[i], d[i+1], d[i+2], d[i+3] = digitPairs[a], digitPairs[a+1], digitPairs[b], digitPairs[b+1]
		u = q
	}
	if u >= 100 {
		q := u / 100
		r := 2 * (u - q*100)
		i -= 2
		d[i], d[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		i -= 2
		d[i], d[i+1] = digitPairs[2*u], digitPairs[2*u+1]
		return i
	}
	i--
	d[i] = byte('0' + u)
	return i
}

func appendUint(buf []byte, u uint64) []byte {
	var d [20]byte
	return append(buf, d[putUint(&d, u):]...)
}

// appendUint128 appends the decimal digits of hi·2^64 + lo.
func appendUint128(buf []byte, hi, lo uint64) []byte {
	const chunk = 1e19 // the largest power of ten below 2^64
	var low [2]uint64  // 19-digit chunks, least significant first
	n := 0
	for hi != 0 {
		var r uint64
		hi, r = hi/chunk, hi%chunk
		lo, r = bits.Div64(r, lo, chunk)
		low[n] = r
		n++
	}
	buf = appendUint(buf, lo)
	for n > 0 {
		n--
		var d [20]byte
		i := putUint(&d, low[n])
		for i > 1 {
			i--
			d[i] = '0'
		}
		buf = append(buf, d[1:]...)
	}
	return buf
}

// compareWithDecimal compares two numbers at least one of which is a
// decimal128, exactly: in 128-bit integers when the two fit there once
// scaled to a common exponent, else by their numKeys.
func compareWithDecimal(a, b bsoncore.Value) int {
	sa, sb := scaledOf(a), scaledOf(b)
	if sa.class != sb.class {
		return cmpInt(int64(sa.class), int64(sb.class))
	}
	if sa.class != numPos && sa.class != numNeg {
		return 0
	}
	if c, ok := cmpScaled(sa, sb); ok {
		if sa.class == numNeg {
			return -c
		}
		return c
	}
	var bufA, bufB [48]byte
	return cmpNumKeys(numKeyOf(a, bufA[:0]), numKeyOf(b, bufB[:0]))
}

// scaled is a number's class and magnitude (hi·2^64 + lo) · 10^exp10 ·
// 2^exp2: exp10 for decimals, exp2 for doubles, neither for integers.
type scaled struct {
	class       byte
	hi, lo      uint64
	exp10, exp2 int
}

func scaledOf(v bsoncore.Value) scaled {
	var i int64
	switch v.Type {
	case bsoncore.TypeDecimal128:
		class, _, hi, lo, exp := decimalParts(v.Decimal128())
		return scaled{class: class, hi: hi, lo: lo, exp10: exp}
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return scaled{class: numNaN}
		case math.IsInf(f, 1):
			return scaled{class: numPosInf}
		case math.IsInf(f, -1):
			return scaled{class: numNegInf}
		case f == 0:
			return scaled{class: numZero}
		}
		fr, exp := math.Frexp(math.Abs(f)) // |f| = fr·2^exp, fr in [0.5, 1)
		s := scaled{class: numPos, lo: uint64(fr * (1 << 53)), exp2: exp - 53}
		if f < 0 {
			s.class = numNeg
		}
		return s
	case bsoncore.TypeInt32:
		i = int64(v.Int32())
	case bsoncore.TypeInt64:
		i = v.Int64()
	}
	switch {
	case i > 0:
		return scaled{class: numPos, lo: uint64(i)}
	case i < 0:
		return scaled{class: numNeg, lo: -uint64(i)}
	}
	return scaled{class: numZero}
}

// cmpScaled compares the magnitudes of a and b, both non-zero, by
// multiplying each by the powers of ten and two the other has more of;
// it fails only when both products pass 2^128.
func cmpScaled(a, b scaled) (int, bool) {
	ahi, alo, aok := a.hi, a.lo, true
	bhi, blo, bok := b.hi, b.lo, true
	if d := a.exp10 - b.exp10; d > 0 {
		ahi, alo, aok = mulPow10(ahi, alo, d)
	} else if d < 0 {
		bhi, blo, bok = mulPow10(bhi, blo, -d)
	}
	if d := a.exp2 - b.exp2; d > 0 && aok {
		ahi, alo, aok = shl128(ahi, alo, d)
	} else if d < 0 && bok {
		bhi, blo, bok = shl128(bhi, blo, -d)
	}
	switch {
	case aok && bok:
		return cmpUint128(ahi, alo, bhi, blo), true
	case aok:
		return -1, true
	case bok:
		return 1, true
	}
	return 0, false
}

// mulPow10 is (hi·2^64 + lo)·10^n, or false from 2^128 on.
func mulPow10(hi, lo uint64, n int) (uint64, uint64, bool) {
	for n > 0 {
		s := min(n, len(pow10u)-1)
		n -= s
		h1, l1 := bits.Mul64(lo, pow10u[s])
		h2, l2 := bits.Mul64(hi, pow10u[s])
		var c uint64
		hi, c = bits.Add64(h1, l2, 0)
		if h2 != 0 || c != 0 {
			return 0, 0, false
		}
		lo = l1
	}
	return hi, lo, true
}

// shl128 is (hi·2^64 + lo)·2^n, or false from 2^128 on.
func shl128(hi, lo uint64, n int) (uint64, uint64, bool) {
	size := bits.Len64(lo)
	if hi != 0 {
		size = 64 + bits.Len64(hi)
	}
	switch {
	case size+n > 128:
		return 0, 0, false
	case n >= 64:
		return lo << (n - 64), 0, true
	}
	return hi<<n | lo>>(64-n), lo << n, true
}

func cmpUint128(ahi, alo, bhi, blo uint64) int {
	if ahi != bhi {
		return cmpUint(ahi, bhi)
	}
	return cmpUint(alo, blo)
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decimalFloatFast is a decimal128's nearest float64 when one IEEE
// operation on exact float64s computes it: a coefficient below 2^53 and an
// exponent within ±22 (10^22 is the largest exact power of ten).
func decimalFloatFast(hi, lo uint64) (float64, bool) {
	class, neg, chi, clo, exp := decimalParts(hi, lo)
	var f float64
	switch {
	case class == numZero:
	case class != numPos && class != numNeg:
		return 0, false // NaN, ±Infinity
	case chi != 0 || clo >= 1<<53 || exp < -22 || exp > 22:
		return 0, false
	case exp < 0:
		f = float64(clo) / pow10[-exp]
	default:
		f = float64(clo) * pow10[exp]
	}
	if neg {
		f = -f
	}
	return f, true
}

// DecimalFloat is the float64 nearest a Decimal128 value (rounded once:
// rounding to an intermediate precision first is wrong about once in
// 2^11), ±Inf beyond float64's range and ±0 below it.
func DecimalFloat(v bsoncore.Value) float64 {
	hi, lo := v.Decimal128()
	if f, ok := decimalFloatFast(hi, lo); ok {
		return f
	}
	var buf [48]byte
	n := decimalKey(hi, lo, buf[:0])
	switch n.class {
	case numNaN:
		return math.NaN()
	case numPosInf:
		return math.Inf(1)
	case numNegInf:
		return math.Inf(-1)
	}
	// 0.<digits>e<exp>: strconv rounds correctly, to ±Inf or ±0 out of
	// range.
	var text [64]byte
	s := text[:0]
	if n.class == numNeg {
		s = append(s, '-')
	}
	s = append(s, "0."...)
	s = append(s, n.digits...)
	s = append(s, 'e')
	s = strconv.AppendInt(s, int64(n.exp), 10)
	f, _ := strconv.ParseFloat(string(s), 64)
	return f
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
