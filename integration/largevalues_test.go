package integration

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Values whose key encodings are longer than a key may be (value.MaxKeyLen)
// are stored with cut keys: equal values still have equal keys, values
// sharing the cut prefix order by hash. These tests hold 70 KB and 2 MB
// values as _id, shard-key value and indexed value, and check every
// query against a model and against a collection scan.

// largeKeyString is the key encoding of string s.
func largeKeyString(s string) []byte {
	return value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)})
}

// sharedPair is two 70 KB strings lo < hi that share their first 60 KB
// and whose cut keys order the other way round: a read that took key
// order for value order would return them swapped.
func sharedPair(t *testing.T, prefix string) (lo, hi string) {
	t.Helper()
	for i := range 100 {
		lo = prefix + fmt.Sprintf("x%04d", i) + strings.Repeat("x", 9995)
		hi = prefix + fmt.Sprintf("y%04d", i) + strings.Repeat("y", 9995)
		klo, khi := largeKeyString(lo), largeKeyString(hi)
		plo, cutLo := value.CutPrefix(klo)
		phi, cutHi := value.CutPrefix(khi)
		if !cutLo || !cutHi || !bytes.Equal(plo, phi) {
			t.Fatal("70 KB strings sharing 60 KB do not have cut keys with one prefix")
		}
		if bytes.Compare(klo, khi) > 0 {
			return lo, hi
		}
	}
	t.Fatal("no pair whose keys order against their values")
	return "", ""
}

// largeScene is one place large values go: the field, how the collection
// is made, and how a document holds value v.
type largeScene struct {
	name  string
	field string
	setup func(t *testing.T, db *mongo.Database)
	doc   func(n int, v string) bson.D
	extra bson.D // conditions every filter carries (a compound index's leading field)
	index bool   // queries on field should use a secondary index
}

func shardedColl(shardKey string) func(t *testing.T, db *mongo.Database) {
	return func(t *testing.T, db *mongo.Database) {
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
			{Key: "shardKey", Value: shardKey}, {Key: "offerThroughput", Value: 24000}})
	}
}

func withIndex(keys bson.D, unique bool, then func(t *testing.T, db *mongo.Database)) func(t *testing.T, db *mongo.Database) {
	return func(t *testing.T, db *mongo.Database) {
		if then != nil {
			then(t, db)
		}
		if _, err := db.Collection("c").Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: keys, Options: options.Index().SetUnique(unique)}); err != nil {
			t.Fatal(err)
		}
	}
}

// largeRun is one scene's collection and the model of what it holds.
type largeRun struct {
	sc    largeScene
	db    *mongo.Database
	c     *mongo.Collection
	model map[int]string // n -> the value at field
}

func (r *largeRun) filter(cond any) bson.D {
	f := append(bson.D{}, r.sc.extra...)
	if cond != nil {
		f = append(f, bson.E{Key: r.sc.field, Value: cond})
	}
	return f
}

// find returns the n of each document found, in the order returned.
func (r *largeRun) find(t *testing.T, filter, sort bson.D, skip, limit int64, natural bool) []int {
	t.Helper()
	o := options.Find().SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "n", Value: 1}})
	if sort != nil {
		o.SetSort(sort)
	}
	if skip > 0 {
		o.SetSkip(skip)
	}
	if limit > 0 {
		o.SetLimit(limit)
	}
	if natural {
		o.SetHint(bson.D{{Key: "$natural", Value: 1}})
	}
	ctx := testCtx(t)
	cur, err := r.c.Find(ctx, filter, o)
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	defer cur.Close(ctx)
	out := []int{}
	for cur.Next(ctx) {
		out = append(out, int(cur.Current.Lookup("n").AsInt64()))
	}
	if err := cur.Err(); err != nil {
		t.Fatalf("find: %v", err)
	}
	return out
}

// want is the model's answer: the n of the values match accepts, in
// value order (dir 1 or -1) or by n (dir 0), skipped and limited.
func (r *largeRun) want(match func(string) bool, dir int, skip, limit int64) []int {
	out := []int{}
	for n, v := range r.model {
		if match(v) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b int) int {
		if dir == 0 {
			return a - b
		}
		return dir * strings.Compare(r.model[a], r.model[b])
	})
	out = out[min(int(skip), len(out)):]
	if limit > 0 && int64(len(out)) > limit {
		out = out[:limit]
	}
	return out
}

