package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// insertCmd builds {insert: coll, documents: docs} plus extra fields.
func insertCmd(coll string, docs bson.A, extra ...bson.E) bson.D {
	return append(bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: docs}}, extra...)
}

// deleteCmd builds {delete: coll, deletes: stmts} plus extra fields.
func deleteCmd(coll string, stmts bson.A, extra ...bson.E) bson.D {
	return append(bson.D{{Key: "delete", Value: coll}, {Key: "deletes", Value: stmts}}, extra...)
}

func delStmt(q bson.D, limit int) bson.D {
	return bson.D{{Key: "q", Value: q}, {Key: "limit", Value: limit}}
}

// TestInsert covers the insert command: both ways of sending documents,
// _id generation and placement, duplicate keys, ordered and unordered
// batches, invalid _ids, batch limits and write concerns.
func TestInsert(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)

	t.Run("documents in the command body", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		r := runWrite(t, db, insertCmd("c", bson.A{
			bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "a"}},
			bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: "b"}},
			bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: "c"}},
		}))
		if r.N != 3 || len(r.WriteErrors) != 0 {
			t.Fatalf("reply %v", r.Raw)
		}
		wantFields(t, r.Raw, "n", "ok")
		if got := idsIn(t, db.Collection("c"), bson.D{}); !slices.Equal(got, intIDs(1, 2, 3)) {
			t.Errorf("ids %v", got)
		}
	})

	t.Run("documents as a kind-1 sequence", func(t *testing.T) {
		t.Parallel()
		// The driver sends insert's documents as an OP_MSG document sequence.
		coll := client.Database(dbName(t)).Collection("c")
		var docs []any
		for i := range 250 {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "sq", Value: i * i}})
		}
		res, err := coll.InsertMany(testCtx(t), docs)
		if err != nil || len(res.InsertedIDs) != 250 {
			t.Fatalf("InsertMany: %v %v", res, err)
		}
		var doc bson.Raw
		if err := coll.FindOne(testCtx(t), bson.D{{Key: "_id", Value: 12}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if v := intOf(t, mustLookup(t, doc, "sq")); v != 144 {
			t.Errorf("doc 12: %v", doc)
		}
		if n := len(idsIn(t, coll, bson.D{})); n != 250 {
			t.Errorf("%d documents", n)
		}
		if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: "one"}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("generated ObjectId comes first", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		// The collection API would add _id itself: send the raw command.
		runWrite(t, db, insertCmd("c", bson.A{
			bson.D{{Key: "x", Value: 1}, {Key: "y", Value: "a"}},
			bson.D{{Key: "x", Value: 2}},
		}))
		cur := runCursor(t, db, bson.D{{Key: "find", Value: "c"}})
		docs := cur.Cursor.FirstBatch
		if len(docs) != 2 {
			t.Fatalf("%d documents", len(docs))
		}
		seen := map[bson.ObjectID]bool{}
		for _, d := range docs {
			keys := keysOf(t, d)
			if keys[0] != "_id" {
				t.Errorf("_id not first: %v", keys)
			}
			v := mustLookup(t, d, "_id")
			if v.Type != bson.TypeObjectID {
				t.Fatalf("_id is %s", v.Type)
			}
			seen[v.ObjectID()] = true
		}
		if len(seen) != 2 {
			t.Error("generated _ids collide")
		}
		if keys := keysOf(t, docs[0]); !slices.Equal(keys, []string{"_id", "x", "y"}) && !slices.Equal(keys, []string{"_id", "x"}) {
			t.Errorf("fields %v", keys)
		}
	})

	t.Run("_id moved to the front", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runWrite(t, db, insertCmd("c", bson.A{bson.D{{Key: "a", Value: 1}, {Key: "_id", Value: "k"}, {Key: "b", Value: 2}}}))
		var doc bson.Raw
		if err := db.Collection("c").FindOne(testCtx(t), bson.D{{Key: "_id", Value: "k"}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if keys := keysOf(t, doc); !slices.Equal(keys, []string{"_id", "a", "b"}) {
			t.Errorf("fields %v", keys)
		}
	})

	t.Run("duplicate _id", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		ns := db.Name() + ".c"
		runWrite(t, db, insertCmd("c", bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: "a"}}}))
		for _, tc := range []struct {
			id     any
			render string
		}{
			{int32(1), "1"},
			{1.0, "1.0"},
			{int64(1), "1"},
			{"a", `"a"`},
		} {
			r := runWrite(t, db, insertCmd("c", bson.A{bson.D{{Key: "_id", Value: tc.id}, {Key: "new", Value: true}}}))
			if r.N != 0 || len(r.WriteErrors) != 1 {
				t.Fatalf("%v: reply %v", tc.id, r.Raw)
			}
			we := r.WriteErrors[0]
			if we.Index != 0 || we.Code != 11000 {
				t.Errorf("%v: write error %+v", tc.id, we)
			}
			want := fmt.Sprintf("E11000 duplicate key error collection: %s index: _id_ dup key: { _id: %s }", ns, tc.render)
			if we.ErrMsg != want {
				t.Errorf("errmsg %q, want %q", we.ErrMsg, want)
			}
			wantPattern, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(1)}})
			if !slices.Equal(we.KeyPattern, wantPattern) {
				t.Errorf("keyPattern %v", we.KeyPattern)
			}
			wantValue, _ := bson.Marshal(bson.D{{Key: "_id", Value: tc.id}})
			if !slices.Equal(we.KeyValue, wantValue) {
				t.Errorf("keyValue %v, want %v", we.KeyValue, bson.Raw(wantValue))
			}
		}
		// The stored documents are untouched.
		if got := idsIn(t, db.Collection("c"), bson.D{{Key: "new", Value: true}}); len(got) != 0 {
			t.Errorf("duplicates stored: %v", got)
		}
		// The collection API: a WriteException recognised as a duplicate key.
		_, err := db.Collection("c").InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 1}})
		if !mongo.IsDuplicateKeyError(err) {
			t.Fatalf("InsertOne duplicate: %v", err)
		}
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 || we.WriteErrors[0].Index != 0 {
			t.Errorf("WriteException %+v", err)
		}
	})

	t.Run("ordered stops at the first error", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		for _, ordered := range []any{nil, true} {
			coll := fmt.Sprint("c_", ordered)
			var extra []bson.E
			if ordered != nil {
				extra = append(extra, bson.E{Key: "ordered", Value: ordered})
			}
			r := runWrite(t, db, insertCmd(coll, bson.A{
				bson.D{{Key: "_id", Value: 1}},
				bson.D{{Key: "_id", Value: 2}},
				bson.D{{Key: "_id", Value: 1}},
				bson.D{{Key: "_id", Value: 3}},
			}, extra...))
			idx, codes := r.errorIndexes()
			if r.N != 2 || !slices.Equal(idx, []int{2}) || !slices.Equal(codes, []int{11000}) {
				t.Errorf("ordered=%v: n %d errors %v %v", ordered, r.N, idx, codes)
			}
			if got := idsIn(t, db.Collection(coll), bson.D{}); !slices.Equal(got, intIDs(1, 2)) {
				t.Errorf("ordered=%v: stored %v", ordered, got)
			}
		}
		// The same through the collection API.
		_, err := db.Collection("api").InsertMany(testCtx(t), []any{
			bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}},
		})
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 1 {
			t.Errorf("InsertMany ordered: %v", err)
		}
		if got := idsIn(t, db.Collection("api"), bson.D{}); !slices.Equal(got, intIDs(1)) {
			t.Errorf("InsertMany ordered stored %v", got)
		}
	})

	t.Run("unordered reports every error", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		r := runWrite(t, db, insertCmd("c", bson.A{
			bson.D{{Key: "_id", Value: 1}},
			bson.D{{Key: "_id", Value: 1}},
			bson.D{{Key: "_id", Value: 2}},
			bson.D{{Key: "_id", Value: bson.A{1, 2}}},
			bson.D{{Key: "_id", Value: 2}},
			bson.D{{Key: "_id", Value: 3}},
		}, bson.E{Key: "ordered", Value: false}))
		idx, codes := r.errorIndexes()
		if r.N != 3 || !slices.Equal(idx, []int{1, 3, 4}) || !slices.Equal(codes, []int{11000, 53, 11000}) {
			t.Errorf("n %d errors %v %v", r.N, idx, codes)
		}
		if got := idsIn(t, db.Collection("c"), bson.D{}); !slices.Equal(got, intIDs(1, 2, 3)) {
			t.Errorf("stored %v", got)
		}
		_, err := db.Collection("api").InsertMany(testCtx(t), []any{
			bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 2}},
		}, options.InsertMany().SetOrdered(false))
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 2 || bwe.WriteErrors[0].Index != 1 || bwe.WriteErrors[1].Index != 3 {
			t.Errorf("InsertMany unordered: %v", err)
		}
	})

	t.Run("large batches report global indexes", func(t *testing.T) {
		t.Parallel()
		// Past the server's internal transaction chunk (1000 documents),
		// write errors still carry the statement's index in the batch.
		db := client.Database(dbName(t))
		docs := docsOf(0, 2500)
		for _, i := range []int{700, 1400, 2100} {
			docs[i] = bson.D{{Key: "_id", Value: int32(i - 500)}}
		}
		r := runWrite(t, db, insertCmd("u", docs, bson.E{Key: "ordered", Value: false}))
		if idx, codes := r.errorIndexes(); r.N != 2497 || !slices.Equal(idx, []int{700, 1400, 2100}) || !slices.Equal(codes, []int{11000, 11000, 11000}) {
			t.Errorf("unordered: n %d errors %v", r.N, idx)
		}
		r = runWrite(t, db, insertCmd("o", docs))
		if idx, _ := r.errorIndexes(); r.N != 700 || !slices.Equal(idx, []int{700}) {
			t.Errorf("ordered: n %d errors %v", r.N, idx)
		}
		if n := intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "collStats", Value: "o"}}), "count")); n != 700 {
			t.Errorf("ordered batch stored %d documents", n)
		}
	})

	t.Run("invalid _id", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		for _, tc := range []struct {
			id   any
			code int
		}{
			{bson.A{1, 2}, 53},
			{bson.A{}, 53},
			{bson.Regex{Pattern: "x", Options: ""}, 53},
		} {
			r := runWrite(t, db, insertCmd("c", bson.A{bson.D{{Key: "_id", Value: tc.id}}}))
			if r.N != 0 || len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != tc.code || r.WriteErrors[0].Index != 0 {
				t.Errorf("_id %v: %v", tc.id, r.Raw)
			}
		}
		// ordered: the invalid document stops the batch
		r := runWrite(t, db, insertCmd("d", bson.A{
			bson.D{{Key: "_id", Value: 1}},
			bson.D{{Key: "_id", Value: bson.A{1}}},
			bson.D{{Key: "_id", Value: 2}},
		}))
		if idx, codes := r.errorIndexes(); r.N != 1 || !slices.Equal(idx, []int{1}) || !slices.Equal(codes, []int{53}) {
			t.Errorf("ordered with an array _id: n %d errors %v %v", r.N, idx, codes)
		}
		if !strings.Contains(r.WriteErrors[0].ErrMsg, "array") {
			t.Errorf("errmsg %q", r.WriteErrors[0].ErrMsg)
		}
		// Other types are fine as _id, including documents.
		ok := bson.A{
			bson.D{{Key: "_id", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: bson.A{1}}}}},
			bson.D{{Key: "_id", Value: nil}},
			bson.D{{Key: "_id", Value: true}},
			bson.D{{Key: "_id", Value: bson.NewObjectID()}},
			bson.D{{Key: "_id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}},
		}
		if r := runWrite(t, db, insertCmd("e", ok)); r.N != int64(len(ok)) || len(r.WriteErrors) != 0 {
			t.Errorf("valid _ids: %v", r.Raw)
		}
	})

	t.Run("numerically equal _ids collide", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		ctx := testCtx(t)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(1)}, {Key: "t", Value: "int"}}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []any{1.0, int64(1), bson.NewDecimal128(0x3040000000000000, 1)} {
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); !mongo.IsDuplicateKeyError(err) {
				t.Errorf("_id %T: %v", id, err)
			}
		}
		for _, id := range []any{1.0, int64(1), int32(1)} {
			var doc bson.Raw
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
				t.Fatalf("find _id %T: %v", id, err)
			}
			if mustLookup(t, doc, "t").StringValue() != "int" {
				t.Errorf("find _id %T: %v", id, doc)
			}
		}
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1.5}}); err != nil {
			t.Errorf("_id 1.5: %v", err)
		}
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "1"}}); err != nil {
			t.Errorf(`_id "1": %v`, err)
		}
	})

	t.Run("batch size limits", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		ce := runFail(t, db, insertCmd("c", bson.A{}), 16, "InvalidLength")
		if ce.Message != "Write batch sizes must be between 1 and 100000. Got 0 operations." {
			t.Errorf("errmsg %q", ce.Message)
		}
		ce = runFail(t, db, insertCmd("c", docsOf(0, 100001)), 16, "InvalidLength")
		if ce.Message != "Write batch sizes must be between 1 and 100000. Got 100001 operations." {
			t.Errorf("errmsg %q", ce.Message)
		}
		if got := collNames(t, db); len(got) != 0 {
			t.Errorf("a refused batch created %v", got)
		}
	})

	t.Run("command errors", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		for _, tc := range []struct {
			cmd  bson.D
			code int32
			name string
		}{
			{bson.D{{Key: "insert", Value: "c"}}, 40414, "Location40414"},
			{bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: 5}}, 14, "TypeMismatch"},
			{bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{1}}}, 14, "TypeMismatch"},
			{insertCmd("c", bson.A{bson.D{}}, bson.E{Key: "bogus", Value: 1}), 40415, "Location40415"},
			{insertCmd("c", bson.A{bson.D{}}, bson.E{Key: "ordered", Value: "yes"}), 14, "TypeMismatch"},
			{insertCmd("c", bson.A{bson.D{}}, bson.E{Key: "writeConcern", Value: 1}), 14, "TypeMismatch"},
			{insertCmd("c", bson.A{bson.D{}}, bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: -1}}}), 9, "FailedToParse"},
			{bson.D{{Key: "insert", Value: 1}, {Key: "documents", Value: bson.A{bson.D{}}}}, 73, "InvalidNamespace"},
		} {
			runFail(t, db, tc.cmd, tc.code, tc.name)
		}
		if got := collNames(t, db); len(got) != 0 {
			t.Errorf("failed inserts created %v", got)
		}
	})

	t.Run("unacknowledged writes land", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c", options.Collection().SetWriteConcern(writeconcern.Unacknowledged()))
		ctx := testCtx(t)
		res, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}})
		if err != nil || res.Acknowledged {
			t.Fatalf("w:0 InsertOne: %+v %v", res, err)
		}
		var docs []any
		for i := 1; i <= 99; i++ {
			docs = append(docs, bson.D{{Key: "_id", Value: i}})
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		acked := client.Database(coll.Database().Name()).Collection("c")
		waitFor(t, "100 unacknowledged inserts", func() bool { return len(idsIn(t, acked, bson.D{})) == 100 })
		if _, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$eq", Value: 50}}}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "an unacknowledged delete", func() bool { return len(idsIn(t, acked, bson.D{})) == 99 })
		// w:0 errors are not reported, and do not break the connection.
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatalf("w:0 duplicate: %v", err)
		}
		if n := len(idsIn(t, acked, bson.D{})); n != 99 {
			t.Errorf("%d documents", n)
		}
	})

	t.Run("journaled writes", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c", options.Collection().SetWriteConcern(writeconcern.Journaled()))
		ctx := testCtx(t)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		if res, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil || res.DeletedCount != 1 {
			t.Fatalf("journaled delete: %v %v", res, err)
		}
		for _, wc := range []bson.D{
			{{Key: "w", Value: 1}, {Key: "j", Value: true}},
			{{Key: "w", Value: "majority"}, {Key: "j", Value: true}, {Key: "wtimeout", Value: 100}},
			{{Key: "fsync", Value: true}},
		} {
			r := runWrite(t, db, insertCmd("d", bson.A{bson.D{}}, bson.E{Key: "writeConcern", Value: wc}))
			if r.N != 1 {
				t.Errorf("writeConcern %v: %v", wc, r.Raw)
			}
		}
	})
}

