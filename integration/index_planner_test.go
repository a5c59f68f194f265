package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// winningStage walks explain's winning plan to the stage that reads: the
// input of FETCH (IXSCAN or OR), or COLLSCAN, IDHACK; sorted says whether
// a SORT stage is above it.
func winningStage(t testing.TB, explain bson.Raw) (stage bson.Raw, sorted bool) {
	t.Helper()
	plan, err := explain.LookupErr("queryPlanner", "winningPlan")
	if err != nil {
		t.Fatalf("explain without winningPlan: %v", explain)
	}
	doc := plan.Document()
	if sh, err := doc.LookupErr("shards"); err == nil { // as mongos explains: per shard (partition)
		first, _ := sh.Array().Values()
		doc = first[0].Document().Lookup("winningPlan").Document()
	}
	for {
		name, _ := doc.Lookup("stage").StringValueOK()
		if name == "SORT" {
			sorted = true
		}
		in, err := doc.LookupErr("inputStage")
		if err != nil || name == "FETCH" && !hasStage(in.Document(), "FETCH") {
			if name == "FETCH" {
				return in.Document(), sorted
			}
			return doc, sorted
		}
		doc = in.Document()
	}
}

func hasStage(d bson.Raw, name string) bool {
	s, _ := d.Lookup("stage").StringValueOK()
	return s == name
}

func explainFind(t testing.TB, db *mongo.Database, cmd bson.D, verbosity string) bson.Raw {
	t.Helper()
	return runOK(t, db, bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: verbosity}})
}

