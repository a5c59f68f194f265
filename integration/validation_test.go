package integration

import (
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Document validation: collection validators (query operators and
// $jsonSchema), validationLevel, validationAction and
// bypassDocumentValidation, through the driver. Expected details are
// MongoDB's (jstests/core/doc_validation and the doc_validation_error
// unit tests).

// ext renders a document as relaxed extended JSON, to compare details.
func ext(t testing.TB, v any) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(v, false, false)
	if err != nil {
		t.Fatalf("extended JSON of %v: %v", v, err)
	}
	return string(b)
}

// validationFailure checks that err is one write error 121 "Document
// failed validation" (at index, for a batch) and returns its errInfo.
func validationFailure(t testing.TB, err error, index int) bson.Raw {
	t.Helper()
	var we mongo.WriteException
	var bwe mongo.BulkWriteException
	var ce mongo.CommandError
	switch {
	case errors.As(err, &we):
		if len(we.WriteErrors) != 1 {
			t.Fatalf("write errors %v", we.WriteErrors)
		}
		e := we.WriteErrors[0]
		if e.Code != 121 || e.Message != "Document failed validation" || e.Index != index {
			t.Fatalf("write error %+v", e)
		}
		return e.Details
	case errors.As(err, &bwe):
		if len(bwe.WriteErrors) != 1 {
			t.Fatalf("write errors %v", bwe.WriteErrors)
		}
		e := bwe.WriteErrors[0]
		if e.Code != 121 || e.Message != "Document failed validation" || e.Index != index {
			t.Fatalf("write error %+v", e)
		}
		return e.Details
	case errors.As(err, &ce):
		// findAndModify's carries its plan executor's context.
		msg := strings.TrimPrefix(ce.Message, "Plan executor error during findAndModify :: caused by :: ")
		if ce.Code != 121 || ce.Name != "DocumentValidationFailure" || msg != "Document failed validation" {
			t.Fatalf("command error %+v", ce)
		}
		info, lerr := ce.Raw.LookupErr("errInfo")
		if lerr != nil {
			t.Fatalf("no errInfo in %v", ce.Raw)
		}
		return info.Document()
	}
	t.Fatalf("want a DocumentValidationFailure, got %v", err)
	return nil
}

// wantDetails checks errInfo's failingDocumentId and details.
func wantDetails(t testing.TB, info bson.Raw, id any, details string) {
	t.Helper()
	got := ext(t, bson.D{{Key: "v", Value: info.Lookup("failingDocumentId")}})
	if want := ext(t, bson.D{{Key: "v", Value: id}}); got != want {
		t.Errorf("failingDocumentId %s, want %s", got, want)
	}
	if got := ext(t, info.Lookup("details").Document()); got != details {
		t.Errorf("details\n got %s\nwant %s", got, details)
	}
}

func TestDocumentValidation(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)

	t.Run("query operator validator", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}}}}}})
		c := db.Collection("c")
		ctx := testCtx(t)
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 6}}); err != nil {
			t.Fatal(err)
		}
		_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1}})
		wantDetails(t, validationFailure(t, err, 0), int32(2),
			`{"operatorName":"$gt","specifiedAs":{"a":{"$gt":5}},"reason":"comparison failed","consideredValue":1}`)
		_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
		wantDetails(t, validationFailure(t, err, 0), int32(3),
			`{"operatorName":"$gt","specifiedAs":{"a":{"$gt":5}},"reason":"field was missing"}`)
		if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
			t.Errorf("%d documents, want the valid one", n)
		}
		// listCollections shows the options as MongoDB does.
		opts := collInfos(t, db)["c"].Options
		if got := ext(t, opts); got != `{"validator":{"a":{"$gt":5}}}` {
			t.Errorf("options %s", got)
		}
	})

	t.Run("ordered and unordered inserts", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$type", Value: "int"}}}}}})
		c := db.Collection("c")
		ctx := testCtx(t)
		docs := []any{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: "x"}}, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 3}}}
		_, err := c.InsertMany(ctx, docs)
		wantDetails(t, validationFailure(t, err, 1), int32(2),
			`{"operatorName":"$type","specifiedAs":{"a":{"$type":"int"}},"reason":"type did not match","consideredValue":"x","consideredType":"string"}`)
		if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
			t.Errorf("ordered: %d documents, want 1 (it stops at the failing one)", n)
		}
		docs[0] = bson.D{{Key: "_id", Value: 0}, {Key: "a", Value: 0}}
		_, err = c.InsertMany(ctx, docs[:2], options.InsertMany().SetOrdered(false))
		validationFailure(t, err, 1)
		_, err = c.InsertMany(ctx, []any{docs[1], docs[2]}, options.InsertMany().SetOrdered(false))
		validationFailure(t, err, 0)
		if n, _ := c.CountDocuments(ctx, bson.D{}); n != 3 {
			t.Errorf("unordered: %d documents, want 3 (it goes on)", n)
		}
	})

	t.Run("jsonSchema validator", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		schema := bson.D{
			{Key: "bsonType", Value: "object"},
			{Key: "title", Value: "Student"},
			{Key: "required", Value: bson.A{"name", "year"}},
			{Key: "additionalProperties", Value: false},
			{Key: "properties", Value: bson.D{
				{Key: "_id", Value: bson.D{}},
				{Key: "name", Value: bson.D{{Key: "bsonType", Value: "string"}, {Key: "pattern", Value: "^[A-Z]"}, {Key: "description", Value: "capitalised"}}},
				{Key: "year", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: 2017}, {Key: "maximum", Value: 3017}}},
				{Key: "major", Value: bson.D{{Key: "enum", Value: bson.A{"Math", "History"}}}},
			}},
		}
		runOK(t, db, bson.D{{Key: "create", Value: "s"}, {Key: "validator", Value: bson.D{{Key: "$jsonSchema", Value: schema}}}})
		c := db.Collection("s")
		ctx := testCtx(t)
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "Ada"}, {Key: "year", Value: int32(2020)}, {Key: "major", Value: "Math"}}); err != nil {
			t.Fatal(err)
		}
		_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "bob"}, {Key: "year", Value: int32(1999)}, {Key: "major", Value: "Art"}, {Key: "extra", Value: true}})
		wantDetails(t, validationFailure(t, err, 0), int32(2), `{"operatorName":"$jsonSchema","title":"Student","schemaRulesNotSatisfied":[`+
			`{"operatorName":"properties","propertiesNotSatisfied":[`+
			`{"propertyName":"name","description":"capitalised","details":[{"operatorName":"pattern","specifiedAs":{"pattern":"^[A-Z]"},"reason":"regular expression did not match","consideredValue":"bob"}]},`+
			`{"propertyName":"year","details":[{"operatorName":"minimum","specifiedAs":{"minimum":2017},"reason":"comparison failed","consideredValue":1999}]},`+
			`{"propertyName":"major","details":[{"operatorName":"enum","specifiedAs":{"enum":["Math","History"]},"reason":"value was not found in enum","consideredValue":"Art"}]}]},`+
			`{"operatorName":"additionalProperties","specifiedAs":{"additionalProperties":false},"additionalProperties":["extra"]}]}`)
		_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "year", Value: "2020"}})
		wantDetails(t, validationFailure(t, err, 0), int32(3), `{"operatorName":"$jsonSchema","title":"Student","schemaRulesNotSatisfied":[`+
			`{"operatorName":"properties","propertiesNotSatisfied":[`+
			`{"propertyName":"year","details":[{"operatorName":"bsonType","specifiedAs":{"bsonType":"int"},"reason":"type did not match","consideredValue":"2020","consideredType":"string"}]}]},`+
			`{"operatorName":"required","specifiedAs":{"required":["name","year"]},"missingProperties":["name"]}]}`)
		_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "name", Value: "Cy"}, {Key: "year", Value: int32(4000)}})
		wantDetails(t, validationFailure(t, err, 0), int32(4), `{"operatorName":"$jsonSchema","title":"Student","schemaRulesNotSatisfied":[`+
			`{"operatorName":"properties","propertiesNotSatisfied":[`+
			`{"propertyName":"year","details":[{"operatorName":"maximum","specifiedAs":{"maximum":3017},"reason":"comparison failed","consideredValue":4000}]}]}]}`)
	})

	t.Run("updates replacements upserts and findAndModify", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$type", Value: "string"}}}}}})
		c := db.Collection("c")
		ctx := testCtx(t)
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "a"}}); err != nil {
			t.Fatal(err)
		}
		want := `{"operatorName":"$type","specifiedAs":{"x":{"$type":"string"}},"reason":"type did not match","consideredValue":1,"consideredType":"int"}`
		_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
		wantDetails(t, validationFailure(t, err, 0), int32(1), want)
		_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}})
		wantDetails(t, validationFailure(t, err, 0), int32(1), want)
		_, err = c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "x", Value: 1}})
		wantDetails(t, validationFailure(t, err, 0), int32(1), want)
		_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 9}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
		wantDetails(t, validationFailure(t, err, 0), int32(9), want)
		err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}).Err()
		wantDetails(t, validationFailure(t, err, 0), int32(1), want)
		if ce := (mongo.CommandError{}); !errors.As(err, &ce) || ce.Message != "Plan executor error during findAndModify :: caused by :: Document failed validation" {
			t.Errorf("findAndModify's error %v", err)
		}
		err = c.FindOneAndReplace(ctx, bson.D{{Key: "_id", Value: 8}}, bson.D{{Key: "x", Value: 1}}, options.FindOneAndReplace().SetUpsert(true)).Err()
		wantDetails(t, validationFailure(t, err, 0), int32(8), want)
		var got bson.M
		if err := c.FindOne(ctx, bson.D{}).Decode(&got); err != nil || got["x"] != "a" {
			t.Errorf("document %v (%v), want it unchanged", got, err)
		}
		if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
			t.Errorf("%d documents: an upsert went through", n)
		}
		// A valid update goes through; a no-op needs no check.
		if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: "b"}}}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("levels moderate and off, and collMod over invalid documents", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		c := db.Collection("c")
		ctx := testCtx(t)
		if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 10}}}); err != nil {
			t.Fatal(err)
		}
		// Setting a validator that existing documents break is allowed.
		runOK(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 5}}}}}})
		// strict (the default): the invalid document cannot be updated
		// into another invalid one.
		_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}})
		validationFailure(t, err, 0)
		runOK(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationLevel", Value: "moderate"}})
		if got := ext(t, collInfos(t, db)["c"].Options); got != `{"validator":{"a":{"$gte":5}},"validationLevel":"moderate"}` {
			t.Errorf("options %s", got)
		}
		// moderate: a document that was invalid may be updated, even
		// into an invalid one; a valid one may not become invalid;
		// inserts are checked.
		if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}); err != nil {
			t.Fatalf("moderate update of an invalid document: %v", err)
		}
		_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 0}}}})
		validationFailure(t, err, 0)
		_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 0}})
		validationFailure(t, err, 0)
		runOK(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationLevel", Value: "off"}})
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 0}}); err != nil {
			t.Fatalf("level off: %v", err)
		}
		// An empty validator removes it.
		runOK(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: bson.D{}}, {Key: "validationLevel", Value: "strict"}})
		if got := ext(t, collInfos(t, db)["c"].Options); got != `{"validationLevel":"strict"}` {
			t.Errorf("options %s", got)
		}
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: 0}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("action warn", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "validationAction", Value: "warn"}})
		c := db.Collection("c")
		ctx := testCtx(t)
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: "warned-" + db.Name()}, {Key: "a", Value: 2}}); err != nil {
			t.Fatalf("warn: %v", err)
		}
		r := runOK(t, client.Database("admin"), bson.D{{Key: "getLog", Value: "global"}})
		lines, _ := mustLookup(t, r, "log").Array().Values()
		found := false
		for _, l := range lines {
			s := l.StringValue()
			if strings.Contains(s, "Document would fail validation") && strings.Contains(s, "warned-"+db.Name()) &&
				strings.Contains(s, `"operatorName":"$eq"`) && strings.Contains(s, `"id":20294`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no validation warning in the log")
		}
	})

	t.Run("bypassDocumentValidation", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "ok", Value: true}}}})
		runOK(t, db, bson.D{{Key: "create", Value: "out"}, {Key: "validator", Value: bson.D{{Key: "ok", Value: true}}}})
		c := db.Collection("c")
		ctx := testCtx(t)
		bad := bson.D{{Key: "_id", Value: 1}, {Key: "ok", Value: false}}
		if _, err := c.InsertOne(ctx, bad, options.InsertOne().SetBypassDocumentValidation(true)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 2}}}, options.InsertMany().SetBypassDocumentValidation(true)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}, options.UpdateOne().SetBypassDocumentValidation(true)); err != nil {
			t.Fatal(err)
		}
		if err := c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 2}}}}, options.FindOneAndUpdate().SetBypassDocumentValidation(true)).Err(); err != nil {
			t.Fatal(err)
		}
		// $out keeps the target's validator; bypass skips it.
		out := bson.D{{Key: "$out", Value: "out"}}
		_, err := c.Aggregate(ctx, mongo.Pipeline{out})
		validationFailure(t, err, 0)
		if _, err := c.Aggregate(ctx, mongo.Pipeline{out}, options.Aggregate().SetBypassDocumentValidation(true)); err != nil {
			t.Fatal(err)
		}
		if n, _ := db.Collection("out").CountDocuments(ctx, bson.D{}); n != 2 {
			t.Errorf("$out wrote %d documents", n)
		}
		if got := ext(t, collInfos(t, db)["out"].Options); got != `{"validator":{"ok":true}}` {
			t.Errorf("$out target options %s", got)
		}
		merge := bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "merged"}}}}
		runOK(t, db, bson.D{{Key: "create", Value: "merged"}, {Key: "validator", Value: bson.D{{Key: "ok", Value: true}}}})
		_, err = c.Aggregate(ctx, mongo.Pipeline{merge})
		validationFailure(t, err, 0)
		if _, err := c.Aggregate(ctx, mongo.Pipeline{merge}, options.Aggregate().SetBypassDocumentValidation(true)); err != nil {
			t.Fatal(err)
		}
		// Without bypass the validator holds again.
		_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
		validationFailure(t, err, 0)
	})

	t.Run("validators MongoDB refuses", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		create := func(v bson.D) bson.D {
			return bson.D{{Key: "create", Value: "c"}, {Key: "validator", Value: v}}
		}
		runFail(t, db, create(bson.D{{Key: "$where", Value: "this.a == this.b"}}), 224, "QueryFeatureNotAllowed")
		runFail(t, db, create(bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "bob"}}}}), 224, "QueryFeatureNotAllowed")
		runFail(t, db, create(bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.A{0, 0}}}}}), 224, "QueryFeatureNotAllowed")
		runFail(t, db, create(bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "$where", Value: "1"}}}}}), 224, "QueryFeatureNotAllowed")
		runFail(t, db, create(bson.D{{Key: "$expr", Value: bson.D{{Key: "$function", Value: bson.D{{Key: "body", Value: "function() {}"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "js"}}}}}}), 4660800, "Location4660800")
		runFail(t, db, create(bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$a", "$$unbound"}}}}}), 17276, "Location17276")
		runFail(t, db, create(bson.D{{Key: "$jsonSchema", Value: bson.D{{Key: "invalid", Value: 1}}}}), 9, "FailedToParse")
		runFail(t, db, create(bson.D{{Key: "a", Value: bson.D{{Key: "$bogus", Value: 1}}}}), 2, "BadValue")
		runFail(t, db, bson.D{{Key: "create", Value: "system.js"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}}, 72, "InvalidOptions")
		runFail(t, client.Database("admin"), create(bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}}), 72, "InvalidOptions")
		if got := collNames(t, db); len(got) != 0 {
			t.Errorf("refused creates left %v", got)
		}
		runOK(t, db, bson.D{{Key: "create", Value: "c"}})
		runFail(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "$where", Value: "1"}}}}, 224, "QueryFeatureNotAllowed")
		runFail(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationAction", Value: "explode"}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationLevel", Value: 1}}, 14, "TypeMismatch")
		if got := ext(t, collInfos(t, db)["c"].Options); got != `{}` {
			t.Errorf("options after refused collMods %s", got)
		}
	})

	t.Run("sharded collection", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		admin := client.Database("admin")
		runOK(t, admin, bson.D{{Key: "shardCollection", Value: db.Name() + ".people"}, {Key: "key", Value: bson.D{{Key: "region", Value: "hashed"}}}})
		runOK(t, db, bson.D{{Key: "collMod", Value: "people"}, {Key: "validator", Value: bson.D{{Key: "$jsonSchema", Value: bson.D{
			{Key: "required", Value: bson.A{"region", "age"}},
			{Key: "properties", Value: bson.D{{Key: "age", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: 0}}}}},
		}}}}})
		c := db.Collection("people")
		ctx := testCtx(t)
		var docs []any
		for i := range 20 {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "region", Value: []string{"eu", "us", "asia"}[i%3]}, {Key: "age", Value: int32(i)}})
		}
		if _, err := c.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 100}, {Key: "region", Value: "eu"}})
		wantDetails(t, validationFailure(t, err, 0), int32(100),
			`{"operatorName":"$jsonSchema","schemaRulesNotSatisfied":[{"operatorName":"required","specifiedAs":{"required":["region","age"]},"missingProperties":["age"]}]}`)
		_, err = c.UpdateMany(ctx, bson.D{{Key: "region", Value: "us"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: int32(-1)}}}})
		validationFailure(t, err, 0)
		if n, _ := c.CountDocuments(ctx, bson.D{{Key: "age", Value: -1}}); n != 0 {
			t.Errorf("%d documents became invalid", n)
		}
		if _, err := c.UpdateMany(ctx, bson.D{{Key: "region", Value: "us"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "age", Value: int32(1)}}}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDocumentValidationBypassPrivilege: under --auth,
