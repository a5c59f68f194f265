package engine

import (
	"context"
	"slices"
)

// cmdGrantRevokeRoles is grantRolesToUser and revokeRolesFromUser.
func (e *Engine) cmdGrantRevokeRoles(_ context.Context, req *request) ([]byte, error) {
	name, err := firstString(req)
	if err != nil {
		return nil, err
	}
	v, err := req.body.LookupErr("roles")
	if err != nil {
		return nil, errorf(ErrBadValue, "\"%s\" command requires a non-empty \"roles\" array", req.name)
	}
	roles, err := parseRoles(req, "roles", v)
	if err != nil {
		return nil, err
	}
	if len(roles) == 0 {
		return nil, errorf(ErrBadValue, "\"%s\" command requires a non-empty \"roles\" array", req.name)
	}
	u, err := e.existingUser(req.db, name)
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		i := slices.Index(u.Roles, r)
		switch {
		case req.name == "grantRolesToUser" && i < 0:
			u.Roles = append(u.Roles, r)
		case req.name == "revokeRolesFromUser" && i >= 0:
			u.Roles = slices.Delete(u.Roles, i, i+1)
		}
	}
	if err := e.putUser(u, false); err != nil {
		return nil, err
	}
	return okReply()
}