// TestIndexPlanner checks which plan explain reports for typical queries.
func TestIndexPlanner(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	coll := db.Collection("c")
	var docs []any
	for i := range 1000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 100}, {Key: "b", Value: fmt.Sprintf("s%03d", i%37)}, {Key: "tags", Value: bson.A{i % 3, i % 5}}})
	}
	if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}},
		{Keys: bson.D{{Key: "b", Value: 1}}},
		{Keys: bson.D{{Key: "tags", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		filter    bson.D
		sort      bson.D
		hint      any
		stage     string // IXSCAN, COLLSCAN, OR
		index     string
		sorted    bool // a SORT stage is expected
		n         int64
		maxKeys   int64 // keysExamined at most (0: not checked)
		direction string
	}{
		{name: "equality", filter: bson.D{{Key: "a", Value: 7}}, stage: "IXSCAN", index: "a_1_b_-1", n: 10, maxKeys: 10},
		{name: "compound equality", filter: bson.D{{Key: "a", Value: 7}, {Key: "b", Value: "s007"}}, stage: "IXSCAN", index: "a_1_b_-1", n: 1, maxKeys: 1},
		{name: "range", filter: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 10}, {Key: "$lt", Value: 13}}}}, stage: "IXSCAN", index: "a_1_b_-1", n: 30, maxKeys: 30},
		{name: "$in", filter: bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{1, 2, 99}}}}}, stage: "IXSCAN", index: "a_1_b_-1", n: 30, maxKeys: 30},
		{name: "string range on the second index", filter: bson.D{{Key: "b", Value: bson.D{{Key: "$gt", Value: "s035"}}}}, stage: "IXSCAN", index: "b_1", n: 27},
		{name: "multikey", filter: bson.D{{Key: "tags", Value: 4}}, stage: "IXSCAN", index: "tags_1", n: 200},
		{name: "multikey range keeps one bound", filter: bson.D{{Key: "tags", Value: bson.D{{Key: "$gt", Value: 3}, {Key: "$lt", Value: 5}}}}, stage: "IXSCAN", index: "tags_1", n: 200},
		{name: "sort by index", filter: bson.D{}, sort: bson.D{{Key: "b", Value: 1}}, stage: "IXSCAN", index: "b_1", n: 1000},
		{name: "sort backwards", filter: bson.D{{Key: "b", Value: bson.D{{Key: "$gte", Value: "s030"}}}}, sort: bson.D{{Key: "b", Value: -1}}, stage: "IXSCAN", index: "b_1", n: 189, direction: "backward"},
		{name: "equality then sort on the next field", filter: bson.D{{Key: "a", Value: 5}}, sort: bson.D{{Key: "b", Value: -1}}, stage: "IXSCAN", index: "a_1_b_-1", n: 10},
		{name: "sort the index cannot give", filter: bson.D{{Key: "a", Value: 5}}, sort: bson.D{{Key: "_id", Value: -1}}, stage: "IXSCAN", index: "a_1_b_-1", sorted: true, n: 10},
		{name: "$or of indexed branches", filter: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 3}}, bson.D{{Key: "b", Value: "s001"}}}}}, stage: "OR", n: 37},
		{name: "no usable index", filter: bson.D{{Key: "x", Value: 1}}, stage: "COLLSCAN", n: 0},
		{name: "hint by name", filter: bson.D{{Key: "a", Value: 7}}, hint: "b_1", stage: "IXSCAN", index: "b_1", n: 10},
		{name: "hint by key", filter: bson.D{}, hint: bson.D{{Key: "tags", Value: 1}}, stage: "IXSCAN", index: "tags_1", n: 1000},
		{name: "hint $natural", filter: bson.D{{Key: "a", Value: 7}}, hint: bson.D{{Key: "$natural", Value: 1}}, stage: "COLLSCAN", n: 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: tc.filter}}
			if tc.sort != nil {
				cmd = append(cmd, bson.E{Key: "sort", Value: tc.sort})
			}
			if tc.hint != nil {
				cmd = append(cmd, bson.E{Key: "hint", Value: tc.hint})
			}
			x := explainFind(t, db, cmd, "executionStats")
			stage, sorted := winningStage(t, x)
			if got, _ := stage.Lookup("stage").StringValueOK(); got != tc.stage {
				t.Fatalf("stage %s, want %s: %v", got, tc.stage, x)
			}
			if tc.index != "" {
				if got, _ := stage.Lookup("indexName").StringValueOK(); got != tc.index {
					t.Errorf("index %s, want %s", got, tc.index)
				}
				if _, err := stage.LookupErr("indexBounds"); err != nil {
					t.Errorf("IXSCAN without indexBounds: %v", stage)
				}
			}
			if tc.direction != "" {
				if got, _ := stage.Lookup("direction").StringValueOK(); got != tc.direction {
					t.Errorf("direction %s, want %s", got, tc.direction)
				}
			}
			if sorted != tc.sorted {
				t.Errorf("SORT stage: %v, want %v", sorted, tc.sorted)
			}
			n := intOf(t, mustLookup(t, x, "executionStats", "nReturned"))
			if n != tc.n {
				t.Errorf("nReturned %d, want %d", n, tc.n)
			}
			if tc.maxKeys > 0 {
				if keys := intOf(t, mustLookup(t, x, "executionStats", "totalKeysExamined")); keys > tc.maxKeys {
					t.Errorf("totalKeysExamined %d, want at most %d", keys, tc.maxKeys)
				}
			}
			// The documents themselves: the same as a collection scan.
			opts := options.Find()
			if tc.sort != nil {
				opts.SetSort(tc.sort)
			}
			if tc.hint != nil {
				opts.SetHint(tc.hint)
			}
			got := findAll(t, coll, tc.filter, opts)
			want := findAll(t, coll, tc.filter, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
			if int64(len(got)) != tc.n || !sameIDSet(got, want) {
				t.Errorf("documents differ from a collection scan: %d vs %d", len(got), len(want))
			}
			if tc.sort != nil && !sortedBy(got, tc.sort) {
				t.Errorf("documents are not in the order of %v", tc.sort)
			}
		})
	}
	// count and distinct use indexes too
	x := runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "a", Value: 7}}}}}, {Key: "verbosity", Value: "executionStats"}})
	if !strings.Contains(x.String(), `"indexName": "a_1_b_-1"`) {
		t.Errorf("count does not use the index: %v", x)
	}
	n, err := coll.CountDocuments(testCtx(t), bson.D{{Key: "a", Value: bson.D{{Key: "$lt", Value: 10}}}})
	if err != nil || n != 100 {
		t.Errorf("count = %d, %v", n, err)
	}
	// returnKey shows the key of the index read.
	keyDocs := findAll(t, coll, bson.D{{Key: "a", Value: 7}, {Key: "b", Value: "s007"}}, options.Find().SetReturnKey(true))
	if len(keyDocs) != 1 || keyDocs[0].String() != `{"a": {"$numberInt":"7"},"b": "s007"}` {
		t.Errorf("returnKey through a_1_b_-1: %v", keyDocs)
	}
	// Each $or branch reports its own keys.
	ox := explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 3}}, bson.D{{Key: "b", Value: "s001"}}}}}}}, "executionStats")
	or, _ := winningStage(t, ox)
	branches, _ := or.Lookup("inputStages").Array().Values()
	if len(branches) != 2 || intOf(t, branches[0].Document().Lookup("keysExamined")) != 10 || intOf(t, branches[1].Document().Lookup("keysExamined")) != 27 {
		t.Errorf("$or branches' keysExamined: %v", or)
	}
	ax := runOK(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "b", Value: "s003"}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$a"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	}}, {Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: "executionStats"}})
	if !strings.Contains(ax.String(), `"indexName": "b_1"`) {
		t.Errorf("aggregate $match does not use the index: %v", ax)
	}
	if docs := intOf(t, mustLookup(t, ax, "executionStats", "totalDocsExamined")); docs != 27 {
		t.Errorf("aggregate $match on an index examined %d documents, want 27", docs)
	}
	var vals []int
	if err := coll.Distinct(testCtx(t), "a", bson.D{{Key: "b", Value: "s000"}}).Decode(&vals); err != nil {
		t.Fatal(err)
	}
	if len(vals) != 28 {
		t.Errorf("distinct a for b=s000: %d values", len(vals))
	}
}

