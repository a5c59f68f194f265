package engine

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/wire"
)

// Standby describes a cluster node that is not its group's writer: a
// secondary of the replica set the cluster presents, with no engine of
// its own running. StandbyReply answers its clients.
type Standby struct {
	SetName string
	Me      string   // this node's client address
	Members []string // every node's client address
	Primary string   // the writer's client address ("": none known)
	Applied uint64   // the Raft index this node's replica has applied
}

// standbyCommands are what a standby answers itself: the handshake and
// the monitoring drivers do on every member.
var standbyCommands = map[string]bool{
	"hello": true, "isMaster": true, "ismaster": true, "ping": true, "buildInfo": true, "buildinfo": true,
}

// standbyWrites are the commands a standby refuses as a write (10107
// NotWritablePrimary, labelled RetryableWriteError when the driver may
// retry it); it refuses everything else as a read (13435).
var standbyWrites = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true,
	"create": true, "drop": true, "dropDatabase": true, "createIndexes": true, "dropIndexes": true,
	"renameCollection": true, "collMod": true, "shardCollection": true, "commitTransaction": true,
	"abortTransaction": true, "createUser": true, "dropUser": true, "updateUser": true,
	"reshardCollection": true, "abortReshardCollection": true, "commitReshardCollection": true,
}

// StandbyAnswers is whether a standby answers the command itself (the
// handshake and monitoring) instead of forwarding it to the writer.
func StandbyAnswers(body []byte) bool {
	elems, err := bsoncore.Document(body).Elements()
	return err == nil && len(elems) > 0 && standbyCommands[elems[0].Key()]
}

// StandbyReply answers one request on a standby: hello as a secondary
// naming the primary (so drivers find it), ping and buildInfo, and for
// everything else MongoDB's not-primary errors, which drivers answer by
// looking for the primary and retrying there.
func StandbyReply(body []byte, s Standby, connID int64) []byte {
	doc := bsoncore.Document(body)
	name := ""
	if elems, err := doc.Elements(); err == nil && len(elems) > 0 {
		name = elems[0].Key()
	}
	if !standbyCommands[name] {
		ce := errorf(ErrNotPrimaryNoSecondaryOk, "not primary and secondaryOk=false: this node is a standby of the cluster (primary: %s)", orNone(s.Primary))
		if standbyWrites[name] {
			ce = errorf(ErrNotWritablePrimary, "not primary: this node is a standby of the cluster (primary: %s)", orNone(s.Primary))
			if _, err := doc.LookupErr("txnNumber"); err == nil {
				ce.Extra = bson.D{{Key: "errorLabels", Value: bson.A{"RetryableWriteError"}}}
			}
		}
		return errorReply(ce)
	}
	var d bson.D
	switch name {
	case "hello", "isMaster", "ismaster":
		if name == "hello" {
			d = append(d, bson.E{Key: "isWritablePrimary", Value: false})
		} else {
			d = append(d, bson.E{Key: "ismaster", Value: false})
		}
		hosts := make(bson.A, len(s.Members))
		for i, m := range s.Members {
			hosts[i] = m
		}
		d = append(d,
			bson.E{Key: "secondary", Value: true},
			bson.E{Key: "hosts", Value: hosts},
			bson.E{Key: "setName", Value: s.SetName},
			bson.E{Key: "setVersion", Value: int32(1)},
		)
		if s.Primary != "" {
			d = append(d, bson.E{Key: "primary", Value: s.Primary})
		}
		d = append(d,
			bson.E{Key: "me", Value: s.Me},
			bson.E{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
			bson.E{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
			bson.E{Key: "maxWriteBatchSize", Value: int32(maxWriteBatchSize)},
			bson.E{Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())},
			bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(30)},
			bson.E{Key: "connectionId", Value: int32(connID)},
			bson.E{Key: "minWireVersion", Value: int32(minWireVersion)},
			bson.E{Key: "maxWireVersion", Value: int32(maxWireVersion)},
			bson.E{Key: "readOnly", Value: false},
			bson.E{Key: "raftAppliedIndex", Value: int64(s.Applied)},
		)
		if _, err := doc.LookupErr("helloOk"); err == nil {
			d = append(d, bson.E{Key: "helloOk", Value: true})
		}
	case "buildInfo", "buildinfo":
		d = append(d, bson.E{Key: "version", Value: MongoVersion}, bson.E{Key: "parsecVersion", Value: Version})
	}
	reply, err := okReply(d...)
	if err != nil {
		return errorReply(errorf(ErrInternalError, "%v", err))
	}
	return reply
}

func orNone(s string) string {
	if s == "" {
		return "none known yet"
	}
	return s
}
