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
	mu         sync.Mutex // one profile command at a time
	level      int32
	sampleRate float64
	// slowMS is read by every command (Handle logs slower ones).
	slowMS atomic.Int64
}

func (p *profileState) init() {
	p.sampleRate = 1
	p.slowMS.Store(100) // MongoDB's default
}

// slowThreshold is the duration past which a command is logged as slow.
func (p *profileState) slowThreshold() time.Duration {
	return time.Duration(p.slowMS.Load()) * time.Millisecond
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
	slow, rate := int32(p.slowMS.Load()), p.sampleRate
	was := bson.D{{Key: "was", Value: p.level}, {Key: "slowms", Value: slow}, {Key: "sampleRate", Value: rate}}
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
	p.sampleRate = rate
	p.slowMS.Store(int64(slow))
	return okReply(was...)
}
