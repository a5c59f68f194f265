package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// nextEvent reads the stream's next event, failing the test after 5 s.
func nextEvent(t *testing.T, cs *mongo.ChangeStream) bson.M {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !cs.Next(ctx) {
		t.Fatalf("no event: %v", cs.Err())
	}
	var ev bson.M
	if err := cs.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func wantOp(t *testing.T, ev bson.M, op string) {
	t.Helper()
	if ev["operationType"] != op {
		t.Fatalf("operationType %v, want %s: %v", ev["operationType"], op, ev)
	}
}

func commandCode(err error) int32 {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, c := range []int32{40602, 166, 40415, 260, 73, 286, 280, 50865} {
			if se.HasErrorCode(int(c)) {
				return c
			}
		}
	}
	return 0
}

func TestChangeStreamCollection(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := context.Background()
	coll := c.Database("cs").Collection("items")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocument(options.UpdateLookup))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "arr", Value: bson.A{1, 2, 3}}, {Key: "gone", Value: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 2}, {Key: "arr", Value: bson.A{1}}}}, {Key: "$unset", Value: bson.D{{Key: "gone", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "b", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	ins := nextEvent(t, cs)
	wantOp(t, ins, "insert")
	if asM(ins["fullDocument"])["a"] != int32(1) || asM(ins["documentKey"])["_id"] != int32(1) {
		t.Fatalf("insert event: %v", ins)
	}
	if ns := asM(ins["ns"]); ns["db"] != "cs" || ns["coll"] != "items" {
		t.Fatalf("ns: %v", ns)
	}
	if _, ok := ins["clusterTime"].(bson.Timestamp); !ok {
		t.Fatalf("clusterTime: %v", ins["clusterTime"])
	}
	upd := nextEvent(t, cs)
	wantOp(t, upd, "update")
	ud := asM(upd["updateDescription"])
	if asM(ud["updatedFields"])["a"] != int32(2) {
		t.Fatalf("updatedFields: %v", ud)
	}
	if rf := ud["removedFields"].(bson.A); len(rf) != 1 || rf[0] != "gone" {
		t.Fatalf("removedFields: %v", ud)
	}
	if ta := ud["truncatedArrays"].(bson.A); len(ta) != 1 || asM(ta[0])["newSize"] != int32(1) {
		t.Fatalf("truncatedArrays: %v", ud)
	}
	// updateLookup reads the document as it is now: deleted already.
	if fd, has := upd["fullDocument"]; !has || fd != nil {
		t.Fatalf("updateLookup fullDocument: %v", upd)
	}
	rep := nextEvent(t, cs)
	wantOp(t, rep, "replace")
	del := nextEvent(t, cs)
	wantOp(t, del, "delete")
	if _, has := del["fullDocument"]; has {
		t.Fatalf("delete with fullDocument: %v", del)
	}
	// Drop: a drop event, then invalidate, then the stream is closed.
	if err := coll.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	wantOp(t, nextEvent(t, cs), "drop")
	inv := nextEvent(t, cs)
	wantOp(t, inv, "invalidate")
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if cs.Next(tctx) {
		t.Fatalf("an event after invalidate")
	}
	// startAfter the invalidate resumes on the recreated collection.
	invTok := cs.ResumeToken()
	if _, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(invTok)); commandCode(err) != 260 {
		t.Fatalf("resumeAfter an invalidate: %v", err)
	}
	cs2, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetStartAfter(invTok))
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close(ctx)
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 9}}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, cs2)
	wantOp(t, ev, "insert")
	if asM(ev["documentKey"])["_id"] != int32(9) {
		t.Fatalf("after startAfter: %v", ev)
	}
}

