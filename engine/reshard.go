package engine

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Online resharding (reshardCollection), as MongoDB 7.0 does it: the
// documents are copied into a hidden collection sharded by the new key
// while the collection stays in use, the changes made meanwhile are
// brought over from the change log, and a short critical section (writers
// wait) brings over the last ones and switches. The store keeps the
// state (engine/store/reshard.go); the engine runs one goroutine per
// resharding, shows it in $currentOp, and lets abortReshardCollection
// and commitReshardCollection steer it. A resharding the server was
// stopped or killed in resumes when it starts again.

// Codes of resharding, named by CommandError.Name.
const (
	errNamespaceNotSharded         Code = 118
	errReshardCollectionInProgress Code = 338
	errNoSuchReshardCollection     Code = 339
	errReshardCollectionCommitted  Code = 340
	errReshardCollectionAborted    Code = 341
)

func reshardError(code Code, format string, args ...any) *CommandError {
	e := errorf(code, format, args...)
	switch code {
	case errNamespaceNotSharded:
		e.Name = "NamespaceNotSharded"
	case errReshardCollectionInProgress:
		e.Name = "ReshardCollectionInProgress"
	case errNoSuchReshardCollection:
		e.Name = "NoSuchReshardCollection"
	case errReshardCollectionCommitted:
		e.Name = "ReshardCollectionCommitted"
	case errReshardCollectionAborted:
		e.Name = "ReshardCollectionAborted"
	}
	return e
}

// reshardStore is what resharding needs of storage beyond storage.Storage
// (the local store has it).
type reshardStore interface {
	BeginResharding(src *store.Collection, spec shard.Spec, partitions int) (*store.Resharding, error)
	Reshardings() ([]*store.Resharding, error)
	CopyReshardingRange(r *store.Resharding, i int, cr *store.CopyRange, n int) error
	EndReshardingCopy(r *store.Resharding, ranges []store.CopyRange) error
	ApplyResharding(r *store.Resharding, upTo uint64, n int) (int, error)
	SwitchResharding(r *store.Resharding, catchUp func() error) (*store.Collection, error)
	AbortResharding(r *store.Resharding) error
	FinishResharding(r *store.Resharding) error
}

// Batch sizes: documents per copy transaction while the server serves
// reads and writes (small: a new read waits until the commits in flight
// are written, and writers queue behind them in the store's write
// pipeline) and while nothing else runs (larger: fewer commits, and each
// worker's longer batch overlaps more of the other's), change events per
// apply transaction; and the lag (events brought over in one round)
// under which the critical section starts.
const (
	reshardCopyBatch      = 8
	reshardCopyBatchLight = 64
	reshardCopyBatchAlone = 256
	reshardApplyBatch     = 1000
	reshardSmallLag       = 200
	reshardQuickRound     = 200 * time.Millisecond
	// When the catch-up stops without having caught up (caughtUp).
	reshardCatchUpLimit  = 5 * time.Second
	reshardBlockingRound = time.Second
	reshardMaxRounds     = 50
	// reshardYield is the copy's pause after a batch while the server
	// serves reads or writes, in multiples of the batch's time (2: the
	// copy takes a third of the time; with 3, reads and writes during
	// the copy of `bench -only reshard` ran at 10,800-11,000 a second
	// against 9,100-10,800 with 2, and a resharding under a light load
	// took twice as long); it counts as serving them until
	// reshardQuietAfter after the last.
	reshardYield      = 2
	reshardQuietAfter = 250 * time.Millisecond
	// While the server serves reads and writes, a batch is
	// reshardCopyBatch at reshardHeavyLoad operations a second or more,
	// and larger under a lighter load, up to reshardCopyBatchLight
	// (pacedBatch); the load is measured over reshardLoadWindow.
	reshardHeavyLoad  = 10000
	reshardLoadWindow = 250 * time.Millisecond
)

