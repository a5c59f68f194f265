package integration

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Request units: the charge of every command type as
// getLastRequestStatistics reports it, throttling with 16500 under load
// (per collection and per physical partition), server-side retry, and
// the RU statistics of GetPartitionStats and serverStatus.

// sizedDoc is {_id: id, pad: "xxx..."} of exactly size bytes of BSON.
func sizedDoc(id any, size int) bson.Raw {
	base, err := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: ""}})
	if err != nil {
		panic(err)
	}
	doc, err := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: strings.Repeat("x", size-len(base))}})
	if err != nil {
		panic(err)
	}
	if len(doc) != size {
		panic(fmt.Sprintf("sizedDoc: %d bytes, want %d", len(doc), size))
	}
	return doc
}

// requestStats is getLastRequestStatistics' reply.
type requestStats struct {
	T          string  `bson:"_t"`
	OK         float64 `bson:"ok"`
	Command    string  `bson:"CommandName"`
	Charge     float64 `bson:"RequestCharge"`
	DurationMS int64   `bson:"RequestDurationInMilliSeconds"`
	ActivityID string  `bson:"ActivityId"`
}

func lastRequestStats(t testing.TB, db *mongo.Database) requestStats {
	t.Helper()
	var st requestStats
	if err := db.RunCommand(testCtx(t), bson.D{{Key: "getLastRequestStatistics", Value: 1}}).Decode(&st); err != nil {
		t.Fatalf("getLastRequestStatistics: %v", err)
	}
	return st
}

