package store

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func testIndex(t *testing.T, key bson.D, opts func(*Index)) *Index {
	t.Helper()
	raw, err := bson.Marshal(key)
	if err != nil {
		t.Fatal(err)
	}
	ix := &Index{Name: "t", Key: raw}
	if opts != nil {
		opts(ix)
	}
	if err := ix.finish(nil); err != nil {
		t.Fatal(err)
	}
	return ix
}

func docOf(t *testing.T, d bson.D) []byte {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func enc(vals ...any) []byte {
	var out []byte
	for _, v := range vals {
		if v == nil {
			out = value.EncodeKey(out, bsoncore.Value{Type: bsoncore.TypeNull})
			continue
		}
		t, data, err := bson.MarshalValue(v)
		if err != nil {
			panic(err)
		}
		out = value.EncodeKey(out, bsoncore.Value{Type: bsoncore.Type(t), Data: data})
	}
	return out
}

// TestIndexKeys: the keys a document gets, as MongoDB's index key
// generation gives them.
func TestIndexKeys(t *testing.T) {
	null := enc(nil)
	cases := []struct {
		name     string
		key      bson.D
		sparse   bool
		doc      bson.D
		want     [][]byte
		multikey bool
		err      error
	}{
		{name: "scalar", key: bson.D{{Key: "a", Value: 1}}, doc: bson.D{{Key: "a", Value: 5}}, want: [][]byte{enc(5)}},
		{name: "missing is null", key: bson.D{{Key: "a", Value: 1}}, doc: bson.D{{Key: "b", Value: 5}}, want: [][]byte{null}},
		{name: "sparse skips missing", key: bson.D{{Key: "a", Value: 1}}, sparse: true, doc: bson.D{{Key: "b", Value: 5}}},
		{name: "sparse keeps null", key: bson.D{{Key: "a", Value: 1}}, sparse: true, doc: bson.D{{Key: "a", Value: nil}}, want: [][]byte{null}},
		{name: "array elements, once each", key: bson.D{{Key: "a", Value: 1}}, doc: bson.D{{Key: "a", Value: bson.A{3, 1, 3}}}, want: [][]byte{enc(3), enc(1)}, multikey: true},
		{name: "empty array is undefined", key: bson.D{{Key: "a", Value: 1}}, doc: bson.D{{Key: "a", Value: bson.A{}}}, want: [][]byte{value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeUndefined})}, multikey: true},
		{name: "dotted through a document", key: bson.D{{Key: "a.b", Value: 1}}, doc: bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: "x"}}}}, want: [][]byte{enc("x")}},
		{name: "dotted through an array", key: bson.D{{Key: "a.b", Value: 1}}, doc: bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}}, bson.D{{Key: "c", Value: 2}}}}}, want: [][]byte{enc(1), null}, multikey: true},
		{name: "positional component", key: bson.D{{Key: "a.1", Value: 1}}, doc: bson.D{{Key: "a", Value: bson.A{7, 8}}}, want: [][]byte{enc(8), null}, multikey: true},
		{name: "compound", key: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, doc: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: bson.A{2, 3}}}, want: [][]byte{enc(1, 2), enc(1, 3)}, multikey: true},
		{name: "parallel arrays", key: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, doc: bson.D{{Key: "a", Value: bson.A{1}}, {Key: "b", Value: bson.A{2}}}, err: ErrParallelArrays},
		{name: "fields under one array", key: bson.D{{Key: "a.b", Value: 1}, {Key: "a.c", Value: 1}}, doc: bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}, {Key: "c", Value: 2}}}}}, want: [][]byte{enc(1, 2)}, multikey: true},
		{name: "document value", key: bson.D{{Key: "a", Value: 1}}, doc: bson.D{{Key: "a", Value: bson.D{{Key: "x", Value: 1}}}}, want: [][]byte{enc(bson.D{{Key: "x", Value: 1}})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := testIndex(t, tc.key, func(ix *Index) { ix.Sparse = tc.sparse })
			got, multikey, err := ix.IndexKeys(docOf(t, tc.doc))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if !slices.EqualFunc(got, tc.want, bytes.Equal) || multikey != tc.multikey {
				t.Errorf("keys %x multikey %v, want %x %v", got, multikey, tc.want, tc.multikey)
			}
		})
	}
}

// TestDescendingKeysReverseOrder: a descending field's keys sort in the
// reverse order of its values, whatever follows them in the key.
func TestDescendingKeysReverseOrder(t *testing.T) {
	ix := testIndex(t, bson.D{{Key: "a", Value: -1}, {Key: "b", Value: 1}}, nil)
	values := []any{nil, -5, 0, 2.5, 3, "", "a", "ab", "b", bson.D{{Key: "x", Value: 1}}, true, bson.A{}}
	var keys [][]byte
	for _, v := range values {
		if _, isArray := v.(bson.A); isArray {
			continue
		}
		ks, _, err := ix.IndexKeys(docOf(t, bson.D{{Key: "a", Value: v}, {Key: "b", Value: "zzz"}}))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, ks[0])
	}
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) <= 0 {
			t.Errorf("key of %v does not sort after the key of %v", values[i-1], values[i])
		}
	}
}

// TestWildcardKeys: a wildcard index keys every leaf by its path.
func TestWildcardKeys(t *testing.T) {
	ix := testIndex(t, bson.D{{Key: "$**", Value: 1}}, nil)
	got, multikey, err := ix.IndexKeys(docOf(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.D{{Key: "b", Value: 2}}}, {Key: "c", Value: bson.A{1, bson.D{{Key: "d", Value: 3}}}}}))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{enc("a.b", 2), enc("c", 1), enc("c.d", 3)}
	if !slices.EqualFunc(got, want, bytes.Equal) || !multikey {
		t.Errorf("keys %x (multikey %v), want %x", got, multikey, want)
	}
	sub := testIndex(t, bson.D{{Key: "a.$**", Value: 1}}, nil)
	got, _, _ = sub.IndexKeys(docOf(t, bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: 2}}}, {Key: "z", Value: 1}}))
	if !slices.EqualFunc(got, [][]byte{enc("a.b", 2)}, bytes.Equal) {
		t.Errorf("a.$** keys %x", got)
	}
}
