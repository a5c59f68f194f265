package integration

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Collations through the Go driver: each operation with a collation, the
// default collation of a collection, indexes with a collation, and bad
// collations' errors.

var (
	caseInsensitive = &options.Collation{Locale: "en_US", Strength: 2}
	numeric         = &options.Collation{Locale: "en", NumericOrdering: true}
)

func namesOf(t *testing.T, cur *mongo.Cursor, field string) []string {
	t.Helper()
	var docs []bson.M
	if err := cur.All(testCtx(t), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i], _ = d[field].(string)
	}
	return out
}

func TestCollationOperations(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	coll := db.Collection("c")
	fresh := func(t *testing.T) {
		t.Helper()
		if err := coll.Drop(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		mustInsert(t, coll,
			bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "ping"}, {Key: "n", Value: "10"}},
			bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: "PING"}, {Key: "n", Value: "9"}},
			bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: "pong"}, {Key: "n", Value: "100"}},
			bson.D{{Key: "_id", Value: 4}, {Key: "x", Value: "Péng"}, {Key: "n", Value: "1"}})
	}
	ctx := testCtx(t)

	t.Run("find filter and sort", func(t *testing.T) {
		fresh(t)
		n, err := coll.CountDocuments(ctx, bson.D{{Key: "x", Value: "ping"}})
		if err != nil || n != 1 {
			t.Fatalf("simple count: %d %v", n, err)
		}
		cur, err := coll.Find(ctx, bson.D{{Key: "x", Value: "PING"}}, options.Find().SetCollation(caseInsensitive).SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		if got := namesOf(t, cur, "x"); !slices.Equal(got, []string{"ping", "PING"}) {
			t.Errorf("case-insensitive find: %v", got)
		}
		// $in and ranges compare by the collation too.
		cur, err = coll.Find(ctx, bson.D{{Key: "x", Value: bson.D{{Key: "$in", Value: bson.A{"PONG"}}}}}, options.Find().SetCollation(caseInsensitive))
		if err != nil {
			t.Fatal(err)
		}
		if got := namesOf(t, cur, "x"); !slices.Equal(got, []string{"pong"}) {
			t.Errorf("$in under a collation: %v", got)
		}
		// Sort: bytes put "10" before "9"; numericOrdering does not.
		cur, err = coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "n", Value: 1}}).SetCollation(numeric))
		if err != nil {
			t.Fatal(err)
		}
		if got := namesOf(t, cur, "n"); !slices.Equal(got, []string{"1", "9", "10", "100"}) {
			t.Errorf("numericOrdering sort: %v", got)
		}
		cur, err = coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "n", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		if got := namesOf(t, cur, "n"); !slices.Equal(got, []string{"1", "10", "100", "9"}) {
			t.Errorf("binary sort: %v", got)
		}
		// Strength 1 ignores accents as well as case.
		n, err = coll.CountDocuments(ctx, bson.D{{Key: "x", Value: "peng"}}, options.Count().SetCollation(&options.Collation{Locale: "fr", Strength: 1}))
		if err != nil || n != 1 {
			t.Errorf("strength 1 count: %d %v", n, err)
		}
	})

	t.Run("distinct", func(t *testing.T) {
		fresh(t)
		res := coll.Distinct(ctx, "x", bson.D{}, options.Distinct().SetCollation(caseInsensitive))
		var vals []string
		if err := res.Decode(&vals); err != nil {
			t.Fatal(err)
		}
		if len(vals) != 3 {
			t.Errorf("distinct under strength 2 counts ping and PING once: %v", vals)
		}
	})

	t.Run("aggregate", func(t *testing.T) {
		fresh(t)
		cur, err := coll.Aggregate(ctx, bson.A{
			bson.D{{Key: "$match", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$in", Value: bson.A{"PING", "PONG"}}}}}}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$x"}, {Key: "c", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "c", Value: -1}}}},
			bson.D{{Key: "$project", Value: bson.D{{Key: "c", Value: 1}, {Key: "eq", Value: bson.D{{Key: "$eq", Value: bson.A{"$_id", "PiNg"}}}}}}},
		}, options.Aggregate().SetCollation(caseInsensitive))
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.M
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if len(out) != 2 || out[0]["c"] != int32(2) || out[0]["eq"] != true || out[1]["eq"] != false {
			t.Errorf("aggregate with a collation: %v", out)
		}
	})

	t.Run("update delete findAndModify", func(t *testing.T) {
		fresh(t)
		r, err := coll.UpdateMany(ctx, bson.D{{Key: "x", Value: "PING"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "hit", Value: true}}}}, options.UpdateMany().SetCollation(caseInsensitive))
		if err != nil || r.ModifiedCount != 2 {
			t.Fatalf("updateMany: %+v %v", r, err)
		}
		var doc bson.M
		err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "x", Value: "PONG"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}},
			options.FindOneAndUpdate().SetCollation(caseInsensitive).SetReturnDocument(options.After)).Decode(&doc)
		if err != nil || doc["y"] != int32(1) {
			t.Fatalf("findOneAndUpdate: %v %v", doc, err)
		}
		// findAndModify's sort is collated: "PING" < "ping" in bytes,
		// but upper case sorts after lower case in en.
		err = coll.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lte", Value: 2}}}},
			options.FindOneAndDelete().SetSort(bson.D{{Key: "x", Value: 1}}).SetCollation(&options.Collation{Locale: "en"})).Decode(&doc)
		if err != nil || doc["x"] != "ping" {
			t.Fatalf("findOneAndDelete sorted by collation: %v %v", doc, err)
		}
		d, err := coll.DeleteMany(ctx, bson.D{{Key: "x", Value: "péng"}}, options.DeleteMany().SetCollation(caseInsensitive))
		if err != nil || d.DeletedCount != 1 {
			t.Fatalf("deleteMany: %+v %v", d, err)
		}
		d, err = coll.DeleteOne(ctx, bson.D{{Key: "x", Value: "PING"}})
		if err != nil || d.DeletedCount != 1 {
			t.Fatalf("deleteOne without a collation: %+v %v", d, err)
		}
	})

	t.Run("bad collations", func(t *testing.T) {
		for _, tc := range []struct {
			coll bson.D
			code int32
			name string
			msg  string
		}{
			{bson.D{{Key: "locale", Value: "xx"}}, 2, "BadValue", `Field 'locale' is invalid in: { locale: "xx" }`},
			{bson.D{{Key: "locale", Value: "en_us"}}, 2, "BadValue", `Field 'locale' is invalid in: { locale: "en_us" }. Did you mean 'en_US'?`},
			{bson.D{{Key: "locale", Value: ""}}, 2, "BadValue", `Field 'locale' cannot be the empty string in: { locale: "" }`},
			{bson.D{{Key: "strength", Value: 2}}, 9, "FailedToParse", "BSON field 'locale' is missing but a required field"},
			{bson.D{{Key: "locale", Value: 1}}, 14, "TypeMismatch", `"locale" had the wrong type. Expected string, found int`},
			{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 0}}, 9, "FailedToParse", "Field 'strength' must be an integer 1 through 5. Got: 0"},
			{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1.5}}, 2, "BadValue", ""},
			{bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "first"}}, 9, "FailedToParse", "Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: first"},
			{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "x"}}, 9, "FailedToParse", "Field 'alternate' must be 'non-ignorable' or 'shifted'. Got: x"},
			{bson.D{{Key: "locale", Value: "en"}, {Key: "maxVariable", Value: "x"}}, 9, "FailedToParse", "Field 'maxVariable' must be 'punct' or 'space'. Got: x"},
			{bson.D{{Key: "locale", Value: "en"}, {Key: "caseLevel", Value: 1}}, 14, "TypeMismatch", `"caseLevel" had the wrong type. Expected bool, found int`},
			{bson.D{{Key: "locale", Value: "en"}, {Key: "bogus", Value: true}}, 9, "FailedToParse", `Collation spec contains unknown field. Collation spec: { locale: "en", bogus: true }`},
			{bson.D{{Key: "locale", Value: "simple"}, {Key: "strength", Value: 2}}, 9, "FailedToParse", `If locale=simple, no other fields should be present in: { locale: "simple", strength: 2 }`},
			{bson.D{{Key: "locale", Value: "en"}, {Key: "version", Value: "1.0"}}, 161, "IncompatibleCollationVersion", ""},
		} {
			ce := runFail(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "collation", Value: tc.coll}}, tc.code, tc.name)
			if tc.msg != "" && ce.Message != tc.msg {
				t.Errorf("%v: errmsg %q, want %q", tc.coll, ce.Message, tc.msg)
			}
		}
		runFail(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "collation", Value: "en"}}, 14, "TypeMismatch")
		// The shard key compares by bytes.
		ce := runFail(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: db.Name() + ".s"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}},
			{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}}, 2, "BadValue")
		if !strings.Contains(ce.Message, "must be {locale: 'simple'}") {
			t.Errorf("shardCollection errmsg %q", ce.Message)
		}
	})
}

