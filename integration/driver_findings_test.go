package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Behaviours drivers and their test suites rely on, each as MongoDB 7.0
// answers it.

// TestWriteHintSecondaryIndex: delete, update and findAndModify take a
// hint naming a secondary index by key or name, as find does; a hint
// naming no index still fails.
func TestWriteHintSecondaryIndex(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	ctx := testCtx(t)
	coll := db.Collection("c")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "x", Value: 4}},
		bson.D{{Key: "_id", Value: 5}, {Key: "x", Value: 5}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	byKey, byName := bson.D{{Key: "x", Value: 1}}, "x_1"

	for _, h := range []any{byKey, byName} {
		r, err := coll.UpdateOne(ctx, bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.UpdateOne().SetHint(h))
		if err != nil || r.ModifiedCount != 1 {
			t.Fatalf("updateOne hint %v: %+v %v", h, r, err)
		}
	}
	if r, err := coll.UpdateMany(ctx, bson.D{{Key: "x", Value: bson.D{{Key: "$gt", Value: 3}}}}, bson.D{{Key: "$set", Value: bson.D{{Key: "big", Value: true}}}}, options.UpdateMany().SetHint(byName)); err != nil || r.ModifiedCount != 2 {
		t.Fatalf("updateMany: %+v %v", r, err)
	}
	var got bson.M
	if err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "x", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}, options.FindOneAndUpdate().SetHint(byKey).SetReturnDocument(options.After)).Decode(&got); err != nil || got["y"] != int32(1) {
		t.Fatalf("findOneAndUpdate: %v %v", got, err)
	}
	if err := coll.FindOneAndReplace(ctx, bson.D{{Key: "x", Value: 3}}, bson.D{{Key: "x", Value: 3}, {Key: "z", Value: 1}}, options.FindOneAndReplace().SetHint(byName)).Err(); err != nil {
		t.Fatalf("findOneAndReplace: %v", err)
	}
	if err := coll.FindOneAndDelete(ctx, bson.D{{Key: "x", Value: 3}}, options.FindOneAndDelete().SetHint(byName)).Err(); err != nil {
		t.Fatalf("findOneAndDelete: %v", err)
	}
	if r, err := coll.DeleteOne(ctx, bson.D{{Key: "x", Value: 2}}, options.DeleteOne().SetHint(byKey)); err != nil || r.DeletedCount != 1 {
		t.Fatalf("deleteOne: %+v %v", r, err)
	}
	if r, err := coll.DeleteMany(ctx, bson.D{{Key: "big", Value: true}}, options.DeleteMany().SetHint(byName)); err != nil || r.DeletedCount != 2 {
		t.Fatalf("deleteMany: %+v %v", r, err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("left %d, %v; want 1", n, err)
	}

	// A hint naming no index, or a hidden one, is still refused.
	_, err := coll.DeleteOne(ctx, bson.D{{Key: "x", Value: 1}}, options.DeleteOne().SetHint(bson.D{{Key: "y", Value: 1}}))
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
		t.Fatalf("delete with hint on no index: %v", err)
	}
	runOK(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "x_1"}, {Key: "hidden", Value: true}}}})
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 2}}}}, options.UpdateOne().SetHint(byName))
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
		t.Fatalf("update with hint on a hidden index: %v", err)
	}
	err = coll.FindOneAndDelete(ctx, bson.D{{Key: "x", Value: 1}}, options.FindOneAndDelete().SetHint(byKey)).Err()
	wantCode(t, err, 2, "BadValue")
}

