package engine

import (
	"encoding/binary"
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

// members are the replica set's hosts: Config.Members, or this server.
func (e *Engine) members(me string) bson.A {
	var members []string
	if e.cfg.Members != nil {
		members = e.cfg.Members()
	}
	if len(members) == 0 {
		return bson.A{me}
	}
	hosts := make(bson.A, len(members))
	for i, m := range members {
		hosts[i] = m
	}
	return hosts
}

// electionID is the primary's electionId: MongoDB's form for a Raft term
// (7fffffff and the term, big endian), which orders by term as drivers
// compare them, or without a term one made from the start time.
func electionID(started time.Time, term uint64) bson.ObjectID {
	if term == 0 {
		return bson.NewObjectIDFromTimestamp(started)
	}
	var id bson.ObjectID
	id[0], id[1], id[2], id[3] = 0x7f, 0xff, 0xff, 0xff
	binary.BigEndian.PutUint64(id[4:], term)
	return id
}

// replicaSetHello are hello's replica-set fields.
func (e *Engine) replicaSetHello(c *conn) bson.D {
	me := e.self(c)
	now := e.now()
	return bson.D{
		{Key: "hosts", Value: e.members(me)},
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
