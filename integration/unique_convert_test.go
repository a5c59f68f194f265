package integration

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestConvertIndexToUnique is collMod's two-step conversion of an index to
// a unique one: prepareUnique refuses new duplicates, unique: true (with
// or without dryRun) lists the documents that still share keys or makes
// the index unique; it all survives a restart.
func TestConvertIndexToUnique(t *testing.T) {
	dir := t.TempDir()
	s1 := launchRestartable(t, dir)
	ctx := testCtx(t)
	db := s1.client.Database("conv")
	coll := db.Collection("c")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}},
		bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: 2}},
		bson.D{{Key: "_id", Value: 4}, {Key: "x", Value: bson.A{5, 6}}},
	}); err != nil {
		t.Fatal(err)
	}
	runOK(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}},
	}}})
	collMod := func(index bson.D, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: append(bson.D{{Key: "keyPattern", Value: bson.D{{Key: "x", Value: 1}}}}, index...)}}, extra...)
	}

	// Refusals before anything changes.
	runFail(t, db, collMod(bson.D{{Key: "unique", Value: true}}), 72, "InvalidOptions") // prepareUnique first
	runFail(t, db, collMod(bson.D{{Key: "prepareUnique", Value: true}, {Key: "hidden", Value: true}}), 72, "InvalidOptions")
	runFail(t, db, collMod(bson.D{{Key: "unique", Value: false}}), 2, "BadValue")
	runFail(t, db, collMod(bson.D{{Key: "hidden", Value: false}}, bson.E{Key: "dryRun", Value: true}), 72, "InvalidOptions")
	runFail(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "_id_"}, {Key: "prepareUnique", Value: true}}}}, 2, "BadValue")

	r := runOK(t, db, collMod(bson.D{{Key: "prepareUnique", Value: true}}))
	if mustLookup(t, r, "prepareUnique_old").Boolean() || !mustLookup(t, r, "prepareUnique_new").Boolean() {
		t.Errorf("prepareUnique reply %v", r)
	}
	if spec := indexSpec(t, coll, "x_1"); !spec.Lookup("prepareUnique").Boolean() || spec.Lookup("unique").Type != 0 {
		t.Errorf("listIndexes after prepareUnique: %v", spec)
	}

	// New duplicates are refused, by insert and by update; the existing
	// ones stay; a document may keep its own key.
	wantDup := func(err error) {
		t.Helper()
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
			t.Fatalf("want a duplicate key error, got %v", err)
		}
		if kp, _ := bson.Raw(we.WriteErrors[0].Raw).LookupErr("keyPattern"); kp.String() != `{"x": {"$numberInt":"1"}}` {
			t.Errorf("keyPattern %v", kp)
		}
	}
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 10}, {Key: "x", Value: 2}})
	wantDup(err)
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 11}, {Key: "x", Value: bson.A{7, 6}}}) // 6 is document 4's
	wantDup(err)
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 5}}}})
	wantDup(err)
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: bson.A{6, 8}}}}}); err != nil {
		t.Fatalf("keeping its own key 6: %v", err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 12}, {Key: "x", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "x", Value: 1}}); n != 2 {
		t.Errorf("%d documents with x 1, want the 2 from before", n)
	}

	// The conversion lists documents 1 and 2, with and without dryRun.
	for _, dry := range []bool{true, false} {
		cmd := collMod(bson.D{{Key: "unique", Value: true}})
		if dry {
			cmd = append(cmd, bson.E{Key: "dryRun", Value: true})
		}
		ce := runFail(t, db, cmd, 359, "CannotConvertIndexToUnique")
		v, err := ce.Raw.LookupErr("violations")
		if err != nil || v.String() != `[{"ids": [{"$numberInt":"1"},{"$numberInt":"2"}]}]` {
			t.Errorf("dryRun %v: violations %v (%v)", dry, v, err)
		}
	}
	if spec := indexSpec(t, coll, "x_1"); spec.Lookup("unique").Type != 0 {
		t.Errorf("refused conversion changed the index: %v", spec)
	}

	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	r = runOK(t, db, collMod(bson.D{{Key: "unique", Value: true}}, bson.E{Key: "dryRun", Value: true}))
	if _, err := r.LookupErr("unique_new"); err == nil {
		t.Errorf("dryRun reply %v", r)
	}
	if spec := indexSpec(t, coll, "x_1"); spec.Lookup("unique").Type != 0 {
		t.Errorf("dryRun changed the index: %v", spec)
	}
	r = runOK(t, db, collMod(bson.D{{Key: "unique", Value: true}}))
	if !mustLookup(t, r, "unique_new").Boolean() {
		t.Errorf("unique reply %v", r)
	}

	// Unique now, and still after a restart.
	check := func(stage string) {
		t.Helper()
		if spec := indexSpec(t, coll, "x_1"); !spec.Lookup("unique").Boolean() {
			t.Errorf("%s: listIndexes %v", stage, spec)
		}
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 20}, {Key: "x", Value: 3}})
		wantDup(err)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprint(stage)}, {Key: "x", Value: stage}}); err != nil {
			t.Errorf("%s: a new key: %v", stage, err)
		}
	}
	check("converted")
	s1.stop(t)
	s2 := StartServer(t, ServerOptions{Dir: dir})
	coll = newTestClient(t, s2).Database("conv").Collection("c")
	check("restarted")
}

// TestPrepareUniqueConcurrentInserts races writers of the same keys into
// an index being made unique: exactly one document per key gets in.
func TestPrepareUniqueConcurrentInserts(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	ctx := testCtx(t)
	db := client.Database("race")
	coll := db.Collection("c")
	runOK(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}},
	}}})
	runOK(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "k_1"}, {Key: "prepareUnique", Value: true}}}})
	const writers, keys = 8, 50
	var ok, dup atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				_, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: k}, {Key: "w", Value: w}})
				switch {
				case err == nil:
					ok.Add(1)
				case mongo.IsDuplicateKeyError(err):
					dup.Add(1)
				default:
					t.Errorf("writer %d key %d: %v", w, k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != keys || dup.Load() != (writers-1)*keys {
		t.Errorf("%d inserted and %d refused, want %d and %d", ok.Load(), dup.Load(), keys, (writers-1)*keys)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != keys {
		t.Errorf("%d documents, want %d", n, keys)
	}
}

// indexSpec is index name of coll as listIndexes shows it.
func indexSpec(t *testing.T, coll *mongo.Collection, name string) bson.Raw {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Indexes().List(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var raws []bson.Raw
	if err := cur.All(testCtx(t), &raws); err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		if s.Name == name {
			return raws[i]
		}
	}
	t.Fatalf("no index %s", name)
	return nil
}
