package integration

import (
	"errors"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestBulkWrite drives insert, update and delete through the driver's
// BulkWrite, which batches consecutive operations of one kind into one
// command: mixed models, ordered and unordered, with errors and upserts.
func TestBulkWrite(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)

	t.Run("mixed operations", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: 2}}, bson.D{{Key: "_id", Value: 3}, {Key: "v", Value: 3}})
		res, err := coll.BulkWrite(testCtx(t), []mongo.WriteModel{
			mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 4}, {Key: "v", Value: 4}}),
			mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 5}, {Key: "v", Value: 5}}),
			mongo.NewUpdateOneModel().SetFilter(idIs(1)).SetUpdate(inc("v", 10)),
			mongo.NewUpdateManyModel().SetFilter(bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 4}, {Key: "$lt", Value: 10}}}}).SetUpdate(set("big", true)),
			mongo.NewReplaceOneModel().SetFilter(idIs(2)).SetReplacement(bson.D{{Key: "r", Value: 1}}),
			mongo.NewUpdateOneModel().SetFilter(idIs(6)).SetUpdate(set("v", 6)).SetUpsert(true),
			mongo.NewReplaceOneModel().SetFilter(idIs(7)).SetReplacement(bson.D{{Key: "v", Value: 7}}).SetUpsert(true),
			mongo.NewDeleteOneModel().SetFilter(idIs(3)),
			mongo.NewUpdateOneModel().SetFilter(idIs(1)).SetUpdate(set("v", 11)), // no-op
			mongo.NewDeleteManyModel().SetFilter(eq("big", true)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.InsertedCount != 2 || res.MatchedCount != 5 || res.ModifiedCount != 4 || res.UpsertedCount != 2 || res.DeletedCount != 3 {
			t.Errorf("result %+v", res)
		}
		if res.UpsertedIDs[5] != int32(6) || res.UpsertedIDs[6] != int32(7) {
			t.Errorf("upserted ids %v", res.UpsertedIDs)
		}
		if got := idsIn(t, coll, bson.D{}); !slices.Equal(got, intIDs(1, 2, 6, 7)) {
			t.Errorf("left %v", got)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 11}})
		wantDoc(t, coll, 2, bson.D{{Key: "_id", Value: 2}, {Key: "r", Value: 1}})
		wantDoc(t, coll, 7, bson.D{{Key: "_id", Value: 7}, {Key: "v", Value: 7}})
	})

	t.Run("ordered stops at the first error", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "x"}})
		_, err := coll.BulkWrite(testCtx(t), []mongo.WriteModel{
			mongo.NewInsertOneModel().SetDocument(idIs(2)),
			mongo.NewUpdateOneModel().SetFilter(idIs(2)).SetUpdate(set("v", 1)),
			mongo.NewUpdateOneModel().SetFilter(idIs(1)).SetUpdate(inc("s", 1)), // fails
			mongo.NewDeleteOneModel().SetFilter(idIs(2)),
			mongo.NewInsertOneModel().SetDocument(idIs(3)),
		})
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 2 || bwe.WriteErrors[0].Code != 14 {
			t.Fatalf("error %v", err)
		}
		if got := idsIn(t, coll, bson.D{}); !slices.Equal(got, intIDs(1, 2)) {
			t.Errorf("stored %v", got)
		}
		wantDoc(t, coll, 2, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: 1}})
	})

	t.Run("unordered goes on", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "x"}})
		res, err := coll.BulkWrite(testCtx(t), []mongo.WriteModel{
			mongo.NewInsertOneModel().SetDocument(idIs(1)),                        // duplicate
			mongo.NewUpdateOneModel().SetFilter(idIs(1)).SetUpdate(inc("s", 1)),   // type mismatch
			mongo.NewUpdateOneModel().SetFilter(idIs(1)).SetUpdate(set("t", 1)),   // fine
			mongo.NewUpdateOneModel().SetFilter(idIs(1)).SetUpdate(set("_id", 5)), // immutable
			mongo.NewDeleteOneModel().SetFilter(idIs(9)),                          // nothing
			mongo.NewInsertOneModel().SetDocument(idIs(2)),                        // fine
			mongo.NewUpdateOneModel().SetFilter(idIs(3)).SetUpdate(set("u", 1)).SetUpsert(true),
		}, options.BulkWrite().SetOrdered(false))
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) {
			t.Fatalf("error %v", err)
		}
		var idx []int
		var codes []int
		for _, we := range bwe.WriteErrors {
			idx = append(idx, we.Index)
			codes = append(codes, we.Code)
		}
		// The driver groups by kind when unordered; indexes are the models'.
		slices.Sort(idx)
		slices.Sort(codes)
		if !slices.Equal(idx, []int{0, 1, 3}) || !slices.Equal(codes, []int{14, 66, 11000}) {
			t.Errorf("errors at %v codes %v", idx, codes)
		}
		if res == nil || res.InsertedCount != 1 || res.ModifiedCount != 1 || res.UpsertedCount != 1 {
			t.Errorf("result %+v", res)
		}
		wantDoc(t, coll, 1, bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "x"}, {Key: "t", Value: 1}})
		wantDoc(t, coll, 3, bson.D{{Key: "_id", Value: 3}, {Key: "u", Value: 1}})
	})

	t.Run("large batches split by the driver", func(t *testing.T) {
		t.Parallel()
		coll := client.Database(dbName(t)).Collection("c")
		var models []mongo.WriteModel
		for i := range 3000 {
			models = append(models, mongo.NewUpdateOneModel().SetFilter(idIs(i)).SetUpdate(inc("n", 1)).SetUpsert(true))
		}
		for i := range 3000 {
			models = append(models, mongo.NewUpdateOneModel().SetFilter(idIs(i)).SetUpdate(inc("n", 1)))
		}
		res, err := coll.BulkWrite(testCtx(t), models)
		if err != nil {
			t.Fatal(err)
		}
		if res.UpsertedCount != 3000 || res.MatchedCount != 3000 || res.ModifiedCount != 3000 {
			t.Errorf("result %+v", res)
		}
		if n := len(idsIn(t, coll, eq("n", 2))); n != 3000 {
			t.Errorf("%d documents with n 2", n)
		}
	})
}

