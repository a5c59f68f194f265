package value

import (
	"bytes"
	"encoding/hex"
	"math"
	"strings"
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
		group(dbl(math.Inf(-1)), dec("-Infinity")),
		group(dec("-9.999999999999999999999999999999999E+6144")),
		group(dec("-1E400")),
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
		group(dec("1E400")),
		group(dec("9.999999999999999999999999999999999E+6144")),
		group(dbl(math.Inf(1)), dec("Infinity")),
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

// TestDecimal128Exact: MongoDB compares decimal128 values with every
// other number by exact value, and so does Parsec. Double 0.1 is
// 0.1000000000000000055511151231257827021181583404541015625, so it is above
// NumberDecimal("0.1") and even above the 34-digit decimal that truncates
// it; the second column of each row is the exact expansion's neighbour.
func TestDecimal128Exact(t *testing.T) {
	const p53 = 1 << 53
	rows := []struct {
		a, b bsoncore.Value
		want int // sign of Compare(a, b)
	}{
		{dec("0.1"), dbl(0.1), -1},
		{dec("0.1000000000000000055511151231257827"), dbl(0.1), -1},
		{dec("0.1000000000000000055511151231257828"), dbl(0.1), 1},
		{dec("0.3"), dbl(0.3), 1}, // double 0.3 is 0.29999999999999998889...
		{dec("0.1"), dec("0.1000000000000000000000000000000001"), -1},
		{dec("0.5"), dbl(0.5), 0},
		{dec("1.0000000000000000000000000001"), i32(1), 1},
		{dec("1.0000000000000000000000000001"), dbl(1), 1},
		{dec("1.0000000000000000000000000001"), dec("1"), 1},
		{dec("0.9999999999999999999999999999999999"), i64(1), -1},
		{dec("1.00"), i32(1), 0},
		{dec("1.00"), i64(1), 0},
		{dec("1.00"), dbl(1), 0},
		{dec("100E-2"), dec("0.001E3"), 0},
		{dec("-1.5"), dbl(-1.5), 0},
		{dec("2147483647"), i32(math.MaxInt32), 0},
		{dec("9007199254740993"), i64(p53 + 1), 0},
		{dec("9007199254740993"), dbl(p53), 1},
		{dec("9007199254740993"), dbl(p53 + 2), -1},
		{i64(p53 + 1), dbl(p53), 1},
		{dec("9223372036854775807"), i64(math.MaxInt64), 0},
		{dec("9223372036854775807"), dbl(1 << 63), -1},
		{dec("9223372036854775808"), dbl(1 << 63), 0},
		{dec("9223372036854775808"), i64(math.MaxInt64), 1},
		{dec("-9223372036854775808"), i64(math.MinInt64), 0},
		{dec("-9223372036854775808"), dbl(-(1 << 63)), 0},
		{dec("-9223372036854775809"), i64(math.MinInt64), -1},
		{dec("1E22"), dbl(1e22), 0},
		{dec("1E23"), dbl(1e23), 1}, // double 1e23 is 99999999999999991611392
		{dec("99999999999999991611392"), dbl(1e23), 0},
		{dec("1.797693134862315708145274237317043E+308"), dbl(math.MaxFloat64), -1},
		{dec("1.797693134862315708145274237317044E+308"), dbl(math.MaxFloat64), 1},
		{dec("4.940656458412465441765687928682213E-324"), dbl(math.SmallestNonzeroFloat64), -1},
		{dec("4.940656458412465441765687928682214E-324"), dbl(math.SmallestNonzeroFloat64), 1},
		// Doubles whose exact expansions have zeros in digits 35 to 38
		// and more digits after: keys keep 34 digits and a sticky one.
		{dec("3.830814918144652265954132847359329E-34"), dbl(0x1.fd33e0733a35dp-112), -1},
		{dec("3.830814918144652265954132847359330E-34"), dbl(0x1.fd33e0733a35dp-112), 1},
		{dec("8.544629676189276663967383103820211E-227"), dbl(0x1.031875f8654a1p-751), -1},
		{dec("8.544629676189276663967383103820212E-227"), dbl(0x1.031875f8654a1p-751), 1},
		{dec("1.855849186821939485306045556811245E+64"), dbl(0x1.68e7d29f59ae4p+213), -1},
		{dec("1.855849186821939485306045556811246E+64"), dbl(0x1.68e7d29f59ae4p+213), 1},
		// Beyond double's range, decimals keep their order.
		{dec("1E400"), dec("2E400"), -1},
		{dec("1E400"), dbl(math.MaxFloat64), 1},
		{dec("1E400"), dbl(math.Inf(1)), -1},
		{dec("-1E400"), dbl(math.Inf(-1)), 1},
		{dec("1E-400"), dbl(0), 1},
		{dec("1E-400"), dbl(math.SmallestNonzeroFloat64), -1},
		{dec("-1E-400"), dbl(math.Copysign(0, -1)), -1},
		{dec("1E-400"), dec("1.0000000000000000000000000000001E-400"), -1},
		// Exponent extremes.
		{dec("1E-6176"), dec("0"), 1},
		{dec("1E-6176"), dec("2E-6176"), -1},
		{dec("-1E-6176"), dec("-0"), -1},
		{dec("1E-6176"), dbl(math.SmallestNonzeroFloat64), -1},
		{dec("9.999999999999999999999999999999999E+6144"), dec("Infinity"), -1},
		{dec("9.999999999999999999999999999999999E+6144"), dec("1E6144"), 1},
		{dec("1E6144"), dec("1000000000000000000000000000000000E6111"), 0},
		{dec("-9.999999999999999999999999999999999E+6144"), dbl(math.Inf(-1)), 1},
		{dec("0E-6176"), dec("0E+6111"), 0},
		{dec("-0E+6111"), i32(0), 0},
		{dec("0E-6176"), dbl(math.Copysign(0, -1)), 0},
		// NaN equals NaN of both types and sorts below every number.
		{dec("NaN"), dbl(math.NaN()), 0},
		{dec("-NaN"), dec("NaN"), 0},
		{dec("NaN"), dec("-Infinity"), -1},
		{dbl(math.NaN()), dec("-Infinity"), -1},
		{dec("NaN"), dbl(math.Inf(-1)), -1},
		{dec("-Infinity"), dbl(math.Inf(-1)), 0},
		{dec("Infinity"), dbl(math.Inf(1)), 0},
		{dec("Infinity"), i64(math.MaxInt64), 1},
		// A coefficient of 10^34 or more is not canonical: it means zero.
		{decBits(6176<<49|decLimitHi, decLimitLo), i32(0), 0},
		{decBits(6176<<49|(1<<49-1), math.MaxUint64), dbl(0), 0}, // 2^113 - 1
		{decBits(3<<61|6176<<47, 5), i64(0), 0},
	}
	for _, r := range rows {
		for _, swap := range []bool{false, true} {
			a, b, want := r.a, r.b, r.want
			if swap {
				a, b, want = b, a, -want
			}
			if got := sign(Compare(a, b)); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", show(a), show(b), got, want)
			}
			ea, eb := enc(a), enc(b)
			if got := sign(bytes.Compare(ea, eb)); got != want {
				t.Errorf("EncodeKey order of %s and %s is %d, want %d\n%x\n%x", show(a), show(b), got, want, ea, eb)
			}
		}
	}
}

