package engine

import (
	"context"
	"errors"
	"time"
)

func (e *Engine) cmdGetMore(ctx context.Context, req *request) ([]byte, error) {
	idv := req.body.Index(0).Value()
	id, ok := idv.Int64OK()
	if !ok {
		return nil, wrongType(req.name, req.name, idv, "long")
	}
	var coll string
	var batchSize, getMoreMS int64
	var err error
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "collection":
			coll, err = stringArg(req.name, k, v)
		case "batchSize":
			if batchSize, err = int64Arg(req.name, k, v); err == nil && batchSize < 0 {
				err = negativeValue(k, batchSize)
			}
		case "maxTimeMS":
			// An awaitData cursor's wait for new documents (tailSource);
			// other cursors' batch work, which it bounds instead. Drivers
			// send it when the operation's context has a deadline.
			if getMoreMS, err = int64Arg(req.name, k, v); err == nil && getMoreMS < 0 {
				err = errorf(ErrBadValue, "%d value for maxTimeMS is out of range", getMoreMS)
			}
		case "term", "lastKnownCommittedOpTime", "includeQueryStatsMetrics":
		default:
			if !genericFields[k] {
				err = unknownField(req.name, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if coll == "" {
		return nil, missingField(req.name, "collection")
	}
	if coll != "$cmd.aggregate" && coll != "$cmd.listCollections" { // a database-level aggregate's or listCollections' cursor
		if err := validateCollName(req.db, coll); err != nil {
			return nil, err
		}
	}
	ns := namespaceOf(req.db, coll)
	cur, err := e.cursors.checkout(id, ns, req.c.cursorOwner())
	if err != nil {
		return nil, err
	}
	if cur.Options.Txn != nil && txnOf(ctx) != cur.Options.Txn {
		e.cursors.Release(cur, false)
		return nil, errorf(ErrNoSuchTransaction, "Cannot run getMore on cursor %d, which was created in a transaction, outside of that transaction", id)
	}
	if cur.Options.Snapshot != nil {
		// A snapshot read's cursor reads its snapshot to the end.
		ctx = withSnapshot(ctx, cur.Options.Snapshot)
		e.snapshots.Touch(cur.Options.Snapshot)
	}
	if ts, ok := cur.Source.src.(*tailSource); ok {
		if getMoreMS > 0 && !ts.awaitData {
			e.cursors.Release(cur, false)
			return nil, errorf(ErrBadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor")
		}
		ts.wait = 0
		if ts.awaitData {
			ts.wait = defaultAwait
			if getMoreMS > 0 {
				ts.wait = time.Duration(getMoreMS) * time.Millisecond
			}
			getMoreMS = 0 // the wait, not a bound on the batch's work
		}
	}
	// The find's maxTimeMS covers all of its cursor's work; the
	// getMore's own maxTimeMS bounds this batch.
	if cs, ok := cur.Source.src.(*changeStream); ok {
		return e.changeStreamGetMore(ctx, req, cur, cs, ns, id, int(batchSize), getMoreMS)
	}
	if cur.Options.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cur.Options.Budget)
		defer cancel()
	}
	if getMoreMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(getMoreMS)*time.Millisecond)
		defer cancel()
	}
	if cur.Source.bill != nil {
		if err := e.admitRead(ctx, req, cur.Source.bill); err != nil {
			e.cursors.Release(cur, false)
			return nil, err
		}
	}
	start := e.now()
	docs, done, err := cur.Source.src.nextBatch(ctx, int(batchSize), maxBatchBytes)
	if cur.Source.bill != nil {
		e.chargeRead(req, cur.Source.bill, len(docs))
	}
	if cur.Options.Budget > 0 {
		cur.Options.Budget -= e.now().Sub(start)
		if cur.Options.Budget <= 0 && err == nil && !done {
			err = context.DeadlineExceeded
		}
	}
	e.cursors.Release(cur, done || err != nil)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, errorf(ErrMaxTimeMSExpired, "Executor error during getMore :: caused by :: operation exceeded time limit")
		}
		return nil, err
	}
	if done {
		id = 0
	}
	return cursorReply(id, ns, "nextBatch", batchArray(docs)), nil
}
