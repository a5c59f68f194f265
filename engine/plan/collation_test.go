package plan

import (
	"testing"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestUncollated(t *testing.T) {
	spec, _ := value.DefaultCollation("en")
	coll, err := value.NewCollator(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want bson.D }{
		{bson.D{{Key: "a", Value: 1}, {Key: "b", Value: "x"}}, bson.D{{Key: "a", Value: 1}}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{1, "x"}}}}}, bson.D{}},
		{bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "b", Value: "x"}}}}}, bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "a", Value: 1}}, bson.D{}}}}},
		{bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "b", Value: "x"}}}}}, bson.D{}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}}}, {Key: "r", Value: bson.Regex{Pattern: "^x"}}}, bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}}}, {Key: "r", Value: bson.Regex{Pattern: "^x"}}}},
	} {
		in, _ := bson.Marshal(tc.in)
		want, _ := bson.Marshal(tc.want)
		if got := Uncollated(in, coll); bson.Raw(got).String() != bson.Raw(want).String() {
			t.Errorf("Uncollated(%v) = %v, want %v", tc.in, bson.Raw(got), bson.Raw(want))
		}
		if got := Uncollated(in, nil); string(got) != string(in) {
			t.Errorf("Uncollated(%v, nil) changed the filter", tc.in)
		}
	}
}
