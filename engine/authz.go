package engine

import (
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/auth"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// commandClasses is what each command needs from the caller's roles when
// access control is on (--auth). Every command in the table has an entry
// (a test checks it); customAction, aggregate, renameCollection and
// usersInfo refine theirs in needs.
var commandClasses = map[string]auth.Class{
	// before authentication
	"hello": auth.ClassNone, "isMaster": auth.ClassNone, "ping": auth.ClassNone,
	"buildInfo": auth.ClassNone, "saslStart": auth.ClassNone, "saslContinue": auth.ClassNone,
	"authenticate": auth.ClassNone, "logout": auth.ClassNone, "connectionStatus": auth.ClassNone,
	"whatsmyuri": auth.ClassNone, "endSessions": auth.ClassNone,

	// any authenticated user
	"listCommands": auth.ClassAuthenticated, "getLastRequestStatistics": auth.ClassAuthenticated,
	"listDatabases": auth.ClassAuthenticated, "killCursors": auth.ClassAuthenticated,
	"killSessions": auth.ClassAuthenticated, "rolesInfo": auth.ClassAuthenticated,
	"commitTransaction": auth.ClassAuthenticated, "abortTransaction": auth.ClassAuthenticated,
	"startSession": auth.ClassAuthenticated,

	"find": auth.ClassFind, "getMore": auth.ClassFind, "count": auth.ClassFind,
	"distinct": auth.ClassFind, "aggregate": auth.ClassFind, "explain": auth.ClassFind,

	"listCollections": auth.ClassCatalog, "listIndexes": auth.ClassCatalog,
	"collStats": auth.ClassCatalog, "dbStats": auth.ClassCatalog, "customAction": auth.ClassCatalog,
	"createSearchIndexes": auth.ClassCatalog, "updateSearchIndex": auth.ClassCatalog, "dropSearchIndex": auth.ClassCatalog,

	"insert": auth.ClassWrite, "update": auth.ClassWrite, "delete": auth.ClassWrite,
	"findAndModify": auth.ClassWrite,

	"create": auth.ClassDDL, "drop": auth.ClassDDL, "createIndexes": auth.ClassDDL,
	"dropIndexes": auth.ClassDDL, "renameCollection": auth.ClassDDL, "convertToCapped": auth.ClassDDL,

	"collMod": auth.ClassDBAdmin, "dropDatabase": auth.ClassDBAdmin, "validate": auth.ClassDBAdmin,

	"createUser": auth.ClassUserAdmin, "updateUser": auth.ClassUserAdmin, "dropUser": auth.ClassUserAdmin,
	"dropAllUsersFromDatabase": auth.ClassUserAdmin, "grantRolesToUser": auth.ClassUserAdmin,
	"revokeRolesFromUser": auth.ClassUserAdmin, "usersInfo": auth.ClassUserAdmin,
	"createRole": auth.ClassUserAdmin, "updateRole": auth.ClassUserAdmin, "dropRole": auth.ClassUserAdmin,
	"dropAllRolesFromDatabase": auth.ClassUserAdmin, "grantRolesToRole": auth.ClassUserAdmin,
	"revokeRolesFromRole": auth.ClassUserAdmin, "grantPrivilegesToRole": auth.ClassUserAdmin,
	"revokePrivilegesFromRole": auth.ClassUserAdmin,

	"serverStatus": auth.ClassClusterMonitor, "getLog": auth.ClassClusterMonitor,
	"getCmdLineOpts": auth.ClassClusterMonitor, "hostInfo": auth.ClassClusterMonitor,
	"getParameter": auth.ClassClusterMonitor, "replSetGetStatus": auth.ClassClusterMonitor,
	"replSetGetConfig": auth.ClassClusterMonitor, "getDefaultRWConcern": auth.ClassClusterMonitor,
	"listShards": auth.ClassClusterMonitor, "balancerStatus": auth.ClassClusterMonitor, "currentOp": auth.ClassClusterMonitor,
	"profile": auth.ClassDBAdmin,
	"fsync":   auth.ClassClusterAdmin, "fsyncUnlock": auth.ClassClusterAdmin, "killOp": auth.ClassClusterAdmin, "addNode": auth.ClassClusterAdmin, "removeNode": auth.ClassClusterAdmin,
	"balancerStart": auth.ClassClusterAdmin, "balancerStop": auth.ClassClusterAdmin, "addShard": auth.ClassClusterAdmin, "removeShard": auth.ClassClusterAdmin,

	"shardCollection": auth.ClassClusterAdmin, "enableSharding": auth.ClassClusterAdmin,
	"reshardCollection": auth.ClassClusterAdmin, "abortReshardCollection": auth.ClassClusterAdmin, "commitReshardCollection": auth.ClassClusterAdmin,
	"analyzeShardKey": auth.ClassClusterAdmin, "configureQueryAnalyzer": auth.ClassClusterAdmin,
	"killAllSessions": auth.ClassClusterAdmin, "configureFailPoint": auth.ClassClusterAdmin,
}

// need is one privilege a request needs: class on database db.
type need struct {
	class auth.Class
	db    string
}

// needs lists what req needs. Commands not in commandClasses need
// ClassClusterAdmin: a new command is closed until it is classified.
func needs(cmd command, req *request) []need {
	class, ok := commandClasses[cmd.name]
	if !ok {
		class = auth.ClassClusterAdmin
	}
	out := []need{{class, req.db}}
	switch cmd.name {
	case "explain":
		// An explained command needs what it needs when it runs.
		if v, err := req.body.LookupErr("explain"); err == nil {
			if d, ok := v.DocumentOK(); ok {
				if el, err := d.IndexErr(0); err == nil {
					if inner, ok := commandClasses[el.Key()]; ok && inner > out[0].class {
						out[0].class = inner
					}
				}
			}
		}
	case "aggregate":
		// $out and $merge write their target.
		if target, ok := aggWriteTarget(req); ok {
			out = append(out, need{auth.ClassWrite, target}, need{auth.ClassDDL, target})
			if bypassesValidation(req) {
				out = append(out, need{auth.ClassBypassValidation, target})
			}
		}
	case "insert", "update", "findAndModify":
		// Writing past the validator is the bypassDocumentValidation
		// action's (dbAdmin, dbOwner, restore, root), not readWrite's.
		if bypassesValidation(req) {
			out = append(out, need{auth.ClassBypassValidation, req.db})
		}
	case "customAction":
		// Creating is DDL, as create is; changing throughput or choosing
		// a shard key is dbAdmin's, as collMod and MongoDB's sharding
		// commands are.
		if v, err := req.body.LookupErr("customAction"); err == nil {
			s, _ := v.StringValueOK()
			switch {
			case strings.HasPrefix(s, "Update"):
				out[0].class = auth.ClassDBAdmin
			case strings.HasPrefix(s, "Create"):
				out[0].class = auth.ClassDDL
				for _, f := range []string{"offerThroughput", "autoScaleSettings", "shardKey"} {
					if _, err := req.body.LookupErr(f); err == nil {
						out[0].class = auth.ClassDBAdmin
					}
				}
			}
		}
	case "createUser", "updateUser", "grantRolesToUser":
		// Granting a role of another database needs userAdmin there, as
		// MongoDB's grantRole action does.
		out = append(out, grantNeeds(req)...)
	case "usersInfo":
		// Users of other databases need userAdmin there; every database's
		// needs it everywhere (userAdminAnyDatabase, root).
		out = append(out, usersInfoNeeds(req)...)
	case "renameCollection":
		out = out[:0]
		for _, field := range []string{"renameCollection", "to"} {
			if v, err := req.body.LookupErr(field); err == nil {
				if ns, ok := v.StringValueOK(); ok {
					db, _, _ := strings.Cut(ns, ".")
					out = append(out, need{auth.ClassDDL, db}, need{auth.ClassFind, db}, need{auth.ClassWrite, db})
				}
			}
		}
	}
	return out
}

// aggWriteTarget finds the database an aggregation's last stage, $out or
// $merge, writes into.
func aggWriteTarget(req *request) (string, bool) {
	v, err := req.body.LookupErr("pipeline")
	if err != nil {
		return "", false
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return "", false
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return "", false
	}
	stage, ok := vals[len(vals)-1].DocumentOK()
	if !ok {
		return "", false
	}
	el, err := stage.IndexErr(0)
	if err != nil {
		return "", false
	}
	switch el.Key() {
	case "$out":
		return targetDB(el.Value(), req.db), true
	case "$merge":
		sv := el.Value()
		if d, ok := sv.DocumentOK(); ok {
			if into, err := d.LookupErr("into"); err == nil {
				return targetDB(into, req.db), true
			}
		}
		return req.db, true
	}
	return "", false
}

// targetDB is the db of a {db, coll} target, or def for a bare name.
func targetDB(v bsoncore.Value, def string) string {
	if d, ok := v.DocumentOK(); ok {
		if dbv, err := d.LookupErr("db"); err == nil {
			if s, ok := dbv.StringValueOK(); ok {
				return s
			}
		}
	}
	return def
}

// authorize checks, with access control on, that the connection may run
// cmd; nil when it may.
func (c *conn) authorize(cmd command, req *request) *CommandError {
	ns := needs(cmd, req)
	if ns[0].class == auth.ClassNone {
		return nil
	}
	u := c.user()
	if u == nil {
		if c.localhostException(cmd, req) {
			return nil
		}
		return requiresAuthentication(req.name)
	}
	if cmd.name == "usersInfo" && asksForSelf(req, u) {
		return nil
	}
	for _, n := range ns {
		if !auth.Allowed(u.roles, n.class, n.db) {
			db := n.db
			if db == everyDatabase {
				db = req.db
			}
			return errorf(ErrUnauthorized, "not authorized on %s to execute command { %s: %s, $db: \"%s\" }", db, req.name, firstValueString(req), req.db)
		}
	}
	return nil
}

// localhostException lets a client on a loopback address create the first
// user, in the admin database, while no user exists (MongoDB's localhost
// exception).
func (c *conn) localhostException(cmd command, req *request) bool {
	if cmd.name != "createUser" || req.db != "admin" || !isLoopback(c.wc.RemoteAddr()) {
		return false
	}
	has, err := c.e.store.HasUsers()
	return err == nil && !has
}

// asksForSelf reports whether a usersInfo asks only about the connection's
// own user, which needs no privilege.
func asksForSelf(req *request, u *authUser) bool {
	v, err := req.body.LookupErr("usersInfo")
	if err != nil {
		return false
	}
	name, db, _ := nameRef(v, "user", req.db)
	return name == u.name && db == u.db
}

// firstValueString renders the command's first value for an error
// message.
func firstValueString(req *request) string {
	el, err := req.body.IndexErr(0)
	if err != nil {
		return "?"
	}
	v := el.Value()
	if s, ok := v.StringValueOK(); ok {
		return strconv.Quote(s)
	}
	if f, ok := numberFloat(v); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return v.String()
}

// everyDatabase stands for all databases in a need: only roles that span
// every database grant it (no database has this name).
const everyDatabase = "\x00every database"

// usersInfoNeeds are the databases a usersInfo asks about besides its own.
func usersInfoNeeds(req *request) []need {
	v, err := req.body.LookupErr("usersInfo")
	if err != nil {
		return nil
	}
	var out []need
	ref := func(x bsoncore.Value) {
		if forAllDBs(x) {
			out = append(out, need{auth.ClassUserAdmin, everyDatabase})
			return
		}
		if d, ok := x.DocumentOK(); ok {
			if db, ok := d.Lookup("db").StringValueOK(); ok && db != req.db {
				out = append(out, need{auth.ClassUserAdmin, db})
			}
		}
	}
	if arr, ok := v.ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, x := range vals {
			ref(x)
		}
	} else {
		ref(v)
	}
	return out
}

// grantNeeds are the databases of the roles a command grants.
func grantNeeds(req *request) []need {
	v, err := req.body.LookupErr("roles")
	if err != nil {
		return nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	var out []need
	vals, _ := arr.Values()
	for _, x := range vals {
		if d, ok := x.DocumentOK(); ok {
			if db, ok := d.Lookup("db").StringValueOK(); ok && db != req.db {
				out = append(out, need{auth.ClassUserAdmin, db})
			}
		}
	}
	return out
}

// requiresAuthentication is the refusal of command name to a connection
// that has not authenticated.
func requiresAuthentication(name string) *CommandError {
	return errorf(ErrUnauthorized, "Command %s requires authentication", name)
}
