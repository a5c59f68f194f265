package engine

import (
	"context"
	"crypto/rand"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdStartSession starts a logical session: a new random (version 4)
// UUID as its lsid, and the session timeout. Parsec keeps a session's
// state (cursors, retryable writes, transactions) from its first use, so
// there is nothing to record until then.
func (e *Engine) cmdStartSession(context.Context, *request) ([]byte, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return okReply(
		bson.E{Key: "id", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: id[:]}}}},
		bson.E{Key: "timeoutMinutes", Value: int32(30)},
	)
}
