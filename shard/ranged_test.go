package shard

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func inRanges(rs []PointRange, p uint64) bool {
	for _, r := range rs {
		if r.Lo <= p && p <= r.Hi {
			return true
		}
	}
	return false
}

// rangeFilter is randFilter with comparisons on k mixed in.
func rangeFilter(r *rand.Rand, pool []any, depth int) bson.D {
	f := randFilter(r, pool, depth)
	pick := func() any { return pool[r.IntN(len(pool))] }
	for range r.IntN(3) {
		op := []string{"$gt", "$gte", "$lt", "$lte"}[r.IntN(4)]
		f = append(f, bson.E{Key: "k", Value: bson.D{{Key: op, Value: pick()}}})
	}
	if r.IntN(4) == 0 && depth < 3 {
		f = append(f, bson.E{Key: "$or", Value: bson.A{rangeFilter(r, pool, depth+1), rangeFilter(r, pool, depth+1)}})
	}
	return f
}

// TestRangedRoutingCoversMatches is TestRoutingCoversMatches for ranged
// and compound keys: for random filters with comparisons, every matching
// document's point is in PointRanges, and its shard-key value among
// Values when the filter pins the key.
func TestRangedRoutingCoversMatches(t *testing.T) {
	pool := keyPool()
	for _, spec := range []Spec{
		{Path: "k", Ranged: true},
		{Path: "k", Ranged: true, Rest: []Field{{Path: "other"}}},
		{Path: "k", Rest: []Field{{Path: "other"}}},
		{Path: "k", Ranged: true, Rest: []Field{{Path: "other", Hashed: true}}},
	} {
		var docs []bsoncore.Document
		var points []uint64
		var keys [][]byte
		for i, v := range pool {
			for other := range 3 {
				raw, err := bson.Marshal(bson.D{{Key: "_id", Value: i*3 + other}, {Key: "k", Value: v}, {Key: "other", Value: other}})
				if err != nil {
					t.Fatal(err)
				}
				sk, err := spec.Extract(raw)
				if err != nil {
					t.Fatal(err)
				}
				docs, points, keys = append(docs, raw), append(points, spec.Point(sk)), append(keys, value.EncodeKey(nil, sk))
			}
		}
		r := rand.New(rand.NewPCG(21, 22))
		routed, pinned := 0, 0
		for range 3000 {
			raw, err := bson.Marshal(rangeFilter(r, pool, 0))
			if err != nil {
				t.Fatal(err)
			}
			f, err := query.Compile(raw)
			if err != nil {
				continue
			}
			rs, ok := spec.PointRanges(raw)
			if ok {
				routed++
			}
			vals, vok := spec.Values(raw)
			var venc [][]byte
			if vok {
				pinned++
				for _, v := range vals {
					venc = append(venc, value.EncodeKey(nil, v))
				}
			}
			for i, doc := range docs {
				if !f.Match(doc) {
					continue
				}
				if ok && !inRanges(rs, points[i]) {
					t.Fatalf("%v: filter %s matches %s (point %#x) but routes to %x", spec, bson.Raw(raw), bson.Raw(doc), points[i], rs)
				}
				if vok && !slices.ContainsFunc(venc, func(e []byte) bool { return bytes.Equal(e, keys[i]) }) {
					t.Fatalf("%v: filter %s matches %s but pins only %v", spec, bson.Raw(raw), bson.Raw(doc), vals)
				}
			}
		}
		if routed < 300 {
			t.Fatalf("%v: only %d filters were routed", spec, routed)
		}
		t.Logf("%v: %d routed, %d pinned", spec, routed, pinned)
	}
}

