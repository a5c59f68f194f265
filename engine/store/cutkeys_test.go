package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func mustIndex(t *testing.T, s *Store, c *Collection, name string, key bson.D) *Collection {
	t.Helper()
	k, err := bson.Marshal(key)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := bson.Marshal(bson.D{{Key: "v", Value: 2}, {Key: "key", Value: bson.Raw(k)}, {Key: "name", Value: name}})
	out, err := s.CreateIndexes(context.Background(), c, []Index{{Name: name, Key: k, Spec: spec}})
	if err != nil {
		t.Fatalf("create index %s: %v", name, err)
	}
	return out
}

func strv(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// insertDoc inserts doc into unsharded c under its _id.
func insertDoc(s *Store, c *Collection, doc bson.D) error {
	raw, err := bson.Marshal(doc)
	if err != nil {
		return err
	}
	id := bsoncore.Document(raw).Lookup("_id")
	return s.Update(func(tx *Txn) error {
		return tx.Insert(s.Collection(c.DB, c.Name), DocKey(c.ID, 0, nil, value.EncodeKey(nil, id)), raw)
	})
}

// TestCutKeysMarked: an index is marked CutKeys by the first entry with a
// cut component (ascending or descending, leading or not), by a build
// over documents that have one, and a collection CutIDs by the first cut
// _id; short values mark nothing, and the marks survive a restart.
func TestCutKeysMarked(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	c := mustCreate(t, s, "db", "c")
	c = mustIndex(t, s, c, "a_1", bson.D{{Key: "a", Value: 1}})
	c = mustIndex(t, s, c, "n_1_b_-1", bson.D{{Key: "n", Value: 1}, {Key: "b", Value: -1}})
	long := strings.Repeat("z", 70000)
	flags := func() (a, nb, ids bool) {
		cur := s.Collection("db", "c")
		return cur.Index("a_1").CutKeys, cur.Index("n_1_b_-1").CutKeys, cur.CutIDs
	}
	if err := insertDoc(s, c, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: strings.Repeat("y", 1800)}, {Key: "n", Value: 1}, {Key: "b", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	if a, nb, ids := flags(); a || nb || ids {
		t.Fatalf("short values marked: %v %v %v", a, nb, ids)
	}
	if err := insertDoc(s, c, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1}, {Key: "n", Value: 1}, {Key: "b", Value: long}}); err != nil {
		t.Fatal(err)
	}
	if a, nb, ids := flags(); a || !nb || ids {
		t.Fatalf("after a long descending second field: a_1 %v, n_1_b_-1 %v, ids %v; want false true false", a, nb, ids)
	}
	if err := insertDoc(s, c, bson.D{{Key: "_id", Value: long}, {Key: "a", Value: long}}); err != nil {
		t.Fatal(err)
	}
	if a, nb, ids := flags(); !a || !nb || !ids {
		t.Fatalf("after a long _id and a: %v %v %v; want all true", a, nb, ids)
	}
	c = mustIndex(t, s, s.Collection("db", "c"), "a_-1", bson.D{{Key: "a", Value: -1}})
	if !c.Index("a_-1").CutKeys {
		t.Error("an index built over a document with a long value is not marked")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir)
	defer s.Close()
	cur := s.Collection("db", "c")
	if !cur.CutIDs || !cur.Index("a_1").CutKeys || !cur.Index("n_1_b_-1").CutKeys || !cur.Index("a_-1").CutKeys {
		t.Error("marks lost across a restart")
	}
}

