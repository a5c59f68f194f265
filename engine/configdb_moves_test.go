package engine

import (
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestConfigMoveViews: config.locks shows the moves under way by
// collection (the writer's with their phase and bytes copied, a
// standby's saying those are the writer's), config.changelog each
// recorded move as a moveChunk.from document, in time order.
func TestConfigMoveViews(t *testing.T) {
	var current []MoveStatus
	var done []MoveRecord
	e := newDispatchEngine(t, Config{Moves: func() ([]MoveStatus, []MoveRecord, error) { return current, done, nil }})
	c, err := e.store.CreateCollection("db", "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-3 * time.Second)
	current = []MoveStatus{{Group: 7, Coll: c.ID, Min: 0, Max: ^uint64(0), From: 1, To: 4, Started: started,
		PartitionBytes: 5 << 20, Tracked: true, Phase: "catching up", BytesCopied: 1 << 20}}
	docs := func(coll string) []bson.Raw {
		raw, ok := e.virtualDocs("config", coll)
		if !ok {
			t.Fatalf("config.%s is not a view", coll)
		}
		out := make([]bson.Raw, len(raw))
		for i, b := range raw {
			out[i] = b
		}
		return out
	}
	locks := docs("locks")
	if len(locks) != 1 {
		t.Fatalf("config.locks: %v", locks)
	}
	l := locks[0]
	when, _ := l.Lookup("when").DateTimeOK()
	why, _ := l.Lookup("why").StringValueOK()
	if l.Lookup("_id").StringValue() != "db.c" || l.Lookup("state").Int32() != 2 || when != started.UnixMilli() ||
		!strings.Contains(why, "from node1 to node4") || !strings.Contains(why, "partition 0") {
		t.Errorf("the writer's lock: %v", l)
	}
	move := l.Lookup("moves", "0").Document()
	if move.Lookup("bytesCopied").Int64() != 1<<20 || move.Lookup("partitionBytes").Int64() != 5<<20 || move.Lookup("phase").StringValue() != "catching up" {
		t.Errorf("the writer's move: %v", move)
	}
	// A standby knows the move from the catalog only.
	current[0].Tracked, current[0].Phase, current[0].BytesCopied = false, "", 0
	move = docs("locks")[0].Lookup("moves", "0").Document()
	if _, err := move.LookupErr("bytesCopied"); err == nil || !strings.Contains(move.Lookup("progress").StringValue(), "writer") {
		t.Errorf("a standby's move: %v", move)
	}
	// A dropped collection's move is no lock.
	current[0].Coll = c.ID + 100
	if got := docs("locks"); len(got) != 0 {
		t.Errorf("locks of a dropped collection's move: %v", got)
	}

	ended := started.Add(2 * time.Second)
	done = []MoveRecord{
		{Time: ended, Server: 1, Group: 7, NS: "db.c", Partitions: []string{"0"}, Min: bson.D{}, Max: bson.D{}, From: 1, To: 4,
			Started: started, PartitionBytes: 5 << 20, BytesCopied: 6 << 20},
		{Time: started.Add(time.Second), Server: 1, Group: 8, NS: "db.c", Partitions: []string{"1"}, Min: bson.D{}, Max: bson.D{}, To: 3,
			Started: started, Phase: "catching up", Err: "node 3 did not answer"},
	}
	log := docs("changelog")
	if len(log) != 2 {
		t.Fatalf("config.changelog: %v", log)
	}
	failed, ok := log[0], log[1]
	if failed.Lookup("what").StringValue() != "moveChunk.from" || ok.Lookup("ns").StringValue() != "db.c" {
		t.Errorf("changelog documents out of time order or malformed: %v", log)
	}
	d := ok.Lookup("details").Document()
	if d.Lookup("note").StringValue() != "success" || d.Lookup("from").StringValue() != "node1" || d.Lookup("to").StringValue() != "node4" ||
		d.Lookup("bytesCopied").Int64() != 6<<20 || d.Lookup("durationMillis").Int64() != 2000 {
		t.Errorf("the success record: %v", ok)
	}
	if _, err := d.LookupErr("errmsg"); err == nil {
		t.Errorf("the success record has an errmsg: %v", ok)
	}
	d = failed.Lookup("details").Document()
	if d.Lookup("note").StringValue() != "aborted" || d.Lookup("errmsg").StringValue() != "node 3 did not answer" ||
		d.Lookup("from").Type != bson.TypeNull || d.Lookup("phase").StringValue() != "catching up" {
		t.Errorf("the failure record: %v", failed)
	}
}
