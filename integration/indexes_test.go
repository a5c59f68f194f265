package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestIndexCommands covers createIndexes, listIndexes, dropIndexes and
// collMod as the Go driver and mongosh use them.
func TestIndexCommands(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)

	t.Run("create and list", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		reply := runOK(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
			bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: -1}, {Key: "c.d", Value: 1}}}, {Key: "name", Value: "b_-1_c.d_1"}, {Key: "unique", Value: true}},
		}}})
		if intOf(t, mustLookup(t, reply, "numIndexesBefore")) != 1 || intOf(t, mustLookup(t, reply, "numIndexesAfter")) != 3 {
			t.Errorf("createIndexes reply %v", reply)
		}
		if !mustLookup(t, reply, "createdCollectionAutomatically").Boolean() {
			t.Errorf("createdCollectionAutomatically should be true: %v", reply)
		}
		again := runOK(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
		}}})
		if note, _ := again.Lookup("note").StringValueOK(); note != "all indexes already exist" {
			t.Errorf("second createIndexes: %v", again)
		}
		specs, err := db.Collection("c").Indexes().ListSpecifications(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, sp := range specs {
			names = append(names, sp.Name)
		}
		if strings.Join(names, ",") != "_id_,a_1,b_-1_c.d_1" {
			t.Errorf("listIndexes names %v", names)
		}
		if specs[2].Unique == nil || !*specs[2].Unique {
			t.Errorf("unique not listed: %+v", specs[2])
		}
		// The driver's helper names indexes as MongoDB does.
		name, err := db.Collection("c").Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}, {Key: "y", Value: -1}}})
		if err != nil || name != "x_1_y_-1" {
			t.Errorf("CreateOne = %q, %v", name, err)
		}
	})

	t.Run("conflicts and refusals", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
		}}})
		runFail(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "a_1"}},
		}}}, 86, "IndexKeySpecsConflict")
		runFail(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "other"}},
		}}}, 85, "IndexOptionsConflict")
		for _, kind := range []string{"text", "2dsphere", "2d", "hashed"} {
			runFail(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
				bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: kind}}}, {Key: "name", Value: "t_" + kind}},
			}}}, 67, "CannotCreateIndex")
		}
		runFail(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}}, {Key: "name", Value: "ttl"}, {Key: "expireAfterSeconds", Value: 10}},
		}}}, 67, "CannotCreateIndex")
		runFail(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "bogus"}, {Key: "colour", Value: "red"}},
		}}}, 197, "InvalidIndexSpecificationOption")
		runFail(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "_id_"}}, 72, "InvalidOptions")
		runFail(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "nope"}}, 27, "IndexNotFound")
		runFail(t, db, bson.D{{Key: "listIndexes", Value: "missing"}}, 26, "NamespaceNotFound")
	})

	t.Run("drop by name, key, list and star", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		_, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
			{Keys: bson.D{{Key: "a", Value: 1}}}, {Keys: bson.D{{Key: "b", Value: 1}}},
			{Keys: bson.D{{Key: "c", Value: 1}}}, {Keys: bson.D{{Key: "d", Value: 1}}}, {Keys: bson.D{{Key: "e", Value: 1}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := coll.Indexes().DropOne(testCtx(t), "a_1"); err != nil {
			t.Fatal(err)
		}
		r := runOK(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.D{{Key: "b", Value: 1}}}})
		if intOf(t, mustLookup(t, r, "nIndexesWas")) != 5 {
			t.Errorf("nIndexesWas: %v", r)
		}
		runOK(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.A{"c_1", "d_1"}}})
		runOK(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "*"}})
		specs, err := coll.Indexes().ListSpecifications(testCtx(t))
		if err != nil || len(specs) != 1 || specs[0].Name != "_id_" {
			t.Errorf("after dropping all: %v %v", specs, err)
		}
	})

	t.Run("collMod hidden and TTL", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
			bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 3600}},
		}}})
		r := runOK(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: true}}}})
		if mustLookup(t, r, "hidden_old").Boolean() || !mustLookup(t, r, "hidden_new").Boolean() {
			t.Errorf("collMod hidden reply %v", r)
		}
		r = runOK(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "expireAfterSeconds", Value: 60}}}})
		if intOf(t, mustLookup(t, r, "expireAfterSeconds_old")) != 3600 || intOf(t, mustLookup(t, r, "expireAfterSeconds_new")) != 60 {
			t.Errorf("collMod TTL reply %v", r)
		}
		specs, _ := db.Collection("c").Indexes().ListSpecifications(testCtx(t))
		var hidden, ttl bool
		for _, sp := range specs {
			raw := sp.KeysDocument
			_ = raw
			if sp.Name == "a_1" {
				hidden = true
			}
			if sp.Name == "at_1" && sp.ExpireAfterSeconds != nil && *sp.ExpireAfterSeconds == 60 {
				ttl = true
			}
		}
		if !hidden || !ttl {
			t.Errorf("listIndexes after collMod: %+v", specs)
		}
		// A hidden index is not used, even by a hint.
		_, err := db.Collection("c").Find(testCtx(t), bson.D{{Key: "a", Value: 1}}, options.Find().SetHint("a_1"))
		wantCode(t, err, 2, "BadValue")
	})
}

