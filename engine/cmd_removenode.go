package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdRemoveNode takes a node out of the cluster: {removeNode: <id>}. A
// node that lost its data rejoins as a new member (parsec serve --join
// with a new id); its old id is removed so that it no longer counts in
// the majority. The writer cannot remove itself.
func (e *Engine) cmdRemoveNode(ctx context.Context, req *request) ([]byte, error) {
	if e.cfg.RemoveNode == nil {
		return nil, errorf(ErrNoReplicationEnabled, "removeNode: this server is not a node of a cluster (start it with --initial-members)")
	}
	id, ok := req.body.Lookup("removeNode").AsInt64OK()
	if !ok || id < 1 {
		return nil, errorf(ErrBadValue, "removeNode: the node id must be a positive integer")
	}
	if err := e.cfg.RemoveNode(ctx, uint64(id)); err != nil {
		return nil, err
	}
	return okReply(bson.E{Key: "removed", Value: id})
}
