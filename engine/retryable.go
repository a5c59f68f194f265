package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parsecdb/parsec/engine/sessions"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Retryable writes.
//
// Drivers send lsid and txnNumber with every retryable write (insert;
// update and delete whose statements each touch one document;
// findAndModify) and send the same command, same txnNumber, once more
// when the first attempt's reply was lost or carried a retryable error.
// As in MongoDB, each statement then runs at most once: a statement that
// already ran under (lsid, txnNumber) is not run again, its recorded
// outcome is merged into the reply (and its id listed in
// retriedStmtIds), and only the statements not yet run do run, so a
// batch the first attempt applied in part is completed.
//
// Where the history lives. A statement's outcome is written by
// store.Txn.PutSessionStatements in the same Badger transaction as the
// documents it changed, so a change and its record exist both or
// neither, after any crash (kill -9 included): a retry after a restart
// finds exactly what was applied. MongoDB keeps the same in
// config.transactions, written with the oplog entry. Only statements
// that changed data are recorded, as MongoDB records only statements
// with an oplog entry (plus a findAndModify that matched, whose reply
// carries the document): a statement that failed or changed nothing ran
// no write, and runs again on a retry, which applies it at most once
// still. Writes without a txnNumber, and unacknowledged ones (w: 0), are
// not recorded. A multi update or a limit-0 delete cannot be retried:
// with a txnNumber it is the statement's InvalidOptions write error, as in
// MongoDB (drivers send none).
//
// In memory, engine/sessions keeps each session's highest txnNumber (a
// lower one is TransactionTooOld) and a checkout that lets one command of
// a session run at a time, as MongoDB checks a session out: a retry that
// arrives while its first attempt still runs (the client saw the
// connection drop, the server did not) waits for it and then sees its
// records. It keeps the bookkeeping of each attempt too (sessions.Attempt:
// which statements ran, their records); this file reads a write's
// session fields and fires the onPrimaryTransactionalWrite fail point.
// Sessions idle for logicalSessionTimeoutMinutes are forgotten, in memory
// and in the store; endSessions and killSessions forget theirs at once.

// retryableCommands are the commands whose txnNumber makes them retryable
// writes; any other command given a txnNumber outside a transaction fails.
var retryableCommands = map[string]bool{"insert": true, "update": true, "delete": true, "findAndModify": true}

// checkTxnNumber refuses a txnNumber on a command that is not a retryable
// write (transactions, with autocommit, are refused by checkTransaction).
func checkTxnNumber(cmd string, body bsoncore.Document) *CommandError {
	if _, err := body.LookupErr("txnNumber"); err != nil || retryableCommands[cmd] {
		return nil
	}
	return &CommandError{Code: errNotARetryableWriteCommand, Name: "NotARetryableWriteCommand",
		Msg: fmt.Sprintf("txnNumber may only be provided for multi-document transactions and retryable write commands. autocommit:false was not provided, and %s is not a retryable write command.", cmd)}
}

// retryableWrite is one write command with a txnNumber: its attempt in
// its session (checked out until release), which knows the statements
// an earlier attempt ran. A nil *retryableWrite is a write that is not
// retryable: every method does nothing.
type retryableWrite struct {
	e     *Engine
	req   *request
	at    *sessions.Attempt
	lsid  []byte
	txn   int64
	fired *txnWriteFailData // fail point fired for the commit under way
}

// retryableWrite checks out the session of a write command that carries
// a txnNumber, for a batch of n statements, and reads what earlier
// attempts of it did. It returns nil for a write that is not retryable
// (no txnNumber, or w: 0).
func (e *Engine) retryableWrite(ctx context.Context, req *request, wc writeConcern, n int) (*retryableWrite, error) {
	v, err := req.body.LookupErr("txnNumber")
	if err != nil || txnOf(ctx) != nil {
		return nil, nil // not retryable, or a statement of a transaction
	}
	txn, err := int64Arg("OperationSessionInfo", "txnNumber", v)
	if err != nil {
		return nil, err
	}
	if txn < 0 {
		return nil, errorf(ErrInvalidOptions, "Transaction number cannot be negative")
	}
	idv, err := req.body.LookupErr("lsid", "id")
	if err != nil {
		return nil, errorf(ErrInvalidOptions, "Transaction number requires a session ID to also be specified")
	}
	lsid, err := sessionUUID(idv)
	if err != nil {
		return nil, err
	}
	ids, first, err := statementIDs(req, n)
	if err != nil {
		return nil, err
	}
	if wc.unacknowledged || e.store == nil {
		return nil, nil
	}
	sess, err := e.sessions.Checkout(ctx, lsid)
	if err != nil {
		return nil, err
	}
	at, err := sess.Attempt(txn, ids, first, e.now())
	if err != nil {
		sess.Release(e.now())
		var old *sessions.TooOldError
		if errors.As(err, &old) {
			return nil, transactionTooOld(lsid, old)
		}
		return nil, err
	}
	return &retryableWrite{e: e, req: req, at: at, lsid: lsid, txn: txn}, nil
}

