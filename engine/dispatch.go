package engine

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Every request goes through these steps, in this order. Each is one
// concern. Steps 1 to 9 may end the command with their reply; finish
// runs however it ended.
//
// dispatch (dispatchSteps, then the rest):
//
//  1. parse          the request is a command: readable, within the size
//                    limits, named, with a string $db; OP_QUERY only for
//                    the handshake (genericargs.go)
//  2. lookup         the name is a command Parsec serves, in a database it
//                    may run in (commands.go, unsupported.go)
//  3. authorize      with access control on, the connection's user may run
//                    it (authz.go)
//  4. register       currentOp lists it and killOp can cancel it (ops.go)
//  5. checkArgs      its generic arguments and read concern are valid
//                    (genericargs.go, readconcern.go)
//  6. bindSession    it joins its transaction, checking the session out, or
//                    else any txnNumber belongs to a retryable write
//                    (transactions.go, retryable.go)
//  7. setDeadline    maxTimeMS bounds it
//  8. applyFailPoint an active failCommand blocks it, fails it or drops the
//                    connection (failpoints.go)
//  9. takeSnapshot   a snapshot read gets its snapshot (snapshots.go)
// 10. confirmRead    a strong read (readConcern linearizable or majority,
//                    or every read under --default-consistency strong) on
//                    a cluster's writer first confirms with the cluster
//                    that the writer has everything committed
//                    (consistency.go)
// 11. execute        it is counted and its handler runs, unless killOp or
//                    maxTimeMS ended it meanwhile
// 12. decorate       the fail point's writeConcernError, a snapshot read's
//                    atClusterTime
// 13. finish         the deadline is released, a transaction's statement
//                    ends (transactions.go), the command leaves currentOp
//
// then run, for every readable request:
//
// 14. stampReply     an unmet write concern's writeConcernError, then
//                    $clusterTime and operationTime (writes.go,
//                    clustertime.go)
// 15. requestCharge  the request charge (requestunits.go)
//
// A panic in any step of dispatch becomes an InternalError reply, after
// finish.

// dispatchState is one request on its way through dispatch: what the steps
// have found so far.
type dispatchState struct {
	c   *conn
	wr  *wire.Request
	ctx context.Context

	name string   // the command name as sent ("" until parse reads it)
	req  *request // nil until parse makes it
	cmd  command  // the handler (lookup)

	cancel         context.CancelFunc // killOp's cancel, once registered
	snapshotRC     bsoncore.Document  // a snapshot read concern (checkArgs)
	stmt           *txnStatement      // the transaction's statement (bindSession)
	cancelDeadline context.CancelFunc // maxTimeMS's (setDeadline)
	fail           *failAction        // what the fail point does (applyFailPoint)
	snapshotTS     *bson.Timestamp    // the snapshot's cluster time (takeSnapshot)
}

// dispatchSteps are the steps before the handler, in order. A step that
// returns done ends the command with its reply (nil: no reply, the
// connection closes).
var dispatchSteps = []func(*dispatchState) (reply []byte, done bool){
	(*dispatchState).parse,
	(*dispatchState).lookup,
	(*dispatchState).authorize,
	(*dispatchState).register,
	(*dispatchState).checkArgs,
	(*dispatchState).bindSession,
	(*dispatchState).setDeadline,
	(*dispatchState).applyFailPoint,
	(*dispatchState).takeSnapshot,
	(*dispatchState).confirmRead,
}

// run runs one command and returns its reply, its name and its request
// charge.
func (c *conn) run(ctx context.Context, wr *wire.Request) (reply []byte, name string, charge float64) {
	var units *meter
	defer func() { charge = c.e.requestCharge(units) }()
	reply, name, units = c.dispatch(ctx, wr)
	if wr.Err == nil {
		reply = c.e.stampReply(name, wr.Body, reply)
	}
	return reply, name, charge
}

// dispatch runs a request through the steps; units is the request's
// account once it has one.
func (c *conn) dispatch(ctx context.Context, wr *wire.Request) (reply []byte, name string, units *meter) {
	d := &dispatchState{c: c, wr: wr, ctx: ctx}
	defer func() {
		if p := recover(); p != nil {
			name, units = d.name, d.units()
			c.e.logger.Error("command panicked", "command", name, "panic", p, "stack", string(debug.Stack()))
			reply = errorReply(errorf(ErrInternalError, "internal error in %s: %v", name, p))
		}
	}()
	defer func() { reply = d.finish(reply) }()
	for _, step := range dispatchSteps {
		if out, done := step(d); done {
			return out, d.name, d.units()
		}
	}
	return d.decorate(d.execute()), d.name, d.units()
}

// units is the request's account, nil before parse makes the request.
func (d *dispatchState) units() *meter {
	if d.req == nil {
		return nil
	}
	return &d.req.units
}

