package engine

import (
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// txnWriteFailPoint is MongoDB's onPrimaryTransactionalWrite fail point,
// the retryable-writes tests' way to lose a reply after the write: it
// fires when a retryable write (a command with lsid and txnNumber) is
// about to commit statements. closeConnection (default true) lets the
// commit happen and then closes the connection instead of replying, and
// the command runs no further statement; failBeforeCommitExceptionCode
// fails the statements with that code instead, writing nothing. Parsec
// commits an update, delete or findAndModify statement at a time and an
// insert in chunks of up to chunkDocs documents, so skip counts those
// commits. Statements a retry finds already done commit nothing and do
// not fire it. It exists only with --enable-test-commands.
type txnWriteFailPoint struct {
	mu     sync.Mutex
	active bool
	times  int64 // remaining activations; < 0: always on
	skip   int64 // activations to let pass first
	data   txnWriteFailData
}

type txnWriteFailData struct {
	closeConnection bool
	failCode        int32
	hasFailCode     bool
}

func (f *txnWriteFailPoint) set(active bool, times, skip int64, data txnWriteFailData) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active, f.times, f.skip, f.data = active, times, skip, data
}

// trigger reports whether the fail point fires for a commit, consuming
// one activation when it does.
func (f *txnWriteFailPoint) trigger() (txnWriteFailData, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		return txnWriteFailData{}, false
	}
	if f.skip > 0 {
		f.skip--
		return txnWriteFailData{}, false
	}
	if f.times == 0 {
		f.active = false
		return txnWriteFailData{}, false
	}
	if f.times > 0 {
		f.times--
		if f.times == 0 {
			f.active = false
		}
	}
	return f.data, true
}

// parseTxnWriteFailData reads {closeConnection, failBeforeCommitExceptionCode}.
func parseTxnWriteFailData(d bsoncore.Document) (txnWriteFailData, error) {
	data := txnWriteFailData{closeConnection: true}
	elems, _ := d.Elements()
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "closeConnection":
			data.closeConnection, err = boolArg("data", k, v)
		case "failBeforeCommitExceptionCode":
			var n int64
			n, err = int64Arg("data", k, v)
			data.failCode, data.hasFailCode = int32(n), true
		default:
			err = unknownField("data", k)
		}
		if err != nil {
			return data, err
		}
	}
	return data, nil
}
