package engine

import (
	"crypto/rand"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/engine/auth"
)

// userSpec is what createUser and updateUser were given.
type userSpec struct {
	name       string
	pwd        *string
	roles      []auth.RoleRef
	haveRoles  bool
	customData bson.Raw
	mechs      []string
}

// parseUserSpec reads createUser's or updateUser's fields.
func parseUserSpec(req *request) (userSpec, error) {
	var s userSpec
	elems, _ := req.body.Elements()
	for i, el := range elems {
		v := el.Value()
		k := el.Key()
		switch {
		case i == 0:
			name, err := stringArg(req.name, k, v)
			if err != nil {
				return s, err
			}
			if name == "" || strings.IndexByte(name, 0) >= 0 {
				return s, errorf(ErrBadValue, "User name must be a non-empty string without zero bytes")
			}
			s.name = name
		case k == "pwd":
			p, err := stringArg(req.name, k, v)
			if err != nil {
				return s, err
			}
			if p == "" {
				return s, errorf(ErrBadValue, "Password cannot be empty")
			}
			s.pwd = &p
		case k == "roles":
			roles, err := parseRoles(req, k, v)
			if err != nil {
				return s, err
			}
			s.roles, s.haveRoles = roles, true
		case k == "customData":
			d, err := docArg(req.name, k, v)
			if err != nil {
				return s, err
			}
			s.customData = bson.Raw(d)
		case k == "mechanisms":
			arr, ok := v.ArrayOK()
			if !ok {
				return s, wrongType(req.name, k, v, "array")
			}
			vals, _ := arr.Values()
			if len(vals) == 0 {
				return s, errorf(ErrBadValue, "mechanisms field must not be empty")
			}
			for _, x := range vals {
				m, ok := x.StringValueOK()
				if !ok {
					return s, wrongType(req.name, k, x, "string")
				}
				if !slices.Contains(auth.Mechanisms, m) {
					return s, errorf(ErrBadValue, "Unknown auth mechanism '%s'", m)
				}
				if !slices.Contains(s.mechs, m) {
					s.mechs = append(s.mechs, m)
				}
			}
		case k == "digestPassword":
			digest, err := boolArg(req.name, k, v)
			if err != nil {
				return s, err
			}
			if !digest {
				return s, errorf(ErrBadValue, "Parsec digests passwords itself: digestPassword must be true")
			}
		case k == "authenticationRestrictions":
			if arr, ok := v.ArrayOK(); !ok || len(mustValues(arr)) > 0 {
				return s, errorf(ErrCommandNotSupported, "authenticationRestrictions are not supported by Parsec")
			}
		default:
			if !genericFields[k] {
				return s, unknownField(req.name, k)
			}
		}
	}
	return s, nil
}

// nameRef reads a user or role named by a string (of database db) or by
// {<key>: name, db}; ok is false unless both are strings.
func nameRef(x bsoncore.Value, key, db string) (name, in string, ok bool) {
	if s, isStr := x.StringValueOK(); isStr {
		return s, db, true
	}
	if d, isDoc := x.DocumentOK(); isDoc {
		name, ok1 := d.Lookup(key).StringValueOK()
		in, ok2 := d.Lookup("db").StringValueOK()
		return name, in, ok1 && ok2
	}
	return "", "", false
}

func mustValues(arr bsoncore.Array) []bsoncore.Value {
	vals, _ := arr.Values()
	return vals
}

// parseRoles reads a roles array: names (of req.db) or {role, db}, each a
// built-in role.
func parseRoles(req *request, field string, v bsoncore.Value) ([]auth.RoleRef, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, wrongType(req.name, field, v, "array")
	}
	var out []auth.RoleRef
	for _, x := range mustValues(arr) {
		if x.Type != bsoncore.TypeString && x.Type != bsoncore.TypeEmbeddedDocument {
			return nil, errorf(ErrBadValue, "Role names must be either strings or objects")
		}
		role, db, ok := nameRef(x, "role", req.db)
		if !ok {
			return nil, errorf(ErrBadValue, "Role must be a string or an object with string fields 'role' and 'db'")
		}
		r := auth.RoleRef{Role: role, DB: db}
		if !auth.IsBuiltinRole(r) {
			return nil, errorf(ErrRoleNotFound, "Could not find role: %s (Parsec has MongoDB's built-in roles only)", r)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// checkUserDB refuses users outside SCRAM: $external and local.
func checkUserDB(db string) error {
	switch db {
	case "$external":
		return errorf(ErrBadValue, "Parsec supports SCRAM users only: $external users (X.509, LDAP, Kerberos) are not available")
	case "local":
		return errorf(ErrBadValue, "Cannot create users in the local database")
	}
	return nil
}

// putUser stores u and tells connections that users changed.
func (e *Engine) putUser(u auth.User, create bool) error {
	if u.Roles == nil {
		u.Roles = []auth.RoleRef{}
	}
	raw, err := bson.Marshal(u)
	if err != nil {
		return err
	}
	err = e.store.PutUser(u.DB, u.User, raw, create)
	e.usersVersion.Add(1)
	return err
}

func newUUID() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return b
}

// existingUser reads user name of db, or fails with UserNotFound.
func (e *Engine) existingUser(db, name string) (auth.User, error) {
	u, ok, err := e.lookupUser(db, name)
	if err != nil {
		return u, err
	}
	if !ok {
		return u, errorf(ErrUserNotFound, "Could not find user \"%s\" for db \"%s\"", name, db)
	}
	return u, nil
}

// firstString reads the command's value as a non-empty string.
func firstString(req *request) (string, error) {
	el, _ := req.body.IndexErr(0)
	s, err := stringArg(req.name, req.name, el.Value())
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", errorf(ErrBadValue, "%s needs a user name", req.name)
	}
	return s, nil
}

// privilegesValue lists what roles allow as MongoDB's privilege documents:
// {resource: {db, collection: ""} or {cluster: true}, actions}.
func privilegesValue(roles []auth.RoleRef) bson.A {
	out := bson.A{}
	for _, p := range auth.Privileges(roles) {
		res := bson.D{{Key: "db", Value: p.Resource.DB}, {Key: "collection", Value: ""}}
		if p.Resource.Cluster {
			res = bson.D{{Key: "cluster", Value: true}}
		}
		out = append(out, bson.D{{Key: "resource", Value: res}, {Key: "actions", Value: p.Actions}})
	}
	return out
}

// forAllDBs reports whether a usersInfo value is {forAllDBs: ...}.
func forAllDBs(v bsoncore.Value) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	_, err := d.LookupErr("forAllDBs")
	return err == nil
}

func rolesValue(roles []auth.RoleRef) bson.A {
	out := bson.A{}
	for _, r := range roles {
		out = append(out, bson.D{{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}})
	}
	return out
}

// ensureRootUser makes admin.<name> exist with role root and password pwd.
func (e *Engine) ensureRootUser(name, pwd string) error {
	creds, err := auth.NewCredentials(name, pwd, nil)
	if err != nil {
		return err
	}
	root := auth.RoleRef{Role: "root", DB: "admin"}
	u, ok, err := e.lookupUser("admin", name)
	if err != nil {
		return err
	}
	if !ok {
		u = auth.User{ID: "admin." + name, UserID: newUUID(), User: name, DB: "admin"}
	}
	u.Credentials = creds
	if !slices.Contains(u.Roles, root) {
		u.Roles = append(u.Roles, root)
	}
	return e.putUser(u, !ok)
}
