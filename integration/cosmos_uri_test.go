package integration

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// TestCosmosConnectionString: a Cosmos DB connection string, with only the
// host changed (and the test's certificate trusted), works against a
// server with TLS, the replica set "globaldb" and the account as root user.
func TestCosmosConnectionString(t *testing.T) {
	tlsCfg, caFile := selfSignedTLS(t)
	const account, key = "myaccount", "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
	s := StartServer(t, ServerOptions{
		Dir:  t.TempDir(),
		TLS:  tlsCfg,
		Auth: true, RootUser: account, RootPassword: key,
		ReplicaSet: "globaldb",
	})
	_, port, _ := strings.Cut(s.Addr, ":")
	uri := "mongodb://" + account + ":" + url.QueryEscape(key) + "@localhost:" + port +
		"/?ssl=true&replicaSet=globaldb&retrywrites=false&maxIdleTimeMS=120000&appName=@" + account + "@" +
		"&tlsCAFile=" + url.QueryEscape(caFile)
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	if err := c.Ping(ctx, readpref.Primary()); err != nil {
		t.Fatalf("ping through the Cosmos connection string: %v", err)
	}
	coll := c.Database("shop").Collection("orders")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "item", Value: "tea"}}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || got["item"] != "tea" {
		t.Fatalf("find: %v %v", got, err)
	}
	// The driver sees a replica set primary; rs.status() and rs.conf() answer.
	raw := runOK(t, c.Database("admin"), bson.D{{Key: "hello", Value: 1}})
	if mustLookup(t, raw, "setName").StringValue() != "globaldb" || mustLookup(t, raw, "primary").StringValue() != "127.0.0.1:"+port {
		t.Fatalf("hello: %v", raw)
	}
	wantAbsent(t, raw, "msg")
	raw = runOK(t, c.Database("admin"), bson.D{{Key: "replSetGetStatus", Value: 1}})
	if got := mustLookup(t, raw, "members", "0", "stateStr").StringValue(); got != "PRIMARY" {
		t.Fatalf("replSetGetStatus: %v", raw)
	}
	raw = runOK(t, c.Database("admin"), bson.D{{Key: "replSetGetConfig", Value: 1}})
	if got := mustLookup(t, raw, "config", "_id").StringValue(); got != "globaldb" {
		t.Fatalf("replSetGetConfig: %v", raw)
	}
	// w: "majority" is acknowledged before the fsync; only j: true waits.
	if mustLookup(t, raw, "config", "writeConcernMajorityJournalDefault").Boolean() {
		t.Errorf("replSetGetConfig: writeConcernMajorityJournalDefault true: %v", raw)
	}
	// Cosmos DB's extension commands work through it.
	runOK(t, c.Database("shop"), bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "carts"}, {Key: "shardKey", Value: "user"}})

	// Without TLS the server does not answer; without the key it refuses.
	plain, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr + "/?directConnection=true").SetServerSelectionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Disconnect(context.Background()) }()
	if err := plain.Ping(ctx, nil); err == nil {
		t.Fatal("a client without TLS reached the TLS server")
	}
	bad, err := mongo.Connect(options.Client().ApplyURI(strings.Replace(uri, url.QueryEscape(key), "wrong", 1)).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bad.Disconnect(context.Background()) }()
	wantAuthFailed(t, bad.Ping(ctx, nil))
}

// TestReplSetCommandsAsRouter: without --replica-set, rs.status() answers
// as a mongos does.
func TestReplSetCommandsAsRouter(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	runFail(t, c.Database("admin"), bson.D{{Key: "replSetGetStatus", Value: 1}}, 76, "NoReplicationEnabled")
	runFail(t, c.Database("admin"), bson.D{{Key: "replSetGetConfig", Value: 1}}, 76, "NoReplicationEnabled")
}
