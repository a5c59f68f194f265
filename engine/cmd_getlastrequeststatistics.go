package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdGetLastRequestStatistics is Cosmos DB's report of the connection's
// previous command: {_t: "GetRequestStatisticsResponse", ok: 1,
// CommandName, RequestCharge, RequestDurationInMilliSeconds, ActivityId}.
// Asking again reports the same command: this one does not count as a
// previous command.
func (e *Engine) cmdGetLastRequestStatistics(_ context.Context, req *request) ([]byte, error) {
	c := req.c
	c.mu.Lock()
	name, dur, charge, n := c.lastCmd, c.lastDur, c.lastCharge, c.requests
	c.mu.Unlock()
	return marshal(bson.D{
		{Key: "_t", Value: "GetRequestStatisticsResponse"},
		{Key: "ok", Value: 1.0},
		{Key: "CommandName", Value: name},
		{Key: "RequestCharge", Value: charge},
		{Key: "RequestDurationInMilliSeconds", Value: dur.Milliseconds()},
		{Key: "ActivityId", Value: activityID(c.seed, n)},
	})
}