// TestFind covers find's filters (equality on fields, dotted paths and
// arrays, null), skip, limit, batchSize, singleBatch, getMore, killCursors
// and cursor lifetime.
func TestFind(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	ctx := testCtx(t)

	// A shared read-only collection for the filter cases.
	fdb := client.Database("find_filters")
	_, err := fdb.Collection("docs").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "a"}, {Key: "x", Value: int32(1)}, {Key: "s", Value: "foo"},
			{Key: "sub", Value: bson.D{{Key: "k", Value: 1}, {Key: "m", Value: "p"}}},
			{Key: "tags", Value: bson.A{"red", "blue"}}, {Key: "arr", Value: bson.A{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 2}}}}},
		bson.D{{Key: "_id", Value: "b"}, {Key: "x", Value: 2.0}, {Key: "s", Value: "bar"},
			{Key: "sub", Value: bson.D{{Key: "k", Value: 2}}},
			{Key: "tags", Value: bson.A{"green"}}, {Key: "arr", Value: bson.A{bson.D{{Key: "k", Value: 3}}}}},
		bson.D{{Key: "_id", Value: "c"}, {Key: "x", Value: int64(1)}, {Key: "s", Value: "baz"},
			{Key: "sub", Value: bson.D{{Key: "k", Value: 1}, {Key: "m", Value: nil}}},
			{Key: "tags", Value: bson.A{}}, {Key: "n", Value: nil}},
		bson.D{{Key: "_id", Value: "d"}, {Key: "x", Value: "1"}, {Key: "tags", Value: bson.A{bson.A{"red"}, "x"}},
			{Key: "n", Value: 5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// MongoDB's null semantics, after jstests/core/query/null_query_semantics.js.
	_, err = fdb.Collection("nulls").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "a_empty_subobject"}, {Key: "a", Value: bson.D{}}},
		bson.D{{Key: "_id", Value: "a_null"}, {Key: "a", Value: nil}},
		bson.D{{Key: "_id", Value: "a_number"}, {Key: "a", Value: 4}},
		bson.D{{Key: "_id", Value: "a_subobject_b_not_null"}, {Key: "a", Value: bson.D{{Key: "b", Value: "hi"}}}},
		bson.D{{Key: "_id", Value: "a_subobject_b_null"}, {Key: "a", Value: bson.D{{Key: "b", Value: nil}}}},
		bson.D{{Key: "_id", Value: "no_a"}},
		bson.D{{Key: "_id", Value: "a_double_array"}, {Key: "a", Value: bson.A{bson.A{}}}},
		bson.D{{Key: "_id", Value: "a_empty_array"}, {Key: "a", Value: bson.A{}}},
		bson.D{{Key: "_id", Value: "a_object_array_no_b_nulls"}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}}, bson.D{{Key: "b", Value: 3}}}}},
		bson.D{{Key: "_id", Value: "a_object_array_some_b_nulls"}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: nil}}, bson.D{{Key: "b", Value: 3}}}}},
		bson.D{{Key: "_id", Value: "a_object_array_some_b_missing"}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 3}}, bson.D{}}}},
		bson.D{{Key: "_id", Value: "a_value_array_all_nulls"}, {Key: "a", Value: bson.A{nil, nil}}},
		bson.D{{Key: "_id", Value: "a_value_array_no_nulls"}, {Key: "a", Value: bson.A{1, "string", 4}}},
		bson.D{{Key: "_id", Value: "a_value_array_with_null"}, {Key: "a", Value: bson.A{1, "string", nil, 4}}},
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("filters", func(t *testing.T) {
		t.Parallel()
		all := []string{"a", "b", "c", "d"}
		for _, tc := range []struct {
			name   string
			filter bson.D
			want   []string
		}{
			{"empty", bson.D{}, all},
			{"int", bson.D{{Key: "x", Value: 1}}, []string{"a", "c"}},
			{"double matches int and long", bson.D{{Key: "x", Value: 1.0}}, []string{"a", "c"}},
			{"long", bson.D{{Key: "x", Value: int64(2)}}, []string{"b"}},
			{"string is not a number", bson.D{{Key: "x", Value: "1"}}, []string{"d"}},
			{"string", bson.D{{Key: "s", Value: "bar"}}, []string{"b"}},
			{"two fields", bson.D{{Key: "x", Value: 1}, {Key: "s", Value: "baz"}}, []string{"c"}},
			{"$and", bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "s", Value: "foo"}}}}}, []string{"a"}},
			{"$eq", bson.D{{Key: "s", Value: bson.D{{Key: "$eq", Value: "foo"}}}}, []string{"a"}},
			{"dotted", bson.D{{Key: "sub.k", Value: 1}}, []string{"a", "c"}},
			{"dotted string", bson.D{{Key: "sub.m", Value: "p"}}, []string{"a"}},
			{"whole subdocument", bson.D{{Key: "sub", Value: bson.D{{Key: "k", Value: 2}}}}, []string{"b"}},
			{"subdocument field order matters", bson.D{{Key: "sub", Value: bson.D{{Key: "m", Value: "p"}, {Key: "k", Value: 1}}}}, nil},
			{"partial subdocument", bson.D{{Key: "sub", Value: bson.D{{Key: "k", Value: 1}}}}, nil},
			{"array element", bson.D{{Key: "tags", Value: "red"}}, []string{"a"}},
			{"second array element", bson.D{{Key: "tags", Value: "blue"}}, []string{"a"}},
			{"whole array", bson.D{{Key: "tags", Value: bson.A{"green"}}}, []string{"b"}},
			{"array order matters", bson.D{{Key: "tags", Value: bson.A{"blue", "red"}}}, nil},
			{"empty array", bson.D{{Key: "tags", Value: bson.A{}}}, []string{"c"}},
			{"nested array element", bson.D{{Key: "tags", Value: bson.A{"red"}}}, []string{"d"}},
			{"array index", bson.D{{Key: "tags.0", Value: "green"}}, []string{"b"}},
			{"path through array of documents", bson.D{{Key: "arr.k", Value: 2}}, []string{"a"}},
			{"index then field", bson.D{{Key: "arr.1.k", Value: 2}}, []string{"a"}},
			{"index then field miss", bson.D{{Key: "arr.0.k", Value: 2}}, nil},
			{"null matches null and missing", bson.D{{Key: "n", Value: nil}}, []string{"a", "b", "c"}},
			{"dotted null", bson.D{{Key: "sub.m", Value: nil}}, []string{"b", "c", "d"}},
			{"null through array of documents", bson.D{{Key: "arr.k", Value: nil}}, []string{"c", "d"}},
			{"missing field", bson.D{{Key: "nosuch", Value: 1}}, nil},
			{"_id", bson.D{{Key: "_id", Value: "b"}}, []string{"b"}},
			{"_id $eq", bson.D{{Key: "_id", Value: bson.D{{Key: "$eq", Value: "c"}}}}, []string{"c"}},
			{"_id and field", bson.D{{Key: "_id", Value: "b"}, {Key: "x", Value: 1}}, nil},
			{"missing _id", bson.D{{Key: "_id", Value: "zz"}}, nil},
			{"$comment", bson.D{{Key: "x", Value: 2}, {Key: "$comment", Value: "hi"}}, []string{"b"}},
		} {
			cur := runCursor(t, fdb, bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: tc.filter}})
			if got := sortedIDs(t, cur.Cursor.FirstBatch); !slices.Equal(got, tc.want) {
				t.Errorf("%s %v: got %v, want %v", tc.name, tc.filter, got, tc.want)
			}
			if cur.Cursor.ID != 0 {
				t.Errorf("%s: cursor left open", tc.name)
			}
		}
	})

	t.Run("null semantics", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			filter bson.D
			want   []string
		}{
			{bson.D{{Key: "a", Value: nil}}, []string{"a_null", "a_value_array_all_nulls", "a_value_array_with_null", "no_a"}},
			{bson.D{{Key: "a", Value: bson.D{{Key: "$eq", Value: nil}}}}, []string{"a_null", "a_value_array_all_nulls", "a_value_array_with_null", "no_a"}},
			{bson.D{{Key: "a.b", Value: nil}}, []string{
				"a_empty_subobject", "a_null", "a_number", "a_object_array_some_b_missing",
				"a_object_array_some_b_nulls", "a_subobject_b_null", "no_a",
			}},
		} {
			got := idsIn(t, fdb.Collection("nulls"), tc.filter)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("%v:\n got %v\nwant %v", tc.filter, got, want)
			}
		}
	})

	t.Run("filter errors", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			cmd  bson.D
			code int32
			name string
		}{
			{bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: 1}}, 14, "TypeMismatch"},
			{bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: bson.D{{Key: "$bogus", Value: 1}}}}, 2, "BadValue"},
			{bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: bson.D{{Key: "$and", Value: 1}}}}, 2, "BadValue"},
			{bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: bson.D{{Key: "$and", Value: bson.A{}}}}}, 2, "BadValue"},
			{bson.D{{Key: "find", Value: "docs"}, {Key: "bogus", Value: 1}}, 40415, "Location40415"},
			{bson.D{{Key: "find", Value: "docs"}, {Key: "skip", Value: "x"}}, 14, "TypeMismatch"},
			{bson.D{{Key: "find", Value: "docs"}, {Key: "limit", Value: bson.D{}}}, 14, "TypeMismatch"},
			{bson.D{{Key: "find", Value: "docs"}, {Key: "singleBatch", Value: "x"}}, 14, "TypeMismatch"},
			{bson.D{{Key: "find", Value: "a$b"}}, 73, "InvalidNamespace"},
		} {
			runFail(t, fdb, tc.cmd, tc.code, tc.name)
		}
		ce := runFail(t, fdb, bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: bson.D{{Key: "$bogus", Value: 1}}}}, 2, "BadValue")
		if ce.Message != "unknown top level operator: $bogus. If you have a field name that starts with a '$' symbol, consider using $getField or $setField." {
			t.Errorf("errmsg %q", ce.Message)
		}
		for _, f := range []string{"skip", "limit", "batchSize"} {
			ce := runFail(t, fdb, bson.D{{Key: "find", Value: "docs"}, {Key: f, Value: -1}}, 51024, "Location51024")
			if want := "BSON field '" + f + "' value must be >= 0, actual value '-1'"; ce.Message != want {
				t.Errorf("errmsg %q, want %q", ce.Message, want)
			}
		}
	})

	t.Run("missing collection", func(t *testing.T) {
		t.Parallel()
		cur := runCursor(t, fdb, bson.D{{Key: "find", Value: "nothing"}, {Key: "filter", Value: bson.D{{Key: "x", Value: 1}}}})
		if cur.Cursor.ID != 0 || len(cur.Cursor.FirstBatch) != 0 || cur.Cursor.NS != "find_filters.nothing" {
			t.Errorf("cursor %+v", cur.Cursor)
		}
	})

	// Ten documents _id 0..9 for the batching cases.
	bdb := client.Database("find_batches")
	if _, err := bdb.Collection("ten").InsertMany(ctx, []any(docsOf(0, 10))); err != nil {
		t.Fatal(err)
	}
	find := func(extra ...bson.E) cursorReplyDoc {
		return runCursor(t, bdb, append(bson.D{{Key: "find", Value: "ten"}}, extra...))
	}
	getMore := func(id int64, extra ...bson.E) cursorReplyDoc {
		return runCursor(t, bdb, append(bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "ten"}}, extra...))
	}
	ids := func(docs []bson.Raw) []int {
		var out []int
		for _, d := range docs {
			out = append(out, int(intOf(t, mustLookup(t, d, "_id"))))
		}
		return out
	}
	seq := func(from, to int) []int {
		var out []int
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}

	t.Run("skip limit singleBatch", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name  string
			extra bson.D
			want  []int
		}{
			{"all", nil, seq(0, 10)},
			{"skip", bson.D{{Key: "skip", Value: 3}}, seq(3, 10)},
			{"skip past the end", bson.D{{Key: "skip", Value: 20}}, nil},
			{"limit", bson.D{{Key: "limit", Value: 4}}, seq(0, 4)},
			{"limit 0 is no limit", bson.D{{Key: "limit", Value: 0}}, seq(0, 10)},
			{"skip and limit", bson.D{{Key: "skip", Value: 8}, {Key: "limit", Value: 5}}, seq(8, 10)},
			{"skip limit and filter", bson.D{{Key: "filter", Value: bson.D{{Key: "_id", Value: 5}}}, {Key: "skip", Value: 1}}, nil},
			{"singleBatch", bson.D{{Key: "singleBatch", Value: true}, {Key: "batchSize", Value: 3}}, seq(0, 3)},
			{"singleBatch with limit", bson.D{{Key: "singleBatch", Value: true}, {Key: "limit", Value: 2}}, seq(0, 2)},
			{"double limit", bson.D{{Key: "limit", Value: 2.0}}, seq(0, 2)},
		} {
			c := find(tc.extra...)
			if got := ids(c.Cursor.FirstBatch); !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
			if c.Cursor.ID != 0 {
				t.Errorf("%s: cursor %d left open", tc.name, c.Cursor.ID)
			}
			if c.Cursor.NS != "find_batches.ten" {
				t.Errorf("%s: ns %q", tc.name, c.Cursor.NS)
			}
		}
		// The driver turns a negative limit into one batch.
		cur, err := bdb.Collection("ten").Find(testCtx(t), bson.D{}, options.Find().SetLimit(-3))
		if err != nil {
			t.Fatal(err)
		}
		if cur.ID() != 0 || cur.RemainingBatchLength() != 3 {
			t.Errorf("negative limit: cursor %d with %d documents", cur.ID(), cur.RemainingBatchLength())
		}
		_ = cur.Close(testCtx(t))
	})

	t.Run("batches and getMore", func(t *testing.T) {
		t.Parallel()
		c := find(bson.E{Key: "batchSize", Value: 3})
		if got := ids(c.Cursor.FirstBatch); !slices.Equal(got, seq(0, 3)) || c.Cursor.ID == 0 {
			t.Fatalf("first batch %v, id %d", got, c.Cursor.ID)
		}
		id := c.Cursor.ID
		m := getMore(id, bson.E{Key: "batchSize", Value: 4})
		if got := ids(m.Cursor.NextBatch); !slices.Equal(got, seq(3, 7)) || m.Cursor.ID != id || m.Cursor.NS != "find_batches.ten" {
			t.Fatalf("second batch %v, id %d ns %q", got, m.Cursor.ID, m.Cursor.NS)
		}
		m = getMore(id)
		if got := ids(m.Cursor.NextBatch); !slices.Equal(got, seq(7, 10)) || m.Cursor.ID != 0 {
			t.Fatalf("last batch %v, id %d", got, m.Cursor.ID)
		}
		ce := runFail(t, bdb, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "ten"}}, 43, "CursorNotFound")
		if !strings.Contains(ce.Message, fmt.Sprint(id)) {
			t.Errorf("errmsg %q", ce.Message)
		}

		// batchSize 0 opens a cursor without reading.
		c = find(bson.E{Key: "batchSize", Value: 0})
		if len(c.Cursor.FirstBatch) != 0 || c.Cursor.ID == 0 {
			t.Fatalf("batchSize 0: %d documents, id %d", len(c.Cursor.FirstBatch), c.Cursor.ID)
		}
		if m := getMore(c.Cursor.ID); !slices.Equal(ids(m.Cursor.NextBatch), seq(0, 10)) || m.Cursor.ID != 0 {
			t.Errorf("getMore after batchSize 0: %v id %d", ids(m.Cursor.NextBatch), m.Cursor.ID)
		}

		// limit across batches
		c = find(bson.E{Key: "limit", Value: 5}, bson.E{Key: "batchSize", Value: 2})
		got := ids(c.Cursor.FirstBatch)
		for id := c.Cursor.ID; id != 0; {
			m := getMore(id, bson.E{Key: "batchSize", Value: 2})
			got = append(got, ids(m.Cursor.NextBatch)...)
			id = m.Cursor.ID
		}
		if !slices.Equal(got, seq(0, 5)) {
			t.Errorf("limit 5 in batches of 2: %v", got)
		}

		// skip with batches and a filter
		c = find(bson.E{Key: "skip", Value: 2}, bson.E{Key: "batchSize", Value: 1}, bson.E{Key: "filter", Value: bson.D{}})
		if got := ids(c.Cursor.FirstBatch); !slices.Equal(got, []int{2}) || c.Cursor.ID == 0 {
			t.Fatalf("skip 2 batch 1: %v", got)
		}
		if m := getMore(c.Cursor.ID); !slices.Equal(ids(m.Cursor.NextBatch), seq(3, 10)) {
			t.Errorf("rest after skip: %v", ids(m.Cursor.NextBatch))
		}

		// The driver's cursor iterates every batch.
		cur, err := bdb.Collection("ten").Find(testCtx(t), bson.D{}, options.Find().SetBatchSize(4))
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(testCtx(t), &docs); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(docs), seq(0, 10)) {
			t.Errorf("driver cursor read %v", ids(docs))
		}
	})

	t.Run("getMore errors", func(t *testing.T) {
		t.Parallel()
		c := find(bson.E{Key: "batchSize", Value: 1})
		id := c.Cursor.ID
		for _, tc := range []struct {
			cmd  bson.D
			code int32
			name string
		}{
			{bson.D{{Key: "getMore", Value: int64(123456789)}, {Key: "collection", Value: "ten"}}, 43, "CursorNotFound"},
			{bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "other"}}, 13, "Unauthorized"},
			{bson.D{{Key: "getMore", Value: id}}, 40414, "Location40414"},
			{bson.D{{Key: "getMore", Value: "x"}, {Key: "collection", Value: "ten"}}, 14, "TypeMismatch"},
			{bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "ten"}, {Key: "batchSize", Value: -1}}, 51024, "Location51024"},
			{bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "ten"}, {Key: "bogus", Value: 1}}, 40415, "Location40415"},
		} {
			runFail(t, bdb, tc.cmd, tc.code, tc.name)
		}
		// The cursor survived the failed getMores.
		if m := getMore(id, bson.E{Key: "batchSize", Value: 1}); !slices.Equal(ids(m.Cursor.NextBatch), []int{1}) {
			t.Errorf("after errors: %v", ids(m.Cursor.NextBatch))
		}
		runOK(t, bdb, bson.D{{Key: "killCursors", Value: "ten"}, {Key: "cursors", Value: bson.A{id}}})
	})

	t.Run("cursor ids are unique", func(t *testing.T) {
		t.Parallel()
		seen := map[int64]bool{}
		var open bson.A
		for range 30 {
			id := find(bson.E{Key: "batchSize", Value: 1}).Cursor.ID
			if id == 0 || seen[id] {
				t.Fatalf("cursor id %d (seen %v)", id, seen[id])
			}
			seen[id] = true
			open = append(open, id)
		}
		r := runOK(t, bdb, bson.D{{Key: "killCursors", Value: "ten"}, {Key: "cursors", Value: open}})
		if vals, _ := mustLookup(t, r, "cursorsKilled").Array().Values(); len(vals) != 30 {
			t.Errorf("killed %d of 30", len(vals))
		}
	})

	t.Run("killCursors", func(t *testing.T) {
		t.Parallel()
		a := find(bson.E{Key: "batchSize", Value: 1}).Cursor.ID
		b := find(bson.E{Key: "batchSize", Value: 1}).Cursor.ID
		c := find(bson.E{Key: "batchSize", Value: 1}).Cursor.ID
		r := runOK(t, bdb, bson.D{{Key: "killCursors", Value: "ten"}, {Key: "cursors", Value: bson.A{a, b, int64(42)}}})
		var reply struct {
			Killed   []int64 `bson:"cursorsKilled"`
			NotFound []int64 `bson:"cursorsNotFound"`
			Alive    []int64 `bson:"cursorsAlive"`
			Unknown  []int64 `bson:"cursorsUnknown"`
		}
		if err := bson.Unmarshal(r, &reply); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(reply.Killed, []int64{a, b}) || !slices.Equal(reply.NotFound, []int64{42}) ||
			len(reply.Alive) != 0 || len(reply.Unknown) != 0 {
			t.Errorf("killCursors reply %v", r)
		}
		for _, f := range []string{"cursorsAlive", "cursorsUnknown"} {
			if v := mustLookup(t, r, f); v.Type != bson.TypeArray {
				t.Errorf("%s is %s", f, v.Type)
			}
		}
		for _, id := range []int64{a, b} {
			runFail(t, bdb, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "ten"}}, 43, "CursorNotFound")
		}
		// Killing again: not found. The wrong namespace does not kill.
		r = runOK(t, bdb, bson.D{{Key: "killCursors", Value: "other"}, {Key: "cursors", Value: bson.A{a, c}}})
		if err := bson.Unmarshal(r, &reply); err != nil || len(reply.Killed) != 0 || !slices.Equal(reply.NotFound, []int64{a, c}) {
			t.Errorf("killCursors on another namespace: %v", r)
		}
		if m := getMore(c); len(m.Cursor.NextBatch) != 9 {
			t.Errorf("cursor c after a killCursors elsewhere: %d documents", len(m.Cursor.NextBatch))
		}
		runFail(t, bdb, bson.D{{Key: "killCursors", Value: "ten"}}, 40414, "Location40414")
		runFail(t, bdb, bson.D{{Key: "killCursors", Value: "ten"}, {Key: "cursors", Value: bson.A{c}}, {Key: "bogus", Value: 1}}, 40415, "Location40415")
		runFail(t, bdb, bson.D{{Key: "killCursors", Value: "ten"}, {Key: "cursors", Value: 1}}, 14, "TypeMismatch")
		runFail(t, bdb, bson.D{{Key: "killCursors", Value: "ten"}, {Key: "cursors", Value: bson.A{"x"}}}, 14, "TypeMismatch")
		// The driver's Close kills its cursor.
		cur, err := bdb.Collection("ten").Find(testCtx(t), bson.D{}, options.Find().SetBatchSize(2))
		if err != nil {
			t.Fatal(err)
		}
		id := cur.ID()
		if err := cur.Close(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		runFail(t, bdb, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "ten"}}, 43, "CursorNotFound")
	})

	t.Run("cursors die with their client", func(t *testing.T) {
		t.Parallel()
		// Cursors opened through RunCommand belong to the client's pooled
		// implicit session, which Disconnect ends (endSessions): another
		// client then finds them gone.
		gone, err := mongo.Connect(optionsFor(s))
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for range 3 {
			ids = append(ids, runCursor(t, gone.Database("find_batches"), bson.D{{Key: "find", Value: "ten"}, {Key: "batchSize", Value: 1}}).Cursor.ID)
		}
		if err := gone.Disconnect(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if id == 0 {
				t.Fatal("no cursor opened")
			}
			runFail(t, bdb, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "ten"}}, 43, "CursorNotFound")
		}
	})
}

