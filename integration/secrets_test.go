package integration

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/auth"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Secrets: passwords and SCRAM messages never show in $currentOp, getLog
// or error messages; an unknown user is answered like a real one; an
// address that keeps failing to authenticate is slowed and reported once
// per interval.

// heldOp starts cmd on a client of its own whose appName a failCommand
// fail point holds for 10 s, and returns it as $currentOp lists it (match
// selects it), with a function that kills it and waits for its end.
func heldOp(t *testing.T, s *Server, admin *mongo.Database, run func(ctx context.Context, c *mongo.Client) error, opts *options.ClientOptions, failCmd, app string, match bson.D) (bson.Raw, func()) {
	t.Helper()
	ctx := testCtx(t)
	runOK(t, admin, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{failCmd}}, {Key: "blockConnection", Value: true},
			{Key: "blockTimeMS", Value: 10_000}, {Key: "appName", Value: app}}}})
	held := newTestClient(t, s, opts.SetAppName(app))
	done := make(chan error, 1)
	go func() { done <- run(ctx, held) }()
	var op bson.Raw
	waitFor(t, failCmd+" held in $currentOp", func() bool {
		cur, err := admin.Aggregate(ctx, bson.A{
			bson.D{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}}}},
			bson.D{{Key: "$match", Value: match}},
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
		return op != nil
	})
	return op, func() {
		runOK(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: mustLookup(t, op, "opid")}})
		select {
		case <-done:
		case <-time.After(9 * time.Second):
			t.Fatalf("the held %s still runs after killOp", failCmd)
		}
	}
}

// TestSecretsRedacted: $currentOp shows createUser's pwd and a SASL
// step's payload as "xxx"; no password reaches getLog (every command
// logged as slow, a failed authentication whose payload held one) or an
// error message.
func TestSecretsRedacted(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), EnableTestCommands: true})
	c := newTestClient(t, s)
	admin := c.Database("admin")
	sec := c.Database("sec")
	const pw1, pw2, pw3, pw4, pw5 = "Held-Secret-1", "Sasl-Secret-2", "Update-Secret-3", "Error-Secret-4", "Plain-Secret-5"
	// Every command is a slow query now, so each reaches getLog.
	runOK(t, sec, bson.D{{Key: "profile", Value: 0}, {Key: "slowms", Value: 0}})

	op, kill := heldOp(t, s, admin, func(ctx context.Context, cl *mongo.Client) error {
		return cl.Database("sec").RunCommand(ctx, bson.D{{Key: "createUser", Value: "held"}, {Key: "pwd", Value: pw1}, {Key: "roles", Value: bson.A{}}}).Err()
	}, options.Client(), "createUser", "pw-app", bson.D{{Key: "command.createUser", Value: "held"}})
	if got := mustLookup(t, op, "command", "pwd").StringValue(); got != "xxx" {
		t.Errorf("createUser's pwd in $currentOp: %q, want \"xxx\"", got)
	}
	if strings.Contains(string(op), pw1) {
		t.Errorf("the password shows in $currentOp: %v", op)
	}
	if got := mustLookup(t, op, "command", "roles"); got.Type != bson.TypeArray {
		t.Errorf("createUser's other fields are gone: %v", op)
	}
	kill()

	createUser(t, sec, "saslUser", pw2, bson.A{})
	op, kill = heldOp(t, s, admin, func(ctx context.Context, cl *mongo.Client) error {
		return cl.Ping(ctx, nil)
	}, options.Client().SetAuth(options.Credential{Username: "saslUser", Password: pw2, AuthSource: "sec"}),
		"saslContinue", "sasl-app", bson.D{{Key: "command.saslContinue", Value: bson.D{{Key: "$exists", Value: true}}}})
	if got := mustLookup(t, op, "command", "payload"); got.Type != bson.TypeString || got.StringValue() != "xxx" {
		t.Errorf("saslContinue's payload in $currentOp: %v, want \"xxx\"", got)
	}
	if strings.Contains(string(op), "p=") {
		t.Errorf("the client proof shows in $currentOp: %v", op)
	}
	kill()

	runOK(t, sec, bson.D{{Key: "updateUser", Value: "saslUser"}, {Key: "pwd", Value: pw3}})
	err := sec.RunCommand(testCtx(t), bson.D{{Key: "createUser", Value: "bad"}, {Key: "pwd", Value: pw4}, {Key: "roles", Value: bson.A{"noSuchRole"}}}).Err()
	if err == nil || strings.Contains(err.Error(), pw4) {
		t.Errorf("createUser with an unknown role: %v", err)
	}

	// A password where SCRAM's header goes: the failure is logged, the
	// parser's error quoting it is not.
	runFail(t, sec, bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte(pw5 + ",,n=saslUser,r=abc")}}}, 18, "AuthenticationFailed")

	raw := runOK(t, admin, bson.D{{Key: "getLog", Value: "global"}})
	log := mustLookup(t, raw, "log").Array().String()
	if !strings.Contains(log, "Slow query") || !strings.Contains(log, "updateUser") || !strings.Contains(log, "Authentication failed") {
		t.Fatalf("the slow commands or the failed authentication are not in getLog: %s", log)
	}
	for _, pw := range []string{pw1, pw2, pw3, pw4, pw5} {
		if strings.Contains(log, pw) {
			t.Errorf("getLog shows password %q", pw)
		}
	}
}

