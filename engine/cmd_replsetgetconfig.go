package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdReplSetGetConfig answers rs.conf(): the one-member configuration.
func (e *Engine) cmdReplSetGetConfig(_ context.Context, req *request) ([]byte, error) {
	if e.cfg.ReplicaSet == "" {
		return nil, errorf(ErrNoReplicationEnabled, "not running with --replSet (Parsec answers as a router; start it with --replica-set to present a replica set)")
	}
	return okReply(bson.E{Key: "config", Value: bson.D{
		{Key: "_id", Value: e.cfg.ReplicaSet},
		{Key: "version", Value: int32(1)},
		{Key: "term", Value: int64(1)},
		{Key: "members", Value: bson.A{bson.D{
			{Key: "_id", Value: int32(0)},
			{Key: "host", Value: e.self(req.c)},
			{Key: "arbiterOnly", Value: false},
			{Key: "buildIndexes", Value: true},
			{Key: "hidden", Value: false},
			{Key: "priority", Value: 1.0},
			{Key: "tags", Value: bson.D{}},
			{Key: "secondaryDelaySecs", Value: int64(0)},
			{Key: "votes", Value: int32(1)},
		}}},
		{Key: "protocolVersion", Value: int64(1)},
		{Key: "writeConcernMajorityJournalDefault", Value: true},
	}})
}
