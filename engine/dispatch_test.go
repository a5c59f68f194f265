package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// newDispatchEngine is an engine with cfg on an in-memory store; both
// close when t ends.
func newDispatchEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	st, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = storage.Local(st)
	e := New(cfg)
	t.Cleanup(func() {
		e.Close()
		_ = st.Close()
	})
	return e
}

// newConn is a connection to e with no network behind it.
func newConn(e *Engine) *conn {
	return &conn{e: e, wc: &wire.Conn{}}
}

// opMsg is cmd as an OP_MSG request.
func opMsg(t *testing.T, cmd bson.D) *wire.Request {
	t.Helper()
	body, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return &wire.Request{OpCode: wire.OpMsg, Body: body}
}

// stateFor is cmd on its way through dispatch on c, before any step.
func stateFor(t *testing.T, c *conn, cmd bson.D) *dispatchState {
	t.Helper()
	return &dispatchState{c: c, wr: opMsg(t, cmd), ctx: context.Background()}
}

// through runs steps on d, in order, failing t if one ends the command;
// finish runs when t ends.
func through(t *testing.T, d *dispatchState, steps ...func() ([]byte, bool)) {
	t.Helper()
	t.Cleanup(func() { d.finish(nil) })
	for _, step := range steps {
		if out, done := step(); done {
			t.Fatalf("a step before the one tested ended the command: %s", replyString(out))
		}
	}
}

// finishNow runs finish on d at once, not again when t ends.
func finishNow(d *dispatchState, reply []byte) []byte {
	out := d.finish(reply)
	d.cancel, d.cancelDeadline, d.stmt = nil, nil, nil
	return out
}

func replyString(out []byte) string {
	if out == nil {
		return "<no reply>"
	}
	return bson.Raw(out).String()
}

// wantRefusal fails t unless out, done is a refusal with code and a
// message containing msg.
func wantRefusal(t *testing.T, out []byte, done bool, code Code, msg string) {
	t.Helper()
	if !done {
		t.Fatalf("the command went on; want code %d", code)
	}
	doc := bsoncore.Document(out)
	got, _ := doc.Lookup("code").AsInt64OK()
	errmsg, _ := doc.Lookup("errmsg").StringValueOK()
	if ok, _ := doc.Lookup("ok").AsFloat64OK(); ok != 0 || Code(got) != code || !strings.Contains(errmsg, msg) {
		t.Fatalf("reply %s; want code %d with %q", replyString(out), code, msg)
	}
}

// wantGoOn runs step and fails t unless it let the command go on.
func wantGoOn(t *testing.T, step func() ([]byte, bool)) {
	t.Helper()
	if out, done := step(); done || out != nil {
		t.Fatalf("the step ended the command: %s", replyString(out))
	}
}

func TestDispatchParse(t *testing.T) {
	e := newDispatchEngine(t, Config{})
	c := newConn(e)
	for _, tc := range []struct {
		name string
		wr   *wire.Request
		code Code
		msg  string
	}{
		{"unreadable", &wire.Request{OpCode: wire.OpMsg, Err: errors.New("bad section")}, ErrInvalidOptions, "invalid"},
		{"empty", opMsg(t, bson.D{}), ErrFailedToParse, "empty command document"},
		{"no $db", opMsg(t, bson.D{{Key: "ping", Value: 1}}), ErrFailedToParse, "command ping has no $db"},
		{"$db not a string", opMsg(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: 1}}), ErrTypeMismatch, "$db"},
		{"OP_QUERY find", &wire.Request{OpCode: wire.OpQuery, DB: "d", Body: opMsg(t, bson.D{{Key: "find", Value: "c"}}).Body},
			ErrUnsupportedOpQueryCommand, "Unsupported OP_QUERY command: find"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &dispatchState{c: c, wr: tc.wr, ctx: context.Background()}
			out, done := d.parse()
			wantRefusal(t, out, done, tc.code, tc.msg)
		})
	}

	d := stateFor(t, c, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	wantGoOn(t, d.parse)
	if d.name != "ping" || d.req == nil || d.req.db != "admin" || d.units() == nil {
		t.Fatalf("parsed name %q, request %+v", d.name, d.req)
	}
	legacy := &dispatchState{c: c, ctx: context.Background(),
		wr: &wire.Request{OpCode: wire.OpQuery, DB: "admin", Body: opMsg(t, bson.D{{Key: "hello", Value: 1}}).Body}}
	wantGoOn(t, legacy.parse)
	if legacy.req.db != "admin" {
		t.Fatalf("OP_QUERY hello: db %q, want the namespace's", legacy.req.db)
	}
}

