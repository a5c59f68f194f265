package integration

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

func famCmd(coll string, fields ...bson.E) bson.D {
	return append(bson.D{{Key: "findAndModify", Value: coll}}, fields...)
}

// famReplyDoc is findAndModify's reply.
type famReplyDoc struct {
	LastErrorObject bson.Raw      `bson:"lastErrorObject"`
	Value           bson.RawValue `bson:"value"`
	Raw             bson.Raw      `bson:"-"`
}

func runFAM(t testing.TB, db *mongo.Database, cmd bson.D) famReplyDoc {
	t.Helper()
	raw := runOK(t, db, cmd)
	var r famReplyDoc
	if err := bson.Unmarshal(raw, &r); err != nil {
		t.Fatalf("decode %v: %v", raw, err)
	}
	r.Raw = raw
	wantFields(t, raw, "lastErrorObject", "value", "ok")
	return r
}

// wantLEO checks lastErrorObject against want, byte for byte.
func wantLEO(t testing.TB, r famReplyDoc, want bson.D) {
	t.Helper()
	if w := marshalD(t, want); !slices.Equal(r.LastErrorObject, w) {
		t.Errorf("lastErrorObject %v, want %v", r.LastErrorObject, w)
	}
}

// wantValue checks the returned document (nil: null).
func wantValue(t testing.TB, r famReplyDoc, want bson.D) {
	t.Helper()
	if want == nil {
		if r.Value.Type != bson.TypeNull {
			t.Errorf("value %v, want null", r.Value)
		}
		return
	}
	if r.Value.Type != bson.TypeEmbeddedDocument || !slices.Equal(r.Value.Value, marshalD(t, want)) {
		t.Errorf("value %v, want %v", r.Value, marshalD(t, want))
	}
}

