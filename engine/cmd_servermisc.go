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

// Server commands that tools and shell helpers call and that need little
// from Parsec: fsync, profile, killOp, getDefaultRWConcern, listShards and
// balancerStatus.

// cmdFsync flushes every acknowledged write to disk. The lock form
// (db.fsyncLock) is refused: Parsec has no global write lock.
func (e *Engine) cmdFsync(_ context.Context, req *request) ([]byte, error) {
	if v, err := req.body.LookupErr("lock"); err == nil {
		lock, err := boolArg(req.name, "lock", v)
		if err != nil {
			return nil, err
		}
		if lock {
			return nil, errorf(ErrCommandNotSupported, "fsync with lock is not supported by Parsec: it has no global write lock (a backup may copy the data directory of a stopped server)")
		}
	}
	if err := e.store.Sync(); err != nil {
		return nil, err
	}
	return okReply(bson.E{Key: "numFiles", Value: int32(1)})
}

// cmdFsyncUnlock answers db.fsyncUnlock(): nothing is ever locked.
func (e *Engine) cmdFsyncUnlock(_ context.Context, _ *request) ([]byte, error) {
	return nil, errorf(ErrIllegalOperation, "fsyncUnlock called when not locked")
}

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

// cmdKillOp answers killOp: Parsec runs no operation currentOp would list,
// so there is never one to kill.
func (e *Engine) cmdKillOp(_ context.Context, req *request) ([]byte, error) {
	if _, err := req.body.LookupErr("op"); err != nil {
		return nil, errorf(ErrBadValue, "Did not provide \"op\" field")
	}
	return okReply(bson.E{Key: "info", Value: "attempting to kill op"})
}

// cmdGetDefaultRWConcern reports the implicit defaults MongoDB 7.0 has:
// read concern local, write concern majority (which, with one member,
// is the server's own journal).
func (e *Engine) cmdGetDefaultRWConcern(_ context.Context, _ *request) ([]byte, error) {
	return okReply(
		bson.E{Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "local"}}},
		bson.E{Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: int32(0)}}},
		bson.E{Key: "defaultWriteConcernSource", Value: "implicit"},
		bson.E{Key: "defaultReadConcernSource", Value: "implicit"},
		bson.E{Key: "localUpdateWallClockTime", Value: bson.NewDateTimeFromTime(e.started)},
	)
}

// cmdListShards lists Parsec's one shard (physical partitions are inside
// it: GetPartitionStats shows them).
func (e *Engine) cmdListShards(_ context.Context, _ *request) ([]byte, error) {
	return okReply(bson.E{Key: "shards", Value: bson.A{e.shardDoc()}})
}

// cmdBalancerStatus answers sh.isBalancerRunning(): Parsec moves no data
// between shards, its partitions split in place.
func (e *Engine) cmdBalancerStatus(_ context.Context, _ *request) ([]byte, error) {
	return okReply(
		bson.E{Key: "mode", Value: "full"},
		bson.E{Key: "inBalancerRound", Value: false},
		bson.E{Key: "numBalancerRounds", Value: int64(0)},
	)
}
