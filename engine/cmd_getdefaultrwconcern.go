package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdGetDefaultRWConcern reports the implicit defaults MongoDB 7.0 has:
// read concern local, write concern majority (which, with one member,
// is the server's own journal).
func (e *Engine) cmdGetDefaultRWConcern(_ context.Context, _ *request) ([]byte, error) {
	return okReply(
		bson.E{Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "local"}}},
		bson.E{Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: int32(0)}}},
		bson.E{Key: "defaultWriteConcernSource", Value: "implicit"},
		bson.E{Key: "defaultReadConcernSource", Value: "implicit"},
		bson.E{Key: "localUpdateWallClockTime", Value: bson.NewDateTimeFromTime(e.started)},
	)
}
