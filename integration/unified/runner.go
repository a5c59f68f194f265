package unified

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// Status is a test's result.
type Status int

const (
	Passed Status = iota
	Failed
	Skipped
)

func (s Status) String() string {
	return [...]string{"passed", "failed", "skipped"}[s]
}

// Result is the result of one test. Category is a short class of the
// failure, for grouping failures by cause; Reason is the full message.
type Result struct {
	File     string
	Test     string
	Status   Status
	Reason   string
	Category string
}

// Timeouts bound a test and each of its operations, so that a server that
// never answers fails the test instead of hanging the run.
const (
	testTimeout      = 60 * time.Second
	operationTimeout = 15 * time.Second
)

// Runner runs test files against one server.
type Runner struct {
	host     string
	cred     *options.Credential // every client authenticates with it (nil: none)
	internal *mongo.Client
	info     *ServerInfo
	// Select, when set, picks the tests RunFile runs (by file name and
	// description); the others are Skipped with NotSelected as reason.
	Select func(file, test string) bool
}

// NotSelected is the reason of a test Runner.Select left out.
const NotSelected = "not selected for this run"

// NewRunner connects the internal client to the server at host
// ("host:port") and reads what runOnRequirements need. With cred, the
// server has access control on: every client, the test's and the
// runner's own, authenticates with it.
func NewRunner(ctx context.Context, host string, cred *options.Credential) (*Runner, error) {
	opts := options.Client().ApplyURI("mongodb://" + host + "/?serverSelectionTimeoutMS=10000")
	if cred != nil {
		opts.SetAuth(*cred)
	}
	internal, err := mongo.Connect(opts)
	if err != nil {
		return nil, err
	}
	info, err := discoverServer(ctx, internal)
	if err != nil {
		_ = internal.Disconnect(ctx)
		return nil, err
	}
	info.Auth = cred != nil
	r := &Runner{host: host, cred: cred, internal: internal, info: info}
	r.killAllSessions()
	return r, nil
}

// Info describes the server the runner checks requirements against.
func (r *Runner) Info() *ServerInfo { return r.info }

// Close disconnects the internal client.
func (r *Runner) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.internal.Disconnect(ctx)
}

// killAllSessions ends open transactions (the format's "Terminating Open
// Transactions"); errors are ignored.
func (r *Runner) killAllSessions() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.internal.Database("admin").RunCommand(ctx, bson.D{{Key: "killAllSessions", Value: bson.A{}}}).Err()
}

// RunFile runs every test of a file, one after the other.
func (r *Runner) RunFile(ctx context.Context, path string) []Result {
	name := filepath.Base(path)
	f, err := LoadFile(path)
	if err != nil {
		return []Result{{File: name, Test: "(file)", Status: Failed, Reason: err.Error(), Category: "runner: cannot load file"}}
	}
	schemaErr := CheckSchema(f.SchemaVersion)
	fileOK, fileWhy := r.info.met(ctx, f.RunOnRequirements)
	results := make([]Result, 0, len(f.Tests))
	for i := range f.Tests {
		test := &f.Tests[i]
		res := Result{File: name, Test: test.Description}
		switch {
		case schemaErr != nil:
			res.Status, res.Reason, res.Category = Failed, schemaErr.Error(), "runner: unsupported schemaVersion"
		case r.Select != nil && !r.Select(name, test.Description):
			res.Status, res.Reason = Skipped, NotSelected
		case !fileOK:
			res.Status, res.Reason = Skipped, fileWhy
		case test.SkipReason != "":
			res.Status, res.Reason = Skipped, "skipReason: "+test.SkipReason
		default:
			if ok, why := r.info.met(ctx, test.RunOnRequirements); !ok {
				res.Status, res.Reason = Skipped, why
			} else if err := r.runTest(ctx, f, test); err != nil {
				res.Status, res.Reason, res.Category = Failed, err.Error(), categoryOf(err)
				if gap, ok := driverGapFiles[name]; ok {
					res.Category = gap
				}
			}
		}
		results = append(results, res)
	}
	return results
}

