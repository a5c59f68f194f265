package engine

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A replica set of one: with Config.ReplicaSet, Parsec answers hello as
// the primary of a replica set of that name whose only member is itself,
// as Cosmos DB answers as the primary of "globaldb". A connection string
// with replicaSet=<name> then works unchanged; drivers still get sessions
// and retryable writes (a replica set has both). There is no replication:
// the set is this server, and write concerns are met by its own journal.

// self is the host:port the server names itself by in the replica set:
// Config.Advertise, else the address the client connected to (so it
// matches what the client can reach).
func (e *Engine) self(c *conn) string {
	if e.cfg.Advertise != "" {
		return e.cfg.Advertise
	}
	return c.wc.LocalAddr().String()
}

// replicaSetHello are hello's replica-set fields.
func (e *Engine) replicaSetHello(c *conn) bson.D {
	me := e.self(c)
	now := e.now()
	return bson.D{
		{Key: "hosts", Value: bson.A{me}},
		{Key: "setName", Value: e.cfg.ReplicaSet},
		{Key: "setVersion", Value: int32(1)},
		{Key: "secondary", Value: false},
		{Key: "primary", Value: me},
		{Key: "me", Value: me},
		{Key: "electionId", Value: e.electionID},
		{Key: "lastWrite", Value: bson.D{
			{Key: "opTime", Value: opTime(now)},
			{Key: "lastWriteDate", Value: bson.NewDateTimeFromTime(now)},
			{Key: "majorityOpTime", Value: opTime(now)},
			{Key: "majorityWriteDate", Value: bson.NewDateTimeFromTime(now)},
		}},
	}
}

// opTime is a replication optime for t in term 1.
func opTime(t time.Time) bson.D {
	return bson.D{{Key: "ts", Value: bson.Timestamp{T: uint32(t.Unix()), I: 1}}, {Key: "t", Value: int64(1)}}
}

// cmdReplSetGetStatus answers rs.status(): one healthy primary.
func (e *Engine) cmdReplSetGetStatus(_ context.Context, req *request) ([]byte, error) {
	if e.cfg.ReplicaSet == "" {
		return nil, errorf(ErrNoReplicationEnabled, "not running with --replSet (Parsec answers as a router; start it with --replica-set to present a replica set)")
	}
	now := e.now()
	me := e.self(req.c)
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
