package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdListShards lists Parsec's one shard (physical partitions are inside
// it: GetPartitionStats shows them).
func (e *Engine) cmdListShards(_ context.Context, _ *request) ([]byte, error) {
	return okReply(bson.E{Key: "shards", Value: bson.A{e.shardDoc()}})
}
