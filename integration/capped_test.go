package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Capped collections and tailable cursors, as MongoDB 7.0 answers them.

// naturalIDs are the _ids of coll in natural order (no sort), as the
// driver's Find returns them.
func naturalIDs(t *testing.T, coll *mongo.Collection, opts ...options.Lister[options.FindOptions]) []string {
	t.Helper()
	ctx := testCtx(t)
	cur, err := coll.Find(ctx, bson.D{}, opts...)
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatalf("find: %v", err)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = idString(t, d)
	}
	return ids
}

func joined(ids []string) string { return strings.Join(ids, ",") }

// TestCappedEvictsByMax: past max documents the oldest go, in the
// insert's transaction, and natural order stays insertion order (not _id
// order) after eviction, forwards and with {$natural: -1}.
func TestCappedEvictsByMax(t *testing.T) {
	s := startTestServer(t)
	db := newTestClient(t, s).Database(dbName(t))
	ctx := testCtx(t)
	runOK(t, db, bson.D{{Key: "create", Value: "log"}, {Key: "capped", Value: true}, {Key: "size", Value: 1 << 20}, {Key: "max", Value: 3}})
	coll := db.Collection("log")
	// _ids out of order: natural order must be the insertion order.
	for _, id := range []int{5, 1, 9, 3, 7} {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := joined(naturalIDs(t, coll)); got != "9,3,7" {
		t.Fatalf("natural order after eviction: %s, want 9,3,7", got)
	}
	if got := joined(naturalIDs(t, coll, options.Find().SetSort(bson.D{{Key: "$natural", Value: -1}}))); got != "7,3,9" {
		t.Fatalf("$natural: -1: %s, want 7,3,9", got)
	}
	// A batch evicts within itself.
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 100}}, bson.D{{Key: "_id", Value: 50}}, bson.D{{Key: "_id", Value: 75}}, bson.D{{Key: "_id", Value: 60}}}); err != nil {
		t.Fatal(err)
	}
	if got := joined(naturalIDs(t, coll)); got != "50,75,60" {
		t.Fatalf("after a batch: %s, want 50,75,60", got)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Fatalf("count %d %v, want 3", n, err)
	}
	// _id stays unique, and lookups by _id find documents.
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 75}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
		t.Fatalf("duplicate _id: %v", err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 60}}).Err(); err != nil {
		t.Fatalf("find by _id: %v", err)
	}
	// Deletes are allowed (MongoDB 5.0+), and updates.
	if r, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 75}}); err != nil || r.DeletedCount != 1 {
		t.Fatalf("delete: %+v %v", r, err)
	}
	if r, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 60}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil || r.ModifiedCount != 1 {
		t.Fatalf("update: %+v %v", r, err)
	}
	if got := joined(naturalIDs(t, coll)); got != "50,60" {
		t.Fatalf("after delete: %s, want 50,60", got)
	}
	// isCapped and stats as mongosh reads them.
	stats := runOK(t, db, bson.D{{Key: "collStats", Value: "log"}})
	if !mustLookup(t, stats, "capped").Boolean() || intOf(t, mustLookup(t, stats, "max")) != 3 || intOf(t, mustLookup(t, stats, "maxSize")) != 1<<20 {
		t.Fatalf("collStats: %v", stats)
	}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "log"}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	opts := specs[0].Options
	if !mustLookup(t, opts, "capped").Boolean() || intOf(t, mustLookup(t, opts, "size")) != 1<<20 || intOf(t, mustLookup(t, opts, "max")) != 3 {
		t.Fatalf("listCollections options: %v", opts)
	}
}

