package engine

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
// In memory, sessionTable keeps each session's highest txnNumber (a lower
// one is TransactionTooOld) and a checkout that lets one command of a
// session run at a time, as MongoDB checks a session out: a retry that
// arrives while its first attempt still runs (the client saw the
// connection drop, the server did not) waits for it and then sees its
// records. Sessions idle for logicalSessionTimeoutMinutes are forgotten,
// in memory and in the store; endSessions and killSessions forget theirs
// at once.

// sessionTimeout is logicalSessionTimeoutMinutes, as hello reports it.
const sessionTimeout = 30 * time.Minute

// staleRecordsKept: a new txnNumber first deletes the session's records
// when they may be more than this many (statement ids past it were
// recorded since the last deletion); fewer stay, ignored as stale, until
// overwritten or the session is forgotten. So a session keeps at most
// this many records beyond its current write's, and a write after small
// ones deletes nothing.
const staleRecordsKept = 64

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

// sessionTable is the engine's logical sessions that ran retryable
// writes, by session id.
type sessionTable struct {
	mu sync.Mutex
	m  map[string]*txnSession
	// openTxns is the number of transactions in progress (transactions.go).
	openTxns atomic.Int64
}

// txnSession is one logical session. Its fields other than lastUse
// belong to whoever holds the checkout.
type txnSession struct {
	slot    chan struct{} // holds a token while a command runs in the session
	lastUse atomic.Int64  // Unix nanoseconds of the last checkout
	gone    bool          // removed from the table: look the session up again
	loaded  bool          // txnNumber and stmts were read from the store
	// txnNumber is the highest transaction number seen (-1: none); span
	// is one past the highest statement id recorded since the store's
	// records were last deleted (store.SessionHead.Span).
	txnNumber int64
	span      int32
	// txn is the session's multi-statement transaction with number
	// txnNumber, in progress or ended (nil: none; transactions.go).
	txn *sessionTxn
}

func newSessionTable() *sessionTable {
	return &sessionTable{m: map[string]*txnSession{}}
}

func (t *sessionTable) entry(lsid []byte) *txnSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[string(lsid)]
	if s == nil {
		s = &txnSession{slot: make(chan struct{}, 1), txnNumber: -1}
		t.m[string(lsid)] = s
	}
	return s
}

