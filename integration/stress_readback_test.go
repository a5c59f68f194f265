package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// Read-back under a spike: many goroutines share one client whose pool
// holds a single connection, insert documents and read each one back as
// soon as its insert is acknowledged; right after the spike, more inserts
// are read back one at a time; then every acknowledged document is read
// again and the spike's documents are counted.
//
// Why an acknowledged insert is always visible to a later read:
//   - The insert's documents, counters and (for a retryable write) its
//     statement records are one Badger transaction; store.Update returns
//     only after Commit, which returns once the write is applied and its
//     commit timestamp marked done. The reply is built after that, and
//     wire.serverConn.serve writes it before it reads the next frame.
//   - A later read opens a new read transaction (store.View, or a point
//     read's Get in one); Badger gives it readTs = nextTxnTs-1, at or past
//     the insert's commit timestamp, and waits until every commit up to
//     readTs is applied. Reads keep no transaction, snapshot or cursor
//     across commands (FindOne is a single batch), ignore afterClusterTime
//     (they always read the latest), and a deadline that strikes ends the
//     command with an error (MaxTimeMSExpired), never an empty batch.
//   - A retried insert answers from its records only when they carry the
//     same (lsid, txnNumber), which exist only if its documents committed;
//     attempts of one session run one at a time (sessionTable.checkout).
//   - The server runs a connection's requests in order, one at a time. When
//     an operation times out in flight, the driver reads the late reply in
//     the background and drops it before the connection is reused, or
//     closes the connection: a later operation never gets another's reply.
//     So even a w: 0 insert is visible to a later read on the same
//     connection (a read on a new connection may overtake it: it was never
//     acknowledged).
//
// Variants: retryable writes on and off, a sharded collection (read by _id
// alone, a fan-out over every partition, and by shard key and _id, a point
// read) that splits during the spike, readPreference secondaryPreferred,
// explicit causally consistent sessions, w: 0, and short context deadlines
// so that operations time out while waiting for the connection, before
// being sent (the driver's maxTimeMS would be <= 0), while the server runs
// them and on the server (maxTimeMS), each variant on a server of its own.
//
// Busy goroutines spin during each spike to add CPU contention (GOMAXPROCS
// adds more). The environment can run it longer:
//
//	PARSEC_STRESS_SPIKES      spikes per variant at most (default 3)
//	PARSEC_STRESS_BUDGET      no further spike of a variant once it ran this
//	                          long (default 4s; the first spike always runs)
//	PARSEC_STRESS_GOROUTINES  goroutines per spike (default 1000)
//	PARSEC_STRESS_BUSY        spinning goroutines during a spike (default 1)
//	PARSEC_STRESS_DURATION    keep spiking each variant this long (e.g. 2m)
//	PARSEC_STRESS_VARIANTS    comma-separated variant names to run (default all)

// readbackVariant is one shape of the spike.
type readbackVariant struct {
	name               string
	server             ServerOptions
	noRetryWrites      bool
	sharded            bool // customAction CreateCollection with shardKey k at 40,000 RU/s (7 partitions)
	secondaryPreferred bool
	sessions           bool // each goroutine in an explicit (causally consistent) session
	timeouts           bool // short context deadlines
	unacknowledged     bool // inserts with w: 0
}

// The variants pair options that do not interact, to keep the run short
// under the race detector.
var readbackVariants = []readbackVariant{
	{name: "unsharded"},
	// 32 KiB partitions: the spike's 100 KB split the collection while it
	// is written and read.
	{name: "sharded_splitting_explicit_sessions", sharded: true, sessions: true,
		server: ServerOptions{Partitions: engine.PartitionLimits{MaxBytes: 32 << 10}}},
	{name: "unacknowledged_no_retry_writes_secondary_preferred", unacknowledged: true, noRetryWrites: true, secondaryPreferred: true},
	{name: "timeouts", timeouts: true},
	{name: "timeouts_sharded_no_retry_writes", timeouts: true, sharded: true, noRetryWrites: true},
}

// stressConfig is how hard the stress tests push.
type stressConfig struct {
	spikes     int
	goroutines int
	busy       int
	duration   time.Duration // spike until then, whatever spikes and budget say
	budget     time.Duration // no further spike past it (beyond the first)
	only       map[string]bool
}