// bypassDocumentValidation needs the bypassDocumentValidation action,
// which dbAdmin (and dbOwner, restore, root) have and readWrite has not.
func TestDocumentValidationBypassPrivilege(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Auth: true, RootUser: "root", RootPassword: rootPassword})
	root := userClient(t, s, "root", rootPassword, "admin", "")
	ctx := testCtx(t)
	name := dbName(t)
	db := root.Database(name)
	runOK(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "ok", Value: true}}}})
	createUser(t, db, "writer", "pw", bson.A{"readWrite"})
	createUser(t, db, "owner", "pw", bson.A{"readWrite", "dbAdmin"})
	bad := bson.D{{Key: "ok", Value: false}}
	bypass := options.InsertOne().SetBypassDocumentValidation(true)

	writer := userClient(t, s, "writer", "pw", name, "").Database(name).Collection("c")
	_, err := writer.InsertOne(ctx, bad)
	validationFailure(t, err, 0)
	_, err = writer.InsertOne(ctx, bad, bypass)
	wantUnauthorized(t, err, "not authorized on "+name+" to execute command { insert: ")
	_, err = writer.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$set", Value: bad}}, options.UpdateOne().SetBypassDocumentValidation(true))
	wantUnauthorized(t, err, "update")

	owner := userClient(t, s, "owner", "pw", name, "").Database(name).Collection("c")
	if _, err := owner.InsertOne(ctx, bad, bypass); err != nil {
		t.Fatalf("readWrite and dbAdmin with bypass: %v", err)
	}
	if _, err := root.Database(name).Collection("c").InsertOne(ctx, bad, bypass); err != nil {
		t.Fatalf("root with bypass: %v", err)
	}
}
