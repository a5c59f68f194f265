package plan

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// fixture is a store in a temporary directory, read through the storage
// seam as the engine reads it.
type fixture struct {
	t  *testing.T
	s  storage.Storage
	pl *Planner
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir(), SyncInterval: -1})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	s := storage.Local(st)
	return &fixture{t: t, s: s, pl: &Planner{Storage: s}}
}

// sharded creates db.c sharded on k over n physical partitions.
func (f *fixture) sharded(n int) *store.Collection {
	f.t.Helper()
	c, err := f.s.ShardCollection("db", "c", shard.Spec{Path: "k"}, n, store.Throughput{RUs: 400 * n})
	if err != nil {
		f.t.Fatalf("shard: %v", err)
	}
	return c
}

// index adds an index on key to db.c and returns the collection as it is
// then.
func (f *fixture) index(name string, key bson.D) *store.Collection {
	f.t.Helper()
	raw, err := bson.Marshal(key)
	if err != nil {
		f.t.Fatal(err)
	}
	spec, err := bson.Marshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: key}, {Key: "name", Value: name}})
	if err != nil {
		f.t.Fatal(err)
	}
	c := f.s.Collection("db", "c")
	if _, err := f.s.CreateIndexesWithProgress(context.Background(), c, []store.Index{{Name: name, Key: raw, Spec: spec}}, nil); err != nil {
		f.t.Fatalf("create index %s: %v", name, err)
	}
	return f.s.Collection("db", "c")
}

// insert writes documents {_id, k, x} into db.c.
func (f *fixture) insert(docs ...bson.D) {
	f.t.Helper()
	c := f.s.Collection("db", "c")
	err := f.s.Update(func(tx storage.Txn) error {
		for _, d := range docs {
			raw, err := bson.Marshal(d)
			if err != nil {
				return err
			}
			if err := tx.Insert(c, docKey(c, raw), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.t.Fatalf("insert: %v", err)
	}
}

// docKey is where a document of c is stored.
func docKey(c *store.Collection, doc bsoncore.Document) []byte {
	id := doc.Lookup("_id")
	if !c.Sharded() {
		return store.DocKey(c.ID, 0, nil, value.EncodeKey(nil, id))
	}
	sk := doc.Lookup(c.ShardKey)
	return store.DocKey(c.ID, shard.Point(sk), value.EncodeKey(nil, sk), value.EncodeKey(nil, id))
}

func raw(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	if d == nil {
		d = bson.D{}
	}
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func int32Value(n int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, n)}
}

// TestRangesFrom: a span resumes inside its range or its logical
// partitions, and has nothing left past its end.
func TestRangesFrom(t *testing.T) {
	k := func(s string) []byte { return []byte(s) }
	whole := Span{ID: "0", Start: k("d1"), End: k("d5")}
	for _, tc := range []struct {
		resume string
		want   []store.KeyRange
	}{
		{"", []store.KeyRange{{Start: k("d1"), End: k("d5")}}},
		{"d0", []store.KeyRange{{Start: k("d1"), End: k("d5")}}},
		{"d3", []store.KeyRange{{Start: k("d3"), End: k("d5")}}},
		{"d5", nil},
		{"d7", nil},
	} {
		var resume []byte
		if tc.resume != "" {
			resume = k(tc.resume)
		}
		if got := whole.RangesFrom(resume); !sameRanges(got, tc.want) {
			t.Errorf("whole span from %q: %q, want %q", tc.resume, got, tc.want)
		}
	}
	if got := (Span{Start: k("d1")}).RangesFrom(k("d9")); !sameRanges(got, []store.KeyRange{{Start: k("d9")}}) {
		t.Errorf("last span from d9: %q", got)
	}
	lps := Span{ID: "1", Start: k("d1"), End: k("d9"), LPs: []store.KeyRange{
		{Start: k("d2"), End: k("d3")}, {Start: k("d4"), End: k("d5")}, {Start: k("d6"), End: k("d7")},
	}}
	for _, tc := range []struct {
		resume string
		want   []store.KeyRange
	}{
		{"", lps.LPs},
		{"d2", lps.LPs},
		{"d4x", []store.KeyRange{{Start: k("d4x"), End: k("d5")}, {Start: k("d6"), End: k("d7")}}},
		{"d5", lps.LPs[2:]},
		{"d55", lps.LPs[2:]},
		{"d7", nil},
	} {
		var resume []byte
		if tc.resume != "" {
			resume = k(tc.resume)
		}
		if got := lps.RangesFrom(resume); !sameRanges(got, tc.want) {
			t.Errorf("logical partitions from %q: %q, want %q", tc.resume, got, tc.want)
		}
	}
	for key, in := range map[string]bool{"d1": false, "d2": true, "d2z": true, "d3": false, "d45": true, "d6": true, "d7": false, "d9": false} {
		if lps.Contains(k(key)) != in {
			t.Errorf("Contains(%q) = %v", key, !in)
		}
	}
}

func sameRanges(a, b []store.KeyRange) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Start, b[i].Start) || !bytes.Equal(a[i].End, b[i].End) {
			return false
		}
	}
	return true
}

