package update

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Decimal128 arithmetic for $inc and $mul: IEEE 754-2008 decimal with 34
// significant digits, rounded half to even, as MongoDB computes it.

const (
	decDigits = 34
	decMinExp = -6176
	decMaxExp = 6111
)

// decimal is a finite Decimal128 as coefficient x 10^exp, or a special.
type decimal struct {
	coef *big.Int
	exp  int
	nan  bool
	inf  int // +1 or -1 for infinities
}

var (
	bigTen = big.NewInt(10)
	decMax = new(big.Int).Sub(new(big.Int).Exp(bigTen, big.NewInt(decDigits), nil), big.NewInt(1))
)

// toDecimal converts any numeric value; doubles keep 15 significant
// digits, as MongoDB's conversion does.
func toDecimal(v bsoncore.Value) decimal {
	switch v.Type {
	case bsoncore.TypeDecimal128:
		d := bson.NewDecimal128(v.Decimal128())
		if d.IsNaN() {
			return decimal{nan: true}
		}
		if s := d.IsInf(); s != 0 {
			return decimal{inf: s}
		}
		bi, exp, err := d.BigInt()
		if err != nil {
			return decimal{nan: true}
		}
		return decimal{coef: bi, exp: exp}
	case bsoncore.TypeInt32:
		return decimal{coef: big.NewInt(int64(v.Int32()))}
	case bsoncore.TypeInt64:
		return decimal{coef: big.NewInt(v.Int64())}
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return decimal{nan: true}
		case math.IsInf(f, 1):
			return decimal{inf: 1}
		case math.IsInf(f, -1):
			return decimal{inf: -1}
		}
		d, err := bson.ParseDecimal128(strconv.FormatFloat(f, 'e', 14, 64))
		if err != nil {
			return decimal{nan: true}
		}
		h, l := d.GetBytes()
		return toDecimal(bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)})
	}
	return decimal{nan: true}
}

func decAdd(a, b decimal) decimal {
	switch {
	case a.nan || b.nan:
		return decimal{nan: true}
	case a.inf != 0 && b.inf != 0:
		if a.inf != b.inf {
			return decimal{nan: true}
		}
		return a
	case a.inf != 0:
		return a
	case b.inf != 0:
		return b
	}
	// Align to the smaller exponent; the sum is then exact before rounding.
	ac, bc, exp := new(big.Int).Set(a.coef), new(big.Int).Set(b.coef), a.exp
	switch {
	case a.exp > b.exp:
		ac.Mul(ac, new(big.Int).Exp(bigTen, big.NewInt(int64(a.exp-b.exp)), nil))
		exp = b.exp
	case b.exp > a.exp:
		bc.Mul(bc, new(big.Int).Exp(bigTen, big.NewInt(int64(b.exp-a.exp)), nil))
	}
	return decimal{coef: ac.Add(ac, bc), exp: exp}
}

func decMul(a, b decimal) decimal {
	switch {
	case a.nan || b.nan:
		return decimal{nan: true}
	case a.inf != 0 || b.inf != 0:
		sa, sb := a.inf, b.inf
		if sa == 0 {
			sa = a.coef.Sign()
		}
		if sb == 0 {
			sb = b.coef.Sign()
		}
		if sa == 0 || sb == 0 {
			return decimal{nan: true}
		}
		return decimal{inf: sa * sb}
	}
	return decimal{coef: new(big.Int).Mul(a.coef, b.coef), exp: a.exp + b.exp}
}

// value rounds d to 34 digits and encodes it.
func (d decimal) value() bsoncore.Value {
	var out bson.Decimal128
	switch {
	case d.nan:
		out, _ = bson.ParseDecimal128("NaN")
	case d.inf > 0:
		out, _ = bson.ParseDecimal128("Infinity")
	case d.inf < 0:
		out, _ = bson.ParseDecimal128("-Infinity")
	default:
		coef, exp := roundCoef(new(big.Int).Set(d.coef), d.exp)
		var ok bool
		out, ok = bson.ParseDecimal128FromBigInt(coef, exp)
		if !ok {
			if coef.Sign() < 0 {
				out, _ = bson.ParseDecimal128("-Infinity")
			} else {
				out, _ = bson.ParseDecimal128("Infinity")
			}
		}
	}
	h, l := out.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

// roundCoef drops digits past the 34th (or below the smallest exponent),
// rounding half to even.
func roundCoef(c *big.Int, exp int) (*big.Int, int) {
	abs := new(big.Int).Abs(c)
	drop := 0
	if abs.Cmp(decMax) > 0 {
		drop = len(abs.String()) - decDigits
	}
	if exp+drop < decMinExp {
		drop = decMinExp - exp
	}
	if drop <= 0 {
		return c, exp
	}
	div := new(big.Int).Exp(bigTen, big.NewInt(int64(drop)), nil)
	q, r := new(big.Int).QuoRem(abs, div, new(big.Int))
	half := new(big.Int).Rsh(div, 1) // div is even: exactly half
	switch r.Cmp(half) {
	case 1:
		q.Add(q, big.NewInt(1))
	case 0:
		if q.Bit(0) == 1 {
			q.Add(q, big.NewInt(1))
		}
	}
	if q.Cmp(decMax) > 0 { // rounding carried into a 35th digit
		q.Quo(q, bigTen)
		drop++
	}
	if c.Sign() < 0 {
		q.Neg(q)
	}
	return q, exp + drop
}

func bigZero() *big.Int { return new(big.Int) }
