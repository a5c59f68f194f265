package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Retryable writes: a write whose reply is lost is retried by the driver
// with the same lsid and txnNumber, and must apply once. The
// onPrimaryTransactionalWrite fail point commits the write, then closes
// the connection instead of replying, as MongoDB's does.

// commandLog records the write commands a client started and the
// replies it got.
type commandLog struct {
	mu      sync.Mutex
	started []string
	replies []bson.Raw
}

func (l *commandLog) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.started = append(l.started, e.CommandName)
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.replies = append(l.replies, e.Reply)
		},
	}
}

// count is how many commands named name were started.
func (l *commandLog) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.started {
		if s == name {
			n++
		}
	}
	return n
}

// last is the last reply.
func (l *commandLog) last(t *testing.T) bson.Raw {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.replies) == 0 {
		t.Fatal("no reply recorded")
	}
	return l.replies[len(l.replies)-1]
}

func (l *commandLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started, l.replies = nil, nil
}

// failTxnWrite configures onPrimaryTransactionalWrite.
func failTxnWrite(t *testing.T, c *mongo.Client, mode any, data bson.D) {
	t.Helper()
	cmd := bson.D{{Key: "configureFailPoint", Value: "onPrimaryTransactionalWrite"}, {Key: "mode", Value: mode}}
	if data != nil {
		cmd = append(cmd, bson.E{Key: "data", Value: data})
	}
	runOK(t, c.Database("admin"), cmd)
}

// retriedIDs is the retriedStmtIds of a write reply.
func retriedIDs(t *testing.T, reply bson.Raw) []int32 {
	t.Helper()
	v, err := reply.LookupErr("retriedStmtIds")
	if err != nil {
		return nil
	}
	vals, err := v.Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(vals))
	for i, x := range vals {
		out[i] = x.Int32()
	}
	return out
}

