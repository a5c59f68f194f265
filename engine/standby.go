package engine

import (
	"maps"
	"slices"
	"strconv"
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
	// Groups are what its replicas of partition groups applied, by group.
	Groups map[uint64]uint64
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
		if len(s.Groups) > 0 {
			groups := bson.D{}
			for _, id := range slices.Sorted(maps.Keys(s.Groups)) {
				groups = append(groups, bson.E{Key: strconv.FormatUint(id, 10), Value: int64(s.Groups[id])})
			}
			d = append(d, bson.E{Key: "raftGroups", Value: groups})
		}
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

// followerReads are the commands a standby may answer from its own
// replica when the client's read preference allows a secondary.
var followerReads = map[string]bool{
	"find": true, "aggregate": true, "count": true, "distinct": true,
	"listCollections": true, "listIndexes": true, "listDatabases": true, "dbStats": true,
}

// FollowerRead reports whether a standby may answer the command from
// its own replica, which has applied a prefix of the cluster's log (a
// stale read, as from a MongoDB secondary): a read whose
// $readPreference is secondary, secondaryPreferred or nearest, outside a
// transaction, asking no linearizable read and no causal wait
// (afterClusterTime, which the writer answers), and for aggregate
// writing nothing and opening no change stream. getMore and killCursors
// of a cursor such a read opened (OwnsCursor) go to the same place.
func (e *Engine) FollowerRead(body []byte) bool {
	if !MayReadFromFollower(body) {
		return false
	}
	doc := bsoncore.Document(body)
	elems, _ := doc.Elements()
	switch elems[0].Key() {
	case "getMore":
		id, ok := elems[0].Value().Int64OK()
		return ok && e.cursors.Has(id)
	case "killCursors":
		ids, ok := doc.Lookup("cursors").ArrayOK()
		if !ok {
			return false
		}
		vals, err := ids.Values()
		if err != nil || len(vals) == 0 {
			return false
		}
		for _, v := range vals {
			if id, ok := v.Int64OK(); !ok || !e.cursors.Has(id) {
				return false
			}
		}
		return true
	}
	return true
}

// MayReadFromFollower is FollowerRead without what needs an engine:
// getMore and killCursors may be, whatever their cursors.
func MayReadFromFollower(body []byte) bool {
	doc := bsoncore.Document(body)
	elems, err := doc.Elements()
	if err != nil || len(elems) == 0 {
		return false
	}
	name := elems[0].Key()
	if name == "getMore" || name == "killCursors" {
		return true
	}
	if !followerReads[name] {
		return false
	}
	mode, _ := doc.Lookup("$readPreference", "mode").StringValueOK()
	if mode != "secondary" && mode != "secondaryPreferred" && mode != "nearest" {
		return false
	}
	if _, err := doc.LookupErr("txnNumber"); err == nil {
		return false
	}
	if rc, ok := doc.Lookup("readConcern").DocumentOK(); ok {
		if lvl, _ := rc.Lookup("level").StringValueOK(); lvl == "linearizable" {
			return false
		}
		if _, err := rc.LookupErr("afterClusterTime"); err == nil {
			return false
		}
	}
	if name == "aggregate" {
		stages, ok := doc.Lookup("pipeline").ArrayOK()
		if !ok {
			return false
		}
		vals, _ := stages.Values()
		for _, st := range vals {
			sd, ok := st.DocumentOK()
			if !ok {
				return false
			}
			se, err := sd.Elements()
			if err != nil || len(se) != 1 {
				return false
			}
			switch se[0].Key() {
			case "$out", "$merge", "$changeStream":
				return false
			}
		}
	}
	return true
}