// TestStorageLimits: a key or value Badger would refuse fails with the
// store's error, sizes and no hex dump, and leaves nothing written.
func TestStorageLimits(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	err := s.Update(func(tx *Txn) error { return tx.set(bytes.Repeat([]byte{'k'}, 70000), nil) })
	if !errors.Is(err, ErrKeyTooLarge) || len(err.Error()) > 200 {
		t.Errorf("70,000-byte key: %v; want ErrKeyTooLarge with a short message", err)
	}

	// An in-memory store keeps values of at most Badger's value threshold.
	big := bson.D{{Key: "_id", Value: 1}, {Key: "pad", Value: strings.Repeat("x", 2<<20)}}
	err = insertDoc(s, c, big)
	if !errors.Is(err, ErrValueTooLarge) || len(err.Error()) > 200 {
		t.Errorf("2 MB document in memory: %v; want ErrValueTooLarge with a short message", err)
	}

	// 40 fields (more than the engine allows; the store does not check)
	// of cut values make an entry over the limit: refused before the
	// document is written.
	var key, doc bson.D
	doc = bson.D{{Key: "_id", Value: 2}}
	for i := range 40 {
		f := fmt.Sprintf("f%d", i)
		key = append(key, bson.E{Key: f, Value: 1})
		doc = append(doc, bson.E{Key: f, Value: strings.Repeat("v", 3000)})
	}
	c = mustIndex(t, s, c, "wide", key)
	err = insertDoc(s, c, doc)
	if !errors.Is(err, ErrKeyTooLarge) || !strings.Contains(err.Error(), "wide") || len(err.Error()) > 200 {
		t.Errorf("40 long fields: %v; want ErrKeyTooLarge naming the index", err)
	}
	err = s.View(func(tx *Txn) error {
		_, err := tx.Get(DocKey(c.ID, 0, nil, value.EncodeKey(nil, i32v(2))))
		return err
	})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused document: %v; want ErrNotFound", err)
	}
	if counts, err := s.Counts(c); err != nil || counts.Docs != 0 || counts.IndexBytes != 0 {
		t.Errorf("counts after refusals: %+v, %v; want none", counts, err)
	}
	// 32 cut values (the most fields the engine allows an index) and a
	// cut _id fit.
	doc = bson.D{{Key: "_id", Value: strv(strings.Repeat("i", 5000))}}
	for i := range 32 {
		doc = append(doc, bson.E{Key: fmt.Sprintf("f%d", i), Value: strings.Repeat("v", 3000)})
	}
	if err := insertDoc(s, c, doc); err != nil {
		t.Errorf("32 long fields and a long _id: %v", err)
	}
}

// TestCutIDsSharded: a cut _id marks a sharded collection's _id index
// CutKeys too, inserted into it or carried in by sharding the collection
// that holds it.
func TestCutIDsSharded(t *testing.T) {
	s := openMem(t)
	long := strv(strings.Repeat("z", 5000))
	sc, err := s.CreateCollectionWith("db", "s", NewCollection{ShardKey: "k", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := bson.Marshal(bson.D{{Key: "_id", Value: strings.Repeat("z", 5000)}, {Key: "k", Value: 1}})
	k := i32v(1)
	key := DocKey(sc.ID, shard.Point(k), value.EncodeKey(nil, k), value.EncodeKey(nil, long))
	if err := s.Update(func(tx *Txn) error { return tx.Insert(sc, key, raw) }); err != nil {
		t.Fatal(err)
	}
	if cur := s.Collection("db", "s"); !cur.CutIDs || !cur.IDIndex.CutKeys {
		t.Errorf("sharded: CutIDs %v, _id index CutKeys %v; want both", cur.CutIDs, cur.IDIndex.CutKeys)
	}

	u := mustCreate(t, s, "db", "u")
	if err := insertDoc(s, u, bson.D{{Key: "_id", Value: strings.Repeat("z", 5000)}, {Key: "k", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	out, err := s.ShardCollection("db", "u", shard.Spec{Path: "k"}, 2, Throughput{RUs: 400})
	if err != nil {
		t.Fatal(err)
	}
	if !out.CutIDs || !out.IDIndex.CutKeys {
		t.Errorf("sharded after the fact: CutIDs %v, _id index CutKeys %v; want both", out.CutIDs, out.IDIndex.CutKeys)
	}
}