func TestDispatchLookup(t *testing.T) {
	open := newConn(newDispatchEngine(t, Config{}))
	closed := newConn(newDispatchEngine(t, Config{Auth: true}))
	for _, tc := range []struct {
		name string
		c    *conn
		cmd  bson.D
		code Code
		msg  string
	}{
		{"unknown", open, bson.D{{Key: "frobnicate", Value: 1}, {Key: "$db", Value: "d"}}, ErrCommandNotFound, "no such command: 'frobnicate'"},
		{"unsupported", open, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "$db", Value: "d"}}, ErrCommandNotSupported, "mapReduce is not supported by Parsec"},
		{"unsupported, not authenticated", closed, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "$db", Value: "d"}}, ErrUnauthorized, "Command mapReduce requires authentication"},
		{"unknown, not authenticated", closed, bson.D{{Key: "frobnicate", Value: 1}, {Key: "$db", Value: "d"}}, ErrCommandNotFound, "no such command"},
		{"admin only", open, bson.D{{Key: "getLog", Value: "global"}, {Key: "$db", Value: "d"}}, ErrUnauthorized, "getLog may only be run against the admin database."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stateFor(t, tc.c, tc.cmd)
			through(t, d, d.parse)
			out, done := d.lookup()
			wantRefusal(t, out, done, tc.code, tc.msg)
		})
	}

	d := stateFor(t, open, bson.D{{Key: "ismaster", Value: 1}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse)
	wantGoOn(t, d.lookup)
	if d.cmd.name != "isMaster" || d.cmd.run == nil {
		t.Fatalf("ismaster found %q, want the isMaster handler", d.cmd.name)
	}
}

func TestDispatchAuthorize(t *testing.T) {
	find := bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "d"}}
	insert := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{}}, {Key: "$db", Value: "d"}}
	ping := bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "d"}}

	open := newConn(newDispatchEngine(t, Config{}))
	d := stateFor(t, open, find)
	through(t, d, d.parse, d.lookup)
	wantGoOn(t, d.authorize)

	e := newDispatchEngine(t, Config{Auth: true})
	anonymous := newConn(e)
	d = stateFor(t, anonymous, find)
	through(t, d, d.parse, d.lookup)
	out, done := d.authorize()
	wantRefusal(t, out, done, ErrUnauthorized, "Command find requires authentication")
	d = stateFor(t, anonymous, ping)
	through(t, d, d.parse, d.lookup)
	wantGoOn(t, d.authorize)

	reader := newConn(e)
	reader.auth.user = &authUser{name: "u", db: "d", roles: []auth.RoleRef{{Role: "read", DB: "d"}}, version: e.usersVersion.Load()}
	d = stateFor(t, reader, find)
	through(t, d, d.parse, d.lookup)
	wantGoOn(t, d.authorize)
	d = stateFor(t, reader, insert)
	through(t, d, d.parse, d.lookup)
	out, done = d.authorize()
	wantRefusal(t, out, done, ErrUnauthorized, `not authorized on d to execute command { insert: "c", $db: "d" }`)
}

