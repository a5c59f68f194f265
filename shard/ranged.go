package shard

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// RangePoint is the place of a ranged shard-key field's value v in the
// point space: the first 8 bytes of its key encoding (value.EncodeKey,
// order preserving), big endian, padded with zeros. So a < b implies
// RangePoint(a) <= RangePoint(b): documents sort by their key, a range of
// values is a contiguous run of points, and a partition's [Min, Max] is a
// range of values. Values whose encodings share 8 bytes share a point
// (and so a partition); their logical partitions stay apart by the whole
// value that follows the point in the document key.
func RangePoint(v bsoncore.Value) uint64 {
	var buf [48]byte
	return prefixPoint(value.EncodeKey(buf[:0], v))
}

// rangePointExact is RangePoint(v) and whether v is the only value at
// its point: its encoding fits the point, and as encodings are
// prefix-free, every other value's differs from it within the point.
func rangePointExact(v bsoncore.Value) (uint64, bool) {
	var buf [48]byte
	enc := value.EncodeKey(buf[:0], v)
	return prefixPoint(enc), len(enc) <= 8
}

// prefixPoint is an encoding's first 8 bytes as a point.
func prefixPoint(enc []byte) uint64 {
	var b [8]byte
	copy(b[:], enc)
	return binary.BigEndian.Uint64(b[:])
}

// PointRange is the points [Lo, Hi] (inclusive).
type PointRange struct{ Lo, Hi uint64 }

// maxPointRanges bounds the ranges a filter routes to; past it the
// filter routes to every partition.
const maxPointRanges = 1024

// PointRanges returns the points a filter's documents can lie at, when it
// narrows them: ascending, disjoint ranges. ok is false when any point is
// possible. A hashed leading field narrows to the points of the values it
// is pinned to (as Values pins it); a ranged one also by comparisons:
//
//	{k: v}, {k: {$eq: v}}       RangePoint(v)
//	{k: {$in: [v, ...]}}        each value's point
//	{k: {$gt|$gte: v}}          from RangePoint(v) to the end of v's type
//	                            (MongoDB compares within a type only)
//	{k: {$lt|$lte: v}}          from the start of v's type to RangePoint(v)
//	{$and: [...]}, {$or: [...]} intersection, union (when every branch
//	                            narrows)
//
// Like Values it only over-approximates.
func (s Spec) PointRanges(filter bsoncore.Document) ([]PointRange, bool) {
	if !s.Ranged {
		set, ok := constrain(filter, s.Path, true, 0)
		if !ok || len(set.vals) > maxPointRanges {
			return nil, false
		}
		out := make([]PointRange, 0, len(set.vals))
		for _, v := range set.vals {
			p := Point(v)
			out = append(out, PointRange{p, p})
		}
		return normalize(out), true
	}
	return rangesOf(filter, s.Path, 0)
}

func rangesOf(filter bsoncore.Document, path string, depth int) ([]PointRange, bool) {
	if depth > maxDepth {
		return nil, false
	}
	elems, err := filter.Elements()
	if err != nil {
		return nil, false
	}
	var cur []PointRange
	have := false
	and := func(rs []PointRange) {
		if have {
			cur = intersectRanges(cur, rs)
		} else {
			cur, have = rs, true
		}
	}
	for _, el := range elems {
		switch el.Key() {
		case path:
			if rs, ok := fieldRanges(el.Value()); ok {
				and(rs)
			}
		case "$and":
			for _, sub := range subFilters(el.Value()) {
				if rs, ok := rangesOf(sub, path, depth+1); ok {
					and(rs)
				}
			}
		case "$or":
			subs := subFilters(el.Value())
			if len(subs) == 0 {
				break
			}
			var union []PointRange
			all := true
			for _, sub := range subs {
				rs, ok := rangesOf(sub, path, depth+1)
				if !ok {
					all = false
					break
				}
				union = append(union, rs...)
			}
			if all {
				and(normalize(union))
			}
		}
	}
	if have && len(cur) > maxPointRanges {
		return nil, false
	}
	return cur, have
}

// fieldRanges is what {k: v} narrows a ranged k's points to.
func fieldRanges(v bsoncore.Value) ([]PointRange, bool) {
	switch v.Type {
	case bsoncore.TypeRegex:
		return nil, false
	case bsoncore.TypeEmbeddedDocument:
		doc := v.Document()
		first, err := doc.IndexErr(0)
		if err == nil && len(first.Key()) > 0 && first.Key()[0] == '$' {
			return operatorRanges(doc)
		}
	}
	p := RangePoint(v)
	return []PointRange{{p, p}}, true
}

