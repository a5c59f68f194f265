package engine

import (
	"context"
	"net"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdAddNode adds a node to the cluster: {addNode: "<host:port>", nodeId:
// <id>}, the new node's Raft address and id. `parsec serve --join` sends
// it to any node (a standby forwards it to the writer), then starts its
// replica, which catches up from the others. It answers once the
// membership has the node.
func (e *Engine) cmdAddNode(ctx context.Context, req *request) ([]byte, error) {
	if e.cfg.AddNode == nil {
		return nil, errorf(ErrNoReplicationEnabled, "addNode: this server is not a node of a cluster (start it with --initial-members)")
	}
	addr, err := stringArg(req.name, "addNode", req.body.Lookup("addNode"))
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, errorf(ErrBadValue, "addNode: %q is not host:port", addr)
	}
	v, err := req.body.LookupErr("nodeId")
	if err != nil {
		return nil, errorf(ErrFailedToParse, "addNode: nodeId is required")
	}
	id, ok := v.AsInt64OK()
	if !ok || id < 1 {
		return nil, errorf(ErrBadValue, "addNode: nodeId must be a positive integer")
	}
	if err := e.cfg.AddNode(ctx, uint64(id), addr); err != nil {
		return nil, err
	}
	return okReply(bson.E{Key: "nodeId", Value: id}, bson.E{Key: "raftAddress", Value: addr}, bson.E{Key: "partitionGroups", Value: e.cfg.PartitionLeader != nil})
}
