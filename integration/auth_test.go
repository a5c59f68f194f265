package integration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Authentication and access control, through the Go driver: SCRAM with
// both mechanisms (and the driver's speculative first step), users and
// their built-in roles, the localhost exception, and a server without
// --auth.

const rootPassword = "r00t-pa55"

// userClient connects to s as user (authenticating against source) with
// mechanism ("" lets the driver choose).
func userClient(t testing.TB, s *Server, user, pwd, source, mechanism string) *mongo.Client {
	t.Helper()
	return newTestClient(t, s, options.Client().SetAuth(options.Credential{
		Username: user, Password: pwd, AuthSource: source, AuthMechanism: mechanism,
	}))
}

// wantAuthFailed checks that err is a failed authentication (18).
func wantAuthFailed(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("authentication with a wrong password or user succeeded")
	}
	if !strings.Contains(err.Error(), "AuthenticationFailed") && !strings.Contains(err.Error(), "Authentication failed") {
		t.Fatalf("want AuthenticationFailed, got %v", err)
	}
}

// wantUnauthorized checks that err is 13 Unauthorized with msg in its text.
func wantUnauthorized(t testing.TB, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatal("want Unauthorized (13), got success")
	}
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 13 || ce.Name != "Unauthorized" {
		t.Fatalf("want Unauthorized (13), got %T %v", err, err)
	}
	if !strings.Contains(ce.Message, msg) {
		t.Fatalf("want %q in the error, got %q", msg, ce.Message)
	}
}

func createUser(t testing.TB, db *mongo.Database, user, pwd string, roles bson.A) {
	t.Helper()
	runOK(t, db, bson.D{{Key: "createUser", Value: user}, {Key: "pwd", Value: pwd}, {Key: "roles", Value: roles}})
}