// TestListingBatchSize: listCollections and listIndexes honour
// cursor.batchSize and serve the rest through getMore, which drivers
// send when the first batch's cursor is open.
func TestListingBatchSize(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	ctx := testCtx(t)
	for i := range 5 {
		runOK(t, db, bson.D{{Key: "create", Value: fmt.Sprintf("c%d", i)}})
	}
	coll := db.Collection("c0")
	for _, f := range []string{"a", "b", "c", "d"} {
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: f, Value: 1}}}); err != nil {
			t.Fatal(err)
		}
	}

	first := runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 2}}}})
	if len(first.batch()) != 2 || first.Cursor.ID == 0 || first.Cursor.NS != db.Name()+".$cmd.listCollections" {
		t.Fatalf("listCollections first batch: %d documents, cursor %d, ns %s", len(first.batch()), first.Cursor.ID, first.Cursor.NS)
	}
	next := runCursor(t, db, bson.D{{Key: "getMore", Value: first.Cursor.ID}, {Key: "collection", Value: "$cmd.listCollections"}, {Key: "batchSize", Value: 2}})
	if len(next.batch()) != 2 || next.Cursor.ID != first.Cursor.ID {
		t.Fatalf("listCollections getMore: %d documents, cursor %d", len(next.batch()), next.Cursor.ID)
	}
	last := runCursor(t, db, bson.D{{Key: "getMore", Value: first.Cursor.ID}, {Key: "collection", Value: "$cmd.listCollections"}})
	if len(last.batch()) != 1 || last.Cursor.ID != 0 {
		t.Fatalf("listCollections last getMore: %d documents, cursor %d", len(last.batch()), last.Cursor.ID)
	}
	zero := runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 0}}}})
	if len(zero.batch()) != 0 || zero.Cursor.ID == 0 {
		t.Fatalf("listCollections batchSize 0: %d documents, cursor %d", len(zero.batch()), zero.Cursor.ID)
	}
	all := runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}})
	if len(all.batch()) != 5 || all.Cursor.ID != 0 {
		t.Fatalf("listCollections without batchSize: %d documents, cursor %d", len(all.batch()), all.Cursor.ID)
	}

	// Through the driver, which follows the cursor with getMore.
	names, err := db.ListCollectionNames(ctx, bson.D{}, options.ListCollections().SetBatchSize(2))
	if err != nil || len(names) != 5 {
		t.Fatalf("ListCollectionNames: %v %v", names, err)
	}
	cur, err := coll.Indexes().List(ctx, options.ListIndexes().SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.M
	if err := cur.All(ctx, &specs); err != nil || len(specs) != 5 {
		t.Fatalf("listIndexes: %d specs, %v", len(specs), err)
	}
	ix := runCursor(t, db, bson.D{{Key: "listIndexes", Value: "c0"}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 3}}}})
	if len(ix.batch()) != 3 || ix.Cursor.ID == 0 {
		t.Fatalf("listIndexes first batch: %d specs, cursor %d", len(ix.batch()), ix.Cursor.ID)
	}
	ixNext := runCursor(t, db, bson.D{{Key: "getMore", Value: ix.Cursor.ID}, {Key: "collection", Value: "c0"}})
	if len(ixNext.batch()) != 2 || ixNext.Cursor.ID != 0 {
		t.Fatalf("listIndexes getMore: %d specs, cursor %d", len(ixNext.batch()), ixNext.Cursor.ID)
	}

	runFail(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: -1}}}}, 51024, "Location51024")
	runFail(t, db, bson.D{{Key: "listIndexes", Value: "c0"}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: "x"}}}}, 14, "TypeMismatch")
	runFail(t, db, bson.D{{Key: "listIndexes", Value: "c0"}, {Key: "cursor", Value: bson.D{{Key: "nope", Value: 1}}}}, 40415, "Location40415")
}

