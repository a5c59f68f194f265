package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdConnectionStatus reports an unauthenticated connection: Parsec has no
// users yet, so every connection may do everything.
func (e *Engine) cmdConnectionStatus(_ context.Context, req *request) ([]byte, error) {
	info := bson.D{
		{Key: "authenticatedUsers", Value: bson.A{}},
		{Key: "authenticatedUserRoles", Value: bson.A{}},
	}
	if v, err := req.body.LookupErr("showPrivileges"); err == nil {
		show, err := boolArg(req.name, "showPrivileges", v)
		if err != nil {
			return nil, err
		}
		if show {
			info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: bson.A{}})
		}
	}
	return okReply(bson.E{Key: "authInfo", Value: info})
}