func TestAuth(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Auth: true, RootUser: "root", RootPassword: rootPassword})
	root := userClient(t, s, "root", rootPassword, "admin", "")

	t.Run("mechanisms", func(t *testing.T) {
		t.Parallel()
		ctx := testCtx(t)
		for _, mech := range []string{"", "SCRAM-SHA-256", "SCRAM-SHA-1"} {
			c := userClient(t, s, "root", rootPassword, "admin", mech)
			raw, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "connectionStatus", Value: 1}}).Raw()
			if err != nil {
				t.Fatalf("%q: %v", mech, err)
			}
			users := mustLookup(t, raw, "authInfo", "authenticatedUsers").Array().String()
			if !strings.Contains(users, `"root"`) || !strings.Contains(users, `"admin"`) {
				t.Fatalf("%q: authenticatedUsers %s", mech, users)
			}
			roles := mustLookup(t, raw, "authInfo", "authenticatedUserRoles").Array().String()
			if !strings.Contains(roles, `"role": "root"`) {
				t.Fatalf("%q: authenticatedUserRoles %s", mech, roles)
			}
		}
		for _, mech := range []string{"", "SCRAM-SHA-1"} {
			bad := userClient(t, s, "root", "wrong", "admin", mech)
			wantAuthFailed(t, bad.Ping(ctx, nil))
			nobody := userClient(t, s, "nobody", rootPassword, "admin", mech)
			wantAuthFailed(t, nobody.Ping(ctx, nil))
			elsewhere := userClient(t, s, "root", rootPassword, "test", mech)
			wantAuthFailed(t, elsewhere.Ping(ctx, nil))
		}
	})

	t.Run("hello lists the user's mechanisms", func(t *testing.T) {
		t.Parallel()
		db := root.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "createUser", Value: "sha1only"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-1"}}})
		raw := runOK(t, root.Database("admin"), bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: db.Name() + ".sha1only"}})
		if got := mustLookup(t, raw, "saslSupportedMechs").Array().String(); got != `["SCRAM-SHA-1"]` {
			t.Fatalf("saslSupportedMechs %s", got)
		}
		raw = runOK(t, root.Database("admin"), bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: db.Name() + ".nobody"}})
		wantAbsent(t, raw, "saslSupportedMechs")
		// The driver picks SCRAM-SHA-1 from the list and authenticates.
		c := userClient(t, s, "sha1only", "pw", db.Name(), "")
		if err := c.Database(db.Name()).RunCommand(testCtx(t), bson.D{{Key: "connectionStatus", Value: 1}}).Err(); err != nil {
			t.Fatal(err)
		}
		wantAuthFailed(t, userClient(t, s, "sha1only", "pw", db.Name(), "SCRAM-SHA-256").Ping(testCtx(t), nil))
	})

	t.Run("unauthenticated", func(t *testing.T) {
		t.Parallel()
		ctx := testCtx(t)
		anon := newTestClient(t, s)
		if err := anon.Ping(ctx, nil); err != nil {
			t.Fatalf("ping before authentication: %v", err)
		}
		runOK(t, anon.Database("admin"), bson.D{{Key: "buildInfo", Value: 1}})
		raw := runOK(t, anon.Database("admin"), bson.D{{Key: "connectionStatus", Value: 1}})
		if n := len(mustLookup(t, raw, "authInfo", "authenticatedUsers").Array().String()); n != 2 {
			t.Fatalf("authenticatedUsers before authentication: %v", raw)
		}
		_, err := anon.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "a", Value: 1}})
		wantUnauthorized(t, err, "Command insert requires authentication")
		err = anon.Database("test").Collection("c").FindOne(ctx, bson.D{}).Err()
		wantUnauthorized(t, err, "Command find requires authentication")
		_, err = anon.ListDatabaseNames(ctx, bson.D{})
		wantUnauthorized(t, err, "Command listDatabases requires authentication")
		// No user may be created once one exists: root does.
		err = anon.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{"root"}}}).Err()
		wantUnauthorized(t, err, "Command createUser requires authentication")
		// A known command Parsec does not serve asks for authentication
		// first too; an unknown one is unknown to anyone.
		err = anon.Database("test").RunCommand(ctx, bson.D{{Key: "mapReduce", Value: "c"}}).Err()
		wantUnauthorized(t, err, "Command mapReduce requires authentication")
		runFail(t, anon.Database("test"), bson.D{{Key: "noSuchCommand", Value: 1}}, 59, "CommandNotFound")
	})

	t.Run("roles", func(t *testing.T) {
		t.Parallel()
		ctx := testCtx(t)
		name := dbName(t)
		other := name + "_other"
		db := root.Database(name)
		if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		if _, err := root.Database(other).Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		createUser(t, db, "reader", "pw", bson.A{"read"})
		createUser(t, db, "writer", "pw", bson.A{"readWrite"})
		createUser(t, db, "dba", "pw", bson.A{"dbAdmin"})
		createUser(t, root.Database("admin"), name+"_monitor", "pw", bson.A{"clusterMonitor"})

		reader := userClient(t, s, "reader", "pw", name, "").Database(name).Collection("c")
		if n, err := reader.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
			t.Fatalf("reader count: %d %v", n, err)
		}
		_, err := reader.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
		wantUnauthorized(t, err, "not authorized on "+name+" to execute command { insert: ")
		_, err = reader.Database().Client().Database(other).Collection("c").CountDocuments(ctx, bson.D{})
		wantUnauthorized(t, err, "not authorized on "+other)
		names, err := reader.Database().Client().ListDatabaseNames(ctx, bson.D{})
		if err != nil || !slices.Equal(names, []string{name}) {
			t.Fatalf("reader's listDatabases: %v %v (want only %s)", names, err, name)
		}
		_, err = reader.Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: "copy"}}})
		wantUnauthorized(t, err, "not authorized on "+name)

		writer := userClient(t, s, "writer", "pw", name, "").Database(name)
		if _, err := writer.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
			t.Fatalf("writer insert: %v", err)
		}
		if _, err := writer.Collection("c").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
			t.Fatalf("writer createIndexes: %v", err)
		}
		if _, err := writer.Collection("c").Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: "copy"}}}); err != nil {
			t.Fatalf("writer $out: %v", err)
		}
		wantUnauthorized(t, writer.Drop(ctx), "not authorized on "+name+" to execute command { dropDatabase: ")
		wantUnauthorized(t, writer.RunCommand(ctx, bson.D{{Key: "createUser", Value: "y"}, {Key: "pwd", Value: "y"}, {Key: "roles", Value: bson.A{}}}).Err(), "createUser")
		_, err = writer.Client().Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
		wantUnauthorized(t, err, "not authorized on admin to execute command { serverStatus: ")

		dba := userClient(t, s, "dba", "pw", name, "").Database(name)
		if _, err := dba.ListCollectionNames(ctx, bson.D{}); err != nil {
			t.Fatalf("dbAdmin listCollections: %v", err)
		}
		err = dba.Collection("c").FindOne(ctx, bson.D{}).Err()
		wantUnauthorized(t, err, "find")

		monitor := userClient(t, s, name+"_monitor", "pw", "admin", "")
		if err := monitor.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Err(); err != nil {
			t.Fatalf("clusterMonitor serverStatus: %v", err)
		}
		all, err := monitor.ListDatabaseNames(ctx, bson.D{})
		if err != nil || !slices.Contains(all, name) || !slices.Contains(all, other) {
			t.Fatalf("clusterMonitor's listDatabases: %v %v", all, err)
		}
		_, err = monitor.Database(name).Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
		wantUnauthorized(t, err, "insert")
	})

	t.Run("role changes apply to open connections", func(t *testing.T) {
		t.Parallel()
		ctx := testCtx(t)
		name := dbName(t)
		db := root.Database(name)
		createUser(t, db, "u", "pw", bson.A{"read"})
		u := userClient(t, s, "u", "pw", name, "").Database(name).Collection("c")
		_, err := u.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
		wantUnauthorized(t, err, "insert")
		runOK(t, db, bson.D{{Key: "grantRolesToUser", Value: "u"}, {Key: "roles", Value: bson.A{"readWrite"}}})
		if _, err := u.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatalf("insert after grantRolesToUser: %v", err)
		}
		runOK(t, db, bson.D{{Key: "revokeRolesFromUser", Value: "u"}, {Key: "roles", Value: bson.A{"readWrite"}}})
		_, err = u.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
		wantUnauthorized(t, err, "insert")
		runOK(t, db, bson.D{{Key: "dropUser", Value: "u"}})
		_, err = u.CountDocuments(ctx, bson.D{})
		wantUnauthorized(t, err, "requires authentication")
	})

	t.Run("updateUser", func(t *testing.T) {
		t.Parallel()
		ctx := testCtx(t)
		name := dbName(t)
		db := root.Database(name)
		createUser(t, db, "u", "old", bson.A{"read"})
		runOK(t, db, bson.D{{Key: "updateUser", Value: "u"}, {Key: "pwd", Value: "new"}, {Key: "customData", Value: bson.D{{Key: "team", Value: "x"}}}})
		wantAuthFailed(t, userClient(t, s, "u", "old", name, "").Ping(ctx, nil))
		if err := userClient(t, s, "u", "new", name, "SCRAM-SHA-1").Ping(ctx, nil); err != nil {
			t.Fatalf("new password: %v", err)
		}
		runOK(t, db, bson.D{{Key: "updateUser", Value: "u"}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-256"}}})
		wantAuthFailed(t, userClient(t, s, "u", "new", name, "SCRAM-SHA-1").Ping(ctx, nil))
		raw := runOK(t, db, bson.D{{Key: "usersInfo", Value: "u"}})
		users := mustLookup(t, raw, "users").Array().String()
		for _, want := range []string{`"team": "x"`, `"mechanisms": ["SCRAM-SHA-256"]`, `"_id": "` + name + `.u"`} {
			if !strings.Contains(users, want) {
				t.Fatalf("usersInfo lacks %s: %s", want, users)
			}
		}
		runFail(t, db, bson.D{{Key: "updateUser", Value: "u"}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "updateUser", Value: "nobody"}, {Key: "pwd", Value: "x"}}, 11, "UserNotFound")
		runFail(t, db, bson.D{{Key: "updateUser", Value: "u"}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-1"}}}, 2, "BadValue")
	})

	t.Run("user commands", func(t *testing.T) {
		t.Parallel()
		name := dbName(t)
		db := root.Database(name)
		createUser(t, db, "a", "pw", bson.A{"read", bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: name + "_x"}}})
		createUser(t, db, "b", "pw", bson.A{})
		runFail(t, db, bson.D{{Key: "createUser", Value: "a"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}}, 51003, "Location51003")
		runFail(t, db, bson.D{{Key: "createUser", Value: "c"}, {Key: "roles", Value: bson.A{}}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "createUser", Value: "c"}, {Key: "pwd", Value: "pw"}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "createUser", Value: "c"}, {Key: "pwd", Value: ""}, {Key: "roles", Value: bson.A{}}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "createUser", Value: "c"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"nosuchrole"}}}, 31, "RoleNotFound")
		runFail(t, db, bson.D{{Key: "createUser", Value: "c"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}}, 31, "RoleNotFound") // root lives in admin
		runFail(t, db, bson.D{{Key: "createUser", Value: "c"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}, {Key: "mechanisms", Value: bson.A{"PLAIN"}}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "createUser", Value: 1}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}}, 14, "TypeMismatch")
		runFail(t, db, bson.D{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}}, 115, "CommandNotSupported")

		raw := runOK(t, db, bson.D{{Key: "usersInfo", Value: 1}})
		users := mustLookup(t, raw, "users").Array()
		vals, _ := users.Values()
		if len(vals) != 2 {
			t.Fatalf("usersInfo: 1 lists %d users: %v", len(vals), users)
		}
		if got := vals[0].Document().Lookup("user").StringValue(); got != "a" {
			t.Fatalf("first user %q", got)
		}
		wantAbsent(t, vals[0].Document(), "credentials")
		raw = runOK(t, db, bson.D{{Key: "usersInfo", Value: bson.D{{Key: "user", Value: "a"}, {Key: "db", Value: name}}}, {Key: "showCredentials", Value: true}})
		mustLookup(t, raw, "users", "0", "credentials", "SCRAM-SHA-256", "storedKey")
		if it := intOf(t, mustLookup(t, raw, "users", "0", "credentials", "SCRAM-SHA-1", "iterationCount")); it != 10000 {
			t.Fatalf("SCRAM-SHA-1 iterationCount %d", it)
		}
		raw = runOK(t, db, bson.D{{Key: "usersInfo", Value: 1}, {Key: "filter", Value: bson.D{{Key: "roles.role", Value: "readWrite"}}}})
		if got := mustLookup(t, raw, "users").Array().String(); !strings.Contains(got, `"user": "a"`) || strings.Contains(got, `"user": "b"`) {
			t.Fatalf("usersInfo with filter: %s", got)
		}
		raw = runOK(t, root.Database("admin"), bson.D{{Key: "usersInfo", Value: bson.D{{Key: "forAllDBs", Value: true}}}})
		all := mustLookup(t, raw, "users").Array().String()
		if !strings.Contains(all, `"_id": "admin.root"`) || !strings.Contains(all, `"_id": "`+name+`.b"`) {
			t.Fatalf("forAllDBs: %s", all)
		}
		raw = runOK(t, db, bson.D{{Key: "rolesInfo", Value: "readWrite"}})
		if got := mustLookup(t, raw, "roles", "0", "isBuiltin"); !got.Boolean() {
			t.Fatalf("rolesInfo readWrite: %v", raw)
		}
		runFail(t, db, bson.D{{Key: "dropUser", Value: "nobody"}}, 11, "UserNotFound")
		runOK(t, db, bson.D{{Key: "dropUser", Value: "a"}})
		raw = runOK(t, db, bson.D{{Key: "dropAllUsersFromDatabase", Value: 1}})
		if n := intOf(t, mustLookup(t, raw, "n")); n != 1 {
			t.Fatalf("dropAllUsersFromDatabase n = %d, want 1", n)
		}
	})

	t.Run("privileges", func(t *testing.T) {
		t.Parallel()
		name := dbName(t)
		createUser(t, root.Database(name), "reader", "pw", bson.A{"read"})
		reader := userClient(t, s, "reader", "pw", name, "").Database(name)
		raw := runOK(t, reader, bson.D{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: true}})
		privs := mustLookup(t, raw, "authInfo", "authenticatedUserPrivileges").Array().String()
		for _, want := range []string{`"db": "` + name + `"`, `"find"`, `"listCollections"`} {
			if !strings.Contains(privs, want) {
				t.Errorf("reader's privileges lack %s: %s", want, privs)
			}
		}
		if strings.Contains(privs, `"insert"`) || strings.Contains(privs, `"cluster"`) {
			t.Errorf("reader's privileges grant more than read: %s", privs)
		}
		raw = runOK(t, root.Database("admin"), bson.D{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: true}})
		privs = mustLookup(t, raw, "authInfo", "authenticatedUserPrivileges").Array().String()
		if !strings.Contains(privs, `"cluster": true`) || !strings.Contains(privs, `"db": ""`) {
			t.Errorf("root's privileges: %s", privs)
		}
		raw = runOK(t, root.Database(name), bson.D{{Key: "usersInfo", Value: "reader"}, {Key: "showPrivileges", Value: true}})
		if got := mustLookup(t, raw, "users", "0", "inheritedPrivileges").Array().String(); !strings.Contains(got, `"find"`) {
			t.Errorf("usersInfo inheritedPrivileges: %s", got)
		}
		raw = runOK(t, root.Database(name), bson.D{{Key: "rolesInfo", Value: "readWrite"}, {Key: "showPrivileges", Value: true}})
		if got := mustLookup(t, raw, "roles", "0", "privileges").Array().String(); !strings.Contains(got, `"insert"`) {
			t.Errorf("rolesInfo privileges: %s", got)
		}
	})

	t.Run("own user without userAdmin", func(t *testing.T) {
		t.Parallel()
		name := dbName(t)
		createUser(t, root.Database(name), "self", "pw", bson.A{"read"})
		self := userClient(t, s, "self", "pw", name, "").Database(name)
		raw := runOK(t, self, bson.D{{Key: "usersInfo", Value: "self"}})
		if got := mustLookup(t, raw, "users", "0", "user").StringValue(); got != "self" {
			t.Fatalf("usersInfo self: %v", raw)
		}
		wantUnauthorized(t, self.RunCommand(testCtx(t), bson.D{{Key: "usersInfo", Value: 1}}).Err(), "usersInfo")

		// A userAdmin of one database sees no other database's users.
		createUser(t, root.Database(name), "ua", "pw", bson.A{"userAdmin"})
		ua := userClient(t, s, "ua", "pw", name, "").Database(name)
		runOK(t, ua, bson.D{{Key: "usersInfo", Value: "self"}})
		wantUnauthorized(t, ua.RunCommand(testCtx(t), bson.D{{Key: "usersInfo", Value: bson.D{{Key: "user", Value: "root"}, {Key: "db", Value: "admin"}}}}).Err(), "not authorized on admin")
		wantUnauthorized(t, ua.Client().Database("admin").RunCommand(testCtx(t), bson.D{{Key: "usersInfo", Value: bson.D{{Key: "forAllDBs", Value: true}}}}).Err(), "usersInfo")
		// ... nor grants roles of other databases: no way up to root.
		rootRole := bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}
		wantUnauthorized(t, ua.RunCommand(testCtx(t), bson.D{{Key: "createUser", Value: "up"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: rootRole}}).Err(), "not authorized on admin")
		wantUnauthorized(t, ua.RunCommand(testCtx(t), bson.D{{Key: "grantRolesToUser", Value: "ua"}, {Key: "roles", Value: rootRole}}).Err(), "not authorized on admin")
		runOK(t, ua, bson.D{{Key: "createUser", Value: "local"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"read"}}})
	})
}

