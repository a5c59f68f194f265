package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func (e *Engine) cmdWhatsMyURI(_ context.Context, req *request) ([]byte, error) {
	return okReply(bson.E{Key: "you", Value: req.c.wc.RemoteAddr().String()})
}