// TestRangePointOrder: points of a ranged key never invert the values'
// order, and a range query narrows to few points.
func TestRangePointOrder(t *testing.T) {
	pool := slices.DeleteFunc(keyPool(), func(x any) bool { return x == nil })
	for _, a := range pool {
		for _, b := range pool {
			va, vb := mkValue(t, a), mkValue(t, b)
			if value.Compare(va, vb) < 0 && RangePoint(va) > RangePoint(vb) {
				t.Fatalf("%v < %v but points %#x > %#x", va, vb, RangePoint(va), RangePoint(vb))
			}
		}
	}
	spec := Spec{Path: "n", Ranged: true}
	raw, _ := bson.Marshal(bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 100}, {Key: "$lt", Value: 200}}}})
	rs, ok := spec.PointRanges(raw)
	if !ok || len(rs) != 1 || rs[0].Lo != RangePoint(mkValue(t, int32(100))) || rs[0].Hi != RangePoint(mkValue(t, int32(200)))-1 {
		t.Fatalf("PointRanges(%s) = %x, %v", bson.Raw(raw), rs, ok)
	}
	raw, _ = bson.Marshal(bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 5}, {Key: "$lt", Value: 3}}}})
	if rs, ok := spec.PointRanges(raw); !ok || len(rs) != 0 {
		t.Fatalf("contradictory range: %x, %v", rs, ok)
	}
}

// TestDecodeRangePoint: a point decodes to the least value at or after
// it, exactly for short integers and strings.
func TestDecodeRangePoint(t *testing.T) {
	for _, v := range []any{int32(0), int32(7), int32(-7), int32(500), int64(12345678), "", "EU", "abcdefg", true, false, bson.Null{},
		bson.MinKey{}, bson.MaxKey{}} {
		bv := mkValue(t, v)
		got := DecodeRangePoint(RangePoint(bv))
		if value.Compare(got, bv) != 0 {
			t.Errorf("DecodeRangePoint(RangePoint(%v)) = %v", bv, got)
		}
	}
	for _, v := range []any{1.5, "a long string", int64(1234567890123), bson.DateTime(123456789), -3.25, bson.NewObjectID()} {
		bv := mkValue(t, v)
		p := RangePoint(bv)
		got := DecodeRangePoint(p)
		if RangePoint(got) != p || value.Compare(got, bv) > 0 {
			t.Errorf("DecodeRangePoint(%#x) = %v: not the least value at %v's point", p, got, bv)
		}
	}
}

// TestExtractCompound: a compound key's value is the document of its
// fields, named by path; a missing field is ErrMissing.
func TestExtractCompound(t *testing.T) {
	spec := Spec{Path: "a", Ranged: true, Rest: []Field{{Path: "b.c", Hashed: true}}}
	raw, _ := bson.Marshal(bson.D{{Key: "b", Value: bson.D{{Key: "c", Value: "x"}}}, {Key: "a", Value: int32(3)}})
	sk, err := spec.Extract(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := bson.Marshal(bson.D{{Key: "a", Value: int32(3)}, {Key: "b.c", Value: "x"}})
	if !bytes.Equal(sk.Data, want) || sk.Type != bsoncore.TypeEmbeddedDocument {
		t.Fatalf("Extract = %v, want %v", sk, bson.Raw(want))
	}
	if spec.Point(sk) != RangePoint(mkValue(t, int32(3))) {
		t.Fatalf("Point is not the leading field's")
	}
	raw, _ = bson.Marshal(bson.D{{Key: "a", Value: int32(3)}})
	if _, err := spec.Extract(raw); err == nil {
		t.Fatal("missing field extracted")
	}
}

// TestSplitToData: a ranged key's map splits between the values that hold
// data, at a value's point, not at the middle of the space.
func TestSplitToData(t *testing.T) {
	spec := Spec{Path: "n", Ranged: true}
	var points []uint64
	var sizes []int64
	for i := range 100 {
		points = append(points, RangePoint(mkValue(t, int32(i))))
		sizes = append(sizes, 10)
	}
	m := NewMap(1).SplitToData(spec, 4, points, sizes)
	if m.Len() != 4 {
		t.Fatalf("%d partitions", m.Len())
	}
	for _, p := range m.Partitions()[1:] {
		if !slices.Contains(points, p.Min) {
			t.Fatalf("boundary %#x is not a data point", p.Min)
		}
	}
	counts := make([]int, 4)
	for _, p := range points {
		counts[m.Lookup(p)]++
	}
	for i, n := range counts {
		if n < 20 || n > 30 {
			t.Fatalf("partition %d holds %d of 100 values: %v", i, n, counts)
		}
	}
}
