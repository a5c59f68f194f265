package engine

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"time"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/ru"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Request units: every command is charged (package ru prices what it
// did), the charge goes to the physical partitions it touched and, for
// sharded collections, to the logical partition (shard-key value) of
// each item, and each partition's bucket decides whether an operation
// may start.
//
// How an operation is admitted and charged:
//   - Writes of one item whose price is known before they run (inserts)
//     pay it at admission, one item at a time: a refused item is refused
//     before anything of it is written.
//   - Everything else (reads, updates, deletes) is admitted while its
//     partitions' balances are not negative (ru.Bucket rule 5), runs, and
//     then pays what it did. A point read pays the price of a small item
//     at admission and the rest, if any, afterwards.
//   - A refusal is TooManyRequests (16500) with RetryAfterMs; with
//     server-side retry the request waits instead, up to the retry limit,
//     then fails with ExceededTimeLimit (50). With rate limiting off
//     nothing is refused: what would have been is counted as throttled
//     and charged anyway.
//   - A command that charged nothing (metadata commands, reads of
//     collections that do not exist) costs ru's command price, charged
//     to no partition.
//
// A request keeps its charge in a meter, one small struct inside the
// request: getLastRequestStatistics reports it.

// RequestUnitOptions configure request-unit accounting and throttling.
type RequestUnitOptions struct {
	// RateLimiting refuses operations that would overdraw their
	// partition's budget (16500 TooManyRequests). Off, as in the Cosmos DB
	// emulator: request units are charged and reported either way.
	RateLimiting bool
	// ServerSideRetry makes refused operations wait and retry instead, up
	// to RetryLimit, then fail with ExceededTimeLimit (Cosmos DB's
	// server-side retry). It implies RateLimiting.
	ServerSideRetry bool
	// RetryLimit bounds server-side retry; 0 means ru.MaxRetryWait (60 s).
	RetryLimit time.Duration
	// BurstSeconds is each partition's bucket capacity in seconds of its
	// share; 0 means 1 (Cosmos DB's per-second budget).
	BurstSeconds float64
	// Bypass turns accounting off: nothing is charged, counted or
	// throttled. For measuring what accounting costs (benchmarks) only.
	Bypass bool
}

// meter is one request's account.
type meter struct {
	total     float64 // RU charged so far
	charged   bool    // something was charged
	throttled bool    // the request was refused
}

func (m *meter) add(amount float64) {
	if m != nil {
		m.total += amount
		m.charged = true
	}
}

// charge is the request's charge as reported: its operations' charges,
// or the command price when it ran none.
func (m *meter) charge() float64 {
	if !m.charged && !m.throttled {
		return commandRU
	}
	return ru.Round(m.total)
}

var commandRU = ru.Charge(ru.Usage{Kind: ru.KindCommand})

// limiting reports whether refusals are enforced.
func (o RequestUnitOptions) limiting() bool { return o.RateLimiting || o.ServerSideRetry }

// admit lets an operation on partition p start: it pays prepay now (the
// part of its price known before it runs; 0 only checks that the
// balance is not negative). key is the logical partition the RU go to
// (nil: none). A nil meter is an internal operation, never refused (the
// writes of $out and $merge, which their aggregate was admitted for).
func (e *Engine) admit(ctx context.Context, m *meter, p *ru.Partition, key []byte, prepay float64) error {
	switch {
	case p == nil:
		m.add(prepay)
		return nil
	case m == nil:
		p.Charge(e.now(), key, prepay)
		return nil
	}
	now := e.now()
	ok, after := p.TryCharge(now, key, prepay)
	switch {
	case ok:
	case !e.ruOpts.limiting():
		// Counted as throttled by TryCharge: Cosmos DB would have refused it.
		p.Charge(now, key, prepay)
	case e.ruOpts.ServerSideRetry:
		if err := e.retryCharge(ctx, p, key, prepay, after); err != nil {
			m.throttled = true
			if errors.Is(err, errRetryLimit) {
				return retryLimitExceeded()
			}
			return err
		}
	default:
		m.throttled = true
		return tooManyRequests(after)
	}
	m.add(prepay)
	return nil
}

// admitAll admits an operation on several partitions (a fan-out), paying
// nothing in advance.
func (e *Engine) admitAll(ctx context.Context, m *meter, parts []*ru.Partition) error {
	for _, p := range parts {
		if err := e.admit(ctx, m, p, nil, 0); err != nil {
			return err
		}
	}
	return nil
}

