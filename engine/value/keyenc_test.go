package value

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func show(v bsoncore.Value) string { return v.Type.String() + " " + v.String() }

// pairs yields random pairs; half of them are a value and a close relative.
func randomPairs(t *testing.T, seed uint64, n int, fn func(a, b bsoncore.Value)) {
	t.Helper()
	g := newGen(seed)
	for i := 0; i < n; i++ {
		a := g.value(3)
		var b bsoncore.Value
		if g.pick(2) == 0 {
			b = g.mutate(a)
		} else {
			b = g.value(3)
		}
		fn(a, b)
	}
}

// TestEncodeKeyOrderMatchesCompare is the central property: byte order of
// encodings is Compare's order, for random pairs of all types.
func TestEncodeKeyOrderMatchesCompare(t *testing.T) {
	fails := 0
	equal := 0
	randomPairs(t, 1, 60000, func(a, b bsoncore.Value) {
		c := Compare(a, b)
		if c == 0 {
			equal++
		}
		if got := sign(bytes.Compare(enc(a), enc(b))); got != sign(c) && fails < 10 {
			fails++
			t.Errorf("bytes.Compare(EncodeKey(a), EncodeKey(b)) = %d, Compare = %d\na = %s\nb = %s", got, c, show(a), show(b))
		}
		// Values that compare equal must encode identically, or tuples
		// (shard key, _id) would not sort lexicographically.
		if c == 0 && !bytes.Equal(enc(a), enc(b)) && fails < 10 {
			fails++
			t.Errorf("equal values encode differently\na = %s -> %x\nb = %s -> %x", show(a), enc(a), show(b), enc(b))
		}
	})
	// The generator must produce enough ties to make the test meaningful.
	if equal < 3000 {
		t.Errorf("only %d of the pairs were equal; the generator has drifted", equal)
	}
}

func TestCompareAntisymmetricAndReflexive(t *testing.T) {
	fails := 0
	randomPairs(t, 2, 40000, func(a, b bsoncore.Value) {
		if ab, ba := sign(Compare(a, b)), sign(Compare(b, a)); ab != -ba && fails < 10 {
			fails++
			t.Errorf("Compare(a, b) = %d but Compare(b, a) = %d\na = %s\nb = %s", ab, ba, show(a), show(b))
		}
		if Compare(a, a) != 0 && fails < 10 {
			fails++
			t.Errorf("Compare(a, a) != 0 for %s", show(a))
		}
	})
}

func TestCompareTransitive(t *testing.T) {
	g := newGen(3)
	fails := 0
	for i := 0; i < 30000 && fails < 10; i++ {
		a := g.value(2)
		b := g.mutate(a)
		c := g.mutate(b)
		if g.pick(3) == 0 {
			c = g.value(2)
		}
		ab, bc, ac := sign(Compare(a, b)), sign(Compare(b, c)), sign(Compare(a, c))
		// For any ordering, a<=b<=c implies a<=c with equality only if both are equal.
		bad := false
		switch {
		case ab <= 0 && bc <= 0:
			bad = ac > 0 || (ac == 0 && (ab != 0 || bc != 0))
		case ab >= 0 && bc >= 0:
			bad = ac < 0 || (ac == 0 && (ab != 0 || bc != 0))
		}
		if bad {
			fails++
			t.Errorf("not transitive: a?b=%d b?c=%d a?c=%d\na = %s\nb = %s\nc = %s", ab, bc, ac, show(a), show(b), show(c))
		}
	}
}

// TestEncodeKeySelfDelimiting checks that concatenated encodings of tuples
// compare like the tuples, lexicographically.
func TestEncodeKeySelfDelimiting(t *testing.T) {
	g := newGen(4)
	fails := 0
	for i := 0; i < 30000 && fails < 10; i++ {
		n := 1 + g.pick(3)
		var ta, tb []bsoncore.Value
		for j := 0; j < n; j++ {
			a := g.value(2)
			b := a
			switch g.pick(3) {
			case 0:
				b = g.mutate(a)
			case 1:
				b = g.value(2)
			}
			ta, tb = append(ta, a), append(tb, b)
		}
		want := 0
		for j := range ta {
			if want = sign(Compare(ta[j], tb[j])); want != 0 {
				break
			}
		}
		var ea, eb []byte
		for j := range ta {
			ea = EncodeKey(ea, ta[j])
			eb = EncodeKey(eb, tb[j])
		}
		if got := sign(bytes.Compare(ea, eb)); got != want {
			fails++
			t.Errorf("tuples compare %d, encodings %d\na = %v\nb = %v", want, got, ta, tb)
		}
	}
	// A shorter tuple that is a prefix sorts first, and no encoding is a
	// proper prefix of another value's encoding.
	for i := 0; i < 20000; i++ {
		a, b := g.value(2), g.value(2)
		ea, eb := enc(a), enc(b)
		if len(ea) < len(eb) && bytes.HasPrefix(eb, ea) {
			t.Fatalf("encoding of %s is a prefix of that of %s", show(a), show(b))
		}
	}
}

// TestEncodeKeyAppends checks that EncodeKey appends and leaves dst alone.
func TestEncodeKeyAppends(t *testing.T) {
	prefix := []byte("d/\x00\x00\x00\x01")
	v := doc("a", arr(i32(1), str("x\x00y")), "b", dec("1.5"))
	got := EncodeKey(append([]byte(nil), prefix...), v)
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], enc(v)) {
		t.Fatalf("EncodeKey(prefix, v) = %x, want %x + %x", got, prefix, enc(v))
	}
}
