package query

import (
	"math"
	"slices"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// valueMatcher tests one value a path reached (MongoDB's
// matchesSingleElement). v.Type is missing where the path reached nothing.
type valueMatcher interface {
	matchValue(v bsoncore.Value, st *state) bool
}

// cmpOp is a comparison operator.
type cmpOp uint8

const (
	opEQ cmpOp = iota
	opLT
	opLTE
	opGT
	opGTE
)

// eqMatcher is $eq (and implicit equality with a non-regex value).
type eqMatcher struct {
	val  bsoncore.Value
	coll *value.Collator // nil: the simple collation
}

func (m *eqMatcher) matchValue(v bsoncore.Value, _ *state) bool {
	return equalForMatchWith(v, m.val, m.coll)
}

// equalForMatch is MongoDB's equality as the matcher sees it: a missing
// value equals null, and values of different canonical types differ.
func equalForMatch(v, rhs bsoncore.Value) bool { return equalForMatchWith(v, rhs, nil) }

// equalForMatchWith is equalForMatch with strings compared by the
// collation coll.
func equalForMatchWith(v, rhs bsoncore.Value, coll *value.Collator) bool {
	if v.Type == missing {
		return rhs.Type == bsoncore.TypeNull
	}
	if value.TypeRank(v.Type) != value.TypeRank(rhs.Type) {
		return false
	}
	return value.CompareWith(v, rhs, coll) == 0
}

// cmpMatcher is $lt, $lte, $gt and $gte. Values only compare with values
// of their own canonical type ("type bracketing"), except that MinKey and
// MaxKey bound everything; NaN equals NaN and is otherwise unordered.
type cmpMatcher struct {
	op   cmpOp
	val  bsoncore.Value
	coll *value.Collator // nil: the simple collation
}

func (m *cmpMatcher) matchValue(v bsoncore.Value, _ *state) bool {
	return compareForMatch(m.op, v, m.val, m.coll)
}

func compareForMatch(op cmpOp, v, rhs bsoncore.Value, coll *value.Collator) bool {
	if v.Type == missing {
		v = bsoncore.Value{Type: bsoncore.TypeNull}
	}
	rv, rr := value.TypeRank(v.Type), value.TypeRank(rhs.Type)
	if rv != rr {
		switch rhs.Type {
		case bsoncore.TypeMinKey:
			return op == opGT || op == opGTE
		case bsoncore.TypeMaxKey:
			return op == opLT || op == opLTE
		}
		return false
	}
	if rv == 10 { // numbers
		vn, rn := isNaN(v), isNaN(rhs)
		if vn || rn {
			both := vn && rn
			return both && (op == opEQ || op == opLTE || op == opGTE)
		}
	}
	c := value.CompareWith(v, rhs, coll)
	switch op {
	case opEQ:
		return c == 0
	case opLT:
		return c < 0
	case opLTE:
		return c <= 0
	case opGT:
		return c > 0
	}
	return c >= 0
}

func isNaN(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDouble:
		return math.IsNaN(v.Double())
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		return isDecimalNaN(h, l)
	}
	return false
}

// isDecimalNaN reads the NaN bits of an IEEE 754-2008 decimal128.
func isDecimalNaN(h, _ uint64) bool { return h&(0x1f<<58) == 0x1f<<58 }

// inMatcher is $in: equality with one of vals, or a match of one of res.
// vals is sorted by value.CompareWith under coll for binary search.
type inMatcher struct {
	vals    []bsoncore.Value
	res     []*regexMatcher
	hasNull bool
	coll    *value.Collator // nil: the simple collation
}

func newInMatcher(vals []bsoncore.Value, res []*regexMatcher, coll *value.Collator) *inMatcher {
	m := &inMatcher{res: res, coll: coll}
	for _, v := range vals {
		if v.Type == bsoncore.TypeNull {
			m.hasNull = true
		}
		m.vals = append(m.vals, v)
	}
	slices.SortFunc(m.vals, m.compare)
	return m
}

func (m *inMatcher) matchValue(v bsoncore.Value, st *state) bool {
	if v.Type == missing {
		return m.hasNull
	}
	if len(m.vals) > 0 {
		// Compare orders by canonical type first, so a hit is a value
		// of v's own type.
		if _, found := slices.BinarySearchFunc(m.vals, v, m.compare); found {
			return true
		}
	}
	for _, re := range m.res {
		if re.matchValue(v, st) {
			return true
		}
	}
	return false
}

