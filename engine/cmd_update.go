package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/update"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdUpdate runs the update command: statements {q, u, upsert, multi,
// arrayFilters, hint, c, collation}, ordered or not. The reply counts
// matched (n, upserts included) and changed (nModified) documents, lists
// upserted _ids with their statement index, and reports per-statement
// errors as writeErrors.
func (e *Engine) cmdUpdate(ctx context.Context, req *request) ([]byte, error) {
	w, err := parseWriteCommand(req, "updates", true)
	if err != nil {
		return nil, err
	}
	name, ordered, let, raw := w.coll, w.ordered, w.let, w.stmts
	// As MongoDB's IDL does, every statement is parsed before any runs; the
	// update language's own errors are the statement's write errors.
	stmts := make([]updateStmt, len(raw))
	for i, d := range raw {
		if stmts[i], err = parseUpdateStmt(d); err != nil {
			return nil, err
		}
		if !w.keepEmptyTs {
			stmts[i].u = e.replaceEmptyTimestampsIn(stmts[i].u)
		}
	}
	if e.isView(req.db, name) {
		return writeReply(0, viewWriteErrors(req.db, name, len(stmts), ordered), bson.E{Key: "nModified", Value: int32(0)})
	}
	rw, err := e.retryableWrite(ctx, req, w.wc, len(stmts))
	if err != nil {
		return nil, err
	}
	defer rw.release()
	ctx = withValidationBypass(ctx, req)
	e.ops.update.Add(int64(len(stmts)))
	coll := e.store.Collection(req.db, name)
	var n, nModified int64
	var upserted bson.A
	var errs []writeError
	for i, st := range stmts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if o, done := rw.executed(i); done {
			n += int64(o.N)
			nModified += int64(o.NModified)
			if o.Upserted.Type != 0 {
				upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: rawValue(o.Upserted)}})
			}
			continue
		}
		var res updateResult
		if rw != nil && st.multi {
			err = errorf(ErrInvalidOptions, "Cannot use (or request) retryable writes with multi=true")
		} else {
			res, err = e.updateStmt(ctx, &req.units, req.db, name, st, let, coll != nil, stmtRef{rw, i})
		}
		if errors.Is(err, errClosedByFailPoint) {
			return nil, err
		}
		n += res.matched
		nModified += res.modified
		if res.upserted.Type != 0 {
			n++
			upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: rawValue(res.upserted)}})
		}
		if err != nil {
			we := writeErrorOf(i, err)
			if commandLevel(we.code) {
				return nil, err
			}
			errs = append(errs, we)
			if ordered {
				break
			}
		}
	}
	if len(upserted) == 0 {
		if ce := throttledOnly(n, errs, ordered, len(stmts)); ce != nil {
			return nil, ce
		}
	}
	if err := e.journal(w.wc, nModified > 0 || len(upserted) > 0); err != nil {
		return nil, err
	}
	retried := rw.replyFields()
	if len(errs) == 0 && len(upserted) == 0 && len(retried) == 0 {
		// The common reply, {n, nModified, ok: 1}, without reflection.
		idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, 48))
		b = bsoncore.AppendInt32Element(b, "n", int32(n))
		b = bsoncore.AppendInt32Element(b, "nModified", int32(nModified))
		b = bsoncore.AppendDoubleElement(b, "ok", 1)
		return bsoncore.AppendDocumentEnd(b, idx)
	}
	extra := []bson.E{{Key: "nModified", Value: int32(nModified)}}
	if len(upserted) > 0 {
		extra = append(extra, bson.E{Key: "upserted", Value: upserted})
	}
	return writeReply(n, errs, append(extra, retried...)...)
}

// updateStmt is one parsed statement of an update command.
type updateStmt struct {
	q            bsoncore.Document
	u            bsoncore.Value
	c            bsoncore.Document
	upsert       bool
	multi        bool
	arrayFilters []bsoncore.Document
	hint         bsoncore.Value
	collation    collationOpt
}

// parseUpdateStmt checks a statement's fields and their types.
func parseUpdateStmt(stmt bsoncore.Document) (updateStmt, error) {
	const field = "update.updates"
	var st updateStmt
	elems, err := stmt.Elements()
	if err != nil {
		return st, errorf(ErrFailedToParse, "%s: %v", field, err)
	}
	hasU := false
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch k {
		case "q":
			if st.q, err = docArg(field, k, v); err != nil {
				return st, err
			}
		case "u":
			if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
				return st, errorf(ErrFailedToParse, "Update argument must be either an object or an array")
			}
			if err := checkPipelineElements(v); err != nil {
				return st, err
			}
			st.u, hasU = v, true
		case "c":
			if st.c, err = docArg(field, k, v); err != nil {
				return st, err
			}
		case "upsert":
			if st.upsert, err = boolArg(field, k, v); err != nil {
				return st, err
			}
		case "multi":
			if st.multi, err = boolArg(field, k, v); err != nil {
				return st, err
			}
		case "arrayFilters":
			if st.arrayFilters, err = arrayFiltersArg(field, v); err != nil {
				return st, err
			}
		case "hint":
			if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeEmbeddedDocument {
				return st, wrongTypes(field, k, v, "string, object")
			}
			st.hint = v
		case "collation":
			if err := st.collation.parse(field, k, v); err != nil {
				return st, err
			}
		case "upsertSupplied", "allowShardKeyUpdatesWithoutFullShardKeyInQuery":
			if _, err := boolArg(field, k, v); err != nil {
				return st, err
			}
		case "sampleId":
		default:
			return st, unknownField(field, k)
		}
	}
	if st.q == nil {
		return st, missingField(field, "q")
	}
	if !hasU {
		return st, missingField(field, "u")
	}
	if st.c != nil && st.u.Type != bsoncore.TypeArray {
		return st, errorf(errConstantsNotPipeline, "Constant values may only be specified for pipeline updates")
	}
	return st, nil
}

