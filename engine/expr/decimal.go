package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// decimal is an exact decimal number coef × 10^exp, with decimal128's
// special values. Arithmetic is exact; value() rounds to decimal128's 34
// digits (half to even), as IEEE 754-2008 decimal arithmetic does, so
// results keep their exponents the way MongoDB's do (1 + 0.1 is 1.1, not
// 1.100...0).
type decimal struct {
	coef big.Int // signed
	exp  int
	nan  bool
	inf  int // ±1 for infinities
}

var (
	bigTen  = big.NewInt(10)
	maxCoef = new(big.Int).Exp(bigTen, big.NewInt(34), nil) // 10^34
)

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// decOf converts a number: integers exactly, doubles with 15 significant
// digits (as MongoDB's Decimal128(double) does), decimals as they are.
func decOf(v bsoncore.Value) decimal {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		var d decimal
		d.coef.SetInt64(asInt(v))
		return d
	case bsoncore.TypeDouble:
		return decOfFloat(v.Double())
	}
	h, l := v.Decimal128()
	b := bson.NewDecimal128(h, l)
	if b.IsNaN() {
		return decimal{nan: true}
	}
	if s := b.IsInf(); s != 0 {
		return decimal{inf: s}
	}
	bi, exp, err := b.BigInt()
	if err != nil {
		return decimal{nan: true}
	}
	d := decimal{exp: exp}
	d.coef.Set(bi)
	return d
}

func decOfFloat(f float64) decimal {
	switch {
	case math.IsNaN(f):
		return decimal{nan: true}
	case math.IsInf(f, 1):
		return decimal{inf: 1}
	case math.IsInf(f, -1):
		return decimal{inf: -1}
	}
	s := strconv.FormatFloat(f, 'e', 14, 64) // d.dddddddddddddde±x
	mant, expPart, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(expPart)
	var d decimal
	d.coef.SetString(strings.Replace(mant, ".", "", 1), 10)
	d.exp = e - 14
	return d
}

func (d decimal) special() bool { return d.nan || d.inf != 0 }

func (d decimal) float() float64 {
	switch {
	case d.nan:
		return math.NaN()
	case d.inf != 0:
		return math.Inf(d.inf)
	}
	f, _ := strconv.ParseFloat(d.coef.String()+"e"+strconv.Itoa(d.exp), 64)
	return f
}

// value rounds to 34 digits and encodes.
func (d decimal) value() bsoncore.Value {
	switch {
	case d.nan:
		x, _ := bson.ParseDecimal128("NaN")
		return Decimal(x)
	case d.inf > 0:
		x, _ := bson.ParseDecimal128("Infinity")
		return Decimal(x)
	case d.inf < 0:
		x, _ := bson.ParseDecimal128("-Infinity")
		return Decimal(x)
	}
	coef := new(big.Int).Set(&d.coef)
	exp := d.exp
	neg := coef.Sign() < 0
	coef.Abs(coef)
	if coef.Cmp(maxCoef) >= 0 {
		digits := len(coef.String())
		coef, exp = roundDigits(coef, exp, digits-34, false)
		if coef.Cmp(maxCoef) >= 0 { // rounding carried into a 35th digit
			coef, exp = roundDigits(coef, exp, 1, false)
		}
	}
	if exp < -6176 {
		coef, exp = roundDigits(coef, exp, -6176-exp, false)
	}
	for exp > 6111 && coef.Sign() != 0 && new(big.Int).Mul(coef, bigTen).Cmp(maxCoef) < 0 {
		coef.Mul(coef, bigTen)
		exp--
	}
	if exp > 6111 {
		if coef.Sign() == 0 {
			exp = 6111
		} else {
			return decimal{inf: map[bool]int{true: -1, false: 1}[neg]}.value()
		}
	}
	if neg {
		coef.Neg(coef)
	}
	x, ok := bson.ParseDecimal128FromBigInt(coef, exp)
	if !ok {
		x, _ = bson.ParseDecimal128("NaN")
	}
	return Decimal(x)
}

// roundDigits drops n low digits of coef (n > 0), rounding half to even;
// sticky says non-zero digits were already dropped below these.
func roundDigits(coef *big.Int, exp, n int, sticky bool) (*big.Int, int) {
	if n <= 0 {
		return coef, exp
	}
	div := pow10(n)
	q, r := new(big.Int).QuoRem(coef, div, new(big.Int))
	half := new(big.Int).Quo(div, big.NewInt(2))
	c := r.Cmp(half)
	if c > 0 || (c == 0 && (sticky || q.Bit(0) == 1)) {
		q.Add(q, big.NewInt(1))
	}
	return q, exp + n
}

func decAdd(a, b decimal) decimal {
	if a.special() || b.special() {
		return decOfFloat(a.float() + b.float())
	}
	x, y := a, b
	if x.exp > y.exp {
		x, y = y, x
	}
	var r decimal
	r.exp = x.exp
	yc := new(big.Int).Mul(&y.coef, pow10(y.exp-x.exp))
	r.coef.Add(&x.coef, yc)
	return r
}

func decNeg(a decimal) decimal {
	r := a
	r.coef = big.Int{}
	r.coef.Neg(&a.coef)
	r.inf = -a.inf
	return r
}

func decMul(a, b decimal) decimal {
	if a.special() || b.special() {
		return decOfFloat(a.float() * b.float())
	}
	var r decimal
	r.coef.Mul(&a.coef, &b.coef)
	r.exp = a.exp + b.exp
	return r
}

// decDiv divides (b non-zero): exact when the quotient has at most 34
// digits (with the preferred exponent a.exp-b.exp when possible), else
// rounded to 34 digits.
func decDiv(a, b decimal) decimal {
	if a.special() || b.special() {
		return decOfFloat(a.float() / b.float())
	}
	if a.coef.Sign() == 0 {
		return decimal{exp: a.exp - b.exp}
	}
	neg := (a.coef.Sign() < 0) != (b.coef.Sign() < 0)
	na := new(big.Int).Abs(&a.coef)
	nb := new(big.Int).Abs(&b.coef)
	// Scale the dividend so the quotient has at least 35 digits.
	shift := max(0, 35+len(nb.String())-len(na.String()))
	num := new(big.Int).Mul(na, pow10(shift))
	q, rem := new(big.Int).QuoRem(num, nb, new(big.Int))
	exp := a.exp - b.exp - shift
	if rem.Sign() == 0 {
		// Exact: remove trailing zeros down to the preferred exponent.
		pref := a.exp - b.exp
		r := new(big.Int)
		for exp < pref {
			qq, m := new(big.Int).QuoRem(q, bigTen, r)
			if m.Sign() != 0 {
				break
			}
			q, exp = qq, exp+1
		}
		if len(q.String()) > 34 {
			q, exp = roundDigits(q, exp, len(q.String())-34, false)
		}
	} else {
		q, exp = roundDigits(q, exp, len(q.String())-34, true)
	}
	var d decimal
	d.coef.Set(q)
	if neg {
		d.coef.Neg(&d.coef)
	}
	d.exp = exp
	return d
}

func (d decimal) isZero() bool { return !d.special() && d.coef.Sign() == 0 }