// TestAuthLocalhostException: with access control on and no user yet, a
// client on localhost may create the first user, in admin only, and
// nothing else.
func TestAuthLocalhostException(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Auth: true})
	ctx := testCtx(t)
	anon := newTestClient(t, s)
	_, err := anon.Database("test").Collection("c").InsertOne(ctx, bson.D{})
	wantUnauthorized(t, err, "requires authentication")
	err = anon.Database("test").RunCommand(ctx, bson.D{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}).Err()
	wantUnauthorized(t, err, "requires authentication")
	createUser(t, anon.Database("admin"), "first", "pw", bson.A{"root"})
	err = anon.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: "second"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}}).Err()
	wantUnauthorized(t, err, "requires authentication")
	first := userClient(t, s, "first", "pw", "admin", "")
	if _, err := first.Database("test").Collection("c").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatalf("first user's insert: %v", err)
	}
}

// TestAuthWithoutAccessControl: without --auth every connection may do
// everything, users still authenticate, and wrong credentials still fail;
// users survive a restart.
func TestAuthWithoutAccessControl(t *testing.T) {
	dir := t.TempDir()
	s, err := Launch(ServerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	anon, err := mongo.Connect(optionsFor(s))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Database("test").Collection("c").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatalf("insert without --auth: %v", err)
	}
	createUser(t, anon.Database("test"), "app", "pw", bson.A{"readWrite"})
	_ = anon.Disconnect(ctx)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	s = StartServer(t, ServerOptions{Dir: dir})
	app := userClient(t, s, "app", "pw", "test", "")
	if n, err := app.Database("test").Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("user after restart: %d %v", n, err)
	}
	wantAuthFailed(t, userClient(t, s, "app", "nope", "test", "").Ping(ctx, nil))
	wantAuthFailed(t, userClient(t, s, "ghost", "pw", "test", "").Ping(ctx, nil))
}

