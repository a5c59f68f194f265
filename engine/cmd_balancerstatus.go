package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdBalancerStatus answers sh.isBalancerRunning(): Parsec moves no data
// between shards, its partitions split in place.
func (e *Engine) cmdBalancerStatus(_ context.Context, _ *request) ([]byte, error) {
	return okReply(
		bson.E{Key: "mode", Value: "full"},
		bson.E{Key: "inBalancerRound", Value: false},
		bson.E{Key: "numBalancerRounds", Value: int64(0)},
	)
}