// refuse ends the command with ce.
func refuse(ce *CommandError) ([]byte, bool) {
	return errorReply(ce), true
}

// parse reads the command's name and database and makes the request.
func (d *dispatchState) parse() ([]byte, bool) {
	wr := d.wr
	if wr.Err != nil {
		return refuse(errorf(ErrInvalidOptions, "invalid %s message: %v", wr.OpCode, wr.Err))
	}
	body := bsoncore.Document(wr.Body)
	if ce := checkRequestSize(body, wr.Sequences); ce != nil {
		return refuse(ce)
	}
	first, err := body.IndexErr(0)
	if err != nil {
		return refuse(errorf(ErrFailedToParse, "empty command document"))
	}
	d.name = first.Key()
	if ce := checkLegacyQuery(wr.OpCode, d.name); ce != nil {
		return refuse(ce)
	}
	d.req = &request{name: d.name, body: body, seqs: wr.Sequences, c: d.c, db: wr.DB, wr: wr}
	if v, err := body.LookupErr("$db"); err == nil {
		db, ok := v.StringValueOK()
		if !ok {
			return refuse(wrongType(d.name, "$db", v, "string"))
		}
		d.req.db = db
	}
	if d.req.db == "" {
		return refuse(errorf(ErrFailedToParse, "command %s has no $db", d.name))
	}
	return nil, false
}

// lookup finds the command's handler. An unknown name is CommandNotFound;
// a command Parsec knows and does not serve is CommandNotSupported, or,
// to a client that must authenticate and has not, Unauthorized, as
// MongoDB checks authentication first.
func (d *dispatchState) lookup() ([]byte, bool) {
	cmd, ok := d.c.e.commands[d.name]
	if !ok {
		if ce := unsupportedCommand(d.name); ce != nil {
			if d.c.e.cfg.Auth && d.c.user() == nil {
				ce = requiresAuthentication(d.name)
			}
			return refuse(ce)
		}
		return refuse(errorf(ErrCommandNotFound, "no such command: '%s'", d.name))
	}
	if cmd.adminOnly && d.req.db != "admin" {
		return refuse(errorf(ErrUnauthorized, "%s may only be run against the admin database.", d.name))
	}
	d.cmd = cmd
	return nil, false
}

// authorize refuses, with access control on, a command the connection's
// user may not run (or any that needs a user, before authentication).
func (d *dispatchState) authorize() ([]byte, bool) {
	if !d.c.e.cfg.Auth {
		return nil, false
	}
	if ce := d.c.authorize(d.cmd, d.req); ce != nil {
		return refuse(ce)
	}
	return nil, false
}

// register lists the command among the running ones, with a context
// killOp cancels; finish takes it off.
func (d *dispatchState) register() ([]byte, bool) {
	d.ctx, d.cancel = context.WithCancel(d.ctx)
	d.req.op = activeOp{c: d.c, name: d.cmd.name, db: d.req.db, body: d.req.body, start: d.c.e.now(), cancel: d.cancel}
	d.c.e.running.add(&d.req.op)
	return nil, false
}

// checkArgs checks the generic arguments and the read concern, keeping a
// snapshot read concern for takeSnapshot.
func (d *dispatchState) checkArgs() ([]byte, bool) {
	if ce := checkGenericArgs(d.name, d.req.body); ce != nil {
		return refuse(ce)
	}
	rc, ce := checkReadConcern(d.cmd.name, d.req.body)
	if ce != nil {
		return refuse(ce)
	}
	d.snapshotRC = rc
	return nil, false
}

// bindSession starts or continues the transaction a command with
// autocommit belongs to (finish ends its statement); outside a
// transaction, only a retryable write may carry a txnNumber.
func (d *dispatchState) bindSession() ([]byte, bool) {
	ctx, stmt, ce := d.c.e.transactionStatement(d.ctx, d.cmd.name, d.req.body)
	d.ctx = ctx
	if ce != nil {
		return refuse(ce)
	}
	if stmt != nil {
		d.stmt = stmt
		return nil, false
	}
	if ce := checkTxnNumber(d.cmd.name, d.req.body); ce != nil {
		return refuse(ce)
	}
	return nil, false
}

// setDeadline bounds the command by its maxTimeMS (0: no bound). A
// getMore's maxTimeMS is how long it waits for data, its handler's
// business.
func (d *dispatchState) setDeadline() ([]byte, bool) {
	v, err := d.req.body.LookupErr("maxTimeMS")
	if err != nil || d.cmd.name == "getMore" {
		return nil, false
	}
	ms, err := int64Arg(d.name, "maxTimeMS", v)
	if err != nil {
		return refuse(toCommandError(err))
	}
	if ms < 0 {
		return refuse(negativeMaxTimeMS(d.name, ms))
	}
	if ms > 0 {
		d.ctx, d.cancelDeadline = context.WithTimeout(d.ctx, time.Duration(ms)*time.Millisecond)
	}
	return nil, false
}

