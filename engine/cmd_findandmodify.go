package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/update"
	"github.com/parsecdb/parsec/ru"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// famArgs are the parsed fields of findAndModify.
type famArgs struct {
	query        bsoncore.Document
	sort         bsoncore.Document
	fields       bsoncore.Document
	update       bsoncore.Value
	arrayFilters []bsoncore.Document
	let          bsoncore.Document
	hint         bsoncore.Value
	remove       bool
	returnNew    bool
	upsert       bool
	keepEmptyTs  bool // bypassEmptyTsReplacement (emptyts.go)
	collation    collationOpt
}

// cmdFindAndModify finds one document (the first in sort order), then
// removes it or updates it (upserting when asked), atomically, and
// returns it as it was before or (new) after. The reply is
// {lastErrorObject: {n, updatedExisting, upserted}, value, ok}.
func (e *Engine) cmdFindAndModify(ctx context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	a, err := parseFindAndModify(req)
	if err != nil {
		return nil, err
	}
	if e.isView(req.db, name) {
		return nil, notOnView(req.db, name)
	}
	if !a.keepEmptyTs && !a.remove {
		a.update = e.replaceEmptyTimestampsIn(a.update)
	}
	wc, err := parseWriteConcern(req)
	if err != nil {
		return nil, err
	}
	now := e.now()
	collator := a.collation.resolve(e, req.db, name)
	f, err := compileWriteFilter(a.query, a.let, now, collator)
	if err != nil {
		return nil, err
	}
	sort, err := query.CompileSort(a.sort)
	if err != nil {
		return nil, queryError(err)
	}
	sort = sort.WithCollation(collator)
	project, err := compileFields(a.fields, f, a.let, now)
	if err != nil {
		return nil, err
	}
	rw, err := e.retryableWrite(ctx, req, wc, 1)
	if err != nil {
		return nil, err
	}
	defer rw.release()
	if o, done := rw.executed(0); done {
		return famRetryReply(a, o, project, rw.stmtID(0))
	}
	coll := e.store.Collection(req.db, name)
	if coll != nil && a.hint.Type != 0 {
		if err := checkHint(coll, a.hint); err != nil {
			return nil, err
		}
	}
	ctx = withValidationBypass(ctx, req)
	sp := &updateSpec{query: a.query, filter: f, upsert: a.upsert, stmt: stmtRef{rw, 0}, noValidation: validationBypassed(ctx)}
	if !a.remove {
		if sp.upd, err = update.Parse(a.update, update.Options{ArrayFilters: a.arrayFilters, Let: a.let, Collation: collator}); err != nil {
			return nil, updateError(err)
		}
	}
	if coll == nil {
		if !a.upsert {
			return famReply(a, famResult{}, project)
		}
		if coll, _, err = e.ensureCollection(ctx, req.db, name); err != nil {
			return nil, err
		}
	}
	var res famResult
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err = e.findAndModify(ctx, &req.units, coll, sp, sort, a)
		if !errors.Is(err, store.ErrCollectionChanged) {
			break
		}
		if coll = e.store.Collection(req.db, name); coll == nil {
			if !a.upsert {
				return famReply(a, famResult{}, project)
			}
			if coll, _, err = e.ensureCollection(ctx, req.db, name); err != nil {
				return nil, err
			}
		}
	}
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) || isIndexDup(err) {
			return nil, planExecutorError(toCommandError(err))
		}
		return nil, fmt.Errorf("findAndModify on %s: %w", coll.Namespace(), err)
	}
	if err := e.journal(wc, res.wrote); err != nil {
		return nil, err
	}
	return famReply(a, res, project)
}