// pacedBatch is the copy's batch while the server serves rate reads and
// writes a second (rate < 0: not measured yet). Each commit of the copy
// makes every read begun meanwhile wait until it is written (Badger's
// read time waits for the commits before it), so what a read loses to
// the copy grows with the batch. In `bench -only reshard` (8 clients,
// 14,000-20,500 operations a second before the copy) reads and inserts
// kept 0.58-0.71 of their rate during the copy with batches of 32 (four
// runs), 0.61-0.76 with 16 (three) and 0.76-0.79 with 8 (two), where
// the copy took 211-244 s instead of 141-206 s. But small batches make a
// copy under a light load slow for nothing: a resharding of 1.2 million
// documents under 1,000 writes a second took 545 s with batches of 16,
// 237-243 s with 32 and 190-316 s with 64. So the batch shrinks as the
// load grows.
func pacedBatch(rate float64) int {
	if rate < 0 || rate >= reshardHeavyLoad {
		return reshardCopyBatch
	}
	if rate*reshardCopyBatchLight <= reshardHeavyLoad*reshardCopyBatch {
		return reshardCopyBatchLight
	}
	return int(reshardHeavyLoad * reshardCopyBatch / rate)
}

// copyLoad follows the server's reads and writes for the copy's pacing.
type copyLoad struct {
	ops func() int64 // reads and writes served so far

	mu        sync.Mutex
	last      int64     // ops at the last look
	busyUntil time.Time // paced until then
	windowOps int64     // ops at the start of the current window
	windowAt  time.Time
	rate      float64 // ops a second over the last whole window; -1 before one
}

func newCopyLoad(ops func() int64, now time.Time) *copyLoad {
	n := ops()
	return &copyLoad{ops: ops, last: n, windowOps: n, windowAt: now, rate: -1}
}

// look reports whether the server served reads or writes lately, and
// their rate. A batch during which none started proves nothing (they may
// all wait for the copy's commits), so the copy stays paced for
// reshardQuietAfter after the last one it saw.
func (l *copyLoad) look(now time.Time) (busy bool, rate float64) {
	n := l.ops()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n != l.last {
		l.last = n
		l.busyUntil = now.Add(reshardQuietAfter)
	}
	if d := now.Sub(l.windowAt); d >= reshardLoadWindow {
		l.rate = float64(n-l.windowOps) / d.Seconds()
		l.windowOps, l.windowAt = n, now
	}
	return now.Before(l.busyUntil), l.rate
}

// Coordinator states, as MongoDB's $currentOp names them.
const (
	reshardStateCloning    = "cloning"
	reshardStateApplying   = "applying"
	reshardStateBlocking   = "blocking-writes"
	reshardStateCommitting = "committing"
	reshardStateAborting   = "aborting"
	reshardStateDone       = "done"
)

// resharding is one resharding running.
type resharding struct {
	ns      string
	spec    shard.Spec
	started time.Time

	mu         sync.Mutex
	rec        store.Resharding // progress as last written
	state      string
	copyStart  time.Time
	copyEnd    time.Time
	applyStart time.Time

	commitOnce, abortOnce sync.Once
	commit, abort         chan struct{}
	done                  chan struct{}
	err                   error // set before done closes
}

func (rs *resharding) setState(s string) {
	rs.mu.Lock()
	rs.state = s
	rs.mu.Unlock()
}

// copiedMore adds a batch of the copy to the progress shown.
func (rs *resharding) copiedMore(docs, bytes int64) {
	rs.mu.Lock()
	rs.rec.Copied += docs
	rs.rec.CopiedBytes += bytes
	rs.mu.Unlock()
}

func (rs *resharding) progress(r *store.Resharding) {
	rs.mu.Lock()
	rs.rec = *r
	rs.mu.Unlock()
}

// reshardRegistry holds the reshardings running, by namespace, and the
// uuid each resharded collection had before (a write that raced the
// switch goes on against the new one).
type reshardRegistry struct {
	mu     sync.Mutex
	m      map[string]*resharding
	before map[string]string // new uuid -> old uuid
}

// switched notes that the collection of uuid from is now of uuid to.
func (g *reshardRegistry) switched(from, to []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.before == nil {
		g.before = map[string]string{}
	}
	g.before[string(to)] = string(from)
}

// succeeds reports whether the collection of uuid cur was the one of
// uuid old before one or more reshardings.
func (g *reshardRegistry) succeeds(cur, old []byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for u, n := string(cur), 0; n < 1000; n++ {
		prev, ok := g.before[u]
		if !ok {
			return false
		}
		if prev == string(old) {
			return true
		}
		u = prev
	}
	return false
}

func (g *reshardRegistry) get(ns string) *resharding {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[ns]
}