// TestRoutePartitions: a filter that pins the shard key reads the
// logical partitions of its values in the partitions that own them, and
// every other filter reads all partitions whole.
func TestRoutePartitions(t *testing.T) {
	f := newFixture(t)
	c := f.sharded(4)
	all := RoutePartitions(c, raw(t, bson.D{{Key: "x", Value: 1}}))
	if len(all) != 4 || ByShardKey(all) || RoutedSpans(c, all) {
		t.Fatalf("a filter without the shard key: %d spans, by shard key %v", len(all), ByShardKey(all))
	}
	for i, sp := range all {
		if sp.ID != fmt.Sprint(i) || sp.LPs != nil {
			t.Errorf("span %d: id %s, lps %v", i, sp.ID, sp.LPs)
		}
		if i > 0 && !bytes.Equal(all[i-1].End, sp.Start) {
			t.Errorf("span %d does not start where span %d ends", i, i-1)
		}
	}
	if all[3].End != nil || !bytes.Equal(all[0].Start, append(store.DocPrefix(c.ID), 0, 0, 0, 0, 0, 0, 0, 0)) {
		t.Errorf("the spans do not cover the collection: %x .. %x", all[0].Start, all[3].End)
	}

	// $in of 60 values, some repeated: one logical partition per value, in
	// the partition the value's point falls in (the naive reference:
	// look each value up in the partition map).
	var in bson.A
	for i := range 60 {
		in = append(in, int32(i%50))
	}
	spans := RoutePartitions(c, raw(t, bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: in}}}}))
	if !ByShardKey(spans) || !RoutedSpans(c, spans) || LogicalPartitionCount(spans) != 50 {
		t.Fatalf("$in of 50 values: by shard key %v, %d logical partitions", ByShardKey(spans), LogicalPartitionCount(spans))
	}
	m := c.Map()
	for v := range int32(50) {
		sk := int32Value(v)
		key := store.DocKey(c.ID, shard.Point(sk), value.EncodeKey(nil, sk), value.EncodeKey(nil, int32Value(7)))
		owner := m.At(m.Lookup(shard.Point(sk))).IDString()
		holders := 0
		for _, sp := range spans {
			if sp.Contains(key) {
				holders++
				if sp.ID != owner {
					t.Errorf("k=%d is read in partition %s; partition %s owns it", v, sp.ID, owner)
				}
			}
		}
		if holders != 1 {
			t.Errorf("k=%d is in %d spans", v, holders)
		}
	}
	other := int32Value(50)
	if key := store.DocKey(c.ID, shard.Point(other), value.EncodeKey(nil, other), nil); containedIn(spans, key) {
		t.Error("a document of k=50 is read by a filter on k in [0, 50)")
	}
	for i := 1; i < len(spans); i++ {
		if bytes.Compare(spans[i-1].Start, spans[i].Start) >= 0 {
			t.Errorf("spans out of hash order at %d", i)
		}
	}

	one := RoutePartitions(c, raw(t, bson.D{{Key: "k", Value: 3}}))
	if len(one) != 1 || LogicalPartitionCount(one) != 1 {
		t.Fatalf("equality on the shard key: %d spans, %d logical partitions", len(one), LogicalPartitionCount(one))
	}
}