func TestDispatchRegister(t *testing.T) {
	e := newDispatchEngine(t, Config{})
	d := stateFor(t, newConn(e), bson.D{{Key: "count", Value: "c"}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse, d.lookup, d.authorize)
	wantGoOn(t, d.register)
	ops := e.running.snapshot()
	if len(ops) != 1 || ops[0].name != "count" || ops[0].db != "d" || ops[0].id != d.req.op.id {
		t.Fatalf("running %+v, want the count", ops)
	}
	if !e.running.kill(d.req.op.id) {
		t.Fatal("killOp did not find the command")
	}
	if !errors.Is(d.ctx.Err(), context.Canceled) {
		t.Fatalf("killed command's context: %v", d.ctx.Err())
	}
	finishNow(d, nil)
	if ops := e.running.snapshot(); len(ops) != 0 {
		t.Fatalf("running after finish: %+v", ops)
	}
}

func TestDispatchCheckArgs(t *testing.T) {
	c := newConn(newDispatchEngine(t, Config{}))
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code Code
		msg  string
	}{
		{"duplicate field", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{}}, {Key: "filter", Value: bson.D{}}, {Key: "$db", Value: "d"}},
			ErrDuplicateField, "BSON field 'find.filter' is a duplicate field"},
		{"unknown read concern level", bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "eventual"}}}, {Key: "$db", Value: "d"}},
			ErrFailedToParse, "readConcern.level must be"},
		{"snapshot count", bson.D{{Key: "count", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}, {Key: "$db", Value: "d"}},
			ErrInvalidOptions, "Command count does not support"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stateFor(t, c, tc.cmd)
			through(t, d, d.parse, d.lookup, d.authorize, d.register)
			out, done := d.checkArgs()
			wantRefusal(t, out, done, tc.code, tc.msg)
		})
	}

	d := stateFor(t, c, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse, d.lookup, d.authorize, d.register)
	wantGoOn(t, d.checkArgs)
	if level, _ := d.snapshotRC.Lookup("level").StringValueOK(); level != "snapshot" {
		t.Fatalf("snapshot read concern kept: %v", d.snapshotRC)
	}
}

func TestDispatchBindSession(t *testing.T) {
	e := newDispatchEngine(t, Config{})
	c := newConn(e)
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code Code
		msg  string
	}{
		{"startTransaction alone", bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)},
			{Key: "startTransaction", Value: true}, {Key: "$db", Value: "d"}}, ErrInvalidOptions, "startTransaction requires autocommit: false"},
		{"txnNumber on a read", bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "d"}},
			errNotARetryableWriteCommand, "find is not a retryable write command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stateFor(t, c, tc.cmd)
			through(t, d, d.parse, d.lookup, d.authorize, d.register, d.checkArgs)
			out, done := d.bindSession()
			wantRefusal(t, out, done, tc.code, tc.msg)
		})
	}

	start := bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)},
		{Key: "startTransaction", Value: true}, {Key: "autocommit", Value: false}, {Key: "$db", Value: "d"}}
	d := stateFor(t, c, start)
	through(t, d, d.parse, d.lookup, d.authorize, d.register, d.checkArgs)
	wantGoOn(t, d.bindSession)
	if d.stmt == nil || statementOf(d.ctx) != d.stmt {
		t.Fatal("no transaction statement in the context")
	}
	ok, _ := okReply()
	out := finishNow(d, ok)
	if _, err := bsoncore.Document(out).LookupErr("recoveryToken", "recoveryShardId"); err != nil {
		t.Fatalf("a transaction's reply after finish: %s", replyString(out))
	}

	// finish released the session: the transaction's next statement binds
	// at once.
	next := bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)},
		{Key: "autocommit", Value: false}, {Key: "$db", Value: "d"}}
	d = stateFor(t, c, next)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.ctx = ctx
	through(t, d, d.parse, d.lookup, d.authorize, d.register, d.checkArgs)
	wantGoOn(t, d.bindSession)
}

