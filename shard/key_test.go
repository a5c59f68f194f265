package shard

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		key  bson.D
		path string
		err  error
	}{
		{bson.D{{Key: "region", Value: "hashed"}}, "region", nil},
		{bson.D{{Key: "a.b.c", Value: "hashed"}}, "a.b.c", nil},
		{bson.D{{Key: "_id", Value: "hashed"}}, "_id", nil},
		{bson.D{{Key: "region", Value: 1}}, "", ErrRangeKey},
		{bson.D{{Key: "region", Value: -1.0}}, "", ErrRangeKey},
		{bson.D{{Key: "region", Value: "hashed"}, {Key: "b", Value: 1}}, "", ErrCompoundKey},
		{bson.D{}, "", ErrBadSpec},
		{bson.D{{Key: "region", Value: "text"}}, "", ErrBadSpec},
		{bson.D{{Key: "region", Value: true}}, "", ErrBadSpec},
		{bson.D{{Key: "a..b", Value: "hashed"}}, "", ErrBadSpec},
		{bson.D{{Key: "$a", Value: "hashed"}}, "", ErrBadSpec},
	} {
		raw, _ := bson.Marshal(c.key)
		spec, err := ParseSpec(raw)
		if !errors.Is(err, c.err) || (err == nil && spec.Path != c.path) {
			t.Errorf("ParseSpec(%v) = %+v, %v; want %q, %v", c.key, spec, err, c.path, c.err)
		}
	}
	if _, err := ParsePath(""); !errors.Is(err, ErrBadSpec) {
		t.Errorf("ParsePath(\"\"): %v", err)
	}
	if s, _ := ParsePath("a.b"); string(s.Doc()) != string(mustMarshal(t, bson.D{{Key: "a.b", Value: "hashed"}})) {
		t.Errorf("Doc() = %v", bson.Raw(s.Doc()))
	}
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
