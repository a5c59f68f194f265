package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// reshardDoc is a document of the resharding tests: tenant is the old
// shard key, k the new one (which writers change), v a value an index
// covers.
type reshardDoc struct {
	ID     int64 `bson:"_id"`
	Tenant int64 `bson:"tenant"`
	K      int64 `bson:"k"`
	V      int64 `bson:"v"`
}

// loadReshardColl shards ns by {tenant: "hashed"} with an index on v and
// inserts n documents, returning them by _id.
func loadReshardColl(t *testing.T, client *mongo.Client, db, coll string, n int) map[int64]reshardDoc {
	t.Helper()
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: db + "." + coll}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}})
	c := client.Database(db).Collection(coll)
	if _, err := c.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	docs := map[int64]reshardDoc{}
	batch := make([]any, 0, 1000)
	for i := range int64(n) {
		d := reshardDoc{ID: i, Tenant: i % 50, K: i % 1000, V: i}
		docs[i] = d
		batch = append(batch, d)
		if len(batch) == cap(batch) || i == int64(n)-1 {
			if _, err := c.InsertMany(testCtx(t), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return docs
}

// checkReshardDocs checks that coll holds exactly want, each once.
func checkReshardDocs(t *testing.T, c *mongo.Collection, want map[int64]reshardDoc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cur, err := c.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]reshardDoc{}
	dups := 0
	for cur.Next(ctx) {
		var d reshardDoc
		if err := cur.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if _, seen := got[d.ID]; seen {
			dups++
		}
		got[d.ID] = d
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	if dups > 0 {
		t.Errorf("%d documents returned twice", dups)
	}
	missing, wrong := 0, 0
	for id, d := range want {
		g, ok := got[id]
		switch {
		case !ok:
			if missing++; missing <= 5 {
				t.Errorf("document %d missing (want %+v)", id, d)
			}
		case g != d:
			if wrong++; wrong <= 5 {
				t.Errorf("document %d is %+v, want %+v", id, g, d)
			}
		}
	}
	extra := 0
	for id, g := range got {
		if _, ok := want[id]; !ok {
			if extra++; extra <= 5 {
				t.Errorf("document %d (%+v) should not be there", id, g)
			}
		}
	}
	if missing+wrong+extra > 0 {
		t.Fatalf("%d missing, %d wrong, %d extra of %d", missing, wrong, extra, len(want))
	}
}

// shardKeyOf is config.collections' key of ns.
func shardKeyOf(t *testing.T, client *mongo.Client, ns string) (bson.Raw, bson.Binary) {
	t.Helper()
	var entry bson.Raw
	if err := client.Database("config").Collection("collections").FindOne(testCtx(t), bson.D{{Key: "_id", Value: ns}}).Decode(&entry); err != nil {
		t.Fatalf("config.collections %s: %v", ns, err)
	}
	var uuid bson.Binary
	if v, err := entry.LookupErr("uuid"); err == nil {
		_ = v.Unmarshal(&uuid)
	}
	return entry.Lookup("key").Document(), uuid
}

// TestReshardCollectionUnderWrites reshards a collection from
// {tenant: "hashed"} to {k: 1} while 8 writers insert, update (k too,
// which moves documents in the new layout) and delete, each recording a
// write once acknowledged; at the end every acknowledged write is there
// exactly once, the documents are the expected ones, validate passes,
// the index answers, and the new key routes.
func TestReshardCollectionUnderWrites(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	client := newTestClient(t, s)
	const n = 8000
	docs := loadReshardColl(t, client, "rsw", "c", n)
	c := client.Database("rsw").Collection("c")
	_, uuidBefore := shardKeyOf(t, client, "rsw.c")

	const writers = 8
	var mu sync.Mutex
	want := docs // guarded by mu while writers run
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var acked, failed atomic.Int64
	var slowest atomic.Int64 // the longest write, ns: the critical section bounds it
	var firstErr atomic.Value
	for w := range int64(writers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(w))
			next := int64(1_000_000*(w+1)) + 0
			ctx := context.Background()
			// About 160 writes a second in all, which the resharding's
			// catch-up outpaces even under the race detector (the
			// benchmark measures the 2 s bound at 1,000 writes a second
			// without it).
			pace := time.NewTicker(50 * time.Millisecond)
			defer pace.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				// Each writer owns the _ids ≡ w (mod 8) and its inserts.
				id := int64(rng.Intn(n/writers))*writers + w
				var err error
				began := time.Now()
				switch i % 4 {
				case 0: // insert
					d := reshardDoc{ID: next, Tenant: next % 50, K: int64(rng.Intn(1000)), V: next}
					next++
					if _, err = c.InsertOne(ctx, d); err == nil {
						mu.Lock()
						want[d.ID] = d
						mu.Unlock()
					}
				case 1, 2: // update v and the new key
					mu.Lock()
					d, ok := want[id]
					mu.Unlock()
					if !ok {
						continue
					}
					// k becomes the shard key, immutable once the
					// switch is made: an update refused for changing
					// it (66) then goes again without.
					old := d
					d.K, d.V = int64(rng.Intn(1000)), d.V+1
					var res *mongo.UpdateResult
					res, err = c.UpdateOne(ctx, bson.D{{Key: "tenant", Value: d.Tenant}, {Key: "_id", Value: id}},
						bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: d.K}, {Key: "v", Value: d.V}}}})
					var we mongo.WriteException
					if errors.As(err, &we) && len(we.WriteErrors) == 1 && we.WriteErrors[0].Code == 66 {
						d.K = old.K
						res, err = c.UpdateOne(ctx, bson.D{{Key: "tenant", Value: d.Tenant}, {Key: "_id", Value: id}},
							bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: d.V}}}})
					}
					if err == nil && res.MatchedCount != 1 {
						err = fmt.Errorf("update of %d matched %d documents", id, res.MatchedCount)
					}
					if err == nil {
						mu.Lock()
						want[id] = d
						mu.Unlock()
					}
				case 3: // delete
					mu.Lock()
					d, ok := want[id]
					mu.Unlock()
					if !ok {
						continue
					}
					var res *mongo.DeleteResult
					if res, err = c.DeleteOne(ctx, bson.D{{Key: "tenant", Value: d.Tenant}, {Key: "_id", Value: id}}); err == nil && res.DeletedCount != 1 {
						err = fmt.Errorf("delete of %d deleted %d documents", id, res.DeletedCount)
					}
					if err == nil {
						mu.Lock()
						delete(want, id)
						mu.Unlock()
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					return
				}
				for took := int64(time.Since(began)); ; {
					if cur := slowest.Load(); took <= cur || slowest.CompareAndSwap(cur, took) {
						break
					}
				}
				acked.Add(1)
			}
		}()
	}

	// Watch $currentOp while the resharding runs.
	var sawOp atomic.Value
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		admin := client.Database("admin")
		for {
			select {
			case <-stop:
				return
			default:
			}
			cur, err := admin.Aggregate(context.Background(), mongo.Pipeline{
				{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}}}},
				{{Key: "$match", Value: bson.D{{Key: "type", Value: "op"}, {Key: "ns", Value: "rsw.c"}, {Key: "recipientState", Value: bson.D{{Key: "$exists", Value: true}}}}}},
			})
			if err == nil {
				var ops []bson.Raw
				if cur.All(context.Background(), &ops) == nil && len(ops) > 0 && sawOp.Load() == nil {
					sawOp.Store(ops[0])
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	time.Sleep(300 * time.Millisecond) // writes before the resharding
	before := acked.Load()
	start := time.Now()
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer rcancel()
	if err := client.Database("admin").RunCommand(rctx, bson.D{{Key: "reshardCollection", Value: "rsw.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "numInitialChunks", Value: 4}}).Err(); err != nil {
		t.Fatalf("reshardCollection: %v", err)
	}
	took := time.Since(start)
	during := acked.Load() - before
	time.Sleep(300 * time.Millisecond) // writes after it
	close(stop)
	wg.Wait()
	<-watchDone
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d writes failed; first: %v", f, firstErr.Load())
	}
	t.Logf("resharded %d documents in %v; %d writes acknowledged during it, %d in all", n, took, during, acked.Load())
	if during == 0 {
		t.Errorf("no write was acknowledged while the resharding ran")
	}
	// MongoDB blocks writes for at most 2 s at the switch.
	if d := time.Duration(slowest.Load()); d > 2*time.Second {
		t.Errorf("a write took %v: writes were blocked too long", d)
	} else {
		t.Logf("the slowest write took %v", d)
	}

	checkReshardDocs(t, c, want)

	// $currentOp showed it with MongoDB's fields.
	op, _ := sawOp.Load().(bson.Raw)
	if op == nil {
		t.Errorf("$currentOp never showed the resharding")
	} else {
		for _, f := range []string{"desc", "approxDocumentsToCopy", "documentsCopied", "approxBytesToCopy", "bytesCopied", "remainingOperationTimeEstimatedSecs", "totalOperationTimeElapsedSecs", "recipientState"} {
			if _, err := op.LookupErr(f); err != nil {
				t.Errorf("$currentOp entry has no %s: %v", f, op)
			}
		}
		if got := op.Lookup("approxDocumentsToCopy").AsInt64(); got < n || got > n+acked.Load() {
			t.Errorf("approxDocumentsToCopy = %d, want %d and the documents inserted since", got, n)
		}
	}

	// The new key, a new uuid, routed by it.
	key, uuidAfter := shardKeyOf(t, client, "rsw.c")
	if string(key) != string(mustMarshal(t, bson.D{{Key: "k", Value: int32(1)}})) {
		t.Errorf("config.collections key = %v, want {k: 1}", key)
	}
	if string(uuidAfter.Data) == string(uuidBefore.Data) {
		t.Errorf("the collection kept its uuid %x", uuidAfter.Data)
	}
	ex := runOK(t, client.Database("rsw"), bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "k", Value: 7}}}}}})
	all := runOK(t, client.Database("rsw"), bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "tenant", Value: 7}}}}}})
	if np, na := partitionsIn(t, ex), partitionsIn(t, all); np != 1 || na < 2 {
		t.Errorf("explain: a find by the new key touches %d partitions (want 1), by the old key %d (want all, >1)\n%v\n%v", np, na, ex, all)
	}

	// The index answers, validate passes, the temporary collection is gone.
	mu.Lock()
	var probe reshardDoc
	for _, d := range want {
		probe = d
		break
	}
	mu.Unlock()
	var got reshardDoc
	if err := c.FindOne(testCtx(t), bson.D{{Key: "v", Value: probe.V}, {Key: "_id", Value: probe.ID}}, options.FindOne().SetHint(bson.D{{Key: "v", Value: 1}})).Decode(&got); err != nil || got != probe {
		t.Errorf("find by the v index: %+v, %v; want %+v", got, err, probe)
	}
	v := runOK(t, client.Database("rsw"), bson.D{{Key: "validate", Value: "c"}, {Key: "full", Value: true}})
	if !v.Lookup("valid").Boolean() {
		t.Errorf("validate: %v", v)
	}
	names, err := client.Database("rsw").ListCollectionNames(testCtx(t), bson.D{})
	if err != nil || len(names) != 1 {
		t.Errorf("collections after resharding: %v, %v", names, err)
	}
	if n := len(s.Store().Collections("rsw")); n != 1 {
		t.Errorf("the store has %d collections in rsw, want 1", n)
	}
}

