package integration

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// collInfo is one listCollections entry.
type collInfo struct {
	Name    string   `bson:"name"`
	Type    string   `bson:"type"`
	Options bson.Raw `bson:"options"`
	Info    struct {
		ReadOnly bool          `bson:"readOnly"`
		UUID     bson.RawValue `bson:"uuid"`
	} `bson:"info"`
	IDIndex bson.Raw `bson:"idIndex"`
}

// listColls runs listCollections with extra fields and returns the raw
// entries; the reply must be a finished cursor on db.$cmd.listCollections.
func listColls(t testing.TB, db *mongo.Database, extra ...bson.E) []bson.Raw {
	t.Helper()
	c := runCursor(t, db, append(bson.D{{Key: "listCollections", Value: 1}}, extra...))
	if c.Cursor.ID != 0 || c.Cursor.NS != db.Name()+".$cmd.listCollections" {
		t.Fatalf("listCollections cursor id %d ns %q", c.Cursor.ID, c.Cursor.NS)
	}
	return c.Cursor.FirstBatch
}

// collInfos decodes listCollections entries by name.
func collInfos(t testing.TB, db *mongo.Database, extra ...bson.E) map[string]collInfo {
	t.Helper()
	out := map[string]collInfo{}
	for _, raw := range listColls(t, db, extra...) {
		var ci collInfo
		if err := bson.Unmarshal(raw, &ci); err != nil {
			t.Fatalf("decode %v: %v", raw, err)
		}
		out[ci.Name] = ci
	}
	return out
}

func collNames(t testing.TB, db *mongo.Database, extra ...bson.E) []string {
	t.Helper()
	var names []string
	for _, raw := range listColls(t, db, extra...) {
		names = append(names, mustLookup(t, raw, "name").StringValue())
	}
	slices.Sort(names)
	return names
}

// uuidOf returns a collection's UUID, checking it is binary subtype 4.
func uuidOf(t testing.TB, ci collInfo) []byte {
	t.Helper()
	if ci.Info.UUID.Type != bson.TypeBinary {
		t.Fatalf("%s: info.uuid is %s", ci.Name, ci.Info.UUID.Type)
	}
	sub, data := ci.Info.UUID.Binary()
	if sub != bson.TypeBinaryUUID || len(data) != 16 {
		t.Fatalf("%s: info.uuid subtype %d, %d bytes", ci.Name, sub, len(data))
	}
	return data
}