func (g *reshardRegistry) all() []*resharding {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*resharding, 0, len(g.m))
	for _, rs := range g.m {
		out = append(out, rs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ns < out[j].ns })
	return out
}

// add registers rs unless ns has one already, which it returns.
func (g *reshardRegistry) add(rs *resharding) *resharding {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur := g.m[rs.ns]; cur != nil {
		return cur
	}
	if g.m == nil {
		g.m = map[string]*resharding{}
	}
	g.m[rs.ns] = rs
	return nil
}

func (g *reshardRegistry) remove(rs *resharding) {
	g.mu.Lock()
	if g.m[rs.ns] == rs {
		delete(g.m, rs.ns)
	}
	g.mu.Unlock()
}

func newResharding(ns string, spec shard.Spec, r *store.Resharding) *resharding {
	state := reshardStateCloning
	if r.Phase == store.ReshardApplying {
		state = reshardStateApplying
	}
	return &resharding{ns: ns, spec: spec, started: r.Started, rec: *r, state: state,
		commit: make(chan struct{}), abort: make(chan struct{}), done: make(chan struct{})}
}

// startResharding begins resharding c by spec into partitions physical
// partitions and runs it in the background; it returns the running
// resharding (a second one of c fails with 338).
func (e *Engine) startResharding(rst reshardStore, c *store.Collection, spec shard.Spec, partitions int) (*resharding, error) {
	rs := newResharding(c.Namespace(), spec, &store.Resharding{Started: time.Now().UTC()})
	if cur := e.reshards.add(rs); cur != nil {
		return cur, nil
	}
	r, err := rst.BeginResharding(c, spec, partitions)
	if err != nil {
		e.reshards.remove(rs)
		switch {
		case errors.Is(err, store.ErrConflict):
			err = reshardError(errReshardCollectionInProgress, "Only one resharding operation is allowed to be active at a time for %s", c.Namespace())
		case errors.Is(err, store.ErrCollectionChanged):
			err = errorf(ErrConflictingOperationInProgress, "%s changed while resharding began: try again", c.Namespace())
		}
		rs.err = err
		close(rs.done)
		return nil, err
	}
	rs.progress(r)
	e.goResharding(rst, rs, r)
	return rs, nil
}

func (e *Engine) goResharding(rst reshardStore, rs *resharding, r *store.Resharding) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		err := e.runResharding(rst, rs, r)
		if err != nil && !errors.Is(err, errReshardStopped) {
			e.logger.Warn("resharding failed", "ns", rs.ns, "key", rs.spec.String(), "err", err)
		}
		rs.mu.Lock()
		rs.err = err
		rs.mu.Unlock()
		e.reshards.remove(rs)
		close(rs.done)
	}()
}

// errReshardStopped ends a resharding when the server stops: its record
// stays, and the next start resumes it.
var errReshardStopped = errors.New("the server is stopping: resharding resumes when it starts again")

// resumeReshardings goes on with the reshardings a previous run left:
// those that switched or aborted are cleaned up, the others resume.
func (e *Engine) resumeReshardings() {
	rst, ok := e.store.(reshardStore)
	if !ok {
		return
	}
	recs, err := rst.Reshardings()
	if err != nil {
		e.logger.Error("reading reshardings in progress", "err", err)
		return
	}
	for _, r := range recs {
		switch r.Phase {
		case store.ReshardCleanup, store.ReshardAborting:
			if err := rst.FinishResharding(r); err != nil {
				e.logger.Warn("cleaning up after resharding", "ns", r.Namespace(), "err", err)
			}
			continue
		}
		spec, err := r.Spec()
		if err != nil {
			e.logger.Error("resharding record with a bad key: aborting it", "ns", r.Namespace(), "err", err)
			_ = rst.AbortResharding(r)
			continue
		}
		rs := newResharding(r.Namespace(), spec, r)
		if e.reshards.add(rs) != nil {
			continue
		}
		e.logger.Info("resuming resharding", "ns", r.Namespace(), "key", spec.String(), "phase", r.Phase)
		e.goResharding(rst, rs, r)
	}
}

