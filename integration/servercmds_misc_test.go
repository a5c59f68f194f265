package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestServerMiscCommands: fsync, profile (and slow-query logging),
// killOp, getDefaultRWConcern, listShards and balancerStatus, which shell
// helpers and tools call.
func TestServerMiscCommands(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), EnableTestCommands: true})
	c := newTestClient(t, s)
	admin := c.Database("admin")
	db := c.Database("misc")
	ctx := testCtx(t)
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	raw := runOK(t, admin, bson.D{{Key: "fsync", Value: 1}})
	if n := intOf(t, mustLookup(t, raw, "numFiles")); n != 1 {
		t.Errorf("fsync numFiles %d", n)
	}
	runFail(t, admin, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}}, 115, "CommandNotSupported")
	runFail(t, admin, bson.D{{Key: "fsyncUnlock", Value: 1}}, 20, "IllegalOperation")
	runFail(t, db, bson.D{{Key: "fsync", Value: 1}}, 13, "Unauthorized") // admin only

	raw = runOK(t, db, bson.D{{Key: "profile", Value: -1}})
	if lvl, slow := intOf(t, mustLookup(t, raw, "was")), intOf(t, mustLookup(t, raw, "slowms")); lvl != 0 || slow != 100 {
		t.Errorf("profile -1: was %d slowms %d", lvl, slow)
	}
	runOK(t, db, bson.D{{Key: "profile", Value: 1}, {Key: "slowms", Value: 20}})
	raw = runOK(t, db, bson.D{{Key: "profile", Value: -1}})
	if lvl, slow := intOf(t, mustLookup(t, raw, "was")), intOf(t, mustLookup(t, raw, "slowms")); lvl != 1 || slow != 20 {
		t.Errorf("profile after setting 1/20: was %d slowms %d", lvl, slow)
	}
	runFail(t, db, bson.D{{Key: "profile", Value: 2}}, 2, "BadValue")
	runFail(t, db, bson.D{{Key: "profile", Value: 0}, {Key: "sampleRate", Value: 2}}, 2, "BadValue")

	// A find held 60 ms by a fail point is slower than slowms 20: logged.
	runOK(t, admin, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 60}}}})
	if err := db.Collection("c").FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatal(err)
	}
	raw = runOK(t, admin, bson.D{{Key: "getLog", Value: "global"}})
	lines, _ := mustLookup(t, raw, "log").Array().Values()
	found := false
	for _, l := range lines {
		line := l.StringValue()
		if strings.Contains(line, `"msg":"Slow query"`) && strings.Contains(line, `"ns":"misc.c"`) && strings.Contains(line, `"command":"find"`) && strings.Contains(line, `"id":51803`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no Slow query line for the blocked find in getLog: %v", lines)
	}
	runOK(t, db, bson.D{{Key: "profile", Value: 0}, {Key: "slowms", Value: 100}})

	raw = runOK(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: 12345}})
	if got := mustLookup(t, raw, "info").StringValue(); got != "attempting to kill op" {
		t.Errorf("killOp info %q", got)
	}
	runFail(t, admin, bson.D{{Key: "killOp", Value: 1}}, 2, "BadValue")

	raw = runOK(t, admin, bson.D{{Key: "getDefaultRWConcern", Value: 1}})
	if got := mustLookup(t, raw, "defaultWriteConcern", "w").StringValue(); got != "majority" {
		t.Errorf("defaultWriteConcern w %q", got)
	}
	raw = runOK(t, admin, bson.D{{Key: "listShards", Value: 1}})
	if got := mustLookup(t, raw, "shards", "0", "_id").StringValue(); got != "shard-0" {
		t.Errorf("listShards: %v", raw)
	}
	_, port, _ := strings.Cut(s.Addr, ":")
	if host := mustLookup(t, raw, "shards", "0", "host").StringValue(); !strings.HasSuffix(host, ":"+port) {
		t.Errorf("listShards host %q does not name the port the server listens on (%s)", host, port)
	}
	raw = runOK(t, admin, bson.D{{Key: "balancerStatus", Value: 1}})
	if mustLookup(t, raw, "inBalancerRound").Boolean() {
		t.Errorf("balancerStatus: %v", raw)
	}
}