// TestUniqueIndexes: duplicates are refused with E11000 by inserts,
// updates and builds, and a refused build leaves nothing behind.
func TestUniqueIndexes(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)

	t.Run("insert and update", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "a@x"}}); err != nil {
			t.Fatal(err)
		}
		_, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "a@x"}})
		if !mongo.IsDuplicateKeyError(err) || !strings.Contains(err.Error(), `index: email_1 dup key: { email: "a@x" }`) {
			t.Errorf("duplicate insert: %v", err)
		}
		if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 3}, {Key: "email", Value: "b@x"}}); err != nil {
			t.Fatal(err)
		}
		_, err = coll.UpdateOne(testCtx(t), bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "a@x"}}}})
		if !mongo.IsDuplicateKeyError(err) {
			t.Errorf("duplicate update: %v", err)
		}
		// An update that keeps the key is no duplicate of itself.
		if _, err := coll.UpdateOne(testCtx(t), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
			t.Errorf("update keeping the key: %v", err)
		}
		// After a delete the key is free again.
		if _, err := coll.DeleteOne(testCtx(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 4}, {Key: "email", Value: "a@x"}}); err != nil {
			t.Errorf("insert after the holder was deleted: %v", err)
		}
		checkValid(t, db, "c")
	})

	t.Run("build aborts on duplicates", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		var docs []any
		for i := range 500 {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 499}})
		}
		if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
			t.Fatal(err)
		}
		_, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)})
		wantCode(t, err, 11000, "DuplicateKey")
		specs, _ := coll.Indexes().ListSpecifications(testCtx(t))
		if len(specs) != 1 {
			t.Errorf("an aborted build left indexes: %+v", specs)
		}
		var stats struct {
			TotalIndexSize int64 `bson:"totalIndexSize"`
			NIndexes       int   `bson:"nindexes"`
		}
		if err := db.RunCommand(testCtx(t), bson.D{{Key: "collStats", Value: "c"}}).Decode(&stats); err != nil {
			t.Fatal(err)
		}
		if stats.NIndexes != 1 {
			t.Errorf("collStats nindexes = %d", stats.NIndexes)
		}
		checkValid(t, db, "c")
		// Without the duplicate, the build succeeds.
		if _, err := coll.DeleteOne(testCtx(t), bson.D{{Key: "_id", Value: 499}}); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
			t.Fatal(err)
		}
		checkValid(t, db, "c")
	})

	t.Run("16 concurrent inserts of one key", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
			t.Fatal(err)
		}
		for round := range 5 {
			var wg sync.WaitGroup
			var mu sync.Mutex
			ok, dups := 0, 0
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: fmt.Sprint(round, "-", i)}, {Key: "k", Value: round}})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok++
					case mongo.IsDuplicateKeyError(err):
						dups++
					default:
						t.Errorf("insert: %v", err)
					}
				}()
			}
			wg.Wait()
			if ok != 1 || dups != 15 {
				t.Errorf("round %d: %d inserts succeeded and %d were duplicates, want 1 and 15", round, ok, dups)
			}
		}
		checkValid(t, db, "c")
	})

	t.Run("sharded collections need the shard key first", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: db.Name() + ".s"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}})
		runFail(t, db, bson.D{{Key: "createIndexes", Value: "s"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "email", Value: 1}}}, {Key: "name", Value: "email_1"}, {Key: "unique", Value: true}},
		}}}, 67, "CannotCreateIndex")
		coll := db.Collection("s")
		if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "tenant", Value: 1}, {Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertMany(testCtx(t), []any{
			bson.D{{Key: "tenant", Value: "t1"}, {Key: "email", Value: "a@x"}},
			bson.D{{Key: "tenant", Value: "t2"}, {Key: "email", Value: "a@x"}}, // another logical partition: allowed
		}); err != nil {
			t.Fatal(err)
		}
		_, err := coll.InsertOne(testCtx(t), bson.D{{Key: "tenant", Value: "t1"}, {Key: "email", Value: "a@x"}})
		if !mongo.IsDuplicateKeyError(err) {
			t.Errorf("duplicate in one logical partition: %v", err)
		}
		checkValid(t, db, "s")
	})
}

