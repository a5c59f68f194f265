package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parsecdb/parsec/engine/query"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// keyPool holds shard-key values that compare equal across types (1, 1.0,
// 1L, decimal 1), that hash alike without being equal (1.5 and 1), that
// hash apart although equal (decimal 2.5 and double 2.5; null and
// undefined), and documents holding numbers.
func keyPool() []any {
	d := func(s string) bson.Decimal128 { v, _ := bson.ParseDecimal128(s); return v }
	return []any{
		int32(1), int64(1), 1.0, d("1"), d("1.00"), 1.5, d("1.5"),
		2.5, d("2.5"), 3.5, d("3.5"), int32(-7), -7.0, int64(1 << 53), float64(1 << 53),
		"EU", "US", "", bson.Symbol("EU"), nil, bson.Undefined{}, true, false,
		bson.D{{Key: "x", Value: int32(1)}}, bson.D{{Key: "x", Value: 1.0}}, bson.D{{Key: "x", Value: 1.25}},
		bson.D{{Key: "x", Value: d("1.25")}}, bson.NewObjectIDFromTimestamp(bson.DateTime(0).Time()),
		bson.DateTime(1000), bson.MinKey{}, bson.MaxKey{},
	}
}

// randFilter builds a filter on k (and an unrelated field) from the
// language routing understands, and some it must ignore.
func randFilter(r *rand.Rand, pool []any, depth int) bson.D {
	pick := func() any { return pool[r.IntN(len(pool))] }
	n := r.IntN(3) + 1
	var f bson.D
	for range n {
		switch op := r.IntN(11); {
		case op < 3:
			f = append(f, bson.E{Key: "k", Value: pick()})
		case op == 3:
			f = append(f, bson.E{Key: "k", Value: bson.D{{Key: "$eq", Value: pick()}}})
		case op == 4:
			in := bson.A{}
			for range r.IntN(4) {
				in = append(in, pick())
			}
			f = append(f, bson.E{Key: "k", Value: bson.D{{Key: "$in", Value: in}}})
		case op == 5:
			f = append(f, bson.E{Key: "k", Value: bson.D{{Key: "$gte", Value: pick()}}})
		case op == 6:
			f = append(f, bson.E{Key: "k", Value: bson.D{{Key: "$ne", Value: pick()}}})
		case op == 7:
			f = append(f, bson.E{Key: "other", Value: r.IntN(3)})
		case op == 8 && depth < 3:
			f = append(f, bson.E{Key: "$or", Value: bson.A{randFilter(r, pool, depth+1), randFilter(r, pool, depth+1)}})
		case op == 9 && depth < 3:
			f = append(f, bson.E{Key: "$and", Value: bson.A{randFilter(r, pool, depth+1), randFilter(r, pool, depth+1)}})
		default:
			f = append(f, bson.E{Key: "k", Value: bson.Regex{Pattern: "^E"}})
		}
	}
	return f
}

// TestRoutingCoversMatches is routing's safety property, checked against
// the query language itself (engine/query) as the naive reference: for
// random filters and documents, every document the filter matches has its
// shard-key point among those the filter is routed to.
func TestRoutingCoversMatches(t *testing.T) {
	pool := keyPool()
	spec := Spec{Path: "k"}
	var docs []bsoncore.Document
	var points []uint64
	for i, v := range pool {
		for other := range 3 {
			raw, err := bson.Marshal(bson.D{{Key: "_id", Value: i*3 + other}, {Key: "k", Value: v}, {Key: "other", Value: other}})
			if err != nil {
				t.Fatal(err)
			}
			key, err := spec.Extract(raw)
			if err != nil {
				t.Fatal(err)
			}
			docs, points = append(docs, raw), append(points, Point(key))
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	routed, checked := 0, 0
	for range 3000 {
		fd := randFilter(r, pool, 0)
		raw, err := bson.Marshal(fd)
		if err != nil {
			t.Fatal(err)
		}
		f, err := query.Compile(raw)
		if err != nil {
			continue // e.g. $in with a regex inside $eq: not a valid filter
		}
		pts, ok := spec.Points(raw)
		if ok {
			routed++
		}
		for i, doc := range docs {
			if !f.Match(doc) {
				continue
			}
			checked++
			if ok && !slices.Contains(pts, points[i]) {
				t.Fatalf("filter %s matches %s (point %#x) but routes only to %x", bson.Raw(raw), bson.Raw(doc), points[i], pts)
			}
		}
	}
	t.Logf("%d matches checked; %d of 3000 filters routed to a set of points", checked, routed)
	if routed < 300 {
		t.Fatalf("only %d filters were routed: the generator does not exercise routing", routed)
	}
}

// TestRoutingPinsEquality: a plain equality on the key routes to exactly
// the partition that owns the value, at any number of partitions.
func TestRoutingPinsEquality(t *testing.T) {
	spec := Spec{Path: "region"}
	for _, n := range []int{1, 2, 7, 16} {
		m := NewMap(1).SplitTo(n)
		for i := range 200 {
			region := fmt.Sprintf("r%d", i)
			raw, _ := bson.Marshal(bson.D{{Key: "region", Value: region}, {Key: "_id", Value: i}})
			pts, ok := spec.Points(raw)
			if !ok || len(pts) != 1 {
				t.Fatalf("filter %s: points %v, %v", bson.Raw(raw), pts, ok)
			}
			v := mkValue(t, region)
			if got := m.Route(pts); len(got) != 1 || !m.At(got[0]).Contains(Point(v)) {
				t.Fatalf("%d partitions: %q routed to %v", n, region, got)
			}
		}
	}
}

// TestValuesLargeIn reads a $in of 400,000 values (200,000 distinct):
// quadratic deduplication would take minutes here and time the test out.
func TestValuesLargeIn(t *testing.T) {
	const n = 200_000
	arr := bsoncore.NewArrayBuilder()
	for i := range 2 * n {
		arr.AppendInt64(int64(i % n))
	}
	filter := bsoncore.NewDocumentBuilder().AppendDocument("k",
		bsoncore.NewDocumentBuilder().AppendArray("$in", arr.Build()).Build()).Build()
	vals, ok := Spec{Path: "k"}.Values(filter)
	if !ok || len(vals) != n {
		t.Fatalf("got %d values (ok %v), want %d", len(vals), ok, n)
	}
}
