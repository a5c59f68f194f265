package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdDelete runs the delete command: statements {q, limit, hint,
// collation}, ordered or not. The reply counts the documents removed (n)
// and reports per-statement errors as writeErrors.
func (e *Engine) cmdDelete(ctx context.Context, req *request) ([]byte, error) {
	w, err := parseWriteCommand(req, "deletes", true)
	if err != nil {
		return nil, err
	}
	name, ordered, let, stmts := w.coll, w.ordered, w.let, w.stmts
	// Statements are parsed before any runs, as MongoDB's IDL does: a
	// malformed statement fails the whole command. Errors of a statement's
	// filter are write errors of that statement.
	parsed := make([]deleteStmt, len(stmts))
	for i, raw := range stmts {
		if parsed[i], err = parseDeleteStmt(raw); err != nil {
			return nil, err
		}
	}
	if e.isView(req.db, name) {
		return writeReply(0, viewWriteErrors(req.db, name, len(parsed), ordered))
	}
	rw, err := e.retryableWrite(ctx, req, w.wc, len(parsed))
	if err != nil {
		return nil, err
	}
	defer rw.release()
	e.ops.delete.Add(int64(len(parsed)))
	var n int64
	var errs []writeError
	for i, st := range parsed {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if o, done := rw.executed(i); done {
			n += int64(o.N)
			continue
		}
		var removed int64
		if rw != nil && !st.justOne {
			err = errorf(ErrInvalidOptions, "Cannot use (or request) retryable writes with limit=0")
		} else {
			removed, err = e.deleteOne(ctx, &req.units, req.db, name, st, let, stmtRef{rw, i})
		}
		if errors.Is(err, errClosedByFailPoint) {
			return nil, err
		}
		n += removed
		if err != nil {
			ce := toCommandError(err)
			if commandLevel(ce.Code) {
				return nil, err
			}
			errs = append(errs, writeError{index: i, code: ce.Code, msg: ce.Msg})
			if ordered {
				break
			}
		}
	}
	if ce := throttledOnly(n, errs, ordered, len(parsed)); ce != nil {
		return nil, ce
	}
	if err := e.journal(w.wc, n > 0); err != nil {
		return nil, err
	}
	return writeReply(n, errs, rw.replyFields()...)
}

// deleteStmt is one parsed delete statement.
type deleteStmt struct {
	filter    bsoncore.Document
	justOne   bool
	hint      bsoncore.Value
	collation collationOpt
}

// parseDeleteStmt parses {q, limit, hint, collation}.
func parseDeleteStmt(stmt bsoncore.Document) (deleteStmt, error) {
	const field = "delete.deletes"
	var st deleteStmt
	hasLimit := false
	elems, err := stmt.Elements()
	if err != nil {
		return st, errorf(ErrFailedToParse, "%s: %v", field, err)
	}
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch k {
		case "q":
			if st.filter, err = docArg(field, k, v); err != nil {
				return st, err
			}
		case "limit":
			limit, err := int64Arg(field, k, v)
			if err != nil {
				return st, err
			}
			if limit != 0 && limit != 1 {
				return st, errorf(ErrFailedToParse, "The limit field in delete objects must be 0 or 1. Got limit: %s", shellString(v))
			}
			st.justOne, hasLimit = limit == 1, true
		case "hint":
			if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeEmbeddedDocument {
				return st, wrongTypes(field, k, v, "string, object")
			}
			st.hint = v
		case "collation":
			if err := st.collation.parse(field, k, v); err != nil {
				return st, err
			}
		default:
			return st, unknownField(field, k)
		}
	}
	if st.filter == nil {
		return st, missingField(field, "q")
	}
	if !hasLimit {
		return st, missingField(field, "limit")
	}
	return st, nil
}

// deleteOne runs one parsed delete statement (stmt: of a retryable write).
func (e *Engine) deleteOne(ctx context.Context, m *meter, db, coll string, st deleteStmt, let bsoncore.Document, stmt stmtRef) (int64, error) {
	f, err := compileWriteFilter(st.filter, let, e.now(), st.collation.resolve(e, db, coll))
	if err != nil {
		return 0, err
	}
	c := e.store.Collection(db, coll)
	if c == nil {
		return 0, nil
	}
	if st.hint.Type != 0 {
		if err := checkHint(c, st.hint); err != nil {
			return 0, err
		}
	}
	return e.deleteMatching(ctx, m, c, f, st.filter, st.justOne, stmt)
}