// runResharding takes r from where its record is to the switch, or
// aborts it (temporary collection dropped, source untouched) on a
// failure or abortReshardCollection.
func (e *Engine) runResharding(rst reshardStore, rs *resharding, r *store.Resharding) error {
	fail := func(cause error) error {
		rs.setState(reshardStateAborting)
		if err := rst.AbortResharding(r); err != nil {
			e.logger.Warn("aborting resharding", "ns", rs.ns, "err", err)
		}
		rs.progress(r)
		return cause
	}
	check := func() error {
		select {
		case <-rs.abort:
			return reshardError(errReshardCollectionAborted, "reshardCollection of %s was aborted by abortReshardCollection", rs.ns)
		case <-e.stop:
			return errReshardStopped
		default:
			return nil
		}
	}
	rs.mu.Lock()
	rs.copyStart = time.Now()
	rs.mu.Unlock()
	if r.Phase == store.ReshardCloning {
		if err := e.copyResharding(rst, rs, r, check); err != nil {
			if errors.Is(err, errReshardStopped) {
				return err
			}
			return fail(reshardFailure(rs.ns, err))
		}
		rs.progress(r)
	}
	rs.mu.Lock()
	rs.copyEnd, rs.applyStart, rs.state = time.Now(), time.Now(), reshardStateApplying
	copied := rs.copyEnd.Sub(rs.copyStart)
	rs.mu.Unlock()
	e.logger.Debug("resharding: copy done", "ns", rs.ns, "documents", r.Copied, "took", copied)
	// Bring the changes over until a round finds few: the critical
	// section then has little left to do.
	for round := 0; ; round++ {
		if err := check(); err != nil {
			if errors.Is(err, errReshardStopped) {
				return err
			}
			return fail(err)
		}
		visible, _ := e.store.ChangesVisible()
		roundStart := time.Now()
		n, err := rst.ApplyResharding(r, visible, reshardApplyBatch)
		if err != nil {
			return fail(reshardFailure(rs.ns, err))
		}
		rs.progress(r)
		committed := false
		select {
		case <-rs.commit:
			committed = true
		default:
		}
		if caughtUp(round, n, time.Since(roundStart), time.Since(rs.applyStart), committed) {
			break
		}
	}
	if err := check(); err != nil {
		if errors.Is(err, errReshardStopped) {
			return err
		}
		return fail(err)
	}
	e.logger.Debug("resharding: changes caught up", "ns", rs.ns, "events", r.Applied, "took", time.Since(rs.applyStart))
	rs.setState(reshardStateBlocking)
	// The critical section waits for the writers in flight, and an open
	// transaction that wrote the collection holds it until it ends: as
	// MongoDB's donors do when they prepare to block writes, such
	// transactions are aborted (their next statement or commit gets 251
	// NoSuchTransaction, labelled TransientTransactionError, on which
	// drivers run them again). One that writes it between here and the
	// critical section is still waited for.
	if n := e.sessions.AbortWriters(r.SourceID, fmt.Sprintf("reshardCollection of %s entered its critical section", rs.ns)); n > 0 {
		e.logger.Info("resharding: aborted transactions that wrote the collection", "ns", rs.ns, "transactions", n)
	}
	// Writers released by the switch must find the new entry to be the
	// same collection (the temporary one's uuid becomes its uuid).
	e.reshards.switched(r.SourceUUID, r.TempUUID)
	blocked := time.Now()
	c, err := rst.SwitchResharding(r, func() error {
		// Every write of the source has committed (its fence is held):
		// the last commit time handed out covers them all.
		_, err := rst.ApplyResharding(r, e.store.LastChangeTime(), reshardApplyBatch)
		rs.setState(reshardStateCommitting)
		return err
	})
	if err != nil {
		return fail(reshardFailure(rs.ns, err))
	}
	writesBlocked := time.Since(blocked)
	// The old layout's documents go once writers are on the new one.
	if err := rst.FinishResharding(r); err != nil {
		e.logger.Warn("purging the documents of the resharded collection's old layout (the next start goes on)", "ns", rs.ns, "err", err)
	}
	rs.progress(r)
	rs.setState(reshardStateDone)
	e.cursors.CloseForNamespace(rs.ns)
	e.units.CatalogChanged()
	if c != nil {
		e.logger.Info("resharded", "ns", rs.ns, "key", rs.spec.String(), "partitions", c.Map().Len(), "documents", r.Copied,
			"changes", r.Applied, "writesBlocked", writesBlocked)
	}
	return nil
}

