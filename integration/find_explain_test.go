package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
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
