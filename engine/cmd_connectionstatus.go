package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/auth"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdConnectionStatus reports the connection's authenticated user and its
// roles (none before authentication).
func (e *Engine) cmdConnectionStatus(_ context.Context, req *request) ([]byte, error) {
	users, roles := bson.A{}, bson.A{}
	var granted []auth.RoleRef
	if u := req.c.user(); u != nil {
		users = append(users, bson.D{{Key: "user", Value: u.name}, {Key: "db", Value: u.db}})
		roles = rolesValue(u.roles)
		granted = u.roles
	}
	info := bson.D{
		{Key: "authenticatedUsers", Value: users},
		{Key: "authenticatedUserRoles", Value: roles},
	}
	if v, err := req.body.LookupErr("showPrivileges"); err == nil {
		show, err := boolArg(req.name, "showPrivileges", v)
		if err != nil {
			return nil, err
		}
		if show {
			info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: privilegesValue(granted)})
		}
	}
	return okReply(bson.E{Key: "authInfo", Value: info})
}