// TestCappedEvictsBySize: the data bytes stay within the size, which
// MongoDB rounds up to a multiple of 256; the newest documents stay.
func TestCappedEvictsBySize(t *testing.T) {
	s := startTestServer(t)
	db := newTestClient(t, s).Database(dbName(t))
	ctx := testCtx(t)
	runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: 1000}})
	coll := db.Collection("c")
	pad := strings.Repeat("x", 200)
	for i := range 20 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}); err != nil {
			t.Fatal(err)
		}
	}
	stats := runOK(t, db, bson.D{{Key: "collStats", Value: "c"}})
	if got := intOf(t, mustLookup(t, stats, "maxSize")); got != 1024 {
		t.Fatalf("maxSize %d, want 1024 (1000 rounded up to 256)", got)
	}
	if size := intOf(t, mustLookup(t, stats, "size")); size > 1024 || size < 800 {
		t.Fatalf("data size %d, want at most 1024 and near it", size)
	}
	ids := naturalIDs(t, coll)
	if len(ids) != 4 || joined(ids) != "16,17,18,19" {
		t.Fatalf("kept %v, want the newest 16..19", ids)
	}
	// A document larger than the collection is refused.
	_, err := coll.InsertOne(ctx, bson.D{{Key: "big", Value: strings.Repeat("y", 2000)}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
		t.Fatalf("too large a document: %v", err)
	}
}

// TestCappedBadInput: create's and convertToCapped's errors, sharding and
// transactions refused, tailable on a collection that is not capped.
func TestCappedBadInput(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	ctx := testCtx(t)
	for _, tc := range []struct {
		cmd  bson.D
		code int32
		name string
		msg  string
	}{
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}}, 72, "InvalidOptions", "the 'size' field is required when 'capped' is true"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "max", Value: 10}}, 72, "InvalidOptions", "the 'size' field is required when 'capped' is true"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: 0}}, 51024, "Location51024", "BSON field 'size' value must be >= 1, actual value '0'"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: -500}}, 51024, "Location51024", "BSON field 'size' value must be >= 1, actual value '-500'"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "size", Value: 4096}}, 72, "InvalidOptions", "the 'capped' field needs to be true when either the 'size' or 'max' fields are present"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "max", Value: 5}}, 72, "InvalidOptions", "the 'capped' field needs to be true when either the 'size' or 'max' fields are present"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: "big"}}, 14, "TypeMismatch", "BSON field 'create.size' is the wrong type 'string', expected types '[long, int, decimal, double]'"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: "yes"}, {Key: "size", Value: 4096}}, 14, "TypeMismatch", "BSON field 'create.capped' is the wrong type 'string', expected types '[bool, long, int, decimal, double]'"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}, {Key: "max", Value: int64(1) << 31}}, 2, "BadValue", "max in a capped collection has to be < 2^31 or not set"},
		{bson.D{{Key: "convertToCapped", Value: "nothere"}, {Key: "size", Value: 4096}}, 26, "NamespaceNotFound", "source database " + db.Name() + " does not exist"},
	} {
		ce := runFail(t, db, tc.cmd, tc.code, tc.name)
		if ce.Message != tc.msg {
			t.Errorf("%v: message %q, want %q", tc.cmd, ce.Message, tc.msg)
		}
	}
	if names, _ := db.ListCollectionNames(ctx, bson.D{}); len(names) != 0 {
		t.Fatalf("refused creates left collections: %v", names)
	}

	runOK(t, db, bson.D{{Key: "create", Value: "plain"}})
	runOK(t, db, bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}})
	ce := runFail(t, db, bson.D{{Key: "convertToCapped", Value: "nothere"}, {Key: "size", Value: 4096}}, 26, "NamespaceNotFound")
	if want := "source collection " + db.Name() + ".nothere does not exist"; ce.Message != want {
		t.Errorf("convertToCapped of a missing collection: %q, want %q", ce.Message, want)
	}
	runFail(t, db, bson.D{{Key: "convertToCapped", Value: "plain"}}, 40414, "Location40414")
	runFail(t, db, bson.D{{Key: "convertToCapped", Value: "plain"}, {Key: "size", Value: 0}}, 51024, "Location51024")

	// Sharding a capped collection is refused, as MongoDB refuses it.
	ce = runFail(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: db.Name() + ".capped"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}, 72, "InvalidOptions")
	if ce.Message != "can't shard a capped collection" {
		t.Errorf("shardCollection: %q", ce.Message)
	}

	// tailable needs a capped collection; awaitData needs tailable.
	ce = runFail(t, db, bson.D{{Key: "find", Value: "plain"}, {Key: "tailable", Value: true}}, 2, "BadValue")
	if !strings.Contains(ce.Message, "tailable cursor requested on non capped collection") {
		t.Errorf("tailable on plain: %q", ce.Message)
	}
	runFail(t, db, bson.D{{Key: "find", Value: "capped"}, {Key: "awaitData", Value: true}}, 9, "FailedToParse")
	runFail(t, db, bson.D{{Key: "find", Value: "capped"}, {Key: "tailable", Value: true}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}}, 2, "BadValue")

	// Writes to a capped collection in a transaction are refused.
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		_, err := db.Collection("capped").InsertOne(sc, bson.D{{Key: "x", Value: 1}})
		return nil, err
	})
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(263) {
		t.Fatalf("insert into a capped collection in a transaction: %v", err)
	}
}