// TestDelete covers the delete command through RunCommand and the
// collection API.
func TestDelete(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)

	seed := func(t *testing.T, coll *mongo.Collection) {
		t.Helper()
		_, err := coll.InsertMany(testCtx(t), []any{
			bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}, {Key: "sub", Value: bson.D{{Key: "k", Value: "a"}}}, {Key: "tags", Value: bson.A{"red", "blue"}}},
			bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}, {Key: "sub", Value: bson.D{{Key: "k", Value: "b"}}}, {Key: "tags", Value: bson.A{"red"}}},
			bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: 1.0}, {Key: "tags", Value: bson.A{}}, {Key: "n", Value: nil}},
			bson.D{{Key: "_id", Value: 4}, {Key: "x", Value: int64(2)}, {Key: "sub", Value: bson.D{{Key: "k", Value: "a"}}}},
			bson.D{{Key: "_id", Value: 5}, {Key: "x", Value: 2}, {Key: "n", Value: 0}},
			bson.D{{Key: "_id", Value: 6}, {Key: "x", Value: "1"}, {Key: "n", Value: 1}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name   string
		filter bson.D
		limit  int
		n      int64
		left   []int // nil: check only the count
	}{
		{"equality all", bson.D{{Key: "x", Value: 1}}, 0, 3, []int{4, 5, 6}},
		{"equality one", bson.D{{Key: "x", Value: 1}}, 1, 1, nil},
		{"numeric types", bson.D{{Key: "x", Value: 2.0}}, 0, 2, []int{1, 2, 3, 6}},
		{"dotted", bson.D{{Key: "sub.k", Value: "a"}}, 0, 2, []int{2, 3, 5, 6}},
		{"array element", bson.D{{Key: "tags", Value: "red"}}, 0, 2, []int{3, 4, 5, 6}},
		{"whole array", bson.D{{Key: "tags", Value: bson.A{}}}, 0, 1, []int{1, 2, 4, 5, 6}},
		{"null and missing", bson.D{{Key: "n", Value: nil}}, 0, 4, []int{5, 6}},
		{"_id", bson.D{{Key: "_id", Value: 3}}, 0, 1, []int{1, 2, 4, 5, 6}},
		{"_id one", bson.D{{Key: "_id", Value: 3}}, 1, 1, []int{1, 2, 4, 5, 6}},
		{"_id and mismatching field", bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: 2}}, 0, 0, []int{1, 2, 3, 4, 5, 6}},
		{"no match", bson.D{{Key: "nosuch", Value: 1}}, 0, 0, []int{1, 2, 3, 4, 5, 6}},
		{"everything", bson.D{}, 0, 6, []int{}},
		{"one of everything", bson.D{}, 1, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := client.Database(dbName(t))
			coll := db.Collection("c")
			seed(t, coll)
			r := runWrite(t, db, deleteCmd("c", bson.A{delStmt(tc.filter, tc.limit)}))
			if r.N != tc.n || len(r.WriteErrors) != 0 {
				t.Fatalf("reply %v, want n %d", r.Raw, tc.n)
			}
			left := idsIn(t, coll, bson.D{})
			if len(left) != 6-int(tc.n) {
				t.Errorf("%d documents left", len(left))
			}
			if tc.left != nil && !slices.Equal(left, intIDs(tc.left...)) {
				t.Errorf("left %v, want %v", left, intIDs(tc.left...))
			}
			// What was deleted no longer matches.
			if tc.limit == 0 && len(tc.filter) > 0 {
				if got := idsIn(t, coll, tc.filter); len(got) != 0 {
					t.Errorf("still matching: %v", got)
				}
			}
		})
	}

	t.Run("missing collection", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		if r := runWrite(t, db, deleteCmd("none", bson.A{delStmt(bson.D{}, 0)})); r.N != 0 {
			t.Errorf("reply %v", r.Raw)
		}
	})

	t.Run("several statements", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		seed(t, db.Collection("c"))
		r := runWrite(t, db, deleteCmd("c", bson.A{
			delStmt(bson.D{{Key: "x", Value: 1}}, 1),
			delStmt(bson.D{{Key: "x", Value: 2}}, 0),
			delStmt(bson.D{{Key: "_id", Value: 6}}, 1),
		}))
		if r.N != 4 {
			t.Errorf("n %d", r.N)
		}
		if left := idsIn(t, db.Collection("c"), bson.D{}); len(left) != 2 {
			t.Errorf("left %v", left)
		}
	})

	t.Run("statement errors are write errors", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		seed(t, db.Collection("o"))
		seed(t, db.Collection("u"))
		stmts := bson.A{
			delStmt(bson.D{{Key: "_id", Value: 1}}, 1),
			delStmt(bson.D{{Key: "$bogus", Value: 1}}, 0),
			delStmt(bson.D{{Key: "x", Value: 2}}, 0),
			delStmt(bson.D{{Key: "$and", Value: 1}}, 0),
		}
		r := runWrite(t, db, deleteCmd("o", stmts))
		if idx, codes := r.errorIndexes(); r.N != 1 || !slices.Equal(idx, []int{1}) || !slices.Equal(codes, []int{2}) {
			t.Errorf("ordered: n %d errors %v %v", r.N, idx, codes)
		}
		if r.WriteErrors[0].ErrMsg != "unknown top level operator: $bogus. If you have a field name that starts with a '$' symbol, consider using $getField or $setField." {
			t.Errorf("errmsg %q", r.WriteErrors[0].ErrMsg)
		}
		r = runWrite(t, db, deleteCmd("u", stmts, bson.E{Key: "ordered", Value: false}))
		if idx, codes := r.errorIndexes(); r.N != 3 || !slices.Equal(idx, []int{1, 3}) || !slices.Equal(codes, []int{2, 2}) {
			t.Errorf("unordered: n %d errors %v %v", r.N, idx, codes)
		}
		if left := idsIn(t, db.Collection("u"), bson.D{}); !slices.Equal(left, intIDs(2, 3, 6)) {
			t.Errorf("unordered left %v", left)
		}
		// The collection API reports them as a WriteException.
		_, err := db.Collection("o").DeleteMany(testCtx(t), bson.D{{Key: "$bogus", Value: 1}})
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
			t.Errorf("DeleteMany with a bad filter: %v", err)
		}
	})

	t.Run("malformed statements fail the command", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		seed(t, db.Collection("c"))
		good := delStmt(bson.D{}, 0)
		for _, tc := range []struct {
			name string
			cmd  bson.D
			code int32
			cn   string
			msg  string
		}{
			{"limit 2", deleteCmd("c", bson.A{good, delStmt(bson.D{}, 2)}), 9, "FailedToParse", "The limit field in delete objects must be 0 or 1. Got limit: 2"},
			{"missing q", deleteCmd("c", bson.A{good, bson.D{{Key: "limit", Value: 0}}}), 40414, "Location40414", "BSON field 'delete.deletes.q' is missing but a required field"},
			{"missing limit", deleteCmd("c", bson.A{good, bson.D{{Key: "q", Value: bson.D{}}}}), 40414, "Location40414", "BSON field 'delete.deletes.limit' is missing but a required field"},
			{"unknown field", deleteCmd("c", bson.A{good, bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}, {Key: "bogus", Value: 1}}}), 40415, "Location40415", "BSON field 'delete.deletes.bogus' is an unknown field."},
			{"q type", deleteCmd("c", bson.A{good, bson.D{{Key: "q", Value: 1}, {Key: "limit", Value: 0}}}), 14, "TypeMismatch", ""},
			{"statement type", deleteCmd("c", bson.A{good, 1}), 14, "TypeMismatch", ""},
			{"no statements", deleteCmd("c", bson.A{}), 16, "InvalidLength", "Write batch sizes must be between 1 and 100000. Got 0 operations."},
			{"no deletes", bson.D{{Key: "delete", Value: "c"}}, 40414, "Location40414", ""},
			{"unknown option", deleteCmd("c", bson.A{good}, bson.E{Key: "bogus", Value: 1}), 40415, "Location40415", "BSON field 'delete.bogus' is an unknown field."},
			{"ordered type", deleteCmd("c", bson.A{good}, bson.E{Key: "ordered", Value: "no"}), 14, "TypeMismatch", ""},
			{"bad namespace", deleteCmd("a$b", bson.A{good}), 73, "InvalidNamespace", ""},
		} {
			ce := runFail(t, db, tc.cmd, tc.code, tc.cn)
			if tc.msg != "" && ce.Message != tc.msg {
				t.Errorf("%s: errmsg %q, want %q", tc.name, ce.Message, tc.msg)
			}
		}
		// Nothing ran, not even the well-formed first statements.
		if left := idsIn(t, db.Collection("c"), bson.D{}); len(left) != 6 {
			t.Errorf("left %v", left)
		}
		runFail(t, db, deleteCmd("c", docsOf(0, 100001)), 16, "InvalidLength")
	})

	t.Run("collection API", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		seed(t, coll)
		ctx := testCtx(t)
		res, err := coll.DeleteOne(ctx, bson.D{{Key: "x", Value: 1}})
		if err != nil || res.DeletedCount != 1 {
			t.Fatalf("DeleteOne: %v %v", res, err)
		}
		res, err = coll.DeleteMany(ctx, bson.D{{Key: "x", Value: 1}})
		if err != nil || res.DeletedCount != 2 {
			t.Fatalf("DeleteMany: %v %v", res, err)
		}
		res, err = coll.DeleteMany(ctx, bson.D{{Key: "x", Value: 1}})
		if err != nil || res.DeletedCount != 0 {
			t.Fatalf("DeleteMany again: %v %v", res, err)
		}
		if left := idsIn(t, coll, bson.D{}); !slices.Equal(left, intIDs(4, 5, 6)) {
			t.Errorf("left %v", left)
		}
	})

	t.Run("large delete", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		// more than one internal chunk of deletions
		r := runWrite(t, db, insertCmd("c", docsOf(0, 2500)))
		if r.N != 2500 {
			t.Fatalf("insert: %v", r.Raw)
		}
		if r := runWrite(t, db, deleteCmd("c", bson.A{delStmt(bson.D{}, 0)})); r.N != 2500 {
			t.Errorf("deleted %d", r.N)
		}
		if n := intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "collStats", Value: "c"}}), "count")); n != 0 {
			t.Errorf("count %d after deleting everything", n)
		}
	})
}