func parseFindAndModify(req *request) (famArgs, error) {
	var a famArgs
	hasUpdate := false
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "query":
			if v.Type != bsoncore.TypeNull {
				a.query, err = docArg(req.name, k, v)
			}
		case "sort":
			if v.Type != bsoncore.TypeNull {
				a.sort, err = docArg(req.name, k, v)
			}
		case "fields":
			if v.Type != bsoncore.TypeNull {
				a.fields, err = docArg(req.name, k, v)
			}
		case "update":
			if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
				err = errorf(ErrFailedToParse, "Update argument must be either an object or an array")
			}
			a.update, hasUpdate = v, true
		case "remove":
			a.remove, err = boolArg(req.name, k, v)
		case "new":
			a.returnNew, err = boolArg(req.name, k, v)
		case "upsert":
			a.upsert, err = boolArg(req.name, k, v)
		case "bypassDocumentValidation":
			_, err = boolArg(req.name, k, v)
		case "bypassEmptyTsReplacement":
			a.keepEmptyTs, err = boolArg(req.name, k, v)
		case "arrayFilters":
			a.arrayFilters, err = arrayFiltersArg(req.name, v)
		case "let":
			a.let, err = docArg(req.name, k, v)
		case "hint":
			if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeEmbeddedDocument {
				err = wrongTypes(req.name, k, v, "string, object")
			}
			a.hint = v
		case "collation":
			err = a.collation.parse(req.name, k, v)
		default:
			if !genericFields[k] {
				err = unknownField(req.name, k)
			}
		}
		if err != nil {
			return a, err
		}
	}
	switch {
	case a.remove && hasUpdate:
		return a, errorf(ErrFailedToParse, "Cannot specify both an update and remove=true")
	case !a.remove && !hasUpdate:
		return a, errorf(ErrFailedToParse, "Either an update or remove=true must be specified")
	case a.remove && a.upsert:
		return a, errorf(ErrFailedToParse, "Cannot specify both upsert=true and remove=true ")
	case a.remove && a.returnNew:
		return a, errorf(ErrFailedToParse, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
	case a.remove && a.arrayFilters != nil:
		return a, errorf(ErrFailedToParse, "Cannot specify arrayFilters and remove=true")
	}
	return a, nil
}

// famResult is what findAndModify did.
type famResult struct {
	n               int64
	updatedExisting bool
	upserted        bsoncore.Value
	value           []byte // the document to return (nil: null)
	wrote           bool
}

// findAndModify runs in one transaction: find the target, then remove,
// update or upsert it. It is admitted by the partitions it is routed to
// before it changes anything, and charged once it committed.
func (e *Engine) findAndModify(ctx context.Context, m *meter, coll *store.Collection, sp *updateSpec, sort *query.Sort, a famArgs) (famResult, error) {
	var res famResult
	env := e.updateEnv()
	point := plan.PointKey(coll, sp.filter, sp.query)
	var tally writeTally
	rq := plan.Uncollated(sp.query, sp.filter.Collation()) // routing compares no strings under a collation
	e.routeWrite(&tally, coll, point, plan.RouteWrites(coll, rq), rq)
	if err := e.admitWrite(ctx, m, &tally); err != nil {
		return res, err
	}
	sp.tally = &tally
	if point != nil {
		defer e.writes.lockKey(point)()
	}
	err := e.writerOf(ctx).Update(func(tx storage.Txn) error {
		res = famResult{}
		tally.Reset()
		key, doc, err := findTarget(tx, coll, sp.filter, sp.query, sort, &tally)
		if err != nil {
			return err
		}
		if doc == nil {
			if !a.upsert {
				return nil
			}
			id, key, err := e.upsertKeyInTxn(tx, coll, sp, env)
			if err != nil {
				return err
			}
			res.n, res.upserted, res.wrote = 1, id, true
			if a.returnNew {
				if res.value, err = tx.Get(key); err != nil {
					return err
				}
			}
			return sp.stmt.record(tx, famOutcome(a, res))
		}
		res.n = 1
		if a.remove {
			res.value, res.wrote = doc, true
			if err := e.deleteItem(tx, &tally, coll, key, len(doc)); err != nil {
				return err
			}
			return sp.stmt.record(tx, famOutcome(a, res))
		}
		res.updatedExisting = true
		_, denv, err := sp.matchForUpdate(doc, env)
		if err != nil {
			return err
		}
		out, changed, err := sp.upd.Apply(doc, denv)
		if err == nil && changed {
			err = checkUpdatedSize(out)
		}
		if err != nil {
			return updateError(err)
		}
		if changed {
			if err := checkShardKeyKept(coll, doc, out); err != nil {
				return err
			}
			if err := e.checkDocument(ctx, coll, doc, out, sp.noValidation); err != nil {
				return err
			}
		}
		res.value = doc
		if a.returnNew {
			res.value = out
		}
		if !changed {
			return sp.stmt.record(tx, famOutcome(a, res))
		}
		res.wrote = true
		ixEntries, ixBytes := billing.IndexWork(tx)
		markReplacement(tx, sp.upd.Kind() == update.Replacement)
		if err := tx.Replace(coll, key, out, len(doc)); err != nil {
			return err
		}
		e1, b1 := billing.IndexWork(tx)
		tally.Item(ru.KindReplace, key, len(out), e1-ixEntries, b1-ixBytes)
		return sp.stmt.record(tx, famOutcome(a, res))
	})
	if err == nil {
		e.units.ChargeWrite(m, &tally)
		err = sp.stmt.committed()
	}
	return res, err
}