// check runs the query {field: cond} unsorted and sorted both ways (and,
// with paged set, sorted with skip and limit), as planned and as a
// collection scan, and compares each with the model.
func (r *largeRun) check(t *testing.T, what string, cond any, match func(string) bool, paged bool) {
	t.Helper()
	f := r.sc.field
	type query struct {
		sort        bson.D
		dir         int
		skip, limit int64
	}
	queries := []query{{nil, 0, 0, 0}, {bson.D{{Key: f, Value: 1}}, 1, 0, 0}, {bson.D{{Key: f, Value: -1}}, -1, 0, 0}}
	if paged {
		queries = append(queries, query{bson.D{{Key: f, Value: 1}}, 1, 1, 2}, query{bson.D{{Key: f, Value: -1}}, -1, 0, 1})
	}
	for _, q := range queries {
		want := r.want(match, q.dir, q.skip, q.limit)
		for _, natural := range []bool{false, true} {
			got := r.find(t, r.filter(cond), q.sort, q.skip, q.limit, natural)
			if q.dir == 0 {
				slices.Sort(got)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, sort %v skip %d limit %d, $natural %v: got n %v, want %v", what, q.sort, q.skip, q.limit, natural, got, want)
			}
		}
	}
}

// checkAll runs every query of the test against the model.
func (r *largeRun) checkAll(t *testing.T, v largeValues) {
	t.Helper()
	for n, x := range r.model {
		r.check(t, fmt.Sprintf("equality on value %d (%d bytes)", n, len(x)), x, func(s string) bool { return s == x }, false)
	}
	for _, gone := range v.gone {
		r.check(t, "equality on a removed value", gone, func(s string) bool { return s == gone }, false)
	}
	r.check(t, "no condition", nil, func(string) bool { return true }, true)
	r.check(t, "$in", bson.D{{Key: "$in", Value: bson.A{v.lo, v.q2m, "nope", v.hi, v.mid}}}, func(s string) bool {
		return s == v.lo || s == v.q2m || s == v.hi || s == v.mid
	}, true)
	type rng struct {
		op string
		x  string
		ok func(s, x string) bool
	}
	ops := map[string]func(s, x string) bool{
		"$gt": func(s, x string) bool { return s > x }, "$gte": func(s, x string) bool { return s >= x },
		"$lt": func(s, x string) bool { return s < x }, "$lte": func(s, x string) bool { return s <= x },
	}
	for _, x := range []string{v.lo, v.hi, v.z70, v.q2m, v.prefix} {
		for _, op := range []string{"$gt", "$gte", "$lt", "$lte"} {
			ok := ops[op]
			r.check(t, fmt.Sprintf("%s a value of %d bytes", op, len(x)), bson.D{{Key: op, Value: x}}, func(s string) bool { return ok(s, x) }, false)
		}
	}
	for _, b := range [][2]string{{v.lo, v.hi}, {"b", v.lo}, {v.q2m, v.mid}} {
		lo, hi := b[0], b[1]
		r.check(t, fmt.Sprintf("[%d bytes, %d bytes)", len(lo), len(hi)), bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: hi}},
			func(s string) bool { return s >= lo && s < hi }, false)
		r.check(t, fmt.Sprintf("(%d bytes, %d bytes]", len(lo), len(hi)), bson.D{{Key: "$gt", Value: lo}, {Key: "$lte", Value: hi}},
			func(s string) bool { return s > lo && s <= hi }, true)
	}
}

// largeValues are the values the scenes store.
type largeValues struct {
	prefix       string // 60 KB that lo, hi and mid share
	lo, hi, mid  string // 70 KB each; lo < mid < hi
	mid2         string // 70 KB, shares the prefix: mid after an update
	z70, q2m     string // 70 KB and 2 MB
	small        []string
	gone         []string // values no document holds any more
	initialOrder []string
}

func newLargeValues(t *testing.T) largeValues {
	var v largeValues
	v.prefix = strings.Repeat("s", 60000)
	v.lo, v.hi = sharedPair(t, v.prefix)
	v.mid = v.prefix + "xz" + strings.Repeat("m", 9998)
	v.mid2 = v.prefix + "xy" + strings.Repeat("n", 9998)
	v.z70 = strings.Repeat("z", 70000)
	v.q2m = strings.Repeat("q", 2<<20)
	v.small = []string{"a", "m", "t"}
	v.initialOrder = append([]string{v.lo, v.q2m, v.hi, v.z70, v.mid}, v.small...)
	return v
}

