package engine

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// failCommand is the one fail point Parsec has, MongoDB's test hook that
// drivers' specification tests use to make chosen commands fail, block or
// drop the connection. It exists only with --enable-test-commands.
type failCommand struct {
	mu     sync.Mutex
	active bool
	times  int64 // remaining activations; < 0: always on
	skip   int64 // activations to let pass first
	data   failCommandData
}

type failCommandData struct {
	commands          map[string]bool
	closeConnection   bool
	errorCode         int32
	hasErrorCode      bool
	errorLabels       []string
	hasErrorLabels    bool
	writeConcernError bsoncore.Document
	blockTime         time.Duration
	appName           string
}

// failAction is what the fail point does to one command.
type failAction struct {
	data failCommandData
}

// trigger reports whether the fail point fires for cmd from a client with
// appName, consuming one activation when it does.
func (f *failCommand) trigger(cmd, appName string) (*failAction, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || !f.data.commands[cmd] {
		return nil, false
	}
	if f.data.appName != "" && f.data.appName != appName {
		return nil, false
	}
	if f.skip > 0 {
		f.skip--
		return nil, false
	}
	if f.times == 0 {
		f.active = false
		return nil, false
	}
	if f.times > 0 {
		f.times--
		if f.times == 0 {
			f.active = false
		}
	}
	return &failAction{data: f.data}, true
}

// retryableCodes are the errors after which MongoDB labels a retryable
// write RetryableWriteError. Not WriteConcernFailed (64): a write concern
// timeout is not retried (spec test "InsertOne fails after
// WriteConcernError WriteConcernTimeout").
var retryableCodes = map[int32]bool{
	6: true, 7: true, 89: true, 91: true, 189: true, 262: true, 9001: true, 10107: true,
	11600: true, 11602: true, 13388: true, 13435: true, 13436: true,
}

var retryableWrites = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true,
}

// retryableLabel labels ce RetryableWriteError when it fails a retryable
// write (one with a txnNumber, outside a transaction) with a code after
// which MongoDB's drivers retry it (a cluster's commit whose outcome a
// leader change hid: the retry finds the first attempt's record if it
// applied).
func retryableLabel(ce *CommandError, cmd string, body bsoncore.Document) *CommandError {
	if !retryableCodes[int32(ce.Code)] || !retryableWrites[cmd] {
		return ce
	}
	if _, err := body.LookupErr("txnNumber"); err != nil {
		return ce
	}
	if _, err := body.LookupErr("autocommit"); err == nil {
		return ce
	}
	labeled := *ce
	labeled.Extra = append(append(bson.D(nil), ce.Extra...), bson.E{Key: "errorLabels", Value: bson.A{"RetryableWriteError"}})
	return &labeled
}

// labels returns the errorLabels for a failure with code: the configured
// ones, or RetryableWriteError for a retryable write failing retryably.
func (a *failAction) labels(cmd string, body bsoncore.Document, code int32) []string {
	if a.data.hasErrorLabels {
		return a.data.errorLabels
	}
	if _, err := body.LookupErr("txnNumber"); err == nil && retryableWrites[cmd] && retryableCodes[code] {
		if _, inTxn := body.LookupErr("autocommit"); inTxn != nil {
			return []string{"RetryableWriteError"}
		}
	}
	return nil
}

// before runs the part of the fail point that comes before the command:
// blocking, closing the connection, failing with an error. A nil reply
// and false mean the command should run.
func (a *failAction) before(ctx context.Context, req *request, close func()) ([]byte, bool) {
	if a.data.blockTime > 0 {
		t := time.NewTimer(a.data.blockTime)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	if a.data.closeConnection {
		close()
		return nil, true
	}
	if a.data.hasErrorCode {
		code := a.data.errorCode
		d := bson.D{
			{Key: "ok", Value: 0.0},
			{Key: "errmsg", Value: "Failing command via 'failCommand' failpoint"},
			{Key: "code", Value: code},
			{Key: "codeName", Value: Code(code).Name()},
		}
		if l := a.labels(req.name, req.body, code); len(l) > 0 {
			d = append(d, bson.E{Key: "errorLabels", Value: l})
		}
		out, _ := bson.Marshal(d)
		return out, true
	}
	return nil, false
}

// after adds a configured writeConcernError to a successful reply.
func (a *failAction) after(req *request, reply []byte) []byte {
	if len(a.data.writeConcernError) == 0 {
		return reply
	}
	if ok, _ := bsoncore.Document(reply).Lookup("ok").AsFloat64OK(); ok != 1 {
		return reply
	}
	code, _ := a.data.writeConcernError.Lookup("code").AsInt64OK()
	el := bsoncore.AppendDocumentElement(nil, "writeConcernError", a.data.writeConcernError)
	if l := a.labels(req.name, req.body, int32(code)); len(l) > 0 {
		arr := bsoncore.NewArrayBuilder()
		for _, s := range l {
			arr.AppendString(s)
		}
		el = bsoncore.AppendArrayElement(el, "errorLabels", arr.Build())
	}
	return appendElement(reply, el)
}