// TestAuthExplain: explaining a command needs what running it needs.
func TestAuthExplain(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Auth: true, RootUser: "root", RootPassword: rootPassword})
	root := userClient(t, s, "root", rootPassword, "admin", "")
	createUser(t, root.Database("shop"), "reader", "pw", bson.A{"read"})
	reader := userClient(t, s, "reader", "pw", "shop", "").Database("shop")
	runOK(t, reader, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{}}}}})
	err := reader.RunCommand(testCtx(t), bson.D{{Key: "explain", Value: bson.D{
		{Key: "update", Value: "c"},
		{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}}}},
	}}}).Err()
	wantUnauthorized(t, err, "not authorized on shop to execute command { explain: ")
}

// TestAuthCursorOwner: with access control on, only the user that opened a
// cursor may use or kill it.
func TestAuthCursorOwner(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Auth: true, RootUser: "root", RootPassword: rootPassword})
	root := userClient(t, s, "root", rootPassword, "admin", "")
	ctx := testCtx(t)
	if _, err := root.Database("shop").Collection("c").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}}}); err != nil {
		t.Fatal(err)
	}
	createUser(t, root.Database("shop"), "alice", "pw", bson.A{"read"})
	createUser(t, root.Database("shop"), "bob", "pw", bson.A{"read"})
	alice := userClient(t, s, "alice", "pw", "shop", "").Database("shop")
	bob := userClient(t, s, "bob", "pw", "shop", "").Database("shop")
	raw := runOK(t, alice, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}})
	id := mustLookup(t, raw, "cursor", "id").Int64()
	if id == 0 {
		t.Fatal("find with batchSize 1 left no cursor open")
	}
	runFail(t, bob, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}, 13, "Unauthorized")
	raw = runOK(t, bob, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}})
	killed, _ := mustLookup(t, raw, "cursorsKilled").Array().Values()
	notFound, _ := mustLookup(t, raw, "cursorsNotFound").Array().Values()
	if len(killed) != 0 || len(notFound) != 1 || notFound[0].Int64() != id {
		t.Fatalf("bob's killCursors of alice's cursor: %v", raw)
	}
	raw = runOK(t, alice, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1}})
	if next, _ := mustLookup(t, raw, "cursor", "nextBatch").Array().Values(); len(next) != 1 {
		t.Fatalf("alice's getMore after bob's attempts: %v", raw)
	}
}