// TestCatalog covers create, drop, dropDatabase, listDatabases,
// listCollections, renameCollection, collStats and dbStats.
func TestCatalog(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")

	t.Run("create and listCollections", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		r := runOK(t, db, bson.D{{Key: "create", Value: "plain"}})
		wantFields(t, r, "ok")
		runOK(t, db, bson.D{{Key: "create", Value: "strict"}, {Key: "validationLevel", Value: "strict"}, {Key: "validationAction", Value: "warn"}})
		infos := collInfos(t, db)
		if len(infos) != 2 {
			t.Fatalf("collections %v", infos)
		}
		plain := infos["plain"]
		if plain.Type != "collection" || plain.Info.ReadOnly {
			t.Errorf("plain: %+v", plain)
		}
		if len(plain.Options) != 5 {
			t.Errorf("plain.options %v, want {}", plain.Options)
		}
		want, _ := bson.Marshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}})
		if !bytes.Equal(plain.IDIndex, want) {
			t.Errorf("idIndex %v", plain.IDIndex)
		}
		strict := infos["strict"]
		if v := mustLookup(t, strict.Options, "validationLevel").StringValue(); v != "strict" {
			t.Errorf("options.validationLevel %q", v)
		}
		if v := mustLookup(t, strict.Options, "validationAction").StringValue(); v != "warn" {
			t.Errorf("options.validationAction %q", v)
		}
		a, b := uuidOf(t, plain), uuidOf(t, strict)
		if bytes.Equal(a, b) {
			t.Error("two collections share a UUID")
		}
		if again := uuidOf(t, collInfos(t, db)["plain"]); !bytes.Equal(a, again) {
			t.Error("UUID changed between calls")
		}
	})

	t.Run("create accepted options", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		for i, opts := range []bson.D{
			{{Key: "capped", Value: false}},
			{{Key: "capped", Value: true}, {Key: "size", Value: 1024}, {Key: "max", Value: int64(10)}},
			{{Key: "autoIndexId", Value: true}},
			{{Key: "idIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}}}},
			{{Key: "storageEngine", Value: bson.D{}}},
			{{Key: "validator", Value: bson.D{}}},
			{{Key: "validationLevel", Value: "off"}},
			{{Key: "validationAction", Value: "error"}},
			{{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}, {Key: "comment", Value: "x"}},
		} {
			name := "c" + string(rune('a'+i))
			runOK(t, db, append(bson.D{{Key: "create", Value: name}}, opts...))
		}
		if got := collNames(t, db); len(got) != 9 {
			t.Errorf("collections %v", got)
		}
	})

	t.Run("create errors", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		for _, tc := range []struct {
			name string
			opts bson.D
			code int32
			cn   string
			msg  string
		}{
			{"capped type", bson.D{{Key: "capped", Value: "yes"}}, 14, "TypeMismatch", ""},
			{"size type", bson.D{{Key: "size", Value: "big"}}, 14, "TypeMismatch", ""},
			{"max type", bson.D{{Key: "max", Value: bson.D{}}}, 14, "TypeMismatch", ""},
			{"validator type", bson.D{{Key: "validator", Value: 1}}, 14, "TypeMismatch", ""},
			{"validationLevel type", bson.D{{Key: "validationLevel", Value: 5}}, 14, "TypeMismatch", ""},
			{"validationAction type", bson.D{{Key: "validationAction", Value: true}}, 14, "TypeMismatch", ""},
			{"idIndex type", bson.D{{Key: "idIndex", Value: "x"}}, 14, "TypeMismatch", ""},
			{"storageEngine type", bson.D{{Key: "storageEngine", Value: 1}}, 14, "TypeMismatch", ""},
			{"validationLevel value", bson.D{{Key: "validationLevel", Value: "sometimes"}}, 2, "BadValue", ""},
			{"unknown option", bson.D{{Key: "bogus", Value: 1}}, 40415, "Location40415", "BSON field 'create.bogus' is an unknown field."},
			{"capped without size", bson.D{{Key: "capped", Value: true}}, 72, "InvalidOptions", "the 'size' field is required when 'capped' is true"},
			{"size without capped", bson.D{{Key: "capped", Value: false}, {Key: "size", Value: 1024}, {Key: "max", Value: int64(10)}}, 72, "InvalidOptions", "the 'capped' field needs to be true when either the 'size' or 'max' fields are present"},
			{"view pipeline without viewOn", bson.D{{Key: "pipeline", Value: bson.A{}}}, 72, "InvalidOptions", "'pipeline' requires 'viewOn' to also be specified"},
			{"collation strength", bson.D{{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: 9}}}}, 9, "FailedToParse", "Field 'strength' must be an integer 1 through 5. Got: 9"},
			{"timeseries", bson.D{{Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}}, 115, "CommandNotSupported", ""},
			{"clustered", bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}}}, 115, "CommandNotSupported", ""},
		} {
			ce := runFail(t, db, append(bson.D{{Key: "create", Value: "c"}}, tc.opts...), tc.code, tc.cn)
			if tc.msg != "" && ce.Message != tc.msg {
				t.Errorf("%s: errmsg %q, want %q", tc.name, ce.Message, tc.msg)
			}
			if tc.code == 115 && ce.Message == "" {
				t.Errorf("%s: no explanation", tc.name)
			}
		}
		if got := collNames(t, db); len(got) != 0 {
			t.Errorf("failed creates left collections %v", got)
		}
	})

	t.Run("create existing", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "create", Value: "c"}})
		uuid := uuidOf(t, collInfos(t, db)["c"])
		// MongoDB 7.0: the same options again succeed and change nothing.
		runOK(t, db, bson.D{{Key: "create", Value: "c"}})
		if again := uuidOf(t, collInfos(t, db)["c"]); !bytes.Equal(uuid, again) {
			t.Error("create of an existing collection replaced it")
		}
		// Other options conflict.
		ce := runFail(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "validationLevel", Value: "strict"}}, 48, "NamespaceExists")
		if !strings.Contains(ce.Message, db.Name()+".c already exists, but with different options") {
			t.Errorf("errmsg %q", ce.Message)
		}
		runOK(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "validationLevel", Value: "strict"}})
		runOK(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "validationLevel", Value: "strict"}})
		runFail(t, db, bson.D{{Key: "create", Value: "v"}}, 48, "NamespaceExists")
		runFail(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "validationLevel", Value: "moderate"}}, 48, "NamespaceExists")
		// A collection created by an insert has default options.
		if _, err := db.Collection("implicit").InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		runOK(t, db, bson.D{{Key: "create", Value: "implicit"}})
		runFail(t, db, bson.D{{Key: "create", Value: "implicit"}, {Key: "validationAction", Value: "warn"}}, 48, "NamespaceExists")
	})

	t.Run("invalid names", func(t *testing.T) {
		t.Parallel()
		base := dbName(t)
		longColl := strings.Repeat("x", 255-len(base)-1) // "db.coll" is exactly 255 bytes
		for _, tc := range []struct {
			name     string
			db, coll string
			ok       bool
		}{
			{"empty collection", base, "", false},
			{"dollar in collection", base, "a$b", false},
			{"leading dot", base, ".a", false},
			{"system collection", base, "system.foo", false},
			{"namespace too long", base, longColl + "y", false},
			{"namespace at limit", base, longColl, true},
			{"dot in db", "bad.db", "c", false},
			{"space in db", "bad db", "c", false},
			{"dollar in db", "bad$db", "c", false},
			{"slash in db", "bad/db", "c", false},
			{"db too long", strings.Repeat("d", 64), "c", false},
		} {
			db := client.Database(tc.db)
			ctx := testCtx(t)
			for _, cmd := range []bson.D{
				{{Key: "create", Value: tc.coll}},
				{{Key: "insert", Value: tc.coll}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}},
			} {
				if tc.ok {
					if err := db.RunCommand(ctx, cmd).Err(); err != nil {
						t.Errorf("%s: %s: %v", tc.name, cmdName(cmd), err)
					}
					continue
				}
				ce := runFail(t, db, cmd, 73, "InvalidNamespace")
				if ce.Message == "" {
					t.Errorf("%s: empty errmsg", tc.name)
				}
			}
			if !tc.ok {
				// the collection API reports the same error
				_, err := db.Collection(tc.coll).InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
				wantCode(t, err, 73, "InvalidNamespace")
			}
		}
		if got := collNames(t, client.Database(base)); !slices.Equal(got, []string{longColl}) {
			t.Errorf("collections %v", got)
		}
		runFail(t, client.Database(base), bson.D{{Key: "create", Value: 5}}, 73, "InvalidNamespace")
	})

	t.Run("implicit creation", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		if got := collNames(t, db); len(got) != 0 {
			t.Fatalf("fresh database has %v", got)
		}
		if _, err := db.Collection("auto").InsertOne(testCtx(t), bson.D{{Key: "x", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		infos := collInfos(t, db)
		ci, ok := infos["auto"]
		if !ok || len(infos) != 1 || ci.Type != "collection" || len(ci.Options) != 5 {
			t.Fatalf("after insert: %+v", infos)
		}
		uuidOf(t, ci)
		// Reads and deletes do not create collections.
		runCursor(t, db, bson.D{{Key: "find", Value: "ghost"}})
		runWrite(t, db, bson.D{{Key: "delete", Value: "ghost2"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}}}}})
		runOK(t, db, bson.D{{Key: "collStats", Value: "ghost3"}})
		if got := collNames(t, db); !slices.Equal(got, []string{"auto"}) {
			t.Errorf("collections %v", got)
		}
	})

	t.Run("drop", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		coll := db.Collection("c")
		if _, err := coll.InsertMany(testCtx(t), []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
			t.Fatal(err)
		}
		runOK(t, db, bson.D{{Key: "create", Value: "other"}})
		r := runOK(t, db, bson.D{{Key: "drop", Value: "c"}})
		if ns := mustLookup(t, r, "ns").StringValue(); ns != db.Name()+".c" {
			t.Errorf("ns %q", ns)
		}
		if n := intOf(t, mustLookup(t, r, "nIndexesWas")); n != 1 {
			t.Errorf("nIndexesWas %d", n)
		}
		if got := collNames(t, db); !slices.Equal(got, []string{"other"}) {
			t.Errorf("collections after drop %v", got)
		}
		// Dropping what does not exist succeeds (MongoDB 7.0).
		runOK(t, db, bson.D{{Key: "drop", Value: "c"}})
		runOK(t, client.Database(dbName(t)+"_none"), bson.D{{Key: "drop", Value: "nothing"}})
		// A collection of the same name starts empty.
		if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 3}}); err != nil {
			t.Fatal(err)
		}
		if got := idsIn(t, coll, bson.D{}); !slices.Equal(got, intIDs(3)) {
			t.Errorf("re-created collection holds %v", got)
		}
		if n := intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "collStats", Value: "c"}}), "count")); n != 1 {
			t.Errorf("count after re-create %d", n)
		}
		// The driver's Drop.
		if err := coll.Drop(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if err := coll.Drop(testCtx(t)); err != nil {
			t.Fatalf("second drop: %v", err)
		}
		runFail(t, db, bson.D{{Key: "drop", Value: ""}}, 73, "InvalidNamespace")
	})

	t.Run("dropDatabase", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		for _, c := range []string{"a", "b"} {
			if _, err := db.Collection(c).InsertOne(testCtx(t), bson.D{{Key: "x", Value: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Contains(databaseNames(t, admin), db.Name()) {
			t.Fatal("database not listed before the drop")
		}
		r := runOK(t, db, bson.D{{Key: "dropDatabase", Value: 1}})
		wantFields(t, r, "ok") // MongoDB 5.0+ sends no "dropped"
		if got := collNames(t, db); len(got) != 0 {
			t.Errorf("collections after dropDatabase %v", got)
		}
		if slices.Contains(databaseNames(t, admin), db.Name()) {
			t.Error("database still listed")
		}
		if got := idsIn(t, db.Collection("a"), bson.D{}); len(got) != 0 {
			t.Errorf("documents survived: %v", got)
		}
		// Dropping a database that does not exist succeeds.
		runOK(t, db, bson.D{{Key: "dropDatabase", Value: 1}})
		if err := client.Database(db.Name() + "_x").Drop(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("listDatabases", func(t *testing.T) {
		t.Parallel()
		name := dbName(t)
		db := client.Database(name)
		coll := db.Collection("c")
		if _, err := coll.InsertMany(testCtx(t), []any{bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: strings.Repeat("x", 1000)}}}); err != nil {
			t.Fatal(err)
		}
		entry := func(extra ...bson.E) (bson.Raw, bson.Raw) {
			r := runOK(t, admin, append(bson.D{{Key: "listDatabases", Value: 1}}, extra...))
			vals, err := mustLookup(t, r, "databases").Array().Values()
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			var mine bson.Raw
			for _, v := range vals {
				d := v.Document()
				if sz, err := d.LookupErr("sizeOnDisk"); err == nil {
					if sz.Type != bson.TypeInt64 && sz.Type != bson.TypeDouble {
						t.Errorf("sizeOnDisk is %s", sz.Type)
					}
					total += intOf(t, sz)
				}
				if mustLookup(t, d, "name").StringValue() == name {
					mine = d
				}
			}
			if _, err := r.LookupErr("totalSize"); err == nil {
				if got := intOf(t, mustLookup(t, r, "totalSize")); got != total {
					t.Errorf("totalSize %d, sum of sizeOnDisk %d", got, total)
				}
				if mb := intOf(t, mustLookup(t, r, "totalSizeMb")); mb != total>>20 {
					t.Errorf("totalSizeMb %d for %d bytes", mb, total)
				}
			}
			return r, mine
		}
		_, mine := entry()
		if mine == nil {
			t.Fatal("database not listed")
		}
		size := intOf(t, mustLookup(t, mine, "sizeOnDisk"))
		if size <= 1000 {
			t.Errorf("sizeOnDisk %d for a 1 KB document", size)
		}
		if mustLookup(t, mine, "empty").Boolean() {
			t.Error("empty is true for a database with data")
		}
		// More data, more size.
		if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: strings.Repeat("y", 5000)}}); err != nil {
			t.Fatal(err)
		}
		_, mine = entry()
		if grown := intOf(t, mustLookup(t, mine, "sizeOnDisk")); grown <= size+5000 {
			t.Errorf("sizeOnDisk %d after adding 5 KB to %d", grown, size)
		}
		// nameOnly: names only, no totals.
		r, mine := entry(bson.E{Key: "nameOnly", Value: true})
		if keys := keysOf(t, mine); !slices.Equal(keys, []string{"name"}) {
			t.Errorf("nameOnly entry %v", mine)
		}
		wantAbsent(t, r, "totalSize")
		// filter by name
		for _, nameOnly := range []bool{false, true} {
			r := runOK(t, admin, bson.D{{Key: "listDatabases", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: name}}}, {Key: "nameOnly", Value: nameOnly}})
			vals, _ := mustLookup(t, r, "databases").Array().Values()
			if len(vals) != 1 || mustLookup(t, vals[0].Document(), "name").StringValue() != name {
				t.Errorf("filter by name (nameOnly %v): %v", nameOnly, r)
			}
		}
		r = runOK(t, admin, bson.D{{Key: "listDatabases", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "no_such_database"}}}})
		if vals, _ := mustLookup(t, r, "databases").Array().Values(); len(vals) != 0 {
			t.Errorf("filter on a missing name: %v", r)
		}
		if n := intOf(t, mustLookup(t, r, "totalSize")); n != 0 {
			t.Errorf("totalSize of nothing %d", n)
		}
		// the driver's helpers
		names, err := client.ListDatabaseNames(testCtx(t), bson.D{{Key: "name", Value: name}})
		if err != nil || !slices.Equal(names, []string{name}) {
			t.Errorf("ListDatabaseNames %v %v", names, err)
		}
		res, err := client.ListDatabases(testCtx(t), bson.D{{Key: "name", Value: name}})
		if err != nil || len(res.Databases) != 1 || res.Databases[0].SizeOnDisk <= 6000 || res.Databases[0].Empty {
			t.Errorf("ListDatabases %+v %v", res, err)
		}
		// errors
		runFail(t, db, bson.D{{Key: "listDatabases", Value: 1}}, 13, "Unauthorized")
		runFail(t, admin, bson.D{{Key: "listDatabases", Value: 1}, {Key: "bogus", Value: 1}}, 40415, "Location40415")
		runFail(t, admin, bson.D{{Key: "listDatabases", Value: 1}, {Key: "filter", Value: 1}}, 14, "TypeMismatch")
		runFail(t, admin, bson.D{{Key: "listDatabases", Value: 1}, {Key: "nameOnly", Value: "yes"}}, 14, "TypeMismatch")
	})

	t.Run("listCollections options", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "create", Value: "a"}})
		runOK(t, db, bson.D{{Key: "create", Value: "b"}})
		runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "validationLevel", Value: "strict"}})
		for _, tc := range []struct {
			name  string
			extra bson.D
			want  []string
		}{
			{"all", nil, []string{"a", "b", "c"}},
			{"filter name", bson.D{{Key: "filter", Value: bson.D{{Key: "name", Value: "b"}}}}, []string{"b"}},
			{"filter type", bson.D{{Key: "filter", Value: bson.D{{Key: "type", Value: "collection"}}}}, []string{"a", "b", "c"}},
			{"filter type view", bson.D{{Key: "filter", Value: bson.D{{Key: "type", Value: "view"}}}}, nil},
			{"filter options", bson.D{{Key: "filter", Value: bson.D{{Key: "options.validationLevel", Value: "strict"}}}}, []string{"c"}},
			{"filter info", bson.D{{Key: "filter", Value: bson.D{{Key: "info.readOnly", Value: false}}}}, []string{"a", "b", "c"}},
			{"filter none", bson.D{{Key: "filter", Value: bson.D{{Key: "name", Value: "zzz"}}}}, nil},
			{"nameOnly", bson.D{{Key: "nameOnly", Value: true}}, []string{"a", "b", "c"}},
			// With nameOnly the filter sees {name, type} only, as in MongoDB.
			{"nameOnly filter name", bson.D{{Key: "nameOnly", Value: true}, {Key: "filter", Value: bson.D{{Key: "name", Value: "a"}}}}, []string{"a"}},
			{"nameOnly filter options", bson.D{{Key: "nameOnly", Value: true}, {Key: "filter", Value: bson.D{{Key: "options.validationLevel", Value: "strict"}}}}, nil},
			{"authorizedCollections", bson.D{{Key: "nameOnly", Value: true}, {Key: "authorizedCollections", Value: true}}, []string{"a", "b", "c"}},
			{"cursor", bson.D{{Key: "cursor", Value: bson.D{}}}, []string{"a", "b", "c"}},
			{"null filter value", bson.D{{Key: "filter", Value: bson.D{{Key: "options.validationLevel", Value: nil}}}}, []string{"a", "b"}},
		} {
			if got := collNames(t, db, tc.extra...); !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
		for _, raw := range listColls(t, db, bson.E{Key: "nameOnly", Value: true}) {
			if keys := keysOf(t, raw); !slices.Equal(keys, []string{"name", "type"}) {
				t.Errorf("nameOnly entry %v", raw)
			}
		}
		if got := collNames(t, client.Database(db.Name()+"_empty")); len(got) != 0 {
			t.Errorf("missing database lists %v", got)
		}
		names, err := db.ListCollectionNames(testCtx(t), bson.D{{Key: "name", Value: "c"}})
		if err != nil || !slices.Equal(names, []string{"c"}) {
			t.Errorf("ListCollectionNames %v %v", names, err)
		}
		runFail(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "bogus", Value: 1}}, 40415, "Location40415")
		runFail(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: "x"}}, 14, "TypeMismatch")
		runFail(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "nameOnly", Value: "x"}}, 14, "TypeMismatch")
		runFail(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "$bogus", Value: 1}}}}, 2, "BadValue")
	})

	t.Run("renameCollection", func(t *testing.T) {
		t.Parallel()
		base := dbName(t)
		other := base + "_2"
		ctx := testCtx(t)
		fill := func(db, coll string, ids ...int) {
			t.Helper()
			var docs []any
			for _, id := range ids {
				docs = append(docs, bson.D{{Key: "_id", Value: id}})
			}
			if _, err := client.Database(db).Collection(coll).InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
		}
		rename := func(from, to string, extra ...bson.E) bson.D {
			return append(bson.D{{Key: "renameCollection", Value: from}, {Key: "to", Value: to}}, extra...)
		}
		ids := func(db, coll string) []string { return idsIn(t, client.Database(db).Collection(coll), bson.D{}) }

		// within a database: documents and UUID move with the name
		fill(base, "a", 1, 2, 3)
		uuid := uuidOf(t, collInfos(t, client.Database(base))["a"])
		runOK(t, admin, rename(base+".a", base+".b"))
		if got := collNames(t, client.Database(base)); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("after rename: %v", got)
		}
		if got := ids(base, "b"); !slices.Equal(got, intIDs(1, 2, 3)) {
			t.Errorf("renamed collection holds %v", got)
		}
		if got := uuidOf(t, collInfos(t, client.Database(base))["b"]); !bytes.Equal(got, uuid) {
			t.Error("rename within a database changed the UUID")
		}
		if n := intOf(t, mustLookup(t, runOK(t, client.Database(base), bson.D{{Key: "collStats", Value: "b"}}), "count")); n != 3 {
			t.Errorf("collStats count after rename %d", n)
		}

		// across databases
		runOK(t, admin, rename(base+".b", other+".moved"))
		if got := collNames(t, client.Database(base)); len(got) != 0 {
			t.Errorf("source database keeps %v", got)
		}
		if got := ids(other, "moved"); !slices.Equal(got, intIDs(1, 2, 3)) {
			t.Errorf("moved collection holds %v", got)
		}

		// target exists
		fill(base, "src", 10, 11)
		fill(base, "dst", 20)
		ce := runFail(t, admin, rename(base+".src", base+".dst"), 48, "NamespaceExists")
		if ce.Message != "target namespace exists" {
			t.Errorf("errmsg %q", ce.Message)
		}
		runFail(t, admin, rename(base+".src", base+".dst", bson.E{Key: "dropTarget", Value: false}), 48, "NamespaceExists")
		if got := ids(base, "src"); !slices.Equal(got, intIDs(10, 11)) {
			t.Errorf("failed rename changed the source: %v", got)
		}
		if got := ids(base, "dst"); !slices.Equal(got, intIDs(20)) {
			t.Errorf("failed rename changed the target: %v", got)
		}
		runOK(t, admin, rename(base+".src", base+".dst", bson.E{Key: "dropTarget", Value: true}))
		if got := ids(base, "dst"); !slices.Equal(got, intIDs(10, 11)) {
			t.Errorf("after dropTarget the target holds %v", got)
		}
		if got := collNames(t, client.Database(base)); !slices.Equal(got, []string{"dst"}) {
			t.Errorf("after dropTarget: %v", got)
		}
		// dropTarget across databases
		fill(other, "t", 30)
		runOK(t, admin, rename(base+".dst", other+".t", bson.E{Key: "dropTarget", Value: true}))
		if got := ids(other, "t"); !slices.Equal(got, intIDs(10, 11)) {
			t.Errorf("after cross-database dropTarget: %v", got)
		}
		// dropTarget with no target is an ordinary rename
		runOK(t, admin, rename(other+".t", other+".t2", bson.E{Key: "dropTarget", Value: true}))

		// errors
		ce = runFail(t, admin, rename(base+".missing", base+".x"), 26, "NamespaceNotFound")
		if !strings.Contains(ce.Message, base+".missing") {
			t.Errorf("errmsg %q", ce.Message)
		}
		runFail(t, admin, rename(other+".t2", other+".t2"), 20, "IllegalOperation")
		runFail(t, client.Database(other), rename(other+".t2", other+".t3"), 13, "Unauthorized")
		runFail(t, admin, bson.D{{Key: "renameCollection", Value: other + ".t2"}}, 40414, "Location40414")
		runFail(t, admin, rename(other+".t2", other+".sys$tem"), 73, "InvalidNamespace")
		runFail(t, admin, rename(other+".t2", other+".system.foo"), 73, "InvalidNamespace")
		runFail(t, admin, rename(other+".t2", "nodot"), 73, "InvalidNamespace")
		runFail(t, admin, rename(other+".t2", other+".x", bson.E{Key: "bogus", Value: 1}), 40415, "Location40415")
		runFail(t, admin, bson.D{{Key: "renameCollection", Value: 1}, {Key: "to", Value: "a.b"}}, 14, "TypeMismatch")
		if got := ids(other, "t2"); !slices.Equal(got, intIDs(10, 11)) {
			t.Errorf("failed renames changed the collection: %v", got)
		}
	})

	t.Run("collStats and dbStats", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		ctx := testCtx(t)
		coll := db.Collection("c")
		collStats := func(extra ...bson.E) bson.Raw {
			return runOK(t, db, append(bson.D{{Key: "collStats", Value: "c"}}, extra...))
		}
		dbStats := func(extra ...bson.E) bson.Raw {
			return runOK(t, db, append(bson.D{{Key: "dbStats", Value: 1}}, extra...))
		}
		num := func(r bson.Raw, f string) int64 { return intOf(t, mustLookup(t, r, f)) }

		runOK(t, db, bson.D{{Key: "create", Value: "c"}})
		r := collStats()
		if num(r, "count") != 0 || num(r, "size") != 0 || num(r, "nindexes") != 1 {
			t.Errorf("empty collection: %v", r)
		}
		if ns := mustLookup(t, r, "ns").StringValue(); ns != db.Name()+".c" {
			t.Errorf("ns %q", ns)
		}

		// 20 documents of known BSON sizes.
		var docs []any
		var sizes []int64
		var total int64
		for i := range 20 {
			d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "pad", Value: strings.Repeat("p", 1000+100*i)}}
			raw, _ := bson.Marshal(d)
			docs = append(docs, d)
			sizes = append(sizes, int64(len(raw)))
			total += int64(len(raw))
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		r = collStats()
		if got := num(r, "count"); got != 20 {
			t.Errorf("count %d", got)
		}
		if got := num(r, "size"); got != total {
			t.Errorf("size %d, want %d (sum of BSON sizes)", got, total)
		}
		if got := num(r, "avgObjSize"); got != total/20 {
			t.Errorf("avgObjSize %d, want %d", got, total/20)
		}
		if got := num(r, "storageSize"); got <= 0 {
			t.Errorf("storageSize %d", got)
		}
		idx := num(r, "totalIndexSize")
		if idx <= 0 || num(r, "nindexes") != 1 || intOf(t, mustLookup(t, r, "indexSizes", "_id_")) != idx {
			t.Errorf("index sizes: %v", r)
		}
		if got := num(r, "totalSize"); got != num(r, "storageSize")+idx {
			t.Errorf("totalSize %d", got)
		}
		if num(r, "scaleFactor") != 1 || mustLookup(t, r, "capped").Boolean() {
			t.Errorf("scaleFactor/capped: %v", r)
		}

		// scale divides sizes, not counts or the average
		r = collStats(bson.E{Key: "scale", Value: 1024})
		if got := num(r, "size"); got != total/1024 {
			t.Errorf("scaled size %d, want %d", got, total/1024)
		}
		if num(r, "count") != 20 || num(r, "avgObjSize") != total/20 || num(r, "scaleFactor") != 1024 {
			t.Errorf("scaled collStats %v", r)
		}
		if got := num(r, "totalIndexSize"); got != idx/1024 {
			t.Errorf("scaled totalIndexSize %d, want %d", got, idx/1024)
		}

		d := dbStats()
		if num(d, "collections") != 1 || num(d, "objects") != 20 || num(d, "dataSize") != total || num(d, "indexes") != 1 {
			t.Errorf("dbStats %v", d)
		}
		if mustLookup(t, d, "db").StringValue() != db.Name() {
			t.Errorf("dbStats db %v", d)
		}
		if avg := floatOf(t, mustLookup(t, d, "avgObjSize")); int64(avg) != total/20 {
			t.Errorf("dbStats avgObjSize %v", avg)
		}
		if num(d, "indexSize") != idx || num(d, "totalSize") != num(d, "storageSize")+idx {
			t.Errorf("dbStats sizes %v", d)
		}
		// dbStats divides by the scale as a double, as MongoDB does
		if got := floatOf(t, mustLookup(t, dbStats(bson.E{Key: "scale", Value: 1024}), "dataSize")); got != float64(total)/1024 {
			t.Errorf("scaled dataSize %v, want %v", got, float64(total)/1024)
		}

		// deletes subtract exactly
		res, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$eq", Value: 3}}}})
		if err != nil || res.DeletedCount != 1 {
			t.Fatalf("delete: %v %v", res, err)
		}
		for _, id := range []int{5, 7, 11} {
			if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
				t.Fatal(err)
			}
		}
		left := total - sizes[3] - sizes[5] - sizes[7] - sizes[11]
		r = collStats()
		if num(r, "count") != 16 || num(r, "size") != left {
			t.Errorf("after 4 deletes: count %d size %d, want 16 %d", num(r, "count"), num(r, "size"), left)
		}
		if got := num(r, "totalIndexSize"); got >= idx || got <= 0 {
			t.Errorf("totalIndexSize %d after deletes (was %d)", got, idx)
		}
		d = dbStats()
		if num(d, "objects") != 16 || num(d, "dataSize") != left {
			t.Errorf("dbStats after deletes %v", d)
		}

		// a second collection adds to dbStats
		if _, err := db.Collection("d").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		d = dbStats()
		if num(d, "collections") != 2 || num(d, "objects") != 17 || num(d, "indexes") != 2 {
			t.Errorf("dbStats with two collections %v", d)
		}
		// indexes counts every collection's indexes, not its collections
		if _, err := db.Collection("d").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		if d = dbStats(); num(d, "collections") != 2 || num(d, "indexes") != 3 {
			t.Errorf("dbStats with a secondary index %v", d)
		}
		// everything deleted: zero again
		if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		r = collStats()
		if num(r, "count") != 0 || num(r, "size") != 0 || num(r, "totalIndexSize") != 0 {
			t.Errorf("emptied collection %v", r)
		}

		// the aliases and a database without collections
		runOK(t, db, bson.D{{Key: "collstats", Value: "c"}})
		e := runOK(t, client.Database(db.Name()+"_none"), bson.D{{Key: "dbstats", Value: 1}})
		if num(e, "collections") != 0 || num(e, "objects") != 0 || num(e, "dataSize") != 0 {
			t.Errorf("empty dbStats %v", e)
		}
		runFail(t, db, bson.D{{Key: "collStats", Value: "c"}, {Key: "scale", Value: "big"}}, 14, "TypeMismatch")
		runFail(t, db, bson.D{{Key: "collStats", Value: "a$b"}}, 73, "InvalidNamespace")
	})

	t.Run("snapshot read concern", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "create", Value: "c"}})
		snapshot := bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}
		for _, cmd := range []bson.D{
			{{Key: "listCollections", Value: 1}, snapshot},
			{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, snapshot},
		} {
			ce := runFail(t, db, cmd, 72, "InvalidOptions")
			if !strings.Contains(ce.Message, "does not support { readConcern: { level: \"snapshot\"") {
				t.Errorf("%s: %s", cmdName(cmd), ce.Message)
			}
		}
		runFail(t, admin, bson.D{{Key: "listDatabases", Value: 1}, snapshot}, 72, "InvalidOptions")
		// Reads that MongoDB serves at a snapshot read one (snapshot_test.go).
		raw := runOK(t, db, bson.D{{Key: "find", Value: "c"}, snapshot})
		mustLookup(t, raw, "cursor", "atClusterTime").Timestamp()
		runCursor(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "local"}}}})
	})

	t.Run("search index commands answer as outside Atlas", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		for _, cmd := range []bson.D{
			{{Key: "createSearchIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "definition", Value: bson.D{}}}}}},
			{{Key: "updateSearchIndex", Value: "c"}, {Key: "name", Value: "i"}, {Key: "definition", Value: bson.D{}}},
			{{Key: "dropSearchIndex", Value: "c"}, {Key: "name", Value: "i"}},
		} {
			ce := runFail(t, db, cmd, 115, "CommandNotSupported")
			if !strings.Contains(ce.Message, "Atlas") {
				t.Errorf("%s: %s", cmdName(cmd), ce.Message)
			}
		}
	})
}

