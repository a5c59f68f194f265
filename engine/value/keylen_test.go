package value

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestKeyLen: for values of every type, KeyLen finds where one encoding
// ends when another follows it, and refuses every truncation.
func TestKeyLen(t *testing.T) {
	decimal := func(s string) bson.Decimal128 {
		d, err := bson.ParseDecimal128(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	vals := []any{
		bson.MinKey{}, bson.MaxKey{}, bson.Null{}, bson.Undefined{}, int32(5), int64(-7), 2.5, decimal("1.5"),
		int32(0), -0.1, 5e-324, math.Inf(1), math.Inf(-1), math.NaN(), int64(math.MinInt64), -math.MaxFloat64,
		decimal("-1E-6176"), decimal("9.999999999999999999999999999999999E+6144"), decimal("-0"), decimal("NaN"), decimal("-Infinity"),
		"", "abc", "a\x00b", bson.Symbol("s"), bson.JavaScript("f()"),
		bson.D{}, bson.D{{Key: "a", Value: 1}, {Key: "b", Value: bson.D{{Key: "c", Value: bson.A{1, "x"}}}}},
		bson.A{}, bson.A{bson.A{}, bson.D{}},
		bson.Binary{Subtype: 4, Data: []byte{0, 1, 0, 1}}, bson.NewObjectID(), true, false,
		bson.DateTime(-5), bson.Timestamp{T: 1, I: 2}, bson.Regex{Pattern: "a", Options: "i"},
		bson.DBPointer{DB: "db.c", Pointer: bson.NewObjectID()},
		bson.CodeWithScope{Code: "x", Scope: bson.D{{Key: "y", Value: 1}}},
	}
	tail := EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "next")})
	for _, x := range vals {
		typ, data, err := bson.MarshalValue(x)
		if err != nil {
			t.Fatal(err)
		}
		enc := EncodeKey(nil, bsoncore.Value{Type: bsoncore.Type(typ), Data: data})
		n, ok := KeyLen(append(append([]byte(nil), enc...), tail...))
		if !ok || n != len(enc) {
			t.Errorf("%T %v: KeyLen = %d, %v; want %d", x, x, n, ok, len(enc))
		}
		for cut := 0; cut < len(enc); cut++ {
			if n, ok := KeyLen(enc[:cut]); ok {
				t.Errorf("%T %v: KeyLen of %d of %d bytes = %d, want not ok", x, x, cut, len(enc), n)
			}
		}
	}
}
