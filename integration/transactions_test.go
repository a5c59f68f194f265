package integration

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestTransactionCommitAbort: a transaction's writes are visible to its
// own statements (finds, getMore, aggregate, distinct, updates and
// deletes of what it inserted), to nobody else until commit, and gone
// after an abort.
func TestTransactionCommitAbort(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	coll := c.Database("txn").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}, {Key: "x", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)

	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := 1; i <= 5; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "x", Value: i}})
	}
	if _, err := coll.InsertMany(sctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 10}}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := coll.DeleteOne(sctx, bson.D{{Key: "_id", Value: 2}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("deleteOne of a document the transaction inserted: %+v %v", res, err)
	}
	// Inside: its own writes, through a cursor of several batches.
	cur, err := coll.Find(sctx, bson.D{}, options.Find().SetBatchSize(2).SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var in []bson.M
	if err := cur.All(sctx, &in); err != nil {
		t.Fatal(err)
	}
	if len(in) != 5 || in[1]["x"] != int32(10) {
		t.Fatalf("inside the transaction: %v", in)
	}
	if n, err := coll.CountDocuments(sctx, bson.D{}); err != nil || n != 5 {
		t.Fatalf("countDocuments inside: %d %v", n, err)
	}
	var xs []int32
	if err := coll.Distinct(sctx, "x", bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: 10}}}}).Decode(&xs); err != nil || len(xs) != 1 || xs[0] != 10 {
		t.Fatalf("distinct inside: %v %v", xs, err)
	}
	// Outside: nothing yet.
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("outside before commit: %d documents (%v), want 1", n, err)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if got := idsIn(t, coll, bson.D{}); len(got) != 5 {
		t.Fatalf("after commit: %v", got)
	}
	// A second commit (the driver sends commitTransaction again) succeeds.
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatalf("second commit: %v", err)
	}

	// Abort: nothing stays.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 100}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteMany(sctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if got := idsIn(t, coll, bson.D{}); len(got) != 5 {
		t.Fatalf("after abort: %v, want the 5 committed documents", got)
	}
}

// TestTransactionWithTransaction: the driver's WithTransaction helper
// commits, and runs the callback again on a write conflict.
func TestTransactionWithTransaction(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	accounts := c.Database("bank").Collection("accounts")
	if _, err := accounts.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: "a"}, {Key: "bal", Value: 1000}}, bson.D{{Key: "_id", Value: "b"}, {Key: "bal", Value: 1000}}}); err != nil {
		t.Fatal(err)
	}
	const workers, transfers = 4, 25
	var wg sync.WaitGroup
	var attempts atomic.Int64
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := c.StartSession()
			if err != nil {
				errs <- err
				return
			}
			defer sess.EndSession(ctx)
			for range transfers {
				from, to := "a", "b"
				if w%2 == 1 {
					from, to = to, from
				}
				_, err := sess.WithTransaction(ctx, func(sctx context.Context) (any, error) {
					attempts.Add(1)
					if _, err := accounts.UpdateOne(sctx, bson.D{{Key: "_id", Value: from}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -1}}}}); err != nil {
						return nil, err
					}
					_, err := accounts.UpdateOne(sctx, bson.D{{Key: "_id", Value: to}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: 1}}}})
					return nil, err
				})
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
	var a, b bson.M
	if err := accounts.FindOne(ctx, bson.D{{Key: "_id", Value: "a"}}).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if err := accounts.FindOne(ctx, bson.D{{Key: "_id", Value: "b"}}).Decode(&b); err != nil {
		t.Fatal(err)
	}
	if a["bal"].(int32)+b["bal"].(int32) != 2000 {
		t.Fatalf("money was made or lost: a=%v b=%v", a["bal"], b["bal"])
	}
	if a["bal"] != int32(1000) || b["bal"] != int32(1000) {
		t.Fatalf("each direction ran %d transfers: want both balances 1000, got a=%v b=%v", transfers*workers/2, a["bal"], b["bal"])
	}
	t.Logf("%d transfers took %d attempts", workers*transfers, attempts.Load())
}