func containedIn(spans []Span, key []byte) bool {
	for _, sp := range spans {
		if sp.Contains(key) {
			return true
		}
	}
	return false
}

// handMade is a collection with the given indexes (key patterns parsed by
// hand, as the catalog would).
func handMade(ixs ...*store.Index) *store.Collection {
	return &store.Collection{DB: "db", Name: "c", ID: 1, Indexes: ixs}
}

func ix(name string, fields ...store.IndexField) *store.Index {
	key := bson.D{}
	for _, f := range fields {
		dir := 1
		if f.Desc {
			dir = -1
		}
		key = append(key, bson.E{Key: f.Path, Value: int32(dir)})
	}
	b, _ := bson.Marshal(key)
	return &store.Index{Name: name, Key: b, Fields: fields}
}

// TestIndexFor: the plan with the most leading equalities wins, then a
// range, a sort, fewer fields; indexes that cannot hold every match are
// not used.
func TestIndexFor(t *testing.T) {
	a := ix("a_1", store.IndexField{Path: "a"})
	ab := ix("a_1_b_1", store.IndexField{Path: "a"}, store.IndexField{Path: "b"})
	bDesc := ix("b_-1", store.IndexField{Path: "b", Desc: true})
	hidden := ix("h_1", store.IndexField{Path: "h"})
	hidden.Hidden = true
	building := ix("g_1", store.IndexField{Path: "g"})
	building.Building = true
	sparse := ix("s_1", store.IndexField{Path: "s"})
	sparse.Sparse = true
	partial := ix("p_1", store.IndexField{Path: "p"})
	partial.Partial, _ = bson.Marshal(bson.D{{Key: "live", Value: true}})
	c := handMade(a, ab, bDesc, hidden, building, sparse, partial)

	for _, tc := range []struct {
		name   string
		filter bson.D
		sort   bson.D
		want   string // "" : a collection scan
		check  func(t *testing.T, ip *IndexPlan)
	}{
		{name: "two equalities", filter: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 2}}, want: "a_1_b_1", check: func(t *testing.T, ip *IndexPlan) {
			if !ip.points || ip.Seeks() != 1 || len(ip.Bounds) != 2 || ip.Bounds[1].Preds[0].Op != "$eq" {
				t.Errorf("points %v, seeks %d, bounds %+v", ip.points, ip.Seeks(), ip.Bounds)
			}
		}},
		{name: "a range on the leading field", filter: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}, {Key: "$lte", Value: 9}}}}, want: "a_1", check: func(t *testing.T, ip *IndexPlan) {
			if !ip.hasRange || ip.Seeks() != 1 || len(ip.Bounds[0].Preds) != 2 {
				t.Errorf("range %v, seeks %d, bounds %+v", ip.hasRange, ip.Seeks(), ip.Bounds)
			}
		}},
		{name: "$in", filter: bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{3, 1, 2, 1}}}}}, want: "a_1", check: func(t *testing.T, ip *IndexPlan) {
			if ip.Seeks() != 3 {
				t.Errorf("$in of three values reads %d ranges", ip.Seeks())
			}
		}},
		{name: "a sort the index gives backwards", sort: bson.D{{Key: "b", Value: 1}}, want: "b_-1", check: func(t *testing.T, ip *IndexPlan) {
			if !ip.Sorted || !ip.Reverse || ip.Bounds[0].Interval != "[MinKey, MaxKey]" {
				t.Errorf("sorted %v, reverse %v, bounds %+v", ip.Sorted, ip.Reverse, ip.Bounds)
			}
		}},
		{name: "no index on the field", filter: bson.D{{Key: "z", Value: 1}}},
		{name: "a hidden index", filter: bson.D{{Key: "h", Value: 1}}},
		{name: "an index being built", filter: bson.D{{Key: "g", Value: 1}}},
		{name: "a sparse index and null", filter: bson.D{{Key: "s", Value: nil}}},
		{name: "a sparse index", filter: bson.D{{Key: "s", Value: 1}}, want: "s_1"},
		{name: "a partial index the filter does not imply", filter: bson.D{{Key: "p", Value: 1}}},
		{name: "a partial index the filter implies", filter: bson.D{{Key: "p", Value: 1}, {Key: "live", Value: true}}, want: "p_1"},
		{name: "an array is left to the filter", filter: bson.D{{Key: "a", Value: bson.A{1, 2}}}},
		{name: "$or of indexed branches", filter: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "b", Value: 2}}}}}, want: "$or", check: func(t *testing.T, ip *IndexPlan) {
			if len(ip.Branches) != 2 || ip.Branches[0].Ix.Name != "a_1" || ip.Branches[1].Ix.Name != "b_-1" || !ip.dedupe() {
				t.Errorf("branches %+v", ip.Branches)
			}
		}},
		{name: "$or with a branch no index serves", filter: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "z", Value: 2}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sort bsoncore.Document
			if tc.sort != nil {
				sort = raw(t, tc.sort)
			}
			ip := IndexFor(c, raw(t, tc.filter), sort)
			got := ""
			switch {
			case ip == nil:
			case ip.Branches != nil:
				got = "$or"
			default:
				got = ip.Ix.Name
			}
			if got != tc.want {
				t.Fatalf("chose %q, want %q", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, ip)
			}
		})
	}

	if got := IndexOfHint(c, "", raw(t, bson.D{{Key: "a", Value: 1.0}, {Key: "b", Value: int64(1)}})); got != ab {
		t.Errorf("hint by key pattern {a: 1.0, b: 1}: %v", got)
	}
	if got := IndexOfHint(c, "g_1", nil); got != nil {
		t.Errorf("hint of an index being built: %v", got.Name)
	}
	if ip := HintedIndex(a, raw(t, bson.D{{Key: "z", Value: 1}}), nil); ip == nil || ip.Seeks() != 1 || ip.Bounds[0].Interval != "[MinKey, MaxKey]" {
		t.Errorf("a hinted index that bounds nothing reads it whole: %+v", ip)
	}
}

