package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/engine/auth"
)

// cmdRolesInfo answers rolesInfo about built-in roles: Parsec has no
// user-defined roles, so rolesInfo: 1 lists none unless showBuiltinRoles.
func (e *Engine) cmdRolesInfo(_ context.Context, req *request) ([]byte, error) {
	showBuiltin, showPrivs := false, false
	if v, err := req.body.LookupErr("showPrivileges"); err == nil {
		b, err := boolArg(req.name, "showPrivileges", v)
		if err != nil {
			return nil, err
		}
		showPrivs = b
	}
	if v, err := req.body.LookupErr("showBuiltinRoles"); err == nil {
		b, err := boolArg(req.name, "showBuiltinRoles", v)
		if err != nil {
			return nil, err
		}
		showBuiltin = b
	}
	var refs []auth.RoleRef
	byRef := func(x bsoncore.Value) error {
		if role, db, ok := nameRef(x, "role", req.db); ok {
			refs = append(refs, auth.RoleRef{Role: role, DB: db})
			return nil
		}
		return errorf(ErrBadValue, "Role must be a string or an object with string fields 'role' and 'db'")
	}
	el, _ := req.body.IndexErr(0)
	v := el.Value()
	switch {
	case isNumber(v):
		if showBuiltin {
			for _, name := range auth.BuiltinRoles(req.db) {
				refs = append(refs, auth.RoleRef{Role: name, DB: req.db})
			}
		}
	case v.Type == bsoncore.TypeArray:
		for _, x := range mustValues(v.Array()) {
			if err := byRef(x); err != nil {
				return nil, err
			}
		}
	default:
		if err := byRef(v); err != nil {
			return nil, err
		}
	}
	out := bson.A{}
	for _, r := range refs {
		if !auth.IsBuiltinRole(r) {
			continue
		}
		d := bson.D{
			{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}, {Key: "isBuiltin", Value: true},
			{Key: "roles", Value: bson.A{}}, {Key: "inheritedRoles", Value: bson.A{}},
		}
		if showPrivs {
			privs := privilegesValue([]auth.RoleRef{r})
			d = append(d, bson.E{Key: "privileges", Value: privs}, bson.E{Key: "inheritedPrivileges", Value: privs})
		}
		out = append(out, d)
	}
	return okReply(bson.E{Key: "roles", Value: out})
}