// TestUpdatePipelineParse: a pipeline update whose elements are not all
// documents fails the whole command (MongoDB's IDL parses it with the
// command, before any statement runs); a stage it does not know is the
// statement's write error (MongoDB parses the stages when it runs the
// statement, write_ops_exec's performUpdates).
func TestUpdatePipelineParse(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	ctx := testCtx(t)
	coll := db.Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	good := bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}}
	for _, u := range []bson.A{{1}, {bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, "x"}} {
		ce := runFail(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
			good,
			bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: u}},
		}}}, 14, "TypeMismatch")
		if ce.Message != "Each element of the 'pipeline' array must be an object" {
			t.Fatalf("message %q", ce.Message)
		}
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "a", Value: 1}}); err != nil || n != 0 {
		t.Fatalf("a statement ran before the command failed: %d %v", n, err)
	}
	r := runWrite(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.A{bson.D{{Key: "$invalidOperator", Value: 1}}}}},
	}}})
	if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 40324 || r.WriteErrors[0].ErrMsg != "Unrecognized pipeline stage name: '$invalidOperator'" {
		t.Fatalf("unknown stage: %v", r.Raw)
	}
	// findAndModify has no write errors: the command fails.
	err := coll.FindOneAndUpdate(ctx, bson.D{}, bson.A{bson.D{{Key: "$invalidOperator", Value: 1}}}).Err()
	wantCode(t, err, 40324, "Location40324")
	err = db.RunCommand(ctx, bson.D{{Key: "findAndModify", Value: "c"}, {Key: "update", Value: bson.A{1}}}).Err()
	wantCode(t, err, 14, "TypeMismatch")
}

