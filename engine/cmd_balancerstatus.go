package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdBalancerStatus answers sh.isBalancerRunning(). A cluster's balancer
// says whether it runs (mode "full" or "off"), whether a round is moving
// a replica now, and Parsec's own detail: the moves under way, the
// nodes draining and why it waits. A single server has no balancer: its
// partitions split in place.
func (e *Engine) cmdBalancerStatus(_ context.Context, _ *request) ([]byte, error) {
	if e.cfg.Balancer == nil {
		return okReply(
			bson.E{Key: "mode", Value: "full"},
			bson.E{Key: "inBalancerRound", Value: false},
			bson.E{Key: "numBalancerRounds", Value: int64(0)},
		)
	}
	st := e.cfg.Balancer.Status()
	mode := "full"
	if !st.Enabled {
		mode = "off"
	}
	now := e.now()
	moves := bson.A{}
	for _, m := range st.Moves {
		moves = append(moves, m.doc(now))
	}
	draining := bson.A{}
	for _, n := range st.Draining {
		draining = append(draining, nodeName(n))
	}
	fields := []bson.E{
		{Key: "mode", Value: mode},
		{Key: "inBalancerRound", Value: st.InRound},
		{Key: "numBalancerRounds", Value: st.Rounds},
		{Key: "maxConcurrentMoves", Value: int32(st.MaxMoves)},
		{Key: "moves", Value: moves},
		{Key: "draining", Value: draining},
	}
	if st.Paused != "" {
		fields = append(fields, bson.E{Key: "waiting", Value: st.Paused})
	}
	return okReply(fields...)
}