func TestChangeStreamScopesAndPipeline(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := context.Background()
	db := c.Database("scopes")
	dbs, err := db.Watch(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "insert"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer dbs.Close(ctx)
	all, err := c.Watch(ctx, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "ns", Value: 1}, {Key: "operationType", Value: 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close(ctx)
	if _, err := db.Collection("a").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("a").DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Database("other").Collection("b").InsertOne(ctx, bson.D{{Key: "y", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "z", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	// The database stream sees its own inserts only ($match).
	for _, want := range []string{"a", "c"} {
		ev := nextEvent(t, dbs)
		wantOp(t, ev, "insert")
		if asM(ev["ns"])["coll"] != want {
			t.Fatalf("db stream: %v, want %s", ev, want)
		}
	}
	// The cluster stream sees every database, projected.
	var seen []string
	for range 4 {
		ev := nextEvent(t, all)
		if _, has := ev["fullDocument"]; has {
			t.Fatalf("$project kept fullDocument: %v", ev)
		}
		seen = append(seen, ev["operationType"].(string)+":"+asM(ev["ns"])["db"].(string))
	}
	want := []string{"insert:scopes", "delete:scopes", "insert:other", "insert:scopes"}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("cluster stream saw %v, want %v", seen, want)
		}
	}
}

func TestChangeStreamTransactions(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := context.Background()
	coll := c.Database("cstxn").Collection("t")
	if err := c.Database("cstxn").CreateCollection(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	// Aborted: no event ever.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "aborted"}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: id}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	var times []bson.Timestamp
	for _, id := range []string{"t1", "t2"} {
		ev := nextEvent(t, cs)
		if asM(ev["documentKey"])["_id"] != id {
			t.Fatalf("got %v, want %s", ev, id)
		}
		if len(asM(ev["lsid"])) == 0 || ev["txnNumber"] == nil {
			t.Fatalf("no lsid/txnNumber: %v", ev)
		}
		times = append(times, ev["clusterTime"].(bson.Timestamp))
	}
	if times[0] != times[1] {
		t.Fatalf("a transaction's events at different times: %v", times)
	}
}

func TestChangeStreamAwaitWakesOnCommit(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := context.Background()
	coll := c.Database("await").Collection("w")
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _ = coll.InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	}()
	start := time.Now()
	wantOp(t, nextEvent(t, cs), "insert")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the event took %v: the getMore did not wake on the commit", d)
	}
	// An empty await returns an empty batch with a fresh token.
	before := cs.ResumeToken()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "x", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, cs)
	if string(cs.ResumeToken()) == string(before) {
		t.Fatalf("resume token did not move")
	}
}

func TestChangeStreamResumeAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Launch(ServerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := mongo.Connect(optionsFor(s))
	if err != nil {
		t.Fatal(err)
	}
	coll := c.Database("restart").Collection("r")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, cs)
	tok := cs.ResumeToken()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	_ = cs.Close(ctx)
	_ = c.Disconnect(ctx)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s2 := StartServer(t, ServerOptions{Dir: dir})
	c2 := newTestClient(t, s2)
	coll2 := c2.Database("restart").Collection("r")
	if _, err := coll2.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	cs2, err := coll2.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(tok))
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close(ctx)
	var prev bson.Timestamp
	for _, want := range []int32{2, 3} {
		ev := nextEvent(t, cs2)
		if asM(ev["documentKey"])["_id"] != want {
			t.Fatalf("after restart got %v, want _id %d", ev, want)
		}
		ts := ev["clusterTime"].(bson.Timestamp)
		if ts.T < prev.T || ts.T == prev.T && ts.I <= prev.I {
			t.Fatalf("cluster times not increasing across restart: %v then %v", prev, ts)
		}
		prev = ts
	}
}

func TestChangeStreamHistoryLost(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), ChangeLog: engine.ChangeLogLimits{Bytes: 2048}})
	c := newTestClient(t, s)
	ctx := context.Background()
	coll := c.Database("lost").Collection("l")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, cs)
	tok := cs.ResumeToken()
	_ = cs.Close(ctx)
	for i := 1; i < 100; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: string(make([]byte, 200))}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(tok))
		if commandCode(err) == 286 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("resume from a trimmed token: %v, want 286 ChangeStreamHistoryLost", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestChangeStreamErrors(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := context.Background()
	db := c.Database("cserr")
	if err := db.CreateView(ctx, "v", "base", mongo.Pipeline{}); err != nil {
		t.Fatal(err)
	}
	run := func(cmd bson.D) error { return db.RunCommand(ctx, cmd).Err() }
	agg := func(coll any, pipeline bson.A) bson.D {
		return bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}
	}
	cs := func(spec bson.D) bson.D { return bson.D{{Key: "$changeStream", Value: spec}} }
	cases := []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"not first", agg("base", bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, cs(bson.D{})}), 40602},
		{"view", agg("v", bson.A{cs(bson.D{})}), 166},
		{"unknown option", agg("base", bson.A{cs(bson.D{{Key: "bogus", Value: 1}})}), 40415},
		{"forged token", agg("base", bson.A{cs(bson.D{{Key: "resumeAfter", Value: bson.D{{Key: "_data", Value: "0123"}}}})}), 260},
		{"system collection", agg("system.js", bson.A{cs(bson.D{})}), 73},
		{"both tokens", agg("base", bson.A{cs(bson.D{{Key: "resumeAfter", Value: bson.D{{Key: "_data", Value: "00"}}}, {Key: "startAfter", Value: bson.D{{Key: "_data", Value: "00"}}}})}), 260},
		{"history lost", agg("base", bson.A{cs(bson.D{{Key: "startAtOperationTime", Value: bson.Timestamp{T: 1, I: 1}}})}), 286},
		{"cluster stream off admin", agg(1, bson.A{cs(bson.D{{Key: "allChangesForCluster", Value: true}})}), 72},
		{"stage not allowed", agg("base", bson.A{cs(bson.D{}), bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}}}}}), 20},
	}
	for _, tc := range cases {
		err := run(tc.cmd)
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
	}
}

