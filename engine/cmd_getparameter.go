package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// serverParameters are the parameters getParameter knows, in the order
// getParameter: '*' lists them.
func (e *Engine) serverParameters() bson.D {
	return bson.D{
		{Key: "authenticationMechanisms", Value: bson.A{}},
		{Key: "featureCompatibilityVersion", Value: bson.D{{Key: "version", Value: "7.0"}}},
		{Key: "logLevel", Value: int32(0)},
		{Key: "maxBSONDepth", Value: int32(200)},
		{Key: "cursorTimeoutMillis", Value: e.cursors.timeout.Milliseconds()},
		{Key: "quiet", Value: false},
		{Key: "transactionLifetimeLimitSeconds", Value: int32(e.transactionLifetime().Seconds())},
		{Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: int64(100 * 1024 * 1024)},
		{Key: "requireApiVersion", Value: false},
		{Key: "enableTestCommands", Value: e.cfg.EnableTestCommands},
	}
}

// cmdGetParameter answers getParameter: '*' (all), or {getParameter: 1,
// <name>: 1, ...}; {allParameters: true} in the first field's document
// form is treated as '*'. Parameters are listed in the server's order.
func (e *Engine) cmdGetParameter(_ context.Context, req *request) ([]byte, error) {
	params := e.serverParameters()
	first := req.body.Index(0).Value()
	all := false
	switch first.Type {
	case bsoncore.TypeString:
		all = first.StringValue() == "*"
	case bsoncore.TypeEmbeddedDocument:
		if v, err := first.Document().LookupErr("allParameters"); err == nil {
			all, _ = boolArg(req.name, "allParameters", v)
		}
	}
	if all {
		return okReply(params...)
	}
	// As in MongoDB, names the server does not know are ignored; only a
	// request that names no known parameter fails.
	var out bson.D
	for _, p := range params {
		if _, err := req.body.LookupErr(p.Key); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, errorf(ErrInvalidOptions, "no option found to get")
	}
	return okReply(out...)
}
