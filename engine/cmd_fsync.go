package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdFsync flushes every acknowledged write to disk (on a cluster's node,
// the writes it took, on a majority of their replicas, and its own files). The lock form
// (db.fsyncLock) is refused: Parsec has no global write lock.
func (e *Engine) cmdFsync(_ context.Context, req *request) ([]byte, error) {
	if v, err := req.body.LookupErr("lock"); err == nil {
		lock, err := boolArg(req.name, "lock", v)
		if err != nil {
			return nil, err
		}
		if lock {
			return nil, errorf(ErrCommandNotSupported, "fsync with lock is not supported by Parsec: it has no global write lock (a backup may copy the data directory of a stopped server)")
		}
	}
	// On a cluster's node Journal makes the node's writes durable on a
	// majority of their replicas, and Sync this node's own files.
	if err := e.store.Journal(); err != nil {
		return nil, err
	}
	if err := e.store.Sync(); err != nil {
		return nil, err
	}
	return okReply(bson.E{Key: "numFiles", Value: int32(1)})
}
