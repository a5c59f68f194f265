package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// TestClusterMovesShown: a fourth node joins a cluster of three holding
// a collection of two partitions of about 2.5 MB each, and the balancer
// moves one partition's replica onto it. While the move runs,
// GetPartitionStats and config.locks show it (partition bytes, the
// bytes the target copied so far, which node to which); once it ended,
// config.changelog holds its moveChunk.from record, note "success", with
// the bytes copied and its duration, on the writer and on a standby
// (read from its catalog replica); mongosh's sh.status() counts it among
// the migrations of the last 24 hours; the writer's log line names the
// bytes copied.
func TestClusterMovesShown(t *testing.T) {
	requireMongosh(t)
	c := startTestCluster(t)
	cl := c.connect()
	admin := cl.Database("admin")
	ctx := testCtx(t)
	runOK(t, admin, bson.D{{Key: "enableSharding", Value: "shown"}})
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "shown.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}},
		{Key: "numInitialChunks", Value: 2}})
	db := cl.Database("shown")
	docs := make([]any, 2400)
	pad := strings.Repeat("p", 2000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "pad", Value: pad}}
	}
	if _, err := db.Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	writer := c.primary(cl)

	// Two groups on three nodes each: the joined node takes one replica.
	c.addClusterNode(4, c.nodes[0])
	// Two pollers read GetPartitionStats and config.locks without pause
	// (the move takes a second or two) until the changelog records it.
	var (
		mu          sync.Mutex
		statsMoving []bson.Raw // GetPartitionStats' moving documents
		locks       []bson.Raw // config.locks documents
		success     bson.Raw   // the changelog's record
	)
	pollCtx, stopPolls := context.WithCancel(ctx)
	var polls sync.WaitGroup
	poll := func(read func(context.Context) []bson.Raw, into *[]bson.Raw) {
		polls.Add(1)
		go func() {
			defer polls.Done()
			for pollCtx.Err() == nil {
				rctx, cancel := context.WithTimeout(pollCtx, 10*time.Second)
				got := read(rctx)
				cancel()
				mu.Lock()
				*into = append(*into, got...)
				mu.Unlock()
			}
		}()
	}
	poll(func(rctx context.Context) []bson.Raw {
		var out []bson.Raw
		if raw, err := db.RunCommand(rctx, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: "c"}}).Raw(); err == nil {
			parts, _ := raw.Lookup("partitions").Array().Values()
			for _, p := range parts {
				if m, err := p.Document().LookupErr("moving"); err == nil {
					out = append(out, m.Document())
				}
			}
		}
		return out
	}, &statsMoving)
	poll(func(rctx context.Context) []bson.Raw {
		var got []bson.Raw
		if cur, err := cl.Database("config").Collection("locks").Find(rctx, bson.D{{Key: "state", Value: 2}}); err == nil {
			_ = cur.All(rctx, &got)
		}
		return got
	}, &locks)
	changelog := cl.Database("config").Collection("changelog")
	for deadline := time.Now().Add(90 * time.Second); success == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			stopPolls()
			polls.Wait()
			t.Fatalf("no move recorded in config.changelog within 90 s; moving seen %v, locks seen %v\nwriter's log:\n%s", statsMoving, locks, writer.logText())
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var rec bson.Raw
		if err := changelog.FindOne(rctx, bson.D{{Key: "what", Value: "moveChunk.from"}, {Key: "details.note", Value: "success"}}).Decode(&rec); err == nil {
			success = rec
		}
		cancel()
	}
	stopPolls()
	polls.Wait()

	// The move as it ran.
	if len(statsMoving) == 0 || len(locks) == 0 {
		t.Fatalf("the move was not seen while it ran: GetPartitionStats moving %v, config.locks %v", statsMoving, locks)
	}
	var copiedSeen int64
	for _, m := range statsMoving {
		if pb, _ := m.Lookup("partitionBytes").AsInt64OK(); pb < 1<<20 {
			t.Errorf("GetPartitionStats' moving document gives partitionBytes %d, want the partition's ~2.5 MB: %v", pb, m)
		}
		if to, _ := m.Lookup("to").StringValueOK(); to != "node4" {
			t.Errorf("moving to %q, want node4: %v", to, m)
		}
		copied, ok := m.Lookup("bytesCopied").AsInt64OK()
		if !ok {
			t.Errorf("GetPartitionStats' moving document without bytesCopied: %v", m)
		}
		copiedSeen = max(copiedSeen, copied)
	}
	for _, l := range locks {
		if id, _ := l.Lookup("_id").StringValueOK(); id != "shown.c" {
			t.Errorf("config.locks _id %q, want shown.c: %v", id, l)
		}
		if _, ok := l.Lookup("when").DateTimeOK(); !ok {
			t.Errorf("config.locks document without a when date: %v", l)
		}
		if why, _ := l.Lookup("why").StringValueOK(); !strings.Contains(why, "to node4") || !strings.Contains(why, "partition") {
			t.Errorf("config.locks why %q does not say which partition moves where", why)
		}
		moves, _ := l.Lookup("moves").Array().Values()
		if len(moves) != 1 {
			t.Fatalf("config.locks document with %d moves: %v", len(moves), l)
		}
		copied, ok := moves[0].Document().Lookup("bytesCopied").AsInt64OK()
		if !ok {
			t.Errorf("config.locks' move on the writer without bytesCopied: %v", l)
		}
		copiedSeen = max(copiedSeen, copied)
	}
	t.Logf("seen while moving: %d GetPartitionStats documents, %d config.locks documents, %d bytes copied at most", len(statsMoving), len(locks), copiedSeen)

	// The move once it ended.
	d := success.Lookup("details").Document()
	from, _ := d.Lookup("from").StringValueOK()
	to, _ := d.Lookup("to").StringValueOK()
	copied, _ := d.Lookup("bytesCopied").AsInt64OK()
	pb, _ := d.Lookup("partitionBytes").AsInt64OK()
	dur, _ := d.Lookup("durationMillis").AsInt64OK()
	when, _ := success.Lookup("time").DateTimeOK()
	if ns, _ := success.Lookup("ns").StringValueOK(); ns != "shown.c" || !regexp.MustCompile(`^node[123]$`).MatchString(from) || to != "node4" {
		t.Errorf("changelog record of the move: ns %q from %q to %q: %v", ns, from, to, success)
	}
	if copied < 1<<20 || pb < 1<<20 || dur <= 0 || time.Since(time.UnixMilli(when)) > 5*time.Minute {
		t.Errorf("changelog record: bytesCopied %d, partitionBytes %d (want both over 1 MB), durationMillis %d, time %v: %v",
			copied, pb, dur, time.UnixMilli(when), success)
	}
	if copiedSeen > copied {
		t.Errorf("%d bytes copied seen while moving, more than the %d recorded at the end", copiedSeen, copied)
	}
	if _, err := d.LookupErr("min"); err != nil {
		t.Errorf("changelog record without the chunk's min: %v", success)
	}
	if !strings.Contains(writer.logText(), "bytesCopied=") {
		t.Errorf("the writer's log has no move line with bytesCopied:\n%s", writer.logText())
	}
	if n, err := cl.Database("config").Collection("locks").CountDocuments(ctx, bson.D{{Key: "state", Value: 2}}); err != nil || n != 0 {
		t.Errorf("config.locks after the move: %d documents, %v", n, err)
	}

	// A standby reads the record from its own catalog replica.
	var standby *clusterNode
	for _, n := range c.nodes {
		if n != writer && n.id != 4 {
			standby = n
			break
		}
	}
	direct, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + standby.client + "/?directConnection=true").SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = direct.Disconnect(context.Background()) }()
	var onStandby []bson.Raw
	for deadline := time.Now().Add(10 * time.Second); len(onStandby) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		cur, err := direct.Database("config").Collection("changelog", options.Collection().SetReadPreference(readpref.SecondaryPreferred())).
			Find(ctx, bson.D{{Key: "what", Value: "moveChunk.from"}, {Key: "details.note", Value: "success"}})
		if err == nil {
			_ = cur.All(ctx, &onStandby)
		}
	}
	if len(onStandby) == 0 || !strings.Contains(onStandby[0].String(), `"bytesCopied"`) {
		t.Errorf("the standby node %d's config.changelog: %v", standby.id, onStandby)
	}

	// mongosh's sh.status().
	dir := t.TempDir()
	file := filepath.Join(dir, "status.js")
	if err := os.WriteFile(file, []byte("print(JSON.stringify(sh.status()));\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(mctx, mongoshBin, c.uri(), "--quiet", "--norc", "--file", file)
	cmd.Env = clientEnv(c.uri(), dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mongosh sh.status(): %v\n%s", err, out)
	}
	if !regexp.MustCompile(`"Migration Results for the last 24 hours":\{"[1-9]\d*":"Success"`).Match(out) {
		t.Errorf("sh.status() does not count the move among the last 24 hours' migrations:\n%s", out)
	}
}
