package query

import (
	"math"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// bitsOp is one of the four $bits* operators.
type bitsOp uint8

const (
	bitsAllSet bitsOp = iota
	bitsAnySet
	bitsAllClear
	bitsAnyClear
)

var bitsOps = map[string]bitsOp{
	"$bitsAllSet": bitsAllSet, "$bitsAnySet": bitsAnySet,
	"$bitsAllClear": bitsAllClear, "$bitsAnyClear": bitsAnyClear,
}

// bitsMatcher tests bit positions of integral numbers (two's complement,
// sign-extended: a negative number has every high bit set) and of BinData
// (bit i is bit i%8 of byte i/8; bits past the end are clear). Doubles
// match only when they are integral and fit an int64.
type bitsMatcher struct {
	op        bitsOp
	positions []uint32
}

func (m *bitsMatcher) matchValue(v bsoncore.Value, _ *state) bool {
	var bit func(p uint32) bool
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		n, ok := bitsInt(v)
		if !ok {
			return false
		}
		bit = func(p uint32) bool {
			if p >= 64 {
				return n < 0
			}
			return n&(1<<p) != 0
		}
	case bsoncore.TypeBinary:
		_, data := v.Binary()
		bit = func(p uint32) bool {
			i := p / 8
			return int(i) < len(data) && data[i]&(1<<(p%8)) != 0
		}
	default:
		return false
	}
	switch m.op {
	case bitsAllSet:
		for _, p := range m.positions {
			if !bit(p) {
				return false
			}
		}
		return true
	case bitsAllClear:
		for _, p := range m.positions {
			if bit(p) {
				return false
			}
		}
		return true
	case bitsAnySet:
		for _, p := range m.positions {
			if bit(p) {
				return true
			}
		}
		return false
	}
	for _, p := range m.positions {
		if !bit(p) {
			return true
		}
	}
	return false
}

func bitsInt(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), true
	case bsoncore.TypeInt64:
		return v.Int64(), true
	}
	f := 0.0
	if v.Type == bsoncore.TypeDouble {
		f = v.Double()
	} else {
		return 0, false // MongoDB does not test the bits of decimals
	}
	if f != math.Trunc(f) || math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return 0, false
	}
	return int64(f), true
}

// compileBits parses the argument of a $bits* operator: a non-negative
// integral number (a bitmask), an array of non-negative bit positions, or
// BinData (a bitmask).
func compileBits(name string, arg bsoncore.Value) (*bitsMatcher, error) {
	m := &bitsMatcher{op: bitsOps[name]}
	addMask := func(mask uint64) {
		for p := uint32(0); p < 64; p++ {
			if mask&(1<<p) != 0 {
				m.positions = append(m.positions, p)
			}
		}
	}
	switch arg.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		n, err := wholeNumber(name, arg)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, langerr.BadValue("%s: Expected a positive number in: %s: %s", name, name, value.Render(arg))
		}
		addMask(uint64(n))
	case bsoncore.TypeBinary:
		_, data := arg.Binary()
		for i, b := range data {
			for j := uint32(0); j < 8; j++ {
				if b&(1<<j) != 0 {
					m.positions = append(m.positions, uint32(i)*8+j)
				}
			}
		}
	case bsoncore.TypeArray:
		for _, x := range arrayValues(arg.Data) {
			if !isNumberType(x.Type) {
				return nil, langerr.BadValue("bit positions must be an integer but got: %s", value.Render(x))
			}
			n, err := wholeNumber(name, x)
			if err != nil {
				return nil, langerr.BadValue("bit positions must be an integer but got: %s", value.Render(x))
			}
			if n < 0 {
				return nil, langerr.BadValue("bit positions must be >= 0 but got: %s", value.Render(x))
			}
			if n > math.MaxInt32 {
				return nil, langerr.BadValue("bit positions cannot be represented as a 32-bit signed integer: %s", value.Render(x))
			}
			m.positions = append(m.positions, uint32(n))
		}
	default:
		return nil, langerr.BadValue("%s takes an Array, a number, or a BinData but received: %s: %s", name, name, value.Render(arg))
	}
	return m, nil
}
