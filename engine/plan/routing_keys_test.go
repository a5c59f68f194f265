package plan

import (
	"encoding/binary"
	"testing"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func anyValue(t *testing.T, x any) bsoncore.Value {
	t.Helper()
	typ, data, err := bson.MarshalValue(x)
	if err != nil {
		t.Fatal(err)
	}
	return bsoncore.Value{Type: bsoncore.Type(typ), Data: data}
}

// TestRouteRangedKey: a ranged key's documents are keyed by an
// order-preserving point, so a range on the key reads only the points of
// its values, in the partitions that own them (here one partition per
// leading byte, which is the value's type: numbers in 10, strings in 15).
func TestRouteRangedKey(t *testing.T) {
	f := newFixture(t)
	c, err := f.s.ShardCollection("db", "r", shard.Spec{Path: "k", Ranged: true}, 256, store.Throughput{RUs: 400})
	if err != nil {
		t.Fatal(err)
	}
	key := func(k any) []byte {
		return ShardedKey(c, anyValue(t, k), int32Value(1))
	}
	in := func(spans []Span, k any) bool {
		for _, sp := range spans {
			if sp.Contains(key(k)) {
				return true
			}
		}
		return false
	}
	ids := func(spans []Span) []string {
		var out []string
		for _, sp := range spans {
			out = append(out, sp.ID)
		}
		return out
	}
	if all := RoutePartitions(c, raw(t, bson.D{{Key: "x", Value: 1}})); len(all) != 256 {
		t.Fatalf("a filter without the key reads %d partitions", len(all))
	}
	spans := RoutePartitions(c, raw(t, bson.D{{Key: "k", Value: bson.D{{Key: "$gte", Value: 5}, {Key: "$lt", Value: 100}}}}))
	if len(spans) != 1 || spans[0].ID != "10" || ByShardKey(spans) {
		t.Fatalf("a range of numbers reads %v", ids(spans))
	}
	for _, k := range []any{int32(5), 5.5, int64(99), 99.99} {
		if !in(spans, k) {
			t.Errorf("k=%v is in the range but not read", k)
		}
	}
	for _, k := range []any{int32(4), 4.99, int32(100), int32(1000), "7"} {
		if in(spans, k) {
			t.Errorf("k=%v is outside the range but read", k)
		}
	}
	// the span starts at the bound's point, not at the partition's start
	if got := binary.BigEndian.Uint64(spans[0].Start[DocPrefixLen:]); got != shard.RangePoint(anyValue(t, int32(5))) {
		t.Errorf("span starts at %#x", got)
	}
	spans = RoutePartitions(c, raw(t, bson.D{{Key: "k", Value: bson.D{{Key: "$gt", Value: "m"}}}}))
	if len(spans) != 1 || spans[0].ID != "15" || !in(spans, "z") || in(spans, "a") || in(spans, "m") {
		t.Fatalf("a range of strings reads %v", ids(spans))
	}
	spans = RoutePartitions(c, raw(t, bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "k", Value: bson.D{{Key: "$lte", Value: 3}}}},
		bson.D{{Key: "k", Value: "x"}},
	}}}))
	if len(spans) != 2 || spans[0].ID != "10" || spans[1].ID != "15" || !in(spans, int32(-4)) || !in(spans, "x") || in(spans, "y") {
		t.Fatalf("$or of a range and a value reads %v", ids(spans))
	}
	// equality on the whole key: that logical partition
	spans = RoutePartitions(c, raw(t, bson.D{{Key: "k", Value: 42.0}}))
	if !ByShardKey(spans) || LogicalPartitionCount(spans) != 1 || !in(spans, int32(42)) || in(spans, int32(43)) {
		t.Fatalf("equality reads %v", ids(spans))
	}
}

// TestRouteCompoundKey: the whole key pins a logical partition, the
// leading field alone one point, another field alone nothing.
func TestRouteCompoundKey(t *testing.T) {
	f := newFixture(t)
	for _, spec := range []shard.Spec{
		{Path: "k", Ranged: true, Rest: []shard.Field{{Path: "j"}}},
		{Path: "k", Rest: []shard.Field{{Path: "j"}}},
		{Path: "k", Ranged: true, Rest: []shard.Field{{Path: "j", Hashed: true}}},
	} {
		name := "c" + spec.String()
		c, err := f.s.ShardCollection("db", name, spec, 16, store.Throughput{RUs: 400})
		if err != nil {
			t.Fatal(err)
		}
		doc := func(k, j int32) ([]byte, bsoncore.Document) {
			d := raw(t, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: k}, {Key: "j", Value: j}})
			key, err := DocKey(c, d, int32Value(1))
			if err != nil {
				t.Fatal(err)
			}
			return key, d
		}
		in := func(spans []Span, k, j int32) bool {
			key, _ := doc(k, j)
			for _, sp := range spans {
				if sp.Contains(key) {
					return true
				}
			}
			return false
		}
		spans := RoutePartitions(c, raw(t, bson.D{{Key: "k", Value: 1}, {Key: "j", Value: bson.D{{Key: "$in", Value: bson.A{2, 3}}}}}))
		if !ByShardKey(spans) || LogicalPartitionCount(spans) != 2 || !in(spans, 1, 2) || !in(spans, 1, 3) || in(spans, 1, 4) || in(spans, 2, 2) {
			t.Fatalf("%v: the whole key reads %d logical partitions", spec, LogicalPartitionCount(spans))
		}
		spans = RoutePartitions(c, raw(t, bson.D{{Key: "k", Value: 1}}))
		if len(spans) != 1 || ByShardKey(spans) || !in(spans, 1, 2) || !in(spans, 1, 99) || in(spans, 2, 2) {
			t.Fatalf("%v: the leading field reads %d spans", spec, len(spans))
		}
		if spans := RoutePartitions(c, raw(t, bson.D{{Key: "j", Value: 1}})); len(spans) != 16 {
			t.Fatalf("%v: another field reads %d spans", spec, len(spans))
		}
		// the key's value is the document of the fields; its point the
		// leading field's
		key, d := doc(7, 8)
		sk, _ := spec.Extract(d)
		if got := binary.BigEndian.Uint64(key[DocPrefixLen:]); got != spec.Point(sk) {
			t.Fatalf("%v: point %#x", spec, got)
		}
		want := value.EncodeKey(nil, anyValue(t, bson.D{{Key: "k", Value: int32(7)}, {Key: "j", Value: int32(8)}}))
		if string(key[DocPrefixLen+8:DocPrefixLen+8+len(want)]) != string(want) {
			t.Fatalf("%v: the document key does not hold the whole key", spec)
		}
		// the point read of a sharded collection: _id and the whole key
		pf := raw(t, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 7}, {Key: "j", Value: 8}})
		qf, err := query.Compile(pf)
		if err != nil {
			t.Fatal(err)
		}
		if pk := PointKey(c, qf, pf); string(pk) != string(key) {
			t.Fatalf("%v: point key %x, want %x", spec, pk, key)
		}
	}
}