// databaseNames lists database names with listDatabases nameOnly.
func databaseNames(t testing.TB, admin *mongo.Database) []string {
	t.Helper()
	r := runOK(t, admin, bson.D{{Key: "listDatabases", Value: 1}, {Key: "nameOnly", Value: true}})
	vals, err := mustLookup(t, r, "databases").Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vals {
		names = append(names, mustLookup(t, v.Document(), "name").StringValue())
	}
	return names
}

// TestCatalogPersistsAcrossRestart stops a server and starts another on
// the same data directory: collections, options, UUIDs, documents and
// sizes are all still there.
func TestCatalogPersistsAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1 := launchRestartable(t, dir)
	c1 := s1.client
	ctx := testCtx(t)
	db := c1.Database("persist")
	runOK(t, db, bson.D{{Key: "create", Value: "strict"}, {Key: "validationLevel", Value: "strict"}})
	var docs []any
	for i := range 50 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: strings.Repeat("v", i)}})
	}
	if _, err := db.Collection("data").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Database("persist2").Collection("other").InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	runOK(t, c1.Database("admin"), bson.D{{Key: "renameCollection", Value: "persist2.other"}, {Key: "to", Value: "persist2.renamed"}})
	if _, err := db.Collection("data").DeleteOne(ctx, bson.D{{Key: "_id", Value: 49}}); err != nil {
		t.Fatal(err)
	}
	before := collInfos(t, db)
	statsBefore := runOK(t, db, bson.D{{Key: "collStats", Value: "data"}})
	s1.stop(t)

	s2, err := Launch(ServerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s2.Stop(); err != nil {
			t.Error(err)
		}
	}()
	c2, err := mongo.Connect(optionsFor(s2))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c2.Disconnect(ctx) }()
	db = c2.Database("persist")
	after := collInfos(t, db)
	if len(after) != len(before) {
		t.Fatalf("collections before %v, after %v", before, after)
	}
	for name, b := range before {
		a, ok := after[name]
		if !ok {
			t.Errorf("%s lost", name)
			continue
		}
		if !bytes.Equal(uuidOf(t, a), uuidOf(t, b)) {
			t.Errorf("%s: UUID changed", name)
		}
		if !bytes.Equal(a.Options, b.Options) {
			t.Errorf("%s: options %v, were %v", name, a.Options, b.Options)
		}
	}
	if got := idsIn(t, db.Collection("data"), bson.D{}); len(got) != 49 || slices.Contains(got, "49") {
		t.Errorf("documents after restart: %v", got)
	}
	var doc bson.Raw
	if err := db.Collection("data").FindOne(ctx, bson.D{{Key: "_id", Value: 7}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if v := mustLookup(t, doc, "v").StringValue(); v != "vvvvvvv" {
		t.Errorf("document 7 reads back %v", doc)
	}
	statsAfter := runOK(t, db, bson.D{{Key: "collStats", Value: "data"}})
	for _, f := range []string{"count", "size", "totalIndexSize"} {
		if a, b := intOf(t, mustLookup(t, statsAfter, f)), intOf(t, mustLookup(t, statsBefore, f)); a != b {
			t.Errorf("collStats.%s %d after restart, %d before", f, a, b)
		}
	}
	if got := collNames(t, c2.Database("persist2")); !slices.Equal(got, []string{"renamed"}) {
		t.Errorf("renamed collection after restart: %v", got)
	}
	// The restarted server keeps enforcing _id uniqueness and takes writes.
	_, err = db.Collection("data").InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Errorf("duplicate after restart: %v", err)
	}
	if _, err := db.Collection("data").InsertOne(ctx, bson.D{{Key: "_id", Value: 49}}); err != nil {
		t.Fatal(err)
	}
	runOK(t, db, bson.D{{Key: "create", Value: "new"}})
	infos := collInfos(t, db)
	if bytes.Equal(uuidOf(t, infos["new"]), uuidOf(t, infos["data"])) {
		t.Error("a collection created after restart reuses a UUID")
	}
	if n := intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "collStats", Value: "data"}}), "count")); n != 50 {
		t.Errorf("count after a post-restart insert %d", n)
	}
}
