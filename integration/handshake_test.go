package integration

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestServerCommands covers the handshake and the server-level commands:
// hello and its legacy names, buildInfo, ping, getParameter,
// getCmdLineOpts, getLog, hostInfo, whatsmyuri, connectionStatus,
// listCommands, unknown commands and the fields drivers add to commands.
func TestServerCommands(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")

	t.Run("hello", func(t *testing.T) {
		t.Parallel()
		before := time.Now()
		r := runOK(t, admin, bson.D{{Key: "hello", Value: 1}})
		if v := mustLookup(t, r, "isWritablePrimary"); v.Type != bson.TypeBoolean || !v.Boolean() {
			t.Errorf("isWritablePrimary = %v", v)
		}
		wantAbsent(t, r, "ismaster")
		checkHelloFields(t, r, before)
	})

	for _, name := range []string{"isMaster", "ismaster"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before := time.Now()
			r := runOK(t, client.Database("test"), bson.D{{Key: name, Value: 1}})
			if v := mustLookup(t, r, "ismaster"); v.Type != bson.TypeBoolean || !v.Boolean() {
				t.Errorf("ismaster = %v", v)
			}
			wantAbsent(t, r, "isWritablePrimary")
			checkHelloFields(t, r, before)
		})
	}

	t.Run("helloOk", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"hello", "isMaster", "ismaster"} {
			r := runOK(t, admin, bson.D{{Key: name, Value: 1}, {Key: "helloOk", Value: true}})
			if v := mustLookup(t, r, "helloOk"); v.Type != bson.TypeBoolean || !v.Boolean() {
				t.Errorf("%s: helloOk = %v", name, v)
			}
			// Any helloOk field is answered with helloOk: true.
			r = runOK(t, admin, bson.D{{Key: name, Value: 1}, {Key: "helloOk", Value: false}})
			if v := mustLookup(t, r, "helloOk"); !v.Boolean() {
				t.Errorf("%s with helloOk false: helloOk = %v", name, v)
			}
		}
	})

	t.Run("connectionId differs per connection", func(t *testing.T) {
		t.Parallel()
		other := newTestClient(t, s)
		a := intOf(t, mustLookup(t, runOK(t, admin, bson.D{{Key: "hello", Value: 1}}), "connectionId"))
		b := intOf(t, mustLookup(t, runOK(t, other.Database("admin"), bson.D{{Key: "hello", Value: 1}}), "connectionId"))
		if a <= 0 || b <= 0 || a == b {
			t.Errorf("connectionIds %d and %d", a, b)
		}
	})

	t.Run("compression negotiation", func(t *testing.T) {
		t.Parallel()
		// A dedicated client: negotiation changes what its connection may use.
		c := newTestClient(t, s)
		db := c.Database("admin")
		for _, tc := range []struct {
			offered bson.A
			want    []string // nil: no compression field
		}{
			{bson.A{"zstd", "snappy"}, []string{"zstd", "snappy"}},
			{bson.A{"snappy", "zstd"}, []string{"snappy", "zstd"}},
			{bson.A{"lz4", "zlib", "snappy"}, []string{"zlib", "snappy"}},
			{bson.A{"lz4"}, nil},
			{bson.A{}, nil},
		} {
			r := runOK(t, db, bson.D{{Key: "hello", Value: 1}, {Key: "compression", Value: tc.offered}})
			v, err := r.LookupErr("compression")
			if tc.want == nil {
				if err == nil {
					t.Errorf("offered %v: got compression %v, want none", tc.offered, v)
				}
				continue
			}
			if err != nil {
				t.Errorf("offered %v: no compression field in %v", tc.offered, r)
				continue
			}
			var got []string
			if err := v.Unmarshal(&got); err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("offered %v: compression %v (%v), want %v", tc.offered, got, err, tc.want)
			}
		}
		runFail(t, db, bson.D{{Key: "hello", Value: 1}, {Key: "compression", Value: "zstd"}}, 14, "TypeMismatch")
	})

	for _, comp := range []string{"zstd", "snappy", "zlib"} {
		t.Run("compressed traffic "+comp, func(t *testing.T) {
			t.Parallel()
			c := newTestClient(t, s, options.Client().SetCompressors([]string{comp}))
			ctx := testCtx(t)
			coll := c.Database(dbName(t)).Collection("c")
			var docs []any
			for i := range 200 {
				docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: "compressible compressible compressible"}})
			}
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			if got := idsIn(t, coll, bson.D{}); len(got) != 200 {
				t.Fatalf("read back %d documents", len(got))
			}
		})
	}

	t.Run("buildInfo", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"buildInfo", "buildinfo"} {
			for _, db := range []string{"admin", "test"} {
				r := runOK(t, client.Database(db), bson.D{{Key: name, Value: 1}})
				if v := mustLookup(t, r, "version").StringValue(); v != "7.0.0" {
					t.Errorf("version %q", v)
				}
				var arr []int32
				if err := mustLookup(t, r, "versionArray").Unmarshal(&arr); err != nil || !slices.Equal(arr, []int32{7, 0, 0, 0}) {
					t.Errorf("versionArray %v %v", arr, err)
				}
				if n := intOf(t, mustLookup(t, r, "maxBsonObjectSize")); n != 16777216 {
					t.Errorf("maxBsonObjectSize %d", n)
				}
				if n := intOf(t, mustLookup(t, r, "bits")); n != 64 {
					t.Errorf("bits %d", n)
				}
				mustLookup(t, r, "gitVersion")
				mustLookup(t, r, "modules")
			}
		}
	})

	t.Run("ping", func(t *testing.T) {
		t.Parallel()
		for _, db := range []string{"admin", "test", "any_db"} {
			r := runOK(t, client.Database(db), bson.D{{Key: "ping", Value: 1}})
			wantFields(t, r, "ok")
		}
		if err := client.Ping(testCtx(t), readpref.Primary()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("getParameter", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			cmd    bson.D
			want   []string // parameters expected in the reply
			absent []string
		}{
			{"named", bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}}, []string{"logLevel"}, []string{"featureCompatibilityVersion", "quiet"}},
			{"two named", bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}, {Key: "quiet", Value: 1}}, []string{"logLevel", "quiet"}, []string{"featureCompatibilityVersion"}},
			{"fcv", bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}}, []string{"featureCompatibilityVersion"}, []string{"logLevel"}},
			{"unknown ignored beside known", bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}, {Key: "noSuchParameter", Value: 1}}, []string{"logLevel"}, []string{"noSuchParameter"}},
			{"star", bson.D{{Key: "getParameter", Value: "*"}}, []string{"featureCompatibilityVersion", "logLevel", "quiet", "authenticationMechanisms", "cursorTimeoutMillis"}, nil},
			{"allParameters", bson.D{{Key: "getParameter", Value: bson.D{{Key: "allParameters", Value: true}}}}, []string{"featureCompatibilityVersion", "logLevel"}, nil},
			{"with generic fields", bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}, {Key: "comment", Value: "c"}}, []string{"logLevel"}, []string{"comment"}},
		} {
			r := runOK(t, admin, tc.cmd)
			for _, p := range tc.want {
				mustLookup(t, r, p)
			}
			for _, p := range tc.absent {
				wantAbsent(t, r, p)
			}
		}
		r := runOK(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}})
		if v := mustLookup(t, r, "featureCompatibilityVersion", "version").StringValue(); v != "7.0" {
			t.Errorf("featureCompatibilityVersion.version %q", v)
		}
		if n := intOf(t, mustLookup(t, runOK(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}}), "logLevel")); n != 0 {
			t.Errorf("logLevel %d", n)
		}

		for _, cmd := range []bson.D{
			{{Key: "getParameter", Value: 1}, {Key: "noSuchParameter", Value: 1}},
			{{Key: "getParameter", Value: 1}},
		} {
			ce := runFail(t, admin, cmd, 72, "InvalidOptions")
			if ce.Message != "no option found to get" {
				t.Errorf("errmsg %q", ce.Message)
			}
		}
		ce := runFail(t, client.Database("test"), bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}}, 13, "Unauthorized")
		if ce.Message != "getParameter may only be run against the admin database." {
			t.Errorf("errmsg %q", ce.Message)
		}
	})

	t.Run("getCmdLineOpts", func(t *testing.T) {
		t.Parallel()
		r := runOK(t, admin, bson.D{{Key: "getCmdLineOpts", Value: 1}})
		var argv []string
		if err := mustLookup(t, r, "argv").Unmarshal(&argv); err != nil || !slices.Equal(argv, []string{"parsec", "serve", "--listen", "127.0.0.1:0"}) {
			t.Errorf("argv %v %v", argv, err)
		}
		if got := mustLookup(t, r, "parsed", "dataDir").StringValue(); got != s.Dir {
			t.Errorf("parsed.dataDir %q, want %q", got, s.Dir)
		}
		mustLookup(t, r, "parsed", "listen")
		runFail(t, client.Database("test"), bson.D{{Key: "getCmdLineOpts", Value: 1}}, 13, "Unauthorized")
	})

	t.Run("getLog", func(t *testing.T) {
		t.Parallel()
		r := runOK(t, admin, bson.D{{Key: "getLog", Value: "*"}})
		var names []string
		if err := mustLookup(t, r, "names").Unmarshal(&names); err != nil ||
			!slices.Contains(names, "global") || !slices.Contains(names, "startupWarnings") {
			t.Errorf("names %v %v", names, err)
		}
		for _, name := range []string{"global", "startupWarnings"} {
			r := runOK(t, admin, bson.D{{Key: "getLog", Value: name}})
			var lines []string
			if err := mustLookup(t, r, "log").Unmarshal(&lines); err != nil {
				t.Errorf("%s: log %v", name, err)
			}
			if total := intOf(t, mustLookup(t, r, "totalLinesWritten")); total < int64(len(lines)) {
				t.Errorf("%s: totalLinesWritten %d < %d lines", name, total, len(lines))
			}
		}
		ce := runFail(t, admin, bson.D{{Key: "getLog", Value: "nope"}}, 96, "OperationFailed")
		if ce.Message != "no RamLog named: nope" {
			t.Errorf("errmsg %q", ce.Message)
		}
		runFail(t, admin, bson.D{{Key: "getLog", Value: 1}}, 14, "TypeMismatch")
		runFail(t, client.Database("test"), bson.D{{Key: "getLog", Value: "global"}}, 13, "Unauthorized")
	})

	t.Run("hostInfo", func(t *testing.T) {
		t.Parallel()
		r := runOK(t, admin, bson.D{{Key: "hostInfo", Value: 1}})
		if v := mustLookup(t, r, "system", "currentTime"); v.Type != bson.TypeDateTime {
			t.Errorf("system.currentTime %v", v)
		}
		if n := intOf(t, mustLookup(t, r, "system", "numCores")); n < 1 {
			t.Errorf("numCores %d", n)
		}
		if n := intOf(t, mustLookup(t, r, "system", "memSizeMB")); n <= 0 {
			t.Errorf("memSizeMB %d", n)
		}
		mustLookup(t, r, "system", "hostname")
		if v := mustLookup(t, r, "os", "type").StringValue(); v == "" {
			t.Error("empty os.type")
		}
	})

	t.Run("whatsmyuri", func(t *testing.T) {
		t.Parallel()
		r := runOK(t, admin, bson.D{{Key: "whatsmyuri", Value: 1}})
		you := mustLookup(t, r, "you").StringValue()
		host, port, err := net.SplitHostPort(you)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("you = %q (%v)", you, err)
		}
		_, serverPort, _ := net.SplitHostPort(s.Addr)
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || port == serverPort {
			t.Errorf("client port %q (server %s)", port, serverPort)
		}
	})

	t.Run("connectionStatus", func(t *testing.T) {
		t.Parallel()
		r := runOK(t, admin, bson.D{{Key: "connectionStatus", Value: 1}})
		for _, f := range []string{"authenticatedUsers", "authenticatedUserRoles"} {
			v := mustLookup(t, r, "authInfo", f)
			if vals, err := v.Array().Values(); v.Type != bson.TypeArray || err != nil || len(vals) != 0 {
				t.Errorf("authInfo.%s = %v", f, v)
			}
		}
		wantAbsent(t, r, "authInfo", "authenticatedUserPrivileges")
		r = runOK(t, admin, bson.D{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: true}})
		mustLookup(t, r, "authInfo", "authenticatedUserPrivileges")
		runFail(t, admin, bson.D{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: "yes"}}, 14, "TypeMismatch")
	})

	t.Run("listCommands", func(t *testing.T) {
		t.Parallel()
		r := runOK(t, admin, bson.D{{Key: "listCommands", Value: 1}})
		for _, name := range []string{
			"hello", "isMaster", "ismaster", "buildInfo", "buildinfo", "ping", "getParameter", "getCmdLineOpts",
			"getLog", "hostInfo", "whatsmyuri", "connectionStatus", "serverStatus", "listCommands", "endSessions",
			"killSessions", "killAllSessions", "create", "drop", "dropDatabase", "listDatabases", "listCollections",
			"renameCollection", "collStats", "dbStats", "insert", "find", "getMore", "killCursors", "delete",
		} {
			if mustLookup(t, r, "commands", name, "help").StringValue() == "" {
				t.Errorf("%s has no help", name)
			}
			mustLookup(t, r, "commands", name, "adminOnly")
		}
		if !mustLookup(t, r, "commands", "getParameter", "adminOnly").Boolean() {
			t.Error("getParameter should be adminOnly")
		}
		if mustLookup(t, r, "commands", "find", "adminOnly").Boolean() {
			t.Error("find should not be adminOnly")
		}
		wantAbsent(t, r, "commands", "atlasVersion")
	})

	t.Run("unknown commands", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ db, name string }{
			{"admin", "atlasVersion"},
			{"test", "atlasVersion"},
			{"test", "noSuchCommand"},
			{"admin", "frobnicate"},
			{"test", "Ping"}, // names are case-sensitive
		} {
			ce := runFail(t, client.Database(tc.db), bson.D{{Key: tc.name, Value: 1}}, 59, "CommandNotFound")
			if !strings.Contains(ce.Message, tc.name) {
				t.Errorf("errmsg %q does not name %s", ce.Message, tc.name)
			}
		}
	})

	t.Run("known commands Parsec does not serve", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ db, name, why string }{
			{"test", "mapReduce", "aggregation pipeline"},
			{"test", "mapreduce", "aggregation pipeline"},
			{"test", "compact", "background"},
			{"admin", "setParameter", "parsec serve --help"},
			{"admin", "shutdown", "SIGTERM"},
			{"admin", "moveChunk", "no chunks"},
		} {
			ce := runFail(t, client.Database(tc.db), bson.D{{Key: tc.name, Value: 1}}, 115, "CommandNotSupported")
			if !strings.Contains(ce.Message, tc.name+" is not supported by Parsec") || !strings.Contains(ce.Message, tc.why) {
				t.Errorf("%s: errmsg %q", tc.name, ce.Message)
			}
		}
		// they are not listed as commands the server has
		r := runOK(t, client.Database("admin"), bson.D{{Key: "listCommands", Value: 1}})
		wantAbsent(t, r, "commands", "mapReduce")
	})

	t.Run("driver-added fields", func(t *testing.T) {
		t.Parallel()
		db := dbName(t)
		runOK(t, client.Database(db), bson.D{{Key: "create", Value: "existing"}})
		clusterTime := bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: 1700000000, I: 1}}, {Key: "signature", Value: bson.D{
			{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)},
		}}}
		common := bson.D{
			{Key: "$clusterTime", Value: clusterTime},
			{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primaryPreferred"}}},
			{Key: "apiVersion", Value: "1"},
			{Key: "comment", Value: bson.D{{Key: "why", Value: "test"}}},
		}
		reads := bson.D{{Key: "readConcern", Value: bson.D{{Key: "level", Value: "local"}}}}
		writes := bson.D{{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 1000}}}}
		// Implicit sessions put an lsid beside txnNumber once the driver
		// has seen the server's session timeout, so these are retryable
		// writes: each gets its own transaction number, and the delete
		// removes one document (limit 0 may not be retried).
		retryable := func(n int64) bson.D { return bson.D{{Key: "txnNumber", Value: n}} }
		for _, tc := range []struct {
			db    string
			cmd   bson.D
			extra []bson.D
		}{
			{"admin", bson.D{{Key: "ping", Value: 1}}, nil},
			{"admin", bson.D{{Key: "hello", Value: 1}}, nil},
			{db, bson.D{{Key: "isMaster", Value: 1}}, nil},
			{db, bson.D{{Key: "buildInfo", Value: 1}}, nil},
			{"admin", bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}}, nil},
			{"admin", bson.D{{Key: "getCmdLineOpts", Value: 1}}, nil},
			{"admin", bson.D{{Key: "getLog", Value: "global"}}, nil},
			{db, bson.D{{Key: "hostInfo", Value: 1}}, nil},
			{db, bson.D{{Key: "whatsmyuri", Value: 1}}, nil},
			{db, bson.D{{Key: "connectionStatus", Value: 1}}, nil},
			{"admin", bson.D{{Key: "serverStatus", Value: 1}}, nil},
			{db, bson.D{{Key: "listCommands", Value: 1}}, nil},
			{"admin", bson.D{{Key: "listDatabases", Value: 1}}, []bson.D{reads}},
			{db, bson.D{{Key: "listCollections", Value: 1}}, []bson.D{reads}},
			{db, bson.D{{Key: "create", Value: "made"}}, []bson.D{writes}},
			{db, bson.D{{Key: "insert", Value: "made"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}}, []bson.D{writes, retryable(7)}},
			{db, bson.D{{Key: "find", Value: "made"}, {Key: "filter", Value: bson.D{}}}, []bson.D{reads}},
			{db, bson.D{{Key: "collStats", Value: "made"}}, []bson.D{reads}},
			{db, bson.D{{Key: "dbStats", Value: 1}}, []bson.D{reads}},
			{db, bson.D{{Key: "delete", Value: "made"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 1}}}}}, []bson.D{writes, retryable(8)}},
			{"admin", bson.D{{Key: "renameCollection", Value: db + ".made"}, {Key: "to", Value: db + ".renamed"}}, []bson.D{writes}},
			{db, bson.D{{Key: "drop", Value: "renamed"}}, []bson.D{writes}},
			{db, bson.D{{Key: "endSessions", Value: bson.A{}}}, nil},
			{db, bson.D{{Key: "dropDatabase", Value: 1}}, []bson.D{writes}},
		} {
			cmd := append(slices.Clone(tc.cmd), common...)
			for _, e := range tc.extra {
				cmd = append(cmd, e...)
			}
			runOK(t, client.Database(tc.db), cmd)
		}
	})

	t.Run("stable API client", func(t *testing.T) {
		t.Parallel()
		// A client that negotiates with hello (stable API) and adds
		// apiVersion, readConcern, writeConcern and $readPreference to
		// every command it sends.
		c := newTestClient(t, s, options.Client().
			SetServerAPIOptions(options.ServerAPI(options.ServerAPIVersion1)).
			SetReadConcern(readconcern.Majority()).
			SetWriteConcern(writeconcern.Majority()).
			SetReadPreference(readpref.SecondaryPreferred()).
			SetRetryWrites(true))
		ctx := testCtx(t)
		db := c.Database(dbName(t))
		coll := db.Collection("c")
		if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}}}); err != nil {
			t.Fatal(err)
		}
		if got := idsIn(t, coll, bson.D{}); !slices.Equal(got, intIDs(1, 2, 3)) {
			t.Fatalf("ids %v", got)
		}
		if res, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil || res.DeletedCount != 1 {
			t.Fatalf("delete: %v %v", res, err)
		}
		names, err := db.ListCollectionNames(ctx, bson.D{})
		if err != nil || !slices.Equal(names, []string{"c"}) {
			t.Fatalf("collections %v %v", names, err)
		}
		dbs, err := c.ListDatabaseNames(ctx, bson.D{{Key: "name", Value: db.Name()}})
		if err != nil || !slices.Equal(dbs, []string{db.Name()}) {
			t.Fatalf("databases %v %v", dbs, err)
		}
		if err := coll.Drop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// checkHelloFields checks what hello, isMaster and ismaster share.