// testFailure is a failed test with the class of its failure.
type testFailure struct {
	category string
	err      error
}

func (f *testFailure) Error() string { return f.err.Error() }
func (f *testFailure) Unwrap() error { return f.err }

func failf(category, format string, args ...any) error {
	return &testFailure{category: category, err: fmt.Errorf(format, args...)}
}

// categoryOf is the grouping class of a failure: the runner's own message
// for what it does not implement, else the class given where it failed.
func categoryOf(err error) string {
	msg := err.Error()
	for pattern, gap := range driverGaps {
		if strings.Contains(msg, pattern) {
			return gap
		}
	}
	if i := strings.Index(msg, "runner: "); i >= 0 {
		c := msg[i:]
		if j := strings.Index(c, " ("); j > 0 {
			c = c[:j]
		}
		if j := strings.Index(c, "\n"); j > 0 {
			c = c[:j]
		}
		return c
	}
	var f *testFailure
	if errors.As(err, &f) {
		return f.category
	}
	return "other"
}

// driverGaps are failures the Go driver itself causes (it does not do
// what the CRUD spec asks), whatever the server does; they stay failures
// but are grouped under their real cause.
var driverGaps = map[string]string{
	"the 'hint' command parameter cannot be used with unacknowledged writes": "Go driver: refuses hint with an unacknowledged write (client side)",
	"bypassDocumentValidation: missing, want false":                          "Go driver: does not send bypassDocumentValidation: false",
	"(commandStartedEvent find): command: batchSize: got":                    "Go driver: find batchSize differs from the CRUD spec (limit+1)",
}

// driverGapFiles are spec files whose every test needs what the Go driver
// does not do; their failures are grouped under that cause.
var driverGapFiles = map[string]string{
	// The driver does not retry an operation whose connection handshake
	// (here, the SCRAM saslContinue) fails: GODRIVER-2191. Its own spec
	// runner skips these tests.
	"handshakeError.json": "Go driver: does not retry an operation whose connection handshake fails (GODRIVER-2191)",
}

// wrap prefixes a failure with where it happened, keeping its class.
func wrap(where string, err error) error {
	cat := categoryOf(err)
	return &testFailure{category: cat, err: fmt.Errorf("%s: %w", where, err)}
}

// testRun is one test's state.
type testRun struct {
	r                *Runner
	file             *File
	test             *Test
	entities         *entityMap
	failPoints       []failPointRecord
	usedTransactions bool
}

func (r *Runner) runTest(ctx context.Context, f *File, test *Test) error {
	ctx, cancel := cancelAfter(ctx, testTimeout)
	defer cancel()
	t := &testRun{r: r, file: f, test: test, entities: newEntityMap()}
	defer t.cleanup()
	return t.run(ctx)
}

func (t *testRun) run(ctx context.Context) error {
	if err := t.setUpData(ctx); err != nil {
		return wrap("initialData", err)
	}
	if err := t.createEntities(t.file.CreateEntities); err != nil {
		return wrap("createEntities", failf("createEntities failed", "%v", err))
	}
	for i, op := range t.test.Operations {
		if _, fail := t.runOperation(ctx, op); fail != nil {
			return wrap(fmt.Sprintf("operation %d (%s on %s)", i, op.Name, op.Object), fail)
		}
	}
	for _, v := range t.entities.all() {
		if c, ok := v.(*clientEntity); ok {
			c.stopListening()
		}
	}
	t.disableFailPoints()
	for _, ee := range t.test.ExpectEvents {
		if err := t.checkEvents(ee); err != nil {
			return wrap("expectEvents", failf("expectEvents mismatch", "%v", err))
		}
	}
	for _, cd := range t.test.Outcome {
		if err := t.checkOutcome(ctx, cd); err != nil {
			return wrap("outcome "+cd.DatabaseName+"."+cd.CollectionName, err)
		}
	}
	return nil
}

