package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdListShards lists Parsec's one shard, or a cluster's nodes
// (physical partitions are inside: GetPartitionStats shows them).
func (e *Engine) cmdListShards(ctx context.Context, _ *request) ([]byte, error) {
	var shards bson.A
	for _, d := range e.shardDocs(ctx) {
		shards = append(shards, d)
	}
	return okReply(bson.E{Key: "shards", Value: shards})
}
