package value

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Decimal is an exact decimal number Coef × 10^Exp, with decimal128's
// special values: the one decimal arithmetic of the languages (expr's
// $add, $multiply, $divide, $sum and $avg; update's $inc and $mul).
// Arithmetic is exact; Value rounds to decimal128's 34 digits (half to
// even), as IEEE 754-2008 decimal arithmetic does, so results keep their
// exponents the way MongoDB's do (1 + 0.1 is 1.1, not 1.100...0).
type Decimal struct {
	Coef big.Int // signed
	Exp  int
	NaN  bool
	Inf  int // ±1 for infinities
}

// Decimal128's limits.
const (
	decimalDigits = 34
	decimalMinExp = -6176
	decimalMaxExp = 6111
)

var (
	bigTen     = big.NewInt(10)
	decimalCap = new(big.Int).Exp(bigTen, big.NewInt(decimalDigits), nil) // 10^34
)

func bigPow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// DecimalOf converts a number: integers exactly, doubles with 15
// significant digits (as MongoDB's Decimal128(double) does), decimals as
// they are. Anything else is NaN.
func DecimalOf(v bsoncore.Value) Decimal {
	switch v.Type {
	case bsoncore.TypeInt32:
		var d Decimal
		d.Coef.SetInt64(int64(v.Int32()))
		return d
	case bsoncore.TypeInt64:
		var d Decimal
		d.Coef.SetInt64(v.Int64())
		return d
	case bsoncore.TypeDouble:
		return DecimalOfFloat(v.Double())
	case bsoncore.TypeDecimal128:
		b := bson.NewDecimal128(v.Decimal128())
		if b.IsNaN() {
			return Decimal{NaN: true}
		}
		if s := b.IsInf(); s != 0 {
			return Decimal{Inf: s}
		}
		bi, exp, err := b.BigInt()
		if err != nil {
			return Decimal{NaN: true}
		}
		d := Decimal{Exp: exp}
		d.Coef.Set(bi)
		return d
	}
	return Decimal{NaN: true}
}

// DecimalOfFloat is f with 15 significant digits.
func DecimalOfFloat(f float64) Decimal {
	switch {
	case math.IsNaN(f):
		return Decimal{NaN: true}
	case math.IsInf(f, 1):
		return Decimal{Inf: 1}
	case math.IsInf(f, -1):
		return Decimal{Inf: -1}
	}
	s := strconv.FormatFloat(f, 'e', 14, 64) // d.dddddddddddddde±x
	mant, expPart, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(expPart)
	var d Decimal
	d.Coef.SetString(strings.Replace(mant, ".", "", 1), 10)
	d.Exp = e - 14
	return d
}

// Special reports NaN or an infinity.
func (d Decimal) Special() bool { return d.NaN || d.Inf != 0 }

// IsZero reports a finite zero.
func (d Decimal) IsZero() bool { return !d.Special() && d.Coef.Sign() == 0 }

// Float is d as the nearest double.
func (d Decimal) Float() float64 {
	switch {
	case d.NaN:
		return math.NaN()
	case d.Inf != 0:
		return math.Inf(d.Inf)
	}
	f, _ := strconv.ParseFloat(d.Coef.String()+"e"+strconv.Itoa(d.Exp), 64)
	return f
}

// Value rounds d to 34 digits (and decimal128's exponent range) and
// encodes it; too large a number is an infinity.
func (d Decimal) Value() bsoncore.Value {
	switch {
	case d.NaN:
		return decimalValue("NaN")
	case d.Inf > 0:
		return decimalValue("Infinity")
	case d.Inf < 0:
		return decimalValue("-Infinity")
	}
	coef := new(big.Int).Set(&d.Coef)
	exp := d.Exp
	neg := coef.Sign() < 0
	coef.Abs(coef)
	if coef.Cmp(decimalCap) >= 0 {
		coef, exp = roundDigits(coef, exp, len(coef.String())-decimalDigits, false)
		if coef.Cmp(decimalCap) >= 0 { // rounding carried into a 35th digit
			coef, exp = roundDigits(coef, exp, 1, false)
		}
	}
	if exp < decimalMinExp {
		coef, exp = roundDigits(coef, exp, decimalMinExp-exp, false)
	}
	for exp > decimalMaxExp && coef.Sign() != 0 && new(big.Int).Mul(coef, bigTen).Cmp(decimalCap) < 0 {
		coef.Mul(coef, bigTen)
		exp--
	}
	if exp > decimalMaxExp {
		if coef.Sign() != 0 {
			if neg {
				return decimalValue("-Infinity")
			}
			return decimalValue("Infinity")
		}
		exp = decimalMaxExp
	}
	if neg {
		coef.Neg(coef)
	}
	x, ok := bson.ParseDecimal128FromBigInt(coef, exp)
	if !ok {
		x, _ = bson.ParseDecimal128("NaN")
	}
	return DecimalValue(x)
}

