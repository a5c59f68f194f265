package value

import (
	"bytes"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// checkAscending asserts that every value of vs is below every later one,
// both by Compare and by encoded bytes. Each element of vs is a group of
// values that must compare (and encode) equal.
func checkAscending(t *testing.T, vs [][]bsoncore.Value) {
	t.Helper()
	for i, gi := range vs {
		for _, a := range gi {
			for j, gj := range vs {
				for _, b := range gj {
					want := sign(i - j)
					if got := sign(Compare(a, b)); got != want {
						t.Errorf("Compare(%s, %s) = %d, want %d", show(a), show(b), got, want)
					}
					if got := sign(bytes.Compare(enc(a), enc(b))); got != want {
						t.Errorf("EncodeKey order of %s and %s is %d, want %d", show(a), show(b), got, want)
					}
				}
			}
		}
	}
}

func group(vs ...bsoncore.Value) []bsoncore.Value { return vs }

func TestNumericEquality(t *testing.T) {
	checkAscending(t, [][]bsoncore.Value{
		group(i32(1), dbl(1.0), i64(1), dec("1"), dec("1.0"), dec("1E0"), dec("0.1E1"), dec("100E-2")),
	})
	checkAscending(t, [][]bsoncore.Value{
		group(i32(0), dbl(0), dbl(math.Copysign(0, -1)), i64(0), dec("0"), dec("-0"), dec("0E-30"), dec("-0E+10")),
	})
	checkAscending(t, [][]bsoncore.Value{
		group(dbl(math.NaN()), dbl(-math.NaN()), dbl(math.Float64frombits(0x7ff0000000000001)), dec("NaN"), dec("-NaN")),
	})
}

func TestNumericOrder(t *testing.T) {
	const p53 = 1 << 53
	checkAscending(t, [][]bsoncore.Value{
		group(dbl(math.NaN()), dec("NaN")),
		group(dbl(math.Inf(-1)), dec("-Infinity"), dec("-1E400")),
		group(dbl(-math.MaxFloat64)),
		group(dbl(-(1 << 63) - 2048)),
		group(i64(math.MinInt64), dbl(-(1 << 63))),
		group(i64(math.MinInt64 + 1)),
		group(i64(-(p53 + 1))),
		group(dbl(-p53), i64(-p53)),
		group(i32(math.MinInt32), dbl(math.MinInt32)),
		group(dbl(-1.5), dec("-1.5")),
		group(i32(-1), i64(-1), dbl(-1)),
		group(dbl(-math.SmallestNonzeroFloat64)),
		group(i32(0), dbl(math.Copysign(0, -1)), dec("-0")),
		group(dbl(math.SmallestNonzeroFloat64)),
		group(dbl(0.5), dec("0.5")),
		group(i32(1), dbl(1)),
		group(dbl(1.5)),
		group(i32(2)),
		group(dbl(p53-1), i64(p53-1)),
		group(dbl(p53), i64(p53)),
		group(i64(p53 + 1)), // no double equals 2^53+1: it sorts between 2^53 and 2^53+2
		group(dbl(p53+2), i64(p53+2)),
		group(i64(p53 + 3)),
		group(dbl(1<<63-1024), i64(1<<63-1024)),
		group(i64(math.MaxInt64 - 1)),
		group(i64(math.MaxInt64)),
		group(dbl(1<<63), dec("9223372036854775808")),
		group(dbl(math.MaxFloat64)),
		group(dbl(math.Inf(1)), dec("Infinity"), dec("1E400")),
	})
}

func TestInt64BeyondDoublePrecision(t *testing.T) {
	// MongoDB compares int64 and double exactly: 2^53+1 is not 2^53, even
	// though float64(2^53+1) == 2^53.
	big, d := i64(1<<53+1), dbl(1<<53)
	if float64(int64(1<<53+1)) != 1<<53 {
		t.Fatal("premise: float64(2^53+1) rounds to 2^53")
	}
	if Compare(big, d) <= 0 || Compare(d, big) >= 0 || bytes.Compare(enc(big), enc(d)) <= 0 {
		t.Errorf("int64(2^53+1) must sort above double(2^53)")
	}
	if Equal(i64(math.MaxInt64), dbl(1<<63)) {
		t.Errorf("int64 max (2^63-1) must not equal double 2^63")
	}
}

func TestTypeOrder(t *testing.T) {
	// MongoDB's canonical order of types (bsontypes.h canonicalizeBSONType).
	checkAscending(t, [][]bsoncore.Value{
		group(minKey),
		group(null, undefined),
		group(dbl(math.NaN())),
		group(dbl(math.Inf(1)), dec("Infinity")),
		group(str(""), sym("")),
		group(str("\xff\xff")),
		group(doc()),
		group(doc("z", maxKey)),
		group(arr()),
		group(arr(maxKey)),
		group(bin(0)),
		group(bin(0x80, 0xff, 0xff)),
		group(oid(0)),
		group(oid(0xff)),
		group(boolean(false)),
		group(boolean(true)),
		group(date(math.MinInt64)),
		group(date(math.MaxInt64)),
		group(ts(0, 0)),
		group(ts(math.MaxUint32, math.MaxUint32)),
		group(regex("", "")),
		group(regex("z", "z")),
		group(dbptr("", 0)),
		group(js("")),
		group(js("zzz")),
		group(cws("", doc())),
		group(maxKey),
	})
}

// TestUndefinedRanksWithNull documents a deliberate deviation: MongoDB
// ranks undefined (deprecated) just below null; Parsec treats it as null,
// which is also how {a: null} filters see it before MongoDB 8.0.
func TestUndefinedRanksWithNull(t *testing.T) {
	if !Equal(null, undefined) || !bytes.Equal(enc(null), enc(undefined)) {
		t.Errorf("undefined must compare and encode like null")
	}
}

func TestStringOrder(t *testing.T) {
	checkAscending(t, [][]bsoncore.Value{
		group(str(""), sym("")),
		group(str("\x00")),
		group(str("\x00\x00")),
		group(str("\x00\x01")),
		group(str("\x01")),
		group(str("A")),
		group(str("a"), sym("a")),
		group(str("a\x00")),
		group(str("a\x00\x00")),
		group(str("a\x00b")),
		group(str("a\x01")),
		group(str("aa")),
		group(str("b")),
		group(str("é")), // bytes, not collation: 0xC3 sorts above ASCII
		group(str("\xff")),
	})
}

func TestDocumentOrder(t *testing.T) {
	checkAscending(t, [][]bsoncore.Value{
		group(doc()),
		// The element's type rank comes before its name...
		group(doc("z", null)),
		group(doc("a", i32(1)), doc("a", dbl(1)), doc("a", dec("1"))),
		group(doc("a", i32(1), "b", minKey)),
		group(doc("a", i32(1), "a", i32(1))),
		group(doc("a", i32(1), "b", i32(0))),
		group(doc("a", i32(2))),
		// ...then the name, then the value.
		group(doc("b", i32(0))),
		group(doc("a", str(""))),
		group(doc("a", doc("x", i32(1)))),
		group(doc("a", arr())),
	})
}

func TestArrayOrder(t *testing.T) {
	checkAscending(t, [][]bsoncore.Value{
		group(arr()),
		group(arr(null)),
		group(arr(i32(1)), arr(dbl(1))),
		group(arr(i32(1), i32(2)), arr(i64(1), dec("2"))),
		group(arr(i32(1), str("a"))),
		group(arr(i32(2))),
		group(arr(str("a"))),
		group(arr(arr())),
		group(arr(arr(i32(1)))),
		group(arr(maxKey)),
	})
	// Arrays compare element by element, never by their elements' keys,
	// and an object always sorts before an array.
	if Compare(doc("0", i32(5)), arr(i32(1))) >= 0 {
		t.Errorf("{0: 5} must sort before [1]")
	}
}

func TestBinaryOrder(t *testing.T) {
	// MongoDB: by length, then subtype, then bytes.
	checkAscending(t, [][]bsoncore.Value{
		group(bin(0)),
		group(bin(0x80)),
		group(bin(0, 0xff)),
		group(bin(1, 0x00)),
		group(bin(1, 0x01)),
		group(bin(0, 0, 0)),
		group(bin(0xff, 0, 0)),
		group(bin(0, 0, 0, 0, 0)),
		// Old binary (subtype 2) carries an inner length: its 1-byte
		// payload is 5 bytes long in the header, as MongoDB compares it.
		group(bin(2, 7)),
		group(bin(2, 7, 7)),
	})
}

func TestScalarOrders(t *testing.T) {
	checkAscending(t, [][]bsoncore.Value{group(oid(0)), group(oid(1)), group(oid(0xff))})
	checkAscending(t, [][]bsoncore.Value{group(boolean(false)), group(boolean(true))})
	checkAscending(t, [][]bsoncore.Value{group(date(math.MinInt64)), group(date(-1)), group(date(0)), group(date(1)), group(date(math.MaxInt64))})
	// Timestamps are unsigned: a time with the high bit set is the latest.
	checkAscending(t, [][]bsoncore.Value{group(ts(0, 0)), group(ts(0, 1<<31)), group(ts(1, 0)), group(ts(1<<31, 0)), group(ts(math.MaxUint32, 0))})
	checkAscending(t, [][]bsoncore.Value{group(regex("a", "")), group(regex("a", "i")), group(regex("a", "m")), group(regex("a\x01", "")), group(regex("b", ""))})
	checkAscending(t, [][]bsoncore.Value{group(minKey), group(maxKey)})
	checkAscending(t, [][]bsoncore.Value{group(cws("a", doc())), group(cws("a", doc("x", i32(1)))), group(cws("b", doc()))})
}

// TestDecimal128Approximation documents exactly where Parsec's order of
// decimal128 values is MongoDB's and where it is not. Parsec orders a
// decimal by its nearest float64 (DecimalFloat); MongoDB compares decimals
// exactly. So:
//
//   - exact: decimals equal to a float64 (integers below 2^53, halves,
//     1E22, ...) against any number; decimals whose nearest float64s
//     differ; NaN and ±Infinity.
//   - approximate: two different decimals with the same nearest float64
//     compare equal (and their _id keys collide); a decimal against a
//     double or an int64 near it compares as if the decimal were rounded.
func TestDecimal128Approximation(t *testing.T) {
	type row struct {
		a, b   bsoncore.Value
		parsec int // what Compare returns
		mongo  int // what MongoDB returns
	}
	rows := []row{
		// Exact.
		{dec("1"), i32(1), 0, 0},
		{dec("0.5"), dbl(0.5), 0, 0},
		{dec("9007199254740992"), i64(1 << 53), 0, 0},
		{dec("1E22"), dbl(1e22), 0, 0},
		{dec("1.5"), dec("1.25"), 1, 1},
		{dec("-Infinity"), dbl(-math.MaxFloat64), -1, -1},
		{dec("NaN"), dbl(math.Inf(-1)), -1, -1},
		{dec("1E400"), dbl(math.MaxFloat64), 1, 1},
		// Approximate: the decimal is rounded to a float64 first.
		{dec("0.1"), dbl(0.1), 0, -1}, // double 0.1 is 0.1000000000000000055...
		{dec("0.1"), dec("0.1000000000000000000000000000000001"), 0, -1},
		{dec("9007199254740993"), i64(1<<53 + 1), -1, 0}, // decimal rounds to 2^53
		{dec("9007199254740993"), dbl(1 << 53), 0, 1},
		{dec("1E400"), dec("2E400"), 0, -1},                    // both beyond float64: +Inf
		{dec("1E-400"), dbl(0), 0, 1},                          // below float64's range: 0
		{dec("9223372036854775807"), i64(math.MaxInt64), 1, 0}, // decimal rounds up to 2^63
	}
	for _, r := range rows {
		got := sign(Compare(r.a, r.b))
		if got != r.parsec {
			t.Errorf("Compare(%s, %s) = %d, documented as %d (MongoDB: %d)", show(r.a), show(r.b), got, r.parsec, r.mongo)
		}
		if e := sign(bytes.Compare(enc(r.a), enc(r.b))); e != got {
			t.Errorf("EncodeKey order of %s and %s is %d, Compare says %d", show(r.a), show(r.b), e, got)
		}
	}
}
