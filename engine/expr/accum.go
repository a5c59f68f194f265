package expr

import (
	"math"
	"math/big"
	"math/bits"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Sum adds numbers as MongoDB's $sum and $avg do: integers exactly (in
// 128 bits, so int64 overflow is not lost), doubles in double-double
// precision, decimals in decimal; the result takes the widest type added
// (int32 -> int64 -> double -> decimal), an integer total that does not
// fit int64 becoming a double. Non-numbers are ignored. The zero Sum is
// empty (its total is int32 0).
type Sum struct {
	kind     numKind
	n        int64
	intHi    int64  // integers: a signed 128-bit total (hi:lo)
	intLo    uint64 //
	hi, lo   float64
	dec      *value.Decimal // decimals (exact), nil when none
	decNaN   int            // value.Decimal NaN/±Inf seen: 1 NaN, 2 +Inf, 3 -Inf, 4 both infinities
	hasFloat bool
}

// Add adds v when it is a number and reports whether it was one.
func (s *Sum) Add(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32:
		s.addInt(int64(v.Int32()))
	case bsoncore.TypeInt64:
		s.addInt(v.Int64())
		s.kind = max(s.kind, kInt64)
	case bsoncore.TypeDouble:
		s.AddFloat(v.Double())
	case bsoncore.TypeDecimal128:
		s.kind = kDecimal
		b := value.DecimalOf(v)
		if b.Special() {
			f := b.Float()
			switch {
			case math.IsNaN(f):
				s.decNaN = 1
			case math.IsInf(f, 1) && s.decNaN != 1:
				if s.decNaN == 3 {
					s.decNaN = 1
				} else {
					s.decNaN = 2
				}
			case math.IsInf(f, -1) && s.decNaN != 1:
				if s.decNaN == 2 {
					s.decNaN = 1
				} else {
					s.decNaN = 3
				}
			}
			s.n++
			return true
		}
		if s.dec == nil {
			s.dec = &value.Decimal{}
		}
		*s.dec = value.AddDecimal(*s.dec, b)
	default:
		return false
	}
	s.n++
	return true
}

func (s *Sum) addInt(i int64) {
	var hi int64
	if i < 0 {
		hi = -1
	}
	lo, carry := bits.Add64(s.intLo, uint64(i), 0)
	s.intLo = lo
	s.intHi += hi + int64(carry)
}

// AddFloat adds a double (two-sum: the rounding error is kept in lo).
func (s *Sum) AddFloat(f float64) {
	s.kind = max(s.kind, kDouble)
	s.hasFloat = true
	t := s.hi + f
	if math.IsInf(t, 0) || math.IsNaN(t) {
		s.hi, s.lo = t, 0
		return
	}
	var e float64
	if math.Abs(s.hi) >= math.Abs(f) {
		e = (s.hi - t) + f
	} else {
		e = (f - t) + s.hi
	}
	s.hi = t
	s.lo += e
}

// Count is how many numbers were added.
func (s *Sum) Count() int64 { return s.n }

// Merge adds another Sum's numbers to s.
func (s *Sum) Merge(o *Sum) {
	s.kind = max(s.kind, o.kind)
	s.n += o.n
	lo, carry := bits.Add64(s.intLo, o.intLo, 0)
	s.intLo, s.intHi = lo, s.intHi+o.intHi+int64(carry)
	if o.hasFloat {
		s.AddFloat(o.hi)
		s.AddFloat(o.lo)
	}
	if o.dec != nil {
		if s.dec == nil {
			s.dec = &value.Decimal{}
		}
		*s.dec = value.AddDecimal(*s.dec, *o.dec)
	}
	if o.decNaN != 0 {
		switch {
		case s.decNaN == 0:
			s.decNaN = o.decNaN
		case s.decNaN != o.decNaN:
			s.decNaN = 1
		}
	}
}

// intTotal returns the integer total and whether it fits int64.
func (s *Sum) intTotal() (int64, bool) {
	v := int64(s.intLo)
	return v, (s.intHi == 0 && v >= 0) || (s.intHi == -1 && v < 0)
}

// intFloat is the integer total as a double-double (hi, lo).
func (s *Sum) intFloat() (float64, float64) {
	if v, ok := s.intTotal(); ok {
		h := float64(v)
		var l float64
		if h < 9.2e18 && h > -9.2e18 {
			l = float64(v - int64(h))
		}
		return h, l
	}
	b := s.intBig()
	h, _ := b.Float64()
	r := new(big.Float).Sub(b, new(big.Float).SetFloat64(h))
	l, _ := r.Float64()
	return h, l
}

func (s *Sum) intBig() *big.Float {
	b := new(big.Int).SetInt64(s.intHi)
	b.Lsh(b, 64)
	b.Add(b, new(big.Int).SetUint64(s.intLo))
	return new(big.Float).SetPrec(decimalPrec).SetInt(b)
}

// Float is the total as a double.
func (s *Sum) Float() float64 {
	ih, il := s.intFloat()
	if !s.hasFloat {
		return ih + il
	}
	t := *s
	t.AddFloat(ih)
	t.AddFloat(il)
	return t.hi + t.lo
}

