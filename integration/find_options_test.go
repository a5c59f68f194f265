package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestFindOptions covers find's options through the driver and raw
// commands: sort, skip, limit, batchSize, singleBatch, hint, maxTimeMS,
// allowDiskUse, let, comment, returnKey, showRecordId, collation,
// readConcern, min/max, tailable.
func TestFindOptions(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("find_options")
	coll := db.Collection("nums")
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: int32(i % 5)}, {Key: "w", Value: int32(19 - i)},
			{Key: "arr", Value: bson.A{int32(i), int32(40 - i)}}, {Key: "sub", Value: bson.D{{Key: "k", Value: int32(i % 3)}}}})
	}
	if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	d := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }
	find := func(fields ...bson.E) bson.D { return append(bson.D{{Key: "find", Value: "nums"}}, fields...) }
	batchIDs := func(t *testing.T, c cursorReplyDoc) []string {
		t.Helper()
		var out []string
		for _, doc := range c.batch() {
			out = append(out, idString(t, doc))
		}
		return out
	}
	nums := func(xs ...int) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = fmt.Sprint(x)
		}
		return out
	}

	t.Run("sort skip limit", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			fields []bson.E
			want   []string
		}{
			{[]bson.E{{Key: "sort", Value: d("w", 1)}, {Key: "limit", Value: 3}}, nums(19, 18, 17)},
			{[]bson.E{{Key: "sort", Value: bson.D{{Key: "v", Value: -1}, {Key: "_id", Value: 1}}}, {Key: "limit", Value: 5}}, nums(4, 9, 14, 19, 3)},
			{[]bson.E{{Key: "sort", Value: bson.D{{Key: "sub.k", Value: 1}, {Key: "w", Value: 1}}}, {Key: "skip", Value: 2}, {Key: "limit", Value: 2}}, nums(12, 9)},
			// arr's min is i (ascending), its max 40-i (descending).
			{[]bson.E{{Key: "sort", Value: d("arr", 1)}, {Key: "limit", Value: 2}}, nums(0, 1)},
			{[]bson.E{{Key: "sort", Value: d("arr", -1)}, {Key: "limit", Value: 2}}, nums(0, 1)},
			{[]bson.E{{Key: "sort", Value: d("_id", -1)}, {Key: "skip", Value: 18}}, nums(1, 0)},
			{[]bson.E{{Key: "sort", Value: d("_id", 1)}, {Key: "skip", Value: 17}, {Key: "filter", Value: d("v", 4)}}, nil},
			{[]bson.E{{Key: "skip", Value: 25}}, nil},
			{[]bson.E{{Key: "filter", Value: d("v", 2)}, {Key: "skip", Value: 1}, {Key: "limit", Value: 2}}, nums(7, 12)},
			{[]bson.E{{Key: "sort", Value: d("$natural", -1)}, {Key: "limit", Value: 2}}, nums(19, 18)},
		} {
			got := batchIDs(t, runCursor(t, db, find(tc.fields...)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("%v: %v, want %v", tc.fields, got, tc.want)
			}
		}
		// Through the driver: a sorted find across several batches.
		cur, err := coll.Find(testCtx(t), d("v", d("$gte", 3)), options.Find().SetSort(d("w", -1)).SetBatchSize(3))
		if err != nil {
			t.Fatal(err)
		}
		var all []bson.Raw
		if err := cur.All(testCtx(t), &all); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, doc := range all {
			got = append(got, idString(t, doc))
		}
		if want := nums(3, 4, 8, 9, 13, 14, 18, 19); !slices.Equal(got, want) {
			t.Errorf("driver sorted find: %v, want %v", got, want)
		}
	})

	t.Run("batchSize and singleBatch", func(t *testing.T) {
		t.Parallel()
		c := runCursor(t, db, find(bson.E{Key: "batchSize", Value: 0}))
		if len(c.batch()) != 0 || c.Cursor.ID == 0 {
			t.Errorf("batchSize 0: %d docs, id %d", len(c.batch()), c.Cursor.ID)
		}
		c = runCursor(t, db, bson.D{{Key: "getMore", Value: c.Cursor.ID}, {Key: "collection", Value: "nums"}, {Key: "batchSize", Value: 15}})
		if len(c.batch()) != 15 || c.Cursor.ID == 0 {
			t.Errorf("getMore batchSize 15: %d docs, id %d", len(c.batch()), c.Cursor.ID)
		}
		c = runCursor(t, db, bson.D{{Key: "getMore", Value: c.Cursor.ID}, {Key: "collection", Value: "nums"}})
		if len(c.batch()) != 5 || c.Cursor.ID != 0 {
			t.Errorf("last getMore: %d docs, id %d", len(c.batch()), c.Cursor.ID)
		}
		c = runCursor(t, db, find(bson.E{Key: "batchSize", Value: 4}, bson.E{Key: "singleBatch", Value: true}))
		if len(c.batch()) != 4 || c.Cursor.ID != 0 {
			t.Errorf("singleBatch: %d docs, id %d", len(c.batch()), c.Cursor.ID)
		}
		c = runCursor(t, db, find(bson.E{Key: "limit", Value: 7}, bson.E{Key: "batchSize", Value: 5}))
		if len(c.batch()) != 5 || c.Cursor.ID == 0 {
			t.Errorf("limit 7 batch 5: %d docs, id %d", len(c.batch()), c.Cursor.ID)
		}
		c = runCursor(t, db, bson.D{{Key: "getMore", Value: c.Cursor.ID}, {Key: "collection", Value: "nums"}})
		if len(c.batch()) != 2 || c.Cursor.ID != 0 {
			t.Errorf("limit rest: %d docs, id %d", len(c.batch()), c.Cursor.ID)
		}
		// Sorted results also come in batches.
		c = runCursor(t, db, find(bson.E{Key: "sort", Value: d("w", 1)}, bson.E{Key: "batchSize", Value: 6}))
		first := batchIDs(t, c)
		c = runCursor(t, db, bson.D{{Key: "getMore", Value: c.Cursor.ID}, {Key: "collection", Value: "nums"}, {Key: "batchSize", Value: 100}})
		if all := append(first, batchIDs(t, c)...); len(all) != 20 || all[0] != "19" || all[19] != "0" || c.Cursor.ID != 0 {
			t.Errorf("sorted in batches: %v (id %d)", all, c.Cursor.ID)
		}
	})

	t.Run("hint", func(t *testing.T) {
		t.Parallel()
		for _, h := range []any{"_id_", d("_id", 1), d("$natural", 1), d("$natural", -1)} {
			c := runCursor(t, db, find(bson.E{Key: "filter", Value: d("v", 0)}, bson.E{Key: "hint", Value: h}))
			got := batchIDs(t, c)
			want := nums(0, 5, 10, 15)
			if nat, ok := h.(bson.D); ok && nat[0].Key == "$natural" && nat[0].Value == -1 {
				want = nums(15, 10, 5, 0)
			}
			if !slices.Equal(got, want) {
				t.Errorf("hint %v: %v, want %v", h, got, want)
			}
		}
		for _, h := range []any{"v_1", d("v", 1), d("_id", -1)} {
			ce := runFail(t, db, find(bson.E{Key: "hint", Value: h}), 2, "BadValue")
			if !strings.Contains(ce.Message, "hint provided does not correspond to an existing index") {
				t.Errorf("hint %v: %q", h, ce.Message)
			}
		}
		// The driver's hint option.
		cur, err := coll.Find(testCtx(t), d("_id", d("$lt", 2)), options.Find().SetHint("_id_"))
		if err != nil {
			t.Fatal(err)
		}
		var got []bson.Raw
		if err := cur.All(testCtx(t), &got); err != nil || len(got) != 2 {
			t.Errorf("driver hint: %d docs, %v", len(got), err)
		}
		// A missing collection has no indexes to check a hint against.
		runCursor(t, db, bson.D{{Key: "find", Value: "nope"}, {Key: "hint", Value: "v_1"}})
	})

	t.Run("min and max", func(t *testing.T) {
		t.Parallel()
		c := runCursor(t, db, find(bson.E{Key: "hint", Value: d("_id", 1)}, bson.E{Key: "min", Value: d("_id", 3)}, bson.E{Key: "max", Value: d("_id", 6)}))
		if got := batchIDs(t, c); !slices.Equal(got, nums(3, 4, 5)) {
			t.Errorf("min/max: %v", got)
		}
		runFail(t, db, find(bson.E{Key: "min", Value: d("_id", 3)}), 51173, "Location51173")
	})

	t.Run("maxTimeMS", func(t *testing.T) {
		t.Parallel()
		slow := db.Collection("slow")
		var many []any
		for i := range 1000 {
			many = append(many, bson.D{{Key: "_id", Value: int32(i)}})
		}
		if _, err := slow.InsertMany(testCtx(t), many); err != nil {
			t.Fatal(err)
		}
		// Each document costs a $reduce over 2000 elements.
		heavy := d("$expr", d("$lt", bson.A{d("$reduce", bson.D{{Key: "input", Value: d("$range", bson.A{0, 2000})}, {Key: "initialValue", Value: 0},
			{Key: "in", Value: d("$add", bson.A{"$$value", "$$this"})}}), 0}))
		ce := runFail(t, db, bson.D{{Key: "find", Value: "slow"}, {Key: "filter", Value: heavy}, {Key: "maxTimeMS", Value: 20}}, 50, "MaxTimeMSExpired")
		if !strings.Contains(ce.Message, "exceeded time limit") {
			t.Errorf("errmsg %q", ce.Message)
		}
		runFail(t, db, bson.D{{Key: "count", Value: "slow"}, {Key: "query", Value: heavy}, {Key: "maxTimeMS", Value: 20}}, 50, "MaxTimeMSExpired")
		runFail(t, db, find(bson.E{Key: "maxTimeMS", Value: -1}), 51024, "Location51024")
		// Generous limits do not get in the way.
		if c := runCursor(t, db, find(bson.E{Key: "maxTimeMS", Value: 60000})); len(c.batch()) != 20 {
			t.Errorf("maxTimeMS 60000: %d docs", len(c.batch()))
		}
	})

	t.Run("let comment allowDiskUse readConcern", func(t *testing.T) {
		t.Parallel()
		c := runCursor(t, db, find(
			bson.E{Key: "filter", Value: d("$expr", d("$eq", bson.A{"$v", "$$target"}))},
			bson.E{Key: "let", Value: d("target", 3)},
			bson.E{Key: "comment", Value: "find with let"},
			bson.E{Key: "allowDiskUse", Value: true},
			bson.E{Key: "readConcern", Value: d("level", "local")},
			bson.E{Key: "projection", Value: bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: "$$target"}}},
		))
		if got := batchIDs(t, c); !slices.Equal(got, nums(3, 8, 13, 18)) {
			t.Errorf("let: %v", got)
		}
		if v := intOf(t, mustLookup(t, c.batch()[0], "t")); v != 3 {
			t.Errorf("let in projection: %d", v)
		}
		ce := runFail(t, db, find(bson.E{Key: "let", Value: d("Bad", 1)}), 9, "FailedToParse")
		if want := "Invalid 'let' parameter :: caused by :: 'Bad' starts with an invalid character for a user variable name"; ce.Message != want {
			t.Errorf("errmsg %q, want %q", ce.Message, want)
		}
		// A system variable is MongoDB's internal constant, not a user name.
		ce = runFail(t, db, find(bson.E{Key: "let", Value: d("NOW", 1)}), 4738901, "Location4738901")
		if want := "Attempt to set internal constant: NOW"; ce.Message != want {
			t.Errorf("errmsg %q, want %q", ce.Message, want)
		}
		// allowDiskUse: false still sorts what fits in memory.
		runCursor(t, db, find(bson.E{Key: "sort", Value: d("w", 1)}, bson.E{Key: "allowDiskUse", Value: false}))
		// The driver's comment option.
		cur, err := coll.Find(testCtx(t), d("_id", 1), options.Find().SetComment("hello"))
		if err != nil {
			t.Fatal(err)
		}
		_ = cur.Close(testCtx(t))
	})

	t.Run("returnKey showRecordId collation tailable", func(t *testing.T) {
		t.Parallel()
		c := runCursor(t, db, find(bson.E{Key: "filter", Value: d("_id", d("$lt", 2))}, bson.E{Key: "returnKey", Value: true}))
		if len(c.batch()) != 2 || len(keysOf(t, c.batch()[0])) != 0 {
			t.Errorf("returnKey with a collection scan: %v", c.batch())
		}
		c = runCursor(t, db, find(bson.E{Key: "filter", Value: d("_id", 4)}, bson.E{Key: "returnKey", Value: true}))
		if len(c.batch()) != 1 || relaxedJSON(t, c.batch()[0]) != `{"_id": 4}` {
			t.Errorf("returnKey with IDHACK: %v", c.batch())
		}
		c = runCursor(t, db, find(bson.E{Key: "filter", Value: d("_id", 4)}, bson.E{Key: "showRecordId", Value: true}))
		if len(c.batch()) != 1 || mustLookup(t, c.batch()[0], "$recordId").Type != bson.TypeInt64 {
			t.Errorf("showRecordId: %v", c.batch())
		}
		runCursor(t, db, find(bson.E{Key: "collation", Value: d("locale", "fr")}))
		ce := runFail(t, db, find(bson.E{Key: "collation", Value: d("locale", "fr_fr")}), 2, "BadValue")
		if ce.Message != `Field 'locale' is invalid in: { locale: "fr_fr" }. Did you mean 'fr_FR'?` {
			t.Errorf("collation errmsg %q", ce.Message)
		}
		runCursor(t, db, find(bson.E{Key: "collation", Value: d("locale", "simple")}))
		ce = runFail(t, db, find(bson.E{Key: "tailable", Value: true}), 2, "BadValue")
		if !strings.Contains(ce.Message, "tailable cursor requested on non capped collection") {
			t.Errorf("tailable errmsg %q", ce.Message)
		}
		runFail(t, db, find(bson.E{Key: "awaitData", Value: true}), 9, "FailedToParse")
		// The driver's tailable cursor type.
		_, err := coll.Find(testCtx(t), bson.D{}, options.Find().SetCursorType(options.Tailable))
		wantCode(t, err, 2, "BadValue")
		runFail(t, db, find(bson.E{Key: "hint", Value: 5}), 9, "FailedToParse")
		runFail(t, db, find(bson.E{Key: "sort", Value: "x"}), 14, "TypeMismatch")
		runFail(t, db, find(bson.E{Key: "projection", Value: 1}), 14, "TypeMismatch")
		runCursor(t, db, find(bson.E{Key: "noCursorTimeout", Value: true}, bson.E{Key: "allowPartialResults", Value: true}))
	})
}