func (m *inMatcher) compare(a, b bsoncore.Value) int { return value.CompareWith(a, b, m.coll) }

// existsMatcher is $exists inside $elemMatch, where it tests one element.
type existsMatcher struct{ want bool }

func (m existsMatcher) matchValue(v bsoncore.Value, _ *state) bool {
	return (v.Type != missing) == m.want
}

// typeMatcher is $type: the value's type is one of types ("number" is
// every numeric type).
type typeMatcher struct {
	types  []bsoncore.Type
	number bool
}

func (m *typeMatcher) matchValue(v bsoncore.Value, _ *state) bool {
	if v.Type == missing {
		return false
	}
	if m.number && value.TypeRank(v.Type) == 10 {
		return true
	}
	return slices.Contains(m.types, v.Type)
}

// modMatcher is $mod: numbers whose integer part leaves rem when divided
// by div.
type modMatcher struct{ div, rem int64 }

func (m *modMatcher) matchValue(v bsoncore.Value, _ *state) bool {
	var n int64
	switch v.Type {
	case bsoncore.TypeInt32:
		n = int64(v.Int32())
	case bsoncore.TypeInt64:
		n = v.Int64()
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f := value.Float(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		n = truncToInt64(f)
	default:
		return false
	}
	if m.div == -1 { // avoid MinInt64 % -1 overflow
		return m.rem == 0
	}
	return n%m.div == m.rem
}

// truncToInt64 truncates f toward zero, saturating at the int64 range.
func truncToInt64(f float64) int64 {
	switch {
	case f >= 9.223372036854775807e18:
		return math.MaxInt64
	case f <= -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(f)
}

// sizeMatcher is $size: arrays of exactly n elements.
type sizeMatcher struct{ n int }

func (m *sizeMatcher) matchValue(v bsoncore.Value, _ *state) bool {
	if v.Type != bsoncore.TypeArray {
		return false
	}
	return countElements(v.Data) == m.n
}

// elemMatchObject is $elemMatch with a query: some element that is a
// document (or array) matches the sub-filter.
type elemMatchObject struct{ sub andPred }

func (m *elemMatchObject) matchValue(v bsoncore.Value, st *state) bool {
	if v.Type != bsoncore.TypeArray {
		return false
	}
	i := 0
	for rem := elementsOf(v.Data); len(rem) > 0; i++ {
		var e bsoncore.Element
		if e, rem = nextElement(rem); e == nil {
			break
		}
		x := e.Value()
		if x.Type != bsoncore.TypeEmbeddedDocument && x.Type != bsoncore.TypeArray {
			continue
		}
		if m.sub.match(x.Data, nil) {
			if st != nil {
				st.pos = i
			}
			return true
		}
	}
	return false
}

// elemMatchValue is $elemMatch with operators: some element satisfies
// every one of them.
type elemMatchValue struct{ vm valueMatcher }

func (m *elemMatchValue) matchValue(v bsoncore.Value, st *state) bool {
	if v.Type != bsoncore.TypeArray {
		return false
	}
	i := 0
	for rem := elementsOf(v.Data); len(rem) > 0; i++ {
		var e bsoncore.Element
		if e, rem = nextElement(rem); e == nil {
			break
		}
		if m.vm.matchValue(e.Value(), nil) {
			if st != nil {
				st.pos = i
			}
			return true
		}
	}
	return false
}

// andValues and notValue combine matchers on one value (inside a
// value $elemMatch, where each element is tested on its own).
type andValues []valueMatcher

func (a andValues) matchValue(v bsoncore.Value, st *state) bool {
	for _, m := range a {
		if !m.matchValue(v, st) {
			return false
		}
	}
	return true
}

type notValue struct{ vm valueMatcher }

func (n notValue) matchValue(v bsoncore.Value, _ *state) bool { return !n.vm.matchValue(v, nil) }

// countElements counts the elements of a document or array.
func countElements(doc []byte) int {
	n := 0
	for rem := elementsOf(doc); len(rem) > 0; n++ {
		var e bsoncore.Element
		if e, rem = nextElement(rem); e == nil {
			break
		}
	}
	return n
}
