package unified

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func (t *testRun) sessionOp(s *sessionEntity, name string, a *args) (execFunc, error) {
	switch name {
	case "startTransaction":
		to := options.Transaction()
		if err := applyTransactionArgs(a, to); err != nil {
			return nil, err
		}
		t.usedTransactions = true
		return func(ctx context.Context) opResult {
			err := s.sess.StartTransaction(to)
			if err == nil {
				s.state, s.pinned = "starting", false
			}
			return errResult(err)
		}, nil
	case "commitTransaction":
		return func(ctx context.Context) opResult {
			err := s.sess.CommitTransaction(ctx)
			if s.state == "starting" || s.state == "in_progress" || s.state == "committed" {
				s.state = "committed"
			}
			return errResult(err)
		}, nil
	case "abortTransaction":
		return func(ctx context.Context) opResult {
			err := s.sess.AbortTransaction(ctx)
			if s.state == "starting" || s.state == "in_progress" {
				s.state = "aborted"
			}
			if err == nil {
				s.pinned = false
			}
			return errResult(err)
		}, nil
	case "endSession":
		return func(ctx context.Context) opResult {
			s.end()
			return opResult{}
		}, nil
	case "withTransaction":
		callback, ok, err := a.array("callback")
		if err != nil || !ok {
			return nil, fmt.Errorf("runner: withTransaction needs a callback: %v", err)
		}
		ops := make([]Operation, len(callback))
		for i, c := range callback {
			if err := bson.Unmarshal(c.Document(), &ops[i]); err != nil {
				return nil, fmt.Errorf("runner: withTransaction callback: %w", err)
			}
		}
		to := options.Transaction()
		if err := applyTransactionArgs(a, to); err != nil {
			return nil, err
		}
		t.usedTransactions = true
		return func(ctx context.Context) opResult {
			var failure error
			_, err := s.sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
				s.state, s.pinned = "starting", false
				for _, op := range ops {
					opErr, fail := t.runOperation(ctx, op)
					if fail != nil {
						failure = fail
						return nil, fail
					}
					if opErr != nil {
						return nil, opErr
					}
				}
				return nil, nil
			}, to)
			if failure != nil {
				return opResult{err: &runnerFailure{err: failure}}
			}
			return errResult(err)
		}, nil
	case "getSnapshotTime":
		return func(ctx context.Context) opResult {
			return valueResult(s.sess.SnapshotTime(), nil)
		}, nil
	}
	return nil, notImplemented(name, "a session")
}

// changeStreamWait bounds iterateUntilDocumentOrError.
const changeStreamWait = 5 * time.Second

// runnerFailure carries an assertion failure out of a withTransaction
// callback, so that it is reported as such and not as the operation's error.
type runnerFailure struct{ err error }

func (r *runnerFailure) Error() string { return r.err.Error() }

func (t *testRun) changeStreamOp(cs *mongo.ChangeStream, name string, a *args) (execFunc, error) {
	switch name {
	case "iterateUntilDocumentOrError":
		return func(ctx context.Context) opResult {
			// Events are expected promptly; do not wait the whole
			// operation timeout for one that never comes.
			ctx, cancel := context.WithTimeout(ctx, changeStreamWait)
			defer cancel()
			if cs.Next(ctx) {
				return opResult{value: docValue(append(bson.Raw(nil), cs.Current...))}
			}
			if err := cs.Err(); err != nil {
				return errResult(err)
			}
			return errResult(errors.New("change stream ended without a document"))
		}, nil
	case "iterateOnce":
		return func(ctx context.Context) opResult {
			if cs.TryNext(ctx) {
				return opResult{value: docValue(append(bson.Raw(nil), cs.Current...))}
			}
			return errResult(cs.Err())
		}, nil
	case "close":
		return func(ctx context.Context) opResult {
			_ = cs.Close(ctx)
			return opResult{}
		}, nil
	}
	return nil, notImplemented(name, "a change stream")
}

