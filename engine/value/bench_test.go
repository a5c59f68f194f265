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

// numberPairs are the numeric comparisons queries and sorts make most:
// same-type pairs first, then the mixed ones.
var numberPairs = []struct {
	name string
	a, b bsoncore.Value
}{
	{"int32-int32", i32(123456), i32(123457)},
	{"int64-int64", i64(1<<53 + 1), i64(1 << 53)},
	{"double-double", dbl(3.25), dbl(3.5)},
	{"int32-double", i32(3), dbl(3.25)},
	{"int64-double", i64(1<<53 + 1), dbl(1 << 53)},
	{"decimal-decimal", dec("12345.6789"), dec("12345.67891")},
	{"decimal-int32", dec("12345.6789"), i32(12345)},
	{"decimal-double/apart", dec("12345.6789"), dbl(12000.5)},
	{"decimal-double/near", dec("0.1"), dbl(0.1)},
	{"decimal-huge", dec("1E6000"), dec("1.5E6000")},
}

func BenchmarkCompareNumbers(b *testing.B) {
	for _, p := range numberPairs {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compare(p.a, p.b)
			}
		})
	}
}

// numberValues cover EncodeKey's paths for numbers: integers, doubles
// whose exact expansion is short or long, decimals small and huge.
var numberValues = []struct {
	name string
	v    bsoncore.Value
}{
	{"int32", i32(123456)},
	{"int64", i64(1<<53 + 1)},
	{"double/integral", dbl(1e15)},
	{"double/3.25", dbl(3.25)},
	{"double/0.1", dbl(0.1)},
	{"double/1e300", dbl(1e300)},
	{"decimal/small", dec("12345.6789")},
	{"decimal/34digits", dec("1234567890123456789012345678901234E-20")},
	{"decimal/huge", dec("1.5E6000")},
}

func BenchmarkEncodeKeyNumbers(b *testing.B) {
	for _, nv := range numberValues {
		b.Run(nv.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf = EncodeKey(buf[:0], nv.v)
			}
		})
	}
}
