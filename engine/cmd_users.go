package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
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

func (e *Engine) cmdCreateUser(_ context.Context, req *request) ([]byte, error) {
	if err := checkUserDB(req.db); err != nil {
		return nil, err
	}
	s, err := parseUserSpec(req)
	if err != nil {
		return nil, err
	}
	if s.pwd == nil {
		return nil, errorf(ErrBadValue, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	}
	if !s.haveRoles {
		return nil, errorf(ErrBadValue, "\"createUser\" command requires a \"roles\" array")
	}
	creds, err := auth.NewCredentials(s.name, *s.pwd, s.mechs)
	if err != nil {
		return nil, errorf(ErrBadValue, "%v", err)
	}
	u := auth.User{ID: req.db + "." + s.name, UserID: newUUID(), User: s.name, DB: req.db, Credentials: creds, Roles: s.roles}
	if s.customData != nil {
		u.CustomData = s.customData
	}
	if err := e.putUser(u, true); err != nil {
		if errors.Is(err, store.ErrExists) {
			return nil, errorf(ErrUserExists, "User \"%s@%s\" already exists", s.name, req.db)
		}
		return nil, err
	}
	return okReply()
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

func (e *Engine) cmdUpdateUser(_ context.Context, req *request) ([]byte, error) {
	s, err := parseUserSpec(req)
	if err != nil {
		return nil, err
	}
	if s.pwd == nil && !s.haveRoles && s.customData == nil && s.mechs == nil {
		return nil, errorf(ErrBadValue, "Must specify at least one field to update in updateUser")
	}
	u, err := e.existingUser(req.db, s.name)
	if err != nil {
		return nil, err
	}
	mechs := s.mechs
	switch {
	case s.pwd != nil:
		if mechs == nil {
			mechs = u.Credentials.Mechanisms()
		}
		if u.Credentials, err = auth.NewCredentials(s.name, *s.pwd, mechs); err != nil {
			return nil, errorf(ErrBadValue, "%v", err)
		}
	case mechs != nil:
		// Without a new password, mechanisms can only be dropped.
		have := u.Credentials.Mechanisms()
		for _, m := range mechs {
			if !slices.Contains(have, m) {
				return nil, errorf(ErrBadValue, "mechanisms field must be a subset of previously set mechanisms")
			}
		}
		if !slices.Contains(mechs, auth.SHA1) {
			u.Credentials.SHA1 = nil
		}
		if !slices.Contains(mechs, auth.SHA256) {
			u.Credentials.SHA256 = nil
		}
	}
	if s.haveRoles {
		u.Roles = s.roles
	}
	if s.customData != nil {
		u.CustomData = s.customData
	}
	if err := e.putUser(u, false); err != nil {
		return nil, err
	}
	return okReply()
}

func (e *Engine) cmdDropUser(_ context.Context, req *request) ([]byte, error) {
	name, err := firstString(req)
	if err != nil {
		return nil, err
	}
	n, err := e.store.DeleteUsers(req.db, name)
	e.usersVersion.Add(1)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errorf(ErrUserNotFound, "User '%s@%s' not found", name, req.db)
	}
	return okReply()
}

func (e *Engine) cmdDropAllUsersFromDatabase(_ context.Context, req *request) ([]byte, error) {
	n, err := e.store.DeleteUsers(req.db, "")
	e.usersVersion.Add(1)
	if err != nil {
		return nil, err
	}
	return okReply(bson.E{Key: "n", Value: int32(n)})
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

// cmdUserDefinedRoles refuses the commands that manage user-defined roles.
func (e *Engine) cmdUserDefinedRoles(_ context.Context, req *request) ([]byte, error) {
	return nil, errorf(ErrCommandNotSupported, "%s: user-defined roles are not supported by Parsec; grant MongoDB's built-in roles", req.name)
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
