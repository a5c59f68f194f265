// Command govone is a client scenario with the v1 Go driver
// (go.mongodb.org/mongo-driver v1.17), which many services still run: it
// connects to $PARSEC_URI, exercises the handshake, catalog, CRUD, the
// find language, count/distinct/explain, update/findAndModify/bulk,
// cursors, sessions and compression, and prints "govone: ok". It is its own
// module so the main module keeps only the v2 driver; TestClients runs it
// with `go run .`.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/readpref"
	"go.mongodb.org/mongo-driver/mongo/writeconcern"
)

func main() {
	uri := os.Getenv("PARSEC_URI")
	if uri == "" {
		fail("PARSEC_URI is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run(ctx, uri)
	for id, name := range map[byte]string{1: "snappy", 2: "zlib", 3: "zstd"} {
		compression(ctx, uri, id, name)
	}
	fmt.Println("govone: ok")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "govone: "+format+"\n", args...)
	os.Exit(1)
}

func check(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func want[T any](got, want T, what string) {
	if !reflect.DeepEqual(got, want) {
		fail("%s: got %v, want %v", what, got, want)
	}
}

// monitor records the names of the commands the client starts.
type monitor struct{ started []*event.CommandStartedEvent }

func (m *monitor) reset() { m.started = nil }

func (m *monitor) count(name string) int {
	n := 0
	for _, e := range m.started {
		if e.CommandName == name {
			n++
		}
	}
	return n
}

func run(ctx context.Context, uri string) {
	mon := &monitor{}
	opts := options.Client().ApplyURI(uri).
		SetCompressors([]string{"zstd", "snappy", "zlib"}).
		SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) { mon.started = append(mon.started, e) }})
	client, err := mongo.Connect(ctx, opts)
	check(err, "connect")
	defer func() { _ = client.Disconnect(context.Background()) }()
	check(client.Ping(ctx, readpref.Primary()), "ping")

	// Handshake and server commands.
	var hello bson.M
	check(client.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello), "hello")
	want(hello["msg"], any("isdbgrid"), "hello.msg")
	want(hello["maxWireVersion"], any(int32(21)), "hello.maxWireVersion")
	var build bson.M
	check(client.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&build), "buildInfo")
	want(build["version"], any("7.0.0"), "buildInfo.version")
	var status bson.M
	check(client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status), "serverStatus")
	want(status["process"], any("mongos"), "serverStatus.process")

	// Catalog.
	db := client.Database("govone")
	check(db.Drop(ctx), "dropDatabase")
	check(db.CreateCollection(ctx, "made"), "create")
	coll := db.Collection("items")
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "first"}})
	check(err, "insertOne")
	names, err := db.ListCollectionNames(ctx, bson.D{})
	check(err, "listCollections")
	sort.Strings(names)
	want(names, []string{"items", "made"}, "collection names")
	dbs, err := client.ListDatabaseNames(ctx, bson.D{{Key: "name", Value: "govone"}})
	check(err, "listDatabases")
	want(dbs, []string{"govone"}, "database names")
	check(client.Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "govone.made"}, {Key: "to", Value: "govone.renamed"}}).Err(), "renameCollection")
	check(db.Collection("renamed").Drop(ctx), "drop")
	var collStats bson.M
	check(db.RunCommand(ctx, bson.D{{Key: "collStats", Value: "items"}}).Decode(&collStats), "collStats")
	want(collStats["ns"], any("govone.items"), "collStats.ns")

	// InsertMany (document sequence), types round trip.
	oid := primitive.NewObjectID()
	now := time.Now().UTC().Truncate(time.Millisecond)
	dec, _ := primitive.ParseDecimal128("12.50")
	docs := make([]any, 0, 1000)
	for i := range 1000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 10}, {Key: "tags", Value: bson.A{fmt.Sprint("t", i%3)}}})
	}
	res, err := coll.InsertMany(ctx, docs)
	check(err, "insertMany")
	want(len(res.InsertedIDs), 1000, "inserted ids")
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: oid}, {Key: "at", Value: primitive.NewDateTimeFromTime(now)}, {Key: "price", Value: dec}, {Key: "n", Value: int64(1) << 40}, {Key: "bin", Value: primitive.Binary{Data: []byte{1, 2}}}})
	check(err, "insert typed")
	var typed struct {
		At    time.Time            `bson:"at"`
		Price primitive.Decimal128 `bson:"price"`
		N     int64                `bson:"n"`
		Bin   []byte               `bson:"bin"`
	}
	check(coll.FindOne(ctx, bson.D{{Key: "_id", Value: oid}}).Decode(&typed), "find typed")
	want(typed.At.Equal(now), true, "date round trip")
	want(typed.Price.String(), "12.50", "decimal round trip")
	want(typed.N, int64(1)<<40, "int64 round trip")
	want(typed.Bin, []byte{1, 2}, "binary round trip")

	// Duplicate key.
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}})
	want(mongo.IsDuplicateKeyError(err), true, fmt.Sprintf("duplicate key error (%v)", err))

	// Find language, cursors over several batches.
	mon.reset()
	cur, err := coll.Find(ctx, bson.D{{Key: "g", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}, options.Find().SetBatchSize(40).SetSort(bson.D{{Key: "_id", Value: -1}}))
	check(err, "find")
	var got []struct {
		ID int `bson:"_id"`
	}
	check(cur.All(ctx, &got), "cursor")
	want(len(got), 200, "find $in")
	want(got[0].ID, 992, "sorted descending")
	want(mon.count("getMore"), 4, "getMores for 200 documents in batches of 40")
	n := 0
	cur, err = coll.Find(ctx, bson.D{
		{Key: "$expr", Value: bson.D{{Key: "$lt", Value: bson.A{"$_id", 100}}}},
		{Key: "tags", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$regex", Value: "^t[12]$"}}}}},
	}, options.Find().SetProjection(bson.D{{Key: "tags", Value: 0}}).SetSkip(10).SetLimit(50).SetBatchSize(7))
	check(err, "find $expr")
	for cur.Next(ctx) {
		if cur.Current.Lookup("tags").Type != 0 {
			fail("projection kept tags: %v", cur.Current)
		}
		n++
	}
	check(cur.Err(), "cursor")
	want(n, 50, "skip/limit")
	// Early close kills the server cursor.
	mon.reset()
	cur, err = coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(5))
	check(err, "find")
	cur.Next(ctx)
	check(cur.Close(ctx), "close cursor")
	want(mon.count("killCursors"), 1, "killCursors")

	// Count, distinct, explain.
	est, err := coll.EstimatedDocumentCount(ctx)
	check(err, "estimatedDocumentCount")
	want(est, int64(1002), "estimated count")
	var cnt bson.M
	check(db.RunCommand(ctx, bson.D{{Key: "count", Value: "items"}, {Key: "query", Value: bson.D{{Key: "g", Value: 3}}}}).Decode(&cnt), "count")
	want(fmt.Sprint(cnt["n"]), "100", "count g=3")
	vals, err := coll.Distinct(ctx, "tags", bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 10}}}})
	check(err, "distinct")
	want(len(vals), 3, "distinct tags")
	var plan bson.M
	check(db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "items"}, {Key: "filter", Value: bson.D{{Key: "g", Value: 1}}}}}, {Key: "verbosity", Value: "executionStats"}}).Decode(&plan), "explain")
	if _, ok := plan["queryPlanner"]; !ok {
		fail("explain without queryPlanner: %v", plan)
	}

	// Updates, findAndModify, bulk.
	ur, err := coll.UpdateMany(ctx, bson.D{{Key: "g", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "zero", Value: true}}}, {Key: "$push", Value: bson.D{{Key: "tags", Value: "z"}}}})
	check(err, "updateMany")
	want([]int64{ur.MatchedCount, ur.ModifiedCount}, []int64{100, 100}, "updateMany counts")
	ur, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "up"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}, options.Update().SetUpsert(true))
	check(err, "upsert")
	want(ur.UpsertedID, any("up"), "upserted id")
	ur, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "tags.$[t]", Value: "Z"}}}}, options.Update().SetArrayFilters(options.ArrayFilters{Filters: []any{bson.D{{Key: "t", Value: "z"}}}}))
	check(err, "arrayFilters")
	want(ur.ModifiedCount, int64(1), "arrayFilters modified")
	rr, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "replaced", Value: true}})
	check(err, "replaceOne")
	want(rr.ModifiedCount, int64(1), "replaced")
	var fam bson.M
	check(coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: "up"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 10}}}}, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&fam), "findOneAndUpdate")
	want(fmt.Sprint(fam["v"]), "11", "findOneAndUpdate after")
	check(coll.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: "up"}}).Decode(&fam), "findOneAndDelete")
	err = coll.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: "up"}}).Err()
	want(errors.Is(err, mongo.ErrNoDocuments), true, "findOneAndDelete of nothing")
	br, err := coll.BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: "b"}}),
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "b"}}).SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}),
		mongo.NewUpdateManyModel().SetFilter(bson.D{{Key: "g", Value: 9}}).SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "nine", Value: true}}}}),
		mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: "r"}}).SetReplacement(bson.D{{Key: "r", Value: 1}}).SetUpsert(true),
		mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: 2}}),
		mongo.NewDeleteManyModel().SetFilter(bson.D{{Key: "g", Value: 8}}),
	})
	check(err, "bulkWrite")
	want([]int64{br.InsertedCount, br.MatchedCount, br.ModifiedCount, br.UpsertedCount, br.DeletedCount}, []int64{1, 101, 101, 1, 101}, "bulkWrite counts")
	_, err = coll.BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: "b"}}),
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: "c"}}),
	}, options.BulkWrite().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Code != 11000 || bwe.WriteErrors[0].Index != 0 {
		fail("unordered bulk with a duplicate: %v", err)
	}

	// Write concerns.
	j := db.Collection("items", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	_, err = j.InsertOne(ctx, bson.D{{Key: "_id", Value: "journaled"}})
	check(err, "insert j:true")

	// Sessions: a session's commands share its lsid; retryable writes
	// carry txnNumber.
	mon.reset()
	sess, err := client.StartSession()
	check(err, "startSession")
	err = mongo.WithSession(ctx, sess, func(sc mongo.SessionContext) error {
		if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: "s"}}); err != nil {
			return err
		}
		return coll.FindOne(sc, bson.D{{Key: "_id", Value: "s"}}).Err()
	})
	check(err, "session")
	sess.EndSession(ctx)
	var lsids []string
	for _, e := range mon.started {
		lsids = append(lsids, e.Command.Lookup("lsid", "id").String())
		if e.CommandName == "insert" && e.Command.Lookup("txnNumber").Type == 0 {
			fail("retryable insert without txnNumber")
		}
	}
	if len(lsids) != 2 || lsids[0] != lsids[1] {
		fail("session lsids %v", lsids)
	}

	// Deletes and cleanup.
	dr, err := coll.DeleteMany(ctx, bson.D{{Key: "g", Value: bson.D{{Key: "$gte", Value: 5}}}})
	check(err, "deleteMany")
	want(dr.DeletedCount, int64(400), "deleteMany")
	check(db.Drop(ctx), "dropDatabase")
}

// compression connects through a wiretap with one compressor and checks
// the server's replies came back compressed with it.
func compression(ctx context.Context, uri string, id byte, name string) {
	u, err := url.Parse(uri)
	check(err, "parse uri")
	tap, err := startWiretap(u.Host)
	check(err, "wiretap")
	defer tap.close()
	client, err := mongo.Connect(ctx, options.Client().ApplyURI("mongodb://"+tap.ln.Addr().String()+"/").SetDirect(true).SetCompressors([]string{name}))
	check(err, "connect "+name)
	defer func() { _ = client.Disconnect(context.Background()) }()
	coll := client.Database("govone").Collection("z_" + name)
	docs := make([]any, 0, 500)
	for i := range 500 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "s", Value: "compressible compressible compressible"}})
	}
	_, err = coll.InsertMany(ctx, docs)
	check(err, "insertMany "+name)
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(100))
	check(err, "find "+name)
	var back []bson.Raw
	check(cur.All(ctx, &back), "cursor "+name)
	want(len(back), 500, "documents read with "+name)
	check(coll.Drop(ctx), "drop "+name)
	counts, _ := tap.counts()
	if counts[id] < 5 || len(counts) != 1 {
		fail("%s: compressed replies by compressor id %v", name, counts)
	}
}