// TestEncodeKeyNumberLayout pins the number format the package comment
// describes.
func TestEncodeKeyNumberLayout(t *testing.T) {
	for _, c := range []struct {
		v    bsoncore.Value
		want string
	}{
		{dbl(math.NaN()), "0a01"},
		{dec("-Infinity"), "0a02"},
		{i32(-1), "0a03 7ffe f4 ff"}, // -0.1E1: inverted exponent 0x8001, pair 11, terminator
		{dec("-0"), "0a04"},
		{i32(0), "0a04"},
		{i32(1), "0a05 8001 0b 00"},      // 0.1E1
		{dec("1.00"), "0a05 8001 0b 00"}, // equal values, equal bytes
		{dbl(1), "0a05 8001 0b 00"},
		{i32(10), "0a05 8002 0b 00"},     // 0.1E2
		{i32(12), "0a05 8002 0d 00"},     // 0.12E2
		{i32(123), "0a05 8003 0d 1f 00"}, // 0.123E3: pairs 12, 30
		{dbl(0.5), "0a05 8000 33 00"},    // 0.5E0
		// 0.1000000000000000055511151231257827|021…: 34 digits and a sticky 1
		{dbl(0.1), "0a05 8000 0b01010101010101 06380c100d201a4f1c0b 00"},
		{dec("1E-6176"), "0a05 67e1 0b 00"},
		{dec("9.999999999999999999999999999999999E+6144"), "0a05 9801 6464646464646464646464646464646464 00"},
		{dbl(math.Inf(1)), "0a06"},
	} {
		want := strings.ReplaceAll(c.want, " ", "")
		if got := hex.EncodeToString(enc(c.v)); got != want {
			t.Errorf("EncodeKey(%s) = %s, want %s", show(c.v), got, want)
		}
	}
}
