package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Views, as MongoDB 7.0 has them: created with create {viewOn, pipeline}
// (db.createView), listed by listCollections as type "view", read-only,
// and read by find, count, distinct and aggregate as one aggregation on
// the collection they read, their pipelines innermost first.

// seedViews fills src with ten documents {_id: i, g: i % 3, v: i * 10,
// tags: [i, i+1]} and defines v1 (g == 1) on src and v2 over v1
// (projecting v and g).
func seedViews(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := testCtx(t)
	var docs []any
	for i := 0; i < 10; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 3}, {Key: "v", Value: i * 10}, {Key: "tags", Value: bson.A{i, i + 1}}})
	}
	if _, err := db.Collection("src").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	runOK(t, db, bson.D{{Key: "create", Value: "v1"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "g", Value: 1}}}}}}})
	if err := db.CreateView(ctx, "v2", "v1", mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "v", Value: 1}, {Key: "g", Value: 1}}}}}); err != nil {
		t.Fatal(err)
	}
}

// findIDs runs find and returns the _ids of all its documents, in order,
// following the cursor with getMore.
func findIDs(t *testing.T, coll *mongo.Collection, filter any, opts ...options.Lister[options.FindOptions]) []string {
	t.Helper()
	ctx := testCtx(t)
	cur, err := coll.Find(ctx, filter, opts...)
	if err != nil {
		t.Fatalf("find on %s: %v", coll.Name(), err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = idString(t, d)
	}
	return ids
}

func TestViewsCreateAndList(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	seedViews(t, db)
	ctx := testCtx(t)

	// listCollections: collections and views by name; a view has its
	// definition as options and is read-only.
	c := runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}})
	var names []string
	for _, d := range c.batch() {
		names = append(names, mustLookup(t, d, "name").StringValue())
	}
	if !slices.Equal(names, []string{"src", "v1", "v2"}) {
		t.Fatalf("listCollections names %v", names)
	}
	v1 := c.batch()[1]
	if mustLookup(t, v1, "type").StringValue() != "view" || mustLookup(t, v1, "options", "viewOn").StringValue() != "src" ||
		!mustLookup(t, v1, "info", "readOnly").Boolean() {
		t.Fatalf("view entry %v", v1)
	}
	if got := mustLookup(t, v1, "options", "pipeline").String(); got != `[{"$match": {"g": {"$numberInt":"1"}}}]` {
		t.Errorf("view pipeline %s", got)
	}
	wantAbsent(t, v1, "info", "uuid")
	wantAbsent(t, v1, "idIndex")
	views := runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "type", Value: "view"}}}, {Key: "nameOnly", Value: true}})
	if len(views.batch()) != 2 || len(keysOf(t, views.batch()[0])) != 2 {
		t.Fatalf("listCollections of type view, nameOnly: %v", views.batch())
	}
	colls := runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "type", Value: "collection"}}}})
	if len(colls.batch()) != 1 {
		t.Fatalf("listCollections of type collection: %v", colls.batch())
	}
	if got, err := db.ListCollectionNames(ctx, bson.D{}); err != nil || !slices.Equal(got, []string{"src", "v1", "v2"}) {
		t.Fatalf("ListCollectionNames %v %v", got, err)
	}
	if n := intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "dbStats", Value: 1}}), "views")); n != 2 {
		t.Errorf("dbStats views %d", n)
	}
	if n := intOf(t, mustLookup(t, runOK(t, client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}}), "catalogStats", "views")); n != 2 {
		t.Errorf("serverStatus catalogStats.views %d", n)
	}

	// The same definition again is accepted; any other is a conflict, and
	// a name is a collection or a view, never both.
	runOK(t, db, bson.D{{Key: "create", Value: "v1"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "g", Value: 1}}}}}}})
	ns := db.Name()
	ce := runFail(t, db, bson.D{{Key: "create", Value: "v1"}, {Key: "viewOn", Value: "other"}}, 48, "NamespaceExists")
	if want := fmt.Sprintf("namespace %s.v1 already exists, but is a view on %s.src rather than %s.other", ns, ns, ns); ce.Message != want {
		t.Errorf("errmsg %q, want %q", ce.Message, want)
	}
	ce = runFail(t, db, bson.D{{Key: "create", Value: "v1"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{}}}, 48, "NamespaceExists")
	if !strings.HasPrefix(ce.Message, "namespace "+ns+".v1 already exists, but with pipeline ") {
		t.Errorf("errmsg %q", ce.Message)
	}
	ce = runFail(t, db, bson.D{{Key: "create", Value: "v1"}}, 48, "NamespaceExists")
	if want := fmt.Sprintf("namespace %s.v1 already exists, but is a view on %s.src rather than %s.", ns, ns, ns); ce.Message != want {
		t.Errorf("errmsg %q, want %q", ce.Message, want)
	}
	ce = runFail(t, db, bson.D{{Key: "create", Value: "src"}, {Key: "viewOn", Value: "v1"}}, 48, "NamespaceExists")
	if !strings.HasPrefix(ce.Message, "namespace "+ns+".src already exists, but with different options") {
		t.Errorf("errmsg %q", ce.Message)
	}

	// A view on a collection that does not exist is allowed, and empty;
	// without a pipeline its pipeline is [].
	runOK(t, db, bson.D{{Key: "create", Value: "later"}, {Key: "viewOn", Value: "nosuch"}})
	if ids := findIDs(t, db.Collection("later"), bson.D{}); len(ids) != 0 {
		t.Errorf("view on a missing collection: %v", ids)
	}
	later := runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "later"}}}}).batch()
	if len(later) != 1 || mustLookup(t, later[0], "options", "pipeline").String() != "[]" {
		t.Errorf("view without pipeline: %v", later)
	}

	// Views survive nothing of their database.
	runOK(t, db, bson.D{{Key: "dropDatabase", Value: 1}})
	if got, _ := db.ListCollectionNames(ctx, bson.D{}); len(got) != 0 {
		t.Fatalf("after dropDatabase: %v", got)
	}
	if _, err := db.Collection("v1").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Errorf("the name of a dropped view is a collection's again: %v", err)
	}
}