func stressConfigFromEnv(t testing.TB) stressConfig {
	t.Helper()
	c := stressConfig{spikes: 3, goroutines: 1000, busy: 1, budget: 4 * time.Second}
	for name, dst := range map[string]*int{
		"PARSEC_STRESS_SPIKES": &c.spikes, "PARSEC_STRESS_GOROUTINES": &c.goroutines, "PARSEC_STRESS_BUSY": &c.busy,
	} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				t.Fatalf("%s=%q: want a non-negative integer", name, v)
			}
			*dst = n
		}
	}
	for name, dst := range map[string]*time.Duration{"PARSEC_STRESS_DURATION": &c.duration, "PARSEC_STRESS_BUDGET": &c.budget} {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s=%q: %v", name, v, err)
			}
			*dst = d
		}
	}
	if v := os.Getenv("PARSEC_STRESS_VARIANTS"); v != "" {
		c.only = map[string]bool{}
		for _, name := range strings.Split(v, ",") {
			c.only[strings.TrimSpace(name)] = true
		}
	}
	c.spikes = max(c.spikes, 1)
	c.goroutines = max(c.goroutines, 1)
	return c
}

func TestStressReadback(t *testing.T) {
	cfg := stressConfigFromEnv(t)
	for _, v := range readbackVariants {
		if cfg.only != nil && !cfg.only[v.name] {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			r := newReadbackRun(t, v, cfg)
			started := time.Now()
			for spike := 0; ; spike++ {
				r.spike(t, spike)
				took := time.Since(started)
				if took >= cfg.duration && (spike+1 >= cfg.spikes || took >= cfg.budget) {
					break
				}
			}
			r.report(t, time.Since(started))
		})
	}
}

// readbackRun is one variant's server, client and tallies.
type readbackRun struct {
	v      readbackVariant
	cfg    stressConfig
	client *mongo.Client
	coll   *mongo.Collection
	acked  []int64 // ids of acknowledged inserts of earlier spikes
	// partitions is how many physical partitions a sharded collection
	// had when created
	partitions int32
	tally      readbackTally
}

// readbackTally counts what the operations did.
type readbackTally struct {
	spikes, inserted, reads, readsOK atomic.Int64
	// timeouts by where the deadline struck
	waitTimeouts, unsentTimeouts, inFlightTimeouts, serverTimeouts, otherTimeouts atomic.Int64

	mu      sync.Mutex
	missing int // an acknowledged insert read back as no document
	wrong   int // a read answered with another document
	failed  int // an error that is neither a timeout (where allowed) nor expected
	samples []string
	// otherTimeout is the first timeout of no known kind, for the report
	otherTimeout string
	firstMiss    time.Duration // since the run started, of the first and last miss
	lastMiss     time.Duration
}

func newReadbackRun(t *testing.T, v readbackVariant, cfg stressConfig) *readbackRun {
	opts := v.server
	opts.Dir = t.TempDir()
	s := StartServer(t, opts)
	// Operations wait for the one connection behind up to a thousand
	// others: the wait is bounded by their contexts, not by the 5 s
	// server selection timeout (which bounds the checkout too).
	co := options.Client().SetMaxPoolSize(1).SetRetryWrites(!v.noRetryWrites).SetServerSelectionTimeout(time.Minute)
	client := newTestClient(t, s, co)
	db := client.Database("stress")
	if v.sharded {
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
			{Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 40000}})
	}
	collOpts := options.Collection()
	if v.secondaryPreferred {
		collOpts.SetReadPreference(readpref.SecondaryPreferred())
	}
	if v.unacknowledged {
		collOpts.SetWriteConcern(writeconcern.Unacknowledged())
	}
	r := &readbackRun{v: v, cfg: cfg, client: client, coll: db.Collection("c", collOpts)}
	if v.sharded {
		r.partitions = getPartitionStats(t, db, "c").PartitionCount
	}
	if v.timeouts {
		// documents for the slow scans to examine (spike -1, ids below 0)
		seed := make([]any, readbackSeed)
		for i := range seed {
			seed[i] = readbackDoc(-1-int64(i), -1)
		}
		if _, err := db.Collection("c").InsertMany(testCtx(t), seed); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return r
}

// readbackSeed is how many documents the slow scans of the variants with
// short deadlines examine besides the spikes' own.
const readbackSeed = 1000

// readbackKeys is how many shard-key values the documents spread over.
const readbackKeys = 97

func readbackDoc(id int64, spike int) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id % readbackKeys}, {Key: "v", Value: id * 7}, {Key: "spike", Value: spike},
		{Key: "pad", Value: strings.Repeat("p", 48)}}
}