// transactionTooOld refuses a txnNumber older than the session's.
func transactionTooOld(lsid []byte, old *sessions.TooOldError) *CommandError {
	return &CommandError{Code: ErrTransactionTooOld, Name: "TransactionTooOld",
		Msg: fmt.Sprintf("Cannot start transaction %d on session %s because a newer transaction with txnNumber %d has already started on this session.", old.Number, sessions.IDString(lsid), old.Newer)}
}

// release gives the session back.
func (rw *retryableWrite) release() {
	if rw != nil {
		rw.at.Release(rw.e.now())
	}
}

// stmtID is the statement id of the statement at index i of the batch.
func (rw *retryableWrite) stmtID(i int) int32 { return rw.at.StmtID(i) }

// executed returns the outcome of statement i when an earlier attempt ran
// it, and notes it as retried.
func (rw *retryableWrite) executed(i int) (sessions.Outcome, bool) {
	if rw == nil {
		return sessions.Outcome{}, false
	}
	return rw.at.Executed(i)
}

// replyFields are the fields a write command's reply gains from a retry:
// retriedStmtIds, the ids of the statements an earlier attempt ran.
func (rw *retryableWrite) replyFields() []bson.E {
	if rw == nil {
		return nil
	}
	retried := rw.at.Retried()
	if len(retried) == 0 {
		return nil
	}
	ids := make(bson.A, len(retried))
	for i, id := range retried {
		ids[i] = id
	}
	return []bson.E{{Key: "retriedStmtIds", Value: ids}}
}

// record writes, in tx, the outcomes of statements the transaction
// wrote (sessions.Attempt.Record). It is where the
// onPrimaryTransactionalWrite fail point fires: failing the transaction,
// or closing the connection once it commits.
func (rw *retryableWrite) record(tx storage.Txn, recs ...sessions.Record) error {
	if rw == nil || len(recs) == 0 {
		return nil
	}
	if err := rw.failPoint(); err != nil {
		return err
	}
	return rw.at.Record(tx, rw.e.now(), recs...)
}

// committed is called once a transaction of the write committed.
func (rw *retryableWrite) committed() error {
	if rw == nil {
		return nil
	}
	rw.at.Committed()
	f := rw.fired
	rw.fired = nil
	if f != nil && f.closeConnection {
		rw.closeConnection()
		return errClosedByFailPoint
	}
	return nil
}

// errClosedByFailPoint ends a command whose connection the
// onPrimaryTransactionalWrite fail point closed: it gets no reply, and
// runs no further statement.
var errClosedByFailPoint = errorf(ErrInterrupted, "connection closed by the onPrimaryTransactionalWrite fail point")

func (rw *retryableWrite) closeConnection() {
	if rw.req.wr != nil {
		rw.req.wr.CloseConnection = true
	}
}

// failPoint fires the onPrimaryTransactionalWrite fail point for the
// commit under way, once.
func (rw *retryableWrite) failPoint() error {
	if rw.fired != nil || !rw.e.cfg.EnableTestCommands {
		return nil
	}
	f, ok := rw.e.txnWriteFailPoint.trigger()
	if !ok {
		return nil
	}
	if f.hasFailCode {
		if f.closeConnection {
			rw.closeConnection()
		}
		return errorf(Code(f.failCode), "Failing write for %s:%d due to failpoint. The write must not be reflected.", sessions.IDString(rw.lsid), rw.txn)
	}
	rw.fired = &f
	return nil
}

// stmtRef is one statement of a retryable write (rw nil: not retryable),
// for the code that runs it.
type stmtRef struct {
	rw    *retryableWrite
	index int
}

func (s stmtRef) record(tx storage.Txn, o sessions.Outcome) error {
	return s.rw.record(tx, sessions.Record{Index: s.index, Outcome: o})
}

func (s stmtRef) committed() error { return s.rw.committed() }

// statementIDs reads stmtIds (one per statement) or stmtId (the first of
// consecutive ids; 0 by default).
func statementIDs(req *request, n int) ([]int32, int32, error) {
	var ids []int32
	if v, err := req.body.LookupErr("stmtIds"); err == nil {
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, 0, wrongType(req.name, "stmtIds", v, "array")
		}
		vals, _ := arr.Values()
		ids = make([]int32, len(vals))
		for i, x := range vals {
			id, err := int64Arg(req.name, "stmtIds", x)
			if err != nil {
				return nil, 0, err
			}
			ids[i] = int32(id)
		}
		if len(ids) != n {
			return nil, 0, errorf(ErrInvalidLength, "Number of statement ids must match the number of batch entries. Got %d statement ids but %d operations.", len(ids), n)
		}
	}
	var first int32
	if v, err := req.body.LookupErr("stmtId"); err == nil {
		if ids != nil {
			return nil, 0, errorf(ErrInvalidOptions, "May not specify both stmtId and stmtIds in %s command.", req.name)
		}
		id, err := int64Arg(req.name, "stmtId", v)
		if err != nil {
			return nil, 0, err
		}
		first = int32(id)
	}
	return ids, first, nil
}

