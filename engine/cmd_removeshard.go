package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdRemoveShard drains a node of a cluster and then removes it, as
// mongos's removeShard does a shard: {removeShard: "node<id>"}. The first
// call starts draining (state "started"): the balancer moves every
// replica the node holds to the others. Later calls answer "ongoing" with
// remaining.chunks, the replicas still there, and, once none is,
// remove the node from the cluster and answer "completed".
func (e *Engine) cmdRemoveShard(ctx context.Context, req *request) ([]byte, error) {
	if e.cfg.Balancer == nil {
		return nil, errorf(ErrIllegalOperation, "removeShard: this server is not a node of a cluster of partition groups: a single Parsec server is its only shard")
	}
	name, err := stringArg(req.name, "removeShard", req.body.Lookup("removeShard"))
	if err != nil {
		return nil, err
	}
	id, ok := parseNodeName(name)
	if !ok {
		return nil, errorf(ErrShardNotFound, "removeShard: %q is not a shard of this cluster (shards are node<id>: listShards names them)", name)
	}
	st, err := e.cfg.Balancer.RemoveShard(ctx, id)
	if err != nil {
		return nil, err
	}
	switch st.State {
	case "started":
		return okReply(bson.E{Key: "msg", Value: "draining started successfully"}, bson.E{Key: "state", Value: "started"},
			bson.E{Key: "shard", Value: nodeName(id)}, bson.E{Key: "dbsToMove", Value: bson.A{}})
	case "ongoing":
		return okReply(bson.E{Key: "msg", Value: "draining ongoing"}, bson.E{Key: "state", Value: "ongoing"},
			bson.E{Key: "remaining", Value: bson.D{{Key: "chunks", Value: st.Remaining}, {Key: "dbs", Value: int64(0)},
				{Key: "jumboChunks", Value: int64(0)}}},
			bson.E{Key: "dbsToMove", Value: bson.A{}})
	}
	return okReply(bson.E{Key: "msg", Value: "removeshard completed successfully"}, bson.E{Key: "state", Value: "completed"},
		bson.E{Key: "shard", Value: nodeName(id)})
}
