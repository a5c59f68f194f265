package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/engine/sessions"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
)

// Multi-document transactions.
//
// Drivers send every command of a transaction with the session's lsid,
// the transaction's txnNumber and autocommit: false; the first also
// carries startTransaction: true (and the transaction's read concern),
// and commitTransaction or abortTransaction ends it. Each transaction is
// a store.Transaction: one Badger read-write transaction held across its
// commands, so its statements see its own writes, others see none of them
// until commit, and an abort leaves nothing behind. Reads see the data as
// of the transaction's first statement (snapshot isolation), whatever its
// read concern.
//
// As in MongoDB:
//   - a statement that fails aborts its transaction; later statements and
//     commitTransaction then get 251 NoSuchTransaction;
//   - two transactions that write one document conflict at once: the
//     second gets 112 WriteConflict (a write outside any transaction waits
//     for the transaction to end instead);
//   - both errors carry the TransientTransactionError label, on which
//     drivers' withTransaction helpers run the transaction again;
//   - a transaction open longer than transactionLifetimeLimitSeconds (60)
//     is aborted;
//   - count, listCollections, drop and the other commands MongoDB refuses
//     in a transaction get 263 OperationNotSupportedInTransaction, and so
//     do $out and $merge;
//   - commitTransaction is idempotent: run again after a commit (a
//     driver's retry) it succeeds again.
//
// Collections a transaction creates (by create, by createIndexes or by a
// first write) are pending until it ends: listCollections, listIndexes
// and listDatabases do not show them, commit publishes them, and abort
// drops them again (store.Withdraw), as does the next start after a
// crash. createIndexes in a transaction may only build on such a
// collection, or create one, as in MongoDB.
//
// A transaction's state (in progress, committed, aborted and why), its
// lifetime and the collections it created are kept in engine/sessions
// (sessions.Transaction); this file checks which commands run in one,
// and labels and decorates their replies.

// afterFuncOf runs transactions' lifetime timers on the server's clock
// when it has one of its own (Config.Wait): nil (time.AfterFunc)
// otherwise. A timer is a goroutine in wait until the lifetime passed or
// stop cancels it; f runs at most once, and never after stop returned
// true.
func afterFuncOf(wait func(ctx context.Context, d time.Duration) error) sessions.AfterFunc {
	if wait == nil {
		return nil
	}
	return func(d time.Duration, f func()) func() bool {
		const pending, fired, stopped = 0, 1, 2
		var state atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			defer cancel()
			if wait(ctx, d) == nil && state.CompareAndSwap(pending, fired) {
				f()
			}
		}()
		return func() bool {
			if state.CompareAndSwap(pending, stopped) {
				cancel()
				return true
			}
			return false
		}
	}
}

// defaultTransactionLifetime is MongoDB's transactionLifetimeLimitSeconds.
const defaultTransactionLifetime = 60 * time.Second

// transactionLifetime is how long a transaction may stay open.
func (e *Engine) transactionLifetime() time.Duration {
	if e.cfg.TransactionLifetime > 0 {
		return e.cfg.TransactionLifetime
	}
	return defaultTransactionLifetime
}

// transactionCommands are the commands a transaction may run.
var transactionCommands = map[string]bool{
	"find": true, "getMore": true, "killCursors": true, "aggregate": true, "distinct": true,
	"insert": true, "update": true, "delete": true, "findAndModify": true,
	"create": true, "createIndexes": true,
	"commitTransaction": true, "abortTransaction": true,
}

// transientCodes are the errors a driver may retry the whole transaction
// on; so are the retryable errors (failover, shutdown, network) of a
// statement other than commitTransaction and abortTransaction.
var transientCodes = map[Code]bool{ErrWriteConflict: true, ErrNoSuchTransaction: true, ErrLockTimeout: true}

func (s *txnStatement) transient(code Code) bool {
	if transientCodes[code] {
		return true
	}
	return retryableCodes[int32(code)] && s.cmd != "commitTransaction" && s.cmd != "abortTransaction"
}

type txnKey struct{}
type statementKey struct{}

// ensureCollection is store.EnsureCollection for a command under ctx: a
// collection a transaction's statement creates is pending until the
// transaction ends.
func (e *Engine) ensureCollection(ctx context.Context, db, name string) (*store.Collection, bool, error) {
	c, created, err := e.store.EnsureCollection(db, name)
	if created {
		if s := statementOf(ctx); s != nil {
			err = s.txn.Create(c)
		}
	}
	return c, created, err
}

// txnOf is the transaction the command under ctx runs in, or nil.
func txnOf(ctx context.Context) storage.Transaction {
	t, _ := ctx.Value(txnKey{}).(storage.Transaction)
	return t
}

// writer runs write transactions: the store's, or a transaction's.
type writer interface {
	Update(fn func(storage.Txn) error) error
}

