package value

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func decOf(t *testing.T, s string) Decimal {
	t.Helper()
	x, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatal(err)
	}
	return DecimalOf(DecimalValue(x))
}

func decString(v bsoncore.Value) string {
	h, l := v.Decimal128()
	return bson.NewDecimal128(h, l).String()
}

// TestDecimalArithmetic checks the decimal arithmetic the languages share
// against what MongoDB answers.
func TestDecimalArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  Decimal
		want string
	}{
		{"1 + 0.1 keeps its exponent", AddDecimal(decOf(t, "1"), decOf(t, "0.1")), "1.1"},
		{"34 digits, half to even", AddDecimal(decOf(t, "9999999999999999999999999999999999"), decOf(t, "0.5")), "1.000000000000000000000000000000000E+34"},
		{"1 / 3 rounds to 34 digits", DivDecimal(decOf(t, "1"), decOf(t, "3")), "0.3333333333333333333333333333333333"},
		{"6 / 2 is exact", DivDecimal(decOf(t, "6"), decOf(t, "2")), "3"},
		{"product", MulDecimal(decOf(t, "1.5"), decOf(t, "-2")), "-3.0"},
		{"negation", NegDecimal(decOf(t, "2.50")), "-2.50"},
		{"Infinity - Infinity", AddDecimal(decOf(t, "Infinity"), decOf(t, "-Infinity")), "NaN"},
		{"Infinity x 0", MulDecimal(decOf(t, "Infinity"), decOf(t, "0")), "NaN"},
		{"too large", MulDecimal(decOf(t, "1E+6000"), decOf(t, "1E+6000")), "Infinity"},
		{"a double keeps 15 digits", DecimalOfFloat(0.1), "0.100000000000000"},
		{"an int", DecimalOf(bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, -42)}), "-42"},
	} {
		if got := decString(tc.got.Value()); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if !decOf(t, "0.00").IsZero() || decOf(t, "NaN").IsZero() || !decOf(t, "-Infinity").Special() {
		t.Error("IsZero or Special")
	}
}