// TestBypassEmptyTsReplacement: an empty timestamp in a top-level field
// (not _id) of an inserted or replacement document becomes the current
// cluster time, as in MongoDB 5.0+; update operators and pipelines keep
// it; bypassEmptyTsReplacement: true keeps it everywhere, on insert,
// update, delete and findAndModify. Raw commands: the Go driver has no
// public option for it.
func TestBypassEmptyTsReplacement(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	ctx := testCtx(t)
	coll := db.Collection("c")
	empty := bson.Timestamp{}
	for _, bypass := range []bool{true, false} {
		base := 100
		if !bypass {
			base = 200
		}
		id := func(i int) int { return base + i }
		with := func(cmd bson.D) bson.D {
			return append(cmd, bson.E{Key: "bypassEmptyTsReplacement", Value: bypass})
		}
		runOK(t, db, with(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
			bson.D{{Key: "_id", Value: id(1)}, {Key: "a", Value: empty}},
			bson.D{{Key: "_id", Value: id(2)}}, bson.D{{Key: "_id", Value: id(3)}},
			bson.D{{Key: "_id", Value: id(6)}}, bson.D{{Key: "_id", Value: id(7)}}, bson.D{{Key: "_id", Value: id(8)}},
		}}}))
		update := func(i int, u any, upsert bool) {
			runOK(t, db, with(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
				bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id(i)}}}, {Key: "u", Value: u}, {Key: "upsert", Value: upsert}},
			}}}))
		}
		fam := func(i int, u any, upsert bool) {
			runOK(t, db, with(bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: id(i)}}}, {Key: "update", Value: u}, {Key: "upsert", Value: upsert}}))
		}
		replacement := bson.D{{Key: "a", Value: empty}}
		update(2, replacement, false)
		fam(3, replacement, false)
		update(4, replacement, true)
		fam(5, replacement, true)
		update(6, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: empty}}}}, false)
		fam(7, bson.A{bson.D{{Key: "$addFields", Value: bson.D{{Key: "a", Value: empty}}}}}, false)
		update(8, bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: empty}}}}}, false)
		update(9, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: empty}}}}, true)
		runOK(t, db, with(bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "limit", Value: 0}},
		}}}))
		for i := 1; i <= 9; i++ {
			var doc struct {
				A bson.Timestamp `bson:"a"`
			}
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id(i)}}).Decode(&doc); err != nil {
				t.Fatalf("_id %d: %v", id(i), err)
			}
			keep := bypass || i >= 6
			if keep != (doc.A == empty) || (!keep && doc.A.T == 0) {
				t.Fatalf("bypass %v, _id %d: a is %v", bypass, id(i), doc.A)
			}
		}
	}
	// _id keeps its empty timestamp; other fields get the cluster time.
	runOK(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: empty}, {Key: "a", Value: empty}}}}})
	var doc struct {
		ID bson.Timestamp `bson:"_id"`
		A  bson.Timestamp `bson:"a"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: empty}}).Decode(&doc); err != nil || doc.A == empty {
		t.Fatalf("_id Timestamp(0, 0): %+v %v", doc, err)
	}
	runFail(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "bypassEmptyTsReplacement", Value: "yes"}}, 14, "TypeMismatch")

}

// TestClusterTimeGossip: every reply, errors included, carries
// $clusterTime {clusterTime, signature {hash, keyId}} and operationTime,
// as a router's replies do; a write's operationTime is later than the one
// before it, and $clusterTime is never before operationTime.
func TestClusterTimeGossip(t *testing.T) {
	for _, rs := range []bool{false, true} {
		t.Run(fmt.Sprintf("replicaSet=%v", rs), func(t *testing.T) {
			opts := ServerOptions{Dir: t.TempDir()}
			if rs {
				opts.ReplicaSet = "rs0"
			}
			s := StartServer(t, opts)
			client := newTestClient(t, s)
			admin := client.Database("admin")
			db := client.Database(dbName(t))
			check := func(what string, raw bson.Raw) bson.Timestamp {
				t.Helper()
				ct := mustLookup(t, raw, "$clusterTime", "clusterTime")
				op := mustLookup(t, raw, "operationTime")
				h := mustLookup(t, raw, "$clusterTime", "signature", "hash")
				k := mustLookup(t, raw, "$clusterTime", "signature", "keyId")
				if ct.Type != bson.TypeTimestamp || op.Type != bson.TypeTimestamp || h.Type != bson.TypeBinary || k.Type != bson.TypeInt64 {
					t.Fatalf("%s: cluster time fields of the wrong types: %v", what, raw)
				}
				cT, cI := ct.Timestamp()
				oT, oI := op.Timestamp()
				if (bson.Timestamp{T: oT, I: oI}).After(bson.Timestamp{T: cT, I: cI}) || oT == 0 {
					t.Fatalf("%s: operationTime %d,%d and clusterTime %d,%d", what, oT, oI, cT, cI)
				}
				return bson.Timestamp{T: oT, I: oI}
			}
			for _, cmd := range []bson.D{
				{{Key: "ping", Value: 1}},
				{{Key: "hello", Value: 1}},
				{{Key: "serverStatus", Value: 1}},
				{{Key: "listDatabases", Value: 1}},
				{{Key: "buildInfo", Value: 1}},
			} {
				check(cmd[0].Key, runOK(t, admin, cmd))
			}
			first := check("insert", runOK(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}))
			second := check("insert", runOK(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}))
			if !second.After(first) {
				t.Fatalf("operationTime %v then %v", first, second)
			}
			raw, err := db.RunCommand(testCtx(t), bson.D{{Key: "noSuchCommand", Value: 1}}).Raw()
			if err == nil {
				t.Fatal("noSuchCommand succeeded")
			}
			check("an error", raw)
		})
	}
}

// TestAPIStrict: a client declaring Stable API Version 1 with strict
// true gets 323 APIStrictError for a command outside the version
// (distinct, as MongoDB's documentation shows) and runs the version's
// commands; an unknown apiVersion is 322, apiStrict without apiVersion
// 4886600.
func TestAPIStrict(t *testing.T) {
	s := startTestServer(t)
	strict := newTestClient(t, s, options.Client().SetServerAPIOptions(options.ServerAPI(options.ServerAPIVersion1).SetStrict(true)))
	ctx := testCtx(t)
	coll := strict.Database(dbName(t)).Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}); err != nil {
		t.Fatalf("insert under apiStrict: %v", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("countDocuments under apiStrict: %d %v", n, err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatalf("createIndexes under apiStrict: %v", err)
	}
	err := coll.Distinct(ctx, "a", bson.D{}).Err()
	ce := wantCode(t, err, 323, "APIStrictError")
	if !strings.HasPrefix(ce.Message, "Provided apiStrict:true, but the command distinct is not in API Version 1.") {
		t.Fatalf("message %q", ce.Message)
	}
	wantCode(t, strict.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Err(), 323, "APIStrictError")

	// Without a declared API, the parameters in the command itself.
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	runOK(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}, {Key: "apiVersion", Value: "1"}})
	runOK(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}})
	runFail(t, db, bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: "2"}}, 322, "APIVersionError")
	runFail(t, db, bson.D{{Key: "ping", Value: 1}, {Key: "apiStrict", Value: true}}, 4886600, "Location4886600")
	runFail(t, db, bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: 1}}, 14, "TypeMismatch")
	runFail(t, db, bson.D{{Key: "isMaster", Value: 1}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}}, 323, "APIStrictError")
}

// TestServerInfoReplies: fields of server and database information
// replies as MongoDB 7.0 gives them.
func TestServerInfoReplies(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(1))
	admin := client.Database("admin")
	db := client.Database(dbName(t))
	ctx := testCtx(t)
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	st := runOK(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	if n := intOf(t, mustLookup(t, st, "catalogStats", "collections")); n < 1 {
		t.Fatalf("catalogStats.collections %d", n)
	}
	for _, f := range []string{"capped", "clustered", "timeseries", "views", "internalCollections", "internalViews"} {
		mustLookup(t, st, "catalogStats", f)
	}

	// dbStats divides by the scale as a double; freeStorage adds the
	// free-space fields.
	one := runOK(t, db, bson.D{{Key: "dbStats", Value: 1}})
	wantAbsent(t, one, "freeStorageSize")
	kb := runOK(t, db, bson.D{{Key: "dbStats", Value: 1}, {Key: "scale", Value: 1024}, {Key: "freeStorage", Value: 1}})
	data := floatOf(t, mustLookup(t, one, "dataSize"))
	if got := floatOf(t, mustLookup(t, kb, "dataSize")); data == 0 || got != data/1024 {
		t.Fatalf("dataSize %v at scale 1, %v at scale 1024", data, got)
	}
	wantFields(t, kb, "db", "collections", "views", "objects", "avgObjSize", "dataSize", "storageSize", "freeStorageSize",
		"indexes", "indexSize", "indexFreeStorageSize", "totalSize", "totalFreeStorageSize", "scaleFactor", "ok")

	hi := runOK(t, admin, bson.D{{Key: "hostInfo", Value: 1}})
	if v := mustLookup(t, hi, "os", "version"); v.Type != bson.TypeString || v.StringValue() == "" {
		t.Fatalf("hostInfo os.version %v", v)
	}

	gp := runOK(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}}, {Key: "logLevel", Value: 1}})
	if v := mustLookup(t, gp, "logLevel", "value"); v.Type != bson.TypeInt32 || !mustLookup(t, gp, "logLevel", "settableAtRuntime").Boolean() || !mustLookup(t, gp, "logLevel", "settableAtStartup").Boolean() {
		t.Fatalf("getParameter showDetails: %v", gp)
	}
	all := runOK(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "allParameters", Value: true}, {Key: "showDetails", Value: true}}}})
	if mustLookup(t, all, "enableTestCommands", "settableAtRuntime").Boolean() {
		t.Fatalf("enableTestCommands settable at runtime: %v", all)
	}

	// hello: connectionId is an int32; client metadata comes with the
	// connection's first hello only (the driver's handshake sent it).
	h := runOK(t, admin, bson.D{{Key: "hello", Value: 1}})
	if v := mustLookup(t, h, "connectionId"); v.Type != bson.TypeInt32 {
		t.Fatalf("connectionId is a %v", v.Type)
	}
	runFail(t, admin, bson.D{{Key: "hello", Value: 1}, {Key: "client", Value: bson.D{{Key: "application", Value: bson.D{{Key: "name", Value: "again"}}}}}}, 186, "ClientMetadataCannotBeMutated")

	wantFields(t, runOK(t, db, bson.D{{Key: "dropDatabase", Value: 1}}), "ok")
}

// TestCreateExistingOtherOptions: create of an existing collection with
// other options is 48 NamespaceExists, whatever the options ask for;
// options of the wrong type or unknown still fail first, as MongoDB's
// IDL parses them before anything else.
func TestCreateExistingOtherOptions(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	runOK(t, db, bson.D{{Key: "create", Value: "c"}})
	runOK(t, db, bson.D{{Key: "create", Value: "c"}})
	for _, opt := range []bson.D{
		{{Key: "capped", Value: true}, {Key: "size", Value: 4096}},
		{{Key: "viewOn", Value: "other"}, {Key: "pipeline", Value: bson.A{}}},
		{{Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}},
		{{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}},
		{{Key: "validationLevel", Value: "moderate"}},
	} {
		ce := runFail(t, db, append(bson.D{{Key: "create", Value: "c"}}, opt...), 48, "NamespaceExists")
		if !strings.HasPrefix(ce.Message, "namespace "+db.Name()+".c already exists, but with different options") {
			t.Fatalf("%v: message %q", opt, ce.Message)
		}
	}
	runFail(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: "yes"}}, 14, "TypeMismatch")
	runFail(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "bogus", Value: 1}}, 40415, "Location40415")
}

// TestSessionAndCurrentOpCommands: startSession answers a new lsid and
// the session timeout, and the lsid is usable; currentOp lists the
// operations in progress as inprog, filtered by its other fields.
func TestSessionAndCurrentOpCommands(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")
	db := client.Database(dbName(t))
	r := runOK(t, admin, bson.D{{Key: "startSession", Value: 1}})
	id := mustLookup(t, r, "id", "id")
	if sub, data := id.Binary(); sub != bson.TypeBinaryUUID || len(data) != 16 || data[6]>>4 != 4 {
		t.Fatalf("startSession id %v", id)
	}
	if n := intOf(t, mustLookup(t, r, "timeoutMinutes")); n != 30 {
		t.Fatalf("timeoutMinutes %d", n)
	}
	other := runOK(t, admin, bson.D{{Key: "startSession", Value: 1}})
	if mustLookup(t, other, "id", "id").Equal(id) {
		t.Fatal("two sessions with one id")
	}
	lsid := bson.D{{Key: "id", Value: id}}
	runOK(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}})
	runOK(t, admin, bson.D{{Key: "endSessions", Value: bson.A{lsid}}})

	// The currentOp command sees itself (an operation in progress).
	cur := runOK(t, admin, bson.D{{Key: "currentOp", Value: 1}, {Key: "$all", Value: true}})
	var reply struct {
		Inprog []bson.Raw `bson:"inprog"`
	}
	if err := bson.Unmarshal(cur, &reply); err != nil || len(reply.Inprog) == 0 {
		t.Fatalf("currentOp: %v %v", cur, err)
	}
	found := false
	for _, op := range reply.Inprog {
		if c, err := op.LookupErr("command", "currentOp"); err == nil && c.Type != 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("currentOp does not list itself: %v", cur)
	}
	none := runOK(t, admin, bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: "no.such"}})
	if v := mustLookup(t, none, "inprog"); len(v.Array()) != 5 { // an empty BSON array
		t.Fatalf("filtered currentOp: %v", none)
	}
	runFail(t, db, bson.D{{Key: "currentOp", Value: 1}}, 13, "Unauthorized")
	runFail(t, admin, bson.D{{Key: "currentOp", Value: 1}, {Key: "$ownOps", Value: "x"}}, 14, "TypeMismatch")
}
