package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// profileState is the profiler setting the profile command reports. As on
// a mongos, level 0 and 1 only set what counts as a slow operation;
// Parsec keeps no system.profile collection.
type profileState struct {
	mu         sync.Mutex
	level      int32
	slowMS     int32
	sampleRate float64
	// slow is slowMS for the request path (Handle logs slower commands).
	slow atomic.Int64
}

// slowThreshold is the duration past which a command is logged as slow
// (slowms, 100 ms unless profile set it).
func (p *profileState) slowThreshold() time.Duration {
	if ms := p.slow.Load(); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return 100 * time.Millisecond
}

// logSlow records a command slower than slowms as MongoDB's "Slow query"
// line (id 51803) in getLog's global log, with its request charge, and in
// the server's log.
func (e *Engine) logSlow(c *conn, wr *wire.Request, name string, dur time.Duration, charge float64) {
	db := wr.DB
	if v, err := bsoncore.Document(wr.Body).LookupErr("$db"); err == nil {
		db, _ = v.StringValueOK()
	}
	ns := db + ".$cmd"
	if el, err := bsoncore.Document(wr.Body).IndexErr(0); err == nil {
		if coll, ok := el.Value().StringValueOK(); ok {
			ns = namespaceOf(db, coll)
		}
	}
	ctx := fmt.Sprintf("conn%d", c.wc.ID())
	attr := map[string]any{
		"type":           "command",
		"ns":             ns,
		"command":        name,
		"durationMillis": dur.Milliseconds(),
		"requestCharge":  charge,
		"remote":         c.wc.RemoteAddr().String(),
	}
	e.logs.add(logLineAttr(e.now(), "I", "COMMAND", 51803, ctx, "Slow query", attr))
	e.logger.Info("slow query", "ns", ns, "command", name, "duration_ms", dur.Milliseconds(), "request_charge", charge, "conn", c.wc.ID())
}

// cmdProfile reads and sets the profiling level, slowms and sampleRate.
func (e *Engine) cmdProfile(_ context.Context, req *request) ([]byte, error) {
	el, _ := req.body.IndexErr(0)
	level, err := int64Arg(req.name, "profile", el.Value())
	if err != nil {
		return nil, err
	}
	if level < -1 || level > 2 {
		return nil, errorf(ErrBadValue, "Invalid profiling level: %d", level)
	}
	if level == 2 {
		return nil, errorf(ErrBadValue, "Profiling level 2 is not supported by Parsec: it keeps no system.profile collection (levels 0 and 1 set slowms, as on a mongos)")
	}
	p := &e.profile
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slowMS == 0 && p.sampleRate == 0 {
		p.slowMS, p.sampleRate = 100, 1
	}
	was := bson.D{{Key: "was", Value: p.level}, {Key: "slowms", Value: p.slowMS}, {Key: "sampleRate", Value: p.sampleRate}}
	slow, rate := p.slowMS, p.sampleRate
	if v, err := req.body.LookupErr("slowms"); err == nil {
		n, err := int64Arg(req.name, "slowms", v)
		if err != nil {
			return nil, err
		}
		slow = int32(n)
	}
	if v, err := req.body.LookupErr("sampleRate"); err == nil {
		f, ok := numberFloat(v)
		if !ok || f < 0 || f > 1 {
			return nil, errorf(ErrBadValue, "'sampleRate' must be between 0.0 and 1.0 inclusive")
		}
		rate = f
	}
	if level >= 0 {
		p.level = int32(level)
	}
	p.slowMS, p.sampleRate = slow, rate
	p.slow.Store(int64(slow))
	return okReply(was...)
}