func TestViewsDefinitionErrors(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	seedViews(t, db)
	ns := db.Name()
	for _, tc := range []struct {
		cmd  bson.D
		code int32
		name string
		msg  string
	}{
		{bson.D{{Key: "create", Value: "bad"}, {Key: "pipeline", Value: bson.A{}}}, 72, "InvalidOptions", "'pipeline' requires 'viewOn' to also be specified"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: 5}}, 14, "TypeMismatch", "BSON field 'create.viewOn' is the wrong type 'int', expected type 'string'"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.D{{Key: "$match", Value: bson.D{}}}}}, 14, "TypeMismatch", "BSON field 'create.pipeline' is the wrong type 'object', expected type 'array'"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: ""}}, 2, "BadValue", "'viewOn' cannot be empty"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$nope", Value: 1}}}}}, 40324, "Location40324", "Unrecognized pipeline stage name: '$nope'"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "x"}}}}}, 167, "OptionNotSupportedOnView",
			"Invalid pipeline for view " + ns + ".bad :: caused by :: The aggregation stage $out in location 0 of the pipeline cannot be used in the view definition of " + ns + ".bad because it writes to disk"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "x"}}}}}}}, 167, "OptionNotSupportedOnView",
			"Invalid pipeline for view " + ns + ".bad :: caused by :: The aggregation stage $merge in location 1 of the pipeline cannot be used in the view definition of " + ns + ".bad because it writes to disk"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$documents", Value: bson.A{}}}}}}, 73, "InvalidNamespace",
			"Invalid pipeline for view " + ns + ".bad :: caused by :: '$documents' cannot be used in a view definition"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: "bad"}}, 5, "GraphContainsCycle", "View cycle detected: " + ns + ".bad => " + ns + ".bad => " + ns + ".bad"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "bad"}, {Key: "as", Value: "x"}, {Key: "pipeline", Value: bson.A{}}}}}}}}, 5, "GraphContainsCycle",
			"View cycle detected: " + ns + ".bad => " + ns + ".bad => " + ns + ".bad"},
		{bson.D{{Key: "create", Value: "bad"}, {Key: "viewOn", Value: "src"}, {Key: "idIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}}}}, 72, "InvalidOptions", "'viewOn' and 'idIndex' cannot both be specified"},
	} {
		ce := runFail(t, db, tc.cmd, tc.code, tc.name)
		if ce.Message != tc.msg {
			t.Errorf("%v: errmsg %q, want %q", tc.cmd, ce.Message, tc.msg)
		}
	}
	if got, _ := db.ListCollectionNames(testCtx(t), bson.D{{Key: "name", Value: "bad"}}); len(got) != 0 {
		t.Fatalf("a refused definition was stored: %v", got)
	}

	// A cycle through another view, made by collMod.
	runOK(t, db, bson.D{{Key: "create", Value: "a"}, {Key: "viewOn", Value: "b"}})
	runOK(t, db, bson.D{{Key: "create", Value: "b"}, {Key: "viewOn", Value: "src"}})
	ce := runFail(t, db, bson.D{{Key: "collMod", Value: "b"}, {Key: "viewOn", Value: "a"}}, 5, "GraphContainsCycle")
	if want := "View cycle detected: " + ns + ".b => " + ns + ".b => " + ns + ".a => " + ns + ".b"; ce.Message != want {
		t.Errorf("errmsg %q, want %q", ce.Message, want)
	}

	// At most 20 views in a chain.
	prev := "src"
	for i := 1; i <= 20; i++ {
		name := fmt.Sprintf("d%02d", i)
		runOK(t, db, bson.D{{Key: "create", Value: name}, {Key: "viewOn", Value: prev}})
		prev = name
	}
	if ids := findIDs(t, db.Collection(prev), bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 2}}}}); !slices.Equal(ids, []string{"0", "1"}) {
		t.Errorf("a chain of 20 views reads %v", ids)
	}
	ce = runFail(t, db, bson.D{{Key: "create", Value: "d21"}, {Key: "viewOn", Value: prev}}, 149, "ViewDepthLimitExceeded")
	if ce.Message != "View depth limit exceeded; maximum depth is 20" {
		t.Errorf("errmsg %q", ce.Message)
	}
	// Lengthening the chain from below is refused too.
	runOK(t, db, bson.D{{Key: "create", Value: "d00"}, {Key: "viewOn", Value: "src"}})
	runFail(t, db, bson.D{{Key: "collMod", Value: "d01"}, {Key: "viewOn", Value: "d00"}}, 149, "ViewDepthLimitExceeded")

	// Not in a transaction.
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(testCtx(t))
	_, err = sess.WithTransaction(testCtx(t), func(ctx context.Context) (any, error) {
		return nil, db.RunCommand(ctx, bson.D{{Key: "create", Value: "intxn"}, {Key: "viewOn", Value: "src"}}).Err()
	})
	ce2 := wantCode(t, err, 263, "OperationNotSupportedInTransaction")
	if ce2.Message != "Cannot create a view in a multi-document transaction." {
		t.Errorf("errmsg %q", ce2.Message)
	}
}

