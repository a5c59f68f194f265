package unified

import (
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// fakeEntities resolves $$matchesEntity and $$sessionLsid for the tests.
type fakeEntities map[string]bson.RawValue

func (f fakeEntities) BSONEntity(name string) (bson.RawValue, error) {
	v, ok := f[name]
	if !ok {
		return bson.RawValue{}, errors.New("no entity " + name)
	}
	return v, nil
}

func (f fakeEntities) SessionLsid(name string) (bson.Raw, error) {
	v, err := f.BSONEntity(name)
	if err != nil {
		return nil, err
	}
	return v.Document(), nil
}

// ej parses relaxed Extended JSON of one value, written as {"v": …}.
func ej(t *testing.T, s string) bson.RawValue {
	t.Helper()
	if s == "" {
		return bson.RawValue{}
	}
	var doc bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"v":`+s+`}`), false, &doc); err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return doc.Lookup("v")
}

func TestMatch(t *testing.T) {
	lsid := `{"id": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAA==", "subType": "04"}}}`
	entities := fakeEntities{"id0": ej(t, `{"$oid": "000000000000000000000001"}`)}
	entities["session0"] = ej(t, lsid)
	cases := []struct {
		name          string
		expected      string
		actual        string // "" means absent
		root          bool
		wantErrAtPath string // "" means a match; "-" means an error with an empty path
	}{
		{"equal scalars", `1`, `1`, false, ""},
		{"flexible numerics", `1`, `1.0`, false, ""},
		{"long vs int", `{"$numberLong": "7"}`, `7`, false, ""},
		{"different numbers", `1`, `1.5`, false, "-"},
		{"string vs number", `"1"`, `1`, false, "-"},
		{"root allows extra keys", `{"x": 1}`, `{"x": 1, "y": 2}`, true, ""},
		{"nested forbids extra keys", `{"x": {"y": 1}}`, `{"x": {"y": 1, "z": 1}}`, true, "x.z"},
		{"non-root forbids extra keys", `{"x": 1}`, `{"x": 1, "y": 2}`, false, "y"},
		{"key order is free", `{"x": 1, "y": 1}`, `{"y": 1, "x": 1}`, false, ""},
		{"missing key", `{"x": 1, "y": 1}`, `{"x": 1}`, true, "y"},
		{"array length", `[1, 2, 3]`, `[1, 2, 3, 4]`, false, "-"},
		{"array element path", `{"a": [1, {"b": 2}]}`, `{"a": [1, {"b": 3}]}`, true, "a.1.b"},
		{"exists true", `{"x": {"$$exists": true}}`, `{"x": null}`, true, ""},
		{"exists true missing", `{"x": {"$$exists": true}}`, `{}`, true, "x"},
		{"exists false", `{"x": {"$$exists": false}}`, `{"y": 1}`, true, ""},
		{"exists false present", `{"x": {"$$exists": false}}`, `{"x": 1}`, true, "x"},
		{"type", `{"x": {"$$type": "long"}}`, `{"x": {"$numberLong": "1"}}`, true, ""},
		{"type list", `{"x": {"$$type": ["int", "long"]}}`, `{"x": 1}`, true, ""},
		{"type wrong", `{"x": {"$$type": "string"}}`, `{"x": 1}`, true, "x"},
		{"type missing", `{"x": {"$$type": "int"}}`, `{}`, true, "x"},
		{"unsetOrMatches unset", `{"x": {"$$unsetOrMatches": 2}}`, `{}`, true, ""},
		{"unsetOrMatches matches", `{"x": {"$$unsetOrMatches": 2}}`, `{"x": 2}`, true, ""},
		{"unsetOrMatches differs", `{"x": {"$$unsetOrMatches": 2}}`, `{"x": 3}`, true, "x"},
		{"unsetOrMatches whole result absent", `{"$$unsetOrMatches": {"insertedId": 1}}`, ``, true, ""},
		{"unsetOrMatches keeps root", `{"$$unsetOrMatches": {"a": 1}}`, `{"a": 1, "b": 2}`, true, ""},
		{"matchesEntity", `{"_id": {"$$matchesEntity": "id0"}}`, `{"_id": {"$oid": "000000000000000000000001"}}`, true, ""},
		{"matchesEntity differs", `{"_id": {"$$matchesEntity": "id0"}}`, `{"_id": {"$oid": "000000000000000000000002"}}`, true, "_id"},
		{"matchesHexBytes", `{"$$matchesHexBytes": "12ab"}`, `{"$binary": {"base64": "Eqs=", "subType": "00"}}`, false, ""},
		{"sessionLsid", `{"lsid": {"$$sessionLsid": "session0"}}`, `{"lsid": ` + lsid + `}`, true, ""},
		{"sessionLsid differs", `{"lsid": {"$$sessionLsid": "session0"}}`, `{"lsid": {"id": 1}}`, true, "lsid"},
		{"lte", `{"n": {"$$lte": 5}}`, `{"n": 5.0}`, true, ""},
		{"lte greater", `{"n": {"$$lte": 5}}`, `{"n": {"$numberLong": "6"}}`, true, "n"},
		{"matchAsRoot", `{"d": {"$$matchAsRoot": {"a": 1}}}`, `{"d": {"a": 1, "b": 1}}`, true, ""},
		{"matchAsDocument", `{"$$matchAsDocument": {"a": 1}}`, `"{\"a\": 1}"`, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Match(ej(t, c.expected), ej(t, c.actual), c.root, entities)
			switch {
			case c.wantErrAtPath == "" && err != nil:
				t.Fatalf("want a match, got %v", err)
			case c.wantErrAtPath != "" && err == nil:
				t.Fatalf("want a mismatch at %q, got a match", c.wantErrAtPath)
			case c.wantErrAtPath != "":
				var m *Mismatch
				if !errors.As(err, &m) {
					t.Fatalf("want a *Mismatch, got %T %v", err, err)
				}
				want := c.wantErrAtPath
				if want == "-" {
					want = ""
				}
				if m.Path != want {
					t.Fatalf("mismatch at %q, want %q: %v", m.Path, want, err)
				}
			}
		})
	}
}