// checkout waits until no other command runs in session lsid and returns
// it, held; release gives it back.
func (t *sessionTable) checkout(ctx context.Context, lsid []byte) (*txnSession, error) {
	for {
		s := t.entry(lsid)
		select {
		case s.slot <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !s.gone {
			return s, nil
		}
		<-s.slot
	}
}

// tryCheckout is checkout that gives up when a command runs in the session.
func (t *sessionTable) tryCheckout(lsid []byte) (*txnSession, bool) {
	s := t.entry(lsid)
	select {
	case s.slot <- struct{}{}:
	default:
		return nil, false
	}
	if s.gone {
		<-s.slot
		return nil, false
	}
	return s, true
}

func (s *txnSession) release() { <-s.slot }

// remove drops s, held by the caller, from the table and releases it.
func (t *sessionTable) remove(lsid []byte, s *txnSession) {
	s.gone = true
	t.mu.Lock()
	if t.m[string(lsid)] == s {
		delete(t.m, string(lsid))
	}
	t.mu.Unlock()
	s.release()
}

// idle lists the sessions last used before cutoff.
func (t *sessionTable) idle(cutoff time.Time) [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out [][]byte
	for k, s := range t.m {
		if s.lastUse.Load() < cutoff.UnixNano() {
			out = append(out, []byte(k))
		}
	}
	return out
}

// usedSince reports whether session lsid was checked out at or after t.
func (t *sessionTable) usedSince(lsid []byte, since time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[string(lsid)]
	return s != nil && s.lastUse.Load() >= since.UnixNano()
}

// stmtOutcome is what one statement of a retryable write did: what a
// retry of it answers. op is the MongoDB oplog type of its write: "i"
// (an insert, or an upsert), "u" (an update) or "d" (a delete).
type stmtOutcome struct {
	// run is how many statements, of consecutive ids from the record's,
	// this outcome is that of (0 means 1): inserts that succeed in a row
	// share one record.
	run       int32
	op        string
	n         int32
	nModified int32
	upserted  bsoncore.Value // _id of an upserted document
	// findAndModify: the document returned (nil: null), before or after
	// the update (postImage), without the fields projection.
	fam       bool
	value     []byte
	postImage bool
}

// isPlain reports whether o is like (an outcome of op and n only, run
// aside): one that may stand for a run of statements.
func (o stmtOutcome) isPlain(like stmtOutcome) bool {
	return o.op == like.op && o.n == like.n && o.nModified == 0 && o.upserted.Type == 0 && !o.fam
}

func (o stmtOutcome) encode() []byte {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendStringElement(b, "op", o.op)
	if o.run > 1 {
		b = bsoncore.AppendInt32Element(b, "run", o.run)
	}
	b = bsoncore.AppendInt32Element(b, "n", o.n)
	b = bsoncore.AppendInt32Element(b, "nModified", o.nModified)
	if o.upserted.Type != 0 {
		b = bsoncore.AppendValueElement(b, "upserted", o.upserted)
	}
	if o.fam {
		b = bsoncore.AppendBooleanElement(b, "new", o.postImage)
		if o.value != nil {
			b = bsoncore.AppendDocumentElement(b, "value", o.value)
		} else {
			b = bsoncore.AppendNullElement(b, "value")
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

func decodeOutcome(b []byte) (stmtOutcome, error) {
	var o stmtOutcome
	elems, err := bsoncore.Document(b).Elements()
	if err != nil {
		return o, fmt.Errorf("retryable write record: %w", err)
	}
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "op":
			o.op, _ = v.StringValueOK()
		case "run":
			o.run, _ = v.Int32OK()
		case "n":
			o.n, _ = v.Int32OK()
		case "nModified":
			o.nModified, _ = v.Int32OK()
		case "upserted":
			o.upserted = v
		case "new":
			o.fam, o.postImage = true, v.Boolean()
		case "value":
			if d, ok := v.DocumentOK(); ok {
				o.value = d
			}
		}
	}
	return o, nil
}

// updateOutcome is the outcome of an update statement that matched n
// documents, changed modified of them, and upserted upserted.
func updateOutcome(n, modified int64, upserted bsoncore.Value) stmtOutcome {
	if upserted.Type != 0 {
		return stmtOutcome{op: "i", n: 1, upserted: upserted}
	}
	return stmtOutcome{op: "u", n: int32(n), nModified: int32(modified)}
}

// retryableWrite is one write command with a txnNumber: its session
// (checked out until release) and the statements an earlier attempt ran.
// A nil *retryableWrite is a write that is not retryable: every method
// does nothing.
type retryableWrite struct {
	e       *Engine
	req     *request
	sess    *txnSession
	lsid    []byte
	txn     int64
	ids     []int32 // stmtIds, or nil: the ids are first, first+1, …
	first   int32
	done    map[int32]stmtOutcome // statements an earlier attempt ran
	retried []int32               // ids of done statements this attempt met
	pending int32                 // span once the transaction under way commits
	fired   *txnWriteFailData     // fail point fired for the commit under way
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
	sess, err := e.sessions.checkout(ctx, lsid)
	if err != nil {
		return nil, err
	}
	rw := &retryableWrite{e: e, req: req, sess: sess, lsid: lsid, txn: txn, ids: ids, first: first}
	if err := rw.begin(); err != nil {
		sess.release()
		return nil, err
	}
	return rw, nil
}

// begin starts or continues the session's transaction number.
func (rw *retryableWrite) begin() error {
	s, e := rw.sess, rw.e
	now := e.now()
	s.lastUse.Store(now.UnixNano())
	if err := s.load(e, rw.lsid); err != nil {
		return err
	}
	if rw.txn > s.txnNumber {
		s.endTransaction() // a newer txnNumber aborts the transaction in progress
	}
	switch {
	case rw.txn < s.txnNumber:
		return &CommandError{Code: ErrTransactionTooOld, Name: "TransactionTooOld",
			Msg: fmt.Sprintf("Cannot start transaction %d on session %s because a newer transaction with txnNumber %d has already started on this session.", rw.txn, sessionString(rw.lsid), s.txnNumber)}
	case rw.txn > s.txnNumber:
		if s.span > staleRecordsKept {
			if err := e.store.ResetSession(rw.lsid, store.SessionHead{TxnNumber: rw.txn, LastUse: now}); err != nil {
				return err
			}
			s.span = 0
		}
		s.txnNumber = rw.txn
	case s.span > 0:
		recs, err := e.store.SessionStatements(rw.lsid, rw.txn)
		if err != nil {
			return err
		}
		rw.done = make(map[int32]stmtOutcome, len(recs))
		for id, b := range recs {
			o, err := decodeOutcome(b)
			if err != nil {
				return err
			}
			for i := range max(o.run, 1) {
				rw.done[id+i] = o
			}
		}
	}
	rw.pending = s.span
	return nil
}

// load reads the session's txnNumber and statement span from the store
// the first time the session is checked out.
func (s *txnSession) load(e *Engine, lsid []byte) error {
	if s.loaded {
		return nil
	}
	h, ok, err := e.store.SessionHead(lsid)
	if err != nil {
		return err
	}
	if ok {
		s.txnNumber, s.span = h.TxnNumber, h.Span
	}
	s.loaded = true
	return nil
}

// release gives the session back.
func (rw *retryableWrite) release() {
	if rw != nil {
		rw.sess.lastUse.Store(rw.e.now().UnixNano())
		rw.sess.release()
	}
}

// stmtID is the statement id of the statement at index i of the batch.
func (rw *retryableWrite) stmtID(i int) int32 {
	if rw.ids != nil {
		return rw.ids[i]
	}
	return rw.first + int32(i)
}

// executed returns the outcome of statement i when an earlier attempt ran
// it, and notes it as retried.
func (rw *retryableWrite) executed(i int) (stmtOutcome, bool) {
	if rw == nil || rw.done == nil {
		return stmtOutcome{}, false
	}
	id := rw.stmtID(i)
	o, ok := rw.done[id]
	if ok {
		rw.retried = append(rw.retried, id)
	}
	return o, ok
}

// replyFields are the fields a write command's reply gains from a retry:
// retriedStmtIds, the ids of the statements an earlier attempt ran.
func (rw *retryableWrite) replyFields() []bson.E {
	if rw == nil || len(rw.retried) == 0 {
		return nil
	}
	ids := make(bson.A, len(rw.retried))
	for i, id := range rw.retried {
		ids[i] = id
	}
	return []bson.E{{Key: "retriedStmtIds", Value: ids}}
}

// stmtRecord is the outcome of the statement at index of the batch.
type stmtRecord struct {
	index int
	out   stmtOutcome
}

// record writes, in tx, the outcomes of statements the transaction
// wrote, in index order; inserts of consecutive ids share a record. It
// is where the onPrimaryTransactionalWrite fail point fires: failing the
// transaction, or closing the connection once it commits.
func (rw *retryableWrite) record(tx storage.Txn, recs ...stmtRecord) error {
	if rw == nil || len(recs) == 0 {
		return nil
	}
	if err := rw.failPoint(); err != nil {
		return err
	}
	var stmts []store.SessionStatement
	var runID int32
	var run stmtOutcome
	span := rw.sess.span
	flush := func() {
		if run.op != "" {
			stmts = append(stmts, store.SessionStatement{ID: runID, Outcome: run.encode()})
			span = max(span, runID+max(run.run, 1))
		}
	}
	inserted := stmtOutcome{op: "i", n: 1}
	for _, r := range recs {
		id := rw.stmtID(r.index)
		if r.out.isPlain(inserted) && run.op != "" && run.isPlain(inserted) && id == runID+max(run.run, 1) {
			run.run = max(run.run, 1) + 1
			continue
		}
		flush()
		runID, run = id, r.out
	}
	flush()
	rw.pending = span
	return tx.PutSessionStatements(rw.lsid, store.SessionHead{TxnNumber: rw.txn, LastUse: rw.e.now(), Span: span}, stmts)
}

// committed is called once a transaction of the write committed.
func (rw *retryableWrite) committed() error {
	if rw == nil {
		return nil
	}
	rw.sess.span = rw.pending
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
		return errorf(Code(f.failCode), "Failing write for %s:%d due to failpoint. The write must not be reflected.", sessionString(rw.lsid), rw.txn)
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

func (s stmtRef) record(tx storage.Txn, o stmtOutcome) error {
	return s.rw.record(tx, stmtRecord{s.index, o})
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

// noAuthUID is what MongoDB shows as a session's uid without
// authentication: the SHA-256 of the empty user name, base64.
var noAuthUID = base64.StdEncoding.EncodeToString([]byte{
	0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
	0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
})

// sessionString renders a session id as MongoDB's messages do.
func sessionString(lsid []byte) string {
	h := hex.EncodeToString(lsid)
	if len(h) != 32 {
		return h
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + " - " + noAuthUID
}

// forgetSession drops session lsid from memory and the store, unless a
// command runs in it or, when idleBefore is set, it was used since.
func (e *Engine) forgetSession(lsid []byte, idleBefore time.Time) {
	s, ok := e.sessions.tryCheckout(lsid)
	if !ok {
		return
	}
	if !idleBefore.IsZero() && s.lastUse.Load() >= idleBefore.UnixNano() {
		s.release()
		return
	}
	s.endTransaction()
	if err := e.store.DeleteSession(lsid); err != nil && !errors.Is(err, store.ErrClosed) {
		e.logger.Warn("forgetting a session", "lsid", sessionString(lsid), "err", err)
	}
	e.sessions.remove(lsid, s)
}

// forgetSessions drops the sessions endSessions or killSessions named.
func (e *Engine) forgetSessions(keys []string) {
	if e.store == nil {
		return
	}
	for _, k := range keys {
		if lsid, ok := sessionUUIDOfKey(k); ok {
			e.forgetSession(lsid, time.Time{})
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
	future := e.now().Add(time.Hour) // every session was idle before then
	for _, lsid := range e.sessions.idle(future) {
		e.forgetSession(lsid, time.Time{})
	}
	stored, err := e.store.IdleSessions(future)
	if err != nil {
		return
	}
	for _, lsid := range stored {
		e.forgetSession(lsid, time.Time{})
	}
}

// expireSessions forgets the sessions idle for sessionTimeout: those in
// memory, and those only the store knows (from before a restart).
func (e *Engine) expireSessions() {
	cutoff := e.now().Add(-sessionTimeout)
	for _, lsid := range e.sessions.idle(cutoff) {
		e.forgetSession(lsid, cutoff)
	}
	stored, err := e.store.IdleSessions(cutoff)
	if err != nil {
		if !errors.Is(err, store.ErrClosed) {
			e.logger.Warn("listing idle sessions", "err", err)
		}
		return
	}
	for _, lsid := range stored {
		if !e.sessions.usedSince(lsid, cutoff) {
			e.forgetSession(lsid, cutoff)
		}
	}
}

// famOutcome is the outcome of a findAndModify that found or upserted a
// document.
func famOutcome(a famArgs, res famResult) stmtOutcome {
	o := stmtOutcome{op: "u", n: int32(res.n), upserted: res.upserted, fam: true, value: res.value, postImage: a.returnNew}
	switch {
	case a.remove:
		o.op = "d"
	case res.upserted.Type != 0:
		o.op = "i"
	case res.wrote:
		o.nModified = 1 // what an update retrying this statement reports
	}
	return o
}

// famRetryReply answers a findAndModify whose statement an earlier attempt
// ran: its reply then, with this request's projection, after MongoDB's
// checks that the retry asks for what was recorded.
func famRetryReply(a famArgs, o stmtOutcome, project func([]byte) ([]byte, error), id int32) ([]byte, error) {
	const incompatible = "findAndModify retry request is not compatible with previous write in the transaction of type: %s"
	switch {
	case o.op == "d" && !a.remove:
		return nil, errorf(errRetryNotRemove, incompatible, o.op)
	case o.op == "i" && !a.upsert:
		return nil, errorf(errRetryNotUpsert, incompatible, o.op)
	case o.op == "u" && a.remove:
		return nil, errorf(errRetryNotUpdate, incompatible, o.op)
	case !o.fam:
		return nil, &CommandError{Code: ErrIncompleteTransactionHistory, Name: "IncompleteTransactionHistory",
			Msg: fmt.Sprintf("findAndModify retry request: statement %d was not a findAndModify, no document was recorded for it", id)}
	case o.op == "u" && a.returnNew && !o.postImage:
		return nil, errorf(errRetryWantsPost, "findAndModify retry request wants the document after update returned, but only before update document is stored")
	case o.op == "u" && !a.returnNew && o.postImage:
		return nil, errorf(errRetryWantsPre, "findAndModify retry request wants the document before update returned, but only after update document is stored")
	}
	reply, err := famReply(a, famResult{n: int64(o.n), updatedExisting: o.op == "u", upserted: o.upserted, value: o.value}, project)
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