var guid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRUGetLastRequestStatistics(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	// One connection, so that getLastRequestStatistics follows the
	// command it reports on.
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(1))
	ctx := testCtx(t)
	db := client.Database("ru")
	coll := db.Collection("items")

	charge := func(t *testing.T, wantCmd string, lo, hi float64) requestStats {
		t.Helper()
		st := lastRequestStats(t, db)
		if st.T != "GetRequestStatisticsResponse" || st.OK != 1 {
			t.Errorf("reply %+v: want _t GetRequestStatisticsResponse, ok 1", st)
		}
		if st.Command != wantCmd {
			t.Errorf("CommandName %q, want %q", st.Command, wantCmd)
		}
		if st.Charge < lo || st.Charge > hi {
			t.Errorf("%s: RequestCharge %.2f RU, want [%.2f, %.2f]", wantCmd, st.Charge, lo, hi)
		}
		if !guid.MatchString(st.ActivityID) {
			t.Errorf("ActivityId %q is not a GUID", st.ActivityID)
		}
		if st.DurationMS < 0 || st.DurationMS > 20_000 {
			t.Errorf("RequestDurationInMilliSeconds %d", st.DurationMS)
		}
		return st
	}

	t.Run("insert 1 KB", func(t *testing.T) {
		if _, err := coll.InsertOne(ctx, sizedDoc(1, 1024)); err != nil {
			t.Fatal(err)
		}
		first := charge(t, "insert", 5.4, 5.6) // published ~5.5 with the _id index
		again := charge(t, "insert", 5.4, 5.6)
		if again.ActivityID != first.ActivityID {
			t.Errorf("asking twice changed the ActivityId: %s then %s", first.ActivityID, again.ActivityID)
		}
	})
	t.Run("point read 1 KB", func(t *testing.T) {
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
			t.Fatal(err)
		}
		charge(t, "find", 1, 1)
	})
	t.Run("point read of a missing item", func(t *testing.T) {
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 999}}).Err(); !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatal(err)
		}
		charge(t, "find", 1, 1)
	})
	t.Run("point read 100 KB", func(t *testing.T) {
		if _, err := coll.InsertOne(ctx, sizedDoc(2, 100*1024)); err != nil {
			t.Fatal(err)
		}
		charge(t, "insert", 49, 52) // published ~50
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Err(); err != nil {
			t.Fatal(err)
		}
		charge(t, "find", 9.9, 10.1) // published 10
	})
	t.Run("strong read costs twice", func(t *testing.T) {
		strong := db.Collection("items", options.Collection().SetReadConcern(readconcern.Majority()))
		if err := strong.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
			t.Fatal(err)
		}
		charge(t, "find", 2, 2)
	})
	t.Run("a query costs more than a point read", func(t *testing.T) {
		if err := coll.FindOne(ctx, bson.D{{Key: "pad", Value: bson.D{{Key: "$exists", Value: true}}}, {Key: "_id", Value: bson.D{{Key: "$lt", Value: 2}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		q := charge(t, "find", 3, 20)
		if q.Charge <= 1 {
			t.Errorf("a query of one 1 KB item costs %.2f RU, no more than the point read (1 RU)", q.Charge)
		}
	})
	t.Run("update one", func(t *testing.T) {
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
		charge(t, "update", 10.5, 11.7) // a replace: 2 x insert
	})
	t.Run("update matching nothing", func(t *testing.T) {
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 404}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
		charge(t, "update", 1, 1) // the point lookup
	})
	t.Run("findAndModify", func(t *testing.T) {
		if err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		charge(t, "findAndModify", 10.5, 11.7)
	})
	t.Run("insertMany", func(t *testing.T) {
		docs := make([]any, 10)
		for i := range docs {
			docs[i] = sizedDoc(100+i, 1024)
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		charge(t, "insert", 54, 56) // 10 x 5.5
	})
	t.Run("find with getMore", func(t *testing.T) {
		cur, err := coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 100}}}}, options.Find().SetBatchSize(4))
		if err != nil {
			t.Fatal(err)
		}
		first := charge(t, "find", 3, 30)
		if !cur.Next(ctx) {
			t.Fatal(cur.Err())
		}
		for range 4 {
			cur.Next(ctx)
		}
		more := charge(t, "getMore", 2.5, 30)
		_ = cur.Close(ctx)
		if first.Charge < 2.5+4*0.9 {
			t.Errorf("first batch of 4 items: %.2f RU", first.Charge)
		}
		_ = more
	})
	t.Run("aggregate", func(t *testing.T) {
		cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 100}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.Raw
		if err := cur.All(ctx, &out); err != nil || len(out) != 10 {
			t.Fatalf("%d documents, %v", len(out), err)
		}
		// 10 items returned out of 12 read (111 KB): 2.5 + 12 x 0.02 +
		// 111 x 0.08 + 10 x 0.9
		charge(t, "aggregate", 20.3, 21)
	})
	t.Run("count and distinct", func(t *testing.T) {
		if _, err := coll.CountDocuments(ctx, bson.D{{Key: "n", Value: 2}}); err != nil {
			t.Fatal(err)
		}
		charge(t, "aggregate", 2.5, 20) // the driver counts with $group
		if err := db.RunCommand(ctx, bson.D{{Key: "count", Value: "items"}, {Key: "query", Value: bson.D{{Key: "n", Value: 2}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		charge(t, "count", 2.5, 20)
		if err := db.RunCommand(ctx, bson.D{{Key: "distinct", Value: "items"}, {Key: "key", Value: "n"}}).Err(); err != nil {
			t.Fatal(err)
		}
		charge(t, "distinct", 2.5, 20)
	})
	t.Run("delete one", func(t *testing.T) {
		if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 100}}); err != nil {
			t.Fatal(err)
		}
		charge(t, "delete", 5.4, 5.6)
	})
	t.Run("delete many", func(t *testing.T) {
		res, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 100}}}})
		if err != nil || res.DeletedCount != 9 {
			t.Fatalf("deleted %v: %v", res, err)
		}
		// the items, and the search: 11 items read, 110 KB
		charge(t, "delete", 9*5.51+11.4, 9*5.51+11.7)
	})
	t.Run("metadata command", func(t *testing.T) {
		if _, err := db.ListCollectionNames(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		charge(t, "listCollections", 1, 1)
	})
	t.Run("a failed command", func(t *testing.T) {
		_ = db.RunCommand(ctx, bson.D{{Key: "find", Value: "items"}, {Key: "filter", Value: 3}}).Err()
		charge(t, "find", 1, 1)
	})
}

// point is the hash point of an int32 shard-key value.
func pointOfInt(v int32) uint64 {
	return shard.Point(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, v)})
}

var retryAfter = regexp.MustCompile(`RetryAfterMs=(\d+)`)

// throttleError checks that err is Cosmos DB's 16500 as the driver
// surfaces it and returns its RetryAfterMs.
func throttleError(t testing.TB, err error) int {
	t.Helper()
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(16500) {
		t.Fatalf("want a server error with code 16500, got %T %v", err, err)
	}
	if !strings.Contains(err.Error(), "Request rate is large") {
		t.Fatalf("16500 without 'Request rate is large': %v", err)
	}
	m := retryAfter.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("16500 without RetryAfterMs: %v", err)
	}
	ms, err := strconv.Atoi(m[1])
	if err != nil || ms < 1 {
		t.Fatalf("RetryAfterMs=%s", m[1])
	}
	return ms
}