func operatorRanges(ops bsoncore.Document) ([]PointRange, bool) {
	elems, _ := ops.Elements()
	var cur []PointRange
	have := false
	for _, el := range elems {
		v := el.Value()
		var rs []PointRange
		switch el.Key() {
		case "$eq":
			if v.Type == bsoncore.TypeRegex {
				continue
			}
			p := RangePoint(v)
			rs = []PointRange{{p, p}}
		case "$in":
			set, ok := inConstraint(v, false)
			if !ok || len(set.vals) > maxPointRanges {
				continue
			}
			for _, x := range set.vals {
				p := RangePoint(x)
				rs = append(rs, PointRange{p, p})
			}
			rs = normalize(rs)
		case "$gt", "$gte":
			if !bounded(v) {
				continue
			}
			lo, exact := rangePointExact(v)
			if el.Key() == "$gt" && exact {
				lo++ // every greater value is at a greater point
			}
			if hi := bracketEnd(v); lo <= hi {
				rs = []PointRange{{lo, hi}}
			}
		case "$lt", "$lte":
			if !bounded(v) {
				continue
			}
			hi, exact := rangePointExact(v)
			if el.Key() == "$lt" && exact {
				hi-- // every smaller value is at a smaller point
			}
			if lo := bracketStart(v); lo <= hi {
				rs = []PointRange{{lo, hi}}
			}
		default:
			continue
		}
		if have {
			cur = intersectRanges(cur, rs)
		} else {
			cur, have = rs, true
		}
	}
	return cur, have
}

// bounded: a comparison with v stays within v's type bracket (MinKey and
// MaxKey compare with everything; a regex is a pattern).
func bounded(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeRegex:
		return false
	}
	return true
}

func bracketStart(v bsoncore.Value) uint64 { return uint64(value.TypeRank(v.Type)) << 56 }

func bracketEnd(v bsoncore.Value) uint64 { return bracketStart(v) | (1<<56 - 1) }

// normalize sorts ranges and merges those that overlap or touch.
func normalize(rs []PointRange) []PointRange {
	slices.SortFunc(rs, func(a, b PointRange) int { return cmp.Compare(a.Lo, b.Lo) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && (r.Lo <= out[n-1].Hi || (out[n-1].Hi != math.MaxUint64 && r.Lo == out[n-1].Hi+1)) {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// intersectRanges intersects two normalized lists.
func intersectRanges(a, b []PointRange) []PointRange {
	var out []PointRange
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].Lo, b[j].Lo), min(a[i].Hi, b[j].Hi)
		if lo <= hi {
			out = append(out, PointRange{lo, hi})
		}
		if a[i].Hi < b[j].Hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// Bound is a partition boundary (a Min, or the Max+1 of the one before)
// as the value of the leading field that starts it, as MongoDB's chunk
// bounds show it: the hash (a NumberLong) for a hashed field, for a
// ranged one the least value whose point is at or after p (decoded from
// the point's 8 bytes of key encoding: exact for integers of up to eight
// digits, strings of up to seven bytes, booleans and null, to the 8th
// byte for dates, ObjectIds and timestamps, the least value of its type
// for other types).
func (s Spec) Bound(p uint64) bsoncore.Value {
	if !s.Ranged {
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, HashOf(p))}
	}
	return DecodeRangePoint(p)
}

// BoundDoc is the chunk bound at point p as MongoDB writes it: a document
// with every field of the key, the leading one at Bound(p) and the others
// at MinKey; at the ends of the space (start 0, or end: the partition
// that ends the space) every field is MinKey, or MaxKey.
func (s Spec) BoundDoc(p uint64, end bool) bson.D {
	out := make(bson.D, 0, 1+len(s.Rest))
	for i, f := range s.Fields() {
		var v any = bson.MinKey{}
		switch {
		case end:
			v = bson.MaxKey{}
		case i == 0 && p != 0:
			b := s.Bound(p)
			v = bson.RawValue{Type: bson.Type(b.Type), Value: b.Data}
		}
		out = append(out, bson.E{Key: f.Path, Value: v})
	}
	return out
}

// DecodeRangePoint is the least value whose RangePoint is at or after p
// (see Bound for how exact).
func DecodeRangePoint(p uint64) bsoncore.Value {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], p)
	rank := b[0]
	rest := b[1:]
	switch rank {
	case 0, 1:
		if p == 0 || (rank == 1 && allZero(rest)) {
			return bsoncore.Value{Type: bsoncore.TypeMinKey}
		}
		return bsoncore.Value{Type: bsoncore.TypeNull}
	case 5:
		if allZero(rest) {
			return bsoncore.Value{Type: bsoncore.TypeNull}
		}
		return leastOfRank(6)
	case 10:
		if v, ok := decodeNumber(rest); ok {
			return v
		}
	case 15:
		var str []byte
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			if c != 0 {
				str = append(str, c)
				continue
			}
			if i+1 < len(rest) && rest[i+1] == 0xFF {
				str = append(str, 0)
				i++
				continue
			}
			break
		}
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, string(str))}
	case 35:
		var oid [12]byte
		copy(oid[:], rest)
		return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}
	case 40:
		if allZero(rest) {
			return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{0}}
		}
		if rest[0] <= 1 && allZero(rest[1:]) {
			return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{rest[0]}}
		}
		if rest[0] == 0 {
			return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}}
		}
		return leastOfRank(41)
	case 45:
		var d [8]byte
		copy(d[:], rest)
		ms := int64(binary.BigEndian.Uint64(d[:]) ^ (1 << 63))
		return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
	case 47:
		t := binary.BigEndian.Uint32(rest[:4])
		i := uint32(rest[4])<<24 | uint32(rest[5])<<16 | uint32(rest[6])<<8
		return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, t, i)}
	case 127:
		return bsoncore.Value{Type: bsoncore.TypeMaxKey}
	}
	if allZero(rest) {
		return leastOfRank(rank)
	}
	return leastOfRank(rank + 1)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// leastOfRank is the least value of the first type rank at or after r.