// scramStart sends saslStart for user with SCRAM-SHA-256 and returns the
// conversation id and the server's first message.
func scramStart(t *testing.T, db *mongo.Database, user string) (int32, string) {
	t.Helper()
	raw := runOK(t, db, bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte("n,,n=" + user + ",r=fyko+d2lbbFgONRv9qkxdawL")}}, {Key: "autoAuthorize", Value: 1}})
	_, data := mustLookup(t, raw, "payload").Binary()
	return mustLookup(t, raw, "conversationId").Int32(), string(data)
}

// scramField is field k= of a SCRAM message.
func scramField(msg, k string) string {
	for _, f := range strings.Split(msg, ",") {
		if v, ok := strings.CutPrefix(f, k+"="); ok {
			return v
		}
	}
	return ""
}

// scramWrongProof answers the server's first message with a proof of no
// password and returns the error.
func scramWrongProof(t *testing.T, db *mongo.Database, id int32, serverFirst string) mongo.CommandError {
	t.Helper()
	final := "c=biws,r=" + scramField(serverFirst, "r") + ",p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	err := db.RunCommand(testCtx(t), bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: id}, {Key: "payload", Value: bson.Binary{Data: []byte(final)}}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("saslContinue with a wrong proof: %v", err)
	}
	return ce
}