func TestDispatchSetDeadline(t *testing.T) {
	c := newConn(newDispatchEngine(t, Config{}))
	for _, tc := range []struct {
		name string
		cmd  string
		ms   any
		code Code
	}{
		{"negative", "find", int64(-1), ErrValueNegative},
		{"negative on count", "count", int64(-1), ErrBadValue},
		{"a string", "find", "10", ErrTypeMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stateFor(t, c, bson.D{{Key: tc.cmd, Value: "c"}, {Key: "maxTimeMS", Value: tc.ms}, {Key: "$db", Value: "d"}})
			through(t, d, d.parse, d.lookup, d.register) // checkArgs would refuse it first
			out, done := d.setDeadline()
			wantRefusal(t, out, done, tc.code, "maxTimeMS")
		})
	}

	for _, tc := range []struct {
		name     string
		cmd      string
		ms       int64
		deadline bool
	}{
		{"find", "find", 60_000, true},
		{"zero", "find", 0, false},
		{"getMore", "getMore", 60_000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := bson.E{Key: tc.cmd, Value: "c"}
			if tc.cmd == "getMore" {
				first = bson.E{Key: "getMore", Value: int64(1)}
			}
			d := stateFor(t, c, bson.D{first, {Key: "collection", Value: "c"}, {Key: "maxTimeMS", Value: tc.ms}, {Key: "$db", Value: "d"}})
			through(t, d, d.parse, d.lookup, d.register)
			wantGoOn(t, d.setDeadline)
			if _, has := d.ctx.Deadline(); has != tc.deadline {
				t.Fatalf("deadline %v, want %v", has, tc.deadline)
			}
		})
	}

	d := stateFor(t, c, bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: 1}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse, d.lookup)
	wantGoOn(t, d.setDeadline)
	<-d.ctx.Done()
	if got := toCommandError(d.ctx.Err()); got.Code != ErrMaxTimeMSExpired {
		t.Fatalf("after maxTimeMS: %v", got)
	}
}

// configureFailPoint runs configureFailPoint with args on e.
func configureFailPoint(t *testing.T, e *Engine, args bson.D) {
	t.Helper()
	cmd := append(bson.D{{Key: "configureFailPoint", Value: "failCommand"}}, args...)
	if _, err := runCmd(t, e, (*Engine).cmdConfigureFailPoint, cmd); err != nil {
		t.Fatal(err)
	}
}

func TestDispatchApplyFailPoint(t *testing.T) {
	e := newDispatchEngine(t, Config{EnableTestCommands: true})
	c := newConn(e)
	find := bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "d"}}
	configureFailPoint(t, e, bson.D{{Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "errorCode", Value: 2}}}})

	d := stateFor(t, c, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse, d.lookup)
	wantGoOn(t, d.applyFailPoint)

	d = stateFor(t, c, find)
	through(t, d, d.parse, d.lookup)
	out, done := d.applyFailPoint()
	wantRefusal(t, out, done, ErrBadValue, "Failing command via 'failCommand' failpoint")
	if name, _ := bsoncore.Document(out).Lookup("codeName").StringValueOK(); name != "BadValue" {
		t.Fatalf("codeName %q", name)
	}

	d = stateFor(t, c, find) // times: 1 is spent
	through(t, d, d.parse, d.lookup)
	wantGoOn(t, d.applyFailPoint)

	configureFailPoint(t, e, bson.D{{Key: "mode", Value: "alwaysOn"},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "closeConnection", Value: true}}}})
	d = stateFor(t, c, find)
	through(t, d, d.parse, d.lookup)
	out, done = d.applyFailPoint()
	if !done || out != nil || !d.wr.CloseConnection {
		t.Fatalf("closeConnection: reply %s, done %v, connection closed %v", replyString(out), done, d.wr.CloseConnection)
	}

	// Without test commands no fail point fires, however set.
	off := newDispatchEngine(t, Config{})
	configureFailPoint(t, off, bson.D{{Key: "mode", Value: "alwaysOn"},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "errorCode", Value: 2}}}})
	d = stateFor(t, newConn(off), find)
	through(t, d, d.parse, d.lookup)
	wantGoOn(t, d.applyFailPoint)
}

func TestDispatchTakeSnapshot(t *testing.T) {
	c := newConn(newDispatchEngine(t, Config{}))
	d := stateFor(t, c, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse, d.lookup, d.checkArgs)
	wantGoOn(t, d.takeSnapshot)
	if d.snapshotTS == nil || snapshotOf(d.ctx) == nil {
		t.Fatal("a snapshot read has no snapshot")
	}

	d = stateFor(t, c, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"},
		{Key: "atClusterTime", Value: "yesterday"}}}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse, d.lookup, d.checkArgs)
	out, done := d.takeSnapshot()
	wantRefusal(t, out, done, ErrTypeMismatch, "readConcern.atClusterTime")

	d = stateFor(t, c, bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse, d.lookup, d.checkArgs)
	wantGoOn(t, d.takeSnapshot)
	if d.snapshotTS != nil || snapshotOf(d.ctx) != nil {
		t.Fatal("a read of the latest data took a snapshot")
	}
}