func checkHelloFields(t *testing.T, r bson.Raw, before time.Time) {
	t.Helper()
	if v := mustLookup(t, r, "msg").StringValue(); v != "isdbgrid" {
		t.Errorf("msg %q", v)
	}
	for field, want := range map[string]int64{
		"maxBsonObjectSize":            16777216,
		"maxMessageSizeBytes":          48000000,
		"maxWriteBatchSize":            100000,
		"logicalSessionTimeoutMinutes": 30,
		"minWireVersion":               0,
	} {
		if got := intOf(t, mustLookup(t, r, field)); got != want {
			t.Errorf("%s = %d, want %d", field, got, want)
		}
	}
	if v := intOf(t, mustLookup(t, r, "maxWireVersion")); v < 21 {
		t.Errorf("maxWireVersion %d", v)
	}
	lt := mustLookup(t, r, "localTime")
	if lt.Type != bson.TypeDateTime {
		t.Fatalf("localTime is %s", lt.Type)
	}
	if got := lt.Time(); got.Before(before.Add(-time.Second)) || got.After(time.Now().Add(time.Second)) {
		t.Errorf("localTime %v not near now", got)
	}
	if id := intOf(t, mustLookup(t, r, "connectionId")); id <= 0 {
		t.Errorf("connectionId %d", id)
	}
	wantAbsent(t, r, "topologyVersion")
	wantAbsent(t, r, "helloOk")
	wantAbsent(t, r, "compression")
	wantAbsent(t, r, "setName")
}

