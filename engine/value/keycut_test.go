package value

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// checkKeyOrder checks EncodeKey's rule for a and b (package comment,
// "Long values"): an encoding is cut exactly when the whole encoding is
// longer than the prefix; two cut encodings with one prefix are equal
// exactly when the values are, and then their whole encodings do start
// with that prefix; any other two order as Compare orders the values.
func checkKeyOrder(a, b bsoncore.Value) error {
	want := sign(Compare(a, b))
	ea, eb := enc(a), enc(b)
	pa, ca := CutPrefix(ea)
	pb, cb := CutPrefix(eb)
	wa, wb := encodeValue(nil, a, nil), encodeValue(nil, b, nil)
	if ca != (len(wa) > cutPrefixLen) || cb != (len(wb) > cutPrefixLen) {
		return fmt.Errorf("cut %v, %v for whole encodings of %d and %d bytes", ca, cb, len(wa), len(wb))
	}
	if ca && cb && bytes.Equal(pa, pb) {
		if (want == 0) != bytes.Equal(ea, eb) {
			return fmt.Errorf("values compare %d, cut encodings equal: %v", want, bytes.Equal(ea, eb))
		}
		if !bytes.HasPrefix(wa, pa) || !bytes.HasPrefix(wb, pa) {
			return fmt.Errorf("a cut prefix is not the start of its whole encodings")
		}
		return nil
	}
	if got := sign(bytes.Compare(ea, eb)); got != want {
		return fmt.Errorf("bytes.Compare of the encodings is %d, Compare is %d", got, want)
	}
	if want == 0 && !bytes.Equal(ea, eb) {
		return fmt.Errorf("equal values encode differently")
	}
	return nil
}

// padded puts v after a string of n bytes in an array, so that v's
// encoding lands before, across or after the cut.
func padded(n int, v bsoncore.Value) bsoncore.Value {
	return arr(str(strings.Repeat("p", n)), v)
}

// TestEncodeKeyCutOrder is TestEncodeKeyOrderMatchesCompare for values
// that straddle the cut: random pairs behind a common long string, and
// behind strings of different lengths.
func TestEncodeKeyCutOrder(t *testing.T) {
	g := newGen(11)
	fails, hashed, ordered := 0, 0, 0
	randomPairs(t, 12, 20000, func(a, b bsoncore.Value) {
		na := cutPrefixLen - 40 + g.pick(60)
		nb := na
		if g.pick(8) == 0 {
			nb = na + g.pick(3) - 1
		}
		pa, pb := padded(na, a), padded(nb, b)
		if err := checkKeyOrder(pa, pb); err != nil && fails < 10 {
			fails++
			t.Errorf("%v\na = [%d bytes, %s]\nb = [%d bytes, %s]", err, na, show(a), nb, show(b))
		}
		x, cx := CutPrefix(enc(pa))
		y, cy := CutPrefix(enc(pb))
		if cx && cy && bytes.Equal(x, y) {
			hashed++
		} else {
			ordered++
		}
	})
	// Both cases must turn up often, or the test says little.
	if hashed < 2500 || ordered < 2500 {
		t.Errorf("%d pairs ordered by hash, %d by value: the padding has drifted", hashed, ordered)
	}
}

