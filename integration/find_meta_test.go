package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestFindMetaIndexKey: a {$meta: "indexKey"} projection gives each
// result the key of the index the find used (with the rest of the
// projection applied), the _id for an _id lookup, and nothing for a
// collection scan.
func TestFindMetaIndexKey(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	coll := c.Database("meta").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 10}, {Key: "b", Value: "x"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 20}, {Key: "b", Value: "y"}},
	}); err != nil {
		t.Fatal(err)
	}
	runOK(t, c.Database("meta"), bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}})
	proj := bson.D{{Key: "b", Value: 1}, {Key: "k", Value: bson.D{{Key: "$meta", Value: "indexKey"}}}}
	find := func(filter bson.D, hint any) []bson.Raw {
		opts := options.Find().SetProjection(proj).SetSort(bson.D{{Key: "_id", Value: 1}})
		if hint != nil {
			opts.SetHint(hint)
		}
		cur, err := coll.Find(ctx, filter, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.Raw
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := find(bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 10}}}}, "a_1")
	if len(got) != 2 || relaxedJSON(t, got[0]) != `{"_id": 1,"b": "x","k": {"a": 10}}` || relaxedJSON(t, got[1]) != `{"_id": 2,"b": "y","k": {"a": 20}}` {
		t.Errorf("through index a_1: %v", got)
	}
	got = find(bson.D{{Key: "_id", Value: 2}}, nil)
	if len(got) != 1 || relaxedJSON(t, got[0]) != `{"_id": 2,"b": "y","k": {"_id": 2}}` {
		t.Errorf("an _id lookup: %v", got)
	}
	got = find(bson.D{{Key: "b", Value: "x"}}, bson.D{{Key: "$natural", Value: 1}})
	if len(got) != 1 || relaxedJSON(t, got[0]) != `{"_id": 1,"b": "x"}` {
		t.Errorf("a collection scan: %v", got)
	}
}