// filter reads document id by _id alone, or on a sharded collection by
// shard key and _id for odd ids (a point read; even ids fan out).
func (r *readbackRun) filter(id int64) bson.D {
	if r.v.sharded && id%2 == 1 {
		return bson.D{{Key: "k", Value: id % readbackKeys}, {Key: "_id", Value: id}}
	}
	return bson.D{{Key: "_id", Value: id}}
}

// opContext is an operation's context: with short deadlines, a third
// of the operations get under 5 ms, a third under 200 ms, the rest (and
// every operation otherwise) 60 s.
func (r *readbackRun) opContext(short bool) (context.Context, context.CancelFunc) {
	d := 60 * time.Second
	if short && r.v.timeouts {
		switch rand.IntN(3) {
		case 0:
			d = time.Duration(200+rand.IntN(4800)) * time.Microsecond
		case 1:
			d = time.Duration(5+rand.IntN(195)) * time.Millisecond
		}
	}
	return context.WithTimeout(context.Background(), d)
}

// inSession runs fn in an explicit session when the variant uses them.
func (r *readbackRun) inSession(ctx context.Context, fn func(context.Context) error) error {
	if !r.v.sessions {
		return fn(ctx)
	}
	sess, err := r.client.StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(context.Background())
	return fn(mongo.NewSessionContext(ctx, sess))
}

// spike runs one spike: the goroutines insert and read back, then every
// acknowledged insert is read again, with the collection's count checked.
func (r *readbackRun) spike(t *testing.T, spike int) {
	t.Helper()
	n := r.cfg.goroutines
	base := int64(spike) * int64(n+readbackSettle)
	started := time.Now()
	stopBusy := r.busy()
	gate := make(chan struct{})
	acked := make([]bool, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			id := base + int64(g)
			if r.v.timeouts && g%8 == 0 {
				r.slowScan()
			}
			err := r.inSession(context.Background(), func(sctx context.Context) error {
				ctx, cancel := r.opContext(true)
				defer cancel()
				if sess := mongo.SessionFromContext(sctx); sess != nil {
					ctx = mongo.NewSessionContext(ctx, sess)
				}
				if _, err := r.coll.InsertOne(ctx, readbackDoc(id, spike)); err != nil {
					return err
				}
				acked[g] = true
				r.tally.inserted.Add(1)
				rctx, rcancel := r.opContext(true)
				defer rcancel()
				if sess := mongo.SessionFromContext(sctx); sess != nil {
					rctx = mongo.NewSessionContext(rctx, sess)
				}
				r.checkRead(rctx, id, started)
				return nil
			})
			if err != nil {
				r.opFailed(err, fmt.Sprintf("insert %d", id))
			}
			// and, one goroutine in eight, a document an earlier spike inserted
			if len(r.acked) > 0 && g%8 == 0 {
				old := r.acked[rand.IntN(len(r.acked))]
				ctx, cancel := r.opContext(true)
				r.checkRead(ctx, old, started)
				cancel()
			}
		}()
	}
	close(gate)
	wg.Wait()

	// Read every acknowledged insert back; with short deadlines, other
	// reads keep timing out on the same connection meanwhile.
	var ids []int64
	for g, ok := range acked {
		if ok {
			ids = append(ids, base+int64(g))
		}
	}
	ids = append(ids, r.settle(base+int64(n), spike, started)...)
	stopNoise := make(chan struct{})
	var noise sync.WaitGroup
	if r.v.timeouts && len(ids) > 0 {
		for range n / 8 {
			noise.Add(1)
			go func() {
				defer noise.Done()
				for {
					select {
					case <-stopNoise:
						return
					default:
					}
					ctx, cancel := r.opContext(true)
					r.checkRead(ctx, ids[rand.IntN(len(ids))], started)
					cancel()
				}
			}()
		}
	}
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := r.opContext(false)
			defer cancel()
			r.checkRead(ctx, id, started)
		}()
	}
	wg.Wait()
	close(stopNoise)
	noise.Wait()
	if r.v.timeouts && len(ids) > 0 {
		r.probe(t, spike, ids, started)
	}
	stopBusy()

	// The collection holds every acknowledged insert of the spike; with
	// timeouts, inserts the client gave up on may be there too.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	count, err := r.coll.CountDocuments(ctx, bson.D{{Key: "spike", Value: spike}})
	if err != nil {
		t.Fatalf("spike %d: count: %v", spike, err)
	}
	if count < int64(len(ids)) || count > int64(n+readbackSettle) || (!r.v.timeouts && count != int64(len(ids))) {
		t.Errorf("spike %d: %d documents stored, %d inserts acknowledged of %d", spike, count, len(ids), n+readbackSettle)
	}
	if !r.v.timeouts && len(ids) != n+readbackSettle {
		t.Errorf("spike %d: %d of %d inserts acknowledged", spike, len(ids), n+readbackSettle)
	}
	r.acked = append(r.acked, ids...)
	r.tally.spikes.Add(1)
	if r.tally.failures() > 0 {
		t.Fatalf("spike %d (%v): %s", spike, time.Since(started).Round(time.Millisecond), r.tally.summary())
	}
}