func (t *testRun) cleanup() {
	for _, v := range t.entities.all() {
		if c, ok := v.(*clientEntity); ok {
			c.stopListening()
		}
	}
	t.disableFailPoints()
	t.entities.closeAll()
	if t.usedTransactions {
		t.r.killAllSessions()
	}
}

// setUpData drops the databases the file uses (so no test sees another's
// leftovers), then loads initialData with "majority" write concern.
func (t *testRun) setUpData(ctx context.Context) error {
	dbs := map[string]bool{}
	for _, cd := range t.file.InitialData {
		dbs[cd.DatabaseName] = true
	}
	for _, cd := range t.test.Outcome {
		dbs[cd.DatabaseName] = true
	}
	for _, e := range t.file.CreateEntities {
		if name, ok := e.Lookup("database", "databaseName").StringValueOK(); ok {
			dbs[name] = true
		}
	}
	for name := range dbs {
		if name == "admin" || name == "config" || name == "local" {
			continue
		}
		if err := t.r.internal.Database(name).Drop(ctx); err != nil {
			return failf("initialData: dropDatabase failed: "+describeError(err), "dropDatabase %s: %v", name, err)
		}
	}
	majority := options.Database().SetWriteConcern(writeconcern.Majority())
	for _, cd := range t.file.InitialData {
		db := t.r.internal.Database(cd.DatabaseName, majority)
		coll := db.Collection(cd.CollectionName)
		if err := coll.Drop(ctx); err != nil {
			return failf("initialData: drop failed: "+describeError(err), "drop %s.%s: %v", cd.DatabaseName, cd.CollectionName, err)
		}
		if cd.CreateOptions != nil {
			cmd := bson.D{{Key: "create", Value: cd.CollectionName}}
			elems, _ := cd.CreateOptions.Elements()
			for _, e := range elems {
				cmd = append(cmd, bson.E{Key: e.Key(), Value: e.Value()})
			}
			if err := db.RunCommand(ctx, cmd).Err(); err != nil {
				return failf("initialData: create failed: "+describeError(err), "create %s.%s: %v", cd.DatabaseName, cd.CollectionName, err)
			}
		}
		if len(cd.Documents) > 0 {
			docs := make([]any, len(cd.Documents))
			for i, d := range cd.Documents {
				docs[i] = d
			}
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				return failf("initialData: insert failed: "+describeError(err), "insert into %s.%s: %v", cd.DatabaseName, cd.CollectionName, err)
			}
		} else if cd.CreateOptions == nil {
			if err := db.CreateCollection(ctx, cd.CollectionName); err != nil {
				return failf("initialData: create failed: "+describeError(err), "create %s.%s: %v", cd.DatabaseName, cd.CollectionName, err)
			}
		}
	}
	return nil
}

// checkOutcome compares a collection's documents, in _id order, with the
// expected ones exactly. The documents are sorted here rather than by the
// server, so that the outcome check does not depend on the server's sort.
func (t *testRun) checkOutcome(ctx context.Context, cd CollectionData) error {
	coll := t.r.internal.Database(cd.DatabaseName).Collection(cd.CollectionName,
		options.Collection().SetReadConcern(readconcern.Local()).SetReadPreference(readpref.Primary()))
	cur, err := coll.Find(ctx, bson.D{})
	res := allDocs(ctx, cur, err)
	if res.err != nil {
		return failf("outcome: find failed: "+describeError(res.err), "find: %v", res.err)
	}
	got := sortByID(res.docs)
	if len(got) != len(cd.Documents) {
		return failf("outcome mismatch", "%d documents, want %d: got %s", len(got), len(cd.Documents), Show(arrayValue(got)))
	}
	for i, want := range cd.Documents {
		if err := Equal(docValue(want), docValue(got[i])); err != nil {
			return failf("outcome mismatch", "document %d: %v (got %s)", i, err, got[i])
		}
	}
	return nil
}

