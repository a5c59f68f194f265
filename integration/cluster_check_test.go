package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// The cluster's correctness check: clients read, write and
// compare-and-set a few registers while a nemesis kills nodes with
// SIGKILL and starts them again; the history is checked for
// linearizability by porcupine against a register model, one register per
// key. Acknowledged inserts must all be there at the end, and counters
// incremented by retryable writes must be exact.
//
// A short run (about 15 s, one or two kills) runs with the other tests;
// PARSEC_CLUSTER_CHECK=long runs 60 s (and more failovers in
// TestClusterFailoverGaps).

// clusterCheckLong is whether the long variants run.
func clusterCheckLong() bool { return os.Getenv("PARSEC_CLUSTER_CHECK") == "long" }

type regKind int

const (
	regRead regKind = iota
	regWrite
	regCAS
)

// regInput is one operation on register key: a read, a write of value,
// or a compare-and-set from expect to value.
type regInput struct {
	kind          regKind
	key           int
	value, expect int64
}

// regOutput is what the client learnt: the value read, whether a
// compare-and-set matched; unknown when the client could not learn the
// outcome (the operation may or may not have taken effect).
type regOutput struct {
	value   int64
	ok      bool
	unknown bool
}

// registerModel is a register per key, each starting at 0.
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(regInput).key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]int, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		cur, in, out := state.(int64), input.(regInput), output.(regOutput)
		switch in.kind {
		case regRead:
			return out.value == cur, cur
		case regWrite:
			return true, in.value
		default: // compare-and-set
			if out.unknown {
				// It took effect at its linearization point if the value
				// matched; "not at all" is a linearization after every
				// other operation (its return time is unbounded).
				if cur == in.expect {
					return true, in.value
				}
				return true, cur
			}
			if out.ok {
				return cur == in.expect, in.value
			}
			return cur != in.expect, cur
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		res := ""
		switch {
		case out.unknown:
			res = " -> ?"
		case in.kind == regRead:
			res = fmt.Sprintf(" -> %d", out.value)
		case in.kind == regCAS:
			res = fmt.Sprintf(" -> %v", out.ok)
		}
		switch in.kind {
		case regRead:
			return fmt.Sprintf("get(k%d)%s", in.key, res)
		case regWrite:
			return fmt.Sprintf("put(k%d, %d)%s", in.key, in.value, res)
		}
		return fmt.Sprintf("cas(k%d, %d, %d)%s", in.key, in.expect, in.value, res)
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
}

// checkHistory runs porcupine on ops; on a violation it writes the
// visualization under dir and fails t.
func checkHistory(t *testing.T, ops []porcupine.Operation, dir string) {
	t.Helper()
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(registerModel, ops, 2*time.Minute)
	t.Logf("porcupine: %d operations, %s in %v", len(ops), res, time.Since(start).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(dir, "linearizability.html")
		if err := porcupine.VisualizePath(registerModel, info, path); err != nil {
			t.Errorf("writing the visualization: %v", err)
		}
		t.Errorf("the history is not linearizable; porcupine's visualization: %s", path)
	default:
		t.Errorf("porcupine did not decide within its time limit (%s)", res)
	}
}

// unknownReturn is the return time of an operation whose outcome is
// unknown: it may take effect at any time after its call.
const unknownReturn = math.MaxInt64

// TestClusterLinearizable: five clients, through the replica-set URI with
// retryable writes, read, write and compare-and-set (findAndModify with a
// filter on the current value) four registers, insert documents and
// increment counters, while a nemesis kills a random node every 5-10 s and
// starts it again. The register history is linearizable; every
// acknowledged insert is there at the end; every counter is exactly the
// number of increments acknowledged.
func TestClusterLinearizable(t *testing.T) {
	duration, maxOps := 15*time.Second, 4000
	if clusterCheckLong() {
		duration, maxOps = 60*time.Second, 15000
	}
	c := startTestCluster(t)
	checkRegisters(t, c, duration, maxOps, func(begin, end time.Time) int {
		// The nemesis: every 5-10 s, SIGKILL a random node and start it again.
		rng := rand.New(rand.NewPCG(uint64(begin.UnixNano()), 7))
		kills := 0
		for {
			wait := 5*time.Second + time.Duration(rng.Int64N(int64(5*time.Second)))
			if time.Now().Add(wait).After(end) {
				break
			}
			time.Sleep(wait)
			victim := c.nodes[rng.IntN(len(c.nodes))]
			c.kill(victim)
			kills++
			t.Logf("%v: killed node %d", time.Since(begin).Round(time.Millisecond), victim.id)
			time.Sleep(500*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond))))
			c.start(victim)
			t.Logf("%v: node %d started again", time.Since(begin).Round(time.Millisecond), victim.id)
		}
		time.Sleep(time.Until(end))
		return kills
	})
}