// copyResharding copies r's documents, one worker per range of the
// copy (each commits its own batches with its range's progress, so a
// crash resumes every range where it was), and ends the copy once all
// are done. Alone, the workers run side by side, in batches of
// reshardCopyBatchAlone: while one's batch commits through the store's
// one write path, the other reads and keys its next one. While the
// server serves reads and writes, the copy leaves them two thirds of the
// time: one worker at a time copies a batch (pacedBatch: smaller as the
// load grows), then pauses twice as long as the batch took (each commit
// makes every new read wait until it is written, and the copy competes
// for the same cores).
func (e *Engine) copyResharding(rst reshardStore, rs *resharding, r *store.Resharding, check func() error) error {
	ranges := r.CopyRanges()
	var (
		turn  sync.Mutex // held for a batch and its pause while the server is busy
		load  = newCopyLoad(e.foregroundOps, time.Now())
		quit  = make(chan struct{})
		once  sync.Once
		errMu sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	failed := func(err error) {
		errMu.Lock()
		if first == nil {
			first = err
		}
		errMu.Unlock()
		once.Do(func() { close(quit) })
	}
	for i := range ranges {
		if ranges[i].Done {
			continue
		}
		wg.Add(1)
		go func(i int, cr *store.CopyRange) {
			defer wg.Done()
			for !cr.Done {
				select {
				case <-quit:
					return
				default:
				}
				if err := check(); err != nil {
					failed(err)
					return
				}
				paced, rate := load.look(time.Now())
				batch := reshardCopyBatchAlone
				if paced {
					turn.Lock()
					batch = pacedBatch(rate)
				}
				began := time.Now()
				copied, bytesCopied := cr.Copied, cr.CopiedBytes
				err := rst.CopyReshardingRange(r, i, cr, batch)
				if err == nil {
					rs.copiedMore(cr.Copied-copied, cr.CopiedBytes-bytesCopied)
				}
				if err == nil && paced {
					select {
					case <-time.After(reshardYield * time.Since(began)):
					case <-rs.abort:
					case <-e.stop:
					case <-quit:
					}
				}
				if paced {
					turn.Unlock()
				}
				if err != nil {
					failed(err)
					return
				}
			}
		}(i, &ranges[i])
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := check(); err != nil {
		return err
	}
	return rst.EndReshardingCopy(r, ranges)
}

// caughtUp says whether the catch-up stops after its round number round,
// which brought over n changes in took, since it began: few changes, or a
// round quick enough that the critical section's last one (the changes
// made meanwhile) is too, or commitReshardCollection. A catch-up that
// does not shrink (writers as fast as the apply) stops after a while,
// but only at a round short enough to block writes for: after a long
// copy under load the first rounds bring over minutes of changes, and
// stopping at the first of them left the critical section the next
// round's minutes.
func caughtUp(round, n int, took, since time.Duration, committed bool) bool {
	if n < reshardSmallLag || took < reshardQuickRound || committed || round >= reshardMaxRounds {
		return true
	}
	return since > reshardCatchUpLimit && took <= reshardBlockingRound
}

// foregroundOps counts the reads and writes the server has served (its
// opcounters, without commands such as currentOp).
func (e *Engine) foregroundOps() int64 {
	return e.ops.insert.Load() + e.ops.query.Load() + e.ops.update.Load() + e.ops.delete.Load() + e.ops.getmore.Load()
}

// reshardFailure is the client's error for a resharding that failed.
func reshardFailure(ns string, err error) error {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce
	}
	var ke *shard.KeyError
	if errors.As(err, &ke) {
		return shardKeyError(err)
	}
	var dup *store.DuplicateKeyError
	if errors.As(err, &dup) {
		return errorf(ErrDuplicateKey, "resharding %s: two documents have the same _id and new shard key (or a unique index's value): %v", ns, err)
	}
	if errors.Is(err, store.ErrReshardingSourceChanged) {
		return reshardError(errReshardCollectionAborted, "resharding %s was aborted: %v", ns, err)
	}
	return errorf(ErrInternalError, "resharding %s: %v", ns, err)
}

// wait waits for rs to end, the client to go away or the server to stop.
func (rs *resharding) wait(done <-chan struct{}, stop <-chan struct{}) error {
	select {
	case <-rs.done:
		rs.mu.Lock()
		defer rs.mu.Unlock()
		return rs.err
	case <-done:
		return errorf(ErrInterrupted, "operation was interrupted (the resharding of %s goes on)", rs.ns)
	case <-stop:
		return errorf(ErrInterrupted, "server is shutting down")
	}
}

// reshardingOpDocs are the $currentOp entries of the reshardings running:
// the coordinator's and the recipient's (this node is both), with
// MongoDB's fields.
func (e *Engine) reshardingOpDocs(host string, now time.Time) []bsoncore.Document {
	var out []bsoncore.Document
	for _, rs := range e.reshards.all() {
		rs.mu.Lock()
		r, state := rs.rec, rs.state
		copyStart, copyEnd, applyStart := rs.copyStart, rs.copyEnd, rs.applyStart
		rs.mu.Unlock()
		if r.DB == "" {
			continue // still beginning
		}
		elapsed := int64(now.Sub(r.Started) / time.Second)
		orig := bson.D{{Key: "reshardCollection", Value: rs.ns}, {Key: "key", Value: bson.Raw(rs.spec.Doc())},
			{Key: "unique", Value: false}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}}
		remaining := int64(-1)
		if r.Copied > 0 && !copyStart.IsZero() {
			spent := now.Sub(copyStart)
			if !copyEnd.IsZero() {
				spent = copyEnd.Sub(copyStart)
			}
			left := max(r.ApproxDocs-r.Copied, 0)
			remaining = int64(time.Duration(float64(spent)*float64(left)/float64(r.Copied)) / time.Second)
		}
		copySecs := int64(0)
		if !copyStart.IsZero() {
			end := now
			if !copyEnd.IsZero() {
				end = copyEnd
			}
			copySecs = int64(end.Sub(copyStart) / time.Second)
		}
		applySecs := int64(0)
		if !applyStart.IsZero() {
			applySecs = int64(now.Sub(applyStart) / time.Second)
		}
		recipientState := state
		switch state {
		case reshardStateBlocking, reshardStateCommitting:
			recipientState = "strict-consistency"
		}
		uuid := bson.Binary{Subtype: bson.TypeBinaryUUID, Data: r.TempUUID}
		coord := bson.D{
			{Key: "type", Value: "op"}, {Key: "host", Value: host},
			{Key: "desc", Value: "ReshardingCoordinator"},
			{Key: "op", Value: "command"}, {Key: "ns", Value: rs.ns},
			{Key: "originatingCommand", Value: orig},
			{Key: "totalOperationTimeElapsedSecs", Value: elapsed},
			{Key: "remainingOperationTimeEstimatedSecs", Value: remaining},
			{Key: "coordinatorState", Value: state},
			{Key: "active", Value: true},
		}
		recipient := bson.D{
			{Key: "type", Value: "op"}, {Key: "host", Value: host},
			{Key: "desc", Value: fmt.Sprintf("ReshardingRecipientService %s", uuidText(r.TempUUID))},
			{Key: "op", Value: "command"}, {Key: "ns", Value: rs.ns},
			{Key: "originatingCommand", Value: orig},
			{Key: "reshardingUUID", Value: uuid},
			{Key: "totalOperationTimeElapsedSecs", Value: elapsed},
			{Key: "remainingOperationTimeEstimatedSecs", Value: remaining},
			{Key: "approxDocumentsToCopy", Value: r.ApproxDocs},
			{Key: "documentsCopied", Value: r.Copied},
			{Key: "approxBytesToCopy", Value: r.ApproxBytes},
			{Key: "bytesCopied", Value: r.CopiedBytes},
			{Key: "totalCopyTimeElapsedSecs", Value: copySecs},
			{Key: "oplogEntriesApplied", Value: r.Applied},
			{Key: "totalApplyTimeElapsedSecs", Value: applySecs},
			{Key: "recipientState", Value: recipientState},
			{Key: "active", Value: true},
		}
		for _, d := range []bson.D{coord, recipient} {
			if raw, err := bson.Marshal(d); err == nil {
				out = append(out, raw)
			}
		}
	}
	return out
}

func uuidText(u []byte) string {
	if len(u) != 16 {
		return fmt.Sprintf("%x", u)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