// DecimalValue encodes a decimal128 as a value.
func DecimalValue(d bson.Decimal128) bsoncore.Value {
	h, l := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

func decimalValue(s string) bsoncore.Value {
	x, _ := bson.ParseDecimal128(s)
	return DecimalValue(x)
}

// roundDigits drops n low digits of coef (n > 0), rounding half to even;
// sticky says non-zero digits were already dropped below these.
func roundDigits(coef *big.Int, exp, n int, sticky bool) (*big.Int, int) {
	if n <= 0 {
		return coef, exp
	}
	div := bigPow10(n)
	q, r := new(big.Int).QuoRem(coef, div, new(big.Int))
	half := new(big.Int).Quo(div, big.NewInt(2))
	c := r.Cmp(half)
	if c > 0 || (c == 0 && (sticky || q.Bit(0) == 1)) {
		q.Add(q, big.NewInt(1))
	}
	return q, exp + n
}

// AddDecimal is a + b (specials as IEEE 754 adds them).
func AddDecimal(a, b Decimal) Decimal {
	if a.Special() || b.Special() {
		return DecimalOfFloat(a.Float() + b.Float())
	}
	x, y := &a, &b
	if x.Exp > y.Exp {
		x, y = y, x
	}
	var r Decimal
	r.Exp = x.Exp
	yc := new(big.Int).Mul(&y.Coef, bigPow10(y.Exp-x.Exp))
	r.Coef.Add(&x.Coef, yc)
	return r
}

// NegDecimal is -a.
func NegDecimal(a Decimal) Decimal {
	r := Decimal{Exp: a.Exp, NaN: a.NaN, Inf: -a.Inf}
	r.Coef.Neg(&a.Coef)
	return r
}

// MulDecimal is a × b (specials as IEEE 754 multiplies them).
func MulDecimal(a, b Decimal) Decimal {
	if a.Special() || b.Special() {
		return DecimalOfFloat(a.Float() * b.Float())
	}
	var r Decimal
	r.Coef.Mul(&a.Coef, &b.Coef)
	r.Exp = a.Exp + b.Exp
	return r
}

// DivDecimal is a / b (b non-zero): exact when the quotient has at most 34
// digits (with the preferred exponent a.Exp-b.Exp when possible), else
// rounded to 34 digits.
func DivDecimal(a, b Decimal) Decimal {
	if a.Special() || b.Special() {
		return DecimalOfFloat(a.Float() / b.Float())
	}
	if a.Coef.Sign() == 0 {
		return Decimal{Exp: a.Exp - b.Exp}
	}
	neg := (a.Coef.Sign() < 0) != (b.Coef.Sign() < 0)
	na := new(big.Int).Abs(&a.Coef)
	nb := new(big.Int).Abs(&b.Coef)
	// Scale the dividend so the quotient has at least 35 digits.
	shift := max(0, decimalDigits+1+len(nb.String())-len(na.String()))
	num := new(big.Int).Mul(na, bigPow10(shift))
	q, rem := new(big.Int).QuoRem(num, nb, new(big.Int))
	exp := a.Exp - b.Exp - shift
	if rem.Sign() == 0 {
		// Exact: remove trailing zeros down to the preferred exponent.
		pref := a.Exp - b.Exp
		r := new(big.Int)
		for exp < pref {
			qq, m := new(big.Int).QuoRem(q, bigTen, r)
			if m.Sign() != 0 {
				break
			}
			q, exp = qq, exp+1
		}
		if len(q.String()) > decimalDigits {
			q, exp = roundDigits(q, exp, len(q.String())-decimalDigits, false)
		}
	} else {
		q, exp = roundDigits(q, exp, len(q.String())-decimalDigits, true)
	}
	var d Decimal
	d.Coef.Set(q)
	if neg {
		d.Coef.Neg(&d.Coef)
	}
	d.Exp = exp
	return d
}