// hammer runs op from clients goroutines until d passes or maxOps each,
// and returns when each accepted operation completed (since start) and
// the errors.
func hammer(clients int, d time.Duration, maxOps int, op func(worker, i int) error) (start time.Time, accepted []time.Duration, errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start = time.Now()
	deadline := start.Add(d)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < maxOps && time.Now().Before(deadline); i++ {
				err := op(w, i)
				at := time.Since(start)
				mu.Lock()
				if err == nil {
					accepted = append(accepted, at)
				} else {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return start, accepted, errs
}

// hammerWaits is hammer for a server that waits by clk (server-side
// retry): clients goroutines call op until d of clk's time has passed (or
// maxOps each), and clk moves on by step whenever every one of them is
// waiting in the server for it. It returns clk's time since the start at
// which each accepted operation completed, and the errors.
func hammerWaits(t testing.TB, clk *Clock, clients int, d, step time.Duration, maxOps int, op func(worker, i int) error) (accepted []time.Duration, errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var done atomic.Int64 // clients finished
	start := clk.Now()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer clk.Notify()
			defer done.Add(1)
			for i := 0; i < maxOps && clk.Now().Sub(start) < d; i++ {
				err := op(w, i)
				at := clk.Now().Sub(start)
				mu.Lock()
				if err == nil {
					accepted = append(accepted, at)
				} else {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	for {
		allWait := func(waiting int) bool { return waiting == clients-int(done.Load()) }
		if !clk.Until(10*time.Second, allWait) {
			t.Errorf("in 10 s, the clients neither finished nor all waited for the clock")
			break
		}
		if done.Load() == int64(clients) {
			break
		}
		clk.Advance(step)
	}
	wg.Wait()
	return accepted, errs
}

// hammerClock is hammer on a stopped clock: clk moves on by step until d
// has passed, and within each step clients goroutines call op until each
// has been refused once or made maxPerStep calls, while alongside (when
// not nil) runs once. It returns clk's time since the start at which each
// accepted operation completed, and the errors.
func hammerClock(clk *Clock, clients int, d, step time.Duration, maxPerStep int, alongside func(), op func(worker, i int) error) (accepted []time.Duration, errs []error) {
	var mu sync.Mutex
	start := clk.Now()
	calls := make([]int, clients)
	for passed := time.Duration(0); passed < d; passed += step {
		var wg sync.WaitGroup
		if alongside != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				alongside()
			}()
		}
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range maxPerStep {
					err := op(w, calls[w])
					calls[w]++
					at := clk.Now().Sub(start)
					mu.Lock()
					if err == nil {
						accepted = append(accepted, at)
					} else {
						errs = append(errs, err)
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
		wg.Wait()
		clk.Advance(step)
	}
	return accepted, errs
}

func TestRUThrottling(t *testing.T) {
	// The server's buckets refill only when the test moves its clock.
	clk := NewClock()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), RequestUnits: engine.RequestUnitOptions{RateLimiting: true}, Clock: clk})
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(16))
	ctx := testCtx(t)
	db := client.Database("ru")

	// A collection of the default 400 RU/s, one physical partition: point
	// reads of a 1 KB item cost 1 RU, so it serves 400 a second, plus the
	// one second of burst its bucket starts with.
	t.Run("eight clients against 400 RU/s", func(t *testing.T) {
		// Point reads of a 512 KB item cost 1 + 511/11 = 47.45 RU: the
		// collection serves 8.4 a second, plus the one second of burst its
		// bucket starts with. Three seconds of the server's clock pass in
		// steps of 100 ms, the clients reading until refused in each.
		const size, rate, burst = 512 * 1024, 400.0, 400.0
		price := 1 + (size/1024.0-1)/11
		coll := db.Collection("hammered")
		if _, err := coll.InsertOne(ctx, sizedDoc(1, size)); err != nil {
			t.Fatal(err)
		}
		clk.Advance(1100 * time.Millisecond) // the insert's RU are paid back: the bucket is full
		const clients = 8
		accepted, errs := hammerClock(clk, clients, 3*time.Second, 100*time.Millisecond, 20, nil, func(int, int) error {
			return coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err()
		})
		if len(accepted) == 0 {
			t.Fatalf("no read accepted; errors: %v", errs[0])
		}
		maxRetry := 0
		for _, err := range errs {
			maxRetry = max(maxRetry, throttleError(t, err))
		}
		if maxRetry > 1000 {
			t.Errorf("RetryAfterMs up to %d for %.2f RU at 400 RU/s", maxRetry, price)
		}
		// By any time since the start, at most the burst plus the rate. A
		// read is admitted for 1 RU and pays the rest once it knows the
		// item's size, so each client may have one read in flight beyond.
		slices.Sort(accepted)
		for i, at := range accepted {
			if limit := (burst+rate*at.Seconds())/price + clients; float64(i+1) > limit {
				t.Fatalf("%d reads accepted by %v: more than the budget allows (%.0f)", i+1, at, limit)
			}
		}
		perSecond := map[int]int{}
		for _, at := range accepted {
			perSecond[int(at/time.Second)]++
		}
		for sec, n := range perSecond {
			if float64(n) > (rate+burst)/price+clients {
				t.Errorf("second %d: %d reads of %.2f RU accepted, budget %v + burst %v", sec, n, price, rate, burst)
			}
		}
		for sec := range 3 {
			if perSecond[sec] == 0 {
				t.Errorf("second %d: no read accepted (the bucket did not refill)", sec)
			}
		}
		elapsed := accepted[len(accepted)-1].Seconds()
		if len(errs) == 0 {
			t.Fatalf("%d reads in %.1fs and none throttled", len(accepted), elapsed)
		}
		if float64(len(accepted)) < rate/price*elapsed*0.5 {
			t.Errorf("only %d reads of %.2f RU accepted in %.1fs at %v RU/s", len(accepted), price, elapsed, rate)
		}
		t.Logf("accepted %d, throttled %d, per second %v, max RetryAfterMs %d", len(accepted), len(errs), perSecond, maxRetry)

		ps := ruStats(t, db, "hammered")
		if p := ps.Partitions[0]; p.Throttled < int64(len(errs)) || p.RUTotal < float64(len(accepted))*price {
			t.Errorf("partition stats %+v: want at least %d throttled and %.0f RU", p, len(errs), float64(len(accepted))*price)
		}
	})

	t.Run("insertMany stops at the first refused document", func(t *testing.T) {
		coll := db.Collection("bulk")
		if err := db.CreateCollection(ctx, "bulk"); err != nil {
			t.Fatal(err)
		}
		clk.Advance(1100 * time.Millisecond)
		docs := make([]any, 200)
		for i := range docs {
			docs[i] = sizedDoc(i, 1024) // 5.5 RU each: about 73 fit in 400 RU
		}
		res, err := coll.InsertMany(ctx, docs)
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) {
			t.Fatalf("want a bulk write error, got %v (%v)", err, res)
		}
		if len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Code != 16500 {
			t.Fatalf("write errors %v: want one 16500", bwe.WriteErrors)
		}
		refused := bwe.WriteErrors[0].Index
		if refused < 60 || refused > 100 {
			t.Errorf("refused at document %d, want about 73", refused)
		}
		throttleError(t, bwe)
		if !bwe.HasErrorCode(16500) {
			t.Errorf("driver error %v lacks code 16500", bwe)
		}
		clk.Advance(1100 * time.Millisecond)
		n, err := coll.CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(refused) {
			t.Errorf("%d documents stored, want the %d before the refused one", n, refused)
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: refused}}).Err(); !errors.Is(err, mongo.ErrNoDocuments) {
			t.Errorf("the refused document is stored: %v", err)
		}
	})

	t.Run("unordered insertMany goes on", func(t *testing.T) {
		coll := db.Collection("unordered")
		if err := db.CreateCollection(ctx, "unordered"); err != nil {
			t.Fatal(err)
		}
		clk.Advance(1100 * time.Millisecond)
		docs := make([]any, 120)
		for i := range docs {
			docs[i] = sizedDoc(i, 1024)
		}
		_, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) {
			t.Fatalf("want a bulk write error, got %v", err)
		}
		for _, we := range bwe.WriteErrors {
			if we.Code != 16500 {
				t.Fatalf("write error %v", we)
			}
		}
		clk.Advance(1100 * time.Millisecond)
		n, err := coll.CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if int(n)+len(bwe.WriteErrors) != len(docs) || n == 0 {
			t.Errorf("%d stored and %d refused of %d", n, len(bwe.WriteErrors), len(docs))
		}
	})

	t.Run("a single write refused is a command error", func(t *testing.T) {
		coll := db.Collection("single")
		// 2 MB: about 936 RU, more than the bucket holds: paid from the
		// full bucket, it leaves it 536 RU short, 1.3 s at 400 RU/s.
		if _, err := coll.InsertOne(ctx, sizedDoc(0, 2<<20)); err != nil {
			t.Fatal(err)
		}
		_, err := coll.InsertOne(ctx, sizedDoc(1, 1024))
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 16500 || ce.Name != "TooManyRequests" {
			t.Fatalf("want command error 16500 TooManyRequests, got %T %v", err, err)
		}
		if ms := throttleError(t, err); ms < 100 || ms > 1400 {
			t.Errorf("RetryAfterMs=%d, want the time to pay back about 540 RU at 400 RU/s", ms)
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err == nil {
			t.Errorf("the refused document was stored")
		}
	})
}