// partitionsIn counts the partitions a find's explain says it read: one
// queryPlanner.winningPlan.shards entry (partitionKeyRangeId) each.
func partitionsIn(t *testing.T, ex bson.Raw) int {
	t.Helper()
	plan, err := ex.LookupErr("queryPlanner", "winningPlan", "shards")
	if err != nil {
		t.Fatalf("explain without queryPlanner.winningPlan.shards: %v", ex)
	}
	shards, _ := plan.Array().Values()
	return len(shards)
}

// TestReshardCollectionErrors: MongoDB's answers to bad reshardCollection
// commands, the same key as a no-op, abortReshardCollection,
// commitReshardCollection and a second resharding while one runs.
func TestReshardCollectionErrors(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	client := newTestClient(t, s)
	admin := client.Database("admin")
	docs := loadReshardColl(t, client, "rse", "c", 2000)
	reshard := func(ns string, key bson.D, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "reshardCollection", Value: ns}, {Key: "key", Value: key}}, extra...)
	}
	k1 := bson.D{{Key: "k", Value: 1}}

	runFail(t, admin, reshard("rse.missing", k1), 26, "NamespaceNotFound")
	if err := client.Database("rse").CreateCollection(testCtx(t), "plain"); err != nil {
		t.Fatal(err)
	}
	runFail(t, admin, reshard("rse.plain", k1), 118, "NamespaceNotSharded")
	runFail(t, admin, bson.D{{Key: "reshardCollection", Value: "rse.c"}}, 40414, "Location40414")
	runFail(t, admin, reshard("rse.c", k1, bson.E{Key: "unique", Value: true}), 2, "BadValue")
	runFail(t, admin, reshard("rse.c", k1, bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}), 2, "BadValue")
	runFail(t, admin, reshard("rse.c", k1, bson.E{Key: "zones", Value: bson.A{bson.D{{Key: "zone", Value: "z"}, {Key: "min", Value: bson.D{{Key: "k", Value: 0}}}, {Key: "max", Value: bson.D{{Key: "k", Value: 5}}}}}}), 2, "BadValue")
	runFail(t, admin, reshard("rse.c", bson.D{{Key: "k", Value: "text"}}), 2, "BadValue")
	runFail(t, admin, reshard("rse.c", bson.D{}), 2, "BadValue")
	runFail(t, admin, bson.D{{Key: "reshardCollection", Value: "nodot"}, {Key: "key", Value: k1}}, 73, "InvalidNamespace")
	runFail(t, admin, bson.D{{Key: "abortReshardCollection", Value: "rse.c"}}, 339, "NoSuchReshardCollection")
	runFail(t, admin, bson.D{{Key: "commitReshardCollection", Value: "rse.c"}}, 339, "NoSuchReshardCollection")

	// The key it has: ok, nothing changes (the uuid stays).
	_, uuid := shardKeyOf(t, client, "rse.c")
	runOK(t, admin, reshard("rse.c", bson.D{{Key: "tenant", Value: "hashed"}}))
	if _, after := shardKeyOf(t, client, "rse.c"); string(after.Data) != string(uuid.Data) {
		t.Errorf("resharding to the same key changed the uuid")
	}

	// A key on a field that holds an array: the copy fails, the
	// collection is as it was, the temporary one is gone.
	arr := client.Database("rse").Collection("arr")
	loadReshardColl(t, client, "rse", "arr", 500)
	if _, err := arr.UpdateOne(testCtx(t), bson.D{{Key: "tenant", Value: 7}, {Key: "_id", Value: 7}}, bson.D{{Key: "$set", Value: bson.D{{Key: "tags", Value: bson.A{1, 2}}}}}); err != nil {
		t.Fatal(err)
	}
	err := admin.RunCommand(testCtx(t), reshard("rse.arr", bson.D{{Key: "tags", Value: 1}})).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 2 && ce.Code != 61 {
		t.Errorf("resharding by an array field: %v, want a BadValue or ShardKeyNotFound error", err)
	}
	if key, _ := shardKeyOf(t, client, "rse.arr"); string(key) != string(mustMarshal(t, bson.D{{Key: "tenant", Value: "hashed"}})) {
		t.Errorf("after a failed resharding the key is %v", key)
	}
	if n := len(s.Store().Collections("rse")); n != 3 {
		t.Errorf("the store has %d collections in rse, want 3 (c, plain, arr)", n)
	}

	// Abort: the resharding fails with 341, the collection is unchanged.
	big := loadReshardColl(t, client, "rse", "big", 30000)
	bigC := client.Database("rse").Collection("big")
	res := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res <- admin.RunCommand(ctx, reshard("rse.big", k1)).Err()
	}()
	waitResharding(t, client, "rse.big")
	runFail(t, admin, reshard("rse.big", bson.D{{Key: "v", Value: 1}}), 338, "ReshardCollectionInProgress")
	runOK(t, admin, bson.D{{Key: "abortReshardCollection", Value: "rse.big"}})
	wantCode(t, <-res, 341, "ReshardCollectionAborted")
	if key, _ := shardKeyOf(t, client, "rse.big"); string(key) != string(mustMarshal(t, bson.D{{Key: "tenant", Value: "hashed"}})) {
		t.Errorf("after an abort the key is %v", key)
	}
	checkReshardDocs(t, bigC, big)
	if n := len(s.Store().Collections("rse")); n != 4 {
		t.Errorf("the store has %d collections in rse after the abort, want 4", n)
	}

	// commitReshardCollection: switches and answers once done (the copy
	// finishes first: slow under the race detector).
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res <- admin.RunCommand(ctx, reshard("rse.big", k1)).Err()
	}()
	waitResharding(t, client, "rse.big")
	cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer ccancel()
	if err := admin.RunCommand(cctx, bson.D{{Key: "commitReshardCollection", Value: "rse.big"}}).Err(); err != nil {
		t.Fatalf("commitReshardCollection: %v", err)
	}
	if err := <-res; err != nil {
		t.Fatalf("reshardCollection after commitReshardCollection: %v", err)
	}
	if key, _ := shardKeyOf(t, client, "rse.big"); string(key) != string(mustMarshal(t, bson.D{{Key: "k", Value: int32(1)}})) {
		t.Errorf("after commitReshardCollection the key is %v", key)
	}
	checkReshardDocs(t, bigC, big)
	checkReshardDocs(t, client.Database("rse").Collection("c"), docs)
}