func findAll(t testing.TB, coll *mongo.Collection, filter any, opts *options.FindOptionsBuilder) []bson.Raw {
	t.Helper()
	cur, err := coll.Find(testCtx(t), filter, opts)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var out []bson.Raw
	if err := cur.All(testCtx(t), &out); err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	return out
}

func sameIDSet(a, b []bson.Raw) bool {
	ids := func(docs []bson.Raw) []string {
		out := make([]string, len(docs))
		for i, d := range docs {
			out[i] = d.Lookup("_id").String()
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(ids(a), ids(b))
}

// sortedBy reports whether docs are in the order of a sort on plain
// fields (compared as the server orders scalars of one type).
func sortedBy(docs []bson.Raw, sort bson.D) bool {
	for i := 1; i < len(docs); i++ {
		for _, f := range sort {
			dir := 1
			if n, ok := f.Value.(int); ok && n < 0 {
				dir = -1
			}
			c := compareScalar(docs[i-1].Lookup(f.Key), docs[i].Lookup(f.Key)) * dir
			if c > 0 {
				return false
			}
			if c < 0 {
				break
			}
		}
	}
	return true
}

func compareScalar(a, b bson.RawValue) int {
	if as, ok := a.StringValueOK(); ok {
		bs, _ := b.StringValueOK()
		return strings.Compare(as, bs)
	}
	af, _ := a.AsFloat64OK()
	bf, _ := b.AsFloat64OK()
	switch {
	case af < bf:
		return -1
	case af > bf:
		return 1
	}
	return 0
}

// TestIndexEquivalence runs random queries over random documents with
// indexes and with a collection scan ($natural hint) and compares the
// results, in both unsharded and sharded collections.
func TestIndexEquivalence(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: db.Name() + ".sharded"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}})
	seed := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("PARSEC_TEST_SEED"), 10, 64); err == nil {
		seed = v // to explore: PARSEC_TEST_SEED=n go test -run TestIndexEquivalence ./integration
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	randValue := func() any {
		switch rng.IntN(12) {
		case 0:
			return nil
		case 1:
			return bson.A{rng.IntN(10), rng.IntN(10)}
		case 2:
			return fmt.Sprintf("v%d", rng.IntN(10))
		case 3:
			return float64(rng.IntN(100)) / 10
		case 4:
			return bson.D{{Key: "x", Value: rng.IntN(3)}}
		case 5:
			return int64(rng.IntN(10))
		case 6:
			return bson.A{}
		}
		return rng.IntN(10)
	}
	for _, name := range []string{"plain", "sharded"} {
		coll := db.Collection(name)
		var docs []any
		for i := range 600 {
			d := bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 17}}
			for _, f := range []string{"a", "b", "c"} {
				if rng.IntN(8) != 0 { // sometimes missing
					v := randValue()
					if _, isArray := v.(bson.A); isArray && f != "a" {
						v = rng.IntN(10) // b and c share a compound index: arrays in both cannot be indexed
					}
					d = append(d, bson.E{Key: f, Value: v})
				}
			}
			d = append(d, bson.E{Key: "n", Value: bson.D{{Key: "m", Value: randValue()}}})
			docs = append(docs, d)
		}
		if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
			{Keys: bson.D{{Key: "a", Value: 1}}},
			{Keys: bson.D{{Key: "b", Value: -1}, {Key: "c", Value: 1}}},
			{Keys: bson.D{{Key: "n.m", Value: 1}}},
			{Keys: bson.D{{Key: "c", Value: 1}}, Options: options.Index().SetSparse(true)},
			{Keys: bson.D{{Key: "$**", Value: 1}}, Options: options.Index().SetName("wild")},
		}); err != nil {
			t.Fatal(err)
		}
		checkValid(t, db, name)
	}
	ops := []string{"$eq", "$gt", "$gte", "$lt", "$lte", "$in", "eq"}
	randPred := func() bson.E {
		f := []string{"a", "b", "c", "n.m", "k"}[rng.IntN(5)]
		op := ops[rng.IntN(len(ops))]
		v := randValue()
		switch op {
		case "eq":
			return bson.E{Key: f, Value: v}
		case "$in":
			return bson.E{Key: f, Value: bson.D{{Key: "$in", Value: bson.A{randValue(), randValue()}}}}
		}
		return bson.E{Key: f, Value: bson.D{{Key: op, Value: v}}}
	}
	for i := range 400 {
		var filter bson.D
		switch rng.IntN(4) {
		case 0:
			filter = bson.D{randPred()}
		case 1:
			filter = bson.D{randPred(), randPred()}
		case 2:
			p := randPred()
			q := randPred()
			if p.Key == q.Key {
				filter = bson.D{{Key: "$and", Value: bson.A{bson.D{p}, bson.D{q}}}}
			} else {
				filter = bson.D{p, q}
			}
		default:
			filter = bson.D{{Key: "$or", Value: bson.A{bson.D{randPred()}, bson.D{randPred()}}}}
		}
		var sort bson.D
		if rng.IntN(3) == 0 {
			// b and c hold no arrays, so equal sort keys are equal values
			sort = bson.D{{Key: []string{"b", "c"}[rng.IntN(2)], Value: []int{1, -1}[rng.IntN(2)]}}
		}
		for _, name := range []string{"plain", "sharded"} {
			coll := db.Collection(name)
			opts := options.Find()
			scan := options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}})
			if sort != nil {
				opts.SetSort(sort)
				scan.SetSort(sort)
			}
			if sort != nil && i%2 == 0 {
				// A limit: the first documents in sort order (a top-k in
				// memory, a bounded read of an index); ties at the edge
				// may differ, the keys may not.
				skip, limit := int64(i%3), int64(1+i%7)
				got := findAll(t, coll, filter, options.Find().SetSort(sort).SetSkip(skip).SetLimit(limit))
				want := findAll(t, coll, filter, options.Find().SetSort(sort).SetSkip(skip).SetLimit(limit).SetHint(bson.D{{Key: "$natural", Value: 1}}))
				if len(got) != len(want) {
					t.Fatalf("query %d on %s %v sort %v skip %d limit %d: %d documents, %d by a scan", i, name, filter, sort, skip, limit, len(got), len(want))
				}
				for j := range got {
					if !bsonEqualValue(got[j].Lookup(sort[0].Key), want[j].Lookup(sort[0].Key)) {
						t.Fatalf("query %d on %s %v sort %v skip %d limit %d: key %d differs: %v vs %v", i, name, filter, sort, skip, limit, j, got[j], want[j])
					}
				}
			}
			got := findAll(t, coll, filter, opts)
			want := findAll(t, coll, filter, scan)
			if !sameIDSet(got, want) {
				t.Fatalf("query %d on %s %v sort %v: %d documents with indexes, %d by a collection scan", i, name, filter, sort, len(got), len(want))
			}
			if sort != nil {
				for j := range got {
					if !bsonEqualValue(got[j].Lookup(sort[0].Key), want[j].Lookup(sort[0].Key)) {
						t.Fatalf("query %d on %s %v sort %v: order differs at %d: %v vs %v", i, name, filter, sort, j, got[j], want[j])
					}
				}
			}
			cur, err := coll.Aggregate(testCtx(t), mongo.Pipeline{{{Key: "$match", Value: filter}}})
			if err != nil {
				t.Fatalf("aggregate %v: %v", filter, err)
			}
			var agged []bson.Raw
			if err := cur.All(testCtx(t), &agged); err != nil {
				t.Fatal(err)
			}
			if !sameIDSet(agged, want) {
				t.Fatalf("query %d on %s %v: aggregate $match returned %d documents, a collection scan %d", i, name, filter, len(agged), len(want))
			}
			n, err := coll.CountDocuments(testCtx(t), filter)
			if err != nil || n != int64(len(want)) {
				t.Fatalf("count %d on %s %v = %d, %v; want %d", i, name, filter, n, err, len(want))
			}
		}
	}
}

// bsonEqualValue compares sort keys: numbers by value, a missing field
// as null, anything else by type and bytes.
func bsonEqualValue(a, b bson.RawValue) bool {
	if af, ok := a.AsFloat64OK(); ok {
		bf, ok := b.AsFloat64OK()
		return ok && af == bf
	}
	null := func(v bson.RawValue) bool { return v.Type == 0 || v.Type == bson.TypeNull }
	if null(a) || null(b) {
		return null(a) && null(b)
	}
	return a.Type == b.Type && string(a.Value) == string(b.Value)
}