// TestLargeValues: 70 KB and 2 MB values as _id (unsharded and sharded),
// as the shard-key value, and in indexed fields (ascending, descending,
// unique, second of a compound index, in a sharded collection) are
// stored, found by equality, ranges, $in and sorts as a collection scan
// finds them, updated and deleted; two 70 KB values that share 60 KB and
// whose keys order against their values sort right.
func TestLargeValues(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	base := newLargeValues(t)
	scenes := []largeScene{
		{name: "id", field: "_id", doc: func(n int, v string) bson.D { return bson.D{{Key: "_id", Value: v}, {Key: "n", Value: n}} }},
		{name: "id sharded", field: "_id",
			setup: func(t *testing.T, db *mongo.Database) {
				runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: db.Name() + ".c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}})
			},
			doc: func(n int, v string) bson.D {
				return bson.D{{Key: "_id", Value: v}, {Key: "n", Value: n}, {Key: "k", Value: n % 3}}
			}},
		{name: "id in one logical partition", field: "_id", setup: shardedColl("k"), extra: bson.D{{Key: "k", Value: 0}},
			doc: func(n int, v string) bson.D {
				return bson.D{{Key: "_id", Value: v}, {Key: "n", Value: n}, {Key: "k", Value: 0}}
			}},
		{name: "shard key", field: "k", setup: shardedColl("k"),
			doc: func(n int, v string) bson.D {
				return bson.D{{Key: "_id", Value: n}, {Key: "n", Value: n}, {Key: "k", Value: v}}
			}},
		{name: "index", field: "v", index: true, setup: withIndex(bson.D{{Key: "v", Value: 1}}, false, nil),
			doc: func(n int, v string) bson.D {
				return bson.D{{Key: "_id", Value: n}, {Key: "n", Value: n}, {Key: "v", Value: v}}
			}},
		{name: "descending index", field: "v", index: true, setup: withIndex(bson.D{{Key: "v", Value: -1}}, false, nil),
			doc: func(n int, v string) bson.D {
				return bson.D{{Key: "_id", Value: n}, {Key: "n", Value: n}, {Key: "v", Value: v}}
			}},
		{name: "unique index", field: "v", index: true, setup: withIndex(bson.D{{Key: "v", Value: 1}}, true, nil),
			doc: func(n int, v string) bson.D {
				return bson.D{{Key: "_id", Value: n}, {Key: "n", Value: n}, {Key: "v", Value: v}}
			}},
		{name: "compound index", field: "v", index: true, extra: bson.D{{Key: "g", Value: 1}},
			setup: withIndex(bson.D{{Key: "g", Value: 1}, {Key: "v", Value: 1}}, false, nil),
			doc: func(n int, v string) bson.D {
				return bson.D{{Key: "_id", Value: n}, {Key: "n", Value: n}, {Key: "g", Value: 1}, {Key: "v", Value: v}}
			}},
		{name: "index sharded", field: "v", index: true, setup: withIndex(bson.D{{Key: "v", Value: 1}}, false, shardedColl("k")),
			doc: func(n int, v string) bson.D {
				return bson.D{{Key: "_id", Value: n}, {Key: "n", Value: n}, {Key: "k", Value: n % 5}, {Key: "v", Value: v}}
			}},
	}
	for _, sc := range scenes {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			v := base
			db := client.Database(dbName(t))
			if sc.setup != nil {
				sc.setup(t, db)
			}
			r := &largeRun{sc: sc, db: db, c: db.Collection("c"), model: map[int]string{}}
			nOf := map[string]int{}
			for n, x := range v.initialOrder {
				if _, err := r.c.InsertOne(testCtx(t), sc.doc(n, x)); err != nil {
					t.Fatalf("insert value %d (%d bytes): %v", n, len(x), err)
				}
				r.model[n], nOf[x] = x, n
			}
			if sc.index {
				x := explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: r.filter(v.lo)}}, "queryPlanner")
				if !strings.Contains(x.Lookup("queryPlanner", "winningPlan").String(), "IXSCAN") {
					t.Errorf("equality on an indexed 70 KB value does not use the index: %v", x.Lookup("queryPlanner", "winningPlan"))
				}
			}
			r.checkAll(t, v)

			// The same value again is a duplicate where the field is unique
			// (an _id within its logical partition: n+300 has n's k).
			if sc.field == "_id" || strings.HasPrefix(sc.name, "unique") {
				for _, x := range []string{v.lo, v.q2m} {
					_, err := r.c.InsertOne(testCtx(t), sc.doc(nOf[x]+300, x))
					var we mongo.WriteException
					if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
						t.Errorf("duplicate of a value of %d bytes: %.200v; want 11000 DuplicateKey", len(x), err)
					}
				}
			}

			// Updates found by the large value.
			ctx := testCtx(t)
			res, err := r.c.UpdateOne(ctx, r.filter(v.lo), bson.D{{Key: "$set", Value: bson.D{{Key: "u", Value: 1}}}})
			if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
				t.Fatalf("update by a 70 KB value: %+v, %v", res, err)
			}
			if got := r.find(t, bson.D{{Key: "u", Value: 1}}, nil, 0, 0, false); !slices.Equal(got, []int{nOf[v.lo]}) {
				t.Errorf("the updated document: n %v, want %d", got, nOf[v.lo])
			}
			res, err = r.c.UpdateOne(ctx, r.filter(v.q2m), bson.D{{Key: "$inc", Value: bson.D{{Key: "c", Value: 1}}}})
			if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
				t.Fatalf("update by a 2 MB value: %+v, %v", res, err)
			}
			switch sc.field {
			case "v": // a long indexed value changes for another with its prefix
				res, err = r.c.UpdateOne(ctx, r.filter(v.mid), bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: v.mid2}}}})
				if err != nil || res.ModifiedCount != 1 {
					t.Fatalf("update of an indexed 70 KB value: %+v, %v", res, err)
				}
				r.model[nOf[v.mid]] = v.mid2
				v.gone = append(v.gone, v.mid)
			case "k": // the shard key is immutable, also past the cut
				_, err = r.c.UpdateOne(ctx, r.filter(v.mid), bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: v.mid2}}}})
				var we mongo.WriteException
				if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 66 {
					t.Errorf("changing a 70 KB shard key for another with its prefix: %.200v; want 66 ImmutableField", err)
				}
				res, err = r.c.UpdateOne(ctx, r.filter(v.mid), bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: v.mid}}}})
				if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 0 {
					t.Fatalf("setting the shard key to its own 70 KB value: %+v, %v", res, err)
				}
			}
			del, err := r.c.DeleteOne(ctx, r.filter(v.hi))
			if err != nil || del.DeletedCount != 1 {
				t.Fatalf("delete by a 70 KB value: %+v, %v", del, err)
			}
			delete(r.model, nOf[v.hi])
			v.gone = append(v.gone, v.hi)
			r.checkAll(t, v)
			checkValid(t, db, "c")
		})
	}
}