// decTotal is the total of every part as an exact decimal (the
// doubles' part with 15 significant digits, as MongoDB converts it).
func (s *Sum) decTotal() value.Decimal {
	var t value.Decimal
	if v, ok := s.intTotal(); ok {
		t.Coef.SetInt64(v)
	} else {
		b := new(big.Int).SetInt64(s.intHi)
		b.Lsh(b, 64)
		b.Add(b, new(big.Int).SetUint64(s.intLo))
		t.Coef.Set(b)
	}
	if s.dec != nil {
		t = value.AddDecimal(t, *s.dec)
	}
	if s.hasFloat && !math.IsInf(s.hi, 0) && !math.IsNaN(s.hi) {
		t = value.AddDecimal(t, value.DecimalOfFloat(s.hi+s.lo))
	}
	return t
}

func (s *Sum) decimalSpecial() (bsoncore.Value, bool) {
	switch {
	case s.decNaN == 1 || (s.hasFloat && math.IsNaN(s.hi)):
		return decimalFromFloat(math.NaN()), true
	case s.decNaN == 2 && !(s.hasFloat && math.IsInf(s.hi, -1)):
		return decimalFromFloat(math.Inf(1)), true
	case s.decNaN == 3 && !(s.hasFloat && math.IsInf(s.hi, 1)):
		return decimalFromFloat(math.Inf(-1)), true
	case s.decNaN != 0:
		return decimalFromFloat(math.NaN()), true
	case s.hasFloat && math.IsInf(s.hi, 0):
		return decimalFromFloat(s.hi), true
	}
	return Missing, false
}

// Total is $sum's result.
func (s *Sum) Total() bsoncore.Value {
	switch s.kind {
	case kDecimal:
		if v, ok := s.decimalSpecial(); ok {
			return v
		}
		return s.decTotal().Value()
	case kDouble:
		return Double(s.Float())
	}
	v, ok := s.intTotal()
	if !ok {
		return Double(s.Float())
	}
	if s.kind == kInt32 && v == int64(int32(v)) {
		return Int32(int32(v))
	}
	return Int64(v)
}

// Average is $avg's result: null when no number was added.
func (s *Sum) Average() bsoncore.Value {
	if s.n == 0 {
		return Null
	}
	if s.kind == kDecimal {
		if v, ok := s.decimalSpecial(); ok {
			return v
		}
		var n value.Decimal
		n.Coef.SetInt64(s.n)
		return value.DivDecimal(s.decTotal(), n).Value()
	}
	return Double(s.Float() / float64(s.n))
}

// SumState is a Sum's exact state, for carrying partial sums between
// partitions and spill files.
type SumState struct {
	Kind       int32
	N          int64
	IntHi      int64
	IntLo      int64
	Hi, Lo     float64
	Dec        bsoncore.Value // decimal128, Type 0 when none
	DecSpecial int32
	HasFloat   bool
}

// State exports s.
func (s *Sum) State() SumState {
	st := SumState{Kind: int32(s.kind), N: s.n, IntHi: s.intHi, IntLo: int64(s.intLo), Hi: s.hi, Lo: s.lo,
		DecSpecial: int32(s.decNaN), HasFloat: s.hasFloat}
	if s.dec != nil {
		st.Dec = s.dec.Value()
	}
	return st
}

// SumFromState rebuilds a Sum.
func SumFromState(st SumState) Sum {
	s := Sum{kind: numKind(st.Kind), n: st.N, intHi: st.IntHi, intLo: uint64(st.IntLo), hi: st.Hi, lo: st.Lo,
		decNaN: int(st.DecSpecial), hasFloat: st.HasFloat}
	if st.Dec.Type == bsoncore.TypeDecimal128 {
		d := value.DecimalOf(st.Dec)
		s.dec = &d
	}
	return s
}

// StdDev computes a population or sample standard deviation of doubles
// incrementally (Welford), and merges partial results (Chan et al.).
type StdDev struct {
	N    int64
	Mean float64
	M2   float64
}

// Add adds v when it is a number (non-numbers are ignored).
func (d *StdDev) Add(v bsoncore.Value) {
	if !isNumber(v) {
		return
	}
	d.AddFloat(value.Float(v))
}

// AddFloat adds one observation.
func (d *StdDev) AddFloat(x float64) {
	d.N++
	delta := x - d.Mean
	d.Mean += delta / float64(d.N)
	d.M2 += delta * (x - d.Mean)
}

// Remove takes one observation back out (sliding windows).
func (d *StdDev) Remove(x float64) {
	if d.N <= 1 {
		*d = StdDev{}
		return
	}
	mean := (d.Mean*float64(d.N) - x) / float64(d.N-1)
	d.M2 -= (x - d.Mean) * (x - mean)
	d.Mean = mean
	d.N--
	if d.M2 < 0 {
		d.M2 = 0
	}
}

// Merge combines another partial result into d.
func (d *StdDev) Merge(o StdDev) {
	if o.N == 0 {
		return
	}
	if d.N == 0 {
		*d = o
		return
	}
	n := d.N + o.N
	delta := o.Mean - d.Mean
	d.M2 += o.M2 + delta*delta*float64(d.N)*float64(o.N)/float64(n)
	d.Mean += delta * float64(o.N) / float64(n)
	d.N = n
}

// Result is the population (sample false) or sample standard deviation:
// null when there are no values (or one, for a sample).
func (d *StdDev) Result(sample bool) bsoncore.Value {
	switch {
	case d.N == 0, sample && d.N == 1:
		return Null
	case sample:
		return Double(math.Sqrt(d.M2 / float64(d.N-1)))
	}
	return Double(math.Sqrt(d.M2 / float64(d.N)))
}
