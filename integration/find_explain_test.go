package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestExplain covers explain of find, count and distinct: mongos's shape
// (winningPlan.shards, one entry per physical partition read, with its
// partitionKeyRangeId), the stages of the per-partition plan, and
// executionStats at executionStats verbosity.
func TestExplain(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("explain")
	if _, err := db.Collection("c").InsertMany(testCtx(t), docsOf(0, 30)); err != nil {
		t.Fatal(err)
	}
	d := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }
	explain := func(t *testing.T, cmd bson.D, verbosity string) bson.Raw {
		t.Helper()
		r := runOK(t, db, bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: verbosity}})
		if got := mustLookup(t, r, "queryPlanner", "winningPlan", "stage").StringValue(); got != "SINGLE_SHARD" {
			t.Errorf("top stage %q", got)
		}
		shards, _ := mustLookup(t, r, "queryPlanner", "winningPlan", "shards").Array().Values()
		if len(shards) != 1 {
			t.Fatalf("want one partition, got %v", shards)
		}
		if pk := mustLookup(t, shards[0].Document(), "partitionKeyRangeId").StringValue(); pk != "0" {
			t.Errorf("partitionKeyRangeId %q", pk)
		}
		mustLookup(t, r, "serverInfo", "version")
		mustLookup(t, r, "command", "$db")
		return r
	}
	plan := func(t *testing.T, r bson.Raw) bson.Raw {
		t.Helper()
		shards, _ := mustLookup(t, r, "queryPlanner", "winningPlan", "shards").Array().Values()
		return mustLookup(t, shards[0].Document(), "winningPlan").Document()
	}
	stages := func(t *testing.T, p bson.Raw) []string {
		t.Helper()
		var out []string
		for {
			out = append(out, mustLookup(t, p, "stage").StringValue())
			in, err := p.LookupErr("inputStage")
			if err != nil {
				return out
			}
			p = in.Document()
		}
	}
	stats := func(t *testing.T, r bson.Raw) (returned, docs, keys int64) {
		t.Helper()
		mustLookup(t, r, "executionStats", "executionTimeMillis")
		return intOf(t, mustLookup(t, r, "executionStats", "nReturned")),
			intOf(t, mustLookup(t, r, "executionStats", "totalDocsExamined")),
			intOf(t, mustLookup(t, r, "executionStats", "totalKeysExamined"))
	}

	t.Run("find plans", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			cmd  bson.D
			want []string
		}{
			{bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: d("a", 1)}}, []string{"COLLSCAN"}},
			{bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: d("_id", 3)}}, []string{"IDHACK"}},
			{bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: d("a", -1)}, {Key: "limit", Value: 3}}, []string{"SORT", "COLLSCAN"}},
			{bson.D{{Key: "find", Value: "c"}, {Key: "skip", Value: 2}, {Key: "limit", Value: 3}}, []string{"LIMIT", "SKIP", "COLLSCAN"}},
			{bson.D{{Key: "find", Value: "c"}, {Key: "projection", Value: d("a", 1)}}, []string{"PROJECTION_SIMPLE", "COLLSCAN"}},
			{bson.D{{Key: "find", Value: "c"}, {Key: "projection", Value: d("a.b", 1)}}, []string{"PROJECTION_DEFAULT", "COLLSCAN"}},
			{bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: "_id_"}}, []string{"FETCH", "IXSCAN"}},
			{bson.D{{Key: "find", Value: "nope"}}, []string{"EOF"}},
		} {
			r := explain(t, tc.cmd, "queryPlanner")
			wantAbsent(t, r, "executionStats")
			if got := stages(t, plan(t, r)); !equalStrings(got, tc.want) {
				t.Errorf("%v: stages %v, want %v", tc.cmd, got, tc.want)
			}
		}
		p := plan(t, explain(t, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: d("a", 1)}}, "queryPlanner"))
		if f := mustLookup(t, p, "filter"); relaxedJSON(t, f.Document()) != `{"a": 1}` {
			t.Errorf("COLLSCAN filter %v", f)
		}
		if dir := mustLookup(t, p, "direction").StringValue(); dir != "forward" {
			t.Errorf("direction %q", dir)
		}
	})

	t.Run("executionStats", func(t *testing.T) {
		t.Parallel()
		r := explain(t, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: d("_id", d("$gte", 20))}}, "executionStats")
		if n, docs, keys := stats(t, r); n != 10 || docs != 30 || keys != 0 {
			t.Errorf("COLLSCAN stats: returned %d, docs %d, keys %d", n, docs, keys)
		}
		wantAbsent(t, r, "executionStats", "executionStages", "shards", "0", "allPlansExecution")
		r = explain(t, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: d("_id", 7)}}, "executionStats")
		if n, docs, keys := stats(t, r); n != 1 || docs != 1 || keys != 1 {
			t.Errorf("IDHACK stats: returned %d, docs %d, keys %d", n, docs, keys)
		}
		r = explain(t, bson.D{{Key: "find", Value: "c"}, {Key: "limit", Value: 4}}, "allPlansExecution")
		if n, _, _ := stats(t, r); n != 4 {
			t.Errorf("limit 4: returned %d", n)
		}
		mustLookup(t, r, "executionStats", "executionStages", "shards", "0", "allPlansExecution")
		if pk := mustLookup(t, r, "executionStats", "executionStages", "shards", "0", "partitionKeyRangeId").StringValue(); pk != "0" {
			t.Errorf("execution partition %q", pk)
		}
		// Explain's executionStats come from running the plan, not from a
		// cursor: nothing is left open.
		r = explain(t, bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: d("_id", -1)}, {Key: "skip", Value: 5}, {Key: "limit", Value: 10}}, "executionStats")
		if n, docs, _ := stats(t, r); n != 10 || docs != 30 {
			t.Errorf("sorted: returned %d, docs %d", n, docs)
		}
	})

	t.Run("count and distinct", func(t *testing.T) {
		t.Parallel()
		r := explain(t, bson.D{{Key: "count", Value: "c"}}, "executionStats")
		if got := stages(t, plan(t, r)); !equalStrings(got, []string{"RECORD_STORE_FAST_COUNT"}) {
			t.Errorf("fast count stages %v", got)
		}
		r = explain(t, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: d("_id", d("$lt", 5))}}, "executionStats")
		if got := stages(t, plan(t, r)); !equalStrings(got, []string{"COUNT", "COLLSCAN"}) {
			t.Errorf("count stages %v", got)
		}
		if _, docs, _ := stats(t, r); docs != 30 {
			t.Errorf("count docs examined %d", docs)
		}
		if n := intOf(t, mustLookup(t, r, "executionStats", "executionStages", "shards", "0", "executionStages", "nCounted")); n != 5 {
			t.Errorf("nCounted %d", n)
		}
		r = explain(t, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "_id"}, {Key: "query", Value: d("_id", 2)}}, "executionStats")
		if got := stages(t, plan(t, r)); !equalStrings(got, []string{"IDHACK"}) {
			t.Errorf("distinct stages %v", got)
		}
		if n, docs, _ := stats(t, r); n != 1 || docs != 1 {
			t.Errorf("distinct stats %d %d", n, docs)
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		runFail(t, db, bson.D{{Key: "explain", Value: 1}}, 9, "FailedToParse")
		runFail(t, db, bson.D{{Key: "explain", Value: d("find", "c")}, {Key: "verbosity", Value: "loud"}}, 2, "BadValue")
		runFail(t, db, bson.D{{Key: "explain", Value: d("nosuch", "c")}}, 59, "CommandNotFound")
		runFail(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: d("a", d("$bad", 1))}}}}, 2, "BadValue")
		// Explain runs the same planning as find: hints are checked.
		runFail(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: "x_1"}}}}, 2, "BadValue")
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestExplainWrites: explaining update, delete and findAndModify shows the
// plan of their query under an UPDATE or DELETE stage, and writes nothing.
func TestExplainWrites(t *testing.T) {
	s := startTestServer(t)
	c := newTestClient(t, s)
	ctx := testCtx(t)
	db := c.Database("explainwrites")
	coll := db.Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	stageOf := func(raw bson.Raw) (string, string) {
		plan := mustLookup(t, raw, "queryPlanner", "winningPlan", "shards", "0", "winningPlan").Document()
		return plan.Lookup("stage").StringValue(), plan.Lookup("inputStage", "stage").StringValue()
	}
	update := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 2}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}}}}}}
	raw := runOK(t, db, bson.D{{Key: "explain", Value: update}, {Key: "verbosity", Value: "executionStats"}})
	if top, in := stageOf(raw); top != "UPDATE" || in != "LIMIT" {
		t.Errorf("explain update: %s over %s, want UPDATE over LIMIT: %v", top, in, raw)
	}
	if n := intOf(t, mustLookup(t, raw, "executionStats", "totalKeysExamined")); n != 1 {
		t.Errorf("explain update examined %d keys, want 1 (the index on a)", n)
	}
	deleteAll := bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}}}}}
	if top, _ := stageOf(runOK(t, db, bson.D{{Key: "explain", Value: deleteAll}})); top != "DELETE" {
		t.Errorf("explain delete: %s", top)
	}
	fam := bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "remove", Value: true}}
	if top, _ := stageOf(runOK(t, db, bson.D{{Key: "explain", Value: fam}})); top != "DELETE" {
		t.Errorf("explain findAndModify remove: %s", top)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("explain wrote: %d documents, %v", n, err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "b", Value: 1}}); err != nil || n != 0 {
		t.Fatalf("explain updated: %d, %v", n, err)
	}
	two := bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 1}}, bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 1}}}}}
	runFail(t, db, bson.D{{Key: "explain", Value: two}}, 16, "InvalidLength")
}