// ruPartStats are the request-unit fields of GetPartitionStats.
type ruPartStats struct {
	Throughput int64 `bson:"provisionedThroughput"`
	RUTotal    float64
	Partitions []ruPartition `bson:"partitions"`
}

type ruPartition struct {
	ID         string  `bson:"partitionKeyRangeId"`
	Share      float64 `bson:"throughputShare"`
	RUTotal    float64 `bson:"ruTotal"`
	LastSecond float64 `bson:"ruLastSecond"`
	LastMinute float64 `bson:"ruLastMinute"`
	Normalized float64 `bson:"normalizedRUConsumption"`
	Uncapped   float64 `bson:"normalizedRUConsumptionUncapped"`
	Requests   int64   `bson:"requestCount"`
	Throttled  int64   `bson:"throttledRequests"`
	// WouldThrottle counts, with rate limiting off, the requests over
	// budget (Throttled is then 0).
	WouldThrottle int64 `bson:"wouldHaveBeenThrottledRequests"`
	Hot           []struct {
		ShardKey bson.RawValue `bson:"shardKey"`
		RU       float64       `bson:"ru"`
	} `bson:"hotLogicalPartitions"`
	MinInclusive string `bson:"minInclusive"`
	MaxExclusive string `bson:"maxExclusive"`
}