// checkPipelineElements applies the IDL's check of a pipeline update
// (MongoDB's parsePipelineFromBSON): each element is a document. Failing
// it fails the command, as MongoDB parses it with the command; a stage
// that is unknown or not allowed is the statement's write error, since
// MongoDB parses the stages only when it runs the statement.
func checkPipelineElements(u bsoncore.Value) error {
	arr, ok := u.ArrayOK()
	if !ok {
		return nil
	}
	vals, err := arr.Values()
	if err != nil {
		return errorf(ErrFailedToParse, "update.updates.u: %v", err)
	}
	for _, x := range vals {
		if x.Type != bsoncore.TypeEmbeddedDocument {
			return errorf(ErrTypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
	}
	return nil
}

// arrayFiltersArg reads arrayFilters: an array of documents.
func arrayFiltersArg(cmd string, v bsoncore.Value) ([]bsoncore.Document, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, wrongType(cmd, "arrayFilters", v, "array")
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, errorf(ErrFailedToParse, "%s.arrayFilters: %v", cmd, err)
	}
	out := make([]bsoncore.Document, len(vals))
	for i, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, wrongType(cmd, "arrayFilters."+strconv.Itoa(i), x, "object")
		}
		out[i] = d
	}
	return out, nil
}

// compileUpdate compiles a statement's filter and update.
func compileUpdate(q bsoncore.Document, u bsoncore.Value, arrayFilters []bsoncore.Document, let bsoncore.Document, now time.Time, coll *value.Collator) (*updateSpec, error) {
	f, err := compileWriteFilter(q, let, now, coll)
	if err != nil {
		return nil, err
	}
	upd, err := update.Parse(u, update.Options{ArrayFilters: arrayFilters, Let: let, Collation: coll})
	if err != nil {
		return nil, updateError(err)
	}
	return &updateSpec{query: q, filter: f, upd: upd}, nil
}

// updateStmt compiles and runs one statement; exists says whether the
// collection existed when the command started (hints are checked only
// against existing collections, as MongoDB plans nothing for missing ones).
//
// stmt is the statement in a retryable write, which records what it does.
func (e *Engine) updateStmt(ctx context.Context, m *meter, db, name string, st updateStmt, let bsoncore.Document, exists bool, stmt stmtRef) (updateResult, error) {
	if exists && st.hint.Type != 0 {
		if err := checkHint(e.store.Collection(db, name), st.hint); err != nil {
			return updateResult{}, err
		}
	}
	vars := mergeVars(let, st.c)
	sp, err := compileUpdate(st.q, st.u, st.arrayFilters, vars, e.now(), st.collation.resolve(e, db, name))
	if err != nil {
		return updateResult{}, err
	}
	if st.multi && sp.upd.Kind() == update.Replacement {
		return updateResult{}, errorf(ErrFailedToParse, "multi update is not supported for replacement-style update")
	}
	sp.multi, sp.upsert, sp.stmt = st.multi, st.upsert, stmt
	return e.runUpdate(ctx, m, db, name, sp)
}

// checkHint accepts a write's hint when it names one of c's indexes, by
// name or key pattern: _id_, a secondary index that is built and not
// hidden, the shard-key index, or {$natural: ±1}. Writes plan their reads
// themselves; the hint is only checked, as MongoDB refuses a hint that
// names no index.
func checkHint(c *store.Collection, h bsoncore.Value) error {
	if c == nil {
		return nil // nothing to plan on a missing collection
	}
	switch h.Type {
	case bsoncore.TypeString:
		name := h.StringValue()
		if name == "_id_" || (name != "" && name == plan.ShardKeyIndexName(c)) {
			return nil
		}
		if ix := plan.IndexOfHint(c, name, nil); name != "" && ix != nil && !ix.Hidden {
			return nil
		}
	case bsoncore.TypeEmbeddedDocument:
		key := h.Document()
		elems, _ := key.Elements()
		if len(elems) == 0 {
			return nil // an empty hint is no hint
		}
		if len(elems) == 1 && (elems[0].Key() == "_id" || elems[0].Key() == "$natural") {
			if f, ok := numberFloat(elems[0].Value()); ok && (f == 1 || f == -1) {
				return nil
			}
		}
		if plan.IsShardKeyIndexKey(c, key) {
			return nil
		}
		if ix := plan.IndexOfHint(c, "", key); ix != nil && !ix.Hidden {
			return nil
		}
	}
	return errorf(ErrBadValue, "hint provided does not correspond to an existing index")
}

// mergeVars is let with the statement's constants c added (c wins).
func mergeVars(let, c bsoncore.Document) bsoncore.Document {
	if c == nil {
		return let
	}
	if let == nil {
		return c
	}
	start, b := bsoncore.AppendDocumentStart(nil)
	elems, _ := let.Elements()
	for _, e := range elems {
		if _, err := c.LookupErr(e.Key()); err != nil {
			b = append(b, e...)
		}
	}
	celems, _ := c.Elements()
	for _, e := range celems {
		b = append(b, e...)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	return b
}