// checkRegisters runs five clients, through the replica-set URI with
// retryable writes, reading, writing and compare-and-setting
// (findAndModify with a filter on the current value) four registers,
// inserting documents and incrementing counters on cluster c for
// duration (at most: they stop when nemesis returns), while nemesis
// (given the start and the end) disturbs the cluster and returns how
// many faults it caused. The register history
// must be linearizable, every acknowledged insert there at the end and
// every counter exactly the increments acknowledged.
func checkRegisters(t *testing.T, c *testCluster, duration time.Duration, maxOps int, nemesis func(begin, end time.Time) int) {
	cl := c.connect()
	db := cl.Database("check")
	majority := options.Collection().SetWriteConcern(writeconcern.Majority())
	regs := db.Collection("registers", majority)
	inserts := db.Collection("inserts", majority)
	counters := db.Collection("counters", majority)
	const keys, clients = 4, 5
	setup, cancelSetup := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelSetup()
	for k := range keys {
		if _, err := regs.InsertOne(setup, bson.D{{Key: "_id", Value: k}, {Key: "v", Value: int64(0)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range clients {
		if _, err := counters.InsertOne(setup, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: int64(0)}}); err != nil {
			t.Fatal(err)
		}
	}

	begin := time.Now()
	now := func() int64 { return int64(time.Since(begin)) }
	stop := make(chan struct{})
	hardStop := begin.Add(duration + 90*time.Second) // no client loop outlives this
	type clientResult struct {
		ops                    []porcupine.Operation
		acked, maybe           []int64 // inserted _ids
		incAcked, incUncertain int64
		readErrs               int
	}
	results := make([]clientResult, clients)
	var wg sync.WaitGroup
	for ci := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[ci]
			rng := rand.New(rand.NewPCG(uint64(ci), uint64(begin.UnixNano())))
			sess, err := cl.StartSession()
			if err != nil {
				t.Error(err)
				return
			}
			defer sess.EndSession(context.Background())
			// The driver hands out pooled server sessions: this one's id
			// may have carried the driver's own transaction numbers
			// before, so ours start far above them.
			txn := int64(1) << 40
			seen := make([]int64, keys) // the last value this client saw per key
			seq := int64(0)
			for n := 0; n < maxOps && time.Now().Before(hardStop); n++ {
				select {
				case <-stop:
					return
				default:
				}
				seq++
				value := int64(ci+1)*1_000_000_000 + seq
				k := rng.IntN(keys)
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				call := now()
				switch p := rng.IntN(100); {
				case p < 35:
					var doc struct {
						V int64 `bson:"v"`
					}
					err := regs.FindOne(ctx, bson.D{{Key: "_id", Value: k}}).Decode(&doc)
					ret := now()
					if err != nil {
						r.readErrs++ // a read that failed changed nothing
						break
					}
					seen[k] = doc.V
					r.ops = append(r.ops, porcupine.Operation{ClientId: ci, Input: regInput{kind: regRead, key: k}, Call: call, Output: regOutput{value: doc.V}, Return: ret})
				case p < 60:
					_, err := regs.UpdateOne(ctx, bson.D{{Key: "_id", Value: k}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: value}}}})
					op := porcupine.Operation{ClientId: ci, Input: regInput{kind: regWrite, key: k, value: value}, Call: call, Output: regOutput{}, Return: now()}
					if err != nil {
						op.Output, op.Return = regOutput{unknown: true}, unknownReturn
					} else {
						seen[k] = value
					}
					r.ops = append(r.ops, op)
				case p < 85:
					expect := seen[k]
					err := regs.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: k}, {Key: "v", Value: expect}},
						bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: value}}}}).Err()
					op := porcupine.Operation{ClientId: ci, Input: regInput{kind: regCAS, key: k, value: value, expect: expect}, Call: call, Return: now()}
					switch {
					case err == nil:
						op.Output = regOutput{ok: true}
						seen[k] = value
					case errors.Is(err, mongo.ErrNoDocuments):
						op.Output = regOutput{ok: false}
					default:
						op.Output, op.Return = regOutput{unknown: true}, unknownReturn
					}
					r.ops = append(r.ops, op)
				case p < 93:
					if _, err := inserts.InsertOne(ctx, bson.D{{Key: "_id", Value: value}, {Key: "client", Value: ci}}); err != nil {
						r.maybe = append(r.maybe, value)
					} else {
						r.acked = append(r.acked, value)
					}
				default:
					// A retryable write by hand: the same session and
					// transaction number until the outcome is known, so
					// the increment applies exactly once.
					txn++
					cmd := bson.D{{Key: "update", Value: "counters"}, {Key: "updates", Value: bson.A{bson.D{
						{Key: "q", Value: bson.D{{Key: "_id", Value: ci}}},
						{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(1)}}}}},
					}}}, {Key: "txnNumber", Value: txn}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}}
					if ok, err := incrementOnce(mongo.NewSessionContext(context.Background(), sess), db, cmd, hardStop); ok {
						r.incAcked++
					} else {
						r.incUncertain++
						t.Logf("client %d: increment %d not acknowledged: %v", ci, txn, err)
					}
				}
				cancel()
			}
		}()
	}

	end := begin.Add(duration)
	kills := nemesis(begin, end)
	close(stop)
	wg.Wait()
	if kills == 0 {
		t.Fatal("the nemesis caused no fault")
	}

	var ops []porcupine.Operation
	var acked, maybe []int64
	var incAcked, incUncertain int64
	reads, writes, cas, casOK, unknown, readErrs := 0, 0, 0, 0, 0, 0
	for _, r := range results {
		ops = append(ops, r.ops...)
		acked, maybe = append(acked, r.acked...), append(maybe, r.maybe...)
		incAcked, incUncertain = incAcked+r.incAcked, incUncertain+r.incUncertain
		readErrs += r.readErrs
		for _, op := range r.ops {
			in, out := op.Input.(regInput), op.Output.(regOutput)
			switch {
			case out.unknown:
				unknown++
			case in.kind == regRead:
				reads++
			case in.kind == regWrite:
				writes++
			case out.ok:
				casOK++
				cas++
			default:
				cas++
			}
		}
	}
	t.Logf("%d faults in %v; %d reads (%d failed, left out), %d writes, %d compare-and-sets (%d matched), %d operations of unknown outcome; %d inserts acknowledged, %d unknown; %d increments acknowledged, %d unknown",
		kills, duration, reads, readErrs, writes, cas, casOK, unknown, len(acked), len(maybe), incAcked, incUncertain)
	if reads == 0 || writes == 0 || casOK == 0 {
		t.Errorf("the clients did too little to check: %d reads, %d writes, %d successful compare-and-sets", reads, writes, casOK)
	}
	checkHistory(t, ops, t.TempDir())

	// Every acknowledged insert is there; nothing is there that was not
	// attempted.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cur, err := inserts.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int64]bool{}
	for cur.Next(ctx) {
		id, _ := cur.Current.Lookup("_id").AsInt64OK()
		stored[id] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	var missing []int64
	for _, id := range acked {
		if !stored[id] {
			missing = append(missing, id)
		}
	}
	attempted := map[int64]bool{}
	for _, id := range append(slices.Clone(acked), maybe...) {
		attempted[id] = true
	}
	extra := 0
	for id := range stored {
		if !attempted[id] {
			extra++
		}
	}
	if len(missing) > 0 || extra > 0 {
		t.Errorf("%d acknowledged inserts missing (first: %v), %d documents no client inserted", len(missing), missing[:min(len(missing), 5)], extra)
	}

	// Counters: exactly the increments acknowledged (an increment the
	// client gave up on may or may not count).
	var total int64
	for i, r := range results {
		var doc struct {
			N int64 `bson:"n"`
		}
		if err := counters.FindOne(ctx, bson.D{{Key: "_id", Value: i}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		total += doc.N
		if doc.N < r.incAcked || doc.N > r.incAcked+r.incUncertain {
			t.Errorf("client %d's counter is %d after %d acknowledged increments (%d of unknown outcome)", i, doc.N, r.incAcked, r.incUncertain)
		}
	}
	t.Logf("counters sum to %d", total)
}

// incrementOnce runs cmd (a write carrying txnNumber) in ctx's session
// until the server acknowledges it or until deadline; a retried write with
// the same session and transaction number applies once.
func incrementOnce(ctx context.Context, db *mongo.Database, cmd bson.D, deadline time.Time) (bool, error) {
	var last error
	for attempt := 0; attempt < 100 && time.Now().Before(deadline); attempt++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var reply struct {
			N           int      `bson:"n"`
			NModified   int      `bson:"nModified"`
			WriteErrors []bson.M `bson:"writeErrors"`
		}
		err := db.RunCommand(actx, cmd).Decode(&reply)
		cancel()
		if err == nil && len(reply.WriteErrors) == 0 && reply.N == 1 {
			return true, nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("reply: n %d, writeErrors %v", reply.N, reply.WriteErrors)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false, last
}

// TestClusterFailoverGaps: the writer (the node hello names primary) is
// killed and started again, 3 times (10 with PARSEC_CLUSTER_CHECK=long),
// while clients insert; each failover's gap is the time from the last
// write acknowledged before the kill to the first acknowledged after it.
// p50 and p99 are logged; each gap must stay under 10 s.
func TestClusterFailoverGaps(t *testing.T) {
	rounds := 3
	if clusterCheckLong() {
		rounds = 10
	}
	c := startTestCluster(t)
	cl := c.connect()
	coll := cl.Database("app").Collection("gaps", options.Collection().SetWriteConcern(writeconcern.Majority()))
	gaps, err := measureFailovers(c, cl, coll, rounds, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(gaps)
	p := func(q float64) time.Duration { return gaps[int(math.Ceil(q*float64(len(gaps))))-1] }
	t.Logf("failover gaps over %d kills of the writer: p50 %v, p99 %v, max %v", len(gaps), p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
	if gaps[len(gaps)-1] > 10*time.Second {
		t.Errorf("a failover took %v, want under 10 s", gaps[len(gaps)-1])
	}
}

// measureFailovers kills the writer rounds times while four goroutines
// insert into coll, and returns each kill's gap: from the last write
// acknowledged before the kill to the first acknowledged of those sent
// after the killed process was gone (a reply already on its way when the
// writer died may still arrive after the kill; it says nothing of the new
// writer).
func measureFailovers(c *testCluster, cl *mongo.Client, coll *mongo.Collection, rounds int, logf func(string, ...any)) ([]time.Duration, error) {
	type ack struct{ call, at time.Time }
	var mu sync.Mutex
	var acks []ack
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var next int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1_000_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				next++
				id := next
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				call := time.Now()
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}})
				cancel()
				if err == nil {
					mu.Lock()
					acks = append(acks, ack{call, time.Now()})
					mu.Unlock()
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	// around is how many writes sent after gone were acknowledged, the
	// last acknowledged before killed and the first sent after gone.
	around := func(killed, gone time.Time) (int, time.Time, time.Time) {
		mu.Lock()
		defer mu.Unlock()
		n, last, first := 0, time.Time{}, time.Time{}
		for _, a := range acks {
			if a.at.Before(killed) && a.at.After(last) {
				last = a.at
			}
			if a.call.After(gone) {
				n++
				if first.IsZero() || a.at.Before(first) {
					first = a.at
				}
			}
		}
		return n, last, first
	}
	waitAcks := func(killed, gone time.Time, n int) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			if got, _, _ := around(killed, gone); got >= n {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("fewer than %d writes acknowledged within 30 s", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := waitAcks(time.Time{}, time.Time{}, 100); err != nil {
		return nil, err
	}
	var gaps []time.Duration
	for round := 0; round < rounds; round++ {
		victim := writerNode(c.t, c, cl)
		killed := time.Now()
		c.kill(victim)
		gone := time.Now()
		if err := waitAcks(killed, gone, 50); err != nil {
			return gaps, fmt.Errorf("round %d: %w", round+1, err)
		}
		_, last, first := around(killed, gone)
		gap := first.Sub(last)
		gaps = append(gaps, gap)
		logf("round %d: killed node %d (the writer): %v from the last acknowledged write before to the first after", round+1, victim.id, gap.Round(time.Millisecond))
		c.start(victim)
		time.Sleep(time.Second) // let it catch up before the next kill
	}
	return gaps, nil
}