func ruStats(t testing.TB, db *mongo.Database, coll string) ruPartStats {
	t.Helper()
	raw := runOK(t, db, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: coll}})
	var ps ruPartStats
	if err := bson.Unmarshal(raw, &ps); err != nil {
		t.Fatal(err)
	}
	ps.RUTotal = floatOf(t, mustLookup(t, raw, "ruTotal"))
	return ps
}

// TestRUHotPartition hammers one shard-key value of a collection of two
// physical partitions: its partition is throttled, the other keeps
// serving, and the statistics name the hot key.
func TestRUHotPartition(t *testing.T) {
	// The server's buckets refill only when the test moves its clock.
	clk := NewClock()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), RequestUnits: engine.RequestUnitOptions{RateLimiting: true}, Clock: clk})
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(16))
	ctx := testCtx(t)
	db := client.Database("ru")
	runOK(t, client.Database("admin"), bson.D{{Key: "shardCollection", Value: "ru.tenants"},
		{Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 2}})
	ps := ruStats(t, db, "tenants")
	if len(ps.Partitions) != 2 || ps.Partitions[0].Share != 200 || ps.Partitions[1].Share != 200 {
		t.Fatalf("partitions %+v: want two of 200 RU/s (400 RU/s by default)", ps.Partitions)
	}
	// A tenant on each partition: the first partition ends at 2^63.
	hot, cool := int32(-1), int32(-1)
	for v := int32(0); hot < 0 || cool < 0; v++ {
		switch {
		case pointOfInt(v) < 1<<63 && hot < 0:
			hot = v
		case pointOfInt(v) >= 1<<63 && cool < 0:
			cool = v
		}
	}
	// The hot tenant's item is 512 KB: 47.45 RU a read, 4.2 reads a second
	// at 200 RU/s. The cool tenant's is small: 1 RU.
	coll := db.Collection("tenants")
	const hotSize = 512 * 1024
	price := 1 + (hotSize/1024.0-1)/11
	pad := strings.Repeat("x", hotSize-100)
	for _, doc := range []bson.D{
		{{Key: "_id", Value: hot}, {Key: "tenant", Value: hot}, {Key: "pad", Value: pad}},
		{{Key: "_id", Value: cool}, {Key: "tenant", Value: cool}},
	} {
		if _, err := coll.InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(1500 * time.Millisecond) // the hot insert (50 RU) is paid back

	// Two seconds of the server's clock in steps of 100 ms: in each, eight
	// clients read the hot tenant until refused, while the cool tenant is
	// read twice (20 reads a second: 20 of its 200 RU/s).
	var coolErrs, coolOK int
	coolReads := func() {
		for range 2 {
			err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: cool}, {Key: "tenant", Value: cool}}).Err()
			if err != nil {
				coolErrs++
				t.Errorf("the cool tenant's read failed: %v", err)
			} else {
				coolOK++
			}
		}
	}
	accepted, errs := hammerClock(clk, 8, 2*time.Second, 100*time.Millisecond, 20, coolReads, func(int, int) error {
		return coll.FindOne(ctx, bson.D{{Key: "_id", Value: hot}, {Key: "tenant", Value: hot}}).Err()
	})
	for _, err := range errs {
		throttleError(t, err)
	}
	if coolOK < 20 || coolErrs > 0 {
		t.Errorf("cool tenant: %d reads served, %d failed", coolOK, coolErrs)
	}
	// Its partition's 200 RU/s and 200 RU of burst over about 2 s (and a
	// read in flight per client beyond: admitted for 1 RU, it pays the
	// rest once it knows the item's size).
	if limit := (200+200*2.2)/price + 8; float64(len(accepted)) > limit {
		t.Errorf("%d reads of the hot tenant accepted at 200 RU/s, at most %.0f expected", len(accepted), limit)
	}
	if len(errs) == 0 {
		t.Fatalf("%d reads of the hot tenant in 2 s and none throttled", len(accepted))
	}

	ps = ruStats(t, db, "tenants")
	hotPart, coolPart := ps.Partitions[0], ps.Partitions[1]
	if hotPart.Throttled < int64(len(errs)) || coolPart.Throttled != 0 {
		t.Errorf("throttled: hot partition %d (want >= %d), cool partition %d (want 0)", hotPart.Throttled, len(errs), coolPart.Throttled)
	}
	if len(hotPart.Hot) == 0 || hotPart.Hot[0].ShardKey.Int32() != hot || hotPart.Hot[0].RU < float64(len(accepted))*price {
		t.Errorf("hot logical partitions %+v: want tenant %d first with at least %.0f RU", hotPart.Hot, hot, float64(len(accepted))*price)
	}
	if hotPart.Normalized < 90 || hotPart.LastMinute < float64(len(accepted))*price {
		t.Errorf("hot partition: normalized %.0f%%, last minute %.0f RU", hotPart.Normalized, hotPart.LastMinute)
	}
	if coolPart.Normalized > 50 {
		t.Errorf("cool partition: normalized %.0f%%", coolPart.Normalized)
	}
	// Its debt is at most a read per client: two seconds later its bucket
	// has refilled enough to serve the hot tenant again.
	clk.Advance(2 * time.Second)
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: hot}, {Key: "tenant", Value: hot}}).Err(); err != nil {
		t.Errorf("the hot tenant's read two seconds after the hammering: %v", err)
	}
}