func clientBulkWrite(c *clientEntity, a *args) (execFunc, error) {
	models, ok, err := a.array("models")
	if err != nil || !ok {
		return nil, fmt.Errorf("runner: clientBulkWrite needs models: %v", err)
	}
	writes := make([]mongo.ClientBulkWrite, len(models))
	for i, m := range models {
		if writes[i], err = clientWriteModel(m.Document()); err != nil {
			return nil, err
		}
	}
	o, err := readCrudOpts(a, "let", "comment", "bypassDocumentValidation")
	if err != nil {
		return nil, err
	}
	opts := options.ClientBulkWrite()
	if b, ok, err := a.boolean("ordered"); err != nil {
		return nil, err
	} else if ok {
		opts.SetOrdered(b)
	}
	if b, ok, err := a.boolean("verboseResults"); err != nil {
		return nil, err
	} else if ok {
		opts.SetVerboseResults(b)
	}
	if d, ok, err := a.doc("writeConcern"); err != nil {
		return nil, err
	} else if ok {
		wc, err := parseWriteConcern(d)
		if err != nil {
			return nil, err
		}
		opts.SetWriteConcern(wc)
	}
	if o.let != nil {
		opts.SetLet(o.let)
	}
	if o.comment != nil {
		opts.SetComment(o.comment)
	}
	if o.bypass != nil {
		opts.SetBypassDocumentValidation(*o.bypass)
	}
	return func(ctx context.Context) opResult {
		r, err := c.client.BulkWrite(ctx, writes, opts)
		var cbe mongo.ClientBulkWriteException
		if r == nil && errors.As(err, &cbe) {
			r = cbe.PartialResult
		}
		if r == nil {
			return errResult(err)
		}
		return opResult{value: mustValue(clientBulkWriteDoc(r)), err: err}
	}, nil
}

func clientWriteModel(raw bson.Raw) (mongo.ClientBulkWrite, error) {
	var w mongo.ClientBulkWrite
	elems, err := raw.Elements()
	if err != nil || len(elems) != 1 {
		return w, fmt.Errorf("runner: clientBulkWrite model %s", raw)
	}
	kind := elems[0].Key()
	a := newArgs("clientBulkWrite "+kind, elems[0].Value().Document())
	ns, ok, err := a.str("namespace")
	if err != nil || !ok {
		return w, fmt.Errorf("runner: clientBulkWrite model needs a namespace: %v", err)
	}
	w.Database, w.Collection, _ = strings.Cut(ns, ".")
	switch kind {
	case "insertOne":
		doc, err := a.requiredDoc("document")
		if err != nil {
			return w, err
		}
		w.Model = mongo.NewClientInsertOneModel().SetDocument(doc)
	case "updateOne", "updateMany", "replaceOne":
		filter, err := filterArg(a, true)
		if err != nil {
			return w, err
		}
		keys := []string{"collation", "hint", "upsert"}
		if kind != "replaceOne" {
			keys = append(keys, "arrayFilters")
		}
		if kind != "updateMany" {
			keys = append(keys, "sort")
		}
		o, err := readCrudOpts(a, keys...)
		if err != nil {
			return w, err
		}
		switch kind {
		case "updateOne":
			update, err := updateArg(a)
			if err != nil {
				return w, err
			}
			m := mongo.NewClientUpdateOneModel().SetFilter(filter).SetUpdate(update)
			if o.collation != nil {
				m.SetCollation(o.collation)
			}
			if o.hint != nil {
				m.SetHint(o.hint)
			}
			if o.upsert != nil {
				m.SetUpsert(*o.upsert)
			}
			if o.filters != nil {
				m.SetArrayFilters(o.filters)
			}
			if o.sort != nil {
				m.SetSort(o.sort)
			}
			w.Model = m
		case "updateMany":
			update, err := updateArg(a)
			if err != nil {
				return w, err
			}
			m := mongo.NewClientUpdateManyModel().SetFilter(filter).SetUpdate(update)
			if o.collation != nil {
				m.SetCollation(o.collation)
			}
			if o.hint != nil {
				m.SetHint(o.hint)
			}
			if o.upsert != nil {
				m.SetUpsert(*o.upsert)
			}
			if o.filters != nil {
				m.SetArrayFilters(o.filters)
			}
			w.Model = m
		default:
			replacement, err := a.requiredDoc("replacement")
			if err != nil {
				return w, err
			}
			m := mongo.NewClientReplaceOneModel().SetFilter(filter).SetReplacement(replacement)
			if o.collation != nil {
				m.SetCollation(o.collation)
			}
			if o.hint != nil {
				m.SetHint(o.hint)
			}
			if o.upsert != nil {
				m.SetUpsert(*o.upsert)
			}
			if o.sort != nil {
				m.SetSort(o.sort)
			}
			w.Model = m
		}
	case "deleteOne", "deleteMany":
		filter, err := filterArg(a, true)
		if err != nil {
			return w, err
		}
		o, err := readCrudOpts(a, "collation", "hint")
		if err != nil {
			return w, err
		}
		if kind == "deleteOne" {
			m := mongo.NewClientDeleteOneModel().SetFilter(filter)
			if o.collation != nil {
				m.SetCollation(o.collation)
			}
			if o.hint != nil {
				m.SetHint(o.hint)
			}
			w.Model = m
		} else {
			m := mongo.NewClientDeleteManyModel().SetFilter(filter)
			if o.collation != nil {
				m.SetCollation(o.collation)
			}
			if o.hint != nil {
				m.SetHint(o.hint)
			}
			w.Model = m
		}
	default:
		return w, fmt.Errorf("runner: clientBulkWrite model %s not implemented", kind)
	}
	return w, a.finish()
}
