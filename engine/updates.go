package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/update"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Running updates: shared by update and findAndModify.

// maxInternalBSONSize is the largest document MongoDB builds at all (16 MiB
// plus room for command overhead); an update result past it fails as an
// invalid BSONObj, one between it and 16 MiB as too large to store.
const maxInternalBSONSize = wire.MaxBSONObjectSize + 16*1024

// updateSpec is one compiled update statement.
type updateSpec struct {
	query  bsoncore.Document // as sent, to seed an upsert
	filter *query.Filter
	upd    *update.Update
	multi  bool
	upsert bool
	// tally is the statement's request units (nil: not charged): an
	// upsert adds the item it inserts.
	tally *writeTally
	// stmt records what the statement wrote, in a retryable write
	// (retryable.go).
	stmt stmtRef
	// noValidation: bypassDocumentValidation (validation.go).
	noValidation bool
}

// updateResult is what running one statement did.
type updateResult struct {
	matched  int64
	modified int64
	upserted bsoncore.Value // _id of an inserted document (Type 0: none)
}

// writeState is what the engine keeps for writes: the $currentDate
// clock, and lock stripes that queue concurrent updates of one document
// (by its key) so that they wait for each other instead of conflicting in
// the store and retrying. The store still detects every conflict; the
// locks only avoid wasted work on hot documents.
type writeState struct {
	clock   timestampClock
	stripes [1024]sync.Mutex
}

// lockKey locks the stripe of a document key and returns the unlock.
func (w *writeState) lockKey(key []byte) func() {
	h := uint32(2166136261)
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	m := &w.stripes[h%uint32(len(w.stripes))]
	m.Lock()
	return m.Unlock
}

// timestampClock hands out increasing timestamps for $currentDate
// {$type: "timestamp"}: the second of now, and a counter within it.
type timestampClock struct {
	mu   sync.Mutex
	last update.Timestamp
}

func (c *timestampClock) next(secs uint32) update.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	if secs > c.last.T {
		c.last = update.Timestamp{T: secs, I: 1}
	} else {
		c.last.I++
	}
	return c.last
}

// compileWriteFilter compiles the filter of a write statement, with the
// command's variables for $expr.
func compileWriteFilter(q, let bsoncore.Document, now time.Time, coll *value.Collator) (*query.Filter, error) {
	f, err := query.CompileWith(q, query.Options{Let: let, Now: now, Collation: coll})
	if err != nil {
		return nil, queryError(err)
	}
	return f, nil
}

// updateEnv is the environment of an update run now.
func (e *Engine) updateEnv() update.Env {
	now := e.now()
	return update.Env{Now: now, Timestamp: e.writes.clock.next(uint32(now.Unix()))}
}

// updateError maps an error of package update to the client's error.
func updateError(err error) error {
	var ue *update.Error
	if !errors.As(err, &ue) {
		return err
	}
	if errors.Is(err, update.ErrQuery) {
		return errorf(toCommandError(queryError(ue.Cause())).Code, "%s", ue.Error())
	}
	code, _, ok := languageCode(err)
	if !ok {
		code = ErrBadValue
	}
	return errorf(code, "%s", ue.Error())
}

// checkUpdatedSize refuses a document an update made too large.
func checkUpdatedSize(doc []byte) error {
	switch {
	case len(doc) > maxInternalBSONSize:
		first := ""
		if e, err := bsoncore.Document(doc).IndexErr(0); err == nil {
			first = e.Key() + ": " + shellString(e.Value())
		}
		return errorf(ErrBSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB) First element: %s", len(doc), len(doc), maxInternalBSONSize, first)
	case len(doc) > wire.MaxBSONObjectSize:
		return errorf(ErrDocumentTooLarge, "Resulting document after update is larger than %d", wire.MaxBSONObjectSize)
	}
	return nil
}

// matchForUpdate matches doc against the statement's filter and returns
// the environment to update it in (with the positional match).
func (sp *updateSpec) matchForUpdate(doc bsoncore.Document, env update.Env) (bool, update.Env, error) {
	if sp.upd.Positional() {
		ok, pos := sp.filter.MatchPosition(doc)
		if ok && pos >= 0 {
			env.Position, env.HasPosition = pos, true
		}
		return ok, env, nil
	}
	ok, err := sp.filter.MatchErr(doc)
	if err != nil {
		return false, env, queryError(err)
	}
	return ok, env, nil
}

// pendingWrite is a document an update changed, written once the scan
// that found it is over.
type pendingWrite struct {
	key     []byte
	doc     []byte
	oldSize int
}