func TestRetryableWritesLostReply(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), EnableTestCommands: true})
	var log commandLog
	client := newTestClient(t, s, options.Client().SetMonitor(log.monitor()))
	admin := newTestClient(t, s)
	// Subtests run in turn: the fail point is the server's.

	t.Run("insertOne", func(t *testing.T) {
		coll := client.Database(dbName(t)).Collection("c")
		ctx := testCtx(t)
		log.reset()
		failTxnWrite(t, admin, bson.D{{Key: "times", Value: 1}}, nil)
		res, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 11}})
		if err != nil {
			t.Fatalf("insertOne retried: %v", err)
		}
		if res.InsertedID != int32(1) {
			t.Fatalf("insertedId %v", res.InsertedID)
		}
		if n := log.count("insert"); n != 2 {
			t.Fatalf("%d insert commands, want 2 (the lost one and its retry)", n)
		}
		if got := retriedIDs(t, log.last(t)); len(got) != 1 || got[0] != 0 {
			t.Fatalf("retriedStmtIds %v, want [0]", got)
		}
		if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 1 {
			t.Fatalf("%d documents, want 1", n)
		}
	})

	t.Run("updateOne $inc", func(t *testing.T) {
		coll := client.Database(dbName(t)).Collection("c")
		ctx := testCtx(t)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
			t.Fatal(err)
		}
		log.reset()
		failTxnWrite(t, admin, bson.D{{Key: "times", Value: 1}}, nil)
		res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		if err != nil {
			t.Fatalf("updateOne retried: %v", err)
		}
		if res.MatchedCount != 1 || res.ModifiedCount != 1 {
			t.Fatalf("matched %d modified %d, want 1 and 1", res.MatchedCount, res.ModifiedCount)
		}
		if n := log.count("update"); n != 2 {
			t.Fatalf("%d update commands, want 2", n)
		}
		var doc struct{ N int32 }
		if err := coll.FindOne(ctx, bson.D{}).Decode(&doc); err != nil || doc.N != 1 {
			t.Fatalf("n is %d (%v), want 1: incremented once", doc.N, err)
		}
	})

	t.Run("upsert", func(t *testing.T) {
		coll := client.Database(dbName(t)).Collection("c")
		ctx := testCtx(t)
		failTxnWrite(t, admin, bson.D{{Key: "times", Value: 1}}, nil)
		res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 7}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
		if err != nil {
			t.Fatalf("upsert retried: %v", err)
		}
		if res.UpsertedID != int32(7) || res.UpsertedCount != 1 {
			t.Fatalf("upserted %v (%d), want 7", res.UpsertedID, res.UpsertedCount)
		}
		var doc struct{ N int32 }
		if err := coll.FindOne(ctx, bson.D{}).Decode(&doc); err != nil || doc.N != 1 {
			t.Fatalf("n is %d (%v), want 1", doc.N, err)
		}
	})

	t.Run("deleteOne", func(t *testing.T) {
		coll := client.Database(dbName(t)).Collection("c")
		ctx := testCtx(t)
		if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		failTxnWrite(t, admin, bson.D{{Key: "times", Value: 1}}, nil)
		res, err := coll.DeleteOne(ctx, bson.D{{Key: "k", Value: 1}})
		if err != nil || res.DeletedCount != 1 {
			t.Fatalf("deleteOne retried: %v (%+v)", err, res)
		}
		if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 1 {
			t.Fatalf("%d documents, want 1: one deleted once", n)
		}
	})

	t.Run("findOneAndUpdate", func(t *testing.T) {
		coll := client.Database(dbName(t)).Collection("c")
		ctx := testCtx(t)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 10}}); err != nil {
			t.Fatal(err)
		}
		for _, after := range []bool{true, false} {
			log.reset()
			failTxnWrite(t, admin, bson.D{{Key: "times", Value: 1}}, nil)
			opts := options.FindOneAndUpdate().SetProjection(bson.D{{Key: "_id", Value: 0}})
			if after {
				opts.SetReturnDocument(options.After)
			}
			var got struct{ N int32 }
			err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, opts).Decode(&got)
			if err != nil {
				t.Fatalf("findOneAndUpdate retried: %v", err)
			}
			if n := log.count("findAndModify"); n != 2 {
				t.Fatalf("%d findAndModify commands, want 2", n)
			}
			reply := log.last(t)
			if v, err := reply.LookupErr("retriedStmtId"); err != nil || v.Int32() != 0 {
				t.Fatalf("reply %v lacks retriedStmtId 0", reply)
			}
			if _, err := reply.LookupErr("value", "_id"); err == nil {
				t.Fatalf("the retry's reply ignores the projection: %v", reply)
			}
			var stored struct{ N int32 }
			if err := coll.FindOne(ctx, bson.D{}).Decode(&stored); err != nil {
				t.Fatal(err)
			}
			// First round (after): 10 -> 11, returned 11. Second round
			// (before): 11 -> 12, returned 11. Either way applied once.
			wantStored := map[bool]int32{true: 11, false: 12}[after]
			if stored.N != wantStored || got.N != 11 {
				t.Fatalf("returnDocument after=%v: returned n=%d, stored n=%d; want 11 and %d", after, got.N, stored.N, wantStored)
			}
		}
	})

	t.Run("findOneAndDelete", func(t *testing.T) {
		coll := client.Database(dbName(t)).Collection("c")
		ctx := testCtx(t)
		if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
			t.Fatal(err)
		}
		failTxnWrite(t, admin, bson.D{{Key: "times", Value: 1}}, nil)
		var got struct {
			ID int32 `bson:"_id"`
		}
		if err := coll.FindOneAndDelete(ctx, bson.D{}, options.FindOneAndDelete().SetSort(bson.D{{Key: "_id", Value: 1}})).Decode(&got); err != nil || got.ID != 1 {
			t.Fatalf("findOneAndDelete retried: %v, _id %d, want 1", err, got.ID)
		}
		if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 1 {
			t.Fatalf("%d documents left, want 1", n)
		}
	})

	t.Run("insertMany partly applied", func(t *testing.T) {
		coll := client.Database(dbName(t)).Collection("c")
		ctx := testCtx(t)
		const n = 2500 // commits of 1,000, 1,000 and 500 documents
		docs := make([]any, n)
		for i := range docs {
			docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i}}
		}
		log.reset()
		// The first commit goes through; the second commits and loses the
		// connection, and the third never runs in the first attempt.
		failTxnWrite(t, admin, bson.D{{Key: "skip", Value: 1}, {Key: "times", Value: 1}}, nil)
		res, err := coll.InsertMany(ctx, docs)
		if err != nil {
			t.Fatalf("insertMany retried: %v", err)
		}
		if len(res.InsertedIDs) != n {
			t.Fatalf("%d inserted ids, want %d", len(res.InsertedIDs), n)
		}
		if c := log.count("insert"); c != 2 {
			t.Fatalf("%d insert commands, want 2", c)
		}
		reply := log.last(t)
		if got := retriedIDs(t, reply); len(got) != 2000 || got[0] != 0 || got[1999] != 1999 {
			t.Fatalf("%d retried statements, want the 2,000 of the first attempt", len(got))
		}
		if v := reply.Lookup("n").Int32(); v != n {
			t.Fatalf("reply n %d, want %d", v, n)
		}
		if c, _ := coll.CountDocuments(ctx, bson.D{}); c != n {
			t.Fatalf("%d documents, want %d", c, n)
		}
	})

	t.Run("update batch failed before commit", func(t *testing.T) {
		// MongoDB's retryable_writes.js: the second statement fails, a
		// retry runs it and not the first again.
		db := client.Database(dbName(t))
		ctx := testCtx(t)
		if _, err := db.Collection("c").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
			t.Fatal(err)
		}
		sctx := sessionCtx(t, ctx, client)
		cmd := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "y", Value: 1}}}}}},
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "y", Value: 1}}}}}},
		}}, {Key: "txnNumber", Value: txnBase()}}
		failTxnWrite(t, admin, bson.D{{Key: "skip", Value: 1}}, bson.D{{Key: "closeConnection", Value: false}, {Key: "failBeforeCommitExceptionCode", Value: 96}})
		r := runWriteIn(t, sctx, db, cmd)
		if nModified(r) != 1 || len(r.WriteErrors) != 1 || r.WriteErrors[0].Index != 1 || r.WriteErrors[0].Code != 96 {
			t.Fatalf("first attempt: %v", r.Raw)
		}
		failTxnWrite(t, admin, "off", nil)
		r = runWriteIn(t, sctx, db, cmd)
		if r.N != 2 || nModified(r) != 2 || len(r.WriteErrors) != 0 {
			t.Fatalf("retry: %v", r.Raw)
		}
		if got := retriedIDs(t, r.Raw); len(got) != 1 || got[0] != 0 {
			t.Fatalf("retriedStmtIds %v, want [0]", got)
		}
		cur, err := db.Collection("c").Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []struct{ Y int32 }
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		for i, d := range docs {
			if d.Y != 1 {
				t.Fatalf("document %d has y %d, want 1", i, d.Y)
			}
		}
	})
}

