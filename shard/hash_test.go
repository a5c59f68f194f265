package shard

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestDataDriven replays testdata/*:
//
//	hash                       (Hash of each line's "v")
//	{"v": <extended JSON>}...
//	----
//	<int64>...
//
//	point                      (Point of each line's "v", hex)
//
//	route key=<path>           (Spec.Values of each filter line)
//	<filter>...
//	----
//	all | <values as extended JSON>   (one line per filter)
//
//	split-point                (SplitPoint; each line "<point hex> <bytes>")
//	----
//	<boundary hex> | none
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			lines := strings.Split(strings.TrimSpace(d.Input), "\n")
			var out strings.Builder
			switch d.Cmd {
			case "hash", "point":
				for _, line := range lines {
					v := parseDoc(t, d, line).Lookup("v")
					if d.Cmd == "hash" {
						fmt.Fprintf(&out, "%d\n", Hash(v))
					} else {
						fmt.Fprintf(&out, "%016x\n", Point(v))
					}
				}
			case "route":
				var key string
				d.ScanArgs(t, "key", &key)
				spec, err := ParsePath(key)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				for _, line := range lines {
					vals, ok := spec.Values(parseDoc(t, d, line))
					if !ok {
						out.WriteString("all\n")
						continue
					}
					parts := make([]string, len(vals))
					for i, v := range vals {
						parts[i] = v.String()
					}
					fmt.Fprintf(&out, "[%s]\n", strings.Join(parts, ", "))
				}
			case "split-point":
				var points []uint64
				var bytes []int64
				for _, line := range lines {
					if line == "" {
						continue
					}
					var p uint64
					var b int64
					if _, err := fmt.Sscanf(line, "%x %d", &p, &b); err != nil {
						d.Fatalf(t, "bad line %q: %v", line, err)
					}
					points, bytes = append(points, p), append(bytes, b)
				}
				b, ok := SplitPoint(points, bytes)
				if !ok {
					return "none\n"
				}
				fmt.Fprintf(&out, "%016x\n", b)
			default:
				d.Fatalf(t, "unknown directive %q", d.Cmd)
			}
			return out.String()
		})
	})
}

func parseDoc(t *testing.T, d *datadriven.TestData, line string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(line), true, &raw); err != nil {
		d.Fatalf(t, "parse %s: %v", line, err)
	}
	return bsoncore.Document(raw)
}

func mkValue(t testing.TB, x any) bsoncore.Value {
	t.Helper()
	typ, data, err := bson.MarshalValue(x)
	if err != nil {
		t.Fatal(err)
	}
	return bsoncore.Value{Type: bsoncore.Type(typ), Data: data}
}

// TestEqualNumbersHashAlike: every numeric type of an integer hashes alike,
// and the point keeps the order of the signed hash.
func TestEqualNumbersHashAlike(t *testing.T) {
	for _, n := range []int64{0, 1, -1, 7, 1 << 40, -(1 << 52), math.MaxInt32, math.MinInt32} {
		want := Hash(mkValue(t, n))
		d128, _ := bson.ParseDecimal128(fmt.Sprint(n))
		for _, x := range []any{float64(n), d128} {
			if got := Hash(mkValue(t, x)); got != want {
				t.Errorf("hash of %v (%T) = %d, want %d as for int64", x, x, got, want)
			}
		}
		if n == int64(int32(n)) {
			if got := Hash(mkValue(t, int32(n))); got != want {
				t.Errorf("hash of int32 %d = %d, want %d", n, got, want)
			}
		}
	}
	for _, pair := range [][2]int64{{math.MinInt64, -1}, {-1, 0}, {0, 1}, {1, math.MaxInt64}} {
		if PointOf(pair[0]) >= PointOf(pair[1]) {
			t.Errorf("PointOf(%d) >= PointOf(%d)", pair[0], pair[1])
		}
		if HashOf(PointOf(pair[0])) != pair[0] {
			t.Errorf("HashOf(PointOf(%d)) != %d", pair[0], pair[0])
		}
	}
}

// TestHashUniform: 100,000 shard-key values (strings, as keys usually
// are, and consecutive integers) spread evenly over 16 equal ranges of the
// hash space: chi-square with 15 degrees of freedom stays under 37.70,
// its 0.1% critical value.
func TestHashUniform(t *testing.T) {
	const n, buckets = 100_000, 16
	for _, kind := range []string{"strings", "ints"} {
		var count [buckets]int
		for i := range n {
			var v bsoncore.Value
			if kind == "strings" {
				v = bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, fmt.Sprintf("user-%d", i))}
			} else {
				v = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(i))}
			}
			count[Point(v)>>60]++ // 16 equal ranges: the top 4 bits
		}
		expected := float64(n) / buckets
		chi := 0.0
		for _, c := range count {
			d := float64(c) - expected
			chi += d * d / expected
		}
		t.Logf("%s: chi-square %.2f over %v", kind, chi, count)
		if chi > 37.70 {
			t.Errorf("%s: chi-square %.2f > 37.70: hash is not uniform over 16 ranges: %v", kind, chi, count)
		}
	}
}
