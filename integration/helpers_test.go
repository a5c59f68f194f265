package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Helpers shared by the command tests (handshake_test.go, catalog_test.go,
// crud_test.go). Each top-level test starts one server and runs its cases
// as parallel subtests, each in a database of its own.

// startTestServer starts a server whose data directory is removed when
// the test ends.
func startTestServer(t testing.TB) *Server {
	t.Helper()
	return StartServer(t, ServerOptions{Dir: t.TempDir()})
}

// optionsFor are the client options for s.
func optionsFor(s *Server) *options.ClientOptions {
	return options.Client().ApplyURI(s.URI()).SetServerSelectionTimeout(5 * time.Second)
}

// newTestClient connects to s with the official driver; the client
// disconnects when the test ends (before the server stops).
func newTestClient(t testing.TB, s *Server, opts ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(append([]*options.ClientOptions{optionsFor(s)}, opts...)...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

// testCtx bounds one test's calls.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// cmdName is the first key of a command, for messages.
func cmdName(cmd bson.D) string {
	if len(cmd) == 0 {
		return "<empty>"
	}
	return cmd[0].Key
}

// runOK runs cmd and returns its reply; an error or a reply without ok: 1
// fails the test.
func runOK(t testing.TB, db *mongo.Database, cmd bson.D) bson.Raw {
	t.Helper()
	raw, err := db.RunCommand(testCtx(t), cmd).Raw()
	if err != nil {
		t.Fatalf("%s on %s: %v", cmdName(cmd), db.Name(), err)
	}
	if ok := floatOf(t, mustLookup(t, raw, "ok")); ok != 1 {
		t.Fatalf("%s: ok is %v in %v", cmdName(cmd), ok, raw)
	}
	return raw
}

// runFail runs cmd and checks that it fails with code and codeName.
func runFail(t testing.TB, db *mongo.Database, cmd bson.D, code int32, name string) mongo.CommandError {
	t.Helper()
	err := db.RunCommand(testCtx(t), cmd).Err()
	return wantCode(t, err, code, name)
}

// wantCode checks that err is a command error with code and codeName.
func wantCode(t testing.TB, err error, code int32, name string) mongo.CommandError {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("want command error %d (%s), got %T %v", code, name, err, err)
	}
	if ce.Code != code || ce.Name != name {
		t.Fatalf("want error %d (%s), got %d (%s): %s", code, name, ce.Code, ce.Name, ce.Message)
	}
	return ce
}

// runWrite runs a write command whose reply may carry writeErrors (which
// the driver reports as a WriteException) and returns the reply.
func runWrite(t testing.TB, db *mongo.Database, cmd bson.D) writeReplyDoc {
	t.Helper()
	raw, err := db.RunCommand(testCtx(t), cmd).Raw()
	var we mongo.WriteException
	if err != nil && !errors.As(err, &we) {
		t.Fatalf("%s: %v", cmdName(cmd), err)
	}
	if err != nil {
		raw = we.Raw
	}
	var r writeReplyDoc
	if err := bson.Unmarshal(raw, &r); err != nil {
		t.Fatalf("decode %v: %v", raw, err)
	}
	if r.OK != 1 {
		t.Fatalf("%s: ok %v in %v", cmdName(cmd), r.OK, raw)
	}
	r.Raw = raw
	return r
}

// writeReplyDoc is a write command's reply.
type writeReplyDoc struct {
	N           int64             `bson:"n"`
	OK          float64           `bson:"ok"`
	WriteErrors []replyWriteError `bson:"writeErrors"`
	Raw         bson.Raw          `bson:"-"`
}

type replyWriteError struct {
	Index      int      `bson:"index"`
	Code       int      `bson:"code"`
	ErrMsg     string   `bson:"errmsg"`
	KeyPattern bson.Raw `bson:"keyPattern"`
	KeyValue   bson.Raw `bson:"keyValue"`
}

// errorIndexes lists the statement indexes of the write errors and their codes.
func (r writeReplyDoc) errorIndexes() (idx, codes []int) {
	for _, we := range r.WriteErrors {
		idx = append(idx, we.Index)
		codes = append(codes, we.Code)
	}
	return idx, codes
}

// cursorReplyDoc is a cursor-returning command's reply.
type cursorReplyDoc struct {
	Cursor struct {
		ID         int64      `bson:"id"`
		NS         string     `bson:"ns"`
		FirstBatch []bson.Raw `bson:"firstBatch"`
		NextBatch  []bson.Raw `bson:"nextBatch"`
	} `bson:"cursor"`
	OK float64 `bson:"ok"`
}

func (c cursorReplyDoc) batch() []bson.Raw {
	if c.Cursor.FirstBatch != nil {
		return c.Cursor.FirstBatch
	}
	return c.Cursor.NextBatch
}

// runCursor runs a cursor command (find, getMore, listCollections) and
// decodes its reply.
func runCursor(t testing.TB, db *mongo.Database, cmd bson.D) cursorReplyDoc {
	t.Helper()
	return runCursorCtx(t, testCtx(t), db, cmd)
}

// runCursorCtx is runCursor with a context (a session's, for instance).
func runCursorCtx(t testing.TB, ctx context.Context, db *mongo.Database, cmd bson.D) cursorReplyDoc {
	t.Helper()
	raw, err := db.RunCommand(ctx, cmd).Raw()
	if err != nil {
		t.Fatalf("%s on %s: %v", cmdName(cmd), db.Name(), err)
	}
	var c cursorReplyDoc
	if err := bson.Unmarshal(raw, &c); err != nil {
		t.Fatalf("decode %v: %v", raw, err)
	}
	if _, err := raw.LookupErr("cursor", "id"); err != nil || c.OK != 1 {
		t.Fatalf("%s: not a cursor reply: %v", cmdName(cmd), raw)
	}
	return c
}

// mustLookup returns the value at path in doc, failing when it is absent.
func mustLookup(t testing.TB, doc bson.Raw, path ...string) bson.RawValue {
	t.Helper()
	v, err := doc.LookupErr(path...)
	if err != nil {
		t.Fatalf("%s missing in %v", strings.Join(path, "."), doc)
	}
	return v
}

// wantAbsent fails when doc has a value at path.
func wantAbsent(t testing.TB, doc bson.Raw, path ...string) {
	t.Helper()
	if v, err := doc.LookupErr(path...); err == nil {
		t.Fatalf("%s should be absent, is %v in %v", strings.Join(path, "."), v, doc)
	}
}

// wantFields checks that a reply has exactly the given fields, in order,
// besides the cluster-time fields a MongoDB router may add.
func wantFields(t testing.TB, doc bson.Raw, fields ...string) {
	t.Helper()
	var got []string
	for _, k := range keysOf(t, doc) {
		if k != "$clusterTime" && k != "operationTime" {
			got = append(got, k)
		}
	}
	if !slices.Equal(got, fields) {
		t.Errorf("reply fields %v, want %v: %v", got, fields, doc)
	}
}

// intOf returns a whole number held in any numeric BSON type.
func intOf(t testing.TB, v bson.RawValue) int64 {
	t.Helper()
	switch v.Type {
	case bson.TypeInt32:
		return int64(v.Int32())
	case bson.TypeInt64:
		return v.Int64()
	case bson.TypeDouble:
		f := v.Double()
		if f == math.Trunc(f) {
			return int64(f)
		}
	}
	t.Fatalf("want a whole number, got %s %v", v.Type, v)
	return 0
}

// floatOf returns any numeric BSON value as a float64.
func floatOf(t testing.TB, v bson.RawValue) float64 {
	t.Helper()
	switch v.Type {
	case bson.TypeInt32:
		return float64(v.Int32())
	case bson.TypeInt64:
		return float64(v.Int64())
	case bson.TypeDouble:
		return v.Double()
	}
	t.Fatalf("want a number, got %s %v", v.Type, v)
	return 0
}

// keysOf lists a document's field names in order.
func keysOf(t testing.TB, doc bson.Raw) []string {
	t.Helper()
	elems, err := doc.Elements()
	if err != nil {
		t.Fatalf("elements of %v: %v", doc, err)
	}
	keys := make([]string, len(elems))
	for i, e := range elems {
		keys[i] = e.Key()
	}
	return keys
}

// idString renders a document's _id for comparisons: strings as
// themselves, numbers in decimal, anything else as extended JSON.
func idString(t testing.TB, doc bson.Raw) string {
	t.Helper()
	v := mustLookup(t, doc, "_id")
	switch v.Type {
	case bson.TypeString:
		return v.StringValue()
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		return fmt.Sprint(intOf(t, v))
	}
	return v.String()
}

// sortedIDs returns the _ids of docs, sorted.
func sortedIDs(t testing.TB, docs []bson.Raw) []string {
	t.Helper()
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = idString(t, d)
	}
	slices.Sort(ids)
	return ids
}

// idsIn lists the _ids of a collection's documents (sorted), via the
// driver's Find.
func idsIn(t testing.TB, coll *mongo.Collection, filter any) []string {
	t.Helper()
	ctx := testCtx(t)
	cur, err := coll.Find(ctx, filter)
	if err != nil {
		t.Fatalf("find in %s: %v", coll.Name(), err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatalf("find in %s: %v", coll.Name(), err)
	}
	return sortedIDs(t, docs)
}

// stringIDs makes the sorted _id list idsIn returns for integer ids.
func intIDs(ids ...int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	slices.Sort(out)
	return out
}

// dbName derives a database name from a subtest name: unique per subtest
// and valid for MongoDB (no '.', ' ', '$', '/', at most 63 bytes).
func dbName(t testing.TB) string {
	t.Helper()
	name := t.Name()
	if i := strings.Index(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// docsOf builds n documents {_id: i} for i in [from, from+n).
func docsOf(from, n int) bson.A {
	docs := make(bson.A, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(from + i)}}
	}
	return docs
}

// restartable is a server a test stops itself, to start another on the
// same data directory, with a client connected to it. It is stopped when
// the test ends if the test has not.
type restartable struct {
	*Server
	client  *mongo.Client
	stopped bool
}

// launchRestartable starts a server on dir and connects a client to it.
func launchRestartable(t *testing.T, dir string) *restartable {
	t.Helper()
	s, err := Launch(ServerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := &restartable{Server: s}
	t.Cleanup(func() {
		if !r.stopped {
			_ = s.Stop()
		}
	})
	if r.client, err = mongo.Connect(optionsFor(s)); err != nil {
		t.Fatal(err)
	}
	return r
}

// stop disconnects the client and stops the server.
func (r *restartable) stop(t *testing.T) {
	t.Helper()
	_ = r.client.Disconnect(testCtx(t))
	if err := r.Server.Stop(); err != nil {
		t.Fatal(err)
	}
	r.stopped = true
}