// writerOf is where the writes under ctx go: their transaction, or the
// store (each write committed at once).
func (e *Engine) writerOf(ctx context.Context) writer {
	if t := txnOf(ctx); t != nil {
		return t
	}
	return e.store
}

// txnStatement is a command of a transaction, holding its session.
type txnStatement struct {
	e    *Engine
	sess *sessions.Session
	lsid []byte
	txn  *sessions.Transaction
	cmd  string
	n    int64
	// injected: the reply is a fail point's (configureFailPoint), not
	// the command's.
	injected bool
}

// transactionStatement starts or continues the transaction a command
// with autocommit belongs to, checking the session out until finish. It
// returns a nil statement for a command outside any transaction.
func (e *Engine) transactionStatement(ctx context.Context, cmd string, body bsoncore.Document) (context.Context, *txnStatement, *CommandError) {
	acv, acErr := body.LookupErr("autocommit")
	stv, stErr := body.LookupErr("startTransaction")
	if acErr != nil && stErr != nil {
		return ctx, nil, nil
	}
	if acErr != nil {
		return ctx, nil, errorf(ErrInvalidOptions, "startTransaction requires autocommit: false")
	}
	ac, ok := acv.BooleanOK()
	if !ok {
		return ctx, nil, wrongType(cmd, "autocommit", acv, "bool")
	}
	if ac {
		return ctx, nil, errorf(ErrInvalidOptions, "autocommit may only be given as false, in a multi-document transaction")
	}
	start := false
	if stErr == nil {
		b, ok := stv.BooleanOK()
		if !ok {
			return ctx, nil, wrongType(cmd, "startTransaction", stv, "bool")
		}
		if !b {
			return ctx, nil, errorf(ErrInvalidOptions, "startTransaction may only be given as true")
		}
		start = true
	}
	v, err := body.LookupErr("txnNumber")
	if err != nil {
		return ctx, nil, errorf(ErrInvalidOptions, "'autocommit' field requires a transaction number to also be specified")
	}
	n, err := int64Arg("OperationSessionInfo", "txnNumber", v)
	if err != nil {
		return ctx, nil, toCommandError(err)
	}
	idv, err := body.LookupErr("lsid", "id")
	if err != nil {
		return ctx, nil, errorf(ErrInvalidOptions, "Transaction number requires a session ID to also be specified")
	}
	lsid, err := sessionUUID(idv)
	if err != nil {
		return ctx, nil, toCommandError(err)
	}
	if ce := checkTransactionCommand(cmd, body, start); ce != nil {
		return ctx, nil, ce
	}
	sess, err := e.sessions.Checkout(ctx, lsid)
	if err != nil {
		return ctx, nil, toCommandError(err)
	}
	s := &txnStatement{e: e, sess: sess, lsid: lsid, cmd: cmd, n: n}
	ctx, ce := s.enter(ctx, start)
	if ce != nil {
		s.release()
		if s.transient(ce.Code) {
			labeled := *ce
			labeled.Extra = append(append(bson.D(nil), ce.Extra...), bson.E{Key: "errorLabels", Value: bson.A{"TransientTransactionError"}})
			ce = &labeled
		}
		return ctx, nil, ce
	}
	return context.WithValue(ctx, statementKey{}, s), s, nil
}

