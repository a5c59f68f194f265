package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdReplSetGetConfig answers rs.conf(): the configuration of the
// replica set the server presents, a single server's one member or a
// cluster's nodes. writeConcernMajorityJournalDefault says whether
// w: "majority" waits for the journal (MongoDB's default): on Parsec it
// waits only with Config.MajorityJournaled (a cluster fsyncing its Raft
// log before every write counts); j: true always does.
func (e *Engine) cmdReplSetGetConfig(_ context.Context, req *request) ([]byte, error) {
	if e.cfg.ReplicaSet == "" {
		return nil, errorf(ErrNoReplicationEnabled, "not running with --replSet (Parsec answers as a router; start it with --replica-set to present a replica set)")
	}
	hosts := e.members(e.self(req.c))
	members := make(bson.A, len(hosts))
	for i, h := range hosts {
		members[i] = bson.D{
			{Key: "_id", Value: int32(i)},
			{Key: "host", Value: h},
			{Key: "arbiterOnly", Value: false},
			{Key: "buildIndexes", Value: true},
			{Key: "hidden", Value: false},
			{Key: "priority", Value: 1.0},
			{Key: "tags", Value: bson.D{}},
			{Key: "secondaryDelaySecs", Value: int64(0)},
			{Key: "votes", Value: int32(1)},
		}
	}
	term := int64(1)
	if e.cfg.ElectionTerm > 0 {
		term = int64(e.cfg.ElectionTerm)
	}
	return okReply(bson.E{Key: "config", Value: bson.D{
		{Key: "_id", Value: e.cfg.ReplicaSet},
		{Key: "version", Value: int32(1)},
		{Key: "term", Value: term},
		{Key: "members", Value: members},
		{Key: "protocolVersion", Value: int64(1)},
		{Key: "writeConcernMajorityJournalDefault", Value: e.cfg.MajorityJournaled},
	}})
}