// runOperation runs one operation and checks its result or error. opErr
// is the operation's own error (for withTransaction callbacks); fail is
// set when the test fails.
func (t *testRun) runOperation(ctx context.Context, op Operation) (opErr, fail error) {
	if op.Object == "testRunner" {
		return nil, t.special(ctx, op)
	}
	ent, err := t.entities.get(op.Object)
	if err != nil {
		return nil, err
	}
	a := newArgs(op.Name, op.Arguments)
	var sess *sessionEntity
	if _, isSession := ent.(*sessionEntity); !isSession && a.has("session") {
		if sess, err = t.sessionArg(a); err != nil {
			return nil, err
		}
		ctx = mongo.NewSessionContext(ctx, sess.sess)
	}
	var exec execFunc
	switch e := ent.(type) {
	case *mongo.Collection:
		exec, err = t.collectionOp(e, op.Name, a)
	case *mongo.Database:
		exec, err = t.databaseOp(e, op.Name, a)
	case *clientEntity:
		exec, err = t.clientOp(e, op.Name, a)
	case *sessionEntity:
		exec, err = t.sessionOp(e, op.Name, a)
	case *mongo.ChangeStream:
		exec, err = t.changeStreamOp(e, op.Name, a)
	default:
		err = notImplemented(op.Name, fmt.Sprintf("a %T entity", ent))
	}
	if err != nil {
		return nil, err
	}
	if err := a.finish(); err != nil {
		return nil, err
	}
	opCtx, cancel := cancelAfter(ctx, operationTimeout)
	res := exec(opCtx)
	cancel()
	var rf *runnerFailure
	if errors.As(res.err, &rf) {
		return nil, rf.err
	}
	if cs, ok := res.entity.(*mongo.ChangeStream); ok && op.SaveResultAsEntity == "" {
		_ = cs.Close(ctx)
	}
	if sess != nil {
		sess.noteOperation(t.r.info.Topology == "sharded", res.err)
	}
	return res.err, t.checkResult(op, res)
}

func (t *testRun) checkResult(op Operation, res opResult) error {
	if op.IgnoreResultAndError {
		return nil
	}
	if op.ExpectError != nil {
		if res.err == nil {
			got := Show(res.value)
			if res.isDocs {
				got = Show(arrayValue(res.docs))
			}
			return failf(op.Name+": expected an error, got success", "expected an error, got success (result %s)", got)
		}
		if err := t.checkError(op.ExpectError, res); err != nil {
			return failf(op.Name+": wrong error", "%v", err)
		}
		return nil
	}
	if res.err != nil {
		return failf("unexpected error "+describeError(res.err), "unexpected error: %v", res.err)
	}
	if op.ExpectResult.Type != 0 {
		var err error
		if res.isDocs {
			err = MatchDocuments(op.ExpectResult, res.docs, t.entities)
		} else {
			err = Match(op.ExpectResult, res.value, true, t.entities)
		}
		if err != nil {
			return failf(op.Name+": result mismatch", "result: %v", err)
		}
	}
	if name := op.SaveResultAsEntity; name != "" {
		var v any
		switch {
		case res.entity != nil:
			v = res.entity
		case res.isDocs:
			v = arrayValue(res.docs)
		case res.value.Type != 0:
			v = res.value
		default:
			return fmt.Errorf("runner: %s returned nothing to save as %s", op.Name, name)
		}
		return t.entities.add(name, v)
	}
	return nil
}

// cancelAfter bounds a test or an operation by cancelling its context
// after d, without giving it a deadline: the Go driver treats any
// deadline as a client-side operation timeout (CSOT) and then retries a
// retryable error until the deadline instead of once, which is not what
// the specification tests expect.
func cancelAfter(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	timer := time.AfterFunc(d, cancel)
	return ctx, func() {
		timer.Stop()
		cancel()
	}
}