func TestDispatchExecute(t *testing.T) {
	e := newDispatchEngine(t, Config{})
	c := newConn(e)
	ran := 0
	d := stateFor(t, c, bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse, d.lookup)
	d.cmd.run = func(*Engine, context.Context, *request) ([]byte, error) {
		ran++
		return nil, errorf(ErrBadValue, "no good")
	}
	before := e.ops.query.Load()
	out := d.execute()
	wantRefusal(t, out, true, ErrBadValue, "no good")
	if ran != 1 || e.ops.query.Load() != before+1 {
		t.Fatalf("handler ran %d times, opcounters.query +%d", ran, e.ops.query.Load()-before)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.ctx = ctx
	wantRefusal(t, d.execute(), true, ErrInterrupted, "operation was interrupted")
	if ran != 1 || e.ops.query.Load() != before+2 {
		t.Fatalf("killed: handler ran %d times in all, opcounters.query +%d", ran, e.ops.query.Load()-before)
	}
}

func TestDispatchDecorate(t *testing.T) {
	c := newConn(newDispatchEngine(t, Config{}))
	d := stateFor(t, c, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse)
	wce := bsoncore.NewDocumentBuilder().AppendInt32("code", 91).AppendString("errmsg", "shutting down").Build()
	d.fail = &failAction{data: failCommandData{writeConcernError: wce}}
	ok, _ := okReply()
	out := d.decorate(ok)
	if code, _ := bsoncore.Document(out).Lookup("writeConcernError", "code").AsInt64OK(); code != 91 {
		t.Fatalf("fail point's writeConcernError missing: %s", replyString(out))
	}
	failed := errorReply(errorf(ErrBadValue, "no"))
	if out := d.decorate(failed); string(out) != string(failed) {
		t.Fatalf("a failure was decorated: %s", replyString(out))
	}

	d = stateFor(t, c, bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "d"}})
	through(t, d, d.parse)
	d.snapshotTS = &bson.Timestamp{T: 7, I: 3}
	cursor, _ := okReply(bson.E{Key: "cursor", Value: bson.D{{Key: "id", Value: int64(0)}, {Key: "firstBatch", Value: bson.A{}}}})
	out = d.decorate(cursor)
	if ts, i, ok := bsoncore.Document(out).Lookup("cursor", "atClusterTime").TimestampOK(); !ok || ts != 7 || i != 3 {
		t.Fatalf("snapshot read's atClusterTime missing: %s", replyString(out))
	}
}

func TestDispatchStampReply(t *testing.T) {
	e := newDispatchEngine(t, Config{})
	ok, _ := okReply()
	out := e.stampReply("ping", opMsg(t, bson.D{{Key: "ping", Value: 1}}).Body, ok)
	doc := bsoncore.Document(out)
	if _, _, ok := doc.Lookup("operationTime").TimestampOK(); !ok {
		t.Fatalf("no operationTime: %s", replyString(out))
	}
	if _, _, ok := doc.Lookup("$clusterTime", "clusterTime").TimestampOK(); !ok {
		t.Fatalf("no $clusterTime: %s", replyString(out))
	}

	insert := opMsg(t, bson.D{{Key: "insert", Value: "c"}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 3}}}}).Body
	out = e.stampReply("insert", insert, ok)
	if code, _ := bsoncore.Document(out).Lookup("writeConcernError", "code").AsInt64OK(); Code(code) != ErrUnsatisfiableWriteConcern {
		t.Fatalf("w: 3 on one node: %s", replyString(out))
	}
	if out := e.stampReply("insert", insert, nil); out != nil {
		t.Fatalf("no reply (a dropped connection) became %s", replyString(out))
	}
}

