package integration

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestFindLanguage runs the query language end to end through the driver:
// each operator family, projection and sort on a small collection, and
// the error codes of bad filters, projections and sorts. The semantics
// themselves are covered case by case in engine/query's testdata; here
// the point is that find carries them, and their errors, to clients.
func TestFindLanguage(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("find_language")
	coll := db.Collection("items")
	_, err := coll.InsertMany(testCtx(t), []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "qty", Value: 5}, {Key: "name", Value: "apple"}, {Key: "tags", Value: bson.A{"red", "fruit"}},
			{Key: "sizes", Value: bson.A{bson.D{{Key: "s", Value: "S"}, {Key: "n", Value: 1}}, bson.D{{Key: "s", Value: "M"}, {Key: "n", Value: 4}}}},
			{Key: "flags", Value: 6}, {Key: "price", Value: 1.5}},
		bson.D{{Key: "_id", Value: 2}, {Key: "qty", Value: int64(15)}, {Key: "name", Value: "Banana"}, {Key: "tags", Value: bson.A{"yellow", "fruit"}},
			{Key: "sizes", Value: bson.A{bson.D{{Key: "s", Value: "L"}, {Key: "n", Value: 2}}}}, {Key: "flags", Value: 1}, {Key: "price", Value: 0.25}},
		bson.D{{Key: "_id", Value: 3}, {Key: "qty", Value: 25.0}, {Key: "name", Value: "carrot"}, {Key: "tags", Value: bson.A{}},
			{Key: "flags", Value: 7}, {Key: "price", Value: nil}},
		bson.D{{Key: "_id", Value: 4}, {Key: "qty", Value: "many"}, {Key: "name", Value: "date"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(t *testing.T, filter any, opts ...options.Lister[options.FindOptions]) []string {
		t.Helper()
		cur, err := coll.Find(testCtx(t), filter, opts...)
		if err != nil {
			t.Fatalf("find %v: %v", filter, err)
		}
		var docs []bson.Raw
		if err := cur.All(testCtx(t), &docs); err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(docs))
		for i, d := range docs {
			out[i] = idString(t, d)
		}
		return out
	}
	d := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }

	t.Run("operators", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			filter bson.D
			want   []string
		}{
			{"gt across numeric types", d("qty", d("$gt", 10)), []string{"2", "3"}},
			{"lte", d("qty", d("$lte", int64(15))), []string{"1", "2"}},
			{"type bracketing", d("qty", d("$gte", "a")), []string{"4"}},
			{"ne", d("qty", d("$ne", 5)), []string{"2", "3", "4"}},
			{"in", d("name", d("$in", bson.A{"apple", bson.Regex{Pattern: "^b", Options: "i"}})), []string{"1", "2"}},
			{"nin", d("tags", d("$nin", bson.A{"fruit"})), []string{"3", "4"}},
			{"and or nor", bson.D{{Key: "$or", Value: bson.A{d("qty", 5), d("qty", 25)}}, {Key: "$nor", Value: bson.A{d("name", "apple")}}}, []string{"3"}},
			{"not", d("qty", d("$not", d("$gt", 10))), []string{"1", "4"}},
			{"exists", d("tags", d("$exists", false)), []string{"4"}},
			{"type number", d("qty", d("$type", "number")), []string{"1", "2", "3"}},
			{"type alias list", d("qty", d("$type", bson.A{"long", "string"})), []string{"2", "4"}},
			{"mod", d("qty", d("$mod", bson.A{10, 5})), []string{"1", "2", "3"}},
			{"regex literal", d("name", bson.Regex{Pattern: "^[a-c]", Options: ""}), []string{"1", "3"}},
			{"regex options", d("name", bson.D{{Key: "$regex", Value: "^B"}, {Key: "$options", Value: "i"}}), []string{"2"}},
			{"all", d("tags", d("$all", bson.A{"fruit", "red"})), []string{"1"}},
			{"size", d("tags", d("$size", 0)), []string{"3"}},
			{"elemMatch query", d("sizes", d("$elemMatch", bson.D{{Key: "s", Value: "M"}, {Key: "n", Value: d("$gt", 3)}})), []string{"1"}},
			{"elemMatch is one element", d("sizes", d("$elemMatch", bson.D{{Key: "s", Value: "S"}, {Key: "n", Value: 4}})), []string{}},
			{"dot path into arrays", d("sizes.n", 2), []string{"2"}},
			{"numeric path part", d("tags.1", "fruit"), []string{"1", "2"}},
			{"bitsAllSet", d("flags", d("$bitsAllSet", bson.A{1, 2})), []string{"1", "3"}},
			{"bitsAnyClear", d("flags", d("$bitsAnyClear", 3)), []string{"1", "2"}},
			{"null matches missing", d("price", nil), []string{"3", "4"}},
			{"expr", d("$expr", d("$gt", bson.A{d("$multiply", bson.A{d("$cond", bson.A{d("$isNumber", "$qty"), "$qty", 0}), "$price"}), 5})), []string{"1"}},
			{"jsonSchema", d("$jsonSchema", bson.D{{Key: "required", Value: bson.A{"price"}}, {Key: "properties", Value: d("price", d("bsonType", "double"))}}), []string{"1", "2"}},
			{"comment", bson.D{{Key: "$comment", Value: "why"}, {Key: "_id", Value: 2}}, []string{"2"}},
		} {
			if got := ids(t, tc.filter); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("%s: %v matched %v, want %v", tc.name, tc.filter, got, tc.want)
			}
		}
	})

	t.Run("projection", func(t *testing.T) {
		t.Parallel()
		one := func(filter, proj bson.D) bson.Raw {
			t.Helper()
			var r bson.Raw
			if err := coll.FindOne(testCtx(t), filter, options.FindOne().SetProjection(proj)).Decode(&r); err != nil {
				t.Fatalf("findOne %v %v: %v", filter, proj, err)
			}
			return r
		}
		for _, tc := range []struct {
			filter, proj bson.D
			want         string
		}{
			{d("_id", 1), d("name", 1), `{"_id": 1,"name": "apple"}`},
			{d("_id", 1), bson.D{{Key: "name", Value: 1}, {Key: "_id", Value: 0}}, `{"name": "apple"}`},
			{d("_id", 2), bson.D{{Key: "sizes", Value: 0}, {Key: "tags", Value: 0}, {Key: "flags", Value: 0}}, `{"_id": 2,"qty": 15,"name": "Banana","price": 0.25}`},
			{d("_id", 1), d("sizes.s", 1), `{"_id": 1,"sizes": [{"s": "S"},{"s": "M"}]}`},
			{d("_id", 1), d("tags", d("$slice", -1)), `{"_id": 1,"qty": 5,"name": "apple","tags": ["fruit"],"sizes": [{"s": "S","n": 1},{"s": "M","n": 4}],"flags": 6,"price": 1.5}`},
			{d("_id", 1), d("sizes", d("$elemMatch", d("n", d("$gt", 1)))), `{"_id": 1,"sizes": [{"s": "M","n": 4}]}`},
			{d("sizes.s", "M"), d("sizes.$", 1), `{"_id": 1,"sizes": [{"s": "M","n": 4}]}`},
			{d("_id", 1), bson.D{{Key: "_id", Value: 0}, {Key: "total", Value: d("$multiply", bson.A{"$qty", "$price"})}, {Key: "upper", Value: d("$toUpper", "$name")}}, `{"total": 7.5,"upper": "APPLE"}`},
		} {
			if got := one(tc.filter, tc.proj); relaxedJSON(t, got) != tc.want {
				t.Errorf("projection %v: got %s, want %s", tc.proj, relaxedJSON(t, got), tc.want)
			}
		}
	})

	t.Run("sort", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			sort bson.D
			want []string
		}{
			{d("qty", 1), []string{"1", "2", "3", "4"}},
			{d("qty", -1), []string{"4", "3", "2", "1"}},
			{d("price", 1), []string{"4", "3", "2", "1"}},                                            // missing and null first (missing and null sort alike)
			{bson.D{{Key: "tags", Value: 1}, {Key: "_id", Value: -1}}, []string{"3", "4", "2", "1"}}, // [] < missing; "fruit" ties
			{d("sizes.n", -1), []string{"1", "2", "4", "3"}},
			{d("name", 1), []string{"2", "1", "3", "4"}}, // bytewise: "Banana" < "apple"
		} {
			got := ids(t, bson.D{}, options.Find().SetSort(tc.sort))
			if tc.sort[0].Key == "price" {
				// 3 (null) and 4 (missing) tie; only their place matters.
				slices.Sort(got[:2])
				slices.Sort(tc.want[:2])
			}
			if tc.sort[0].Key == "sizes.n" {
				slices.Sort(got[2:])
				slices.Sort(tc.want[2:])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("sort %v: %v, want %v", tc.sort, got, tc.want)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		find := func(fields ...bson.E) bson.D { return append(bson.D{{Key: "find", Value: "items"}}, fields...) }
		for _, tc := range []struct {
			cmd  bson.D
			code int32
			name string
			msg  string
		}{
			{find(bson.E{Key: "filter", Value: d("a", d("$foo", 1))}), 2, "BadValue", "unknown operator: $foo"},
			{find(bson.E{Key: "filter", Value: d("a", d("$in", 1))}), 2, "BadValue", "$in needs an array"},
			{find(bson.E{Key: "filter", Value: d("a", d("$type", "nope"))}), 2, "BadValue", "Unknown type name alias: nope"},
			{find(bson.E{Key: "filter", Value: d("a", d("$type", true))}), 14, "TypeMismatch", ""},
			{find(bson.E{Key: "filter", Value: d("a", d("$regex", "("))}), 51091, "Location51091", "Regular expression is invalid: missing closing )"},
			{find(bson.E{Key: "filter", Value: d("a", bson.D{{Key: "$regex", Value: "x"}, {Key: "$options", Value: "q"}})}), 51108, "Location51108", "invalid flag in regex options: q"},
			{find(bson.E{Key: "filter", Value: d("$where", "true")}), 238, "NotImplemented", ""},
			{find(bson.E{Key: "filter", Value: d("$text", d("$search", "x"))}), 27, "IndexNotFound", "text index required for $text query"},
			{find(bson.E{Key: "filter", Value: d("loc", d("$near", bson.A{0, 0}))}), 291, "NoQueryExecutionPlans", ""},
			{find(bson.E{Key: "filter", Value: d("$expr", d("$nope", 1))}), 168, "InvalidPipelineOperator", "Unrecognized expression '$nope'"},
			{find(bson.E{Key: "filter", Value: d("$expr", "$$undefinedVar")}), 17276, "Location17276", "Use of undefined variable: undefinedVar"},
			{find(bson.E{Key: "filter", Value: d("$jsonSchema", d("nope", 1))}), 9, "FailedToParse", "Unknown $jsonSchema keyword: nope"},
			{find(bson.E{Key: "projection", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 0}}}), 31254, "Location31254", "Cannot do exclusion on field b in inclusion projection"},
			{find(bson.E{Key: "projection", Value: bson.D{{Key: "a", Value: 0}, {Key: "b", Value: 1}}}), 31253, "Location31253", "Cannot do inclusion on field b in exclusion projection"},
			{find(bson.E{Key: "projection", Value: bson.D{{Key: "a", Value: 1}, {Key: "a.b", Value: 1}}}), 31249, "Location31249", "Path collision at a.b remaining portion b"},
			{find(bson.E{Key: "projection", Value: d("a", d("$slice", "x"))}), 28724, "Location28724", ""},
			{find(bson.E{Key: "sort", Value: d("a", 2)}), 15975, "Location15975", "$sort key ordering must be 1 (for ascending) or -1 (for descending)"},
			{find(bson.E{Key: "sort", Value: d("a", "up")}), 15974, "Location15974", ""},
			{find(bson.E{Key: "filter", Value: d("$expr", d("$divide", bson.A{1, "$qty"}))}), 14, "TypeMismatch", ""},
		} {
			ce := runFail(t, db, tc.cmd, tc.code, tc.name)
			if tc.msg != "" && ce.Message != tc.msg {
				t.Errorf("%v: errmsg %q, want %q", tc.cmd, ce.Message, tc.msg)
			}
		}
		// Positional projection without a matching array element.
		ce := runFail(t, db, find(bson.E{Key: "filter", Value: d("_id", 1)}, bson.E{Key: "projection", Value: d("tags.$", 1)}), 51246, "Location51246")
		if want := "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array"; ce.Message != want {
			t.Errorf("errmsg %q, want %q", ce.Message, want)
		}
	})

	t.Run("count and distinct see the same language", func(t *testing.T) {
		t.Parallel()
		r := runOK(t, db, bson.D{{Key: "count", Value: "items"}, {Key: "query", Value: d("tags", "fruit")}})
		if n := intOf(t, mustLookup(t, r, "n")); n != 2 {
			t.Errorf("count = %d, want 2", n)
		}
		var vals []string
		res := coll.Distinct(testCtx(t), "tags", d("qty", d("$type", "number")))
		if err := res.Decode(&vals); err != nil {
			t.Fatal(err)
		}
		if want := []string{"fruit", "red", "yellow"}; !slices.Equal(vals, want) {
			t.Errorf("distinct tags = %v, want %v", vals, want)
		}
	})
}

// relaxedJSON renders a document as relaxed extended JSON with a space
// after each colon, for comparisons in tests.
func relaxedJSON(t testing.TB, doc bson.Raw) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(doc, false, false)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 0, len(b)+16)
	inString := false
	for i, c := range b {
		out = append(out, c)
		if c == '"' && (i == 0 || b[i-1] != '\\') {
			inString = !inString
		}
		if c == ':' && !inString {
			out = append(out, ' ')
		}
	}
	return string(out)
}