// TestFindAndModify covers findAndModify: update (old and new document),
// remove, upsert, sort, arrayFilters, hints, errors, the driver's
// FindOneAnd* helpers and atomicity under concurrency.
func TestFindAndModify(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)

	seed := func(t *testing.T) (*mongo.Database, *mongo.Collection) {
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll,
			bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}, {Key: "p", Value: 3}},
			bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "x"}, {Key: "p", Value: 1}},
			bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "y"}, {Key: "p", Value: 2}},
		)
		return db, coll
	}

	t.Run("update returns the old or new document", func(t *testing.T) {
		t.Parallel()
		db, coll := seed(t)
		r := runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(1)}, bson.E{Key: "update", Value: inc("p", 10)}))
		wantLEO(t, r, bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}})
		wantValue(t, r, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}, {Key: "p", Value: 3}})
		r = runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(1)}, bson.E{Key: "update", Value: inc("p", 10)}, bson.E{Key: "new", Value: true}))
		wantValue(t, r, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}, {Key: "p", Value: 23}})
		// A replacement.
		r = runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(1)}, bson.E{Key: "update", Value: bson.D{{Key: "z", Value: 1}}}, bson.E{Key: "new", Value: true}))
		wantValue(t, r, bson.D{{Key: "_id", Value: 1}, {Key: "z", Value: 1}})
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "z", Value: 1}})
		// No match: null, nothing changed.
		r = runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(9)}, bson.E{Key: "update", Value: inc("p", 1)}))
		wantLEO(t, r, bson.D{{Key: "n", Value: int32(0)}, {Key: "updatedExisting", Value: false}})
		wantValue(t, r, nil)
		// The alias, and a collection that does not exist.
		r = runFAM(t, db, bson.D{{Key: "findandmodify", Value: "none"}, {Key: "query", Value: bson.D{}}, {Key: "update", Value: inc("p", 1)}})
		wantLEO(t, r, bson.D{{Key: "n", Value: int32(0)}, {Key: "updatedExisting", Value: false}})
		if got := collNames(t, db); !slices.Equal(got, []string{"c"}) {
			t.Errorf("collections %v", got)
		}
	})

	t.Run("sort picks the document", func(t *testing.T) {
		t.Parallel()
		db, _ := seed(t)
		for _, tc := range []struct {
			sort bson.D
			want int
		}{
			{bson.D{{Key: "p", Value: 1}}, 2},
			{bson.D{{Key: "p", Value: -1}}, 1},
			{bson.D{{Key: "k", Value: -1}, {Key: "p", Value: 1}}, 3},
			{nil, 1},
		} {
			cmd := famCmd("c", bson.E{Key: "query", Value: bson.D{}}, bson.E{Key: "update", Value: inc("hits", 1)})
			if tc.sort != nil {
				cmd = append(cmd, bson.E{Key: "sort", Value: tc.sort})
			}
			r := runFAM(t, db, cmd)
			if id := intOf(t, mustLookup(t, r.Value.Document(), "_id")); id != int64(tc.want) {
				t.Errorf("sort %v: got _id %d, want %d", tc.sort, id, tc.want)
			}
		}
		// With a filter.
		r := runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: eq("k", "x")}, bson.E{Key: "sort", Value: bson.D{{Key: "p", Value: 1}}}, bson.E{Key: "remove", Value: true}))
		if id := intOf(t, mustLookup(t, r.Value.Document(), "_id")); id != 2 {
			t.Errorf("removed %d", id)
		}
		runFail(t, db, famCmd("c", bson.E{Key: "sort", Value: bson.D{{Key: "p", Value: 2}}}, bson.E{Key: "remove", Value: true}), 15975, "Location15975")
	})

	t.Run("remove", func(t *testing.T) {
		t.Parallel()
		db, coll := seed(t)
		r := runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(3)}, bson.E{Key: "remove", Value: true}))
		wantLEO(t, r, bson.D{{Key: "n", Value: int32(1)}})
		wantValue(t, r, bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "y"}, {Key: "p", Value: 2}})
		if findOne(t, coll, 3) != nil {
			t.Error("document 3 still there")
		}
		r = runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(3)}, bson.E{Key: "remove", Value: true}))
		wantLEO(t, r, bson.D{{Key: "n", Value: int32(0)}})
		wantValue(t, r, nil)
		if n := intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "collStats", Value: "c"}}), "count")); n != 2 {
			t.Errorf("count %d", n)
		}
	})

	t.Run("upsert", func(t *testing.T) {
		t.Parallel()
		db, coll := seed(t)
		r := runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(7)}, bson.E{Key: "update", Value: set("v", 1)}, bson.E{Key: "upsert", Value: true}))
		wantLEO(t, r, bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: false}, {Key: "upserted", Value: 7}})
		wantValue(t, r, nil)
		wantDoc(t, coll, 7, bson.D{{Key: "_id", Value: 7}, {Key: "v", Value: 1}})
		r = runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: eq("k", "new")}, bson.E{Key: "update", Value: set("v", 2)}, bson.E{Key: "upsert", Value: true}, bson.E{Key: "new", Value: true}))
		id := mustLookup(t, r.LastErrorObject, "upserted")
		if id.Type != bson.TypeObjectID {
			t.Fatalf("upserted %v", id)
		}
		wantValue(t, r, bson.D{{Key: "_id", Value: id.ObjectID()}, {Key: "k", Value: "new"}, {Key: "v", Value: 2}})
		// Matching now: an update.
		r = runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: eq("k", "new")}, bson.E{Key: "update", Value: set("v", 3)}, bson.E{Key: "upsert", Value: true}))
		wantLEO(t, r, bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}})
		// Into a collection that does not exist.
		r = runFAM(t, db, famCmd("fresh", bson.E{Key: "query", Value: idIs(1)}, bson.E{Key: "update", Value: bson.D{{Key: "a", Value: 1}}}, bson.E{Key: "upsert", Value: true}, bson.E{Key: "new", Value: true}))
		wantValue(t, r, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
	})

	t.Run("fields projection", func(t *testing.T) {
		t.Parallel()
		db, _ := seed(t)
		r := runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(1)}, bson.E{Key: "update", Value: inc("p", 1)},
			bson.E{Key: "fields", Value: bson.D{{Key: "p", Value: 1}, {Key: "_id", Value: 0}}}, bson.E{Key: "new", Value: true}))
		wantValue(t, r, bson.D{{Key: "p", Value: 4}})
		r = runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(2)}, bson.E{Key: "remove", Value: true},
			bson.E{Key: "fields", Value: bson.D{{Key: "k", Value: 0}}}))
		wantValue(t, r, bson.D{{Key: "_id", Value: 2}, {Key: "p", Value: 1}})
		var doc bson.Raw
		err := db.Collection("c").FindOneAndUpdate(testCtx(t), idIs(3), set("q", 1),
			options.FindOneAndUpdate().SetProjection(bson.D{{Key: "q", Value: 1}}).SetReturnDocument(options.After)).Decode(&doc)
		if err != nil || !slices.Equal(doc, marshalD(t, bson.D{{Key: "_id", Value: 3}, {Key: "q", Value: 1}})) {
			t.Errorf("FindOneAndUpdate with projection: %v %v", doc, err)
		}
		runFail(t, db, famCmd("c", bson.E{Key: "remove", Value: true}, bson.E{Key: "fields", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 0}}}), 31254, "Location31254")
	})

	t.Run("pipeline update", func(t *testing.T) {
		t.Parallel()
		db, _ := seed(t)
		r := runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(1)},
			bson.E{Key: "update", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "p2", Value: bson.D{{Key: "$multiply", Value: bson.A{"$p", "$$f"}}}}}}}}},
			bson.E{Key: "let", Value: bson.D{{Key: "f", Value: 10}}}, bson.E{Key: "new", Value: true}))
		wantValue(t, r, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}, {Key: "p", Value: 3}, {Key: "p2", Value: 30}})
	})

	t.Run("array filters and positional", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{1, 5, 9}}})
		r := runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(1)}, bson.E{Key: "update", Value: set("a.$[big]", 0)},
			bson.E{Key: "arrayFilters", Value: bson.A{eq("big", bson.D{{Key: "$gt", Value: 4}})}}, bson.E{Key: "new", Value: true}))
		wantValue(t, r, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{1, 0, 0}}})
		r = runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: eq("a", 1)}, bson.E{Key: "update", Value: set("a.$", 7)}, bson.E{Key: "new", Value: true}))
		wantValue(t, r, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{7, 0, 0}}})
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		db, coll := seed(t)
		for _, tc := range []struct {
			fields []bson.E
			code   int32
			name   string
			msg    string
		}{
			{nil, 9, "FailedToParse", "Either an update or remove=true must be specified"},
			{[]bson.E{{Key: "remove", Value: true}, {Key: "update", Value: set("a", 1)}}, 9, "FailedToParse", "Cannot specify both an update and remove=true"},
			{[]bson.E{{Key: "remove", Value: true}, {Key: "new", Value: true}}, 9, "FailedToParse", "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document"},
			{[]bson.E{{Key: "remove", Value: true}, {Key: "arrayFilters", Value: bson.A{eq("i", 1)}}}, 9, "FailedToParse", "Cannot specify arrayFilters and remove=true"},
			{[]bson.E{{Key: "query", Value: idIs(1)}, {Key: "update", Value: set("_id", 5)}}, 66, "ImmutableField", "Plan executor error during findAndModify :: caused by :: Performing an update on the path '_id' would modify the immutable field '_id'"},
			{[]bson.E{{Key: "query", Value: idIs(1)}, {Key: "update", Value: inc("k", 1)}}, 14, "TypeMismatch", "Plan executor error during findAndModify :: caused by :: Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'k' of non-numeric type string"},
			{[]bson.E{{Key: "update", Value: bson.D{{Key: "$set", Value: pairs("a", 1)}, {Key: "$unset", Value: pairs("a", 1)}}}}, 40, "ConflictingUpdateOperators", "Updating the path 'a' would create a conflict at 'a'"},
			{[]bson.E{{Key: "query", Value: eq("p", 5)}, {Key: "update", Value: set("_id", 1)}, {Key: "upsert", Value: true}}, 11000, "DuplicateKey", ""},
			{[]bson.E{{Key: "query", Value: bson.D{{Key: "$bad", Value: 1}}}, {Key: "remove", Value: true}}, 2, "BadValue", ""},
			{[]bson.E{{Key: "update", Value: 1}}, 9, "FailedToParse", ""},
			{[]bson.E{{Key: "remove", Value: true}, {Key: "bogus", Value: 1}}, 40415, "Location40415", ""},
			{[]bson.E{{Key: "remove", Value: "yes"}}, 14, "TypeMismatch", ""},
			{[]bson.E{{Key: "remove", Value: true}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "xx"}}}}, 2, "BadValue", `Field 'locale' is invalid in: { locale: "xx" }`},
			{[]bson.E{{Key: "remove", Value: true}, {Key: "hint", Value: "nope"}}, 2, "BadValue", "hint provided does not correspond to an existing index"},
		} {
			ce := runFail(t, db, famCmd("c", tc.fields...), tc.code, tc.name)
			if tc.msg != "" && ce.Message != tc.msg {
				t.Errorf("%v: errmsg %q, want %q", tc.fields, ce.Message, tc.msg)
			}
		}
		// The write's own errors carry the plan executor's context.
		ce := runFail(t, db, famCmd("c", bson.E{Key: "query", Value: eq("p", 5)}, bson.E{Key: "update", Value: set("_id", 1)}, bson.E{Key: "upsert", Value: true}), 11000, "DuplicateKey")
		if want := "Plan executor error during findAndModify :: caused by :: E11000 duplicate key error collection: " + db.Name() + ".c index: _id_ dup key: { _id: 1 }"; ce.Message != want {
			t.Errorf("errmsg %q, want %q", ce.Message, want)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}, {Key: "p", Value: 3}})
		if n := len(idsIn(t, coll, bson.D{})); n != 3 {
			t.Errorf("%d documents", n)
		}
		// A valid hint.
		r := runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(2)}, bson.E{Key: "update", Value: inc("p", 1)}, bson.E{Key: "hint", Value: bson.D{{Key: "_id", Value: 1}}}))
		wantLEO(t, r, bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}})
	})

	t.Run("driver helpers", func(t *testing.T) {
		t.Parallel()
		_, coll := seed(t)
		ctx := testCtx(t)
		var doc bson.Raw
		err := coll.FindOneAndUpdate(ctx, eq("k", "x"), inc("p", 100),
			options.FindOneAndUpdate().SetSort(bson.D{{Key: "p", Value: 1}}).SetReturnDocument(options.After)).Decode(&doc)
		if err != nil || !slices.Equal(doc, marshalD(t, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "x"}, {Key: "p", Value: 101}})) {
			t.Errorf("FindOneAndUpdate: %v %v", doc, err)
		}
		err = coll.FindOneAndReplace(ctx, idIs(3), bson.D{{Key: "r", Value: true}}).Decode(&doc)
		if err != nil || !slices.Equal(doc, marshalD(t, bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "y"}, {Key: "p", Value: 2}})) {
			t.Errorf("FindOneAndReplace: %v %v", doc, err)
		}
		wantDoc(t, coll, 3, bson.D{{Key: "_id", Value: 3}, {Key: "r", Value: true}})
		err = coll.FindOneAndDelete(ctx, idIs(1)).Decode(&doc)
		if err != nil || !slices.Equal(doc, marshalD(t, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}, {Key: "p", Value: 3}})) {
			t.Errorf("FindOneAndDelete: %v %v", doc, err)
		}
		if err := coll.FindOneAndDelete(ctx, idIs(1)).Err(); !errors.Is(err, mongo.ErrNoDocuments) {
			t.Errorf("FindOneAndDelete of nothing: %v", err)
		}
		err = coll.FindOneAndUpdate(ctx, idIs(50), set("u", 1), options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
		if err != nil || !slices.Equal(doc, marshalD(t, bson.D{{Key: "_id", Value: 50}, {Key: "u", Value: 1}})) {
			t.Errorf("FindOneAndUpdate upsert: %v %v", doc, err)
		}
		err = coll.FindOneAndUpdate(ctx, idIs(2), set("_id", 9)).Err()
		wantCode(t, err, 66, "ImmutableField")
		journaled := coll.Database().Collection("c", options.Collection().SetWriteConcern(writeconcern.Journaled()))
		if err := journaled.FindOneAndUpdate(ctx, idIs(2), inc("p", 1)).Err(); err != nil {
			t.Errorf("journaled: %v", err)
		}
	})

	t.Run("a sequence: concurrent increments return distinct values", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("seq")
		const workers, each = 8, 100
		var mu sync.Mutex
		seen := map[int64]bool{}
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					var doc bson.Raw
					err := coll.FindOneAndUpdate(testCtx(t), idIs("s"), inc("n", 1),
						options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
					if err != nil {
						t.Error(err)
						return
					}
					n := intOf(t, mustLookup(t, doc, "n"))
					mu.Lock()
					if seen[n] {
						t.Errorf("value %d returned twice", n)
					}
					seen[n] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != workers*each {
			t.Errorf("%d distinct values, want %d", len(seen), workers*each)
		}
		wantDoc(t, coll, "s", bson.D{{Key: "_id", Value: "s"}, {Key: "n", Value: workers * each}})
	})

	t.Run("a queue: concurrent claims never take one job twice", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("jobs")
		const jobs, workers = 200, 8
		var docs []any
		for i := range jobs {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "state", Value: "new"}})
		}
		mustInsert(t, coll, docs...)
		var mu sync.Mutex
		claimed := map[int64]int{}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var doc bson.Raw
					err := coll.FindOneAndUpdate(testCtx(t), eq("state", "new"), set("state", "taken", "by", w),
						options.FindOneAndUpdate().SetSort(bson.D{{Key: "_id", Value: 1}})).Decode(&doc)
					if errors.Is(err, mongo.ErrNoDocuments) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					claimed[intOf(t, mustLookup(t, doc, "_id"))]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(claimed) != jobs {
			t.Errorf("%d jobs claimed, want %d", len(claimed), jobs)
		}
		for id, n := range claimed {
			if n != 1 {
				t.Errorf("job %d claimed %d times", id, n)
			}
		}
	})
}
