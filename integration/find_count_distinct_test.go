package integration

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestCountDistinct covers count (query, limit, skip, hint) and distinct
// (dot paths, array values unwound, query) with MongoDB's reply shapes.
func TestCountDistinct(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("count_distinct")
	coll := db.Collection("c")
	_, err := coll.InsertMany(testCtx(t), []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "tags", Value: bson.A{"x", "y"}}, {Key: "o", Value: bson.D{{Key: "k", Value: "p"}}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1.0}, {Key: "tags", Value: bson.A{"y", bson.A{"z"}}}, {Key: "o", Value: bson.A{bson.D{{Key: "k", Value: "q"}}, bson.D{{Key: "k", Value: "p"}}}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: "1"}, {Key: "tags", Value: "w"}, {Key: "o", Value: bson.D{{Key: "j", Value: 1}}}},
		bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: nil}},
		bson.D{{Key: "_id", Value: 5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }

	t.Run("count", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			fields []bson.E
			want   int64
		}{
			{nil, 5},
			{[]bson.E{{Key: "query", Value: d("a", 1)}}, 2},
			{[]bson.E{{Key: "query", Value: d("a", nil)}}, 2},
			{[]bson.E{{Key: "query", Value: d("_id", 3)}}, 1},
			{[]bson.E{{Key: "query", Value: d("_id", 9)}}, 0},
			{[]bson.E{{Key: "limit", Value: 3}}, 3},
			{[]bson.E{{Key: "limit", Value: -3}}, 3},
			{[]bson.E{{Key: "skip", Value: 4}}, 1},
			{[]bson.E{{Key: "skip", Value: 9}}, 0},
			{[]bson.E{{Key: "query", Value: d("_id", d("$gt", 1))}, {Key: "skip", Value: 1}, {Key: "limit", Value: 2}}, 2},
			{[]bson.E{{Key: "hint", Value: "_id_"}, {Key: "query", Value: d("tags", "y")}}, 2},
			{[]bson.E{{Key: "hint", Value: d("$natural", 1)}}, 5},
		} {
			r := runOK(t, db, append(bson.D{{Key: "count", Value: "c"}}, tc.fields...))
			wantFields(t, r, "n", "ok")
			n := mustLookup(t, r, "n")
			if n.Type != bson.TypeInt32 || int64(n.Int32()) != tc.want {
				t.Errorf("count %v: n = %v, want int %d", tc.fields, n, tc.want)
			}
		}
		r := runOK(t, db, bson.D{{Key: "count", Value: "missing"}})
		if n := intOf(t, mustLookup(t, r, "n")); n != 0 {
			t.Errorf("count of a missing collection: %d", n)
		}
		runFail(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "skip", Value: -1}}, 51024, "Location51024")
		runFail(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "hint", Value: "a_1"}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: d("a", d("$bad", 1))}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: 1}}, 14, "TypeMismatch")
		runFail(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "bogus", Value: 1}}, 40415, "Location40415")
		// The driver's estimated count uses the count command.
		if n, err := coll.EstimatedDocumentCount(testCtx(t)); err != nil || n != 5 {
			t.Errorf("EstimatedDocumentCount = %d, %v", n, err)
		}
	})

	t.Run("distinct", func(t *testing.T) {
		t.Parallel()
		distinct := func(t *testing.T, key string, fields ...bson.E) string {
			t.Helper()
			r := runOK(t, db, append(bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: key}}, fields...))
			wantFields(t, r, "values", "ok")
			wrapped, err := bson.Marshal(bson.D{{Key: "v", Value: mustLookup(t, r, "values")}})
			if err != nil {
				t.Fatal(err)
			}
			s := relaxedJSON(t, wrapped)
			return s[len(`{"v": `) : len(s)-1]
		}
		for _, tc := range []struct {
			key    string
			fields []bson.E
			want   string
		}{
			// BSON order; 1 and 1.0 are one value; missing adds nothing.
			{"a", nil, `[null,1,"1"]`},
			{"tags", nil, `["w","x","y",["z"]]`},
			{"o.k", nil, `["p","q"]`},
			{"tags.0", nil, `["x","y"]`},
			{"a", []bson.E{{Key: "query", Value: d("_id", d("$lt", 3))}}, `[1]`},
			{"tags", []bson.E{{Key: "query", Value: d("_id", 1)}}, `["x","y"]`},
			{"nope", nil, `[]`},
		} {
			if got := distinct(t, tc.key, tc.fields...); got != tc.want {
				t.Errorf("distinct %s %v: %s, want %s", tc.key, tc.fields, got, tc.want)
			}
		}
		r := runOK(t, db, bson.D{{Key: "distinct", Value: "missing"}, {Key: "key", Value: "a"}})
		if vals, _ := mustLookup(t, r, "values").Array().Values(); len(vals) != 0 {
			t.Errorf("distinct of a missing collection: %v", r)
		}
		runFail(t, db, bson.D{{Key: "distinct", Value: "c"}}, 40414, "Location40414")
		runFail(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: 1}}, 14, "TypeMismatch")
		runFail(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}, {Key: "query", Value: d("$where", "1")}}, 238, "NotImplemented")
		// Through the driver.
		var tags []any
		if err := coll.Distinct(testCtx(t), "o.k", d("_id", 2)).Decode(&tags); err != nil {
			t.Fatal(err)
		}
		if len(tags) != 2 || !slices.Contains(tags, any("q")) {
			t.Errorf("driver distinct: %v", tags)
		}
	})
}
