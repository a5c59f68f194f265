package engine

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdConfigureFailPoint sets the failCommand fail point:
// {configureFailPoint: "failCommand", mode: "alwaysOn" | "off" | {times: n}
// | {skip: n}, data: {failCommands, errorCode, closeConnection, errorLabels,
// writeConcernError, blockConnection, blockTimeMS, appName}}, and the
// onPrimaryTransactionalWrite fail point (failpoint_txnwrite.go).
// It is registered only with --enable-test-commands.
func (e *Engine) cmdConfigureFailPoint(_ context.Context, req *request) ([]byte, error) {
	name, err := stringArg(req.name, req.name, req.body.Index(0).Value())
	if err != nil {
		return nil, err
	}
	if name != "failCommand" && name != "onPrimaryTransactionalWrite" && name != "failGetMoreAfterCursorCheckout" {
		return nil, errorf(ErrBadValue, "unknown fail point: %s (Parsec has failCommand, onPrimaryTransactionalWrite and failGetMoreAfterCursorCheckout only)", name)
	}
	active, times, skip := false, int64(-1), int64(0)
	modeV, err := req.body.LookupErr("mode")
	if err != nil {
		return nil, missingField(req.name, "mode")
	}
	switch modeV.Type {
	case bsoncore.TypeString:
		switch modeV.StringValue() {
		case "alwaysOn":
			active = true
		case "off":
		default:
			return nil, errorf(ErrBadValue, "unknown fail point mode: %s", modeV.StringValue())
		}
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := modeV.Document().Elements()
		for _, el := range elems {
			n, err := int64Arg("mode", el.Key(), el.Value())
			if err != nil {
				return nil, err
			}
			switch el.Key() {
			case "times":
				active, times = n > 0, n
			case "skip":
				active, skip = true, n
			case "activationProbability":
				return nil, errorf(ErrBadValue, "mode.activationProbability is not supported by Parsec")
			default:
				return nil, unknownField("mode", el.Key())
			}
		}
	default:
		return nil, wrongTypes(req.name, "mode", modeV, "string, object")
	}
	if name == "onPrimaryTransactionalWrite" {
		data := txnWriteFailData{closeConnection: true}
		if v, err := req.body.LookupErr("data"); err == nil {
			d, err := docArg(req.name, "data", v)
			if err != nil {
				return nil, err
			}
			if data, err = parseTxnWriteFailData(d); err != nil {
				return nil, err
			}
		}
		e.txnWriteFailPoint.set(active, times, skip, data)
		return okReply()
	}
	var data failCommandData
	if v, err := req.body.LookupErr("data"); err == nil {
		d, err := docArg(req.name, "data", v)
		if err != nil {
			return nil, err
		}
		if data, err = parseFailCommandData(d); err != nil {
			return nil, err
		}
	}
	f := &e.failPoint
	if name == "failGetMoreAfterCursorCheckout" {
		// getMore fails with errorCode once it has its cursor
		// (changestreams.go).
		f = &e.getMoreFailPoint
		data.commands = map[string]bool{"getMore": true}
	}
	f.mu.Lock()
	f.active, f.times, f.skip, f.data = active, times, skip, data
	f.mu.Unlock()
	return okReply()
}

func parseFailCommandData(d bsoncore.Document) (failCommandData, error) {
	data := failCommandData{commands: map[string]bool{}}
	elems, _ := d.Elements()
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "failCommands":
			arr, ok := v.ArrayOK()
			if !ok {
				return data, wrongType("data", k, v, "array")
			}
			vals, _ := arr.Values()
			for _, x := range vals {
				s, err := stringArg("data", k, x)
				if err != nil {
					return data, err
				}
				data.commands[s] = true
			}
		case "closeConnection":
			data.closeConnection, err = boolArg("data", k, v)
		case "errorCode":
			var n int64
			n, err = int64Arg("data", k, v)
			data.errorCode, data.hasErrorCode = int32(n), true
		case "errorLabels":
			arr, ok := v.ArrayOK()
			if !ok {
				return data, wrongType("data", k, v, "array")
			}
			vals, _ := arr.Values()
			data.hasErrorLabels = true
			data.errorLabels = []string{}
			for _, x := range vals {
				s, err := stringArg("data", k, x)
				if err != nil {
					return data, err
				}
				data.errorLabels = append(data.errorLabels, s)
			}
		case "writeConcernError":
			var wce bsoncore.Document
			wce, err = docArg("data", k, v)
			data.writeConcernError = append(bsoncore.Document(nil), wce...)
		case "blockConnection":
			_, err = boolArg("data", k, v)
		case "blockTimeMS":
			var ms int64
			ms, err = int64Arg("data", k, v)
			data.blockTime = time.Duration(ms) * time.Millisecond
		case "appName":
			data.appName, err = stringArg("data", k, v)
		case "failInternalCommands", "namespace", "errorExtraInfo", "threadName":
		default:
			err = unknownField("data", k)
		}
		if err != nil {
			return data, err
		}
	}
	block := false
	if v, err := d.LookupErr("blockConnection"); err == nil {
		block, _ = boolArg("data", "blockConnection", v)
	}
	if !block {
		data.blockTime = 0
	}
	return data, nil
}
