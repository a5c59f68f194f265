package engine

import (
	"context"
	"regexp"
	"testing"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestActivityID(t *testing.T) {
	guid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seed := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	seen := map[string]bool{}
	for n := range uint64(1000) {
		id := activityID(seed, n)
		if !guid.MatchString(id) {
			t.Fatalf("request %d: %q is not a version 4 GUID", n, id)
		}
		if seen[id] {
			t.Fatalf("request %d: %q repeats", n, id)
		}
		seen[id] = true
	}
	if activityID(seed, 7) == activityID([8]byte{9}, 7) {
		t.Error("two connections give their 7th requests the same ActivityId")
	}
}

func TestThrottledOnly(t *testing.T) {
	refused := writeError{index: 0, code: ErrTooManyRequests, msg: tooManyRequests(3).Msg}
	for _, tc := range []struct {
		name    string
		n       int64
		errs    []writeError
		ordered bool
		total   int
		want    Code // 0: stays write errors
	}{
		{"ordered, first refused", 0, []writeError{refused}, true, 5, ErrTooManyRequests},
		{"ordered, some written", 2, []writeError{{index: 2, code: ErrTooManyRequests}}, true, 5, 0},
		{"unordered, all refused", 0, []writeError{refused, {index: 1, code: ErrTooManyRequests}}, false, 2, ErrTooManyRequests},
		{"unordered, one refused of two", 0, []writeError{refused}, false, 2, 0},
		{"another error", 0, []writeError{{index: 0, code: ErrDuplicateKey}}, true, 1, 0},
		{"retry limit", 0, []writeError{{index: 0, code: ErrMaxTimeMSExpired}}, true, 1, ErrMaxTimeMSExpired},
		{"no error", 0, nil, true, 1, 0},
	} {
		ce := throttledOnly(tc.n, tc.errs, tc.ordered, tc.total)
		switch {
		case tc.want == 0 && ce != nil:
			t.Errorf("%s: command error %v, want write errors", tc.name, ce)
		case tc.want != 0 && (ce == nil || ce.Code != tc.want):
			t.Errorf("%s: %v, want code %d", tc.name, ce, tc.want)
		}
	}
	if ce := throttledOnly(0, []writeError{{index: 0, code: ErrMaxTimeMSExpired}}, true, 1); ce.codeName() != "ExceededTimeLimit" {
		t.Errorf("retry limit: codeName %q", ce.codeName())
	}
}

// benchRUEngine is an engine on an in-memory store with mode's
// request-unit options and collection d.c, provisioned far above any
// benchmark's rate; both close when b ends.
func benchRUEngine(b *testing.B, opts RequestUnitOptions) *Engine {
	st, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	e := New(Config{Store: storage.Local(st), RequestUnits: opts, Partitions: PartitionLimits{MaxRUs: 1 << 30}})
	b.Cleanup(func() {
		e.Close()
		_ = st.Close()
	})
	create, _ := bson.Marshal(bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "offerThroughput", Value: 1_000_000}, {Key: "$db", Value: "d"}})
	if _, err := e.cmdCustomAction(context.Background(), &request{name: "customAction", db: "d", body: create}); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkPointReadRequestUnits is find {_id} of a 1 KB document in the
// command layer, with request-unit accounting bypassed, on (the
// default), and on with rate limiting under a budget it never reaches:
// what accounting adds to the cheapest read.
func BenchmarkPointReadRequestUnits(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts RequestUnitOptions
	}{
		{"bypass", RequestUnitOptions{Bypass: true}},
		{"charged", RequestUnitOptions{}},
		{"limited", RequestUnitOptions{RateLimiting: true}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			e := benchRUEngine(b, mode.opts)
			pad := string(make([]byte, 990))
			var docs bson.A
			for i := range 1000 {
				docs = append(docs, bson.D{{Key: "_id", Value: int64(i)}, {Key: "p", Value: pad}})
			}
			body, _ := bson.Marshal(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}, {Key: "$db", Value: "d"}})
			if _, err := e.cmdInsert(context.Background(), &request{name: "insert", db: "d", body: body}); err != nil {
				b.Fatal(err)
			}
			cmds := make([][]byte, 1000)
			for i := range cmds {
				cmds[i], _ = bson.Marshal(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int64(i)}}},
					{Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}, {Key: "$db", Value: "d"}})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				req := &request{name: "find", db: "d", body: cmds[i%len(cmds)]}
				if _, err := e.cmdFind(context.Background(), req); err != nil {
					b.Fatal(err)
				}
				if !mode.opts.Bypass && req.units.Charge() != 1 {
					b.Fatalf("charged %.2f RU", req.units.Charge())
				}
				i++
			}
		})
	}
}

// BenchmarkPointReadAccounting is the request-unit work of one point read
// alone: routing to its partition, admission, the charge and the meter,
// with throttling off and on (what BenchmarkPointReadRequestUnits adds
// to a find, without the find).
func BenchmarkPointReadAccounting(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts RequestUnitOptions
	}{
		{"charged", RequestUnitOptions{}},
		{"limited", RequestUnitOptions{RateLimiting: true}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			e := benchRUEngine(b, mode.opts)
			body, _ := bson.Marshal(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int64(1)}}},
				{Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}, {Key: "$db", Value: "d"}})
			args, err := parseFind("find", body)
			if err != nil {
				b.Fatal(err)
			}
			plan, err := e.planFind("d", "c", args)
			if err != nil || plan.Point == nil {
				b.Fatalf("plan %+v: %v", plan, err)
			}
			src := &statsTally{DocsExamined: 1, BytesRead: 1024} // what the point read read
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				req := request{name: "find", db: "d", body: body}
				bill := e.newReadBill(&req, plan.Coll, plan.Spans, plan.Point, args.filter, src)
				if err := e.admitRead(ctx, &req, &bill); err != nil {
					b.Fatal(err)
				}
				e.chargeRead(&req, &bill, 1)
				if req.units.Charge() != 1 {
					b.Fatalf("charged %.2f RU", req.units.Charge())
				}
			}
		})
	}
}