func leastOfRank(r byte) bsoncore.Value {
	switch {
	case r <= 1:
		return bsoncore.Value{Type: bsoncore.TypeMinKey}
	case r <= 5:
		return bsoncore.Value{Type: bsoncore.TypeNull}
	case r <= 10:
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.NaN())}
	case r <= 15:
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "")}
	case r <= 20:
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().Build()}
	case r <= 25:
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.NewArrayBuilder().Build()}
	case r <= 30:
		return bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, 0, nil)}
	case r <= 35:
		return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: make([]byte, 12)}
	case r <= 40:
		return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{0}}
	case r <= 45:
		return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, math.MinInt64)}
	case r <= 47:
		return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, 0, 0)}
	case r <= 50:
		return bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, "", "")}
	case r <= 60:
		return bsoncore.Value{Type: bsoncore.TypeJavaScript, Data: bsoncore.AppendJavaScript(nil, "")}
	case r <= 65:
		return bsoncore.Value{Type: bsoncore.TypeCodeWithScope, Data: bsoncore.AppendCodeWithScope(nil, "", bsoncore.NewDocumentBuilder().Build())}
	}
	return bsoncore.Value{Type: bsoncore.TypeMaxKey}
}

// decodeNumber reads the number whose key encoding (after the type rank)
// starts with b: class, biased exponent, digit pairs (value's format).
func decodeNumber(b []byte) (bsoncore.Value, bool) {
	switch b[0] {
	case 0x00, 0x01:
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.NaN())}, true
	case 0x02:
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.Inf(-1))}, true
	case 0x04:
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 0)}, true
	case 0x06:
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.Inf(1))}, true
	case 0x03, 0x05:
	default:
		return bsoncore.Value{}, false
	}
	neg := b[0] == 0x03
	var body [6]byte
	copy(body[:], b[1:])
	if neg {
		for i := range body {
			body[i] ^= 0xFF
		}
	}
	exp := int(binary.BigEndian.Uint16(body[:2])) - 0x8000
	var digits []byte
	for _, p := range body[2:] {
		if p == 0 || p > 100 {
			break
		}
		d := p - 1
		digits = append(digits, '0'+d/10, '0'+d%10)
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 0)}, true
	}
	// the value is 0.<digits> x 10^exp
	scale := exp - len(digits)
	if scale >= 0 && exp <= 18 {
		n, err := strconv.ParseInt(string(digits), 10, 64)
		if err == nil {
			for range scale {
				n *= 10
			}
			if neg {
				n = -n
			}
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}, true
			}
			return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}, true
		}
	}
	str := string(digits) + "E" + strconv.Itoa(scale)
	if neg {
		str = "-" + str
	}
	d, err := bson.ParseDecimal128(str)
	if err != nil {
		return bsoncore.Value{}, false
	}
	hi, lo := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}, true
}