// chargeTo charges amount, known after the operation ran, to p.
func (e *Engine) chargeTo(m *meter, p *ru.Partition, key []byte, amount float64) {
	if amount <= 0 {
		return
	}
	if p != nil {
		p.Charge(e.now(), key, amount)
	}
	m.add(amount)
}

// chargeSplit charges amount to parts, by weight (nil or all zero:
// evenly), the last part taking the rounding so that the parts add up to
// amount.
func (e *Engine) chargeSplit(m *meter, parts []*ru.Partition, weights []float64, amount float64) {
	if amount <= 0 {
		return
	}
	m.add(amount)
	if len(parts) == 0 {
		return
	}
	now := e.now()
	if len(parts) == 1 {
		parts[0].Charge(now, nil, amount)
		return
	}
	var sum float64
	for _, w := range weights {
		sum += w
	}
	left := amount
	for i, p := range parts {
		share := amount / float64(len(parts))
		if sum > 0 {
			share = amount * weights[i] / sum
		}
		share = ru.Round(share)
		if i == len(parts)-1 {
			share = left
		}
		left -= share
		p.Charge(now, nil, share)
	}
}

// errRetryLimit: server-side retry gave up.
var errRetryLimit = ru.ErrRetryLimit

// retryCharge is server-side retry: it sleeps until p can pay amount,
// then pays it, or gives up past the retry limit (errRetryLimit).
func (e *Engine) retryCharge(ctx context.Context, p *ru.Partition, key []byte, amount float64, after time.Duration) error {
	limit := e.ruOpts.RetryLimit
	wait, ok := ru.RetryWait(after, 0, limit)
	sleep := e.cfg.Wait
	if sleep == nil {
		sleep = sleepTimer
	}
	var waited time.Duration
	for {
		if !ok {
			return errRetryLimit
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		waited += wait
		next, err := p.TryChargeWithin(e.now(), key, amount, waited, limit)
		if err != nil {
			return err
		}
		if next == 0 {
			return nil
		}
		wait = next
	}
}

// sleepTimer waits d on a real timer, or until ctx is done.
func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// tooManyRequests is Cosmos DB's refusal of a request over its
// partition's budget, with the time until the budget can pay it.
func tooManyRequests(after time.Duration) *CommandError {
	return errorf(ErrTooManyRequests, "Error=16500, RetryAfterMs=%d, Details='Response status code does not indicate success: TooManyRequests (429); Substatus: 3200; Reason: (Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429)'",
		ru.RetryAfterMillis(after))
}

// retryLimitExceeded is Cosmos DB's error when server-side retry gave up:
// code 50 with the codeName ExceededTimeLimit (MongoDB names 50
// MaxTimeMSExpired).
func retryLimitExceeded() *CommandError {
	return &CommandError{Code: ErrMaxTimeMSExpired, Name: "ExceededTimeLimit",
		Msg: "Request timed out. Retries due to rate limiting: True."}
}

// throttledOnly is the command error of a write command whose statements
// were all refused before any ran: the client sees TooManyRequests (or
// ExceededTimeLimit) as for a single operation, not write errors.
func throttledOnly(n int64, errs []writeError, ordered bool, total int) *CommandError {
	if n > 0 || len(errs) == 0 || (!ordered && len(errs) < total) || (ordered && errs[0].index != 0) {
		return nil
	}
	for _, we := range errs {
		if we.code != ErrTooManyRequests && we.code != ErrMaxTimeMSExpired {
			return nil
		}
	}
	if errs[0].code == ErrMaxTimeMSExpired {
		return retryLimitExceeded()
	}
	return errorf(errs[0].code, "%s", errs[0].msg)
}

// strongRead reports whether a read asked for strong or bounded-staleness
// consistency (readConcern "majority" or "linearizable"): Cosmos DB
// charges those twice.
func strongRead(body bsoncore.Document) ru.Consistency {
	v, err := body.LookupErr("readConcern", "level")
	if err != nil {
		return ru.ConsistencySession
	}
	if s, _ := v.StringValueOK(); s == "majority" || s == "linearizable" {
		return ru.ConsistencyStrong
	}
	return ru.ConsistencySession
}

// logicalKey is the logical partition of a document key of a sharded
// collection, d/<coll:4><point:8><shard key><_id>: its <point:8><shard
// key> part, as the store's logical-partition counters key it (a
// sub-slice of key). nil for an unsharded collection, which has one.
func logicalKey(c *store.Collection, key []byte) []byte {
	if c == nil || !c.Sharded() || len(key) < 14 {
		return nil
	}
	n, ok := value.KeyLen(key[14:])
	if !ok {
		return nil
	}
	return key[6 : 14+n]
}

// spansLogicalKey is the one logical partition spans read, as logicalKey
// writes it (<point><shard key>); nil when they read none, several, or
// whole partitions.
func spansLogicalKey(spans []partitionSpan) []byte {
	if !plan.ByShardKey(spans) || plan.LogicalPartitionCount(spans) != 1 {
		return nil
	}
	return spans[0].LPs[0].Start[plan.DocPrefixLen:]
}

// secondaryIndexWork is what tx has written to (or removed from)
// secondary indexes so far: entries and bytes. It is the one place
// secondary index entries enter write charges; writes measure it before
// and after each item.
func secondaryIndexWork(tx storage.Txn) (entries, bytes int64) {
	w := tx.IndexWork()
	return w.Entries, w.Bytes
}

// itemUsage is the usage of writing (or removing) one item of size bytes
// at key: its _id index entry and the secondary ones measured.
func itemUsage(kind ru.Kind, key []byte, size int, ixEntries, ixBytes int64) ru.Usage {
	return ru.Usage{Kind: kind, BytesWritten: int64(size), IndexEntries: 1 + ixEntries, IndexBytes: int64(len(key)) + ixBytes}
}

// itemCharge is one item a write stored or removed, priced, to charge
// once its transaction commits.
type itemCharge struct {
	part   *ru.Partition
	key    []byte
	amount float64
}

// writeTally is the request-unit side of a write statement: where it
// runs (routeWrite) and what one attempt of its transaction did, the
// items it wrote and the documents its search loaded. A transaction that
// reruns starts the tally over (reset), so nothing is charged twice; it
// is charged once the transaction commits (chargeWrite).
type writeTally struct {
	units  *collUnits // nil: not charged
	coll   *store.Collection
	point  bool            // the filter pins one item
	search []*ru.Partition // the partitions the filter routes to
	key    []byte          // the logical partition it pins, if one

	one      itemCharge
	more     []itemCharge
	n        int
	examined int64 // documents the search loaded (not a point lookup)
	read     int64 // their bytes, or the bytes of the item a point lookup read
}

// routeWrite points w at c's partitions for a statement whose filter
// pins point (nil: none) or routes to spans.
func (e *Engine) routeWrite(w *writeTally, c *store.Collection, point []byte, spans []partitionSpan, filter bsoncore.Document) {
	w.units, w.coll, w.point, w.search, w.key = nil, c, point != nil, nil, nil
	if e.ruOpts.Bypass || c == nil {
		return
	}
	if w.units = e.units.of(c); w.units == nil {
		return
	}
	if point != nil {
		i := w.units.index(point)
		w.search, w.key = w.units.parts[i:i+1], logicalKey(c, point)
		return
	}
	w.search, w.key = w.units.spanParts(spans), spansLogicalKey(spans)
}

// admitWrite admits a write statement on the partitions it is routed
// to; what it costs is known once it ran.
func (e *Engine) admitWrite(ctx context.Context, m *meter, w *writeTally) error {
	switch {
	case w.units == nil:
		return nil
	case len(w.search) == 1:
		return e.admit(ctx, m, w.search[0], w.key, 0)
	}
	return e.admitAll(ctx, m, w.search)
}

func (w *writeTally) reset() {
	w.n, w.more, w.examined, w.read = 0, w.more[:0], 0, 0
}

func (w *writeTally) add(c itemCharge) {
	if w.n == 0 {
		w.one = c
	} else {
		w.more = append(w.more, c)
	}
	w.n++
}

// scanned counts one document a search loaded.
func (w *writeTally) scanned(doc []byte) {
	w.examined++
	w.read += int64(len(doc))
}

// item prices one written item and adds it.
func (w *writeTally) item(kind ru.Kind, key []byte, size int, ixEntries, ixBytes int64) {
	if w.units == nil {
		return
	}
	w.add(itemCharge{part: w.units.at(key), key: logicalKey(w.coll, key), amount: ru.Charge(itemUsage(kind, key, size, ixEntries, ixBytes))})
}

// itemAdmission is one item's admission by its partition, kept across
// reruns of the transaction that writes it.
type itemAdmission struct {
	state uint8 // admitNone, admitPaid or admitRefused
	err   *CommandError
}

const (
	admitNone uint8 = iota
	admitPaid
	admitRefused
)

// payItem admits one item of a write whose price is known before it is
// written, from inside the transaction that writes it: it never waits.
// It returns the item's error when refused; or, when server-side retry
// applies (retry set), how long to wait: the caller commits what it
// wrote, then calls waitItem outside the transaction. a keeps the
// decision.
func (e *Engine) payItem(m *meter, p *ru.Partition, key []byte, price float64, a *itemAdmission, retry bool) (time.Duration, *CommandError) {
	switch a.state {
	case admitPaid:
		return 0, nil
	case admitRefused:
		return 0, a.err
	}
	now := e.now()
	switch {
	case p == nil:
		a.state = admitPaid
		m.add(price)
		return 0, nil
	case m == nil: // an internal write, never refused
		a.state = admitPaid
		p.Charge(now, key, price)
		return 0, nil
	}
	ok, after := p.TryCharge(now, key, price)
	switch {
	case ok:
	case !e.ruOpts.limiting():
		p.Charge(now, key, price) // what Cosmos DB would have refused, counted as throttled
	case e.ruOpts.ServerSideRetry && retry:
		return max(after, time.Nanosecond), nil
	default:
		a.state, a.err = admitRefused, tooManyRequests(after)
		if e.ruOpts.ServerSideRetry {
			a.err = retryLimitExceeded()
		}
		m.throttled = true
		return 0, a.err
	}
	a.state = admitPaid
	m.add(price)
	return 0, nil
}

// waitItem is server-side retry for an item payItem could not admit
// after a refusal that asked to wait after: it waits until p pays price.
// Past the retry limit it records the item as refused with
// ExceededTimeLimit and returns errRetryLimit.
func (e *Engine) waitItem(ctx context.Context, m *meter, p *ru.Partition, key []byte, price float64, after time.Duration, a *itemAdmission) error {
	err := e.retryCharge(ctx, p, key, price, after)
	switch {
	case err == nil:
		a.state = admitPaid
		m.add(price)
	case errors.Is(err, errRetryLimit):
		a.state, a.err = admitRefused, retryLimitExceeded()
		m.throttled = true
	}
	return err
}

// chargeItems charges the items of a committed write.
func (e *Engine) chargeItems(m *meter, w *writeTally) {
	if w.n == 0 {
		return
	}
	now := e.now()
	for i := range w.n {
		c := w.one
		if i > 0 {
			c = w.more[i-1]
		}
		if c.part != nil {
			c.part.Charge(now, c.key, c.amount)
		}
		m.add(c.amount)
	}
}

// chargeWrite charges a committed attempt of a write statement: its
// items, and its search: for a filter that pins one item, the price of a
// point read when nothing was written (a written item's price covers
// reading it); otherwise a query over the partitions it was routed to.
func (e *Engine) chargeWrite(m *meter, w *writeTally) {
	if w.units == nil {
		return
	}
	e.chargeItems(m, w)
	switch {
	case w.point && w.n == 0:
		e.chargeTo(m, w.search[0], w.key, ru.Charge(ru.Usage{Kind: ru.KindPointRead, BytesRead: w.read}))
	case !w.point:
		price := ru.Charge(ru.Usage{Kind: ru.KindQuery, DocsExamined: w.examined, BytesRead: w.read, Partitions: max(len(w.search), 1)})
		if len(w.search) == 1 {
			e.chargeTo(m, w.search[0], w.key, price)
			return
		}
		e.chargeSplit(m, w.search, nil, price)
	}
}

// activityID is the ActivityId of a connection's n-th request: a GUID
// made of the connection's random seed and n, so that requests cost no
// random numbers and the id is only formatted when asked for.
func activityID(seed [8]byte, n uint64) string {
	var b [16]byte
	copy(b[:8], seed[:])
	binary.BigEndian.PutUint64(b[8:], n)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