// TestAuthUnknownUserAndBackoff: saslStart for a user that does not exist
// answers with a salt stable across calls and the real iteration count,
// and the exchange fails at the proof with the error of a wrong password.
// Past the (injected) threshold of failures, attempts from that address
// wait, doubling up to the cap, while another address is not slowed; the
// failures are reported once per interval with their count.
func TestAuthUnknownUserAndBackoff(t *testing.T) {
	limits := auth.BackoffLimits{Threshold: 4, Window: time.Minute, Base: 300 * time.Millisecond, Max: 600 * time.Millisecond, LogInterval: time.Second}
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), AuthBackoff: limits})
	c := newTestClient(t, s)
	admin := c.Database("admin")
	createUser(t, admin, "real", "right", bson.A{})

	_, ghost1 := scramStart(t, admin, "ghost")
	_, ghost2 := scramStart(t, admin, "ghost")
	_, other := scramStart(t, admin, "ghost2")
	idReal, real := scramStart(t, admin, "real")
	if salt := scramField(ghost1, "s"); salt == "" || salt != scramField(ghost2, "s") || salt == scramField(other, "s") {
		t.Errorf("decoy salts: %q, %q; another name %q", ghost1, ghost2, other)
	}
	if got, want := scramField(ghost1, "i"), scramField(real, "i"); got != want || want != "15000" {
		t.Errorf("iterations: unknown user %s, real user %s, want 15000", got, want)
	}
	if a, b := len(scramField(ghost1, "s")), len(scramField(real, "s")); a != b {
		t.Errorf("salt lengths: unknown user %d, real user %d", a, b)
	}
	wrong := scramWrongProof(t, admin, idReal, real)
	// Each saslStart replaces the connection's conversation: only the
	// last is open, so the unknown user's is run again.
	id1, ghost3 := scramStart(t, admin, "ghost")
	unknown := scramWrongProof(t, admin, id1, ghost3)
	if wrong.Code != 18 || unknown.Code != wrong.Code || unknown.Message != wrong.Message || unknown.Name != wrong.Name {
		t.Errorf("unknown user: %d %s %q; wrong password: %d %s %q", unknown.Code, unknown.Name, unknown.Message, wrong.Code, wrong.Name, wrong.Message)
	}

	// Two failures so far; two more reach the threshold, free.
	for i := 0; i < 2; i++ {
		id, first := scramStart(t, admin, "real")
		scramWrongProof(t, admin, id, first)
	}
	start := time.Now()
	id, first := scramStart(t, admin, "real")
	if d := time.Since(start); d > limits.Base/2 {
		t.Errorf("an attempt at the threshold took %v", d)
	}
	// The wait runs from the failure, which the server records before its
	// reply is sent: the clock starts before the failing proof so that the
	// reply's way back is not taken off the measured wait.
	start = time.Now()
	scramWrongProof(t, admin, id, first) // 5 failures: the next attempt waits 300 ms
	id, first = scramStart(t, admin, "real")
	if d := time.Since(start); d < limits.Base {
		t.Errorf("the failure and the attempt after it (5 failures) took %v, want at least %v", d, limits.Base)
	}
	start = time.Now()
	scramWrongProof(t, admin, id, first) // 6: 600 ms
	id, first = scramStart(t, admin, "real")
	if d := time.Since(start); d < limits.Max {
		t.Errorf("the failure and the attempt after it (6 failures) took %v, want at least %v", d, limits.Max)
	}
	scramWrongProof(t, admin, id, first) // 7 failures in all

	// Another address (127.0.0.2 is loopback too) is not slowed, and the
	// right password works from it.
	other2 := newTestClient(t, s, options.Client().SetDialer(&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}))
	start = time.Now()
	oid, ofirst := scramStart(t, other2.Database("admin"), "real")
	if d := time.Since(start); d > limits.Base/2 {
		t.Errorf("an attempt from another address took %v", d)
	}
	scramWrongProof(t, other2.Database("admin"), oid, ofirst)
	if err := userClient(t, s, "real", "right", "admin", "").Ping(testCtx(t), nil); err != nil {
		t.Errorf("the right password after failures: %v", err)
	}

	// Reports: 7 failures from 127.0.0.1 and 1 from 127.0.0.2, in fewer
	// lines than failures (the first at once, the rest once a second).
	reported := map[string]int64{}
	lines := 0
	waitFor(t, "every failure reported in getLog", func() bool {
		raw := runOK(t, admin, bson.D{{Key: "getLog", Value: "global"}})
		reported, lines = map[string]int64{}, 0
		vals, _ := mustLookup(t, raw, "log").Array().Values()
		for _, v := range vals {
			var line struct {
				ID   int `bson:"id"`
				Attr struct {
					Source   string `bson:"source"`
					Failures int64  `bson:"failures"`
				} `bson:"attr"`
			}
			if err := bson.UnmarshalExtJSON([]byte(v.StringValue()), false, &line); err != nil || line.ID != 20249 {
				continue
			}
			reported[line.Attr.Source] += line.Attr.Failures
			lines++
		}
		return reported["127.0.0.1"] == 7 && reported["127.0.0.2"] == 1
	})
	if lines >= 8 {
		t.Errorf("%d report lines for 8 failures: want them grouped", lines)
	}
}
