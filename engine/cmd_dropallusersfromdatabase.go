package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func (e *Engine) cmdDropAllUsersFromDatabase(_ context.Context, req *request) ([]byte, error) {
	n, err := e.store.DeleteUsers(req.db, "")
	e.usersVersion.Add(1)
	if err != nil {
		return nil, err
	}
	return okReply(bson.E{Key: "n", Value: int32(n)})
}
