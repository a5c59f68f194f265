package engine

import (
	"slices"
	"testing"

	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func mustCandidate(t *testing.T, key bsoncore.Document) candidateKey {
	t.Helper()
	k, err := parseCandidateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A ranged candidate places documents by value and splits where the
// sample is, as shardCollection does; a range filter reaches only the
// partitions it overlaps; a hashed candidate still places by hash.
func TestRangedCandidatePlacement(t *testing.T) {
	k := mustCandidate(t, bsoncore.NewDocumentBuilder().AppendInt32("n", 1).Build())
	if !k.ranged() || !k.spec().Ranged || k.spec().Path != "n" {
		t.Fatalf("{n: 1}: ranged %v, spec %+v", k.ranged(), k.spec())
	}
	set := &keySampleSet{}
	// 1000 documents with n = 999 down to 0 (sampled in any order), 100
	// bytes each, and n = 500 twice more.
	for i := 999; i >= 0; i-- {
		kv := k.extract(bsoncore.NewDocumentBuilder().AppendInt64("n", int64(i)).Build())
		set.samples = append(set.samples, keySample{val: kv.doc, point: k.point(kv.doc), size: 100})
	}
	kv := k.extract(bsoncore.NewDocumentBuilder().AppendInt64("n", 500).Build())
	set.samples = append(set.samples, keySample{val: kv.doc, point: k.point(kv.doc), size: 100}, keySample{val: kv.doc, point: k.point(kv.doc), size: 100})
	points, sizes := set.pointBytes()
	if len(points) != 1000 || !slices.IsSorted(points) {
		t.Fatalf("%d points, sorted %v", len(points), slices.IsSorted(points))
	}
	at500 := shard.RangePoint(bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, 500)})
	if i, _ := slices.BinarySearch(points, at500); sizes[i] != 300 {
		t.Fatalf("n = 500 holds %d bytes, want 300", sizes[i])
	}
	m := shard.NewMap(1).SplitToData(k.spec(), 4, points, sizes)
	if m.Len() != 4 {
		t.Fatalf("%d partitions", m.Len())
	}
	// Values in order land in partitions in order, and the largest in the last.
	last := -1
	for i := range 1000 {
		kv := k.extract(bsoncore.NewDocumentBuilder().AppendInt32("n", int32(i)).Build())
		p := m.Lookup(k.point(kv.doc))
		if p < last {
			t.Fatalf("n = %d in partition %d after one in %d", i, p, last)
		}
		last = p
	}
	if last != 3 {
		t.Fatalf("the largest value is in partition %d of 4", last)
	}
	filter := bsoncore.NewDocumentBuilder().AppendDocument("n", bsoncore.NewDocumentBuilder().AppendInt32("$gte", 990).Build()).Build()
	kind, parts := k.route(filter, m)
	if kind != routeMulti || !slices.Equal(parts, []int{3}) {
		t.Fatalf("{n: {$gte: 990}}: route %d, partitions %v", kind, parts)
	}
	eq := bsoncore.NewDocumentBuilder().AppendInt32("n", 5).Build()
	if kind, parts := k.route(eq, m); kind != routeSingle || !slices.Equal(parts, []int{0}) {
		t.Fatalf("{n: 5}: route %d, partitions %v", kind, parts)
	}

	h := mustCandidate(t, bsoncore.NewDocumentBuilder().AppendString("n", "hashed").Build())
	v := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)}
	if got := h.point(bsoncore.NewDocumentBuilder().AppendValue("n", v).Build()); got != shard.Point(v) {
		t.Fatalf("hashed point %x, want %x", got, shard.Point(v))
	}
}