// checkTransactionCommand refuses what MongoDB refuses in a transaction.
func checkTransactionCommand(cmd string, body bsoncore.Document, start bool) *CommandError {
	if !transactionCommands[cmd] {
		return errorf(ErrOperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", cmd)
	}
	if cmd == "aggregate" {
		if stages, ok := body.Lookup("pipeline").ArrayOK(); ok {
			vals, _ := stages.Values()
			for _, st := range vals {
				if d, ok := st.DocumentOK(); ok {
					if el, err := d.IndexErr(0); err == nil && (el.Key() == "$out" || el.Key() == "$merge") {
						return errorf(ErrOperationNotSupportedInTransaction, "%s cannot be used in a transaction", el.Key())
					}
				}
			}
		}
	}
	if _, err := body.LookupErr("writeConcern"); err == nil && cmd != "commitTransaction" && cmd != "abortTransaction" {
		return errorf(ErrInvalidOptions, "writeConcern is not allowed within a multi-statement transaction")
	}
	rc, err := body.LookupErr("readConcern")
	if err != nil {
		return nil
	}
	if !start {
		return errorf(ErrInvalidOptions, "Only the first command in a transaction may specify a readConcern")
	}
	if d, ok := rc.DocumentOK(); ok {
		switch level, _ := d.Lookup("level").StringValueOK(); level {
		case "", "local", "majority", "snapshot":
		default:
			return errorf(ErrInvalidOptions, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction")
		}
	}
	return nil
}

// enter checks the statement against its session's transaction, starting
// one for startTransaction, and returns ctx with the transaction.
func (s *txnStatement) enter(ctx context.Context, start bool) (context.Context, *CommandError) {
	e := s.e
	var t *sessions.Transaction
	var err error
	if start {
		t, err = s.sess.StartTransaction(s.n, e.transactionLifetime(), e.now())
	} else {
		t, err = s.sess.Transaction(s.n, e.now())
	}
	if err != nil {
		return ctx, s.sessionError(err)
	}
	s.txn = t
	if start {
		tagChanges(t.Storage(), s.lsid, s.n)
	}
	if !start {
		if s.cmd == "commitTransaction" || s.cmd == "abortTransaction" {
			return ctx, nil // their handlers look at the state
		}
		if err := t.CheckActive(); err != nil {
			return ctx, s.sessionError(err)
		}
	}
	return context.WithValue(ctx, txnKey{}, t.Storage()), nil
}

// sessionError is the MongoDB error for what engine/sessions refused.
func (s *txnStatement) sessionError(err error) *CommandError {
	var old *sessions.TooOldError
	var notInProgress *sessions.NotInProgressError
	switch {
	case errors.As(err, &old):
		return transactionTooOld(s.lsid, old)
	case errors.Is(err, sessions.ErrTransactionStarted):
		return errorf(ErrConflictingOperationInProgress, "Cannot start a transaction at given transaction number %d on session %s because a transaction with the same number is in progress or has run.", s.n, sessions.IDString(s.lsid))
	case errors.As(err, &notInProgress):
		return s.noSuchTransaction(notInProgress.Why)
	case errors.Is(err, sessions.ErrCommitted):
		return errorf(ErrTransactionCommitted, "Transaction %d has been committed.", s.n)
	}
	return toCommandError(err)
}

func (s *txnStatement) noSuchTransaction(why string) *CommandError {
	msg := fmt.Sprintf("Transaction with txnNumber %d on session %s is not in progress", s.n, sessions.IDString(s.lsid))
	if why != "" {
		msg = fmt.Sprintf("Transaction with txnNumber %d on session %s has been aborted because %s", s.n, sessions.IDString(s.lsid), why)
	}
	return errorf(ErrNoSuchTransaction, "%s", msg)
}

// finish ends the statement and returns its reply: a failed one (an
// error, write errors, or no reply after a panic) aborts the transaction,
// and an error a driver may retry the whole transaction on gets the
// TransientTransactionError label. A statement's successful reply carries
// a recoveryToken, as a router's does, which drivers send back with
// commitTransaction and abortTransaction.
func (s *txnStatement) finish(out []byte) []byte {
	defer s.release()
	endCmd := s.cmd == "commitTransaction" || s.cmd == "abortTransaction"
	doc := bsoncore.Document(out)
	ok, isNum := doc.Lookup("ok").AsFloat64OK()
	failed := out == nil || !isNum || ok != 1
	if !failed {
		wes, err := doc.LookupErr("writeErrors")
		failed = err == nil
		if ce := conflictIn(wes); ce != nil {
			// In a transaction a write conflict fails the command, as
			// MongoDB throws it, rather than being one statement's error.
			out, doc, ok = errorReply(ce), errorReply(ce), 0
		}
	}
	if s.txn != nil && !s.injected && !endCmd {
		s.txn.StatementRan()
		if failed {
			s.txn.Abort("a statement of it failed")
		}
	}
	if out == nil {
		return out
	}
	if ok == 1 {
		if endCmd {
			return out
		}
		return appendElement(out, bsoncore.AppendDocumentElement(nil, "recoveryToken", recoveryToken))
	}
	if _, err := doc.LookupErr("errorLabels"); err == nil {
		return out
	}
	if code, _ := doc.Lookup("code").AsInt64OK(); !s.transient(Code(code)) {
		return out
	}
	return appendElement(out, transientLabel)
}

// recoveryToken is what a statement's reply names the shard that can
// tell a transaction's outcome by: Parsec is its only shard.
var recoveryToken = bsoncore.NewDocumentBuilder().AppendString("recoveryShardId", "parsec").Build()

// transientLabel is the errorLabels element of a transient error.
var transientLabel = func() []byte {
	aidx, b := bsoncore.AppendArrayElementStart(nil, "errorLabels")
	b = bsoncore.AppendStringElement(b, "0", "TransientTransactionError")
	b, _ = bsoncore.AppendArrayEnd(b, aidx)
	return b
}()

// conflictIn is the WriteConflict among a reply's writeErrors, or nil.
func conflictIn(writeErrors bsoncore.Value) *CommandError {
	arr, ok := writeErrors.ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	for _, v := range vals {
		d, _ := v.DocumentOK()
		if code, _ := d.Lookup("code").AsInt64OK(); Code(code) == ErrWriteConflict {
			msg, _ := d.Lookup("errmsg").StringValueOK()
			return errorf(ErrWriteConflict, "%s", msg)
		}
	}
	return nil
}

func (s *txnStatement) release() { s.sess.Release(s.e.now()) }

func statementOf(ctx context.Context) *txnStatement {
	s, _ := ctx.Value(statementKey{}).(*txnStatement)
	return s
}