// txnBase is a txnNumber above any an earlier test gave the session: the
// driver pools server sessions, and these tests set txnNumber themselves.
func txnBase() int64 { return time.Now().UnixNano() }

func nModified(r writeReplyDoc) int32 { return r.Raw.Lookup("nModified").Int32() }

// runWriteIn is runWrite in a session context.
func runWriteIn(t *testing.T, ctx context.Context, db *mongo.Database, cmd bson.D) writeReplyDoc {
	t.Helper()
	raw, err := db.RunCommand(ctx, cmd).Raw()
	var we mongo.WriteException
	if err != nil && !errors.As(err, &we) {
		t.Fatalf("%s: %v", cmdName(cmd), err)
	}
	if err != nil {
		raw = we.Raw
	}
	var r writeReplyDoc
	if err := bson.Unmarshal(raw, &r); err != nil {
		t.Fatalf("decode %v: %v", raw, err)
	}
	r.Raw = raw
	return r
}

func TestRetryableWritesCommands(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)

	t.Run("TransactionTooOld", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		ctx := testCtx(t)
		sctx := sessionCtx(t, ctx, client)
		base := txnBase()
		insert := func(txn int64) bson.D {
			return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}, {Key: "txnNumber", Value: base + txn}}
		}
		if r := runWriteIn(t, sctx, db, insert(5)); r.N != 1 || len(r.WriteErrors) != 0 {
			t.Fatalf("txnNumber 5: %v", r.Raw)
		}
		err := db.RunCommand(sctx, insert(4)).Err()
		ce := wantCode(t, err, 225, "TransactionTooOld")
		if want := fmt.Sprintf("Cannot start transaction %d on session ", base+4); len(ce.Message) < len(want) || ce.Message[:len(want)] != want {
			t.Fatalf("message %q", ce.Message)
		}
		// The same txnNumber again is a retry: answered, not run.
		r := runWriteIn(t, sctx, db, insert(5))
		if r.N != 1 || len(r.WriteErrors) != 0 {
			t.Fatalf("retry of txnNumber 5: %v", r.Raw)
		}
		if got := retriedIDs(t, r.Raw); len(got) != 1 || got[0] != 0 {
			t.Fatalf("retriedStmtIds %v", got)
		}
		// A new txnNumber runs again: the document exists now.
		r = runWriteIn(t, sctx, db, insert(6))
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 11000 {
			t.Fatalf("txnNumber 6: %v", r.Raw)
		}
		// The retry of a write that failed runs it again, as in MongoDB.
		r = runWriteIn(t, sctx, db, insert(6))
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 11000 {
			t.Fatalf("retry of txnNumber 6: %v", r.Raw)
		}
		if n, _ := db.Collection("c").CountDocuments(ctx, bson.D{}); n != 1 {
			t.Fatalf("%d documents", n)
		}
	})

	t.Run("multi and limit 0 are not retryable", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		ctx := testCtx(t)
		sctx := sessionCtx(t, ctx, client)
		runOK(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}}}})
		r := runWriteIn(t, sctx, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}}},
			bson.D{{Key: "q", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: 1}}}}}, {Key: "multi", Value: true}},
		}}, {Key: "txnNumber", Value: txnBase()}})
		if nModified(r) != 1 || len(r.WriteErrors) != 1 || r.WriteErrors[0].Index != 1 || r.WriteErrors[0].Code != 72 {
			t.Fatalf("update with multi: %v", r.Raw)
		}
		r = runWriteIn(t, sctx, db, bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "x", Value: 2}}}, {Key: "limit", Value: 1}},
			bson.D{{Key: "q", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "limit", Value: 0}},
		}}, {Key: "ordered", Value: false}, {Key: "txnNumber", Value: txnBase()}})
		if len(r.WriteErrors) != 1 || r.WriteErrors[0].Index != 1 || r.WriteErrors[0].Code != 72 {
			t.Fatalf("delete with limit 0: %v", r.Raw)
		}
		err := db.RunCommand(sctx, bson.D{{Key: "find", Value: "c"}, {Key: "txnNumber", Value: txnBase()}}).Err()
		wantCode(t, err, 50768, "NotARetryableWriteCommand")
	})

	t.Run("findAndModify retried with other options", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		ctx := testCtx(t)
		sctx := sessionCtx(t, ctx, client)
		runOK(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}}}}})
		txn := txnBase()
		fam := bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "txnNumber", Value: txn}}
		first, err := db.RunCommand(sctx, fam).Raw()
		if err != nil {
			t.Fatal(err)
		}
		again, err := db.RunCommand(sctx, fam).Raw()
		if err != nil {
			t.Fatal(err)
		}
		if !first.Lookup("value").Equal(again.Lookup("value")) || again.Lookup("retriedStmtId").Int32() != 0 {
			t.Fatalf("first %v, retry %v", first, again)
		}
		// The retry asks for the document after the update; only the one
		// before was recorded (MongoDB's check).
		withNew := append(append(bson.D{}, fam...), bson.E{Key: "new", Value: true})
		wantCode(t, db.RunCommand(sctx, withNew).Err(), 40611, "Location40611")
		remove := bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "remove", Value: true}, {Key: "txnNumber", Value: txn}}
		wantCode(t, db.RunCommand(sctx, remove).Err(), 40609, "Location40609")
		var doc struct{ N int32 }
		if err := db.Collection("c").FindOne(ctx, bson.D{}).Decode(&doc); err != nil || doc.N != 2 {
			t.Fatalf("n is %d (%v), want 2", doc.N, err)
		}
	})
}