func TestMatchUnknownOperator(t *testing.T) {
	err := Match(ej(t, `{"$$nope": 1}`), ej(t, `1`), false, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "runner:") {
		t.Fatalf("want a runner error, got %v", err)
	}
}

func TestMatchDocuments(t *testing.T) {
	docs := []bson.Raw{ej(t, `{"_id": 1, "x": 1}`).Document(), ej(t, `{"_id": 2}`).Document()}
	if err := MatchDocuments(ej(t, `[{"_id": 1}, {"_id": 2}]`), docs, nil); err != nil {
		t.Fatalf("root-level elements should allow extra keys: %v", err)
	}
	if err := MatchDocuments(ej(t, `[{"_id": 1}]`), docs, nil); err == nil {
		t.Fatal("want a count mismatch")
	}
}

func TestEqual(t *testing.T) {
	if err := Equal(ej(t, `{"_id": 1, "x": {"y": 2}}`), ej(t, `{"x": {"y": 2.0}, "_id": 1}`)); err != nil {
		t.Fatalf("key order and numeric type should not matter: %v", err)
	}
	if err := Equal(ej(t, `{"_id": 1}`), ej(t, `{"_id": 1, "x": 1}`)); err == nil {
		t.Fatal("outcome documents must not have extra keys")
	}
	if err := Equal(ej(t, `{"x": {"$$exists": true}}`), ej(t, `{"x": 1}`)); err == nil {
		t.Fatal("outcome comparison must not interpret operators")
	}
}

func TestVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"4.0.10", "4.0.9", 1}, {"3.6", "4.2.0", -1}, {"7.0", "7.0.0", 0}, {"4.9.0-alpha4", "4.9", 0}} {
		a, _ := parseVersion(c.a)
		b, _ := parseVersion(c.b)
		if got := compareVersions(a, b); got != c.want {
			t.Errorf("compare(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if CheckSchema("1.4") != nil || CheckSchema("2.0") == nil || CheckSchema("1.99") == nil {
		t.Error("CheckSchema")
	}
}
