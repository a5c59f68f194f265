package shard

import (
	"bytes"
	"math"
	"math/big"
	"slices"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Values returns the shard-key values a filter pins the key to, when it
// does: a document matches the filter only if its shard-key value (as
// Extract gives it) equals one of them. ok is false when the filter may
// match any value, and the read must go to every partition.
//
// What pins a field (the filter's top level is an implicit $and):
//
//	{k: v}                 v, unless v is a regular expression (which
//	                       matches by pattern)
//	{k: {$eq: v}}          v
//	{k: {$in: [v, ...]}}   the listed values, unless one is a regular
//	                       expression
//	{$and: [f, ...]}       what any of the f pins (the intersection of all)
//	{$or: [f, ...]}        the union, when every f pins the field
//
// A compound key is pinned when every field is, to every combination of
// its fields' values (at most maxCombinations). Every other condition is
// ignored: a conjunct can only narrow a match, so ignoring it keeps the
// answer a superset. For a hashed leading field, which places documents
// by hash, a value whose equal values may hash differently (a number that
// is not an exact integer in int64's range, or a document or array
// holding one) pins nothing, because MongoDB's hash truncates doubles but
// rounds decimals; and null also pins undefined, which compares equal to
// it but hashes apart. Other fields are placed by their key encoding,
// which equal values share.
//
// The values of a single-field key alias filter.
func (s Spec) Values(filter bsoncore.Document) ([]bsoncore.Value, bool) {
	set, ok := constrain(filter, s.Path, !s.Ranged, 0)
	if !ok {
		return nil, false
	}
	if len(s.Rest) == 0 {
		return set.vals, true
	}
	per := [][]bsoncore.Value{set.vals}
	n := len(set.vals)
	for _, f := range s.Rest {
		fs, ok := constrain(filter, f.Path, false, 0)
		if !ok {
			return nil, false
		}
		if n *= len(fs.vals); n > maxCombinations {
			return nil, false
		}
		per = append(per, fs.vals)
	}
	out := make([]bsoncore.Value, 0, n)
	combo := make([]bsoncore.Value, len(per))
	var walk func(i int)
	walk = func(i int) {
		if i == len(per) {
			out = append(out, s.Compose(combo))
			return
		}
		for _, v := range per[i] {
			combo[i] = v
			walk(i + 1)
		}
	}
	if n > 0 {
		walk(0)
	}
	return out, true
}

// maxCombinations bounds the values a compound key's pinned fields
// combine to; past it the filter pins nothing (it is still routed by its
// leading field, PointRanges).
const maxCombinations = 1000

// Points is Values mapped to the point space, ascending and distinct.
func (s Spec) Points(filter bsoncore.Document) ([]uint64, bool) {
	vals, ok := s.Values(filter)
	if !ok {
		return nil, false
	}
	points := make([]uint64, 0, len(vals))
	for _, v := range vals {
		points = append(points, s.Point(v))
	}
	slices.Sort(points)
	return slices.Compact(points), true
}

// maxDepth bounds the recursion through $and and $or.
const maxDepth = 64

// valueSet is a set of values by their key encoding (equal values, such
// as 1 and 1.0, count once, but null and undefined, which hash apart, are
// both kept). Adding and testing are constant time, so a $in of n values
// costs O(n), whatever n.
type valueSet struct {
	vals []bsoncore.Value
	keys [][]byte            // EncodeKey plus the hash point, parallel to vals
	seen map[string]struct{} // keys, once there are more than a few
}

// setIndexAfter is the size from which a set indexes its keys in a map
// (below it a linear search is cheaper).
const setIndexAfter = 8

func (vs *valueSet) add(v bsoncore.Value) {
	k := setKey(v)
	if vs.has(k) {
		return
	}
	vs.vals = append(vs.vals, v)
	vs.keys = append(vs.keys, k)
	switch {
	case vs.seen != nil:
		vs.seen[string(k)] = struct{}{}
	case len(vs.keys) > setIndexAfter:
		vs.seen = make(map[string]struct{}, 2*len(vs.keys))
		for _, x := range vs.keys {
			vs.seen[string(x)] = struct{}{}
		}
	}
}

func (vs *valueSet) has(k []byte) bool {
	if vs.seen != nil {
		_, ok := vs.seen[string(k)]
		return ok
	}
	for _, x := range vs.keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// setKey identifies a value in a set: its key encoding, which equal
// values share, plus a mark for undefined, which encodes like null but
// hashes apart. (Other equal values that hash apart never get here:
// equalTo refuses them.)
func setKey(v bsoncore.Value) []byte {
	k := value.EncodeKey(make([]byte, 0, 32), v)
	if v.Type == bsoncore.TypeUndefined {
		return append(k, 1)
	}
	return append(k, 0)
}

func intersect(a, b valueSet) valueSet {
	var out valueSet
	for i, k := range a.keys {
		if b.has(k) {
			out.vals = append(out.vals, a.vals[i])
			out.keys = append(out.keys, k)
		}
	}
	if len(out.keys) > setIndexAfter {
		out.seen = make(map[string]struct{}, len(out.keys))
		for _, k := range out.keys {
			out.seen[string(k)] = struct{}{}
		}
	}
	return out
}

// constrain returns the set a filter pins the field at path to, if it
// does; hashed: the field places by hash (equalTo).
func constrain(filter bsoncore.Document, path string, hashed bool, depth int) (valueSet, bool) {
	if depth > maxDepth {
		return valueSet{}, false
	}
	elems, err := filter.Elements()
	if err != nil {
		return valueSet{}, false
	}
	var cur valueSet
	have := false
	and := func(set valueSet) {
		if have {
			cur = intersect(cur, set)
		} else {
			cur, have = set, true
		}
	}
	for _, el := range elems {
		switch el.Key() {
		case path:
			if set, ok := fieldConstraint(el.Value(), hashed); ok {
				and(set)
			}
		case "$and":
			for _, sub := range subFilters(el.Value()) {
				if set, ok := constrain(sub, path, hashed, depth+1); ok {
					and(set)
				}
			}
		case "$or":
			subs := subFilters(el.Value())
			if len(subs) == 0 {
				break
			}
			var union valueSet
			all := true
			for _, sub := range subs {
				set, ok := constrain(sub, path, hashed, depth+1)
				if !ok {
					all = false
					break
				}
				for _, v := range set.vals {
					union.add(v)
				}
			}
			if all {
				and(union)
			}
		}
	}
	return cur, have
}

func subFilters(v bsoncore.Value) []bsoncore.Document {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	vals, err := arr.Values()
	if err != nil {
		return nil
	}
	out := make([]bsoncore.Document, 0, len(vals))
	for _, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil
		}
		out = append(out, d)
	}
	return out
}

