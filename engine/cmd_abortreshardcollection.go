package engine

import (
	"context"
)

// cmdAbortReshardCollection stops the resharding of a collection:
// {abortReshardCollection: "db.coll"}. The temporary collection is
// dropped, the collection keeps its shard key and documents, and the
// reshardCollection waiting for it fails with 341
// ReshardCollectionAborted. 339 NoSuchReshardCollection when none runs;
// 340 ReshardCollectionCommitted once the switch has begun.
func (e *Engine) cmdAbortReshardCollection(ctx context.Context, req *request) ([]byte, error) {
	rs, err := e.reshardingOf(req)
	if err != nil {
		return nil, err
	}
	rs.mu.Lock()
	state := rs.state
	rs.mu.Unlock()
	if state == reshardStateCommitting || state == reshardStateDone {
		return nil, reshardError(errReshardCollectionCommitted, "Can't abort resharding of %s: the switch to the new shard key has begun", rs.ns)
	}
	rs.abortOnce.Do(func() { close(rs.abort) })
	select {
	case <-rs.done:
	case <-ctx.Done():
		return nil, errorf(ErrInterrupted, "operation was interrupted")
	case <-e.stop:
		return nil, errorf(ErrInterrupted, "server is shutting down")
	}
	rs.mu.Lock()
	state = rs.state
	rs.mu.Unlock()
	if state == reshardStateDone {
		return nil, reshardError(errReshardCollectionCommitted, "Can't abort resharding of %s: it has committed", rs.ns)
	}
	return okReply()
}

// reshardingOf is the resharding running on the namespace a command
// names as its first field.
func (e *Engine) reshardingOf(req *request) (*resharding, error) {
	ns, _, _, err := namespaceArg(req)
	if err != nil {
		return nil, err
	}
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		if !genericFields[el.Key()] {
			return nil, unknownField(req.name, el.Key())
		}
	}
	rs := e.reshards.get(ns)
	if rs == nil {
		return nil, reshardError(errNoSuchReshardCollection, "Could not find an active resharding operation for %s", ns)
	}
	return rs, nil
}
