package engine

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Operations in progress: every command a connection runs is registered
// for as long as it runs, so that $currentOp lists it and killOp can
// interrupt it (its context is cancelled: the command ends with 11601
// Interrupted at its next check).

// activeOp is one running command. Its body belongs to the connection's
// frame and is copied by listers only under the registry's lock, which
// the command's end also takes.
type activeOp struct {
	id     int32
	c      *conn
	name   string
	db     string
	body   bsoncore.Document
	start  time.Time
	cancel context.CancelFunc
	// progress is an index build's (createIndexes), set under the
	// registry's lock (setProgress).
	progress *store.BuildProgress
}

// opRegistry holds the running commands by operation id.
type opRegistry struct {
	mu   sync.Mutex
	next int32
	m    map[int32]*activeOp
}

func (r *opRegistry) add(op *activeOp) {
	r.mu.Lock()
	r.next++
	if r.next <= 0 {
		r.next = 1
	}
	op.id = r.next
	if r.m == nil {
		r.m = map[int32]*activeOp{}
	}
	r.m[op.id] = op
	r.mu.Unlock()
}

// setProgress shows p as op's progress in $currentOp.
func (r *opRegistry) setProgress(op *activeOp, p *store.BuildProgress) {
	r.mu.Lock()
	op.progress = p
	r.mu.Unlock()
}

func (r *opRegistry) remove(op *activeOp) {
	r.mu.Lock()
	delete(r.m, op.id)
	r.mu.Unlock()
}

// kill interrupts operation id; false if none runs with that id.
func (r *opRegistry) kill(id int32) bool {
	r.mu.Lock()
	op := r.m[id]
	r.mu.Unlock()
	if op == nil {
		return false
	}
	op.cancel()
	return true
}

// snapshot copies the running operations, each with a copy of its
// command with its secrets redacted (redact.go): the original belongs to
// its connection's frame. The lock is held for the copies alone, since
// every command takes it twice.
func (r *opRegistry) snapshot() []activeOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]activeOp, 0, len(r.m))
	for _, op := range r.m {
		cp := *op
		cp.body, cp.cancel = bytes.Clone(redactCommand(op.name, op.body)), nil
		out = append(out, cp)
	}
	return out
}

// currentOpDocs describes ops as $currentOp does; with only set, those of
// the connections it accepts alone.
func currentOpDocs(ops []activeOp, host string, now time.Time, only func(*conn) bool) []bsoncore.Document {
	out := make([]bsoncore.Document, 0, len(ops))
	for _, op := range ops {
		if only != nil && !only(op.c) {
			continue
		}
		running := now.Sub(op.start)
		op.c.mu.Lock()
		app := op.c.appName
		op.c.mu.Unlock()
		d := bson.D{
			{Key: "type", Value: "op"},
			{Key: "host", Value: host},
			{Key: "desc", Value: "conn" + strconv.FormatInt(op.c.wc.ID(), 10)},
			{Key: "connectionId", Value: op.c.wc.ID()},
			{Key: "client", Value: op.c.wc.RemoteAddr().String()},
		}
		if app != "" {
			d = append(d, bson.E{Key: "appName", Value: app})
		}
		d = append(d,
			bson.E{Key: "active", Value: true},
			bson.E{Key: "currentOpTime", Value: now.UTC().Format("2006-01-02T15:04:05.000-07:00")},
			bson.E{Key: "opid", Value: op.id},
			bson.E{Key: "secs_running", Value: int64(running / time.Second)},
			bson.E{Key: "microsecs_running", Value: running.Microseconds()},
			bson.E{Key: "op", Value: opKind(op.name)},
			bson.E{Key: "ns", Value: opNamespace(op.db, op.body)},
			bson.E{Key: "command", Value: bson.Raw(op.body)},
		)
		if lsid, err := op.body.LookupErr("lsid"); err == nil {
			d = append(d, bson.E{Key: "lsid", Value: bson.RawValue{Type: bson.Type(lsid.Type), Value: lsid.Data}})
		}
		if p := op.progress; p != nil {
			done, total := p.Done.Load(), p.Total.Load()
			pct := 0.0
			if total > 0 {
				pct = float64(done) / float64(total) * 100
			}
			d = append(d,
				bson.E{Key: "msg", Value: fmt.Sprintf("Index Build: scanning collection Index Build: scanning collection: %d/%d %.0f%%", done, total, pct)},
				bson.E{Key: "progress", Value: bson.D{{Key: "done", Value: done}, {Key: "total", Value: total}}})
		}
		if raw, err := bson.Marshal(d); err == nil {
			out = append(out, raw)
		}
	}
	return out
}

// opKind is $currentOp's op field: what kind of operation a command is.
func opKind(name string) string {
	switch name {
	case "find":
		return "query"
	case "getMore":
		return "getmore"
	case "insert", "update":
		return name
	case "delete":
		return "remove"
	}
	return "command"
}

// opNamespace is db.<collection> for a command naming one (getMore: its
// collection field), else db.$cmd.
func opNamespace(db string, body bsoncore.Document) string {
	if coll, err := body.LookupErr("collection"); err == nil && body.Index(0).Key() == "getMore" {
		if s, ok := coll.StringValueOK(); ok && s != "" {
			return db + "." + s
		}
	}
	if first, err := body.IndexErr(0); err == nil {
		if s, ok := first.Value().StringValueOK(); ok && s != "" && !strings.ContainsRune(s, 0) {
			return db + "." + s
		}
	}
	return db + ".$cmd"
}