// fieldConstraint is what {k: v} pins k to.
func fieldConstraint(v bsoncore.Value, hashed bool) (valueSet, bool) {
	var set valueSet
	switch v.Type {
	case bsoncore.TypeRegex:
		return set, false
	case bsoncore.TypeEmbeddedDocument:
		doc := v.Document()
		first, err := doc.IndexErr(0)
		if err == nil && len(first.Key()) > 0 && first.Key()[0] == '$' {
			return operatorConstraint(doc, hashed)
		}
	}
	return equalTo(v, hashed)
}

// operatorConstraint is what {k: {$op: ..., ...}} pins k to.
func operatorConstraint(ops bsoncore.Document, hashed bool) (valueSet, bool) {
	elems, _ := ops.Elements()
	var cur valueSet
	have := false
	for _, el := range elems {
		var set valueSet
		var ok bool
		switch el.Key() {
		case "$eq":
			set, ok = equalTo(el.Value(), hashed)
		case "$in":
			set, ok = inConstraint(el.Value(), hashed)
		default:
			continue
		}
		if !ok {
			continue
		}
		if have {
			cur = intersect(cur, set)
		} else {
			cur, have = set, true
		}
	}
	return cur, have
}

func inConstraint(v bsoncore.Value, hashed bool) (valueSet, bool) {
	var set valueSet
	arr, ok := v.ArrayOK()
	if !ok {
		return set, false
	}
	vals, err := arr.Values()
	if err != nil {
		return set, false
	}
	if len(vals) > setIndexAfter {
		set.vals = make([]bsoncore.Value, 0, len(vals))
		set.keys = make([][]byte, 0, len(vals))
		set.seen = make(map[string]struct{}, len(vals))
	}
	for _, x := range vals {
		if x.Type == bsoncore.TypeRegex || (hashed && !hashStable(x, 0)) {
			return valueSet{}, false
		}
		if !hashed && x.Type == bsoncore.TypeUndefined {
			x = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		set.add(x) // as equalTo(x) would
		if hashed && x.Type == bsoncore.TypeNull {
			set.add(undefinedValue)
		}
	}
	return set, true
}

var ten = big.NewInt(10)

// undefinedValue is BSON undefined, which equality to null also matches.
var undefinedValue = bsoncore.Value{Type: bsoncore.TypeUndefined}

// equalTo is the set of values equal to v that a stored shard key can
// hold, or false when equal values may hash apart (hashed: the field
// places by hash). A field placed by its key encoding keeps undefined at
// null's key, so null alone pins both.
func equalTo(v bsoncore.Value, hashed bool) (valueSet, bool) {
	var set valueSet
	if hashed && !hashStable(v, 0) {
		return set, false
	}
	if !hashed && v.Type == bsoncore.TypeUndefined {
		v = bsoncore.Value{Type: bsoncore.TypeNull}
	}
	set.add(v)
	if hashed && v.Type == bsoncore.TypeNull {
		set.add(undefinedValue)
	}
	return set, true
}

// hashStable reports whether every value that compares equal to v hashes
// like v: true unless v holds a number that is not an exact integer
// within (-2^63, 2^63), where doubles and decimals hash apart.
func hashStable(v bsoncore.Value, depth int) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return true
	case bsoncore.TypeDouble:
		d := v.Double()
		return d == math.Trunc(d) && d > -twoTo63 && d < twoTo63
	case bsoncore.TypeDecimal128:
		hi, lo := v.Decimal128()
		d := bson.NewDecimal128(hi, lo)
		coef, exp, err := d.BigInt()
		if err != nil {
			return false
		}
		if exp < 0 {
			// integral only if the coefficient ends in -exp zeros
			for i := 0; i < -exp; i++ {
				if coef.Sign() == 0 {
					break
				}
				if new(big.Int).Mod(coef, ten).Sign() != 0 {
					return false
				}
				coef = new(big.Int).Quo(coef, ten)
			}
		}
		n := toHashInt(v)
		return n != math.MaxInt64 && n != math.MinInt64
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		if depth > maxDepth {
			return false
		}
		elems, err := bsoncore.Document(v.Data).Elements()
		if err != nil {
			return false
		}
		for _, el := range elems {
			if !hashStable(el.Value(), depth+1) {
				return false
			}
		}
		return true
	case bsoncore.TypeUndefined:
		return false // equal to null, hashes apart from it: never pinned alone
	}
	return true
}
