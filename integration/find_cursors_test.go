package integration

import (
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestFindCursors covers cursor life: batches bounded by count and by
// 16 MiB, getMore, killCursors' reply, CursorNotFound, unique ids, idle
// timeout, and cursors closed with the connection that opened them
// outside a session.
func TestFindCursors(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("find_cursors")
	if _, err := db.Collection("ten").InsertMany(testCtx(t), docsOf(0, 10)); err != nil {
		t.Fatal(err)
	}
	getMore := func(id int64, fields ...bson.E) bson.D {
		return append(bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "ten"}}, fields...)
	}

	t.Run("16 MiB batches", func(t *testing.T) {
		t.Parallel()
		big := db.Collection("big")
		pad := strings.Repeat("x", 4<<20) // 4 MiB strings: three fit in 16 MiB, four do not
		for i := range 5 {
			if _, err := big.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}); err != nil {
				t.Fatal(err)
			}
		}
		c := runCursor(t, db, bson.D{{Key: "find", Value: "big"}})
		if n := len(c.batch()); n != 3 || c.Cursor.ID == 0 {
			t.Fatalf("first batch %d docs (id %d), want 3 and a cursor", n, c.Cursor.ID)
		}
		c = runCursor(t, db, bson.D{{Key: "getMore", Value: c.Cursor.ID}, {Key: "collection", Value: "big"}})
		if n := len(c.batch()); n != 2 || c.Cursor.ID != 0 {
			t.Errorf("getMore %d docs (id %d), want 2 and the end", n, c.Cursor.ID)
		}
	})

	t.Run("getMore and killCursors", func(t *testing.T) {
		t.Parallel()
		c := runCursor(t, db, bson.D{{Key: "find", Value: "ten"}, {Key: "batchSize", Value: 2}})
		id := c.Cursor.ID
		c = runCursor(t, db, getMore(id, bson.E{Key: "batchSize", Value: 3}))
		if len(c.batch()) != 3 || c.Cursor.ID != id || c.Cursor.NS != "find_cursors.ten" {
			t.Errorf("getMore: %d docs, id %d, ns %s", len(c.batch()), c.Cursor.ID, c.Cursor.NS)
		}
		r := runOK(t, db, bson.D{{Key: "killCursors", Value: "ten"}, {Key: "cursors", Value: bson.A{id, int64(12345)}}})
		wantFields(t, r, "cursorsKilled", "cursorsNotFound", "cursorsAlive", "cursorsUnknown", "ok")
		killed, _ := mustLookup(t, r, "cursorsKilled").Array().Values()
		notFound, _ := mustLookup(t, r, "cursorsNotFound").Array().Values()
		if len(killed) != 1 || killed[0].Int64() != id || len(notFound) != 1 || notFound[0].Int64() != 12345 {
			t.Errorf("killCursors reply %v", r)
		}
		ce := runFail(t, db, getMore(id), 43, "CursorNotFound")
		if !strings.Contains(ce.Message, "cursor id") {
			t.Errorf("errmsg %q", ce.Message)
		}
		runFail(t, db, getMore(id, bson.E{Key: "batchSize", Value: -1}), 51024, "Location51024")
		runFail(t, db, bson.D{{Key: "getMore", Value: int32(1)}, {Key: "collection", Value: "ten"}}, 14, "TypeMismatch")
		runFail(t, db, bson.D{{Key: "getMore", Value: int64(1)}}, 40414, "Location40414")
	})

	t.Run("getMore maxTimeMS", func(t *testing.T) {
		t.Parallel()
		c := runCursor(t, db, bson.D{{Key: "find", Value: "ten"}, {Key: "batchSize", Value: 2}, {Key: "maxTimeMS", Value: 60000}})
		c = runCursor(t, db, getMore(c.Cursor.ID, bson.E{Key: "maxTimeMS", Value: 60000}))
		if len(c.batch()) != 8 {
			t.Errorf("getMore with maxTimeMS: %d docs", len(c.batch()))
		}
	})

	t.Run("ids are unique", func(t *testing.T) {
		t.Parallel()
		seen := map[int64]bool{}
		for range 50 {
			id := runCursor(t, db, bson.D{{Key: "find", Value: "ten"}, {Key: "batchSize", Value: 1}}).Cursor.ID
			if id <= 0 || seen[id] {
				t.Fatalf("cursor id %d repeated or not positive", id)
			}
			seen[id] = true
		}
	})

	t.Run("idle cursors time out", func(t *testing.T) {
		t.Parallel()
		// A server of its own with a short idle timeout, on a clock the
		// test moves; the reaper is run at once rather than waited for.
		clk := NewClock()
		s := StartServer(t, ServerOptions{Dir: t.TempDir(), CursorTimeout: 300 * time.Millisecond, Clock: clk})
		db := newTestClient(t, s).Database("find_cursors")
		if _, err := db.Collection("ten").InsertMany(testCtx(t), docsOf(0, 10)); err != nil {
			t.Fatal(err)
		}
		find := bson.D{{Key: "find", Value: "ten"}, {Key: "batchSize", Value: 1}}
		id := runCursor(t, db, find).Cursor.ID
		early := runCursor(t, db, find).Cursor.ID
		kept := runCursor(t, db, bson.D{{Key: "find", Value: "ten"}, {Key: "batchSize", Value: 1}, {Key: "noCursorTimeout", Value: true}}).Cursor.ID
		// Idle for less than the timeout: not reaped.
		clk.Advance(200 * time.Millisecond)
		s.ReapIdleCursors()
		runCursor(t, db, getMore(early, bson.E{Key: "batchSize", Value: 1}))
		// Idle for three timeouts (a getMore would count as use).
		clk.Advance(700 * time.Millisecond)
		s.ReapIdleCursors()
		runFail(t, db, getMore(id, bson.E{Key: "batchSize", Value: 1}), 43, "CursorNotFound")
		runCursor(t, db, getMore(kept, bson.E{Key: "batchSize", Value: 1}))
	})

	t.Run("closed with their connection outside sessions", func(t *testing.T) {
		t.Parallel()
		if _, err := db.Collection("many").InsertMany(testCtx(t), docsOf(0, 1000)); err != nil {
			t.Fatal(err)
		}
		env := &hostileEnv{s: s}
		c := env.dial(t)
		id := c.nextID()
		c.mustWrite(hsEncodeMsg(id, 0, hsDoc(t, bson.D{{Key: "find", Value: "many"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "find_cursors"}})))
		r := c.reply(id)
		cid := mustLookup(t, r, "cursor", "id").Int64()
		if cid == 0 {
			t.Fatalf("no cursor: %v", r)
		}
		// Still there while the connection lives.
		id = c.nextID()
		c.mustWrite(hsEncodeMsg(id, 0, hsDoc(t, bson.D{{Key: "getMore", Value: cid}, {Key: "collection", Value: "many"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "find_cursors"}})))
		if r := c.reply(id); intOf(t, mustLookup(t, r, "ok")) != 1 {
			t.Fatalf("getMore on the same connection: %v", r)
		}
		_ = c.nc.Close()
		// Each probe reads one of the many documents, so the cursor
		// cannot end by being exhausted.
		waitFor(t, "the cursor to close with its connection", func() bool {
			err := db.RunCommand(testCtx(t), bson.D{{Key: "getMore", Value: cid}, {Key: "collection", Value: "many"}, {Key: "batchSize", Value: 1}}).Err()
			return err != nil && strings.Contains(err.Error(), "CursorNotFound")
		})
	})
}
