package engine

import (
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