func TestCollationDefaultAndIndexes(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	ctx := testCtx(t)

	t.Run("default collation on create", func(t *testing.T) {
		if err := db.CreateCollection(ctx, "d", options.CreateCollection().SetCollation(caseInsensitive)); err != nil {
			t.Fatal(err)
		}
		specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "d"}})
		if err != nil || len(specs) != 1 {
			t.Fatalf("listCollections: %v %v", specs, err)
		}
		c := specs[0].Options.Lookup("collation")
		if loc, _ := c.Document().Lookup("locale").StringValueOK(); loc != "en_US" {
			t.Fatalf("listCollections options: %v", specs[0].Options)
		}
		if st, _ := c.Document().Lookup("strength").AsInt64OK(); st != 2 {
			t.Errorf("strength shown: %v", c)
		}
		for _, f := range []string{"caseLevel", "caseFirst", "numericOrdering", "alternate", "maxVariable", "normalization", "backwards", "version"} {
			if _, err := c.Document().LookupErr(f); err != nil {
				t.Errorf("collation shown without %s: %v", f, c)
			}
		}
		d := db.Collection("d")
		mustInsert(t, d, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "abc"}}, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: "ABC"}})
		if n, err := d.CountDocuments(ctx, bson.D{{Key: "x", Value: "Abc"}}); err != nil || n != 2 {
			t.Errorf("count with the default collation: %d %v", n, err)
		}
		// An explicit collation overrides the default.
		if n, err := d.CountDocuments(ctx, bson.D{{Key: "x", Value: "Abc"}}, options.Count().SetCollation(&options.Collation{Locale: "simple"})); err != nil || n != 0 {
			t.Errorf("count with the simple collation: %d %v", n, err)
		}
		// Indexes take the collection's default collation.
		if _, err := d.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		ix := indexSpecNamed(t, d, "x_1")
		if loc, _ := ix.Lookup("collation", "locale").StringValueOK(); loc != "en_US" {
			t.Errorf("index without collation on a collection with a default: %v", ix)
		}
	})

	t.Run("view collation", func(t *testing.T) {
		base := db.Collection("vbase")
		mustInsert(t, base, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "abc"}}, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: "ABC"}})
		if err := db.CreateView(ctx, "v", "vbase", bson.A{}, options.CreateView().SetCollation(caseInsensitive)); err != nil {
			t.Fatal(err)
		}
		v := db.Collection("v")
		if n, err := v.CountDocuments(ctx, bson.D{{Key: "x", Value: "aBc"}}); err != nil || n != 2 {
			t.Errorf("count on a view uses its collation: %d %v", n, err)
		}
		_, err := v.Find(ctx, bson.D{}, options.Find().SetCollation(&options.Collation{Locale: "fr"}))
		wantCode(t, err, 167, "OptionNotSupportedOnView")
		if _, err := v.Find(ctx, bson.D{}, options.Find().SetCollation(caseInsensitive)); err != nil {
			t.Errorf("find on a view with its own collation: %v", err)
		}
		specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "v"}})
		if err != nil || len(specs) != 1 {
			t.Fatalf("listCollections: %v %v", specs, err)
		}
		if loc, _ := specs[0].Options.Lookup("collation", "locale").StringValueOK(); loc != "en_US" {
			t.Errorf("view options: %v", specs[0].Options)
		}
		// A view without a collation compares by bytes, whatever its base.
		if err := db.CreateView(ctx, "plain", "d", bson.A{}); err != nil {
			t.Fatal(err)
		}
		if n, err := db.Collection("plain").CountDocuments(ctx, bson.D{{Key: "x", Value: "Abc"}}); err != nil || n != 0 {
			t.Errorf("count on a simple view of a collated collection: %d %v", n, err)
		}
	})

	t.Run("unique index with strength 2", func(t *testing.T) {
		u := db.Collection("u")
		_, err := u.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "name", Value: 1}},
			Options: options.Index().SetUnique(true).SetCollation(caseInsensitive)})
		if err != nil {
			t.Fatal(err)
		}
		ix := indexSpecNamed(t, u, "name_1")
		if st, _ := ix.Lookup("collation", "strength").AsInt64OK(); st != 2 {
			t.Errorf("listIndexes collation: %v", ix)
		}
		if cf, _ := ix.Lookup("collation", "caseFirst").StringValueOK(); cf != "off" {
			t.Errorf("listIndexes collation defaults: %v", ix)
		}
		mustInsert(t, u, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "a"}})
		_, err = u.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "A"}})
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
			t.Fatalf(`"A" after "a" under strength 2: %v`, err)
		}
		mustInsert(t, u, bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "b"}})
		// The same key with another collation is another index.
		if _, err := u.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "name", Value: 1}}, Options: options.Index().SetName("name_simple")}); err != nil {
			t.Errorf("same key, simple collation: %v", err)
		}
	})

	t.Run("explain shows index use by collation", func(t *testing.T) {
		e := db.Collection("e")
		for i, s := range []string{"a", "B", "c", "D"} {
			mustInsert(t, e, bson.D{{Key: "_id", Value: i}, {Key: "s", Value: s}, {Key: "n", Value: i}})
		}
		if _, err := e.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "s", Value: 1}}, Options: options.Index().SetCollation(caseInsensitive)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		explain := func(filter bson.D, coll bson.D) string {
			cmd := bson.D{{Key: "find", Value: "e"}, {Key: "filter", Value: filter}}
			if coll != nil {
				cmd = append(cmd, bson.E{Key: "collation", Value: coll})
			}
			return runOK(t, db, bson.D{{Key: "explain", Value: cmd}}).String()
		}
		ci := bson.D{{Key: "locale", Value: "en_US"}, {Key: "strength", Value: 2}}
		if out := explain(bson.D{{Key: "s", Value: "b"}}, ci); !strings.Contains(out, `"IXSCAN"`) || !strings.Contains(out, `"s_1","collation": {"locale": "en_US"`) {
			t.Errorf("same collation: the index is used: %s", out)
		}
		if out := explain(bson.D{{Key: "s", Value: "b"}}, nil); strings.Contains(out, `"IXSCAN"`) {
			t.Errorf("simple query on a collated index: %s", out)
		}
		if out := explain(bson.D{{Key: "n", Value: 2}}, ci); !strings.Contains(out, `"n_1"`) {
			t.Errorf("collated query, no strings: a simple index serves it: %s", out)
		}
		cur, err := e.Find(ctx, bson.D{{Key: "s", Value: bson.D{{Key: "$gte", Value: "b"}, {Key: "$lt", Value: "d"}}}},
			options.Find().SetCollation(caseInsensitive).SetSort(bson.D{{Key: "s", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		if got := namesOf(t, cur, "s"); !slices.Equal(got, []string{"B", "c"}) {
			t.Errorf("range on a collated index: %v", got)
		}
	})
}

// indexSpecNamed is listIndexes' spec of c's index name.
func indexSpecNamed(t *testing.T, c *mongo.Collection, name string) bson.Raw {
	t.Helper()
	cur, err := c.Indexes().List(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(testCtx(t), &specs); err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if n, _ := s.Lookup("name").StringValueOK(); n == name {
			return s
		}
	}
	t.Fatalf("no index %s in %v", name, specs)
	return nil
}