func TestDispatchRequestCharge(t *testing.T) {
	e := newDispatchEngine(t, Config{})
	before := e.commandRU.Load()
	if got := e.requestCharge(nil); got != commandRU {
		t.Fatalf("unparsed request: %v RU, want the command price %v", got, commandRU)
	}
	if got := e.requestCharge(&meter{}); got != commandRU {
		t.Fatalf("nothing charged: %v RU, want the command price %v", got, commandRU)
	}
	if got := e.commandRU.Load() - before; got != 2*int64(commandRU*100) {
		t.Fatalf("RU charged to no partition grew by %d centi-RU", got)
	}
	charged := &meter{}
	charged.Add(5.337)
	if got := e.requestCharge(charged); got != ru.Round(5.337) {
		t.Fatalf("charged meter: %v RU", got)
	}
	if got := e.commandRU.Load() - before; got != 2*int64(commandRU*100) {
		t.Fatal("a partition's charge counted as charged to no partition")
	}

	bypass := newDispatchEngine(t, Config{RequestUnits: RequestUnitOptions{Bypass: true}})
	if got := bypass.requestCharge(charged); got != 0 || bypass.commandRU.Load() != 0 {
		t.Fatalf("bypassed: %v RU", got)
	}
}

// TestDispatchOrder checks the whole of dispatch and run: the order of the
// steps shows in which refusal wins, and a panic ends the command cleanly.
func TestDispatchOrder(t *testing.T) {
	e := newDispatchEngine(t, Config{Auth: true})
	c := newConn(e)
	// lookup before authorize: an admin-only command in another database
	// is refused as such even before authentication.
	reply, name, _ := c.run(context.Background(), opMsg(t, bson.D{{Key: "getLog", Value: "global"}, {Key: "$db", Value: "d"}}))
	wantRefusal(t, reply, true, ErrUnauthorized, "may only be run against the admin database")
	if name != "getLog" {
		t.Fatalf("name %q", name)
	}
	// authorize before checkArgs: a bad argument is not revealed to a
	// client that has not authenticated.
	reply, _, _ = c.run(context.Background(), opMsg(t, bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: -1}, {Key: "$db", Value: "d"}}))
	wantRefusal(t, reply, true, ErrUnauthorized, "Command find requires authentication")
	if _, _, ok := bsoncore.Document(reply).Lookup("operationTime").TimestampOK(); !ok {
		t.Fatalf("a refusal has no operationTime: %s", replyString(reply))
	}

	open := newDispatchEngine(t, Config{})
	open.commands["explode"] = command{name: "explode", run: func(*Engine, context.Context, *request) ([]byte, error) {
		if len(open.running.snapshot()) != 1 {
			t.Error("the command is not registered while it runs")
		}
		panic("boom")
	}}
	reply, name, charge := newConn(open).run(context.Background(), opMsg(t, bson.D{{Key: "explode", Value: 1}, {Key: "$db", Value: "d"}}))
	wantRefusal(t, reply, true, ErrInternalError, "internal error in explode: boom")
	if name != "explode" || charge != commandRU {
		t.Fatalf("after a panic: name %q, charge %v", name, charge)
	}
	if ops := open.running.snapshot(); len(ops) != 0 {
		t.Fatalf("a command that panicked is still running: %+v", ops)
	}
}

// TestConfirmRead: a strong read waits for the cluster's confirmation
// and is refused with 13435 when it cannot be had; other reads and
// writes do not ask for it.
func TestConfirmRead(t *testing.T) {
	calls := 0
	var fail error
	e := newDispatchEngine(t, Config{ReadBarrier: func(context.Context) error { calls++; return fail }})
	c := newConn(e)
	run := func(cmd bson.D) []byte {
		reply, _, _ := c.run(context.Background(), opMsg(t, append(cmd, bson.E{Key: "$db", Value: "d"})))
		return reply
	}
	run(bson.D{{Key: "find", Value: "c"}})
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	if calls != 0 {
		t.Fatalf("a session read and a write asked for confirmation %d times", calls)
	}
	run(bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}}})
	if calls != 1 {
		t.Fatalf("a linearizable read asked %d times, want once", calls)
	}
	fail = errors.New("no quorum")
	reply := run(bson.D{{Key: "count", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}}})
	wantRefusal(t, reply, true, ErrNotPrimaryNoSecondaryOk, "could not confirm")
}
