package shard

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func decValue(t testing.TB, s string) bsoncore.Value {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatal(err)
	}
	return mkValue(t, d)
}

// TestEqualNumbersHashAsMongoDB: numbers that value.Compare finds equal
// hash alike whenever hashStable says so (routing pins equality on that
// promise), and the cases where MongoDB's hashes part equal values stay
// unpinned. Since Compare is exact, a decimal or int64 that merely rounds
// to a double is not equal to it, and so may hash apart.
func TestEqualNumbersHashAsMongoDB(t *testing.T) {
	rows := []struct {
		a, b     bsoncore.Value
		equal    bool // value.Compare(a, b) == 0
		sameHash bool // MongoDB's hashes agree
		pinnable bool // hashStable(a) && hashStable(b)
	}{
		{mkValue(t, int32(1)), decValue(t, "1.00"), true, true, true},
		{mkValue(t, 1.0), decValue(t, "1E0"), true, true, true},
		{mkValue(t, int64(1<<53+1)), decValue(t, "9007199254740993"), true, true, true},
		// -2^63 hashes alike in every type; hashStable is cautious there.
		{mkValue(t, int64(math.MinInt64)), mkValue(t, -9223372036854775808.0), true, true, false},
		{mkValue(t, int64(math.MinInt64)), decValue(t, "-9223372036854775808"), true, true, false},
		{mkValue(t, int64(math.MaxInt64)), decValue(t, "9223372036854775807"), true, true, false},
		// Equal, but MongoDB truncates doubles and rounds decimals.
		{mkValue(t, 1.5), decValue(t, "1.5"), true, false, false},
		{mkValue(t, 9223372036854775808.0), decValue(t, "9223372036854775808"), true, false, false},
		// Not equal any more, though the decimal's nearest double is b.
		{decValue(t, "9007199254740993"), mkValue(t, float64(1<<53)), false, false, true},
		{decValue(t, "0.1"), mkValue(t, 0.1), false, true, false},
	}
	for _, r := range rows {
		if eq := value.Compare(r.a, r.b) == 0; eq != r.equal {
			t.Errorf("Compare(%v, %v) == 0 is %v, want %v", r.a, r.b, eq, r.equal)
		}
		if same := Hash(r.a) == Hash(r.b); same != r.sameHash {
			t.Errorf("Hash(%v) == Hash(%v) is %v, want %v", r.a, r.b, same, r.sameHash)
		}
		if p := hashStable(r.a, 0) && hashStable(r.b, 0); p != r.pinnable {
			t.Errorf("hashStable(%v) && hashStable(%v) is %v, want %v", r.a, r.b, p, r.pinnable)
		}
	}

	// Random numbers of all four types and their equal relatives.
	rng := rand.New(rand.NewPCG(1, 2))
	specials := []int64{0, 1, -1, 1 << 53, 1<<53 + 1, -(1<<53 + 1), math.MaxInt64, math.MinInt64, math.MaxInt32, 1 << 62}
	number := func() int64 {
		if rng.IntN(2) == 0 {
			return specials[rng.IntN(len(specials))] + rng.Int64N(3) - 1
		}
		return rng.Int64() >> rng.IntN(64)
	}
	forms := func(n int64, frac string) []bsoncore.Value {
		s := strconv.FormatInt(n, 10) + frac
		f, _ := strconv.ParseFloat(s, 64)
		vs := []bsoncore.Value{mkValue(t, f), decValue(t, s), decValue(t, s+"000")}
		if frac == "" {
			vs = append(vs, mkValue(t, n), decValue(t, s+"E0"), decValue(t, s+".0"))
			if n == int64(int32(n)) {
				vs = append(vs, mkValue(t, int32(n)))
			}
		}
		if g := strconv.FormatFloat(f, 'f', -1, 64); len(g) <= 34 {
			vs = append(vs, decValue(t, g))
		}
		return vs
	}
	for i := 0; i < 5000; i++ {
		frac := []string{"", "", ".5", ".25", ".1"}[rng.IntN(5)]
		vs := forms(number(), frac)
		for _, a := range vs {
			for _, b := range vs {
				if value.Compare(a, b) == 0 && hashStable(a, 0) && Hash(a) != Hash(b) {
					t.Fatalf("%v and %v compare equal, %v is hash-stable, but they hash %d and %d", a, b, a, Hash(a), Hash(b))
				}
			}
		}
	}
}