// waitResharding waits until $currentOp shows ns being resharded.
func waitResharding(t *testing.T, client *mongo.Client, ns string) bson.Raw {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var reply bson.Raw
		err := client.Database("admin").RunCommand(context.Background(), bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: ns}, {Key: "desc", Value: bson.D{{Key: "$regex", Value: "^ReshardingRecipientService"}}}}).Decode(&reply)
		if err == nil {
			if ops, _ := reply.Lookup("inprog").Array().Values(); len(ops) > 0 {
				return ops[0].Document()
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s never showed in currentOp", ns)
	return nil
}

// TestReshardKill9 kills the server with SIGKILL while a resharding
// copies the documents, and again while it catches up and switches; the
// server started again on the same data finishes the resharding by
// itself, and the collection then has the new key and exactly the
// documents acknowledged (a writer inserts during the copy), with
// neither layout left beside the other.
func TestReshardKill9(t *testing.T) {
	for _, tc := range []struct {
		name   string
		killAt func(op bson.Raw) bool
	}{
		{"copy", func(op bson.Raw) bool {
			return op.Lookup("recipientState").StringValue() == "cloning" && op.Lookup("documentsCopied").AsInt64() > 0
		}},
		{"switch", func(op bson.Raw) bool {
			return op.Lookup("recipientState").StringValue() == "strict-consistency"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			dir := t.TempDir()
			p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir, "--http", "")
			client := connect(t, p.addr)
			want := loadReshardColl(t, client, "rsk", "c", 15000)
			c := client.Database("rsk").Collection("c")

			// A writer inserts until the server dies, recording what was
			// acknowledged.
			var mu sync.Mutex
			var inFlight reshardDoc // unacknowledged when the server died: may or may not be there
			writerDone := make(chan struct{})
			go func() {
				defer close(writerDone)
				for i := int64(1_000_000); ; i++ {
					d := reshardDoc{ID: i, Tenant: i % 50, K: i % 1000, V: i}
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := c.InsertOne(ctx, d)
					cancel()
					if err != nil {
						inFlight = d
						return
					}
					mu.Lock()
					want[d.ID] = d
					mu.Unlock()
				}
			}()
			go func() {
				_ = client.Database("admin").RunCommand(context.Background(), bson.D{{Key: "reshardCollection", Value: "rsk.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}}).Err()
			}()
			var last string
			deadline := time.Now().Add(60 * time.Second)
			for {
				if time.Now().After(deadline) {
					t.Fatalf("never saw the moment to kill (last state %q)", last)
				}
				var reply bson.Raw
				err := client.Database("admin").RunCommand(context.Background(), bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: "rsk.c"}, {Key: "recipientState", Value: bson.D{{Key: "$exists", Value: true}}}}).Decode(&reply)
				if err != nil {
					continue
				}
				ops, _ := reply.Lookup("inprog").Array().Values()
				if len(ops) == 0 {
					if last == "applying" || last == "strict-consistency" {
						last += ", then past the switch" // the critical section was too short to see
						break
					}
					continue
				}
				op := ops[0].Document()
				last = op.Lookup("recipientState").StringValue()
				if tc.killAt(op) {
					break
				}
			}
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = p.wait(t, 10*time.Second)
			<-writerDone
			t.Logf("killed while %s (%v since the start)", last, time.Since(began))

			p2 := startProc(t, nil, "--listen", p.addr, "--data-dir", dir, "--http", "")
			client2 := connect(t, p2.addr)
			c2 := client2.Database("rsk").Collection("c")
			if inFlight.ID != 0 {
				var d reshardDoc
				if err := c2.FindOne(testCtx(t), bson.D{{Key: "_id", Value: inFlight.ID}}).Decode(&d); err == nil {
					want[d.ID] = inFlight // committed, though its acknowledgement was lost
				}
			}
			t.Logf("restarted (%v since the start)", time.Since(began))
			// Whatever the layout, every acknowledged document is there once.
			if n, err := c2.CountDocuments(testCtx(t), bson.D{}); err != nil || n != int64(len(want)) {
				t.Errorf("after the restart: %d documents (%v), want %d", n, err, len(want))
			}
			// The resharding resumes and finishes on its own.
			deadline = time.Now().Add(90 * time.Second)
			for {
				key, _ := shardKeyOf(t, client2, "rsk.c")
				if string(key) == string(mustMarshal(t, bson.D{{Key: "k", Value: int32(1)}})) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the resharding did not finish after the restart: key %v", key)
				}
				time.Sleep(50 * time.Millisecond)
			}
			for time.Now().Before(deadline) {
				var reply bson.Raw
				if err := client2.Database("admin").RunCommand(testCtx(t), bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: "rsk.c"}, {Key: "recipientState", Value: bson.D{{Key: "$exists", Value: true}}}}).Decode(&reply); err == nil {
					if ops, _ := reply.Lookup("inprog").Array().Values(); len(ops) == 0 {
						break
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("resharding finished (%v since the start)", time.Since(began))
			checkReshardDocs(t, c2, want)
			n, err := client2.Database("config").Collection("collections").CountDocuments(testCtx(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$regex", Value: "^rsk\\."}}}})
			if err != nil || n != 1 {
				t.Errorf("config.collections has %d entries of rsk (%v), want 1", n, err)
			}
			v := runOK(t, client2.Database("rsk"), bson.D{{Key: "validate", Value: "c"}, {Key: "full", Value: true}})
			if !v.Lookup("valid").Boolean() {
				t.Errorf("validate: %v", v)
			}
		})
	}
}

// TestReshardAbortsTransactions: a transaction in progress that wrote
// the collection does not hold the resharding's critical section for its
// lifetime: it is aborted, as MongoDB aborts such transactions when the
// critical section begins, and its commit fails with 251
// NoSuchTransaction labelled TransientTransactionError; its write is
// gone, and a transaction on another collection goes on.
func TestReshardAbortsTransactions(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	client := newTestClient(t, s)
	admin := client.Database("admin")
	docs := loadReshardColl(t, client, "rst", "c", 500)
	other := client.Database("rst").Collection("other")
	if _, err := other.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	coll := client.Database("rst").Collection("c")
	begin := func() (*mongo.Session, context.Context) {
		sess, err := client.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.EndSession(context.Background()) })
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		return sess, mongo.NewSessionContext(testCtx(t), sess)
	}
	writer, wctx := begin()
	if _, err := coll.InsertOne(wctx, reshardDoc{ID: 1_000_000, Tenant: 3, K: 3, V: 3}); err != nil {
		t.Fatal(err)
	}
	bystander, bctx := begin()
	if _, err := other.InsertOne(bctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.RunCommand(ctx, bson.D{{Key: "reshardCollection", Value: "rst.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}}).Err(); err != nil {
		t.Fatalf("reshardCollection with a transaction open on the collection: %v", err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("reshardCollection took %v: it waited for the transaction", took)
	}
	if key, _ := shardKeyOf(t, client, "rst.c"); string(key) != string(mustMarshal(t, bson.D{{Key: "k", Value: int32(1)}})) {
		t.Errorf("after the resharding the key is %v", key)
	}

	err := writer.CommitTransaction(testCtx(t))
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 251 || ce.Name != "NoSuchTransaction" || !ce.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("committing the transaction that wrote the collection: %v, want 251 NoSuchTransaction with TransientTransactionError", err)
	}
	checkReshardDocs(t, coll, docs)

	if err := bystander.CommitTransaction(testCtx(t)); err != nil {
		t.Fatalf("committing the transaction on another collection: %v", err)
	}
	if n, err := other.CountDocuments(testCtx(t), bson.D{}); err != nil || n != 2 {
		t.Errorf("the other collection has %d documents (%v), want 2", n, err)
	}
}