func TestRUServerSideRetry(t *testing.T) {
	// The server's buckets refill, and its retries wait, only when the
	// test moves its clock.
	clk := NewClock()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), RequestUnits: engine.RequestUnitOptions{ServerSideRetry: true}, Clock: clk})
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(16))
	ctx := testCtx(t)
	db := client.Database("ru")
	coll := db.Collection("retried")
	const size = 512 * 1024 // 47.45 RU a read: 8.4 a second
	price := 1 + (size/1024.0-1)/11
	if _, err := coll.InsertOne(ctx, sizedDoc(1, size)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1100 * time.Millisecond) // the insert's RU are paid back: the bucket is full
	// Two seconds of the server's clock, moved 50 ms on whenever every
	// client waits in the server for it.
	const step = 50 * time.Millisecond
	var mu sync.Mutex
	var slowest time.Duration
	accepted, errs := hammerWaits(t, clk, 8, 2*time.Second, step, 200, func(int, int) error {
		start := clk.Now()
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err()
		mu.Lock()
		slowest = max(slowest, clk.Now().Sub(start))
		mu.Unlock()
		return err
	})
	if len(errs) > 0 {
		t.Fatalf("%d errors with server-side retry, first %v", len(errs), errs[0])
	}
	slices.Sort(accepted)
	for i, at := range accepted {
		if limit := (400+400*at.Seconds())/price + 8; float64(i+1) > limit {
			t.Fatalf("%d reads done by %v: more than the budget allows (%.0f)", i+1, at, limit)
		}
	}
	ps := ruStats(t, db, "retried")
	if ps.Partitions[0].Throttled == 0 {
		t.Fatalf("no refusals were absorbed: %d reads in 2 s at 400 RU/s", len(accepted))
	}
	if slowest < step {
		t.Errorf("refusals absorbed, yet the slowest read took %v", slowest)
	}
	t.Logf("%d reads, slowest %v, %d refusals absorbed", len(accepted), slowest, ps.Partitions[0].Throttled)
}