func TestChangeStreamImagesAndPartitions(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := context.Background()
	db := c.Database("images")
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "img"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("img")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "old"}}); err != nil {
		t.Fatal(err)
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().
		SetFullDocument(options.Required).SetFullDocumentBeforeChange(options.Required))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "new"}}}}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, cs)
	if asM(ev["fullDocument"])["v"] != "new" || asM(ev["fullDocumentBeforeChange"])["v"] != "old" {
		t.Fatalf("images: %v", ev)
	}
	// One physical partition's feed of a sharded collection.
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "images.sh"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	sh := db.Collection("sh")
	raw := bson.A{bson.D{{Key: "$changeStream", Value: bson.D{{Key: "partitionKeyRangeId", Value: "0"}}}}}
	res := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "sh"}, {Key: "pipeline", Value: raw}, {Key: "cursor", Value: bson.D{}}})
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	all, err := sh.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close(ctx)
	for i := range 20 {
		if _, err := sh.InsertOne(ctx, bson.D{{Key: "k", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		ev := nextEvent(t, all)
		dk := asM(ev["documentKey"])
		if _, ok := dk["k"]; !ok {
			t.Fatalf("documentKey without the shard key: %v", dk)
		}
	}
	bad := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "sh"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{{Key: "partitionKeyRangeId", Value: "99"}}}}}}, {Key: "cursor", Value: bson.D{}}})
	if bad.Err() == nil {
		t.Fatalf("unknown partitionKeyRangeId accepted")
	}
}

// asM is an embedded document of a decoded event as a map.
func asM(v any) bson.M {
	switch d := v.(type) {
	case bson.M:
		return d
	case bson.D:
		m := bson.M{}
		for _, e := range d {
			m[e.Key] = e.Value
		}
		return m
	}
	return nil
}

// The per-partition feeds of a collection with four physical partitions
// together hold every event exactly once.
func TestChangeStreamPartitionFeeds(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := context.Background()
	db := c.Database("feeds")
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "f"},
		{Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 40_000}}).Err(); err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Partitions []struct {
			ID string `bson:"partitionKeyRangeId"`
		} `bson:"partitions"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: "f"}}).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Partitions) < 2 {
		t.Fatalf("want several partitions, got %d", len(stats.Partitions))
	}
	// One feed per partition, opened with aggregate as a Cosmos DB
	// change-feed client reads one partition key range.
	coll := db.Collection("f")
	const n = 200
	var cursors []int64
	for _, p := range stats.Partitions {
		var res struct {
			Cursor struct {
				ID int64 `bson:"id"`
			} `bson:"cursor"`
		}
		if err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "f"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{{Key: "partitionKeyRangeId", Value: p.ID}}}}}}, {Key: "cursor", Value: bson.D{}}}).Decode(&res); err != nil {
			t.Fatal(err)
		}
		cursors = append(cursors, res.Cursor.ID)
	}
	for i := range n {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int32]int{}
	busy := 0
	for _, id := range cursors {
		var res struct {
			Cursor struct {
				NextBatch []bson.M `bson:"nextBatch"`
			} `bson:"cursor"`
		}
		if err := db.RunCommand(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "f"}, {Key: "maxTimeMS", Value: 100}}).Decode(&res); err != nil {
			t.Fatal(err)
		}
		if len(res.Cursor.NextBatch) > 0 {
			busy++
		}
		for _, ev := range res.Cursor.NextBatch {
			seen[asM(ev["documentKey"])["_id"].(int32)]++
		}
	}
	if len(seen) != n || busy < 2 {
		t.Fatalf("%d documents over %d busy feeds, want %d over several", len(seen), busy, n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("_id %d seen %d times", id, k)
		}
	}
}
