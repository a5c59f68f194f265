package query

import (
	"testing"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func caseInsensitive(t *testing.T) *value.Collator {
	t.Helper()
	spec, err := value.DefaultCollation("en")
	if err != nil {
		t.Fatal(err)
	}
	spec.Strength = 2
	c, err := value.NewCollator(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func rawDoc(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Filters and sorts compiled with a collation compare strings (also in
// arrays and embedded documents) by it; other types as before.
func TestFilterCollation(t *testing.T) {
	ci := caseInsensitive(t)
	doc := rawDoc(t, bson.D{{Key: "s", Value: "Hello"}, {Key: "arr", Value: bson.A{"X", "y"}}, {Key: "sub", Value: bson.D{{Key: "k", Value: "V"}}}, {Key: "n", Value: 5}})
	for _, tc := range []struct {
		filter     bson.D
		simple, ci bool
	}{
		{bson.D{{Key: "s", Value: "hello"}}, false, true},
		{bson.D{{Key: "s", Value: bson.D{{Key: "$ne", Value: "HELLO"}}}}, true, false},
		{bson.D{{Key: "s", Value: bson.D{{Key: "$gt", Value: "a"}}}}, false, true}, // "H" < "a" in bytes
		{bson.D{{Key: "s", Value: bson.D{{Key: "$in", Value: bson.A{"x", "HELLO"}}}}}, false, true},
		{bson.D{{Key: "arr", Value: "x"}}, false, true},
		{bson.D{{Key: "arr", Value: bson.D{{Key: "$all", Value: bson.A{"x", "Y"}}}}}, false, true},
		{bson.D{{Key: "sub", Value: bson.D{{Key: "k", Value: "v"}}}}, false, true},
		{bson.D{{Key: "s", Value: bson.D{{Key: "$regex", Value: "^hello$"}}}}, false, false}, // regexes ignore collations
		{bson.D{{Key: "n", Value: 5}}, true, true},
		{bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$s", "HELLO"}}}}}, false, true},
	} {
		for _, c := range []struct {
			coll *value.Collator
			want bool
		}{{nil, tc.simple}, {ci, tc.ci}} {
			f, err := CompileWith(rawDoc(t, tc.filter), Options{Collation: c.coll})
			if err != nil {
				t.Fatalf("%v: %v", tc.filter, err)
			}
			if got := f.Match(doc); got != c.want {
				t.Errorf("%v (collation %v): %v, want %v", tc.filter, c.coll != nil, got, c.want)
			}
			if f.Collation() != c.coll {
				t.Errorf("%v: Collation() is not the compiled one", tc.filter)
			}
		}
	}
	s, err := CompileSort(rawDoc(t, bson.D{{Key: "s", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	a, b := rawDoc(t, bson.D{{Key: "s", Value: "B"}}), rawDoc(t, bson.D{{Key: "s", Value: "a"}})
	if s.Compare(a, b) >= 0 {
		t.Error("simple sort: B before a")
	}
	if s.WithCollation(ci).Compare(a, b) <= 0 {
		t.Error("collated sort: a before B")
	}
	if s.Compare(a, b) >= 0 {
		t.Error("WithCollation changed the original sort")
	}
}