// TestTransactionConflicts: a second transaction writing a document the
// first wrote gets WriteConflict at once, labelled for retry, and is
// aborted; a write outside any transaction waits for the first to end.
func TestTransactionConflicts(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	coll := c.Database("txn").Collection("conflicts")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	s0, _ := c.StartSession()
	s1, _ := c.StartSession()
	defer s0.EndSession(ctx)
	defer s1.EndSession(ctx)
	ctx0, ctx1 := mongo.NewSessionContext(ctx, s0), mongo.NewSessionContext(ctx, s1)
	_ = s0.StartTransaction()
	_ = s1.StartTransaction()
	if _, err := coll.UpdateOne(ctx0, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	_, err := coll.UpdateOne(ctx1, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}})
	ce := wantCode(t, err, 112, "WriteConflict")
	if !ce.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("WriteConflict without TransientTransactionError: %v", ce.Labels)
	}
	err = s1.CommitTransaction(ctx)
	if ce := wantCode(t, err, 251, "NoSuchTransaction"); !ce.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("NoSuchTransaction without TransientTransactionError: %v", ce.Labels)
	}

	// A plain write of the locked document waits for the commit.
	done := make(chan error, 1)
	go func() {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 100}}}})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a write outside the transaction did not wait for it: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := s0.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || got["n"] != int32(101) {
		t.Fatalf("after both: %v %v, want n 101", got, err)
	}
}

// TestTransactionErrors: what MongoDB refuses in a transaction, and what
// a failed statement does to it.
func TestTransactionErrors(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	coll := c.Database("txn").Collection("errors")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	sess, _ := c.StartSession()
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)

	_ = sess.StartTransaction()
	_, err := coll.EstimatedDocumentCount(sctx)
	wantCode(t, err, 263, "OperationNotSupportedInTransaction")
	_ = sess.AbortTransaction(ctx)

	_ = sess.StartTransaction()
	_, err = coll.Aggregate(sctx, bson.A{bson.D{{Key: "$out", Value: "other"}}})
	wantCode(t, err, 263, "OperationNotSupportedInTransaction")
	_ = sess.AbortTransaction(ctx)

	// A duplicate key aborts the transaction: its earlier insert is gone.
	_ = sess.StartTransaction()
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
		t.Fatalf("duplicate key in a transaction: %v", err)
	}
	_, err = coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 3}})
	wantCode(t, err, 251, "NoSuchTransaction")
	err = sess.CommitTransaction(ctx)
	wantCode(t, err, 251, "NoSuchTransaction")
	if got := idsIn(t, coll, bson.D{}); len(got) != 1 {
		t.Fatalf("after the failed transaction: %v, want only _id 1", got)
	}

	// Raw commands: commit without a transaction, a later statement with
	// a read concern, a statement with a write concern.
	admin := c.Database("admin")
	runFail(t, admin, bson.D{{Key: "commitTransaction", Value: 1}}, 72, "InvalidOptions")
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}
	db := c.Database("txn")
	reply := runOK(t, db, bson.D{{Key: "insert", Value: "errors"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 9}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(5)}, {Key: "startTransaction", Value: true}, {Key: "autocommit", Value: false}})
	// A router's replies: the recovery token drivers send back with
	// commitTransaction, and the operationTime of causal consistency.
	mustLookup(t, reply, "recoveryToken", "recoveryShardId")
	if ts := mustLookup(t, reply, "operationTime"); ts.Type != bson.TypeTimestamp {
		t.Fatalf("operationTime is a %v", ts.Type)
	}
	runFail(t, db, bson.D{{Key: "find", Value: "errors"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(5)}, {Key: "autocommit", Value: false}}, 72, "InvalidOptions")
	runFail(t, db, bson.D{{Key: "find", Value: "errors"}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(4)},
		{Key: "autocommit", Value: false}}, 225, "TransactionTooOld")
	runFail(t, db, bson.D{{Key: "find", Value: "errors"}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(6)},
		{Key: "autocommit", Value: false}}, 251, "NoSuchTransaction")
	runFail(t, db, bson.D{{Key: "find", Value: "errors"}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(5)},
		{Key: "autocommit", Value: true}}, 72, "InvalidOptions")
}