// runUpdate runs one update statement: in transactions of at most
// chunkDocs changed documents (each document's update is atomic), then,
// when nothing matched and upsert is set, the insert, in the transaction
// that found nothing. On an error it returns what it did before it.
//
// It is admitted by the partitions it is routed to before it changes
// anything, and charged for each transaction it commits.
func (e *Engine) runUpdate(ctx context.Context, m *meter, db, name string, sp *updateSpec) (updateResult, error) {
	u := &updater{e: e, ctx: ctx, m: m, db: db, name: name, sp: sp}
	if found, err := u.start(); !found || err != nil {
		return u.res, err
	}
	if err := e.admitWrite(ctx, m, &u.tally); err != nil {
		return u.res, err
	}
	err := u.run()
	return u.res, err
}

// updater is one run of an update statement: where it runs, what its
// committed transactions did, and the chunk whose transaction is under
// way.
type updater struct {
	e        *Engine
	ctx      context.Context
	m        *meter
	db, name string
	sp       *updateSpec
	env      update.Env

	coll  *store.Collection
	point []byte          // the key the filter pins (nil: none)
	spans []partitionSpan // else where the scan goes
	tally writeTally

	res    updateResult // what committed transactions did
	resume []byte       // the key the next chunk's scan starts at
	chunk  updateChunk
}

// updateChunk is what one attempt of a chunk's transaction did; a rerun
// starts it over.
type updateChunk struct {
	matched, modified int64
	upserted          bsoncore.Value
	writes            []pendingWrite
	bytes             int
	more              bool   // the scan stopped with the chunk full
	next              []byte // where the next chunk's scan starts
	stmtErr           error  // the statement's error: it ends with this chunk
}

// start opens the collection and routes the statement; found is false
// when there is nothing to update.
func (u *updater) start() (found bool, err error) {
	if found, err = u.open(); !found || err != nil {
		return found, err
	}
	u.env = u.e.updateEnv()
	u.sp.tally = &u.tally
	u.sp.noValidation = validationBypassed(u.ctx)
	u.route()
	return true, nil
}

// open finds the collection, or creates it for an upsert; found is
// false when there is none and nothing to upsert.
func (u *updater) open() (found bool, err error) {
	if u.coll = u.e.store.Collection(u.db, u.name); u.coll != nil {
		return true, nil
	}
	if !u.sp.upsert {
		return false, nil
	}
	if u.coll, _, err = u.e.ensureCollection(u.ctx, u.db, u.name); err != nil {
		return false, err
	}
	return true, nil
}

// route finds the key or the partitions the filter routes to.
func (u *updater) route() {
	u.point = plan.PointKey(u.coll, u.sp.filter, u.sp.query)
	rq := plan.Uncollated(u.sp.query, u.sp.filter.Collation()) // routing compares no strings under a collation
	u.spans = plan.RouteWrites(u.coll, rq)
	u.e.routeWrite(&u.tally, u.coll, u.point, u.spans, rq)
}

// run updates chunk by chunk until the statement is over.
func (u *updater) run() error {
	for {
		if err := u.ctx.Err(); err != nil {
			return err
		}
		err := u.commitChunk()
		if errors.Is(err, store.ErrCollectionChanged) {
			// Dropped or renamed meanwhile: start over on what the name is now.
			if found, err := u.open(); !found || err != nil {
				return err
			}
			u.route()
			u.resume = nil
			continue
		}
		if err != nil {
			return fmt.Errorf("update %s: %w", u.coll.Namespace(), err)
		}
		if done, err := u.takeChunk(); done || err != nil {
			return err
		}
	}
}

// commitChunk runs the next chunk in one transaction, holding the lock
// of the key the filter pins, if one.
func (u *updater) commitChunk() error {
	if u.point != nil {
		defer u.e.writes.lockKey(u.point)()
	}
	return u.e.writerOf(u.ctx).Update(u.fillChunk)
}

// fillChunk is one attempt of a chunk's transaction: it finds and
// updates the documents, writes them, upserts when nothing matched, and
// records the statement's outcome.
func (u *updater) fillChunk(tx storage.Txn) error {
	u.chunk = updateChunk{}
	u.tally.Reset()
	find := u.updateScanned
	if u.point != nil {
		find = u.updatePoint
	}
	if err := find(tx); err != nil {
		return err
	}
	if err := u.write(tx); err != nil {
		return err
	}
	if err := u.upsert(tx); err != nil {
		return err
	}
	return u.record(tx)
}