// TestServerStatus checks serverStatus on a server of its own, so that its
// operation counters move only with this test's operations.
func TestServerStatus(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")
	ctx := testCtx(t)

	status := func() bson.Raw { return runOK(t, admin, bson.D{{Key: "serverStatus", Value: 1}}) }
	counter := func(r bson.Raw, name string) int64 { return intOf(t, mustLookup(t, r, "opcounters", name)) }

	r := status()
	if v := mustLookup(t, r, "process").StringValue(); v != "mongos" {
		t.Errorf("process %q", v)
	}
	if v := mustLookup(t, r, "version").StringValue(); v != "7.0.0" {
		t.Errorf("version %q", v)
	}
	if up := floatOf(t, mustLookup(t, r, "uptime")); up < 0 {
		t.Errorf("uptime %v", up)
	}
	if v := mustLookup(t, r, "localTime"); v.Type != bson.TypeDateTime {
		t.Errorf("localTime %v", v)
	}
	if cur := intOf(t, mustLookup(t, r, "connections", "current")); cur < 1 {
		t.Errorf("connections.current %d", cur)
	}
	if total, cur := intOf(t, mustLookup(t, r, "connections", "totalCreated")), intOf(t, mustLookup(t, r, "connections", "current")); total < cur {
		t.Errorf("connections.totalCreated %d < current %d", total, cur)
	}
	mustLookup(t, r, "connections", "available")
	if v := intOf(t, mustLookup(t, r, "mem", "resident")); v <= 0 {
		t.Errorf("mem.resident %d", v)
	}
	if v := intOf(t, mustLookup(t, r, "mem", "bits")); v != 64 {
		t.Errorf("mem.bits %d", v)
	}
	if v := mustLookup(t, r, "mem", "supported"); !v.Boolean() {
		t.Errorf("mem.supported %v", v)
	}

	// A second client adds a connection.
	other := newTestClient(t, s)
	if err := other.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if cur, was := intOf(t, mustLookup(t, status(), "connections", "current")), intOf(t, mustLookup(t, r, "connections", "current")); cur <= was {
		t.Errorf("connections.current %d after a new client, was %d", cur, was)
	}

	// Operation counters: inserts count documents, deletes statements,
	// finds and getMores commands.
	coll := client.Database("counters").Collection("c")
	before := status()
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}}}); err != nil {
		t.Fatal(err)
	}
	cur := runCursor(t, coll.Database(), bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}})
	runCursor(t, coll.Database(), bson.D{{Key: "getMore", Value: cur.Cursor.ID}, {Key: "collection", Value: "c"}})
	runWrite(t, coll.Database(), bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 1}},
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "limit", Value: 1}},
	}}})
	after := status()
	for name, want := range map[string]int64{"insert": 3, "query": 1, "getmore": 1, "delete": 2, "update": 0} {
		if d := counter(after, name) - counter(before, name); d != want {
			t.Errorf("opcounters.%s moved by %d, want %d", name, d, want)
		}
	}
	if d := counter(after, "command") - counter(before, "command"); d < 1 {
		t.Errorf("opcounters.command moved by %d (serverStatus itself counts)", d)
	}
}