// TestDeleteOptions checks delete's statement options: limit, hint,
// collation, let, and its write errors.
func TestDeleteOptions(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("delete_options")
	coll := db.Collection("c")
	var docs []any
	for i := range 10 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 3}})
	}
	mustInsert(t, coll, docs...)

	// limit 1 removes one of the matches, limit 0 all of them.
	r := runWrite(t, db, deleteCmd("c", bson.A{delStmt(eq("g", 0), 1)}))
	if r.N != 1 {
		t.Errorf("limit 1: %v", r.Raw)
	}
	r = runWrite(t, db, deleteCmd("c", bson.A{delStmt(eq("g", 0), 0)}))
	if r.N != 3 {
		t.Errorf("limit 0: %v", r.Raw)
	}
	// Hints: the _id index and $natural are fine, others are write errors.
	for _, h := range []any{"_id_", bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$natural", Value: 1}}} {
		r = runWrite(t, db, deleteCmd("c", bson.A{append(delStmt(idIs(99), 1), bson.E{Key: "hint", Value: h})}))
		if len(r.WriteErrors) != 0 {
			t.Errorf("hint %v: %v", h, r.Raw)
		}
	}
	r = runWrite(t, db, deleteCmd("c", bson.A{
		append(delStmt(idIs(1), 1), bson.E{Key: "hint", Value: "g_1"}),
		delStmt(idIs(1), 1),
	}, bson.E{Key: "ordered", Value: false}))
	if r.N != 1 || len(r.WriteErrors) != 1 || r.WriteErrors[0].Index != 0 || r.WriteErrors[0].Code != 2 {
		t.Errorf("bad hint: %v", r.Raw)
	}
	// let, read by $expr.
	r = runWrite(t, db, deleteCmd("c", bson.A{delStmt(bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$_id", "$$victim"}}}}}, 1)},
		bson.E{Key: "let", Value: bson.D{{Key: "victim", Value: 2}}}))
	if r.N != 1 || findOne(t, coll, 2) != nil {
		t.Errorf("let: %v", r.Raw)
	}
	// A bad collation fails the command, as in the other commands.
	runFail(t, db, deleteCmd("c", bson.A{append(delStmt(bson.D{}, 1), bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: "2"}}})}), 14, "TypeMismatch")
	_, err := coll.DeleteOne(testCtx(t), bson.D{}, options.DeleteOne().SetHint("nope"))
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
		t.Errorf("DeleteOne with a bad hint: %v", err)
	}
	// A filter failing at run time is a write error of its statement.
	r = runWrite(t, db, deleteCmd("c", bson.A{delStmt(bson.D{{Key: "$expr", Value: bson.D{{Key: "$add", Value: bson.A{"$_id", "x"}}}}}, 0)}))
	if r.N != 0 || len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 14 {
		t.Errorf("failing $expr: %v", r.Raw)
	}
	if got := idsIn(t, coll, bson.D{}); !slices.Equal(got, intIDs(4, 5, 7, 8)) {
		t.Errorf("left %v", got)
	}
}