// TestTransactionLifetime: a transaction left open past its lifetime is
// aborted: its writes are gone, its locks free, its commit fails.
func TestTransactionLifetime(t *testing.T) {
	clock := NewClock()
	s := StartServer(t, ServerOptions{TransactionLifetime: 300 * time.Millisecond, Clock: clock})
	c := newTestClient(t, s)
	ctx := testCtx(t)
	coll := c.Database("txn").Collection("lifetime")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	sess, _ := c.StartSession()
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	_ = sess.StartTransaction()
	if _, err := coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	// A plain write of the document waits for the abort, then runs: it
	// is still running (listed by $currentOp) until the server's clock
	// passes the transaction's lifetime.
	done := make(chan error, 1)
	go func() {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 2}}}})
		done <- err
	}()
	admin := c.Database("admin")
	running := func() bool {
		cur, err := admin.Aggregate(ctx, bson.A{
			bson.D{{Key: "$currentOp", Value: bson.D{}}},
			bson.D{{Key: "$match", Value: bson.D{{Key: "command.update", Value: "lifetime"}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var ops []bson.Raw
		if err := cur.All(ctx, &ops); err != nil {
			t.Fatal(err)
		}
		return len(ops) > 0
	}
	for deadline := time.Now().Add(10 * time.Second); !running(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the plain write never showed in $currentOp")
		}
	}
	// The clock stands still, so the write can only be waiting: it stays
	// listed, the transaction still reads its own value, and nothing has
	// come back.
	for range 5 {
		if !running() {
			t.Fatal("the plain write ended before the transaction's lifetime passed")
		}
	}
	var mine bson.M
	if err := coll.FindOne(sctx, bson.D{{Key: "_id", Value: 1}}).Decode(&mine); err != nil || mine["n"] != int32(1) {
		t.Fatalf("the transaction's own read while the write waits: %v %v, want n 1", mine, err)
	}
	select {
	case err := <-done:
		t.Fatalf("the write did not wait for the transaction: %v", err)
	default:
	}
	clock.Advance(300 * time.Millisecond)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write still waits after the transaction's lifetime passed")
	}
	wantCode(t, sess.CommitTransaction(ctx), 251, "NoSuchTransaction")
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || got["n"] != int32(2) {
		t.Fatalf("after the expired transaction: %v %v, want n 2", got, err)
	}
}

// TestTransactionSharded: a transaction over a collection of several
// physical partitions reads and writes across them, and the partition
// statistics count its documents after commit, and not after an abort.
func TestTransactionSharded(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	db := c.Database("txnsh")
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "sh"}, {Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 40000}})
	coll := db.Collection("sh")
	docs := make([]any, 0, 200)
	for i := range 200 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 37}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	stats := func() int64 {
		return intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: "sh"}}), "documentCount"))
	}
	sess, _ := c.StartSession()
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	for _, commit := range []bool{false, true} {
		_ = sess.StartTransaction()
		for i := 200; i < 260; i++ {
			if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 37}}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := coll.UpdateMany(sctx, bson.D{{Key: "k", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
		if err != nil || res.ModifiedCount != 7 {
			t.Fatalf("updateMany across partitions in a transaction: %+v %v", res, err)
		}
		if n, err := coll.CountDocuments(sctx, bson.D{}); err != nil || n != 260 {
			t.Fatalf("count inside: %d %v", n, err)
		}
		if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 200 {
			t.Fatalf("count outside: %d %v", n, err)
		}
		if commit {
			if err := sess.CommitTransaction(ctx); err != nil {
				t.Fatal(err)
			}
		} else if err := sess.AbortTransaction(ctx); err != nil {
			t.Fatal(err)
		}
		want := int64(200)
		if commit {
			want = 260
		}
		if got := stats(); got != want {
			t.Fatalf("commit %v: GetPartitionStats documentCount %d, want %d", commit, got, want)
		}
	}
}

// TestTransactionDDL: collections a transaction creates (create, a first
// insert, createIndexes) stay out of listings until it commits and are
// gone after an abort; createIndexes in a transaction refuses a
// collection that existed before it, or that it has written to.
func TestTransactionDDL(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	db := c.Database("txnddl")
	names := func() []string {
		t.Helper()
		got, err := db.ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	has := func(name string) bool {
		for _, n := range names() {
			if n == name {
				return true
			}
		}
		return false
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)

	// create and createIndexes, then commit: visible only afterwards.
	_ = sess.StartTransaction()
	if err := db.CreateCollection(sctx, "made"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("made").Indexes().CreateOne(sctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if has("made") {
		t.Fatal("a collection created in an open transaction is listed")
	}
	// (drivers read listIndexes' NamespaceNotFound as no indexes)
	if specs, err := db.Collection("made").Indexes().ListSpecifications(ctx); err != nil || len(specs) != 0 {
		t.Fatalf("indexes of a collection created in an open transaction: %v %v", specs, err)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if !has("made") {
		t.Fatalf("after commit: collections %v", names())
	}
	specs, err := db.Collection("made").Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 {
		t.Fatalf("indexes after commit: %v %v", specs, err)
	}

	// An implicit creation by insert, then abort: nothing stays. Nor is
	// a database listed that only the transaction's collection makes.
	_ = sess.StartTransaction()
	if _, err := db.Collection("gone").InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Database("txnddl_new").Collection("x").InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if has("gone") {
		t.Fatal("a collection created by an insert in an open transaction is listed")
	}
	dbs, err := c.ListDatabaseNames(ctx, bson.D{{Key: "name", Value: "txnddl_new"}})
	if err != nil || len(dbs) != 0 {
		t.Fatalf("listDatabases during the transaction: %v %v", dbs, err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if has("gone") {
		t.Fatalf("after abort: collections %v", names())
	}
	if dbs, err := c.ListDatabaseNames(ctx, bson.D{{Key: "name", Value: "txnddl_new"}}); err != nil || len(dbs) != 0 {
		t.Fatalf("listDatabases after abort: %v %v", dbs, err)
	}
	if n, err := db.Collection("gone").CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Fatalf("after abort: %d documents (%v)", n, err)
	}

	// A write from outside into a collection the transaction created
	// keeps it after the abort.
	_ = sess.StartTransaction()
	if err := db.CreateCollection(sctx, "shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("shared").InsertOne(ctx, bson.D{{Key: "_id", Value: "outside"}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if !has("shared") || len(idsIn(t, db.Collection("shared"), bson.D{})) != 1 {
		t.Fatalf("after abort with an outside write: collections %v", names())
	}

	// createIndexes on a collection from before the transaction, or on
	// one it created and wrote to: 263, and the transaction is over.
	for _, coll := range []string{"made", "written"} {
		_ = sess.StartTransaction()
		if coll == "written" {
			if _, err := db.Collection(coll).InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := db.Collection(coll).Indexes().CreateOne(sctx, mongo.IndexModel{Keys: bson.D{{Key: "y", Value: 1}}})
		wantCode(t, err, 263, "OperationNotSupportedInTransaction")
		wantCode(t, sess.CommitTransaction(ctx), 251, "NoSuchTransaction")
	}
	if has("written") {
		t.Fatalf("after the failed transaction: collections %v", names())
	}
}