// applyFailPoint lets an active failCommand (test commands only) that
// names the command block it, then fail it or drop the connection; what it
// adds to a reply that succeeds, decorate adds. Its failure does not abort
// a transaction.
func (d *dispatchState) applyFailPoint() ([]byte, bool) {
	c := d.c
	if !c.e.cfg.EnableTestCommands {
		return nil, false
	}
	c.mu.Lock()
	app := c.appName
	c.mu.Unlock()
	a, ok := c.e.failPoint.trigger(d.name, app)
	if !ok {
		return nil, false
	}
	d.fail = a
	out, done := a.before(d.ctx, d.req, func() { d.wr.CloseConnection = true })
	if done && d.stmt != nil {
		d.stmt.injected = true
	}
	return out, done
}

// takeSnapshot gives a snapshot read its snapshot, in the context.
func (d *dispatchState) takeSnapshot() ([]byte, bool) {
	ctx, ts, ce := d.c.e.snapshotRead(d.ctx, d.cmd.name, d.snapshotRC)
	if ce != nil {
		return refuse(ce)
	}
	d.ctx, d.snapshotTS = ctx, ts
	return nil, false
}

// confirmRead makes a strong read wait for the cluster's confirmation
// (Config.ReadBarrier) that this node, the writer, has applied
// everything committed when the read began.
func (d *dispatchState) confirmRead() ([]byte, bool) {
	e := d.c.e
	if e.cfg.ReadBarrier == nil || !readCommands[d.cmd.name] || !e.strongRead(d.req.body) {
		return nil, false
	}
	if err := e.cfg.ReadBarrier(d.ctx); err != nil {
		if d.ctx.Err() != nil {
			return refuse(toCommandError(d.ctx.Err()))
		}
		return refuse(errorf(ErrNotPrimaryNoSecondaryOk, "could not confirm with the cluster that this node is its writer and up to date: %v", err))
	}
	return nil, false
}

// execute counts the command in serverStatus.opcounters and runs its
// handler, unless it was killed or timed out while a fail point held it.
// An internal error, or a panic on a partition, is logged.
func (d *dispatchState) execute() []byte {
	e := d.c.e
	e.countOp(d.cmd.name)
	if err := d.ctx.Err(); err != nil {
		return errorReply(toCommandError(err))
	}
	defer e.sampleQuery(d.cmd.name, d.req)()
	out, err := d.cmd.run(e, d.ctx, d.req)
	if err != nil {
		ce := toCommandError(err)
		if pe := (*agg.PanicError)(nil); errors.As(err, &pe) {
			e.logger.Error("command panicked on a partition", "command", d.name, "panic", pe.Value, "stack", string(pe.Stack))
		} else if ce.Code == ErrInternalError {
			e.logger.Error("command failed", "command", d.name, "err", err)
		}
		return errorReply(retryableLabel(ce, d.cmd.name, d.req.body))
	}
	return out
}

// decorate adds to a successful reply the fail point's writeConcernError
// and a snapshot read's atClusterTime; a failure stays as it is.
func (d *dispatchState) decorate(out []byte) []byte {
	if d.fail != nil {
		out = d.fail.after(d.req, out)
	}
	if d.snapshotTS != nil {
		out = withAtClusterTime(out, *d.snapshotTS)
	}
	return out
}

// finish undoes what the steps set up, last first, whichever step ended
// the command (or panicked): it releases the deadline, ends the
// transaction's statement (which may relabel the reply) and takes the
// command off the running ones.
func (d *dispatchState) finish(reply []byte) []byte {
	if d.cancel != nil {
		defer d.cancel()
		defer d.c.e.running.remove(&d.req.op)
	}
	if d.cancelDeadline != nil {
		d.cancelDeadline()
	}
	if d.stmt != nil {
		reply = d.stmt.finish(reply)
	}
	return reply
}

// stampReply adds to every readable request's reply an unmet write
// concern's writeConcernError, then $clusterTime and operationTime.
func (e *Engine) stampReply(name string, body bsoncore.Document, reply []byte) []byte {
	reply = withWriteConcernError(name, body, reply)
	return e.withClusterTime(name, reply)
}

// requestCharge is a command's request charge: what its operations were
// charged, or the command price, which counts among the RU charged to no
// partition. Nothing is charged with request units bypassed.
func (e *Engine) requestCharge(units *meter) float64 {
	switch {
	case e.ruOpts.Bypass:
		return 0
	case units == nil || units.Idle():
		e.commandRU.Add(int64(commandRU * 100))
		return commandRU
	default:
		return units.Charge()
	}
}
