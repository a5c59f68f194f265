package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/update"
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
func compileWriteFilter(q, let bsoncore.Document, now time.Time) (*query.Filter, error) {
	f, err := query.CompileWith(q, query.Options{Let: let, Now: now})
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
	code := ErrBadValue
	for _, m := range []struct {
		cat  error
		code Code
	}{
		{update.ErrBadValue, ErrBadValue},
		{update.ErrFailedToParse, ErrFailedToParse},
		{update.ErrTypeMismatch, ErrTypeMismatch},
		{update.ErrPathNotViable, ErrPathNotViable},
		{update.ErrConflictingOperators, ErrConflictingUpdateOperators},
		{update.ErrDollarPrefixedField, ErrDollarPrefixedFieldName},
		{update.ErrInvalidIDField, ErrInvalidIDField},
		{update.ErrNotSingleValueField, ErrNotSingleValueField},
		{update.ErrEmptyFieldName, ErrEmptyFieldName},
		{update.ErrImmutableField, ErrImmutableField},
		{update.ErrInvalidOptions, ErrInvalidOptions},
		{update.ErrUnsupported, ErrCommandNotSupported},
		{update.ErrInvalidPipelineUpdate, ErrInvalidOptions},
		{update.ErrUnknownStage, errUnknownStage},
		{update.ErrReplaceRootNotObject, errReplaceRootNotObject},
	} {
		if errors.Is(err, m.cat) {
			code = m.code
			break
		}
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
	var res updateResult
	coll := e.store.Collection(db, name)
	if coll == nil {
		if !sp.upsert {
			return res, nil
		}
		var err error
		if coll, _, err = e.ensureCollection(ctx, db, name); err != nil {
			return res, err
		}
	}
	env := e.updateEnv()
	point := pointKeyFor(coll, sp.filter, sp.query)
	spans := plan.RouteWrites(coll, sp.query)
	var tally writeTally
	sp.tally = &tally
	e.routeWrite(&tally, coll, point, spans, sp.query)
	if err := e.admitWrite(ctx, m, &tally); err != nil {
		return res, err
	}
	var resume []byte
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		var (
			matched, modified int64
			upserted          bsoncore.Value
			more              bool
			next              []byte
			stmtErr           error
		)
		var unlock func()
		if point != nil {
			unlock = e.writes.lockKey(point)
		}
		err := e.writerOf(ctx).Update(func(tx storage.Txn) error {
			matched, modified, upserted, more, next, stmtErr = 0, 0, bsoncore.Value{}, false, nil, nil
			tally.reset()
			var writes []pendingWrite
			bytes := 0
			// apply updates one document: its new version (nil when the
			// update changes nothing or the document does not match).
			apply := func(doc []byte) []byte {
				ok, denv, err := sp.matchForUpdate(doc, env)
				if err != nil {
					stmtErr = err
					return nil
				}
				if !ok {
					return nil
				}
				out, changed, err := sp.upd.Apply(doc, denv)
				if err == nil && changed {
					err = checkUpdatedSize(out)
				}
				if err != nil {
					stmtErr = updateError(err)
					return nil
				}
				if changed {
					if err := checkShardKeyKept(coll, doc, out); err != nil {
						stmtErr = err
						return nil
					}
				}
				matched++ // a document that failed to update is not counted
				if !changed {
					return nil
				}
				modified++
				return out
			}
			if point != nil {
				// One read of the key for the read-modify-write.
				var out []byte
				ixEntries, ixBytes := secondaryIndexWork(tx)
				err := tx.Modify(coll, point, func(doc []byte) ([]byte, error) {
					tally.read = int64(len(doc))
					out = apply(doc)
					return out, nil
				})
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				if err == nil && out != nil {
					e1, b1 := secondaryIndexWork(tx)
					tally.item(ru.KindReplace, point, len(out), e1-ixEntries, b1-ixBytes)
				}
			} else {
				err := plan.ScanSpans(tx, coll, spans, resume, func(key, doc []byte) (bool, error) {
					if len(writes) >= chunkDocs || bytes >= chunkBytes {
						more, next = true, append([]byte(nil), key...)
						return false, nil
					}
					tally.scanned(doc)
					if out := apply(doc); out != nil {
						writes = append(writes, pendingWrite{key: append([]byte(nil), key...), doc: out, oldSize: len(doc)})
						bytes += len(out)
					}
					return stmtErr == nil && (sp.multi || matched == 0), nil
				})
				if err != nil {
					return err
				}
			}
			for i, w := range writes {
				ixEntries, ixBytes := secondaryIndexWork(tx)
				if err := tx.Replace(coll, w.key, w.doc, w.oldSize); err != nil {
					if !isIndexDup(err) && !errors.Is(err, store.ErrParallelArrays) {
						return err
					}
					// A document a unique index refuses (the store wrote
					// nothing of it) ends the statement; those before it
					// stay updated, as in MongoDB.
					unapplied := int64(len(writes) - i)
					matched, modified, more = matched-unapplied, modified-unapplied, false
					stmtErr = err
					break
				}
				e1, b1 := secondaryIndexWork(tx)
				tally.item(ru.KindReplace, w.key, len(w.doc), e1-ixEntries, b1-ixBytes)
			}
			if stmtErr == nil && !more && sp.upsert && res.matched+matched == 0 {
				id, err := e.upsertInTxn(tx, coll, sp, env)
				if err != nil {
					var ce *CommandError
					if !errors.As(err, &ce) {
						return err
					}
					stmtErr = err
				}
				upserted = id
			}
			if stmtErr == nil && (modified > 0 || upserted.Type != 0) {
				return sp.stmt.record(tx, updateOutcome(res.matched+matched, res.modified+modified, upserted))
			}
			return nil
		})
		if unlock != nil {
			unlock()
		}
		if errors.Is(err, store.ErrCollectionChanged) {
			// Dropped or renamed meanwhile: start over on what the name is now.
			if coll = e.store.Collection(db, name); coll == nil && !sp.upsert {
				return res, nil
			}
			if coll == nil {
				if coll, _, err = e.ensureCollection(ctx, db, name); err != nil {
					return res, err
				}
			}
			point = pointKeyFor(coll, sp.filter, sp.query)
			spans = plan.RouteWrites(coll, sp.query)
			e.routeWrite(&tally, coll, point, spans, sp.query)
			resume = nil
			continue
		}
		if err != nil {
			return res, fmt.Errorf("update %s: %w", coll.Namespace(), err)
		}
		e.chargeWrite(m, &tally)
		res.matched += matched
		res.modified += modified
		if upserted.Type != 0 {
			res.upserted = upserted
		}
		if err := sp.stmt.committed(); err != nil {
			return res, err
		}
		if stmtErr != nil {
			return res, stmtErr
		}
		if !more || (!sp.multi && res.matched > 0) {
			return res, nil
		}
		resume = next
	}
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
	ixEntries, ixBytes := secondaryIndexWork(tx)
	err = tx.Insert(coll, key, ins.doc)
	if err == nil && sp.tally != nil {
		e1, b1 := secondaryIndexWork(tx)
		sp.tally.item(ru.KindUpsert, key, len(ins.doc), e1-ixEntries, b1-ixBytes)
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
	return writeError{index: index, code: ce.Code, msg: ce.Msg}
}

// rawValue wraps a bsoncore value for bson.D replies.
func rawValue(v bsoncore.Value) bson.RawValue {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}