// TestIndexScan: a read through an index examines only the keys in its
// bounds, where a collection scan examines every document, and both
// return the same documents.
func TestIndexScan(t *testing.T) {
	f := newFixture(t)
	if _, err := f.s.CreateCollection("db", "c", nil); err != nil {
		t.Fatal(err)
	}
	f.index("a_1", bson.D{{Key: "a", Value: 1}})
	var docs []bson.D
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(99 - i)}})
	}
	f.insert(docs...)
	c := f.s.Collection("db", "c")
	filterDoc := raw(t, bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 10}, {Key: "$lt", Value: 20}}}})
	run := func(useIndex bool) ([][]byte, Stats) {
		filter, err := query.Compile(filterDoc)
		if err != nil {
			t.Fatal(err)
		}
		p := &Read{Coll: c, Filter: filter}
		p.Route(filterDoc)
		if useIndex {
			p.ChooseIndex(filterDoc, nil)
			if p.Index == nil || p.Index.Ix.Name != "a_1" {
				t.Fatalf("no index plan for %v", bson.Raw(filterDoc))
			}
		}
		src := f.pl.Source(p)
		var out [][]byte
		for {
			batch, done, err := src.NextBatch(context.Background(), 3, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, batch...)
			if done {
				return out, src.Stats()
			}
		}
	}
	byIndex, ist := run(true)
	byScan, sst := run(false)
	if len(byIndex) != 10 || len(byScan) != 10 {
		t.Fatalf("the index read returned %d documents, the scan %d; want 10", len(byIndex), len(byScan))
	}
	if ist.KeysExamined != 10 || ist.DocsExamined != 10 || ist.Returned != 10 {
		t.Errorf("index read: %+v, want 10 keys and 10 documents examined", ist)
	}
	if sst.DocsExamined != 100 || sst.KeysExamined != 0 {
		t.Errorf("collection scan: %+v, want 100 documents examined", sst)
	}
	seen := map[string]bool{}
	for _, d := range byScan {
		seen[string(d)] = true
	}
	for _, d := range byIndex {
		if !seen[string(d)] {
			t.Errorf("the index read returned %v, which the scan did not", bson.Raw(d))
		}
	}
}

