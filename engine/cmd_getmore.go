package engine

import (
	"context"
	"time"
)

func (e *Engine) cmdGetMore(ctx context.Context, req *request) ([]byte, error) {
	idv := req.body.Index(0).Value()
	id, ok := idv.Int64OK()
	if !ok {
		return nil, wrongType(req.name, req.name, idv, "long")
	}
	var coll string
	var batchSize int64
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
			// bounds the wait of an awaitData cursor; Parsec has none, so
			// the batch is produced under the command's own context
			var ms int64
			if ms, err = int64Arg(req.name, k, v); err == nil && ms > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
				defer cancel()
			}
		case "term", "lastKnownCommittedOpTime":
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
	if err := validateCollName(req.db, coll); err != nil {
		return nil, err
	}
	ns := namespaceOf(req.db, coll)
	cur, err := e.cursors.checkout(id, ns)
	if err != nil {
		return nil, err
	}
	docs, done, err := cur.source.nextBatch(ctx, int(batchSize), maxBatchBytes)
	e.cursors.release(cur, done || err != nil)
	if err != nil {
		return nil, err
	}
	if done {
		id = 0
	}
	return cursorReply(id, ns, "nextBatch", batchArray(docs)), nil
}