// TestLargeValuesWidestKeys: the largest keys MongoDB allows (a 32-field
// index of long values, in a collection sharded by a long value, with a
// long _id) are stored and found through the index.
func TestLargeValuesWidestKeys(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	shardedColl("k")(t, db)
	c := db.Collection("c")
	var keys bson.D
	doc := bson.D{{Key: "_id", Value: strings.Repeat("i", 70000)}, {Key: "k", Value: strings.Repeat("k", 70000)}}
	for i := range 32 {
		f := fmt.Sprintf("f%02d", i)
		keys = append(keys, bson.E{Key: f, Value: 1})
		doc = append(doc, bson.E{Key: f, Value: strings.Repeat(string(rune('a'+i%26)), 5000)})
	}
	if _, err := c.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: keys}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InsertOne(testCtx(t), doc); err != nil {
		t.Fatalf("insert: %v", err)
	}
	filter := doc[2:]
	var got bson.D
	if err := c.FindOne(testCtx(t), filter, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "k", Value: 0}})).Decode(&got); err != nil {
		t.Fatalf("find by the 32 fields: %v", err)
	}
	if len(got) != 32 {
		t.Errorf("found a document of %d fields, want 32", len(got))
	}
	x := explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}}, "queryPlanner")
	if !strings.Contains(x.Lookup("queryPlanner", "winningPlan").String(), "IXSCAN") {
		t.Error("the 32-field equality does not use the index")
	}
	checkValid(t, db, "c")
}

// TestLargeValuesStoreLimit: a document larger than the store can hold (an
// in-memory store keeps values of at most 1 MB) is refused with 10334
// BSONObjectTooLarge and a message that names sizes, not the storage
// engine's ("Value with size … exceeded … limit" and a hex dump); the
// other documents of the insert are written.
func TestLargeValuesStoreLimit(t *testing.T) {
	s := StartServer(t, ServerOptions{InMemory: true})
	client := newTestClient(t, s)
	c := client.Database(dbName(t)).Collection("c")
	_, err := c.InsertMany(testCtx(t), []any{
		bson.D{{Key: "_id", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "pad", Value: strings.Repeat("x", 2<<20)}},
		bson.D{{Key: "_id", Value: 3}},
	}, options.InsertMany().SetOrdered(false))
	var we mongo.BulkWriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 {
		t.Fatalf("insert: %v; want one write error", err)
	}
	e := we.WriteErrors[0]
	if e.Index != 1 || e.Code != 10334 || len(e.Message) > 200 || strings.Contains(e.Message, "exceeded") {
		t.Errorf("write error %d %d %q; want index 1, 10334, a short message with no dump", e.Index, e.Code, e.Message)
	}
	if n, err := c.CountDocuments(testCtx(t), bson.D{}); err != nil || n != 2 {
		t.Errorf("documents: %d, %v; want 2", n, err)
	}
}
