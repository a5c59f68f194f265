package engine

import (
	"context"
	"net"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdAddShard adds a node to a cluster, as mongos's addShard adds a
// shard: {addShard: "<raft host:port>", name: "node<id>"}. It is addNode
// under MongoDB's name; the node then starts with --join (or was started
// so already) and joins empty: the balancer moves replicas onto it.
func (e *Engine) cmdAddShard(ctx context.Context, req *request) ([]byte, error) {
	if e.cfg.AddNode == nil {
		return nil, errorf(ErrNoReplicationEnabled, "addShard: this server is not a node of a cluster (start it with --initial-members)")
	}
	addr, err := stringArg(req.name, "addShard", req.body.Lookup("addShard"))
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, errorf(ErrBadValue, "addShard: %q is not host:port (the new node's Raft address)", addr)
	}
	name, err := stringArg(req.name, "name", req.body.Lookup("name"))
	if err != nil {
		return nil, errorf(ErrFailedToParse, "addShard: name is required: \"node<id>\", the new node's --node-id")
	}
	id, ok := parseNodeName(name)
	if !ok {
		return nil, errorf(ErrBadValue, "addShard: name %q is not node<id> with a positive id", name)
	}
	if err := e.cfg.AddNode(ctx, id, addr); err != nil {
		return nil, err
	}
	return okReply(bson.E{Key: "shardAdded", Value: nodeName(id)})
}
