package update

import (
	"testing"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Under a case-insensitive collation, $addToSet, $pull, $pullAll, $max
// and $push's $sort compare strings by it.
func TestUpdateCollation(t *testing.T) {
	spec, err := value.DefaultCollation("en")
	if err != nil {
		t.Fatal(err)
	}
	spec.Strength = 2
	ci, err := value.NewCollator(spec)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "tags", Value: bson.A{"a", "B"}}, {Key: "m", Value: "b"}})
	for _, tc := range []struct {
		upd        bson.D
		simple, ci string
	}{
		{bson.D{{Key: "$addToSet", Value: bson.D{{Key: "tags", Value: "A"}}}},
			`{"_id": {"$numberInt":"1"},"tags": ["a","B","A"],"m": "b"}`, `{"_id": {"$numberInt":"1"},"tags": ["a","B"],"m": "b"}`},
		{bson.D{{Key: "$pull", Value: bson.D{{Key: "tags", Value: "b"}}}},
			`{"_id": {"$numberInt":"1"},"tags": ["a","B"],"m": "b"}`, `{"_id": {"$numberInt":"1"},"tags": ["a"],"m": "b"}`},
		{bson.D{{Key: "$pullAll", Value: bson.D{{Key: "tags", Value: bson.A{"A"}}}}},
			`{"_id": {"$numberInt":"1"},"tags": ["a","B"],"m": "b"}`, `{"_id": {"$numberInt":"1"},"tags": ["B"],"m": "b"}`},
		{bson.D{{Key: "$max", Value: bson.D{{Key: "m", Value: "B"}}}},
			`{"_id": {"$numberInt":"1"},"tags": ["a","B"],"m": "b"}`, `{"_id": {"$numberInt":"1"},"tags": ["a","B"],"m": "b"}`},
		{bson.D{{Key: "$max", Value: bson.D{{Key: "m", Value: "C"}}}},
			`{"_id": {"$numberInt":"1"},"tags": ["a","B"],"m": "b"}`, `{"_id": {"$numberInt":"1"},"tags": ["a","B"],"m": "C"}`},
		{bson.D{{Key: "$push", Value: bson.D{{Key: "tags", Value: bson.D{{Key: "$each", Value: bson.A{"c"}}, {Key: "$sort", Value: 1}}}}}},
			`{"_id": {"$numberInt":"1"},"tags": ["B","a","c"],"m": "b"}`, `{"_id": {"$numberInt":"1"},"tags": ["a","B","c"],"m": "b"}`},
	} {
		raw, _ := bson.Marshal(tc.upd)
		spec := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}
		for _, c := range []struct {
			coll *value.Collator
			want string
		}{{nil, tc.simple}, {ci, tc.ci}} {
			u, err := Parse(spec, Options{Collation: c.coll})
			if err != nil {
				t.Fatalf("%v: %v", tc.upd, err)
			}
			out, _, err := u.Apply(doc, Env{})
			if err != nil {
				t.Fatalf("%v: %v", tc.upd, err)
			}
			if got := bson.Raw(out).String(); got != c.want {
				t.Errorf("%v (collation %v): %s, want %s", tc.upd, c.coll != nil, got, c.want)
			}
		}
	}
}
