package engine

import (
	"context"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdKillOp interrupts the operation $currentOp lists with opid op: its
// command ends with 11601 Interrupted at its next check. The reply is the
// same whether such an operation was running or not, as in MongoDB. A
// router's shard form "<shard>:<opid>" is accepted too.
func (e *Engine) cmdKillOp(_ context.Context, req *request) ([]byte, error) {
	v, err := req.body.LookupErr("op")
	if err != nil {
		return nil, errorf(ErrBadValue, "Did not provide \"op\" field")
	}
	id, ok := opIDArg(v)
	if !ok {
		return nil, wrongType(req.name, "op", v, "int")
	}
	e.running.kill(id)
	return okReply(bson.E{Key: "info", Value: "attempting to kill op"})
}

// opIDArg reads killOp's op: a number, or "<shard>:<number>".
func opIDArg(v bsoncore.Value) (int32, bool) {
	if s, ok := v.StringValueOK(); ok {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			s = s[i+1:]
		}
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err == nil
	}
	f, ok := numberFloat(v)
	if !ok || f != float64(int32(f)) {
		return 0, false
	}
	return int32(f), true
}