// TestTTLIndex: expired documents go away at the next pass; others stay.
func TestTTLIndex(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), TTLInterval: 200 * time.Millisecond})
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	coll := db.Collection("sessions")
	if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60)}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := coll.InsertMany(testCtx(t), []any{
		bson.D{{Key: "_id", Value: "old"}, {Key: "at", Value: now.Add(-2 * time.Minute)}},
		bson.D{{Key: "_id", Value: "oldest-in-array"}, {Key: "at", Value: bson.A{now, now.Add(-time.Hour)}}},
		bson.D{{Key: "_id", Value: "fresh"}, {Key: "at", Value: now}},
		bson.D{{Key: "_id", Value: "not-a-date"}, {Key: "at", Value: "yesterday"}},
		bson.D{{Key: "_id", Value: "no-field"}},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "TTL deletions", func() bool {
		n, err := coll.CountDocuments(testCtx(t), bson.D{})
		return err == nil && n == 3
	})
	if got := strings.Join(idsIn(t, coll, bson.D{}), ","); got != "fresh,no-field,not-a-date" {
		t.Errorf("after the TTL pass: %s", got)
	}
	st := runOK(t, client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if n := intOf(t, mustLookup(t, st, "metrics", "ttl", "deletedDocuments")); n != 2 {
		t.Errorf("serverStatus metrics.ttl.deletedDocuments = %d, want 2", n)
	}
	checkValid(t, db, "sessions")
}

// checkValid runs validate and fails the test if an index disagrees with
// the documents.
func checkValid(t testing.TB, db *mongo.Database, coll string) {
	t.Helper()
	r := runOK(t, db, bson.D{{Key: "validate", Value: coll}})
	if !mustLookup(t, r, "valid").Boolean() {
		t.Errorf("validate %s: %v", coll, r)
	}
}

// TestShardCollectionWithIndexes: sharding a collection that has indexes
// rewrites their entries for the documents' new keys; a unique index that
// does not start with the shard key prevents it.
func TestShardCollectionWithIndexes(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")
	db := client.Database(dbName(t))
	coll := db.Collection("c")
	var docs []any
	for i := range 300 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%02d", i%20)}, {Key: "n", Value: i % 7}})
	}
	if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
		{Keys: bson.D{{Key: "n", Value: 1}}},
		{Keys: bson.D{{Key: "n", Value: -1}, {Key: "tenant", Value: 1}}, Options: options.Index().SetUnique(true).SetName("uniq")},
	}); err == nil {
		t.Fatal("a unique index on {n: -1, tenant: 1} over duplicate pairs was built")
	}
	if specs, _ := coll.Indexes().ListSpecifications(testCtx(t)); len(specs) != 1 {
		t.Fatalf("a failed createIndexes left indexes: %+v", specs)
	}
	if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetUnique(true).SetName("uniq")}); err != nil {
		t.Fatal(err)
	}
	runFail(t, admin, bson.D{{Key: "shardCollection", Value: db.Name() + ".c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}}, 72, "InvalidOptions")
	if err := coll.Indexes().DropOne(testCtx(t), "uniq"); err != nil {
		t.Fatal(err)
	}
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: db.Name() + ".c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}})
	checkValid(t, db, "c")
	got := findAll(t, coll, bson.D{{Key: "n", Value: 3}}, options.Find())
	if len(got) != 43 {
		t.Errorf("n=3 after sharding: %d documents, want 43", len(got))
	}
	x := explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "n", Value: 3}}}}, "queryPlanner")
	if !strings.Contains(x.String(), `"indexName": "n_1"`) {
		t.Errorf("the index is not used after sharding: %v", x)
	}
}

