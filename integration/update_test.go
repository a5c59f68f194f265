package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// updateCmd builds {update: coll, updates: stmts} plus extra fields.
func updateCmd(coll string, stmts bson.A, extra ...bson.E) bson.D {
	return append(bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: stmts}}, extra...)
}

// updStmt builds {q, u} plus extra fields.
func updStmt(q bson.D, u any, extra ...bson.E) bson.D {
	return append(bson.D{{Key: "q", Value: q}, {Key: "u", Value: u}}, extra...)
}

func set(kv ...any) bson.D      { return bson.D{{Key: "$set", Value: pairs(kv...)}} }
func inc(kv ...any) bson.D      { return bson.D{{Key: "$inc", Value: pairs(kv...)}} }
func idIs(id any) bson.D        { return bson.D{{Key: "_id", Value: id}} }
func eq(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }

// pairs builds a bson.D from alternating keys and values.
func pairs(kv ...any) bson.D {
	d := make(bson.D, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		d = append(d, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	return d
}

// updateReplyDoc is an update command's reply.
type updateReplyDoc struct {
	N         int64 `bson:"n"`
	NModified int64 `bson:"nModified"`
	Upserted  []struct {
		Index int           `bson:"index"`
		ID    bson.RawValue `bson:"_id"`
	} `bson:"upserted"`
	WriteErrors []replyWriteError `bson:"writeErrors"`
	Raw         bson.Raw          `bson:"-"`
}

func runUpdate(t testing.TB, db *mongo.Database, cmd bson.D) updateReplyDoc {
	t.Helper()
	r := runWrite(t, db, cmd)
	var u updateReplyDoc
	if err := bson.Unmarshal(r.Raw, &u); err != nil {
		t.Fatalf("decode %v: %v", r.Raw, err)
	}
	u.Raw = r.Raw
	return u
}

// findOne returns the document with _id id, or nil.
func findOne(t testing.TB, coll *mongo.Collection, id any) bson.Raw {
	t.Helper()
	raw, err := coll.FindOne(testCtx(t), idIs(id)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		t.Fatalf("find _id %v: %v", id, err)
	}
	return raw
}

// marshalD encodes a document for byte comparisons.
func marshalD(t testing.TB, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantDoc checks that the document with _id id is want, byte for byte.
func wantDoc(t testing.TB, coll *mongo.Collection, id any, want bson.D) {
	t.Helper()
	if got, w := findOne(t, coll, id), marshalD(t, want); !slices.Equal(got, w) {
		t.Errorf("document %v is %v, want %v", id, got, w)
	}
}

func mustInsert(t testing.TB, coll *mongo.Collection, docs ...any) {
	t.Helper()
	if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
		t.Fatalf("insert into %s: %v", coll.Name(), err)
	}
}

// TestUpdate covers the update command: operators and replacements,
// multi, upsert, arrayFilters, the positional operator, hints, write
// errors, ordered and unordered batches, write concerns and the driver's
// helpers.
func TestUpdate(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)

	t.Run("operators", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "arr", Value: bson.A{1, 2}}, {Key: "gone", Value: true}})
		r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.D{
			{Key: "$inc", Value: pairs("a", 2)},
			{Key: "$push", Value: pairs("arr", 3)},
			{Key: "$set", Value: pairs("s.t", "x")},
			{Key: "$unset", Value: pairs("gone", "")},
			{Key: "$min", Value: pairs("lo", int64(7))},
		})}))
		if r.N != 1 || r.NModified != 1 || len(r.WriteErrors) != 0 || r.Upserted != nil {
			t.Fatalf("reply %v", r.Raw)
		}
		wantFields(t, r.Raw, "n", "nModified", "ok")
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 3}, {Key: "arr", Value: bson.A{1, 2, 3}},
			{Key: "lo", Value: int64(7)}, {Key: "s", Value: bson.D{{Key: "t", Value: "x"}}}})
	})

	t.Run("no-ops count in n only", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}})
		r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), set("a", 1))}))
		if r.N != 1 || r.NModified != 0 {
			t.Errorf("reply %v", r.Raw)
		}
		r = runUpdate(t, db, updateCmd("c", bson.A{updStmt(bson.D{}, set("a", 2), bson.E{Key: "multi", Value: true})}))
		if r.N != 2 || r.NModified != 1 {
			t.Errorf("multi: reply %v", r.Raw)
		}
		r = runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(3), set("a", 1))}))
		if r.N != 0 || r.NModified != 0 {
			t.Errorf("no match: reply %v", r.Raw)
		}
		// Empty operators and an empty pipeline are no-ops (MongoDB 5.0+).
		r = runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.D{{Key: "$set", Value: bson.D{}}}), updStmt(idIs(1), bson.A{})}))
		if r.N != 2 || r.NModified != 0 || len(r.WriteErrors) != 0 {
			t.Errorf("empty updates: reply %v", r.Raw)
		}
		// A collection that does not exist is not created without upsert.
		r = runUpdate(t, db, updateCmd("none", bson.A{updStmt(bson.D{}, set("a", 1))}))
		if r.N != 0 {
			t.Errorf("missing collection: reply %v", r.Raw)
		}
		if got := collNames(t, db); !slices.Equal(got, []string{"c"}) {
			t.Errorf("collections %v", got)
		}
	})

	t.Run("multi", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		var docs []any
		for i := range 2500 { // several of the server's internal transactions
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 2}, {Key: "v", Value: 0}})
		}
		mustInsert(t, coll, docs...)
		r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(eq("g", 1), inc("v", 1), bson.E{Key: "multi", Value: true})}))
		if r.N != 1250 || r.NModified != 1250 {
			t.Fatalf("multi: %v", r.Raw)
		}
		r = runUpdate(t, db, updateCmd("c", bson.A{updStmt(eq("g", 0), inc("v", 10))}))
		if r.N != 1 || r.NModified != 1 {
			t.Fatalf("single: %v", r.Raw)
		}
		if n := len(idsIn(t, coll, eq("v", 1))); n != 1250 {
			t.Errorf("%d documents with v 1", n)
		}
		if got := idsIn(t, coll, eq("v", 10)); !slices.Equal(got, intIDs(0)) {
			t.Errorf("single update changed %v", got)
		}
		// The driver's helpers.
		ctx := testCtx(t)
		res, err := coll.UpdateMany(ctx, eq("g", 1), inc("v", 1))
		if err != nil || res.MatchedCount != 1250 || res.ModifiedCount != 1250 || res.UpsertedID != nil {
			t.Errorf("UpdateMany: %+v %v", res, err)
		}
		res, err = coll.UpdateOne(ctx, eq("g", 1), set("v", 2))
		if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 0 {
			t.Errorf("UpdateOne no-op: %+v %v", res, err)
		}
	})

	t.Run("upsert", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		// The query's equalities seed the new document; _id is generated.
		r := runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(bson.D{{Key: "name", Value: "x"}, {Key: "n", Value: bson.D{{Key: "$gt", Value: 1}}}}, bson.D{
				{Key: "$inc", Value: pairs("count", 1)}, {Key: "$setOnInsert", Value: pairs("created", true)}}, bson.E{Key: "upsert", Value: true}),
		}))
		if r.N != 1 || r.NModified != 0 || len(r.Upserted) != 1 || r.Upserted[0].Index != 0 || r.Upserted[0].ID.Type != bson.TypeObjectID {
			t.Fatalf("upsert: %v", r.Raw)
		}
		wantFields(t, r.Raw, "n", "nModified", "upserted", "ok")
		oid := r.Upserted[0].ID.ObjectID()
		wantDoc(t, coll, oid, bson.D{{Key: "_id", Value: oid}, {Key: "name", Value: "x"}, {Key: "count", Value: 1}, {Key: "created", Value: true}})
		// Now it matches: an update, and $setOnInsert does nothing.
		r = runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(eq("name", "x"), bson.D{{Key: "$inc", Value: pairs("count", 1)}, {Key: "$setOnInsert", Value: pairs("created", false)}}, bson.E{Key: "upsert", Value: true}),
		}))
		if r.N != 1 || r.NModified != 1 || r.Upserted != nil {
			t.Fatalf("second upsert: %v", r.Raw)
		}
		wantDoc(t, coll, oid, bson.D{{Key: "_id", Value: oid}, {Key: "name", Value: "x"}, {Key: "count", Value: 2}, {Key: "created", Value: true}})
		// _id from the query; upserted entries carry their statement index.
		r = runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(idIs("a"), set("v", 1)),
			updStmt(idIs("b"), set("v", 2), bson.E{Key: "upsert", Value: true}),
			updStmt(idIs(oid), set("v", 3), bson.E{Key: "upsert", Value: true}),
			updStmt(idIs("c"), bson.D{{Key: "v", Value: 4}}, bson.E{Key: "upsert", Value: true}),
		}))
		if r.N != 3 || r.NModified != 1 || len(r.Upserted) != 2 {
			t.Fatalf("batch: %v", r.Raw)
		}
		if r.Upserted[0].Index != 1 || r.Upserted[0].ID.StringValue() != "b" || r.Upserted[1].Index != 3 || r.Upserted[1].ID.StringValue() != "c" {
			t.Errorf("upserted %v", r.Raw)
		}
		wantDoc(t, coll, "b", bson.D{{Key: "_id", Value: "b"}, {Key: "v", Value: 2}})
		wantDoc(t, coll, "c", bson.D{{Key: "_id", Value: "c"}, {Key: "v", Value: 4}})
		// Upserting into a collection that does not exist creates it.
		r = runUpdate(t, db, updateCmd("fresh", bson.A{updStmt(bson.D{{Key: "k", Value: 1}}, set("v", 1), bson.E{Key: "upsert", Value: true})}))
		if r.N != 1 || len(r.Upserted) != 1 {
			t.Fatalf("fresh: %v", r.Raw)
		}
		if got := collNames(t, db); !slices.Contains(got, "fresh") {
			t.Errorf("collections %v", got)
		}
		// The driver's helpers.
		ctx := testCtx(t)
		res, err := coll.UpdateOne(ctx, idIs(42), set("v", 42), options.UpdateOne().SetUpsert(true))
		if err != nil || res.UpsertedCount != 1 || res.MatchedCount != 0 || res.UpsertedID != int32(42) {
			t.Errorf("UpdateOne upsert: %+v %v", res, err)
		}
		rres, err := coll.ReplaceOne(ctx, eq("k", "r"), bson.D{{Key: "k", Value: "r"}, {Key: "w", Value: 1}}, options.Replace().SetUpsert(true))
		if err != nil || rres.UpsertedCount != 1 {
			t.Fatalf("ReplaceOne upsert: %+v %v", rres, err)
		}
		if got := idsIn(t, coll, eq("w", 1)); len(got) != 1 {
			t.Errorf("replacement upsert stored %v", got)
		}
	})

	t.Run("upsert errors", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
		for _, tc := range []struct {
			q    bson.D
			u    any
			code int
		}{
			{bson.D{{Key: "a", Value: 5}}, set("_id", 1), 11000},                    // duplicate key
			{idIs(7), set("_id", 8), 66},                                            // the query fixed _id
			{bson.D{{Key: "a", Value: 1}, {Key: "a.b", Value: 1}}, set("x", 1), 54}, // ambiguous query
			{bson.D{{Key: "x", Value: 1}}, set("x.$", 1), 2},                        // no positional match
			{bson.D{{Key: "x", Value: 2}}, set("_id", bson.A{1}), 53},               // invalid _id
		} {
			r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(tc.q, tc.u, bson.E{Key: "upsert", Value: true})}))
			if r.N != 0 || len(r.Upserted) != 0 || len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != tc.code {
				t.Errorf("q %v u %v: %v", tc.q, tc.u, r.Raw)
			}
		}
		if got := idsIn(t, coll, bson.D{}); !slices.Equal(got, intIDs(1)) {
			t.Errorf("failed upserts stored %v", got)
		}
		r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(bson.D{{Key: "a", Value: 5}}, set("_id", 1), bson.E{Key: "upsert", Value: true})}))
		we := r.WriteErrors[0]
		if !strings.HasPrefix(we.ErrMsg, "E11000 duplicate key error collection: "+db.Name()+".c index: _id_ dup key: { _id: 1 }") {
			t.Errorf("errmsg %q", we.ErrMsg)
		}
		if !slices.Equal(we.KeyValue, marshalD(t, idIs(1))) {
			t.Errorf("keyValue %v", we.KeyValue)
		}
	})

	t.Run("replacement", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: 2}})
		r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.D{{Key: "c", Value: 3}, {Key: "_id", Value: 1}})}))
		if r.N != 1 || r.NModified != 1 {
			t.Fatalf("reply %v", r.Raw)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "c", Value: 3}})
		// The same again is a no-op; an empty document keeps only _id.
		if r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.D{{Key: "c", Value: 3}})})); r.NModified != 0 {
			t.Errorf("same replacement: %v", r.Raw)
		}
		if r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.D{})})); r.NModified != 1 {
			t.Errorf("empty replacement: %v", r.Raw)
		}
		wantDoc(t, coll, 1, idIs(1))
		// _id cannot change.
		r = runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.D{{Key: "_id", Value: 2}})}))
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 66 ||
			r.WriteErrors[0].ErrMsg != "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2" {
			t.Errorf("changing _id: %v", r.Raw)
		}
		// Replacements cannot be multi.
		r = runUpdate(t, db, updateCmd("c", bson.A{updStmt(bson.D{}, bson.D{{Key: "x", Value: 1}}, bson.E{Key: "multi", Value: true})}))
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 9 {
			t.Errorf("multi replacement: %v", r.Raw)
		}
		// The driver's helper.
		res, err := coll.ReplaceOne(testCtx(t), idIs(1), bson.D{{Key: "z", Value: "z"}})
		if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
			t.Errorf("ReplaceOne: %+v %v", res, err)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "z", Value: "z"}})
	})

	t.Run("array filters and positional", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll,
			bson.D{{Key: "_id", Value: 1}, {Key: "grades", Value: bson.A{95, 92, 90}}},
			bson.D{{Key: "_id", Value: 2}, {Key: "grades", Value: bson.A{98, 100, 102}}},
			bson.D{{Key: "_id", Value: 3}, {Key: "items", Value: bson.A{bson.D{{Key: "k", Value: "a"}, {Key: "q", Value: 1}}, bson.D{{Key: "k", Value: "b"}, {Key: "q", Value: 2}}}}},
		)
		ctx := testCtx(t)
		// A document without the array would fail: it must exist.
		res, err := coll.UpdateMany(ctx, eq("grades", bson.D{{Key: "$exists", Value: true}}), set("grades.$[g]", 100),
			options.UpdateMany().SetArrayFilters([]any{bson.D{{Key: "g", Value: bson.D{{Key: "$gte", Value: 100}}}}}))
		if err != nil || res.MatchedCount != 2 || res.ModifiedCount != 1 {
			t.Fatalf("arrayFilters: %+v %v", res, err)
		}
		_, err = coll.UpdateMany(ctx, bson.D{}, set("grades.$[g]", 100), options.UpdateMany().SetArrayFilters([]any{eq("g", 1)}))
		var wex mongo.WriteException
		if !errors.As(err, &wex) || len(wex.WriteErrors) != 1 || wex.WriteErrors[0].Message != "The path 'grades' must exist in the document in order to apply array updates." {
			t.Errorf("arrayFilters on a missing array: %v", err)
		}
		wantDoc(t, coll, 2, bson.D{{Key: "_id", Value: 2}, {Key: "grades", Value: bson.A{98, 100, 100}}})
		// The positional operator takes the index the query matched.
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "grades", Value: 92}}, set("grades.$", 82)); err != nil {
			t.Fatal(err)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "grades", Value: bson.A{95, 82, 90}}})
		if _, err := coll.UpdateOne(ctx, eq("items.k", "b"), inc("items.$.q", 5)); err != nil {
			t.Fatal(err)
		}
		wantDoc(t, coll, 3, bson.D{{Key: "_id", Value: 3}, {Key: "items", Value: bson.A{bson.D{{Key: "k", Value: "a"}, {Key: "q", Value: 1}}, bson.D{{Key: "k", Value: "b"}, {Key: "q", Value: 7}}}}})
		if _, err := coll.UpdateOne(ctx, idIs(3), inc("items.$[].q", 1)); err != nil {
			t.Fatal(err)
		}
		wantDoc(t, coll, 3, bson.D{{Key: "_id", Value: 3}, {Key: "items", Value: bson.A{bson.D{{Key: "k", Value: "a"}, {Key: "q", Value: 2}}, bson.D{{Key: "k", Value: "b"}, {Key: "q", Value: 8}}}}})
		// Errors: a positional without an array match, unused and missing filters.
		r := runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(idIs(1), set("grades.$", 0)),
		}, bson.E{Key: "ordered", Value: false}))
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 2 || r.WriteErrors[0].ErrMsg != "The positional operator did not find the match needed from the query." {
			t.Errorf("positional without match: %v", r.Raw)
		}
		r = runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(idIs(1), set("grades.$[x]", 0)),
			updStmt(idIs(1), set("grades.$[x]", 0), bson.E{Key: "arrayFilters", Value: bson.A{eq("x", 1), eq("y", 1)}}),
			updStmt(idIs(1), set("grades.$[x]", 0), bson.E{Key: "arrayFilters", Value: bson.A{eq("x", bson.D{{Key: "$bad", Value: 1}})}}),
		}, bson.E{Key: "ordered", Value: false}))
		if idx, codes := (writeReplyDoc{WriteErrors: r.WriteErrors}).errorIndexes(); !slices.Equal(idx, []int{0, 1, 2}) || !slices.Equal(codes, []int{2, 9, 2}) {
			t.Errorf("array filter errors %v %v: %v", idx, codes, r.Raw)
		}
	})

	t.Run("write errors", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		orig := bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "str"}, {Key: "n", Value: 1}, {Key: "arr", Value: bson.A{1}}, {Key: "o", Value: bson.D{{Key: "x", Value: 1}}}}
		mustInsert(t, coll, orig)
		for _, tc := range []struct {
			u    any
			code int
			name string
			msg  string
		}{
			{bson.D{{Key: "$set", Value: pairs("n", 2)}, {Key: "$inc", Value: pairs("n", 1)}}, 40, "ConflictingUpdateOperators",
				"Updating the path 'n' would create a conflict at 'n'"},
			{set("o", 1, "o.x", 2), 40, "ConflictingUpdateOperators", "Updating the path 'o.x' would create a conflict at 'o'"},
			{set("_id", 2), 66, "ImmutableField", "Performing an update on the path '_id' would modify the immutable field '_id'"},
			{inc("s", 1), 14, "TypeMismatch", "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 's' of non-numeric type string"},
			{inc("n", "1"), 14, "TypeMismatch", `Cannot increment with non-numeric argument: {n: "1"}`},
			{set("s.x", 1), 28, "PathNotViable", `Cannot create field 'x' in element {s: "str"}`},
			{set("arr.x", 1), 28, "PathNotViable", "Cannot create field 'x' in element {arr: [ 1 ]}"},
			{bson.D{{Key: "$foo", Value: pairs("a", 1)}}, 9, "FailedToParse",
				"Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"},
			{bson.D{{Key: "$set", Value: 1}}, 9, "FailedToParse",
				"Modifiers operate on fields but we found type int instead. For example: {$mod: {<field>: ...}} not {$set: 1}"},
			{bson.D{{Key: "a", Value: 1}, {Key: "$set", Value: pairs("b", 1)}}, 52, "DollarPrefixedFieldName",
				"The dollar ($) prefixed field '$set' in '$set' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith."},
			{set("", 1), 56, "EmptyFieldName", "An empty update path is not valid."},
			{bson.D{{Key: "$push", Value: pairs("n", 1)}}, 2, "BadValue", "The field 'n' must be an array but is of type int in document {_id: 1}"},
			{bson.D{{Key: "$rename", Value: pairs("n", "n")}}, 2, "BadValue", `The source and target field for $rename must differ: n: "n"`},
		} {
			r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), tc.u)}))
			if r.N != 0 || r.NModified != 0 || len(r.WriteErrors) != 1 {
				t.Errorf("%v: reply %v", tc.u, r.Raw)
				continue
			}
			we := r.WriteErrors[0]
			if we.Index != 0 || we.Code != tc.code || we.ErrMsg != tc.msg {
				t.Errorf("%v: write error %d %q, want %d %q", tc.u, we.Code, we.ErrMsg, tc.code, tc.msg)
			}
			// The driver reports it as a WriteException with the code.
			_, err := coll.UpdateOne(testCtx(t), idIs(1), tc.u)
			if tc.code == 52 || tc.code == 9 && strings.HasPrefix(tc.msg, "Modifiers") {
				continue // the driver checks these itself
			}
			var wex mongo.WriteException
			if !errors.As(err, &wex) || len(wex.WriteErrors) != 1 || wex.WriteErrors[0].Code != tc.code {
				t.Errorf("UpdateOne %v: %v", tc.u, err)
			}
		}
		// Nothing changed.
		wantDoc(t, coll, 1, orig)
	})

	t.Run("ordered and unordered", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		for _, ordered := range []bool{true, false} {
			name := fmt.Sprint("c", ordered)
			coll := db.Collection(name)
			mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 0}}, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: "x"}}, bson.D{{Key: "_id", Value: 3}, {Key: "v", Value: 0}})
			r := runUpdate(t, db, updateCmd(name, bson.A{
				updStmt(idIs(1), inc("v", 1)),
				updStmt(idIs(2), inc("v", 1)),
				updStmt(idIs(3), inc("v", 1)),
				updStmt(idIs(4), inc("v", 1), bson.E{Key: "upsert", Value: true}),
				updStmt(idIs(1), set("_id", 9)),
			}, bson.E{Key: "ordered", Value: ordered}))
			idx, codes := (writeReplyDoc{WriteErrors: r.WriteErrors}).errorIndexes()
			if ordered {
				if r.N != 1 || r.NModified != 1 || !slices.Equal(idx, []int{1}) || !slices.Equal(codes, []int{14}) {
					t.Errorf("ordered: %v", r.Raw)
				}
				wantDoc(t, coll, 3, bson.D{{Key: "_id", Value: 3}, {Key: "v", Value: 0}})
				continue
			}
			if r.N != 3 || r.NModified != 2 || len(r.Upserted) != 1 || r.Upserted[0].Index != 3 || !slices.Equal(idx, []int{1, 4}) || !slices.Equal(codes, []int{14, 66}) {
				t.Errorf("unordered: %v", r.Raw)
			}
			wantFields(t, r.Raw, "n", "nModified", "upserted", "writeErrors", "ok")
			wantDoc(t, coll, 3, bson.D{{Key: "_id", Value: 3}, {Key: "v", Value: 1}})
			wantDoc(t, coll, 4, bson.D{{Key: "_id", Value: 4}, {Key: "v", Value: 1}})
		}
	})

	t.Run("a failing multi-update reports what it applied", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		var docs []any
		for i := range 10 {
			var v any = i
			if i == 6 {
				v = "six"
			}
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: v}})
		}
		mustInsert(t, coll, docs...)
		r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(bson.D{}, inc("v", 100), bson.E{Key: "multi", Value: true})}))
		if r.N != 6 || r.NModified != 6 || len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 14 {
			t.Fatalf("reply %v", r.Raw)
		}
		wantDoc(t, coll, 5, bson.D{{Key: "_id", Value: 5}, {Key: "v", Value: 105}})
		wantDoc(t, coll, 6, bson.D{{Key: "_id", Value: 6}, {Key: "v", Value: "six"}})
		wantDoc(t, coll, 7, bson.D{{Key: "_id", Value: 7}, {Key: "v", Value: 7}})
	})

	t.Run("concurrent increments are never lost", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: "counter"}, {Key: "n", Value: 0}})
		const workers, each = 16, 1000
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					res, err := coll.UpdateOne(testCtx(t), idIs("counter"), inc("n", 1))
					if err == nil && res.ModifiedCount != 1 {
						err = fmt.Errorf("modified %d", res.ModifiedCount)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n := intOf(t, mustLookup(t, findOne(t, coll, "counter"), "n")); n != workers*each {
			t.Errorf("n = %d, want %d", n, workers*each)
		}
	})

	t.Run("concurrent upserts of one _id insert once", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		const workers = 8
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := coll.UpdateOne(testCtx(t), idIs("k"), inc("n", 1), options.UpdateOne().SetUpsert(true))
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		wantDoc(t, coll, "k", bson.D{{Key: "_id", Value: "k"}, {Key: "n", Value: workers}})
	})

	t.Run("document too large", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		// Grown on the server (a pipeline doubling a string 13 times) so
		// that megabytes need not cross the wire: a is 8 MiB.
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: strings.Repeat("a", 1024)}})
		var doubling bson.A
		for range 13 {
			doubling = append(doubling, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$concat", Value: bson.A{"$a", "$a"}}}}}}})
		}
		if r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), doubling)})); r.NModified != 1 {
			t.Fatalf("doubling: %v", r.Raw)
		}
		// Twice a is just past 16 MiB: too large to store (17419).
		r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: "$a"}}}}})}))
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 17419 || r.WriteErrors[0].ErrMsg != "Resulting document after update is larger than 16777216" {
			t.Errorf("growing just past 16 MiB: %v", r.WriteErrors)
		}
		// Three times: not a valid BSON object at all (10334).
		r = runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: "$a"}, {Key: "c", Value: "$a"}}}}})}))
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 10334 || !strings.HasPrefix(r.WriteErrors[0].ErrMsg, "BSONObj size: 25165862 (0x1800026) is invalid.") {
			t.Errorf("growing past 16 MiB: %v", r.WriteErrors)
		}
		doc := findOne(t, coll, 1)
		if len(doc) != 8<<20+22 {
			t.Errorf("the document is %d bytes", len(doc))
		}
		wantFields(t, doc, "_id", "a")
	})

	t.Run("hint and collation", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
		for _, h := range []any{"_id_", bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$natural", Value: -1}}} {
			r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), inc("n", 1), bson.E{Key: "hint", Value: h})}))
			if r.NModified != 1 || len(r.WriteErrors) != 0 {
				t.Errorf("hint %v: %v", h, r.Raw)
			}
		}
		r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), inc("n", 1), bson.E{Key: "hint", Value: "nope_1"})}))
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 2 || r.WriteErrors[0].ErrMsg != "hint provided does not correspond to an existing index" {
			t.Errorf("bad hint: %v", r.Raw)
		}
		// A bad collation fails the command; a valid one is used.
		ce := runFail(t, db, updateCmd("c", bson.A{updStmt(idIs(1), inc("n", 1), bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}, {Key: "bogus", Value: 1}}})}), 9, "FailedToParse")
		if !strings.Contains(ce.Message, "Collation spec contains unknown field") {
			t.Errorf("collation errmsg %q", ce.Message)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 3}})
		if res, err := coll.UpdateOne(testCtx(t), idIs(1), inc("n", 1), options.UpdateOne().SetCollation(&options.Collation{Locale: "fr"})); err != nil || res.ModifiedCount != 1 {
			t.Errorf("UpdateOne with a collation: %+v %v", res, err)
		}
		if res, err := coll.UpdateOne(testCtx(t), idIs(1), inc("n", 1), options.UpdateOne().SetCollation(&options.Collation{Locale: "simple"})); err != nil || res.ModifiedCount != 1 {
			t.Errorf("UpdateOne with the simple collation: %+v %v", res, err)
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
			{bson.D{{Key: "update", Value: "c"}}, 40414, "Location40414"},
			{updateCmd("c", bson.A{}), 16, "InvalidLength"},
			{updateCmd("c", bson.A{bson.D{{Key: "u", Value: set("a", 1)}}}), 40414, "Location40414"},
			{updateCmd("c", bson.A{bson.D{{Key: "q", Value: bson.D{}}}}), 40414, "Location40414"},
			{updateCmd("c", bson.A{updStmt(bson.D{}, 5)}), 9, "FailedToParse"},
			{updateCmd("c", bson.A{updStmt(bson.D{}, set("a", 1), bson.E{Key: "bogus", Value: 1})}), 40415, "Location40415"},
			{updateCmd("c", bson.A{updStmt(bson.D{}, set("a", 1), bson.E{Key: "multi", Value: "yes"})}), 14, "TypeMismatch"},
			{updateCmd("c", bson.A{updStmt(bson.D{}, set("a", 1), bson.E{Key: "arrayFilters", Value: bson.A{1}})}), 14, "TypeMismatch"},
			{updateCmd("c", bson.A{updStmt(bson.D{}, set("a", 1), bson.E{Key: "hint", Value: 1})}), 14, "TypeMismatch"},
			{updateCmd("c", bson.A{updStmt(bson.D{}, set("a", 1))}, bson.E{Key: "bogus", Value: 1}), 40415, "Location40415"},
			{updateCmd("c", bson.A{updStmt(bson.D{}, set("a", 1))}, bson.E{Key: "ordered", Value: "no"}), 14, "TypeMismatch"},
			{updateCmd("c", bson.A{5}), 14, "TypeMismatch"},
			{updateCmd("c", bson.A{updStmt(bson.D{}, set("a", 1), bson.E{Key: "c", Value: bson.D{{Key: "x", Value: 1}}})}), 51198, "Location51198"},
		} {
			runFail(t, db, tc.cmd, tc.code, tc.name)
		}
		stmts := make(bson.A, 100_001)
		stmt := marshalD(t, updStmt(bson.D{}, set("a", 1))) // encoded once: cheap under -race
		for i := range stmts {
			stmts[i] = stmt
		}
		ce := runFail(t, db, updateCmd("c", stmts), 16, "InvalidLength")
		if ce.Message != "Write batch sizes must be between 1 and 100000. Got 100001 operations." {
			t.Errorf("errmsg %q", ce.Message)
		}
		if got := collNames(t, db); len(got) != 0 {
			t.Errorf("failed updates created %v", got)
		}
	})

	t.Run("write concerns", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}})
		for i, wc := range []bson.D{
			{{Key: "w", Value: 1}},
			{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 1000}},
			{{Key: "j", Value: true}},
			{{Key: "w", Value: 1}, {Key: "j", Value: true}},
			{{Key: "w", Value: "majority"}, {Key: "j", Value: true}, {Key: "wtimeout", Value: 5}},
		} {
			r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), set("n", i+1))}, bson.E{Key: "writeConcern", Value: wc}))
			if r.NModified != 1 {
				t.Errorf("writeConcern %v: %v", wc, r.Raw)
			}
		}
		runFail(t, db, updateCmd("c", bson.A{updStmt(idIs(1), set("n", 0))}, bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 0}, {Key: "j", Value: true}}}), 9, "FailedToParse")
		runFail(t, db, updateCmd("c", bson.A{updStmt(idIs(1), set("n", 0))}, bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 51}}}), 9, "FailedToParse")
		// One data-bearing member: w above 1, or a tag set, cannot be met.
		// The write is applied and the reply carries a writeConcernError,
		// as a one-member replica set answers.
		for _, c := range []struct {
			w        any
			code     int
			codeName string
		}{{2, 100, "UnsatisfiableWriteConcern"}, {"dc2", 79, "UnknownReplWriteConcern"}} {
			r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), inc("n", 1))}, bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: c.w}}}))
			wce, err := r.Raw.LookupErr("writeConcernError")
			if err != nil || r.NModified != 1 {
				t.Fatalf("w: %v: %v", c.w, r.Raw)
			}
			if code := wce.Document().Lookup("code").Int32(); int(code) != c.code || wce.Document().Lookup("codeName").StringValue() != c.codeName {
				t.Errorf("w: %v: writeConcernError %v", c.w, wce)
			}
		}
		if n := intOf(t, mustLookup(t, findOne(t, coll, 1), "n")); n != 7 {
			t.Errorf("after the unmet write concerns n = %d, want 7 (both updates applied)", n)
		}
		w2 := db.Collection("c", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 2}))
		_, err := w2.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: "w2"}})
		var wex mongo.WriteException
		if !errors.As(err, &wex) || wex.WriteConcernError == nil || wex.WriteConcernError.Code != 100 {
			t.Errorf("InsertOne with w: 2: %v, want a WriteException with writeConcernError 100", err)
		}
		if findOne(t, coll, "w2") == nil {
			t.Errorf("the insert with w: 2 was not applied")
		}
		if _, err := coll.DeleteOne(testCtx(t), idIs("w2")); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.UpdateOne(testCtx(t), idIs(1), set("n", 5)); err != nil {
			t.Fatal(err)
		}
		journaled := db.Collection("c", options.Collection().SetWriteConcern(writeconcern.Journaled()))
		if res, err := journaled.UpdateOne(testCtx(t), idIs(1), inc("n", 10)); err != nil || res.ModifiedCount != 1 {
			t.Errorf("journaled UpdateOne: %+v %v", res, err)
		}
		// w: 0: no reply (OP_MSG moreToCome), the update still happens.
		unacked := db.Collection("c", options.Collection().SetWriteConcern(writeconcern.Unacknowledged()))
		res, err := unacked.UpdateOne(testCtx(t), idIs(1), inc("n", 100))
		if err != nil || res.Acknowledged {
			t.Fatalf("w:0 UpdateOne: %+v %v", res, err)
		}
		waitFor(t, "an unacknowledged update", func() bool {
			return intOf(t, mustLookup(t, findOne(t, coll, 1), "n")) == 115
		})
		// ... and its errors are not reported, nor break the connection.
		if _, err := unacked.UpdateOne(testCtx(t), idIs(1), set("_id", 2)); err != nil {
			t.Fatalf("w:0 failing update: %v", err)
		}
		if _, err := unacked.UpdateMany(testCtx(t), bson.D{}, inc("n", 1)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a second unacknowledged update", func() bool {
			return intOf(t, mustLookup(t, findOne(t, coll, 1), "n")) == 116
		})
	})

	t.Run("pipeline updates", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		mustInsert(t, coll,
			bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 2}, {Key: "b", Value: 3}, {Key: "tmp", Value: true}},
			bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 10}, {Key: "b", Value: 1}, {Key: "tmp", Value: true}},
		)
		ctx := testCtx(t)
		res, err := coll.UpdateMany(ctx, bson.D{}, mongo.Pipeline{
			{{Key: "$set", Value: bson.D{{Key: "sum", Value: bson.D{{Key: "$add", Value: bson.A{"$a", "$b"}}}}}}},
			{{Key: "$set", Value: bson.D{{Key: "big", Value: bson.D{{Key: "$gt", Value: bson.A{"$sum", 10}}}}}}},
			{{Key: "$unset", Value: "tmp"}},
		})
		if err != nil || res.MatchedCount != 2 || res.ModifiedCount != 2 {
			t.Fatalf("UpdateMany pipeline: %+v %v", res, err)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 2}, {Key: "b", Value: 3}, {Key: "sum", Value: 5}, {Key: "big", Value: false}})
		wantDoc(t, coll, 2, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 10}, {Key: "b", Value: 1}, {Key: "sum", Value: 11}, {Key: "big", Value: true}})
		// $replaceWith keeps _id; command-level let variables.
		r := runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(idIs(1), bson.A{bson.D{{Key: "$replaceWith", Value: bson.D{{Key: "k", Value: "$$k"}, {Key: "a", Value: "$a"}}}}}),
		}, bson.E{Key: "let", Value: bson.D{{Key: "k", Value: "from let"}}}))
		if r.NModified != 1 {
			t.Fatalf("replaceWith: %v", r.Raw)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "from let"}, {Key: "a", Value: 2}})
		// let in the filter, through $expr.
		r = runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$a", "$$target"}}}}}, inc("hits", 1)),
		}, bson.E{Key: "let", Value: bson.D{{Key: "target", Value: 10}}}))
		if r.N != 1 || r.NModified != 1 {
			t.Errorf("let in $expr: %v", r.Raw)
		}
		wantDoc(t, coll, 2, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 10}, {Key: "b", Value: 1}, {Key: "sum", Value: 11}, {Key: "big", Value: true}, {Key: "hits", Value: 1}})
		// Statement constants (c) are variables too, next to let.
		r = runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(idIs(3), bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$concat", Value: bson.A{"$$fromC", "$$fromLet"}}}}}}}},
				bson.E{Key: "c", Value: bson.D{{Key: "fromC", Value: "c+"}}}, bson.E{Key: "upsert", Value: true}),
		}, bson.E{Key: "let", Value: bson.D{{Key: "fromLet", Value: "let"}}}))
		if len(r.Upserted) != 1 {
			t.Fatalf("c and let: %v", r.Raw)
		}
		wantDoc(t, coll, 3, bson.D{{Key: "_id", Value: 3}, {Key: "v", Value: "c+let"}})
		// Upsert with a pipeline: the query's equalities, then the stages.
		res, err = coll.UpdateOne(ctx, idIs(4), mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$multiply", Value: bson.A{"$_id", 2}}}}}}}}, options.UpdateOne().SetUpsert(true))
		if err != nil || res.UpsertedCount != 1 {
			t.Fatalf("pipeline upsert: %+v %v", res, err)
		}
		wantDoc(t, coll, 4, bson.D{{Key: "_id", Value: 4}, {Key: "n", Value: 8}})
		// Errors: stages not allowed, _id changed, arrayFilters.
		r = runUpdate(t, db, updateCmd("c", bson.A{
			updStmt(idIs(1), bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}),
			updStmt(idIs(1), bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: 5}}}}}),
			updStmt(idIs(1), bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}, bson.E{Key: "arrayFilters", Value: bson.A{eq("i", 1)}}),
			updStmt(idIs(1), bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$add", Value: bson.A{"$k", 1}}}}}}}}),
		}, bson.E{Key: "ordered", Value: false}))
		if _, codes := (writeReplyDoc{WriteErrors: r.WriteErrors}).errorIndexes(); !slices.Equal(codes, []int{72, 66, 9, 14}) {
			t.Errorf("pipeline errors %v: %v", codes, r.Raw)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "from let"}, {Key: "a", Value: 2}})
	})

	t.Run("current date", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		mustInsert(t, coll, idIs(1))
		before := time.Now().Add(-time.Second)
		if _, err := coll.UpdateOne(testCtx(t), idIs(1), bson.D{{Key: "$currentDate", Value: pairs("d", true, "t", bson.D{{Key: "$type", Value: "timestamp"}})}}); err != nil {
			t.Fatal(err)
		}
		doc := findOne(t, coll, 1)
		d := mustLookup(t, doc, "d")
		if d.Type != bson.TypeDateTime || d.Time().Before(before) || d.Time().After(time.Now().Add(time.Second)) {
			t.Errorf("d = %v", d)
		}
		ts := mustLookup(t, doc, "t")
		if ts.Type != bson.TypeTimestamp {
			t.Fatalf("t = %v", ts)
		}
		if secs, _ := ts.Timestamp(); int64(secs) < before.Unix() {
			t.Errorf("t = %v", ts)
		}
	})
}

// TestUpdateOpcounters: update counts its statements in
// serverStatus.opcounters.update, findAndModify counts once; on a server
// of its own, so nothing else moves the counters.
func TestUpdateOpcounters(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")
	db := client.Database("counters")
	counter := func() int64 {
		return intOf(t, mustLookup(t, runOK(t, admin, bson.D{{Key: "serverStatus", Value: 1}}), "opcounters", "update"))
	}
	before := counter()
	runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), set("a", 1)), updStmt(idIs(2), set("a", 1)), updStmt(idIs(3), set("a", 1))}))
	runFAM(t, db, famCmd("c", bson.E{Key: "query", Value: idIs(1)}, bson.E{Key: "update", Value: set("a", 2)}))
	if d := counter() - before; d != 4 {
		t.Errorf("opcounters.update moved by %d, want 4", d)
	}
}
