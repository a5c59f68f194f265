package value

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var benchValues = []struct {
	name string
	v    bsoncore.Value
}{
	{"int32", i32(123456)},
	{"int64", i64(1<<53 + 1)},
	{"double", dbl(3.25)},
	{"decimal", dec("12345.6789")},
	{"string", str("user-000123456789")},
	{"objectid", oid(7)},
	{"doc", doc("region", str("eu-west"), "tenant", i32(42), "tags", arr(str("a"), str("b")))},
}

func BenchmarkEncodeKey(b *testing.B) {
	for _, bv := range benchValues {
		b.Run(bv.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf = EncodeKey(buf[:0], bv.v)
			}
		})
	}
}

func BenchmarkCompare(b *testing.B) {
	for _, bv := range benchValues {
		other := newGen(9).mutate(bv.v)
		b.Run(bv.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compare(bv.v, other)
			}
		})
	}
}