func TestRUServerSideRetryLimit(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), RequestUnits: engine.RequestUnitOptions{ServerSideRetry: true, RetryLimit: 200 * time.Millisecond}})
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(1))
	ctx := testCtx(t)
	coll := client.Database("ru").Collection("slow")
	// 2 MB: about 936 RU, paid from the full bucket of 400: the next
	// request would have to wait more than a second.
	if _, err := coll.InsertOne(ctx, sizedDoc(1, 2<<20)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 50 || ce.Name != "ExceededTimeLimit" {
		t.Fatalf("want 50 ExceededTimeLimit, got %T %v", err, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v, the limit is 200ms", d)
	}
}

// TestRUStatistics: with rate limiting off (the default) nothing is
// refused, but what would have been is counted, and the figures reach
// GetPartitionStats, the server-wide admin command and serverStatus.
func TestRUStatistics(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	client := newTestClient(t, s, options.Client().SetMaxPoolSize(16))
	ctx := testCtx(t)
	db := client.Database("ru")
	coll := db.Collection("free")
	if _, err := coll.InsertOne(ctx, sizedDoc(1, 1024)); err != nil {
		t.Fatal(err)
	}
	_, accepted, errs := hammer(8, 1500*time.Millisecond, 5_000, func(int, int) error {
		return coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err()
	})
	if len(errs) > 0 {
		t.Fatalf("rate limiting is off, yet: %v", errs[0])
	}
	ps := ruStats(t, db, "free")
	p := ps.Partitions[0]
	if p.WouldThrottle == 0 && float64(len(accepted)) > 400*2.5 {
		t.Errorf("%d reads in 1.5 s at 400 RU/s, none counted as would-be throttled", len(accepted))
	}
	if p.Throttled != 0 {
		t.Errorf("rate limiting is off, yet %d requests are reported throttled", p.Throttled)
	}
	// Normalized RU consumption is a percentage; the uncapped ratio
	// shows by how much the busiest second went over.
	if p.Normalized != min(p.Uncapped, 100) || p.Uncapped <= 0 {
		t.Errorf("normalized %v%%, uncapped %v%%", p.Normalized, p.Uncapped)
	}
	if p.RUTotal < float64(len(accepted))+5.5 || p.Requests < int64(len(accepted)) || p.Share != 400 {
		t.Errorf("partition %+v after %d reads and an insert", p, len(accepted))
	}
	if p.LastMinute < float64(len(accepted)) || p.Normalized <= 0 {
		t.Errorf("last minute %.0f RU, normalized %.0f%%", p.LastMinute, p.Normalized)
	}
	if ps.RUTotal != p.RUTotal {
		t.Errorf("collection ruTotal %.2f, its one partition %.2f", ps.RUTotal, p.RUTotal)
	}

	raw := runOK(t, client.Database("admin"), bson.D{{Key: "customAction", Value: "GetPartitionStats"}})
	if got := floatOf(t, mustLookup(t, raw, "requestUnits", "ruPartitions")); got < p.RUTotal {
		t.Errorf("server-wide ruPartitions %.2f < the collection's %.2f", got, p.RUTotal)
	}
	if v := mustLookup(t, raw, "requestUnits", "rateLimiting"); v.Boolean() {
		t.Errorf("rateLimiting reported on")
	}
	status := runOK(t, client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	total := floatOf(t, mustLookup(t, status, "parsec", "requestUnits", "ruTotal"))
	would := floatOf(t, mustLookup(t, status, "parsec", "requestUnits", "wouldHaveBeenThrottledRequests"))
	if total < p.RUTotal || would < float64(p.WouldThrottle) {
		t.Errorf("serverStatus: ruTotal %.2f, would have been throttled %.0f; partition %.2f, %d", total, would, p.RUTotal, p.WouldThrottle)
	}
	if throttled := floatOf(t, mustLookup(t, status, "parsec", "requestUnits", "throttledRequests")); throttled != 0 {
		t.Errorf("serverStatus: %.0f requests throttled with rate limiting off", throttled)
	}
	if math.IsNaN(total) {
		t.Error("NaN")
	}
}

// TestRUThroughputChanges: pools follow throughput changes, splits and
// shared database throughput.
func TestRUThroughputChanges(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Partitions: engine.PartitionLimits{MaxRUs: 1000}})
	client := newTestClient(t, s)
	ctx := testCtx(t)
	db := client.Database("shared")
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateDatabase"}, {Key: "offerThroughput", Value: 1200}})
	for _, name := range []string{"a", "b", "c"} {
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: name}})
	}
	// 1,200 RU/s shared by three one-partition collections.
	for _, name := range []string{"a", "b", "c"} {
		if ps := ruStats(t, db, name); len(ps.Partitions) != 1 || ps.Partitions[0].Share != 400 {
			t.Fatalf("%s: %+v, want one partition of 400 RU/s", name, ps.Partitions)
		}
	}
	if err := db.Collection("c").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if ps := ruStats(t, db, "a"); ps.Partitions[0].Share != 600 {
		t.Errorf("after dropping c: a has %v RU/s, want 600", ps.Partitions[0].Share)
	}
	runOK(t, db, bson.D{{Key: "customAction", Value: "UpdateDatabase"}, {Key: "offerThroughput", Value: 2000}})
	if ps := ruStats(t, db, "b"); ps.Partitions[0].Share != 1000 {
		t.Errorf("after UpdateDatabase: b has %v RU/s, want 1000", ps.Partitions[0].Share)
	}

	// Its own throughput: raising it splits the partitions (1,000 RU/s at
	// most each here), every child getting its share.
	own := client.Database("own")
	runOK(t, own, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "t"}, {Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 1000}})
	if _, err := own.Collection("t").InsertOne(ctx, bson.D{{Key: "k", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	before := ruStats(t, own, "t")
	runOK(t, own, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "t"}, {Key: "offerThroughput", Value: 4000}})
	after := ruStats(t, own, "t")
	if len(after.Partitions) != 4 {
		t.Fatalf("%d partitions after raising to 4,000 RU/s at 1,000 each", len(after.Partitions))
	}
	for _, p := range after.Partitions {
		if p.Share != 1000 {
			t.Errorf("partition %s: %v RU/s, want 1000", p.ID, p.Share)
		}
		if slices.ContainsFunc(before.Partitions, func(b ruPartition) bool { return b.ID == p.ID }) {
			t.Errorf("partition %s survived the split", p.ID)
		}
	}
	if _, err := own.Collection("t").InsertOne(ctx, bson.D{{Key: "k", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, p := range ruStats(t, own, "t").Partitions {
		sum += p.RUTotal
	}
	if sum < 5 {
		t.Errorf("an insert after the split charged %.2f RU to the children", sum)
	}
}

// TestRURateLimitingFlag: PARSEC_RATE_LIMITING turns throttling on in
// `parsec serve`.
func TestRURateLimitingFlag(t *testing.T) {
	t.Parallel()
	p := startProc(t, []string{"PARSEC_LISTEN=127.0.0.1:0", "PARSEC_DATA_DIR=" + t.TempDir(), "PARSEC_RATE_LIMITING=true"})
	client := connect(t, p.addr)
	ctx := testCtx(t)
	status := runOK(t, client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if !mustLookup(t, status, "parsec", "requestUnits", "rateLimiting").Boolean() {
		t.Fatalf("serverStatus: rate limiting off: %v", mustLookup(t, status, "parsec", "requestUnits"))
	}
	coll := client.Database("ru").Collection("flag")
	if _, err := coll.InsertOne(ctx, sizedDoc(0, 2<<20)); err != nil { // 936 RU: 536 more than the bucket held
		t.Fatal(err)
	}
	_, err := coll.InsertOne(ctx, sizedDoc(1, 1024))
	throttleError(t, err)
}
