package shard

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		key  bson.D
		want Spec
		err  error
	}{
		{bson.D{{Key: "region", Value: "hashed"}}, Spec{Path: "region"}, nil},
		{bson.D{{Key: "a.b.c", Value: "hashed"}}, Spec{Path: "a.b.c"}, nil},
		{bson.D{{Key: "_id", Value: "hashed"}}, Spec{Path: "_id"}, nil},
		{bson.D{{Key: "region", Value: 1}}, Spec{Path: "region", Ranged: true}, nil},
		{bson.D{{Key: "region", Value: 1.0}}, Spec{Path: "region", Ranged: true}, nil},
		{bson.D{{Key: "region", Value: int64(1)}}, Spec{Path: "region", Ranged: true}, nil},
		{bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, Spec{Path: "a", Ranged: true, Rest: []Field{{Path: "b"}}}, nil},
		{bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: 1}}, Spec{Path: "a", Rest: []Field{{Path: "b"}}}, nil},
		{bson.D{{Key: "a", Value: 1}, {Key: "b", Value: "hashed"}, {Key: "c", Value: 1}}, Spec{Path: "a", Ranged: true, Rest: []Field{{Path: "b", Hashed: true}, {Path: "c"}}}, nil},
		{bson.D{{Key: "region", Value: -1.0}}, Spec{}, ErrRangeKey},
		{bson.D{{Key: "region", Value: 2}}, Spec{}, ErrRangeKey},
		{bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}}, Spec{}, ErrCompoundKey},
		{bson.D{{Key: "a", Value: 1}, {Key: "a.b", Value: 1}}, Spec{}, ErrDuplicateField},
		{bson.D{}, Spec{}, ErrBadSpec},
		{bson.D{{Key: "region", Value: "text"}}, Spec{}, ErrBadSpec},
		{bson.D{{Key: "region", Value: true}}, Spec{}, ErrBadSpec},
		{bson.D{{Key: "a..b", Value: "hashed"}}, Spec{}, ErrBadSpec},
		{bson.D{{Key: "$a", Value: "hashed"}}, Spec{}, ErrBadSpec},
	} {
		raw, _ := bson.Marshal(c.key)
		spec, err := ParseSpec(raw)
		if !errors.Is(err, c.err) || (err == nil && !spec.Equal(c.want)) {
			t.Errorf("ParseSpec(%v) = %#v, %v; want %#v, %v", c.key, spec, err, c.want, c.err)
		}
		if err == nil && string(spec.Doc()) != string(mustMarshal(t, normalKey(c.key))) {
			t.Errorf("ParseSpec(%v).Doc() = %v", c.key, bson.Raw(spec.Doc()))
		}
	}
	raw, _ := bson.Marshal(bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}})
	_, err := ParseSpec(raw)
	if want := `Shard key { a: "hashed", b: "hashed" } can contain at most one 'hashed' field, and/or multiple numerical fields set to a value of 1. Failed to parse field b`; err == nil || err.Error() != want {
		t.Errorf("two hashed fields: %v, want %s", err, want)
	}
	if s, err := ParsePaths([]string{"/tenant", "/user/id", "session"}); err != nil ||
		!s.Equal(Spec{Path: "tenant", Rest: []Field{{Path: "user.id"}, {Path: "session"}}}) {
		t.Errorf("ParsePaths = %#v, %v", s, err)
	}
	if _, err := ParsePaths([]string{"a", "b", "c", "d"}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("four levels: %v", err)
	}
	if _, err := ParsePath(""); !errors.Is(err, ErrBadSpec) {
		t.Errorf("ParsePath(\"\"): %v", err)
	}
	if s, _ := ParsePath("a.b"); string(s.Doc()) != string(mustMarshal(t, bson.D{{Key: "a.b", Value: "hashed"}})) {
		t.Errorf("Doc() = %v", bson.Raw(s.Doc()))
	}
}

// normalKey is a key pattern as Doc writes it: 1 as an int32.
func normalKey(d bson.D) bson.D {
	out := bson.D{}
	for _, e := range d {
		if _, ok := e.Value.(string); ok {
			out = append(out, e)
		} else {
			out = append(out, bson.E{Key: e.Key, Value: int32(1)})
		}
	}
	return out
}

func mustMarshal(t *testing.T, d bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExtract(t *testing.T) {
	for _, c := range []struct {
		path string
		doc  bson.D
		want any
		err  error
	}{
		{"region", bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "EU"}}, "EU", nil},
		{"region", bson.D{{Key: "region", Value: nil}}, bson.Null{}, nil},
		{"a.b", bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: int32(5)}}}}, int32(5), nil},
		{"a.b", bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: bson.D{{Key: "c", Value: 1}}}}}}, bson.D{{Key: "c", Value: 1}}, nil},
		{"region", bson.D{{Key: "_id", Value: 1}}, nil, ErrMissing},
		{"a.b", bson.D{{Key: "a", Value: 5}}, nil, ErrMissing},
		{"a.b", bson.D{{Key: "a", Value: bson.D{}}}, nil, ErrMissing},
		{"region", bson.D{{Key: "region", Value: bson.A{"EU"}}}, nil, ErrArray},
		{"a.b", bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}}}}}, nil, ErrArray},
		{"region", bson.D{{Key: "region", Value: bson.Regex{Pattern: "x"}}}, nil, ErrRegex},
	} {
		spec := Spec{Path: c.path}
		v, err := spec.Extract(mustMarshal(t, c.doc))
		if !errors.Is(err, c.err) {
			t.Errorf("Extract(%s) from %v: error %v, want %v", c.path, c.doc, err, c.err)
			continue
		}
		if err != nil {
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Path != c.path {
				t.Errorf("Extract(%s): error %v has no path", c.path, err)
			}
			continue
		}
		want := mkValue(t, c.want)
		if v.Type != want.Type || string(v.Data) != string(want.Data) {
			t.Errorf("Extract(%s) from %v = %v, want %v", c.path, c.doc, v, want)
		}
	}
	_, err := Spec{Path: "region"}.Extract(mustMarshal(t, bson.D{{Key: "x", Value: 1}}))
	if err == nil || err.Error() != "document does not contain shard key at 'region'" {
		t.Errorf("missing key message: %v", err)
	}
}