// TestOnlineIndexBuild: writers keep writing while an index is built over
// existing documents, and the finished index agrees with the documents.
func TestOnlineIndexBuild(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	coll := db.Collection("c")
	const n = 20000
	for i := 0; i < n; i += 1000 {
		var docs []any
		for j := i; j < i+1000; j++ {
			docs = append(docs, bson.D{{Key: "_id", Value: j}, {Key: "v", Value: j % 1000}, {Key: "u", Value: j}, {Key: "pad", Value: strings.Repeat("x", 100)}})
		}
		if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
			{Keys: bson.D{{Key: "v", Value: 1}}},
			{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetUnique(true)},
		})
		done <- err
	}()
	writes := 0
	for building := true; building; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			building = false
		default:
			id := n + writes
			if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: id}, {Key: "v", Value: -1}, {Key: "u", Value: id}}); err != nil {
				t.Fatal(err)
			}
			if _, err := coll.UpdateOne(testCtx(t), bson.D{{Key: "_id", Value: writes * 7 % n}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: -2}}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := coll.DeleteOne(testCtx(t), bson.D{{Key: "_id", Value: (writes*13 + 1) % n}}); err != nil {
				t.Fatal(err)
			}
			writes++
		}
	}
	t.Logf("%d rounds of writes during the build", writes)
	if writes == 0 {
		t.Log("the build finished before any write: nothing ran alongside it")
	}
	checkValid(t, db, "c")
	for _, v := range []int{-2, -1, 5} {
		got := findAll(t, coll, bson.D{{Key: "v", Value: v}}, options.Find())
		want := findAll(t, coll, bson.D{{Key: "v", Value: v}}, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
		if !sameIDSet(got, want) {
			t.Errorf("v=%d: %d by the index, %d by a scan", v, len(got), len(want))
		}
	}
}

// TestIndexRequestUnits: index entries are priced in writes (0.5 RU
// each, plus their bytes), and an index read charges the documents it
// fetched, not the collection.
func TestIndexRequestUnits(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(1))
	db := client.Database(dbName(t))
	plain, indexed := db.Collection("plain"), db.Collection("indexed")
	if _, err := indexed.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}}}, {Keys: bson.D{{Key: "b", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	base := lastRequestStats(t, db).Charge
	if _, err := indexed.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	with := lastRequestStats(t, db).Charge
	// two more entries: 2 x 0.5 RU plus their bytes' share
	if with < base+1 || with > base+1.2 {
		t.Errorf("insert: %.2f RU with two indexes, %.2f without", with, base)
	}
	var docs []any
	for i := 2; i < 1000; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i}, {Key: "b", Value: "y"}})
	}
	if _, err := indexed.InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	findCharge := func(c *mongo.Collection) float64 {
		if n := len(findAll(t, c, bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 10}, {Key: "$lt", Value: 20}}}}, options.Find())); n != 10 {
			t.Fatalf("%d documents", n)
		}
		return lastRequestStats(t, db).Charge
	}
	scan, ix := findCharge(plain), findCharge(indexed)
	if ix >= scan/2 {
		t.Errorf("a 10-document index read costs %.2f RU, the collection scan %.2f", ix, scan)
	}
}

// TestIndexWriteErrors: a document an index refuses is a write error of
// its own statement; the other documents are written.
func TestIndexWriteErrors(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	coll := db.Collection("c")
	if _, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}},
		{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true)},
	}); err != nil {
		t.Fatal(err)
	}
	// Parallel arrays: 171 for that document only (unordered: the rest go in).
	_, err := coll.InsertMany(testCtx(t), []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{1}}, {Key: "b", Value: bson.A{2}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1}, {Key: "b", Value: bson.A{2, 3}}},
	}, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Code != 171 || bwe.WriteErrors[0].Index != 0 {
		t.Fatalf("parallel arrays: %v", err)
	}
	if n, _ := coll.CountDocuments(testCtx(t), bson.D{}); n != 1 {
		t.Errorf("%d documents, want 1", n)
	}
	// updateMany into a unique violation: the documents before it stay
	// updated and the error names the index.
	if _, err := coll.InsertMany(testCtx(t), []any{
		bson.D{{Key: "_id", Value: 10}, {Key: "g", Value: 1}},
		bson.D{{Key: "_id", Value: 11}, {Key: "g", Value: 1}},
		bson.D{{Key: "_id", Value: 12}, {Key: "g", Value: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	res, err := coll.UpdateMany(testCtx(t), bson.D{{Key: "g", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "u", Value: "same"}}}})
	if !mongo.IsDuplicateKeyError(err) || !strings.Contains(err.Error(), "index: u_1") {
		t.Fatalf("updateMany into a unique violation: %v", err)
	}
	if res == nil || res.ModifiedCount != 1 {
		t.Errorf("updateMany result %+v, want 1 modified before the violation", res)
	}
	if n, _ := coll.CountDocuments(testCtx(t), bson.D{{Key: "u", Value: "same"}}); n != 1 {
		t.Errorf("%d documents hold the unique value, want 1", n)
	}
	checkValid(t, db, "c")
}
