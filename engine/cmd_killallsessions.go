package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func (e *Engine) cmdKillAllSessions(_ context.Context, req *request) ([]byte, error) {
	v := req.body.Index(0).Value()
	if v.Type != bsoncore.TypeArray {
		return nil, wrongType(req.name, req.name, v, "array")
	}
	e.cursors.CloseAllSessions()
	e.forgetAllSessions()
	return okReply()
}