// TestFanOutTallies: a read over several partitions reads each in
// parallel, returns every match once, and its per-partition tallies add
// up to its totals.
func TestFanOutTallies(t *testing.T) {
	f := newFixture(t)
	c := f.sharded(4)
	var docs []bson.D
	for i := range 400 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(i % 97)}, {Key: "x", Value: int32(i % 2)}})
	}
	f.insert(docs...)
	filterDoc := raw(t, bson.D{{Key: "x", Value: 1}})
	filter, err := query.Compile(filterDoc)
	if err != nil {
		t.Fatal(err)
	}
	p := &Read{Coll: c, Filter: filter}
	p.Route(filterDoc)
	if !p.fanOut() {
		t.Fatalf("a filter without the shard key reads %d partitions", len(p.Spans))
	}
	src := f.pl.Source(p)
	ids := map[int32]bool{}
	for {
		batch, done, err := src.NextBatch(context.Background(), 50, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range batch {
			id := bsoncore.Document(d).Lookup("_id").Int32()
			if ids[id] || id%2 != 1 {
				t.Errorf("document %d returned twice or not a match", id)
			}
			ids[id] = true
		}
		if done {
			break
		}
	}
	if len(ids) != 200 {
		t.Fatalf("%d documents returned, want 200", len(ids))
	}
	total := src.Stats()
	var sum Stats
	for i := range p.Spans {
		st := src.Tally(i)
		if st.DocsExamined == 0 {
			t.Errorf("partition %d examined nothing", i)
		}
		sum.DocsExamined += st.DocsExamined
		sum.Returned += st.Returned
		sum.BytesRead += st.BytesRead
	}
	if sum.DocsExamined != 400 || total.DocsExamined != 400 || sum.Returned != 200 || sum.BytesRead != total.BytesRead {
		t.Errorf("tallies add up to %+v; totals %+v", sum, total)
	}
	if len(src.PartitionStats()) != 4 {
		t.Errorf("per-partition statistics of %d partitions", len(src.PartitionStats()))
	}
}

// TestWeighShardKeyScan: a read routed by the shard key keeps a range
// index plan only when the index holds fewer of its documents than its
// logical partitions do; an index plan of whole keys is narrowed to the
// logical partitions and always kept.
func TestWeighShardKeyScan(t *testing.T) {
	f := newFixture(t)
	f.sharded(2)
	f.index("x_1", bson.D{{Key: "x", Value: 1}})
	var docs []bson.D
	id := int32(0)
	for _, k := range []int32{1, 2} {
		for i := range 200 {
			x := int32(0)
			if i == 0 {
				x = 1 // one document per logical partition with x > 0
			}
			docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: k}, {Key: "x", Value: x}})
			id++
		}
	}
	f.insert(docs...)
	c := f.s.Collection("db", "c")
	plan := func(filter bson.D) *Read {
		t.Helper()
		d := raw(t, filter)
		q, err := query.Compile(d)
		if err != nil {
			t.Fatal(err)
		}
		p := &Read{Coll: c, Filter: q}
		p.Route(d)
		p.ChooseIndex(d, nil)
		if !p.ShardKeyScan || p.Index == nil {
			t.Fatalf("%v: shard-key scan %v, index %v", filter, p.ShardKeyScan, p.Index)
		}
		f.pl.WeighShardKeyScan(p)
		return p
	}
	in := bson.D{{Key: "$in", Value: bson.A{1, 2}}}
	if p := plan(bson.D{{Key: "k", Value: in}, {Key: "x", Value: bson.D{{Key: "$gt", Value: 0}}}}); p.Index == nil {
		t.Error("x > 0 holds 2 of the logical partitions' 400 documents: the index should be kept")
	}
	if p := plan(bson.D{{Key: "k", Value: in}, {Key: "x", Value: bson.D{{Key: "$gte", Value: 0}}}}); p.Index != nil {
		t.Error("x >= 0 holds all 400 documents: reading the logical partitions should win")
	}
	if p := plan(bson.D{{Key: "k", Value: in}, {Key: "x", Value: 0}}); p.Index == nil || p.Index.Seeks() != 2 {
		t.Errorf("x = 0 is narrowed to the two logical partitions' entries and kept: %+v", p.Index)
	}
}