// TestEncodeKeyCut: long values of every variable-length type encode to
// MaxKeyLen bytes that KeyLen delimits; equal values encode alike; values
// that differ within the prefix keep their order, also against values
// that are not cut; values that differ past it encode differently.
func TestEncodeKeyCut(t *testing.T) {
	long := strings.Repeat("z", 70000)
	nuls := strings.Repeat("\x00", 3000) // escapes straddle the cut
	big := make([]byte, 70000)
	var many []bsoncore.Value
	for i := range 1000 {
		many = append(many, i32(int32(i)))
	}
	var fields []any
	for i := range 500 {
		fields = append(fields, fmt.Sprintf("f%d", i), str("v"))
	}
	vals := []bsoncore.Value{
		str(long), str(nuls), sym(long), js(long), bin(0, big...), arr(many...), doc(fields...),
		regex(long, "i"), regex("a", strings.Repeat("i", 3000)), dbptr(long, 1), cws(long, doc()),
		cws("f", doc("s", str(long))), doc("a", arr(str(long))),
	}
	tail := enc(str("next"))
	for _, v := range vals {
		e := enc(v)
		if len(e) != MaxKeyLen {
			t.Errorf("%s: %d bytes, want %d", v.Type, len(e), MaxKeyLen)
			continue
		}
		if _, cut := CutPrefix(e); !cut {
			t.Errorf("%s: CutPrefix says not cut", v.Type)
		}
		if n, ok := KeyLen(append(append([]byte(nil), e...), tail...)); !ok || n != len(e) {
			t.Errorf("%s: KeyLen = %d, %v; want %d", v.Type, n, ok, len(e))
		}
		for _, cut := range []int{0, 1, cutPrefixLen - 1, cutPrefixLen, cutPrefixLen + 1, MaxKeyLen - 1} {
			if n, ok := KeyLen(e[:cut]); ok {
				t.Errorf("%s: KeyLen of %d of %d bytes = %d, want not ok", v.Type, cut, len(e), n)
			}
		}
		if !bytes.Equal(enc(v), e) {
			t.Errorf("%s: two encodings of one value differ", v.Type)
		}
	}
	// A marker after bytes that end an encoding, or after a malformed
	// start, is not a cut encoding.
	fake := append(append(bytes.Repeat([]byte{0xEE}, cutPrefixLen), cutMarker), make([]byte, cutHashLen)...)
	if n, ok := KeyLen(fake); ok {
		t.Errorf("KeyLen of a malformed key = %d, want not ok", n)
	}
	if _, cut := CutPrefix(fake); cut {
		t.Error("CutPrefix of a malformed key says cut")
	}

	// Lengths around the cut: strings whose encodings are 1 + n + 2 bytes.
	for n := cutPrefixLen - 5; n <= MaxKeyLen+5; n++ {
		e := enc(str(strings.Repeat("q", n)))
		whole := 1 + n + 2
		want := whole
		if whole > cutPrefixLen {
			want = MaxKeyLen
		}
		if len(e) != want {
			t.Fatalf("string of %d bytes: encoding of %d bytes, want %d", n, len(e), want)
		}
		if k, ok := KeyLen(append(append([]byte(nil), e...), tail...)); !ok || k != len(e) {
			t.Fatalf("string of %d bytes: KeyLen = %d, %v; want %d", n, k, ok, len(e))
		}
		if err := checkKeyOrder(str(strings.Repeat("q", n)), str(strings.Repeat("q", n+1))); err != nil {
			t.Fatalf("strings of %d and %d bytes: %v", n, n+1, err)
		}
	}

	// Equal values encode alike: numbers of other types behind a long prefix.
	eq := []bsoncore.Value{
		doc("a", str(long), "n", i32(1)), doc("a", str(long), "n", dbl(1)),
		doc("a", str(long), "n", dec("1.00")), doc("a", str(long), "n", i64(1)),
	}
	for _, v := range eq[1:] {
		if !bytes.Equal(enc(v), enc(eq[0])) {
			t.Errorf("equal long documents encode differently")
		}
	}

	// Order within the prefix, among cut values and against uncut ones.
	prefix60 := strings.Repeat("s", 60000)
	ordered := []bsoncore.Value{
		str("a"), str("a" + long), str("b"), str("b" + long), str(long), str(long + "z"),
		str(prefix60 + strings.Repeat("x", 10000)), str(prefix60 + strings.Repeat("y", 10000)),
		str("{"), doc("a", i32(1)), doc("a", i32(1), "b", str(long)), doc("a", i32(2), "b", str(long)), doc("a", i32(2), "c", str("x")),
		arr(i32(1), str(long)), arr(i32(2), str(long)), arr(i32(2), str(long), i32(0)), bin(0, big...),
	}
	for i := range ordered {
		for j := range ordered {
			if err := checkKeyOrder(ordered[i], ordered[j]); err != nil {
				t.Errorf("%d and %d: %v", i, j, err)
			}
		}
	}
	// Two 70 KB strings that share their first 60 KB: different keys, one
	// prefix, order by hash.
	x, y := enc(ordered[6]), enc(ordered[7])
	px, _ := CutPrefix(x)
	py, _ := CutPrefix(y)
	if bytes.Equal(x, y) || !bytes.Equal(px, py) {
		t.Errorf("strings sharing 60 KB: keys equal %v, prefixes equal %v; want false, true", bytes.Equal(x, y), bytes.Equal(px, py))
	}

	// Tuples of cut and uncut values (a shard key, then an _id) still
	// split at KeyLen and sort as tuples when the first components differ
	// within the prefix.
	k1 := EncodeKey(enc(str("a"+long)), str(long))
	k2 := EncodeKey(enc(str("b"+long)), i32(1))
	if bytes.Compare(k1, k2) >= 0 {
		t.Error("tuple keys out of order")
	}
	if n, ok := KeyLen(k1); !ok || n != MaxKeyLen {
		t.Errorf("KeyLen of a tuple key = %d, %v", n, ok)
	}
	if n, ok := KeyLen(k1[MaxKeyLen:]); !ok || n != MaxKeyLen || MaxKeyLen+n != len(k1) {
		t.Errorf("KeyLen of a tuple's second component = %d, %v", n, ok)
	}
}
