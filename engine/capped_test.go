package engine

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func parseCapped(t *testing.T, opts bson.D) (*cappedSpec, error) {
	t.Helper()
	raw, _ := bson.Marshal(opts)
	cs := &cappedSpec{}
	elems, _ := bsoncore.Document(raw).Elements()
	for _, el := range elems {
		if _, err := cs.parse("create", el.Key(), el.Value()); err != nil {
			return cs, err
		}
	}
	return cs, cs.check()
}

func TestCappedSpec(t *testing.T) {
	for _, tc := range []struct {
		opts      bson.D
		code      Code
		size, max int64
	}{
		{opts: bson.D{{Key: "capped", Value: true}, {Key: "size", Value: 1}}, size: 256},
		{opts: bson.D{{Key: "capped", Value: true}, {Key: "size", Value: 256}}, size: 256},
		{opts: bson.D{{Key: "capped", Value: true}, {Key: "size", Value: 257.5}, {Key: "max", Value: int64(-3)}}, size: 512},
		{opts: bson.D{{Key: "capped", Value: 1}, {Key: "size", Value: 4096}, {Key: "max", Value: 10}}, size: 4096, max: 10},
		{opts: bson.D{{Key: "capped", Value: true}, {Key: "size", Value: nil}}, code: ErrInvalidOptions},
		{opts: bson.D{{Key: "capped", Value: true}, {Key: "size", Value: 0}}, code: ErrValueNegative},
		{opts: bson.D{{Key: "capped", Value: true}, {Key: "size", Value: int64(1) << 51}}, code: ErrBadValue},
		{opts: bson.D{{Key: "capped", Value: true}, {Key: "size", Value: 10}, {Key: "max", Value: int64(1) << 31}}, code: ErrBadValue},
		{opts: bson.D{{Key: "capped", Value: false}, {Key: "max", Value: 1}}, code: ErrInvalidOptions},
		{opts: bson.D{{Key: "size", Value: "x"}}, code: ErrTypeMismatch},
		{opts: bson.D{{Key: "capped", Value: false}}},
	} {
		cs, err := parseCapped(t, tc.opts)
		if tc.code != 0 {
			ce, ok := err.(*CommandError)
			if !ok || ce.Code != tc.code {
				t.Errorf("%v: error %v, want code %d", tc.opts, err, tc.code)
			}
			continue
		}
		if err != nil || cs.size != tc.size || cs.max != tc.max {
			t.Errorf("%v: size %d max %d err %v, want size %d max %d", tc.opts, cs.size, cs.max, err, tc.size, tc.max)
		}
	}
}

func TestSplitMetaFields(t *testing.T) {
	raw, _ := bson.Marshal(bson.D{{Key: "a", Value: 1}, {Key: "r", Value: bson.D{{Key: "$meta", Value: "recordId"}}}, {Key: "k", Value: bson.D{{Key: "$meta", Value: "indexKey"}}}, {Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}})
	rest, names, keys := splitMetaFields(raw)
	if len(names) != 1 || names[0] != "r" || len(keys) != 1 || keys[0] != "k" {
		t.Fatalf("record id fields %v, index key fields %v", names, keys)
	}
	want, _ := bson.Marshal(bson.D{{Key: "a", Value: 1}, {Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}})
	if bson.Raw(rest).String() != bson.Raw(want).String() {
		t.Fatalf("rest %v, want %v", bson.Raw(rest), bson.Raw(want))
	}
	plain, _ := bson.Marshal(bson.D{{Key: "a", Value: 1}})
	if rest, names, keys := splitMetaFields(plain); names != nil || keys != nil || len(rest) != len(plain) {
		t.Fatalf("a projection without recordId changed: %v %v", bson.Raw(rest), names)
	}
}