func TestViewsAreReadOnly(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	admin := client.Database("admin")
	seedViews(t, db)
	ns := db.Name()
	refused := "Namespace " + ns + ".v1 is a view, not a collection"

	// Writes: one error per statement, or the first alone when ordered.
	for _, tc := range []struct {
		cmd      bson.D
		reported int
	}{
		{bson.D{{Key: "insert", Value: "v1"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 100}}, bson.D{{Key: "_id", Value: 101}}}}}, 1},
		{bson.D{{Key: "insert", Value: "v1"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 100}}, bson.D{{Key: "_id", Value: 101}}}}, {Key: "ordered", Value: false}}, 2},
		{bson.D{{Key: "update", Value: "v1"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "upsert", Value: true}}}}}, 1},
		{bson.D{{Key: "delete", Value: "v1"}, {Key: "ordered", Value: false}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 1}}, bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}}}}}, 2},
	} {
		r := runWrite(t, db, tc.cmd)
		if r.N != 0 || len(r.WriteErrors) != tc.reported {
			t.Fatalf("%v: reply %v", tc.cmd, r.Raw)
		}
		for i, we := range r.WriteErrors {
			if we.Index != i || we.Code != 166 || we.ErrMsg != refused {
				t.Errorf("%v: write error %+v", tc.cmd, we)
			}
		}
		if tc.cmd[0].Key == "update" {
			if n := intOf(t, mustLookup(t, r.Raw, "nModified")); n != 0 {
				t.Errorf("update nModified %d", n)
			}
		}
	}
	// The driver's helpers see the same.
	_, err := db.Collection("v1").InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 100}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 166 {
		t.Errorf("InsertOne on a view: %v", err)
	}

	for _, tc := range []struct {
		db   *mongo.Database
		cmd  bson.D
		code int32
		name string
		msg  string
	}{
		{db, bson.D{{Key: "findAndModify", Value: "v1"}, {Key: "query", Value: bson.D{}}, {Key: "remove", Value: true}}, 166, "CommandNotSupportedOnView", refused},
		{db, bson.D{{Key: "createIndexes", Value: "v1"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: 1}}}, {Key: "name", Value: "v_1"}}}}}, 166, "CommandNotSupportedOnView", refused},
		{db, bson.D{{Key: "listIndexes", Value: "v1"}}, 166, "CommandNotSupportedOnView", refused},
		{db, bson.D{{Key: "dropIndexes", Value: "v1"}, {Key: "index", Value: "*"}}, 166, "CommandNotSupportedOnView", refused},
		{db, bson.D{{Key: "collStats", Value: "v1"}}, 166, "CommandNotSupportedOnView", refused},
		{db, bson.D{{Key: "validate", Value: "v1"}}, 166, "CommandNotSupportedOnView", "Cannot validate a view"},
		{db, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "v1"}}}}, {Key: "cursor", Value: bson.D{}}}, 166, "CommandNotSupportedOnView", refused},
		{db, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "v1"}}}}}}, {Key: "cursor", Value: bson.D{}}}, 166, "CommandNotSupportedOnView", refused},
		{db, bson.D{{Key: "aggregate", Value: "v1"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}}}, {Key: "cursor", Value: bson.D{}}}, 166, "CommandNotSupportedOnView",
			"Executor error during aggregate command on namespace: " + ns + ".v1 :: caused by :: " + refused},
		{admin, bson.D{{Key: "renameCollection", Value: ns + ".v1"}, {Key: "to", Value: ns + ".v1b"}}, 166, "CommandNotSupportedOnView", "cannot rename view: " + ns + ".v1"},
		{admin, bson.D{{Key: "renameCollection", Value: ns + ".src"}, {Key: "to", Value: ns + ".v1"}, {Key: "dropTarget", Value: true}}, 48, "NamespaceExists", "a view already exists with that name: " + ns + ".v1"},
		{admin, bson.D{{Key: "shardCollection", Value: ns + ".v1"}, {Key: "key", Value: bson.D{{Key: "g", Value: "hashed"}}}}, 166, "CommandNotSupportedOnView", "Views cannot be sharded."},
		{db, bson.D{{Key: "collMod", Value: "v1"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}}, 72, "InvalidOptions", "option not supported on a view: validator"},
		{db, bson.D{{Key: "collMod", Value: "v1"}, {Key: "index", Value: bson.D{{Key: "name", Value: "x"}, {Key: "hidden", Value: true}}}}, 72, "InvalidOptions", "option not supported on a view: index"},
		{db, bson.D{{Key: "collMod", Value: "src"}, {Key: "viewOn", Value: "v1"}, {Key: "pipeline", Value: bson.A{}}}, 72, "InvalidOptions", "option only supported on a view: pipeline"},
		{db, bson.D{{Key: "collMod", Value: "src"}, {Key: "viewOn", Value: "v1"}}, 72, "InvalidOptions", "option only supported on a view: viewOn"},
		{db, bson.D{{Key: "collMod", Value: "v1"}, {Key: "pipeline", Value: bson.D{{Key: "a", Value: 1}}}}, 14, "TypeMismatch", "BSON field 'collMod.pipeline' is the wrong type 'object', expected type 'array'"},
		{db, bson.D{{Key: "collMod", Value: "v1"}, {Key: "viewOn", Value: ""}}, 2, "BadValue", "'viewOn' cannot be empty"},
		{db, bson.D{{Key: "collMod", Value: "v1"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "x"}}}}}, 167, "OptionNotSupportedOnView",
			"Invalid pipeline for view " + ns + ".v1 :: caused by :: The aggregation stage $out in location 0 of the pipeline cannot be used in the view definition of " + ns + ".v1 because it writes to disk"},
	} {
		ce := runFail(t, tc.db, tc.cmd, tc.code, tc.name)
		if ce.Message != tc.msg {
			t.Errorf("%v: errmsg %q, want %q", tc.cmd, ce.Message, tc.msg)
		}
	}
	// Nothing was written anywhere, and the view still reads its source.
	if ids := findIDs(t, db.Collection("src"), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})); len(ids) != 10 {
		t.Errorf("src holds %v", ids)
	}
	if ids := findIDs(t, db.Collection("v1"), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})); !slices.Equal(ids, []string{"1", "4", "7"}) {
		t.Errorf("v1 reads %v", ids)
	}
	if got, _ := db.ListCollectionNames(testCtx(t), bson.D{{Key: "type", Value: "collection"}}); !slices.Equal(got, []string{"src"}) {
		t.Errorf("collections %v", got)
	}

	// collMod changes a view: each of viewOn and pipeline replaces its own.
	runOK(t, db, bson.D{{Key: "collMod", Value: "v1"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "g", Value: 2}}}}}}})
	if ids := findIDs(t, db.Collection("v1"), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})); !slices.Equal(ids, []string{"2", "5", "8"}) {
		t.Errorf("v1 after collMod of its pipeline reads %v", ids)
	}
	if _, err := db.Collection("other").InsertMany(testCtx(t), []any{bson.D{{Key: "_id", Value: 2}, {Key: "g", Value: 2}}, bson.D{{Key: "_id", Value: 3}, {Key: "g", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	runOK(t, db, bson.D{{Key: "collMod", Value: "v1"}, {Key: "viewOn", Value: "other"}})
	if ids := findIDs(t, db.Collection("v2"), bson.D{}); !slices.Equal(ids, []string{"2"}) {
		t.Errorf("v2 over v1 after collMod of its viewOn reads %v", ids)
	}
	opts := runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "v1"}}}}).batch()[0]
	if got := mustLookup(t, opts, "options", "viewOn").StringValue(); got != "other" {
		t.Errorf("viewOn after collMod %q", got)
	}

	// Dropping a view: {ns, ok}, no index count; then the name is free.
	drop := runOK(t, db, bson.D{{Key: "drop", Value: "v2"}})
	if mustLookup(t, drop, "ns").StringValue() != ns+".v2" {
		t.Errorf("drop of a view replied %v", drop)
	}
	wantAbsent(t, drop, "nIndexesWas")
	if err := db.Collection("v1").Drop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.ListCollectionNames(testCtx(t), bson.D{}); !slices.Equal(got, []string{"other", "src"}) {
		t.Errorf("after dropping the views: %v", got)
	}
}

