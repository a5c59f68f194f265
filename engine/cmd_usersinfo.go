package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/query"
)

// cmdUsersInfo answers usersInfo: 1 (the database's users), {forAllDBs:
// true}, "name", {user, db}, or an array of names and {user, db}.
func (e *Engine) cmdUsersInfo(_ context.Context, req *request) ([]byte, error) {
	showCreds, showPrivs := false, false
	var filter *query.Filter
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		switch k := el.Key(); k {
		case "showCredentials":
			b, err := boolArg(req.name, k, el.Value())
			if err != nil {
				return nil, err
			}
			showCreds = b
		case "showPrivileges":
			b, err := boolArg(req.name, k, el.Value())
			if err != nil {
				return nil, err
			}
			showPrivs = b
		case "showAuthenticationRestrictions", "showCustomData":
		case "filter":
			d, err := docArg(req.name, k, el.Value())
			if err != nil {
				return nil, err
			}
			if filter, err = compileFilter(d); err != nil {
				return nil, err
			}
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	var users []auth.User
	add := func(db, name string) error {
		u, ok, err := e.lookupUser(db, name)
		if ok {
			users = append(users, u)
		}
		return err
	}
	addAll := func(db string, all bool) error {
		raws, err := e.store.Users(db, all)
		if err != nil {
			return err
		}
		for _, raw := range raws {
			var u auth.User
			if err := bson.Unmarshal(raw, &u); err != nil {
				return err
			}
			users = append(users, u)
		}
		return nil
	}
	byRef := func(x bsoncore.Value) error {
		if name, db, ok := nameRef(x, "user", req.db); ok {
			return add(db, name)
		}
		return errorf(ErrBadValue, "User name must be a string or an object with string fields 'user' and 'db'")
	}
	v := elems[0].Value()
	var err error
	switch {
	case isNumber(v):
		err = addAll(req.db, false)
	case forAllDBs(v):
		if req.db != "admin" {
			return nil, errorf(ErrBadValue, "forAllDBs is only allowed on the admin database")
		}
		err = addAll("", true)
	case v.Type == bsoncore.TypeArray:
		for _, x := range mustValues(v.Array()) {
			if err = byRef(x); err != nil {
				break
			}
		}
	default:
		err = byRef(v)
	}
	if err != nil {
		return nil, err
	}
	out := bson.A{}
	for _, u := range users {
		d := bson.D{
			{Key: "_id", Value: u.ID},
			{Key: "userId", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u.UserID}},
			{Key: "user", Value: u.User},
			{Key: "db", Value: u.DB},
		}
		if u.CustomData != nil {
			d = append(d, bson.E{Key: "customData", Value: u.CustomData})
		}
		d = append(d, bson.E{Key: "roles", Value: rolesValue(u.Roles)})
		if showCreds {
			d = append(d, bson.E{Key: "credentials", Value: u.Credentials})
		}
		d = append(d, bson.E{Key: "mechanisms", Value: u.Credentials.Mechanisms()})
		if showPrivs {
			d = append(d, bson.E{Key: "inheritedRoles", Value: rolesValue(u.Roles)}, bson.E{Key: "inheritedPrivileges", Value: privilegesValue(u.Roles)})
		}
		if ok, err := matchesD(filter, d); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, d)
	}
	return okReply(bson.E{Key: "users", Value: out})
}
