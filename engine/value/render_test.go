package value

import (
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestRender: every BSON type as mongod's error messages write it
// (BSONElement::toString).
func TestRender(t *testing.T) {
	uuid := []byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	for _, c := range []struct {
		v    bsoncore.Value
		want string
	}{
		{bsoncore.Value{}, "MISSING"},

		{i32(0), "0"},
		{i32(-7), "-7"},
		{i32(math.MaxInt32), "2147483647"},
		{i64(math.MinInt64), "-9223372036854775808"},
		{i64(5), "5"},

		// doubles: C's "%.16g", then ".0" when that has no '.'
		{dbl(1), "1.0"},
		{dbl(-2), "-2.0"},
		{dbl(math.Copysign(0, -1)), "-0.0"},
		{dbl(1.5), "1.5"},
		{dbl(0.1), "0.1"},
		{dbl(0.1 + 0.2), "0.3"},
		{dbl(1.0 / 3), "0.3333333333333333"},
		{dbl(123456789012345), "123456789012345.0"},
		{dbl(1e15), "1000000000000000.0"},
		{dbl(1e16), "1e+16.0"},
		{dbl(1e20), "1e+20.0"},
		{dbl(1.5e20), "1.5e+20"},
		{dbl(1e-5), "1e-05.0"},
		{dbl(0.0001), "0.0001"},
		{dbl(math.MaxFloat64), "1.797693134862316e+308"},
		{dbl(math.NaN()), "nan.0"},
		{dbl(math.Inf(1)), "inf.0"},
		{dbl(math.Inf(-1)), "-inf.0"},

		{dec("1.50"), "1.50"},
		{dec("-0"), "-0"},
		{dec("1E+400"), "1E+400"},
		{dec("12.3E+10"), "1.23E+11"},
		{dec("NaN"), "NaN"},
		{dec("-Infinity"), "-Infinity"},

		// strings and symbols in double quotes, as they are
		{str("x"), `"x"`},
		{str(""), `""`},
		{str(`say "hi"\`), `"say "hi"\"`},
		{str("héllo"), `"héllo"`},
		{sym("s"), `"s"`},

		{js("function() { return 1 }"), "function() { return 1 }"},
		{cws("f()", doc("a", i32(1))), "CodeWScope( f(), { a: 1 })"},

		{boolean(true), "true"},
		{boolean(false), "false"},
		{null, "null"},
		{undefined, "undefined"},
		{minKey, "MinKey"},
		{maxKey, "MaxKey"},

		{oid(0xab), "ObjectId('0000000000000000000000ab')"},
		{dbptr("db.c", 1), "DBRef('db.c',000000000000000000000001)"},
		{date(0), "new Date(0)"},
		{date(1700000000123), "new Date(1700000000123)"},
		{date(-86400000), "new Date(-86400000)"},
		{ts(1, 2), "Timestamp(1, 2)"},
		{ts(math.MaxUint32, 0), "Timestamp(4294967295, 0)"},
		{regex("^a.*", "im"), "/^a.*/im"},
		{regex("x", ""), "/x/"},

		{bin(0), "BinData(0, )"},
		{bin(0, 0x0a, 0xbc), "BinData(0, 0ABC)"},
		{bin(0x80, 1), "BinData(128, 01)"},
		{bin(4, uuid...), `UUID("12345678-9abc-def0-0123-456789abcdef")`},
		{bin(4, 1, 2), "BinData(4, 0102)"},
		{bin(3, uuid...), "BinData(3, 123456789ABCDEF00123456789ABCDEF)"},

		{doc(), "{}"},
		{arr(), "[]"},
		{doc("a", i32(1)), "{ a: 1 }"},
		{doc("a", i32(1), "b", str("x"), "c", dbl(2)), `{ a: 1, b: "x", c: 2.0 }`},
		{arr(i32(1), str("two"), null), `[ 1, "two", null ]`},
		{doc("a", arr(doc("b", arr()), doc())), "{ a: [ { b: [] }, {} ] }"},
		{arr(arr(i32(1)), arr()), "[ [ 1 ], [] ]"},

		// a type byte BSON does not define
		{bsoncore.Value{Type: 0x42}, "?type=66"},
	} {
		if got := Render(c.v); got != c.want {
			t.Errorf("Render(%s %v) = %s, want %s", c.v.Type, c.v.Data, got, c.want)
		}
	}
}

func TestRenderDocumentAndElement(t *testing.T) {
	d := doc("_id", i32(1), "n", dbl(0.5))
	if got, want := RenderDocument(d.Data), "{ _id: 1, n: 0.5 }"; got != want {
		t.Errorf("RenderDocument = %s, want %s", got, want)
	}
	if got, want := RenderDocument(doc().Data), "{}"; got != want {
		t.Errorf("RenderDocument(empty) = %s, want %s", got, want)
	}
	if got, want := RenderElement("a.b", arr(i32(1))), "a.b: [ 1 ]"; got != want {
		t.Errorf("RenderElement = %s, want %s", got, want)
	}
	if got, want := string(AppendRender([]byte("x: "), i64(3))), "x: 3"; got != want {
		t.Errorf("AppendRender = %s, want %s", got, want)
	}
}

// TestRenderMalformed: truncated or corrupt data never panics; what can be
// read is shown.
func TestRenderMalformed(t *testing.T) {
	full := doc("a", i32(1), "b", str("xyz"))
	for n := 0; n < len(full.Data); n++ {
		Render(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: full.Data[:n]})
	}
	for _, typ := range []bsoncore.Type{
		bsoncore.TypeDouble, bsoncore.TypeString, bsoncore.TypeBinary, bsoncore.TypeObjectID,
		bsoncore.TypeDateTime, bsoncore.TypeRegex, bsoncore.TypeDBPointer, bsoncore.TypeJavaScript,
		bsoncore.TypeSymbol, bsoncore.TypeCodeWithScope, bsoncore.TypeInt32, bsoncore.TypeTimestamp,
		bsoncore.TypeInt64, bsoncore.TypeDecimal128,
	} {
		if got := Render(bsoncore.Value{Type: typ, Data: []byte{1}}); !strings.HasPrefix(got, "?type=") {
			t.Errorf("Render of a truncated %s = %q, want ?type=…", typ, got)
		}
	}
}