func TestViewsReads(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	seedViews(t, db)
	ctx := testCtx(t)
	v1, v2 := db.Collection("v1"), db.Collection("v2")

	// find: the view's pipeline, then filter, sort, skip, limit and
	// projection.
	byID := options.Find().SetSort(bson.D{{Key: "_id", Value: -1}})
	if ids := findIDs(t, v1, bson.D{}, byID); !slices.Equal(ids, []string{"7", "4", "1"}) {
		t.Errorf("find on v1: %v", ids)
	}
	if ids := findIDs(t, v1, bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: 10}}}}, options.Find().SetSort(bson.D{{Key: "v", Value: 1}}).SetSkip(1).SetLimit(1)); !slices.Equal(ids, []string{"7"}) {
		t.Errorf("find with filter, sort, skip, limit: %v", ids)
	}
	var one bson.Raw
	if err := v1.FindOne(ctx, bson.D{{Key: "_id", Value: 4}}, options.FindOne().SetProjection(bson.D{{Key: "v", Value: 1}})).Decode(&one); err != nil {
		t.Fatal(err)
	}
	if keys := keysOf(t, one); !slices.Equal(keys, []string{"_id", "v"}) || intOf(t, mustLookup(t, one, "v")) != 40 {
		t.Errorf("FindOne with projection: %v", one)
	}
	// A view on a view: the inner view's pipeline runs first.
	var two bson.Raw
	if err := v2.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "_id", Value: 1}})).Decode(&two); err != nil {
		t.Fatal(err)
	}
	if keys := keysOf(t, two); !slices.Equal(keys, []string{"_id", "g", "v"}) || idString(t, two) != "1" {
		t.Errorf("v2 reads %v", two)
	}

	// A cursor over a view: batches and getMore, under the view's name.
	c := runCursor(t, db, bson.D{{Key: "find", Value: "v1"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "batchSize", Value: 2}})
	if c.Cursor.ID == 0 || c.Cursor.NS != db.Name()+".v1" || len(c.batch()) != 2 {
		t.Fatalf("find on a view, batchSize 2: %+v", c.Cursor)
	}
	more := runCursor(t, db, bson.D{{Key: "getMore", Value: c.Cursor.ID}, {Key: "collection", Value: "v1"}})
	if more.Cursor.ID != 0 || len(more.batch()) != 1 || idString(t, more.batch()[0]) != "7" {
		t.Fatalf("getMore on a view's cursor: %+v", more.Cursor)
	}
	agg := runCursor(t, db, bson.D{{Key: "aggregate", Value: "v2"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 1}}}})
	if agg.Cursor.NS != db.Name()+".v2" || agg.Cursor.ID == 0 {
		t.Fatalf("aggregate on a view: %+v", agg.Cursor)
	}
	rest := runCursor(t, db, bson.D{{Key: "getMore", Value: agg.Cursor.ID}, {Key: "collection", Value: "v2"}})
	if got := sortedIDs(t, append(agg.batch(), rest.batch()...)); !slices.Equal(got, intIDs(1, 4, 7)) {
		t.Errorf("aggregate on v2 then getMore: %v", got)
	}

	// count, countDocuments, estimatedDocumentCount, distinct.
	count := runOK(t, db, bson.D{{Key: "count", Value: "v1"}, {Key: "query", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 40}}}}}})
	if v := mustLookup(t, count, "n"); v.Type != bson.TypeInt32 || v.Int32() != 2 {
		t.Errorf("count on a view: %v", count)
	}
	if n, err := v2.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Errorf("CountDocuments %d %v", n, err)
	}
	if n, err := v1.EstimatedDocumentCount(ctx); err != nil || n != 3 {
		t.Errorf("EstimatedDocumentCount %d %v", n, err)
	}
	if n := intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "count", Value: "v1"}, {Key: "skip", Value: 1}, {Key: "limit", Value: -1}}), "n")); n != 1 {
		t.Errorf("count with skip and a negative limit: %d", n)
	}
	d := runOK(t, db, bson.D{{Key: "distinct", Value: "v1"}, {Key: "key", Value: "tags"}})
	if got := mustLookup(t, d, "values").String(); got != `[{"$numberInt":"1"},{"$numberInt":"2"},{"$numberInt":"4"},{"$numberInt":"5"},{"$numberInt":"7"},{"$numberInt":"8"}]` {
		t.Errorf("distinct of an array field on a view: %s", got)
	}
	if v := mustLookup(t, d, "ok"); v.Type != bson.TypeInt32 {
		t.Errorf("distinct on a view answers ok as %v (MongoDB: int32)", v.Type)
	}
	vals, err := v2.Distinct(ctx, "v", bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: 10}}}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if got := (bson.RawValue{Type: bson.TypeArray, Value: vals}).String(); got != `[{"$numberInt":"40"},{"$numberInt":"70"}]` {
		t.Errorf("Distinct with a filter on v2: %s", got)
	}

	// $lookup, $graphLookup and $unionWith read views too.
	look := runCursor(t, db, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 3}}}}}},
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "v1"}, {Key: "localField", Value: "g"}, {Key: "foreignField", Value: "g"}, {Key: "as", Value: "m"}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$size", Value: "$m"}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	}}, {Key: "cursor", Value: bson.D{}}})
	var sizes []int64
	for _, doc := range look.batch() {
		sizes = append(sizes, intOf(t, mustLookup(t, doc, "n")))
	}
	if !slices.Equal(sizes, []int64{0, 3, 0}) {
		t.Errorf("$lookup from a view: %v", sizes)
	}
	union := runCursor(t, db, bson.D{{Key: "aggregate", Value: "v1"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$unionWith", Value: "v2"}}, bson.D{{Key: "$count", Value: "n"}}}}, {Key: "cursor", Value: bson.D{}}})
	if len(union.batch()) != 1 || intOf(t, mustLookup(t, union.batch()[0], "n")) != 6 {
		t.Errorf("$unionWith a view: %v", union.batch())
	}

	// What an aggregation cannot express is refused, as MongoDB does.
	for _, tc := range []struct {
		cmd  bson.D
		code int32
		name string
		msg  string
	}{
		{bson.D{{Key: "find", Value: "v1"}, {Key: "tailable", Value: true}}, 168, "InvalidPipelineOperator", "Tailable cursors are not supported in aggregation."},
		{bson.D{{Key: "find", Value: "v1"}, {Key: "returnKey", Value: true}}, 168, "InvalidPipelineOperator", "Option returnKey not supported in aggregation."},
		{bson.D{{Key: "find", Value: "v1"}, {Key: "sort", Value: bson.D{{Key: "$natural", Value: -1}}}}, 168, "InvalidPipelineOperator", "Sort option $natural not supported in aggregation."},
		{bson.D{{Key: "find", Value: "v1"}, {Key: "singleBatch", Value: true}, {Key: "limit", Value: 2}}, 168, "InvalidPipelineOperator", "Option singleBatch not supported in aggregation."},
		{bson.D{{Key: "find", Value: "v1"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}}, 167, "OptionNotSupportedOnView", "Cannot override a view's default collation"},
		{bson.D{{Key: "find", Value: "v1"}, {Key: "bogus", Value: 1}}, 40415, "Location40415", "BSON field 'find.bogus' is an unknown field."},
	} {
		ce := runFail(t, db, tc.cmd, tc.code, tc.name)
		if ce.Message != tc.msg {
			t.Errorf("%v: errmsg %q, want %q", tc.cmd, ce.Message, tc.msg)
		}
	}

	// explain shows the resolved pipeline, run on the collection.
	ex := runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "v2"}, {Key: "filter", Value: bson.D{{Key: "v", Value: 70}}}}}})
	text := ex.String()
	for _, want := range []string{`"namespace": "` + db.Name() + `.src"`, `{"$match": {"g": {"$numberInt":"1"}}}`, `"$project"`, `{"$match": {"v": {"$numberInt":"70"}}}`} {
		if !strings.Contains(text, want) {
			t.Errorf("explain of find on v2 lacks %s: %s", want, text)
		}
	}
	if !strings.Contains(text, `"v": {"$numberInt":"70"}`) || strings.Index(text, `"g": {"$numberInt":"1"}`) > strings.Index(text, `"v": {"$numberInt":"70"}`) {
		t.Errorf("explain: the view's stages do not come first: %s", text)
	}
}

