package engine

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"time"

	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The command layer's side of request units (engine/billing charges
// them): the engine's names for billing's types, a request's routing to
// its partitions (which billing does not know: spans are the planner's),
// and the MongoDB errors of a refusal.

// RequestUnitOptions configure request-unit accounting and throttling
// (billing.Options).
type RequestUnitOptions = billing.Options

type (
	// accounts are the server's request-unit accounts: pools,
	// partitions, admission and charges.
	accounts = billing.Accounts
	// meter is one request's account.
	meter = billing.Meter
	// collUnits are one collection's partitions (billing.Units).
	collUnits = billing.Units
	// writeTally is the request-unit side of a write statement.
	writeTally = billing.WriteTally
	// itemAdmission is one inserted item's admission.
	itemAdmission = billing.ItemAdmission
	// throttleLog remembers what the throttle log last reported.
	throttleLog = billing.ThrottleLog
)

// throttleLogInterval is how often the throttle log reports.
const throttleLogInterval = billing.ThrottleLogInterval

// commandRU is the price of a command that charged nothing.
var commandRU = billing.CommandRU

// ruRefusal is the command error of a refusal by billing: 16500
// TooManyRequests with RetryAfterMs, or ExceededTimeLimit when
// server-side retry gave up; nil for any other error.
func ruRefusal(err error) *CommandError {
	if err == nil {
		return nil // no errors.As: admissions that pass allocate nothing
	}
	var refused *billing.RateTooLarge
	switch {
	case errors.As(err, &refused):
		return tooManyRequests(refused.RetryAfter)
	case errors.Is(err, billing.ErrRetryLimit):
		return retryLimitExceeded()
	}
	return nil
}

// ruError is err with billing's refusals made command errors.
func ruError(err error) error {
	if ce := ruRefusal(err); ce != nil {
		return ce
	}
	return err
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

// spansLogicalKey is the one logical partition spans read, as LogicalKey
// writes it (<point><shard key>); nil when they read none, several, or
// whole partitions.
func spansLogicalKey(spans []partitionSpan) []byte {
	if !plan.ByShardKey(spans) || plan.LogicalPartitionCount(spans) != 1 {
		return nil
	}
	return spans[0].LPs[0].Start[plan.DocPrefixLen:]
}

// spanParts are the partitions of spans (a plan's routing, in hash order;
// none: the whole collection). Routed to every partition, it is u's
// Parts itself, without allocating.
func spanParts(u *collUnits, spans []partitionSpan) []*ru.Partition {
	parts := u.Parts()
	switch {
	case len(spans) == 0 || len(parts) == 1:
		return parts
	case len(spans) == 1:
		return u.Holding(spans[0].Start)
	case len(spans) == len(parts) && u.Index(spans[0].Start) == 0 && u.Index(spans[len(spans)-1].Start) == len(parts)-1:
		return parts
	}
	out := make([]*ru.Partition, 0, len(spans))
	for _, s := range spans {
		p := u.At(s.Start)
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// routeWrite points w at c's partitions for a statement whose filter
// pins point (nil: none) or routes to spans.
func (e *Engine) routeWrite(w *writeTally, c *store.Collection, point []byte, spans []partitionSpan, filter bsoncore.Document) {
	var u *collUnits
	if !e.ruOpts.Bypass && c != nil {
		u = e.units.Of(c)
	}
	switch {
	case u == nil:
		w.Route(nil, c, point != nil, nil, nil)
	case point != nil:
		w.Route(u, c, true, u.Holding(point), billing.LogicalKey(c, point))
	default:
		w.Route(u, c, false, spanParts(u, spans), spansLogicalKey(spans))
	}
}

// admitWrite admits a write statement on the partitions it is routed
// to; what it costs is known once it ran.
func (e *Engine) admitWrite(ctx context.Context, m *meter, w *writeTally) error {
	return ruError(e.units.AdmitWrite(ctx, m, w))
}

// payItem admits one item of a write whose price is known before it is
// written (billing's PayItem), its refusal as the item's command error.
func (e *Engine) payItem(m *meter, p *ru.Partition, key []byte, price float64, a *itemAdmission, retry bool) (time.Duration, *CommandError) {
	wait, err := e.units.PayItem(m, p, key, price, a, retry)
	if err != nil {
		return 0, ruRefusal(err)
	}
	return wait, nil
}

// logThrottles logs the partitions that throttled requests since the
// last pass.
func (e *Engine) logThrottles() { e.throttles.Log(e.logger, e.units) }

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

// serverRUStats are the server's request-unit statistics: every
// partition's, and the commands charged to no partition.
func (e *Engine) serverRUStats(now time.Time) bson.D {
	return e.units.ServerStats(now, float64(e.commandRU.Load())/100)
}