// TestConvertToCapped keeps the newest documents that fit, in their
// natural order, and makes the collection capped.
func TestConvertToCapped(t *testing.T) {
	s := startTestServer(t)
	db := newTestClient(t, s).Database(dbName(t))
	ctx := testCtx(t)
	coll := db.Collection("c")
	pad := strings.Repeat("p", 200)
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	runOK(t, db, bson.D{{Key: "convertToCapped", Value: "c"}, {Key: "size", Value: 1024}})
	if got := joined(naturalIDs(t, coll)); got != "16,17,18,19" {
		t.Fatalf("kept %s, want 16,17,18,19", got)
	}
	stats := runOK(t, db, bson.D{{Key: "collStats", Value: "c"}})
	if !mustLookup(t, stats, "capped").Boolean() || intOf(t, mustLookup(t, stats, "maxSize")) != 1024 {
		t.Fatalf("collStats after convertToCapped: %v", stats)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil || joined(names) != "c" {
		t.Fatalf("collections %v %v: the temporary one must be gone", names, err)
	}
	// It is capped now: new documents evict the oldest.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 100}, {Key: "pad", Value: pad}}); err != nil {
		t.Fatal(err)
	}
	if got := joined(naturalIDs(t, coll)); got != "17,18,19,100" {
		t.Fatalf("after an insert: %s", got)
	}
}

// TestTailableAwaitData: a tailable awaitData cursor stays open at the
// end; its getMore returns as soon as another client's insert commits,
// and comes back empty after maxAwaitTimeMS when nothing comes.
func TestTailableAwaitData(t *testing.T) {
	s := startTestServer(t)
	reader := newTestClient(t, s).Database(dbName(t))
	writer := newTestClient(t, s).Database(dbName(t))
	ctx := testCtx(t)
	runOK(t, reader, bson.D{{Key: "create", Value: "feed"}, {Key: "capped", Value: true}, {Key: "size", Value: 1 << 20}})
	feed := writer.Collection("feed")
	if _, err := feed.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	cur, err := reader.Collection("feed").Find(ctx, bson.D{}, options.Find().
		SetCursorType(options.TailableAwait).SetMaxAwaitTime(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	var seen []string
	for len(seen) < 2 && cur.Next(ctx) {
		seen = append(seen, idString(t, cur.Current))
	}
	if joined(seen) != "2,1" {
		t.Fatalf("first documents %v, want 2,1", seen)
	}
	if cur.ID() == 0 {
		t.Fatal("the tailable cursor was closed at the end")
	}

	// Nothing comes: the getMore waits maxAwaitTimeMS and returns empty,
	// the cursor still open.
	start := time.Now()
	if cur.TryNext(ctx) {
		t.Fatalf("a document came from nowhere: %v", cur.Current)
	}
	if waited := time.Since(start); waited < 1500*time.Millisecond || waited > 10*time.Second {
		t.Fatalf("an empty getMore took %v, want about the 2s maxAwaitTimeMS", waited)
	}
	if cur.Err() != nil || cur.ID() == 0 {
		t.Fatalf("after an empty wait: %v, id %d", cur.Err(), cur.ID())
	}

	// An insert by another client wakes the waiting getMore at once.
	cur2, err := reader.Collection("feed").Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 3}}}}, options.Find().
		SetCursorType(options.TailableAwait).SetMaxAwaitTime(8*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cur2.Close(ctx)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = feed.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "dup", Value: true}}) // refused: no wake-up document
		_, _ = feed.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
	}()
	start = time.Now()
	if !cur2.Next(ctx) {
		t.Fatalf("no document: %v", cur2.Err())
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Fatalf("the insert woke the getMore after %v", waited)
	}
	if got := idString(t, cur2.Current); got != "3" {
		t.Fatalf("woken with %s, want 3", got)
	}
	// The first cursor sees it too.
	if !cur.Next(ctx) || idString(t, cur.Current) != "3" {
		t.Fatalf("first cursor: %v %v", cur.Current, cur.Err())
	}
}

