package integration

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCurrentOpAndKillOp: a command in progress (a find a fail point holds
// for 10 s) is listed by $currentOp with what it runs, and killOp ends it
// at once with 11601 Interrupted; then it is no longer listed.
func TestCurrentOpAndKillOp(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), EnableTestCommands: true})
	c := newTestClient(t, s)
	admin := c.Database("admin")
	ctx := testCtx(t)
	if _, err := c.Database("ops").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	runOK(t, admin, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "blockConnection", Value: true},
			{Key: "blockTimeMS", Value: 10_000}, {Key: "appName", Value: "slow-app"}}}})
	slow := newTestClient(t, s, options.Client().SetAppName("slow-app"))
	done := make(chan error, 1)
	started := time.Now()
	go func() {
		done <- slow.Database("ops").Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err()
	}()

	// Wait for it to show.
	var op bson.Raw
	for deadline := time.Now().Add(5 * time.Second); op == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		cur, err := admin.Aggregate(ctx, bson.A{
			bson.D{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}}}},
			bson.D{{Key: "$match", Value: bson.D{{Key: "command.find", Value: "c"}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var ops []bson.Raw
		if err := cur.All(ctx, &ops); err != nil {
			t.Fatal(err)
		}
		if len(ops) > 0 {
			op = ops[0]
		}
	}
	if op == nil {
		t.Fatal("the held find never showed in $currentOp")
	}
	for field, want := range map[string]string{"op": "query", "ns": "ops.c", "appName": "slow-app", "type": "op"} {
		if got := mustLookup(t, op, field).StringValue(); got != want {
			t.Errorf("%s = %q, want %q (%v)", field, got, want, op)
		}
	}
	if !mustLookup(t, op, "active").Boolean() || mustLookup(t, op, "command", "$db").StringValue() != "ops" {
		t.Errorf("op %v", op)
	}
	opid := mustLookup(t, op, "opid")

	raw := runOK(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}})
	if got := mustLookup(t, raw, "info").StringValue(); got != "attempting to kill op" {
		t.Errorf("killOp reply %v", raw)
	}
	select {
	case err := <-done:
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 11601 || ce.Name != "Interrupted" {
			t.Errorf("killed find: %v, want 11601 Interrupted", err)
		}
		if d := time.Since(started); d > 8*time.Second {
			t.Errorf("the find ended after %v: killOp did not interrupt it", d)
		}
	case <-time.After(9 * time.Second):
		t.Fatal("the find still runs after killOp")
	}
	cur, err := admin.Aggregate(ctx, bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}, bson.D{{Key: "$match", Value: bson.D{{Key: "opid", Value: opid}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if cur.Next(ctx) {
		t.Errorf("killed operation still listed: %v", cur.Current)
	}
	_ = cur.Close(ctx)

	// Bad input.
	runFail(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: "x"}}, 14, "TypeMismatch")
	runFail(t, admin, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$currentOp", Value: bson.D{{Key: "nope", Value: true}}}}}}, {Key: "cursor", Value: bson.D{}}}, 9, "FailedToParse")
	// Unknown ids and the router form are accepted, as MongoDB does.
	runOK(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: "shard-0:99999"}})
}