// planExecutorError is an error of the update or removal findAndModify
// ran, with the context MongoDB's plan executor gives it ("Plan executor
// error during findAndModify :: caused by :: ..."): a failed update
// operator, an immutable field changed, a duplicate key, a document that
// fails validation. What stops the command from outside the write
// (throttling, time limits, interruption, conflicts, full storage, a
// transaction that ended) keeps its own words.
func planExecutorError(ce *CommandError) *CommandError {
	switch ce.Code {
	case ErrTooManyRequests, ErrMaxTimeMSExpired, ErrExceededTimeLimit, ErrInterrupted, ErrWriteConflict,
		ErrOutOfDiskSpace, ErrInternalError, ErrNoSuchTransaction, ErrShardKeyNotFound, ErrInterruptedDueToReplStateChange:
		return ce
	}
	c := *ce
	c.Msg = "Plan executor error during findAndModify :: caused by :: " + ce.Msg
	return &c
}

// findTarget returns the first document matching f in sort order (in key
// order without a sort), or nil. The slices are copies. tally counts
// what it read.
func findTarget(tx storage.Txn, coll *store.Collection, f *query.Filter, filter bsoncore.Document, sort *query.Sort, tally *writeTally) ([]byte, []byte, error) {
	if key := plan.PointKey(coll, f, filter); key != nil {
		doc, err := tx.Get(key)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		tally.Read = int64(len(doc))
		ok, err := f.MatchErr(doc)
		if err != nil {
			return nil, nil, queryError(err)
		}
		if !ok {
			return nil, nil, nil
		}
		return key, doc, nil
	}
	var bestKey, bestDoc []byte
	var bestKeys []bsoncore.Value
	ordered := sort != nil && !sort.IsEmpty()
	var matchErr error
	err := plan.ScanSpans(tx, coll, plan.RouteWrites(coll, plan.Uncollated(filter, f.Collation())), nil, func(key, doc []byte) (bool, error) {
		tally.Scanned(doc)
		ok, err := f.MatchErr(doc)
		if err != nil {
			matchErr = queryError(err)
			return false, nil
		}
		if !ok {
			return true, nil
		}
		if !ordered {
			bestKey, bestDoc = append([]byte(nil), key...), append([]byte(nil), doc...)
			return false, nil
		}
		keys := sort.Keys(doc)
		if bestDoc == nil || sort.CompareKeys(keys, bestKeys) < 0 {
			bestKey, bestDoc = append(bestKey[:0], key...), append(bestDoc[:0], doc...)
			// Keys alias doc: re-extract from the copy.
			bestKeys = sort.Keys(bestDoc)
		}
		return true, nil
	})
	if err == nil {
		err = matchErr
	}
	return bestKey, bestDoc, err
}

// famReply builds findAndModify's reply.
func famReply(a famArgs, res famResult, project func([]byte) ([]byte, error)) ([]byte, error) {
	leo := bson.D{{Key: "n", Value: int32(res.n)}}
	if !a.remove {
		leo = append(leo, bson.E{Key: "updatedExisting", Value: res.updatedExisting})
		if res.upserted.Type != 0 {
			leo = append(leo, bson.E{Key: "upserted", Value: rawValue(res.upserted)})
		}
	}
	var val any = nil
	if res.value != nil {
		doc := res.value
		if project != nil {
			var err error
			if doc, err = project(doc); err != nil {
				return nil, err
			}
		}
		val = bson.Raw(doc)
	}
	return okReply(bson.E{Key: "lastErrorObject", Value: leo}, bson.E{Key: "value", Value: val})
}

// compileFields compiles the fields projection applied to the returned
// document; the positional $ in it refers to the query.
func compileFields(d bsoncore.Document, f *query.Filter, let bsoncore.Document, now time.Time) (func([]byte) ([]byte, error), error) {
	if len(d) <= 5 {
		return nil, nil
	}
	p, err := query.CompileProjection(d, f, query.Options{Let: let, Now: now})
	if err != nil {
		return nil, queryError(err)
	}
	return func(doc []byte) ([]byte, error) {
		out, err := p.Apply(doc)
		if err != nil {
			return nil, queryError(err)
		}
		return out, nil
	}, nil
}