// updatePoint updates the one document the filter pins, with one read
// of its key for the read-modify-write.
func (u *updater) updatePoint(tx storage.Txn) error {
	var out []byte
	ixEntries, ixBytes := billing.IndexWork(tx)
	markReplacement(tx, u.sp.upd.Kind() == update.Replacement)
	err := tx.Modify(u.coll, u.point, func(doc []byte) ([]byte, error) {
		u.tally.Read = int64(len(doc))
		out = u.apply(doc)
		return out, nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err == nil && out != nil {
		e1, b1 := billing.IndexWork(tx)
		u.tally.Item(ru.KindReplace, u.point, len(out), e1-ixEntries, b1-ixBytes)
	}
	return nil
}

// updateScanned scans from resume and updates what matches, up to a
// chunk of changes, kept to be written once the scan is over. It stops
// at the statement's error, and a single update at its first match.
func (u *updater) updateScanned(tx storage.Txn) error {
	c := &u.chunk
	return plan.ScanSpans(tx, u.coll, u.spans, u.resume, func(key, doc []byte) (bool, error) {
		if len(c.writes) >= chunkDocs || c.bytes >= chunkBytes || !tx.Plan(u.coll, key) {
			c.more, c.next = true, append([]byte(nil), key...)
			return false, nil
		}
		u.tally.Scanned(doc)
		if out := u.apply(doc); out != nil {
			c.writes = append(c.writes, pendingWrite{key: append([]byte(nil), key...), doc: out, oldSize: len(doc)})
			c.bytes += len(out)
		}
		return c.stmtErr == nil && (u.sp.multi || c.matched == 0), nil
	})
}

// apply updates one document: its new version (nil when the update
// changes nothing or the document does not match). A document that fails
// to update sets the statement's error and is not counted.
func (u *updater) apply(doc []byte) []byte {
	c := &u.chunk
	ok, denv, err := u.sp.matchForUpdate(doc, u.env)
	if err != nil {
		c.stmtErr = err
		return nil
	}
	if !ok {
		return nil
	}
	out, changed, err := u.sp.upd.Apply(doc, denv)
	if err == nil && changed {
		err = checkUpdatedSize(out)
	}
	if err != nil {
		c.stmtErr = updateError(err)
		return nil
	}
	if changed {
		err := checkShardKeyKept(u.coll, doc, out)
		if err == nil {
			err = u.e.checkDocument(u.ctx, u.coll, doc, out, u.sp.noValidation)
		}
		if err != nil {
			c.stmtErr = err
			return nil
		}
	}
	c.matched++
	if !changed {
		return nil
	}
	c.modified++
	return out
}

// write stores the documents the scan changed. A document a unique index
// refuses (the store wrote nothing of it) ends the statement; those
// before it stay updated, as in MongoDB.
func (u *updater) write(tx storage.Txn) error {
	c := &u.chunk
	for i, w := range c.writes {
		ixEntries, ixBytes := billing.IndexWork(tx)
		markReplacement(tx, u.sp.upd.Kind() == update.Replacement)
		if err := tx.Replace(u.coll, w.key, w.doc, w.oldSize); err != nil {
			if !isIndexDup(err) && !errors.Is(err, store.ErrParallelArrays) {
				return err
			}
			unapplied := int64(len(c.writes) - i)
			c.matched, c.modified, c.more = c.matched-unapplied, c.modified-unapplied, false
			c.stmtErr = err
			return nil
		}
		e1, b1 := billing.IndexWork(tx)
		u.tally.Item(ru.KindReplace, w.key, len(w.doc), e1-ixEntries, b1-ixBytes)
	}
	return nil
}

// upsert inserts the document an upsert makes when the statement, run to
// its end without an error, matched nothing. A client error is the
// statement's; others fail the transaction.
func (u *updater) upsert(tx storage.Txn) error {
	c := &u.chunk
	if c.stmtErr != nil || c.more || !u.sp.upsert || u.res.matched+c.matched != 0 {
		return nil
	}
	id, err := u.e.upsertInTxn(tx, u.coll, u.sp, u.env)
	if err != nil {
		var ce *CommandError
		if !errors.As(err, &ce) {
			return err
		}
		c.stmtErr = err
	}
	c.upserted = id
	return nil
}

// record records the statement's outcome, in a retryable write, when
// the chunk changed data.
func (u *updater) record(tx storage.Txn) error {
	c := &u.chunk
	if c.stmtErr == nil && (c.modified > 0 || c.upserted.Type != 0) {
		return u.sp.stmt.record(tx, updateOutcome(u.res.matched+c.matched, u.res.modified+c.modified, c.upserted))
	}
	return nil
}

// takeChunk takes in the chunk its transaction committed: charges it and
// adds what it did to the result. done: the statement is over, by its
// error, its end, or the first match of a single update.
func (u *updater) takeChunk() (done bool, err error) {
	c := &u.chunk
	u.e.units.ChargeWrite(u.m, &u.tally)
	u.res.matched += c.matched
	u.res.modified += c.modified
	if c.upserted.Type != 0 {
		u.res.upserted = c.upserted
	}
	if err := u.sp.stmt.committed(); err != nil {
		return true, err
	}
	if c.stmtErr != nil {
		return true, c.stmtErr
	}
	if !c.more || (!u.sp.multi && u.res.matched > 0) {
		return true, nil
	}
	u.resume = c.next
	return false, nil
}

// upsertInTxn inserts the document an upsert makes and returns its _id.
// Client errors are *CommandError; others fail the transaction.
func (e *Engine) upsertInTxn(tx storage.Txn, coll *store.Collection, sp *updateSpec, env update.Env) (bsoncore.Value, error) {
	id, _, err := e.upsertKeyInTxn(tx, coll, sp, env)
	return id, err
}

// upsertKeyInTxn is upsertInTxn that also returns the new document's key.
func (e *Engine) upsertKeyInTxn(tx storage.Txn, coll *store.Collection, sp *updateSpec, env update.Env) (bsoncore.Value, []byte, error) {
	if err := targetedShardKey(coll, sp.query); err != nil {
		return bsoncore.Value{}, nil, err
	}
	doc, err := sp.upd.Upsert(sp.query, env)
	if err != nil {
		return bsoncore.Value{}, nil, updateError(err)
	}
	if err := checkUpdatedSize(doc); err != nil {
		return bsoncore.Value{}, nil, err
	}
	ins := prepareInsert(doc)
	if ins.err != nil {
		return bsoncore.Value{}, nil, ins.err
	}
	key, err := docKeyOf(coll, ins.doc, ins.id)
	if err != nil {
		return bsoncore.Value{}, nil, err
	}
	if err := e.checkDocument(context.Background(), coll, nil, ins.doc, sp.noValidation); err != nil {
		return bsoncore.Value{}, nil, err
	}
	ixEntries, ixBytes := billing.IndexWork(tx)
	err = tx.Insert(coll, key, ins.doc)
	if err == nil && sp.tally != nil {
		e1, b1 := billing.IndexWork(tx)
		sp.tally.Item(ru.KindUpsert, key, len(ins.doc), e1-ixEntries, b1-ixBytes)
	}
	if errors.Is(err, store.ErrLogicalPartitionFull) {
		return bsoncore.Value{}, nil, toCommandError(err)
	}
	var dup *store.DuplicateKeyError
	if errors.As(err, &dup) && dup.Index == "" {
		we := dupKeyError(0, coll.Namespace(), ins.id)
		return bsoncore.Value{}, nil, &dupKeyCommandError{CommandError{Code: ErrDuplicateKey, Msg: we.msg}, ins.id}
	}
	if err != nil {
		return bsoncore.Value{}, nil, err
	}
	return bsoncore.Value{Type: ins.id.Type, Data: append([]byte(nil), ins.id.Data...)}, key, nil
}

// dupKeyCommandError is a duplicate key met by an upsert: it keeps the
// key value for the write error's keyValue.
type dupKeyCommandError struct {
	CommandError
	id bsoncore.Value
}

// As lets errors.As find the CommandError inside.
func (d *dupKeyCommandError) As(target any) bool {
	if p, ok := target.(**CommandError); ok {
		*p = &d.CommandError
		return true
	}
	return false
}

// writeErrorOf turns a statement's error into a write error at index.
func writeErrorOf(index int, err error) writeError {
	var dk *dupKeyCommandError
	if errors.As(err, &dk) {
		return writeError{index: index, code: ErrDuplicateKey, msg: dk.Msg, keyValue: dk.id}
	}
	var dup *store.DuplicateKeyError
	if errors.As(err, &dup) && dup.Index != "" {
		return dupWriteError(index, "", dup, bsoncore.Value{})
	}
	ce := toCommandError(err)
	return writeError{index: index, code: ce.Code, msg: ce.Msg, errInfo: validationErrorInfo(err)}
}

// rawValue wraps a bsoncore value for bson.D replies.
func rawValue(v bsoncore.Value) bson.RawValue {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}