// TestTailableNotAwait: a tailable cursor without awaitData returns
// empty batches at once and reads on; getMore refuses maxTimeMS on it;
// an empty capped collection gives no cursor; eviction past the cursor's
// position is CappedPositionLost.
func TestTailableNotAwait(t *testing.T) {
	s := startTestServer(t)
	db := newTestClient(t, s).Database(dbName(t))
	ctx := testCtx(t)
	runOK(t, db, bson.D{{Key: "create", Value: "t"}, {Key: "capped", Value: true}, {Key: "size", Value: 1 << 20}, {Key: "max", Value: 3}})
	reply := runCursor(t, db, bson.D{{Key: "find", Value: "t"}, {Key: "tailable", Value: true}})
	if reply.Cursor.ID != 0 {
		t.Fatalf("a tailable cursor on an empty collection stayed open: %d", reply.Cursor.ID)
	}
	coll := db.Collection("t")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	reply = runCursor(t, db, bson.D{{Key: "find", Value: "t"}, {Key: "tailable", Value: true}})
	id := reply.Cursor.ID
	if id == 0 || len(reply.batch()) != 1 {
		t.Fatalf("find: %+v", reply)
	}
	getMore := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "t"}}
	// No deadline: with one the driver sends maxTimeMS, which MongoDB
	// refuses on a getMore of a cursor without awaitData.
	noDeadline := context.Background()
	start := time.Now()
	if r := runCursorCtx(t, noDeadline, db, getMore); len(r.batch()) != 0 || r.Cursor.ID != id {
		t.Fatalf("empty getMore: %+v", r)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("a getMore without awaitData waited")
	}
	runFail(t, db, append(getMore, bson.E{Key: "maxTimeMS", Value: 100}), 2, "BadValue")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if r := runCursorCtx(t, noDeadline, db, getMore); len(r.batch()) != 1 || idString(t, r.batch()[0]) != "2" {
		t.Fatalf("getMore after an insert: %+v", r)
	}
	// Three more evict 1 and 2, the cursor's position included.
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "_id", Value: 5}}}); err != nil {
		t.Fatal(err)
	}
	ce := wantCode(t, db.RunCommand(noDeadline, getMore).Err(), 136, "CappedPositionLost")
	if !strings.Contains(ce.Message, "position in capped collection being deleted") {
		t.Errorf("message %q", ce.Message)
	}
}