// TestSessionCommands covers endSessions, killSessions and
// killAllSessions and the cursors they close. It has its own server:
// killAllSessions closes every session's cursors.
func TestSessionCommands(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	ctx := testCtx(t)
	db := client.Database("sessions")
	var docs []any
	for i := range 10 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	if _, err := db.Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}

	// openInSession opens a cursor in an explicit session and returns the
	// cursor id and the session's lsid document.
	openInSession := func() (int64, bson.Raw) {
		t.Helper()
		sess, err := client.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.EndSession(ctx) })
		var id int64
		err = mongo.WithSession(ctx, sess, func(sctx context.Context) error {
			c := runCursorCtx(t, sctx, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}})
			id = c.Cursor.ID
			return nil
		})
		if err != nil || id == 0 {
			t.Fatalf("open cursor: id %d, %v", id, err)
		}
		return id, sess.ID()
	}
	getMore := func(id int64) error {
		return db.RunCommand(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1}}).Err()
	}

	for _, name := range []string{"endSessions", "killSessions"} {
		t.Run(name, func(t *testing.T) {
			kept, _ := openInSession()
			id, lsid := openInSession()
			r := runOK(t, client.Database("admin"), bson.D{{Key: name, Value: bson.A{lsid}}})
			wantFields(t, r, "ok")
			wantCode(t, getMore(id), 43, "CursorNotFound")
			if err := getMore(kept); err != nil {
				t.Errorf("another session's cursor: %v", err)
			}
			// An empty list and unknown sessions are fine.
			runOK(t, db, bson.D{{Key: name, Value: bson.A{}}})
			runOK(t, db, bson.D{{Key: name, Value: bson.A{bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}}}})
			runFail(t, db, bson.D{{Key: name, Value: 1}}, 14, "TypeMismatch")
			runFail(t, db, bson.D{{Key: name, Value: bson.A{1}}}, 14, "TypeMismatch")
			runFail(t, db, bson.D{{Key: name, Value: bson.A{bson.D{}}}}, 40414, "Location40414")
		})
	}

	t.Run("killAllSessions", func(t *testing.T) {
		a, _ := openInSession()
		b, _ := openInSession()
		runOK(t, client.Database("admin"), bson.D{{Key: "killAllSessions", Value: bson.A{}}})
		wantCode(t, getMore(a), 43, "CursorNotFound")
		wantCode(t, getMore(b), 43, "CursorNotFound")
		runFail(t, db, bson.D{{Key: "killAllSessions", Value: 1}}, 14, "TypeMismatch")
	})
}
