package engine

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Every reply carries $clusterTime and operationTime, as a MongoDB
// router's (and a replica-set member's) replies do: drivers gossip the
// cluster time back and keep a session's latest operationTime for causal
// consistency (readConcern afterClusterTime on its next read). With no
// keys to sign with, the signature is MongoDB's unsigned one: a hash of
// 20 zero bytes and keyId 0.

// operationTimeCommands are the reads and writes a causally consistent
// session orders: each gets a cluster time of its own as operationTime.
// Other commands answer with the latest cluster time.
var operationTimeCommands = map[string]bool{
	"find": true, "getMore": true, "aggregate": true, "distinct": true, "count": true,
	"insert": true, "update": true, "delete": true, "findAndModify": true,
	"commitTransaction": true, "abortTransaction": true,
}

// withClusterTime appends $clusterTime and operationTime to a reply.
func (e *Engine) withClusterTime(name string, reply []byte) []byte {
	if len(reply) < 5 {
		return reply
	}
	now := e.now()
	var op bson.Timestamp
	if operationTimeCommands[name] {
		op = e.clock.Next(now)
	} else {
		op = e.clock.Latest(now)
	}
	cluster := e.clock.Latest(now) // never before op
	out := make([]byte, len(reply)-1, len(reply)+96)
	copy(out, reply)
	idx, out := bsoncore.AppendDocumentElementStart(out, "$clusterTime")
	out = bsoncore.AppendTimestampElement(out, "clusterTime", cluster.T, cluster.I)
	sidx, out := bsoncore.AppendDocumentElementStart(out, "signature")
	out = bsoncore.AppendBinaryElement(out, "hash", bson.TypeBinaryGeneric, unsignedHash[:])
	out = bsoncore.AppendInt64Element(out, "keyId", 0)
	out, _ = bsoncore.AppendDocumentEnd(out, sidx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = bsoncore.AppendTimestampElement(out, "operationTime", op.T, op.I)
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}

var unsignedHash [20]byte
