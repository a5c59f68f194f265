package integration

import (
	"fmt"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestClusterAcknowledgedWritesSurviveKillingEveryNode: with the Raft
// logs' fsyncs deferred (the default --raft-sync-interval), every node is
// killed with SIGKILL at once right after its last acknowledgement; after
// a restart of all three every acknowledged insert is there once, and
// j: true writes and the fsync command work on the cluster.
func TestClusterAcknowledgedWritesSurviveKillingEveryNode(t *testing.T) {
	c := startTestCluster(t)
	cl := c.connect()
	coll := cl.Database("durable").Collection("docs")
	ctx := testCtx(t)

	const writers, each = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("w%d-%d", w, i)}, {Key: "pad", Value: make([]byte, 512)}}); err != nil {
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
	journaled := coll.Database().Collection("docs", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: "majority", Journal: boolPtr(true)}))
	if _, err := journaled.InsertOne(ctx, bson.D{{Key: "_id", Value: "journaled"}}); err != nil {
		t.Fatalf("insert with j: true: %v", err)
	}
	if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "fsync", Value: 1}}).Err(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	// rs.conf() names the three nodes, and says that w: "majority" does
	// not wait for the journal.
	conf := runOK(t, cl.Database("admin"), bson.D{{Key: "replSetGetConfig", Value: 1}})
	if hosts, _ := mustLookup(t, conf, "config", "members").Array().Values(); len(hosts) != 3 ||
		mustLookup(t, conf, "config", "writeConcernMajorityJournalDefault").Boolean() {
		t.Errorf("replSetGetConfig: %v", conf)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "last"}}); err != nil {
		t.Fatal(err)
	}
	// At once: no node gets to fsync what the others acknowledged.
	var kills sync.WaitGroup
	for _, n := range c.nodes {
		kills.Add(1)
		go func() { defer kills.Done(); c.kill(n) }()
	}
	kills.Wait()
	for _, n := range c.nodes {
		c.start(n)
	}
	cl = c.connect()
	coll = cl.Database("durable").Collection("docs")
	n, err := coll.CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(writers*each + 2); n != want {
		t.Fatalf("after every node was killed: %d documents, want %d", n, want)
	}
	for _, id := range []string{"w0-0", fmt.Sprintf("w%d-%d", writers-1, each-1), "journaled", "last"} {
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err(); err != nil {
			t.Errorf("document %s: %v", id, err)
		}
	}
}