// readbackSettle is how many documents settle inserts and reads back
// one after another right after each spike.
const readbackSettle = 100

// settle inserts documents from id on, one at a time right after the
// spike, each read back at once (the shape of the anomaly this test
// hunts: a run of reads of just-inserted documents answered with none).
// It returns the ids acknowledged.
func (r *readbackRun) settle(id int64, spike int, started time.Time) []int64 {
	var ids []int64
	for i := range int64(readbackSettle) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := r.inSession(ctx, func(sctx context.Context) error {
			if _, err := r.coll.InsertOne(sctx, readbackDoc(id+i, spike)); err != nil {
				return err
			}
			ids = append(ids, id+i)
			r.tally.inserted.Add(1)
			r.checkRead(sctx, id+i, started)
			return nil
		})
		cancel()
		if err != nil {
			r.opFailed(err, fmt.Sprintf("insert %d", id+i))
		}
	}
	return ids
}

// readbackProbes is how many operations probe spends per spike.
const readbackProbes = 12

// probe makes operations time out while the server runs them, one after
// another with no queue for the connection, and reads an acknowledged
// document right after each: the operation that inherits the connection
// (after the driver skipped the late reply, or on a new connection when
// it gave up) must get its own answer. Every other probe is a 100-document
// insert; one that is acknowledged must be visible whole. The first probe
// of each kind runs without a short deadline, to time it; the others get
// between a fifth of that time and all of it, so most of their deadlines
// strike while the server runs them, however fast the machine is.
func (r *readbackRun) probe(t *testing.T, spike int, ids []int64, started time.Time) {
	t.Helper()
	const batch = 100
	var took [2]time.Duration
	for i := range readbackProbes {
		d := time.Minute
		if full := took[i%2]; full > 0 {
			d = full/5 + rand.N(full*4/5)
		}
		ctx, cancel := context.WithTimeout(context.Background(), d)
		began := time.Now()
		if i%2 == 0 {
			err := r.coll.FindOne(ctx, bson.D{{Key: "absent", Value: true}}).Err()
			if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
				r.opFailed(err, "slow scan")
			}
		} else {
			lo := int64(1)<<40 + int64(spike)<<20 + int64(i)*batch
			docs := make([]any, batch)
			for j := range docs {
				docs[j] = readbackDoc(lo+int64(j), -2)
			}
			_, err := r.coll.InsertMany(ctx, docs)
			if err != nil {
				r.opFailed(err, fmt.Sprintf("insert %d documents from %d", batch, lo))
			} else {
				rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
				n, err := r.coll.CountDocuments(rctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo + batch}}}})
				rcancel()
				if err != nil || n != batch {
					r.tally.anomaly(&r.tally.missing, time.Since(started), fmt.Sprintf("acknowledged insert of %d documents from %d: %d found (%v)", batch, lo, n, err))
				}
			}
		}
		cancel()
		if took[i%2] == 0 {
			took[i%2] = max(time.Since(began), time.Millisecond)
		}
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		r.checkRead(rctx, ids[rand.IntN(len(ids))], started)
		rcancel()
	}
}

// slowScan runs a read that examines every document and matches none,
// under a short deadline: it takes long enough on the server for the
// deadline to strike while it runs, after it was sent.
func (r *readbackRun) slowScan() {
	ctx, cancel := r.opContext(true)
	defer cancel()
	err := r.coll.FindOne(ctx, bson.D{{Key: "absent", Value: true}}).Err()
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		r.opFailed(err, "slow scan")
	}
}

