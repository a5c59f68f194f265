package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdReplSetGetStatus answers rs.status(): one healthy primary.
func (e *Engine) cmdReplSetGetStatus(ctx context.Context, req *request) ([]byte, error) {
	if e.cfg.ReplicaSet == "" {
		return nil, errorf(ErrNoReplicationEnabled, "not running with --replSet (Parsec answers as a router; start it with --replica-set to present a replica set)")
	}
	now := e.now()
	me := e.self(req.c)
	if st, ok := e.clusterStatus(ctx); ok {
		n := int32(len(st.Members))
		return okReply(
			bson.E{Key: "set", Value: e.cfg.ReplicaSet},
			bson.E{Key: "date", Value: bson.NewDateTimeFromTime(now)},
			bson.E{Key: "myState", Value: int32(1)},
			bson.E{Key: "term", Value: int64(st.Term)},
			bson.E{Key: "heartbeatIntervalMillis", Value: int64(2000)},
			bson.E{Key: "majorityVoteCount", Value: n/2 + 1},
			bson.E{Key: "writeMajorityCount", Value: n/2 + 1},
			bson.E{Key: "votingMembersCount", Value: n},
			bson.E{Key: "writableVotingMembersCount", Value: n},
			bson.E{Key: "members", Value: e.replSetMembers(st, now)},
		)
	}
	return okReply(
		bson.E{Key: "set", Value: e.cfg.ReplicaSet},
		bson.E{Key: "date", Value: bson.NewDateTimeFromTime(now)},
		bson.E{Key: "myState", Value: int32(1)},
		bson.E{Key: "term", Value: int64(1)},
		bson.E{Key: "heartbeatIntervalMillis", Value: int64(2000)},
		bson.E{Key: "majorityVoteCount", Value: int32(1)},
		bson.E{Key: "writeMajorityCount", Value: int32(1)},
		bson.E{Key: "votingMembersCount", Value: int32(1)},
		bson.E{Key: "writableVotingMembersCount", Value: int32(1)},
		bson.E{Key: "members", Value: bson.A{bson.D{
			{Key: "_id", Value: int32(0)},
			{Key: "name", Value: me},
			{Key: "health", Value: 1.0},
			{Key: "state", Value: int32(1)},
			{Key: "stateStr", Value: "PRIMARY"},
			{Key: "uptime", Value: int64(now.Sub(e.started).Seconds())},
			{Key: "optime", Value: opTime(now)},
			{Key: "optimeDate", Value: bson.NewDateTimeFromTime(now)},
			{Key: "electionDate", Value: bson.NewDateTimeFromTime(e.started)},
			{Key: "self", Value: true},
		}}},
	)
}
