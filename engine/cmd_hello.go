package engine

import (
	"context"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Wire versions: 21 is MongoDB 7.0.
const (
	minWireVersion = 0
	maxWireVersion = 21
)

// cmdHello answers hello and isMaster/ismaster. Parsec presents itself as
// a router (msg: "isdbgrid"): drivers then enable sessions and retryable
// writes, and mongosh's sh.* helpers work. With Config.ReplicaSet it
// presents itself as the primary of a one-member replica set of that name
// instead, as Cosmos DB does ("globaldb"), so connection strings that name
// the set work unchanged (cmd_replset.go). No topologyVersion is sent, so
// drivers poll instead of streaming hello.
func (e *Engine) cmdHello(ctx context.Context, req *request) ([]byte, error) {
	var compression []string
	helloOK := false
	if v, err := req.body.LookupErr("compression"); err == nil {
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, wrongType(req.name, "compression", v, "array")
		}
		vals, _ := arr.Values()
		offered := make([]string, 0, len(vals))
		for _, x := range vals {
			s, ok := x.StringValueOK()
			if !ok {
				return nil, wrongType(req.name, "compression", x, "string")
			}
			offered = append(offered, s)
		}
		compression = req.c.wc.NegotiateCompression(offered)
	}
	// As in MongoDB, a request that carries helloOk (whatever its value)
	// learns that this server supports hello.
	// As in MongoDB, client metadata comes with the connection's first
	// hello only: a later one carrying it is 186.
	req.c.mu.Lock()
	seen := req.c.helloSeen
	req.c.helloSeen = true
	req.c.mu.Unlock()
	if _, err := req.body.LookupErr("client"); err == nil && seen {
		return nil, errorf(ErrClientMetadataCannotBeMutated, "The client metadata document may only be sent in the first hello")
	}
	if v, err := req.body.LookupErr("client", "application", "name"); err == nil {
		if app, ok := v.StringValueOK(); ok {
			req.c.mu.Lock()
			req.c.appName = app
			req.c.mu.Unlock()
		}
	}
	if v, err := req.body.LookupErr("helloOk"); err == nil {
		if _, err := boolArg(req.name, "helloOk", v); err != nil {
			return nil, err
		}
		helloOK = true
	}
	d := bson.D{}
	if req.name == "hello" {
		d = append(d, bson.E{Key: "isWritablePrimary", Value: true})
	} else {
		d = append(d, bson.E{Key: "ismaster", Value: true})
	}
	if e.cfg.ReplicaSet != "" {
		d = append(d, e.replicaSetHello(req.c)...)
	} else {
		d = append(d, bson.E{Key: "msg", Value: "isdbgrid"})
	}
	d = append(d,
		bson.E{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		bson.E{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
		bson.E{Key: "maxWriteBatchSize", Value: int32(maxWriteBatchSize)},
		bson.E{Key: "localTime", Value: bson.NewDateTimeFromTime(e.now())},
		bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(30)},
		bson.E{Key: "connectionId", Value: int32(req.c.wc.ID())}, // int32 as MongoDB's appendNumber gives it
		bson.E{Key: "minWireVersion", Value: int32(minWireVersion)},
		bson.E{Key: "maxWireVersion", Value: int32(maxWireVersion)},
		bson.E{Key: "readOnly", Value: false},
	)
	if compression != nil {
		d = append(d, bson.E{Key: "compression", Value: compression})
	}
	if helloOK {
		d = append(d, bson.E{Key: "helloOk", Value: true})
	}
	if mechs, ok := e.saslMechs(req); ok {
		d = append(d, bson.E{Key: "saslSupportedMechs", Value: mechs})
	}
	if out, ok := e.speculativeAuth(ctx, req); ok {
		d = append(d, bson.E{Key: "speculativeAuthenticate", Value: out})
	}
	return okReply(d...)
}