// TestViewsOnShardedCollection: a view over a collection of several
// physical partitions reads them all, and is charged as the aggregation
// it runs.
func TestViewsOnShardedCollection(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	ctx := testCtx(t)
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: db.Name() + ".orders"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}})
	var docs []any
	for i := 0; i < 200; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%20)}, {Key: "total", Value: i}})
	}
	if _, err := db.Collection("orders").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateView(ctx, "big", "orders", mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "total", Value: bson.D{{Key: "$gte", Value: 100}}}}}}}); err != nil {
		t.Fatal(err)
	}
	ids := findIDs(t, db.Collection("big"), bson.D{}, options.Find().SetBatchSize(7))
	if len(ids) != 100 {
		t.Fatalf("view on a sharded collection reads %d documents", len(ids))
	}
	want := make([]int, 0, 100)
	for i := 100; i < 200; i++ {
		want = append(want, i)
	}
	got := slices.Clone(ids)
	slices.Sort(got)
	if !slices.Equal(got, intIDs(want...)) {
		t.Errorf("view on a sharded collection: %v", got)
	}
	if n, err := db.Collection("big").CountDocuments(ctx, bson.D{{Key: "tenant", Value: "t3"}}); err != nil || n != 5 {
		t.Errorf("CountDocuments of one tenant: %d %v", n, err)
	}
	d, err := db.Collection("big").Distinct(ctx, "tenant", bson.D{}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if vals, _ := d.Values(); len(vals) != 20 {
		t.Errorf("distinct tenants through the view: %d", len(vals))
	}

	// Request units: a read of the view is charged as the aggregation on
	// the collection it runs.
	runOK(t, db, bson.D{{Key: "find", Value: "big"}, {Key: "filter", Value: bson.D{{Key: "tenant", Value: "t7"}}}})
	viaView := lastRequestStats(t, db)
	runOK(t, db, bson.D{{Key: "aggregate", Value: "orders"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "total", Value: bson.D{{Key: "$gte", Value: 100}}}}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "tenant", Value: "t7"}}}},
	}}, {Key: "cursor", Value: bson.D{}}})
	direct := lastRequestStats(t, db)
	if viaView.Charge <= 0 || viaView.Charge != direct.Charge {
		t.Errorf("find on the view charged %.2f RU, the aggregation on the collection %.2f RU", viaView.Charge, direct.Charge)
	}
	if viaView.Command != "find" {
		t.Errorf("CommandName %q", viaView.Command)
	}
}

// TestViewsSurviveRestart: view definitions are in the catalog.
func TestViewsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := launchRestartable(t, dir)
	db := r.client.Database("views_restart")
	seedViews(t, db)
	r.stop(t)
	r = launchRestartable(t, dir)
	defer r.stop(t)
	db = r.client.Database("views_restart")
	if ids := findIDs(t, db.Collection("v2"), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})); !slices.Equal(ids, []string{"1", "4", "7"}) {
		t.Errorf("v2 after a restart reads %v", ids)
	}
	if got, _ := db.ListCollectionNames(testCtx(t), bson.D{{Key: "type", Value: "view"}}); !slices.Equal(got, []string{"v1", "v2"}) {
		t.Errorf("views after a restart: %v", got)
	}
}
