package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestClusterMoveWriterDies: the writer dies (SIGKILL, at a crash point)
// right after a move removed the old replica from its group and before
// it recorded the move's end, so the registry still names the old
// replica while the group no longer counts it. Every node crashes so
// once, as it becomes the writer and moves. Each time another node
// takes the writer's place within 30 s (its claim of the group does not
// wait on the removed replica), the next writer finishes the move, the
// drain completes, and every document is there once.
func TestClusterMoveWriterDies(t *testing.T) {
	c := startTestClusterOf(t, 4, "--enable-test-commands", "--crash-at", "move-removed")
	cl := c.connect()
	ctx := testCtx(t)
	admin := cl.Database("admin")
	runOK(t, admin, bson.D{{Key: "enableSharding", Value: "crash"}})
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "crash.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}},
		{Key: "numInitialChunks", Value: 8}})
	coll := cl.Database("crash").Collection("c")
	const n = 800
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "pad", Value: strings.Repeat("p", 200)}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	writer := c.primary(cl)
	var drained *clusterNode
	for _, nd := range c.nodes {
		if nd != writer {
			drained = nd
			break
		}
	}
	name := fmt.Sprintf("node%d", drained.id)
	runOK(t, admin, bson.D{{Key: "removeShard", Value: name}})

	logs := func() string {
		var b strings.Builder
		for _, nd := range c.nodes {
			for _, line := range strings.Split(nd.logText(), "\n") {
				if strings.Contains(line, "WARN") || strings.Contains(line, "mov") || strings.Contains(line, "writer") {
					fmt.Fprintf(&b, "node %d: %s\n", nd.id, line)
				}
			}
		}
		return b.String()
	}
	crashes, inserted := 0, n
	deadline := time.Now().Add(4 * time.Minute)
	for state := ""; state != "completed"; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("removeShard %s did not complete (last state %q, %d crashes)\n%s", name, state, crashes, logs())
		}
		for _, nd := range c.nodes {
			select {
			case <-nd.exited:
				if !strings.Contains(nd.logText(), "crashing at a crash point") {
					t.Fatalf("node %d exited, not at the crash point:\n%s", nd.id, nd.logText())
				}
				crashes++
				down := time.Now()
				nd.cmd = nil
				// Another node takes the writer's place and takes writes.
				for {
					wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: inserted}, {Key: "k", Value: inserted}})
					cancel()
					if err == nil {
						inserted++
						break
					}
					if time.Since(down) > 30*time.Second {
						t.Fatalf("no write acknowledged within 30 s of node %d's crash after a move's removal: %v\n%s", nd.id, err, logs())
					}
				}
				t.Logf("node %d crashed after a move's removal; writes again after %v", nd.id, time.Since(down).Round(time.Millisecond))
				c.start(nd)
			default:
			}
		}
		var r struct {
			State string `bson:"state"`
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := admin.RunCommand(rctx, bson.D{{Key: "removeShard", Value: name}}).Decode(&r); err == nil {
			state = r.State
		}
		cancel()
	}
	if crashes == 0 {
		t.Fatal("no writer crashed at the crash point: the drain moved nothing")
	}
	for i, nd := range c.nodes {
		if nd == drained {
			c.kill(nd)
			c.nodes = slices.Delete(c.nodes, i, i+1)
			break
		}
	}
	got := countIDs(t, coll)
	if len(got) != inserted {
		t.Errorf("%d distinct documents after the drain, want %d", len(got), inserted)
	}
	for id, times := range got {
		if times != 1 {
			t.Errorf("document %d is there %d times", id, times)
		}
	}
}