// TestShowRecordID: find's showRecordId adds $recordId, an int64 stable
// for the document's life, after the projection, in every plan (point,
// scan, blocking sort, index); {$meta: "recordId"} projects the same
// value. A capped collection's record ids follow insertion order.
func TestShowRecordID(t *testing.T) {
	s := startTestServer(t)
	db := newTestClient(t, s).Database(dbName(t))
	ctx := testCtx(t)
	coll := db.Collection("c")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 3}},
		bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}},
		bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: 2}},
	}); err != nil {
		t.Fatal(err)
	}
	rids := func(cmd bson.D, field string) map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		for _, d := range runCursor(t, db, cmd).batch() {
			v := mustLookup(t, d, field)
			if v.Type != bson.TypeInt64 {
				t.Fatalf("%v: %s is %v", cmd, field, v.Type)
			}
			keys := keysOf(t, d)
			if keys[len(keys)-1] != field {
				t.Fatalf("%v: %s is not last in %v", cmd, field, d)
			}
			out[idString(t, d)] = v.Int64()
		}
		return out
	}
	base := rids(bson.D{{Key: "find", Value: "c"}, {Key: "showRecordId", Value: true}}, "$recordId")
	if len(base) != 3 || base["1"] == base["2"] || base["2"] == base["3"] {
		t.Fatalf("record ids %v: want three distinct", base)
	}
	for _, cmd := range []bson.D{
		{{Key: "find", Value: "c"}, {Key: "showRecordId", Value: true}, {Key: "sort", Value: bson.D{{Key: "x", Value: -1}}}},
		{{Key: "find", Value: "c"}, {Key: "showRecordId", Value: true}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 2}}}},
		{{Key: "find", Value: "c"}, {Key: "showRecordId", Value: true}, {Key: "projection", Value: bson.D{{Key: "x", Value: 0}}}, {Key: "sort", Value: bson.D{{Key: "x", Value: 1}}}},
	} {
		for id, rid := range rids(cmd, "$recordId") {
			if base[id] != rid {
				t.Fatalf("%v: _id %s has record id %d, before %d", cmd, id, rid, base[id])
			}
		}
	}
	meta := rids(bson.D{{Key: "find", Value: "c"}, {Key: "projection", Value: bson.D{{Key: "x", Value: 1}, {Key: "r", Value: bson.D{{Key: "$meta", Value: "recordId"}}}}}}, "r")
	for id, rid := range meta {
		if base[id] != rid {
			t.Fatalf("$meta recordId of %s: %d, want %d", id, rid, base[id])
		}
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	for id, rid := range rids(bson.D{{Key: "find", Value: "c"}, {Key: "showRecordId", Value: true}, {Key: "filter", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: 1}}}}}, {Key: "hint", Value: "x_1"}}, "$recordId") {
		if base[id] != rid {
			t.Fatalf("through an index, _id %s has record id %d, want %d", id, rid, base[id])
		}
	}
	runFail(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "projection", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}}}, 2, "BadValue")

	runOK(t, db, bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}})
	if _, err := db.Collection("capped").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 9}}, bson.D{{Key: "_id", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	docs := runCursor(t, db, bson.D{{Key: "find", Value: "capped"}, {Key: "showRecordId", Value: true}}).batch()
	if len(docs) != 2 || idString(t, docs[0]) != "9" || mustLookup(t, docs[0], "$recordId").Int64() >= mustLookup(t, docs[1], "$recordId").Int64() {
		t.Fatalf("capped record ids: %v", docs)
	}
}

// TestCappedConcurrentInserts: inserts from several clients at once into
// one capped collection all succeed (they serialise on its insertion
// sequence), the collection ends at max documents, and a tailable cursor
// that read along saw every document once, in insertion order.
func TestCappedConcurrentInserts(t *testing.T) {
	s := startTestServer(t)
	db := newTestClient(t, s).Database(dbName(t))
	ctx := testCtx(t)
	runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: 1 << 20}, {Key: "max", Value: 1000}})
	coll := db.Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "first"}}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 40
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			c := newTestClient(t, s).Database(db.Name()).Collection("c")
			for i := range each {
				if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: w*1000 + i}, {Key: "w", Value: w}, {Key: "i", Value: i}}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetCursorType(options.TailableAwait).SetMaxAwaitTime(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	for range writers {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent insert: %v", err)
		}
	}
	seen := map[string]bool{}
	last := map[int32]int32{0: -1, 1: -1, 2: -1, 3: -1}
	for len(seen) < writers*each+1 && cur.Next(ctx) {
		id := idString(t, cur.Current)
		if seen[id] {
			t.Fatalf("%s seen twice", id)
		}
		seen[id] = true
		if w, err := cur.Current.LookupErr("w"); err == nil {
			i := mustLookup(t, cur.Current, "i").Int32()
			if i != last[w.Int32()]+1 {
				t.Fatalf("writer %d: %d after %d: not in insertion order", w.Int32(), i, last[w.Int32()])
			}
			last[w.Int32()] = i
		}
	}
	if len(seen) != writers*each+1 {
		t.Fatalf("the tailable cursor saw %d documents, want %d: %v", len(seen), writers*each+1, cur.Err())
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != writers*each+1 {
		t.Fatalf("count %d %v", n, err)
	}
}