// deleteMatching removes the documents of c matching f (the first only,
// when justOne), in transactions of at most chunkDocs deletions. It is
// admitted by the partitions it is routed to before it removes anything,
// and charged for each transaction it commits. In a retryable write
// (stmt.rw set; justOne), the transaction that deletes records it.
func (e *Engine) deleteMatching(ctx context.Context, m *meter, c *store.Collection, f *query.Filter, filter bsoncore.Document, justOne bool, stmt stmtRef) (int64, error) {
	point := plan.PointKey(c, f, filter)
	filter = plan.Uncollated(filter, f.Collation()) // routing compares no strings under a collation
	spans := plan.RouteWrites(c, filter)
	var tally writeTally
	e.routeWrite(&tally, c, point, spans, filter)
	if err := e.admitWrite(ctx, m, &tally); err != nil {
		return 0, err
	}
	var total int64
	var resume []byte
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		var more bool
		var next []byte
		err := e.writerOf(ctx).Update(func(tx storage.Txn) error {
			n, more, next = 0, false, nil
			tally.Reset()
			if point != nil {
				doc, err := tx.Get(point)
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				if err != nil {
					return err
				}
				tally.Read = int64(len(doc))
				ok, err := f.MatchErr(doc)
				if err != nil {
					return queryError(err)
				}
				if ok {
					n = 1
					if err := e.deleteItem(tx, &tally, c, point, len(doc)); err != nil {
						return err
					}
					return stmt.record(tx, deleteOutcome(1))
				}
				return nil
			}
			type victim struct {
				key  []byte
				size int
			}
			var victims []victim
			err := plan.ScanSpans(tx, c, spans, resume, func(key, doc []byte) (bool, error) {
				if len(victims) >= chunkDocs || !tx.Plan(c, key) {
					more = true
					next = append([]byte(nil), key...)
					return false, nil
				}
				tally.Scanned(doc)
				ok, err := f.MatchErr(doc)
				if err != nil {
					return false, queryError(err)
				}
				if ok {
					victims = append(victims, victim{append([]byte(nil), key...), len(doc)})
					if justOne {
						return false, nil
					}
				}
				return true, nil
			})
			if err != nil {
				return err
			}
			for _, v := range victims {
				if err := e.deleteItem(tx, &tally, c, v.key, v.size); err != nil {
					return err
				}
			}
			n = int64(len(victims))
			if n > 0 {
				return stmt.record(tx, deleteOutcome(n))
			}
			return nil
		})
		if errors.Is(err, store.ErrCollectionChanged) {
			if cur := e.store.Collection(c.DB, c.Name); cur != nil && (string(cur.UUID) == string(c.UUID) || e.reshards.succeeds(cur.UUID, c.UUID)) {
				// the same collection, its documents re-placed (sharded, resharded): start over
				c, point, spans, resume = cur, plan.PointKey(cur, f, filter), plan.RouteWrites(cur, filter), nil
				e.routeWrite(&tally, c, point, spans, filter)
				continue
			}
			return total, nil // dropped meanwhile: nothing left to delete
		}
		if err != nil {
			return total, fmt.Errorf("delete from %s: %w", c.Namespace(), err)
		}
		e.units.ChargeWrite(m, &tally)
		total += n
		if err := stmt.committed(); err != nil {
			return total, err
		}
		resume = next
		if !more || (justOne && total > 0) {
			return total, nil
		}
	}
}

// deleteItem removes the document at key, of size bytes, and tallies it.
func (e *Engine) deleteItem(tx storage.Txn, tally *writeTally, c *store.Collection, key []byte, size int) error {
	ixEntries, ixBytes := billing.IndexWork(tx)
	if err := tx.Delete(c, key, size); err != nil {
		return err
	}
	e1, b1 := billing.IndexWork(tx)
	tally.Item(ru.KindDelete, key, size, e1-ixEntries, b1-ixBytes)
	return nil
}
