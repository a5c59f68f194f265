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
		{Key: "cursorTimeoutMillis", Value: e.cursors.Timeout().Milliseconds()},
		{Key: "quiet", Value: false},
		{Key: "transactionLifetimeLimitSeconds", Value: int32(e.transactionLifetime().Seconds())},
		{Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: int64(100 * 1024 * 1024)},
		{Key: "requireApiVersion", Value: false},
		{Key: "enableTestCommands", Value: e.cfg.EnableTestCommands},
	}
}

// parameterSettable says when each parameter may be set, as MongoDB's
// server_parameters declare it (set_at): at runtime (setParameter), at
// startup (--setParameter), or both.
var parameterSettable = map[string][2]bool{ // {runtime, startup}
	"authenticationMechanisms":        {false, true},
	"featureCompatibilityVersion":     {true, false},
	"logLevel":                        {true, true},
	"maxBSONDepth":                    {false, true},
	"cursorTimeoutMillis":             {true, true},
	"quiet":                           {true, true},
	"transactionLifetimeLimitSeconds": {true, true},
	"internalQueryMaxBlockingSortMemoryUsageBytes": {true, true},
	"requireApiVersion":                            {true, true},
	"enableTestCommands":                           {false, true},
}

// withDetails is getParameter's showDetails form of parameters: each as
// {value, settableAtRuntime, settableAtStartup}.
func withDetails(params bson.D) bson.D {
	out := make(bson.D, len(params))
	for i, p := range params {
		s := parameterSettable[p.Key]
		out[i] = bson.E{Key: p.Key, Value: bson.D{
			{Key: "value", Value: p.Value},
			{Key: "settableAtRuntime", Value: s[0]},
			{Key: "settableAtStartup", Value: s[1]},
		}}
	}
	return out
}

// cmdGetParameter answers getParameter: '*' (all), or {getParameter: 1,
// <name>: 1, ...}; {allParameters: true} in the first field's document
// form is treated as '*', and showDetails: true gives each parameter as
// {value, settableAtRuntime, settableAtStartup}. Parameters are listed in
// the server's order.
func (e *Engine) cmdGetParameter(_ context.Context, req *request) ([]byte, error) {
	params := e.serverParameters()
	first := req.body.Index(0).Value()
	all, details := false, false
	switch first.Type {
	case bsoncore.TypeString:
		all = first.StringValue() == "*"
	case bsoncore.TypeEmbeddedDocument:
		if v, err := first.Document().LookupErr("allParameters"); err == nil {
			all, _ = boolArg(req.name, "allParameters", v)
		}
		if v, err := first.Document().LookupErr("showDetails"); err == nil {
			details, _ = boolArg(req.name, "showDetails", v)
		}
	}
	if details {
		params = withDetails(params)
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
