package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdKillOp answers killOp: Parsec runs no operation currentOp would list,
// so there is never one to kill.
func (e *Engine) cmdKillOp(_ context.Context, req *request) ([]byte, error) {
	if _, err := req.body.LookupErr("op"); err != nil {
		return nil, errorf(ErrBadValue, "Did not provide \"op\" field")
	}
	return okReply(bson.E{Key: "info", Value: "attempting to kill op"})
}