// checkRead reads document id and checks it is there, whole: an error is
// allowed only when it is a timeout of a variant with short deadlines.
func (r *readbackRun) checkRead(ctx context.Context, id int64, started time.Time) {
	r.tally.reads.Add(1)
	raw, err := r.coll.FindOne(ctx, r.filter(id)).Raw()
	switch {
	case err == nil:
		gotID, ok1 := raw.Lookup("_id").AsInt64OK()
		gotV, ok2 := raw.Lookup("v").AsInt64OK()
		if !ok1 || !ok2 || gotID != id || gotV != id*7 {
			r.tally.anomaly(&r.tally.wrong, 0, fmt.Sprintf("read %d: got %v", id, raw))
			return
		}
		r.tally.readsOK.Add(1)
	case errors.Is(err, mongo.ErrNoDocuments):
		r.tally.anomaly(&r.tally.missing, time.Since(started), fmt.Sprintf("read %d: acknowledged insert not found (%v after the spike began)", id, time.Since(started).Round(time.Millisecond)))
	default:
		r.opFailed(err, fmt.Sprintf("read %d", id))
	}
}

// opFailed counts an operation's error: a timeout where deadlines are
// short, else a failure.
func (r *readbackRun) opFailed(err error, what string) {
	if r.v.timeouts && mongo.IsTimeout(err) {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "checking out a connection"), strings.Contains(msg, "server selection error"):
			r.tally.waitTimeouts.Add(1)
		case strings.Contains(msg, "calculated server-side timeout"), strings.Contains(msg, "operation not sent to server"):
			r.tally.unsentTimeouts.Add(1)
		case strings.Contains(msg, "timed out waiting for server response"), strings.Contains(msg, "unable to read server response"):
			r.tally.inFlightTimeouts.Add(1)
		case strings.Contains(msg, "MaxTimeMSExpired"), strings.Contains(msg, "exceeded time limit"):
			r.tally.serverTimeouts.Add(1)
		default:
			if r.tally.otherTimeouts.Add(1) == 1 {
				r.tally.mu.Lock()
				r.tally.otherTimeout = msg
				r.tally.mu.Unlock()
			}
		}
		return
	}
	r.tally.anomaly(&r.tally.failed, 0, what+": "+err.Error())
}

func (a *readbackTally) anomaly(counter *int, at time.Duration, sample string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	*counter++
	if counter == &a.missing {
		if a.missing == 1 {
			a.firstMiss = at
		}
		a.lastMiss = at
	}
	if len(a.samples) < 10 {
		a.samples = append(a.samples, sample)
	}
}

func (a *readbackTally) failures() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.missing + a.wrong + a.failed
}

func (a *readbackTally) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := fmt.Sprintf("%d acknowledged not found (from %v to %v), %d wrong documents, %d errors",
		a.missing, a.firstMiss.Round(time.Millisecond), a.lastMiss.Round(time.Millisecond), a.wrong, a.failed)
	if len(a.samples) > 0 {
		s += ":\n  " + strings.Join(a.samples, "\n  ")
	}
	return s
}

// report logs the run's figures; with short deadlines, the operations
// must have timed out in flight too, or the variant tested nothing.
func (r *readbackRun) report(t *testing.T, took time.Duration) {
	a := &r.tally
	t.Logf("%d spikes of %d goroutines (%d busy) in %v: %d inserts acknowledged, %d reads, %d found; timeouts: %d waiting for the connection, %d not sent, %d in flight, %d on the server, %d other",
		a.spikes.Load(), r.cfg.goroutines, r.cfg.busy, took.Round(time.Millisecond), a.inserted.Load(), a.reads.Load(), a.readsOK.Load(),
		a.waitTimeouts.Load(), a.unsentTimeouts.Load(), a.inFlightTimeouts.Load(), a.serverTimeouts.Load(), a.otherTimeouts.Load())
	if a.otherTimeout != "" {
		t.Logf("first timeout of another kind: %s", a.otherTimeout)
	}
	if r.v.sharded {
		ps := getPartitionStats(t, r.coll.Database(), r.coll.Name())
		t.Logf("%d physical partitions at the end, %d at the start", ps.PartitionCount, r.partitions)
		if r.v.server.Partitions.MaxBytes > 0 && ps.PartitionCount <= r.partitions {
			t.Errorf("the collection never split: %d partitions", ps.PartitionCount)
		}
	}
	if r.v.timeouts && a.inFlightTimeouts.Load()+a.serverTimeouts.Load() == 0 {
		t.Errorf("no operation timed out after it was sent: the connection never had a late reply to skip")
	}
}

// busy starts the spinning goroutines and returns what stops them.
func (r *readbackRun) busy() func() {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range r.cfg.busy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for !stop.Load() {
				for i := range 20_000 {
					x += i
				}
				// yield now and then: without it the spinners hold
				// every P between the scheduler's 10 ms preemptions,
				// which measures the scheduler rather than Parsec
				runtime.Gosched()
			}
			_ = x
		}()
	}
	return func() {
		stop.Store(true)
		wg.Wait()
	}
}