// rawConn is a bare OP_MSG connection: the same lsid across server
// restarts, which a driver session cannot give.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	id   int32
}

func dialRaw(t *testing.T, s *Server) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, conn: c}
}

func (c *rawConn) run(cmd bson.D) bson.Raw {
	c.t.Helper()
	body, err := bson.Marshal(cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	c.id++
	msg := &wire.Msg{Header: wire.Header{RequestID: c.id, OpCode: wire.OpMsg}, Sections: []wire.Section{{Kind: wire.SectionBody, Documents: [][]byte{body}}}}
	_ = c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.conn.Write(wire.Encode(nil, msg)); err != nil {
		c.t.Fatal(err)
	}
	frame, err := wire.ReadFrame(c.conn, nil, 48<<20)
	if err != nil {
		c.t.Fatal(err)
	}
	m, err := wire.Decode(frame)
	if err != nil {
		c.t.Fatal(err)
	}
	reply, ok := m.(*wire.Msg)
	if !ok {
		c.t.Fatalf("reply is %T", m)
	}
	return reply.Body()
}

func TestRetryableWritesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Launch(ServerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	insert := func(txn int64) bson.D {
		return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}},
			{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: txn}, {Key: "$db", Value: "restart"}}
	}
	update := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}},
	}}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(8)}, {Key: "$db", Value: "restart"}}

	c := dialRaw(t, s)
	if r := c.run(insert(7)); r.Lookup("n").Int32() != 2 {
		t.Fatalf("insert: %v", r)
	}
	if r := c.run(update); r.Lookup("nModified").Int32() != 1 {
		t.Fatalf("update: %v", r)
	}
	// No txnNumber without lsid.
	if r := c.run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "restart"}}); r.Lookup("code").Int32() != 72 {
		t.Fatalf("txnNumber without lsid: %v", r)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	s, err = Launch(ServerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	c = dialRaw(t, s)
	r := c.run(update)
	if r.Lookup("ok").Double() != 1 || r.Lookup("n").Int32() != 1 || r.Lookup("nModified").Int32() != 1 {
		t.Fatalf("update retried after restart: %v", r)
	}
	if len(retriedIDs(t, r)) != 1 {
		t.Fatalf("update retried after restart ran again: %v", r)
	}
	r = c.run(insert(7))
	if r.Lookup("code").Int32() != 225 {
		t.Fatalf("txnNumber 7 after 8, after restart: %v", r)
	}
	find := c.run(bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "restart"}})
	docs, _ := find.Lookup("cursor", "firstBatch").Array().Values()
	if len(docs) != 2 {
		t.Fatalf("documents: %v", find)
	}
	if n := docs[0].Document().Lookup("n").Int32(); n != 1 {
		t.Fatalf("n is %d after a retry across a restart, want 1", n)
	}
}

// TestKillAllSessionsForgetsRetryHistory: after killAllSessions an older
// txnNumber is a new transaction again. A server of its own: the command
// forgets every session on the server.
func TestKillAllSessionsForgetsRetryHistory(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	ctx := testCtx(t)
	sctx := sessionCtx(t, ctx, client)
	base := txnBase()
	insert := func(id int, txn int64) bson.D {
		return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}}, {Key: "txnNumber", Value: base + txn}}
	}
	if err := db.RunCommand(sctx, insert(1, 5)).Err(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, db.RunCommand(sctx, insert(2, 1)).Err(), 225, "TransactionTooOld")
	runOK(t, client.Database("admin"), bson.D{{Key: "killAllSessions", Value: bson.A{}}})
	if err := db.RunCommand(sctx, insert(2, 1)).Err(); err != nil {
		t.Fatalf("txnNumber 1 after killAllSessions: %v", err)
	}
	if n, _ := db.Collection("c").CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("%d documents, want 2", n)
	}
}

// sessionCtx starts an explicit session on client, ended when the test
// ends, and returns ctx bound to it.
func sessionCtx(t *testing.T, ctx context.Context, client *mongo.Client) context.Context {
	t.Helper()
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	return mongo.NewSessionContext(ctx, sess)
}