// sessionUUID is the 16 bytes of lsid.id, a UUID.
func sessionUUID(v bsoncore.Value) ([]byte, error) {
	if v.Type != bsoncore.TypeBinary {
		return nil, wrongType("OperationSessionInfo.lsid", "id", v, "binData")
	}
	sub, data := v.Binary()
	if sub != 4 || len(data) != store.SessionIDLen {
		return nil, &CommandError{Code: errInvalidUUID, Name: "InvalidUUID", Msg: "uuid must be a 16-byte binary field with UUID (4) subtype"}
	}
	return data, nil
}

// sessionUUIDOfKey is the UUID of a sessionKey (lsid.id's BSON data:
// length, subtype, bytes).
func sessionUUIDOfKey(key string) ([]byte, bool) {
	if len(key) != 5+store.SessionIDLen || key[4] != 4 {
		return nil, false
	}
	return []byte(key[5:]), true
}

// forgetSessions drops the sessions endSessions or killSessions named.
func (e *Engine) forgetSessions(keys []string) {
	if e.store == nil {
		return
	}
	for _, k := range keys {
		if lsid, ok := sessionUUIDOfKey(k); ok {
			e.sessions.Forget(lsid, time.Time{})
		}
	}
}

// forgetAllSessions forgets every session's retryable-write history
// (killAllSessions): those in memory and those only the store knows. A
// session running a command is left to finish it.
func (e *Engine) forgetAllSessions() {
	if e.store == nil {
		return
	}
	e.sessions.ForgetAll(e.now())
}

// expireSessions forgets the sessions idle for sessions.SessionTimeout:
// those in memory, and those only the store knows (from before a
// restart).
func (e *Engine) expireSessions() { e.sessions.Expire(e.now()) }

// updateOutcome is the outcome of an update statement that matched n
// documents, changed modified of them, and upserted upserted.
func updateOutcome(n, modified int64, upserted bsoncore.Value) sessions.Outcome {
	if upserted.Type != 0 {
		return sessions.Outcome{Op: "i", N: 1, Upserted: upserted}
	}
	return sessions.Outcome{Op: "u", N: int32(n), NModified: int32(modified)}
}

// deleteOutcome is the outcome of a delete statement that removed n
// documents.
func deleteOutcome(n int64) sessions.Outcome { return sessions.Outcome{Op: "d", N: int32(n)} }

// famOutcome is the outcome of a findAndModify that found or upserted a
// document.
func famOutcome(a famArgs, res famResult) sessions.Outcome {
	o := sessions.Outcome{Op: "u", N: int32(res.n), Upserted: res.upserted, FindAndModify: true, Value: res.value, PostImage: a.returnNew}
	switch {
	case a.remove:
		o.Op = "d"
	case res.upserted.Type != 0:
		o.Op = "i"
	case res.wrote:
		o.NModified = 1 // what an update retrying this statement reports
	}
	return o
}

// famRetryReply answers a findAndModify whose statement an earlier attempt
// ran: its reply then, with this request's projection, after MongoDB's
// checks that the retry asks for what was recorded.
func famRetryReply(a famArgs, o sessions.Outcome, project func([]byte) ([]byte, error), id int32) ([]byte, error) {
	const incompatible = "findAndModify retry request is not compatible with previous write in the transaction of type: %s"
	switch {
	case o.Op == "d" && !a.remove:
		return nil, errorf(errRetryNotRemove, incompatible, o.Op)
	case o.Op == "i" && !a.upsert:
		return nil, errorf(errRetryNotUpsert, incompatible, o.Op)
	case o.Op == "u" && a.remove:
		return nil, errorf(errRetryNotUpdate, incompatible, o.Op)
	case !o.FindAndModify:
		return nil, &CommandError{Code: ErrIncompleteTransactionHistory, Name: "IncompleteTransactionHistory",
			Msg: fmt.Sprintf("findAndModify retry request: statement %d was not a findAndModify, no document was recorded for it", id)}
	case o.Op == "u" && a.returnNew && !o.PostImage:
		return nil, errorf(errRetryWantsPost, "findAndModify retry request wants the document after update returned, but only before update document is stored")
	case o.Op == "u" && !a.returnNew && o.PostImage:
		return nil, errorf(errRetryWantsPre, "findAndModify retry request wants the document before update returned, but only after update document is stored")
	}
	reply, err := famReply(a, famResult{n: int64(o.N), updatedExisting: o.Op == "u", upserted: o.Upserted, value: o.Value}, project)
	if err != nil {
		return nil, err
	}
	// retriedStmtId goes before ok.
	start, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(reply)+24))
	elems, _ := bsoncore.Document(reply).Elements()
	for _, el := range elems {
		if el.Key() != "ok" {
			b = append(b, el...)
		}
	}
	b = bsoncore.AppendInt32Element(b, "retriedStmtId", id)
	b = bsoncore.AppendDoubleElement(b, "ok", 1)
	return bsoncore.AppendDocumentEnd(b, start)
}
