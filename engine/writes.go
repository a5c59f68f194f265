package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// maxWriteBatchSize is the most statements one write command may carry.
const maxWriteBatchSize = 100_000

// writeConcern is the part of a write concern Parsec acts on.
type writeConcern struct {
	unacknowledged bool // w: 0
	journal        bool // j: true: fsync before replying
}

// parseWriteConcern reads writeConcern {w, j, wtimeout, fsync}.
func parseWriteConcern(req *request) (writeConcern, error) {
	var wc writeConcern
	v, err := req.body.LookupErr("writeConcern")
	if err != nil {
		return wc, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return wc, wrongType(req.name, "writeConcern", v, "object")
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch k {
		case "w":
			switch {
			case isNumber(v):
				n, err := int64Arg("writeConcern", "w", v)
				if err != nil {
					return wc, err
				}
				if n < 0 || n > 50 {
					return wc, errorf(ErrFailedToParse, "w has to be a non-negative number and not greater than 50; found: %d", n)
				}
				wc.unacknowledged = n == 0
			case v.Type == bsoncore.TypeString:
			default:
				return wc, errorf(ErrFailedToParse, "w has to be a number or string; found: %s", TypeName(v.Type))
			}
		case "j", "fsync":
			b, err := boolArg("writeConcern", k, v)
			if err != nil {
				return wc, err
			}
			wc.journal = wc.journal || b
		case "wtimeout", "wtimeoutMS":
			if _, err := int64Arg("writeConcern", k, v); err != nil {
				return wc, err
			}
		case "provenance", "getLastError":
		default:
			return wc, unknownField("writeConcern", k)
		}
	}
	if wc.unacknowledged && wc.journal {
		return wc, errorf(ErrFailedToParse, "Write concern {w: 0, j: true} is not allowed")
	}
	return wc, nil
}

// writeConcernCommands are the commands that take a write concern and
// report a writeConcernError when it cannot be met.
var writeConcernCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true,
	"create": true, "drop": true, "dropDatabase": true, "renameCollection": true, "collMod": true, "convertToCapped": true,
	"createIndexes": true, "dropIndexes": true,
	"commitTransaction": true, "abortTransaction": true,
	"createUser": true, "updateUser": true, "dropUser": true, "dropAllUsersFromDatabase": true,
}

// unmetWriteConcern is the writeConcernError a write's concern gets on
// Parsec, one data-bearing member: w above 1 is unsatisfiable (100) and a
// w naming a tag set other than "majority" is unknown (79), as a one-member
// replica set or a router over one answers. The write itself is applied
// and acknowledged; nil when the concern can be met or does not parse
// (the command reports that itself).
func unmetWriteConcern(body bsoncore.Document) bsoncore.Document {
	wcv, err := body.LookupErr("writeConcern")
	if err != nil {
		return nil
	}
	wcd, ok := wcv.DocumentOK()
	if !ok {
		return nil
	}
	w, err := wcd.LookupErr("w")
	if err != nil {
		return nil
	}
	var code Code
	var msg string
	switch {
	case isNumber(w):
		if n, ok := w.AsInt64OK(); ok && n > 1 && n <= 50 {
			code, msg = ErrUnsatisfiableWriteConcern, "Not enough data-bearing nodes"
		}
	case w.Type == bsoncore.TypeString:
		if mode := w.StringValue(); mode != "majority" {
			code, msg = ErrUnknownReplWriteConcern, fmt.Sprintf("No write concern mode named '%s' found in replica set configuration", mode)
		}
	}
	if code == 0 {
		return nil
	}
	wtimeout := int64(0)
	if v, err := wcd.LookupErr("wtimeout"); err == nil {
		wtimeout, _ = v.AsInt64OK()
	}
	info := bsoncore.NewDocumentBuilder().
		AppendValue("w", w).
		AppendInt64("wtimeout", wtimeout).
		AppendString("provenance", "clientSupplied").
		Build()
	return bsoncore.NewDocumentBuilder().
		AppendInt32("code", int32(code)).
		AppendString("codeName", code.Name()).
		AppendString("errmsg", msg).
		AppendDocument("errInfo", bsoncore.NewDocumentBuilder().AppendDocument("writeConcern", info).Build()).
		Build()
}

// withWriteConcernError adds the writeConcernError of an unmet write
// concern (unmetWriteConcern) to a write command's successful reply.
func withWriteConcernError(name string, body bsoncore.Document, reply []byte) []byte {
	if reply == nil || !writeConcernCommands[name] {
		return reply
	}
	wce := unmetWriteConcern(body)
	if wce == nil {
		return reply
	}
	if ok, _ := bsoncore.Document(reply).Lookup("ok").AsFloat64OK(); ok != 1 {
		return reply
	}
	if _, err := bsoncore.Document(reply).LookupErr("writeConcernError"); err == nil {
		return reply // a fail point's own
	}
	return appendElement(reply, bsoncore.AppendDocumentElement(nil, "writeConcernError", wce))
}

// commandLevel is whether a statement's failure with code fails its
// whole write command rather than being one of its writeErrors: an
// internal error, or a commit whose outcome a cluster's leader change
// hid (which the driver retries, when the write is retryable, only as
// the command's error).
func commandLevel(code Code) bool {
	return code == ErrInternalError || code == ErrInterruptedDueToReplStateChange
}

// writeError is one entry of a write command's writeErrors.
type writeError struct {
	index    int
	code     Code
	msg      string
	keyValue bsoncore.Value // for duplicate keys of the _id index
	// keyPattern and keyDoc are those of a secondary unique index.
	keyPattern bson.Raw
	keyDoc     bson.D
	// errInfo explains a DocumentValidationFailure (validation.go).
	errInfo bson.Raw
}

func (w writeError) toD() bson.D {
	d := bson.D{
		{Key: "index", Value: int32(w.index)},
		{Key: "code", Value: int32(w.code)},
	}
	if w.code == ErrDuplicateKey && w.keyPattern != nil {
		d = append(d, bson.E{Key: "keyPattern", Value: w.keyPattern}, bson.E{Key: "keyValue", Value: w.keyDoc})
	} else if w.code == ErrDuplicateKey {
		d = append(d,
			bson.E{Key: "keyPattern", Value: bson.D{{Key: "_id", Value: int32(1)}}},
			bson.E{Key: "keyValue", Value: bson.D{{Key: "_id", Value: bson.RawValue{Type: bson.Type(w.keyValue.Type), Value: w.keyValue.Data}}}},
		)
	}
	if w.errInfo != nil {
		d = append(d, bson.E{Key: "errInfo", Value: w.errInfo})
	}
	return append(d, bson.E{Key: "errmsg", Value: w.msg})
}

// commandError is a write error as a command's error (aggregation's
// writes report their first): code, message and errInfo.
func (w writeError) commandError() *CommandError {
	ce := &CommandError{Code: w.code, Msg: w.msg}
	if w.errInfo != nil {
		ce.Extra = bson.D{{Key: "errInfo", Value: w.errInfo}}
	}
	return ce
}

func dupKeyError(index int, ns string, id bsoncore.Value) writeError {
	return writeError{
		index:    index,
		code:     ErrDuplicateKey,
		msg:      fmt.Sprintf("E11000 duplicate key error collection: %s index: _id_ dup key: { _id: %s }", ns, shellString(id)),
		keyValue: id,
	}
}

// dupWriteError is the write error of a duplicate key at index: of the
// document's _id id, or of a secondary unique index (dup.Index set).
func dupWriteError(index int, ns string, dup *store.DuplicateKeyError, id bsoncore.Value) writeError {
	if dup.Index == "" {
		return dupKeyError(index, ns, id)
	}
	return writeError{index: index, code: ErrDuplicateKey, msg: indexDupMessage(dup), keyPattern: dup.KeyPattern, keyDoc: dup.KeyValue}
}

// isIndexDup reports whether err is a duplicate key of a secondary index.
func isIndexDup(err error) bool {
	var dup *store.DuplicateKeyError
	return errors.As(err, &dup) && dup.Index != ""
}

// indexDupMessage is MongoDB's E11000 message for a secondary index.
func indexDupMessage(dup *store.DuplicateKeyError) string {
	parts := make([]string, len(dup.KeyValue))
	for i, e := range dup.KeyValue {
		rv, _ := e.Value.(bson.RawValue)
		parts[i] = e.Key + ": " + shellString(bsoncore.Value{Type: bsoncore.Type(rv.Type), Data: rv.Value})
	}
	return fmt.Sprintf("E11000 duplicate key error collection: %s index: %s dup key: { %s }", dup.Namespace, dup.Index, strings.Join(parts, ", "))
}

// writeReply builds {n, writeErrors?, ok: 1} plus extra fields.
func writeReply(n int64, errs []writeError, extra ...bson.E) ([]byte, error) {
	if len(errs) == 0 && len(extra) == 0 {
		// The common reply, {n, ok: 1}, without bson.Marshal's reflection
		// (same bytes).
		idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, 32))
		b = bsoncore.AppendInt32Element(b, "n", int32(n))
		b = bsoncore.AppendDoubleElement(b, "ok", 1)
		return bsoncore.AppendDocumentEnd(b, idx)
	}
	d := bson.D{{Key: "n", Value: int32(n)}}
	d = append(d, extra...)
	if len(errs) > 0 {
		arr := make(bson.A, len(errs))
		for i, we := range errs {
			arr[i] = we.toD()
		}
		d = append(d, bson.E{Key: "writeErrors", Value: arr})
	}
	return okReply(d...)
}

// statements returns a write command's statements: the array field name in
// the body, or the kind-1 document sequence of that name.
func statements(req *request, field string) ([][]byte, error) {
	seq, inSeq := req.sequence(field)
	v, err := req.body.LookupErr(field)
	inBody := err == nil
	switch {
	case inSeq && inBody:
		return nil, errorf(ErrBadValue, "BSON field '%s.%s' is a duplicate field", req.name, field)
	case inSeq:
		return seq, nil
	case !inBody:
		return nil, missingField(req.name, field)
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, wrongType(req.name, field, v, "array")
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, errorf(ErrFailedToParse, "%s.%s: %v", req.name, field, err)
	}
	out := make([][]byte, len(vals))
	for i, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, wrongType(req.name, field+"."+strconv.Itoa(i), x, "object")
		}
		out[i] = d
	}
	return out, nil
}

// writeCommand is what every batched write command (insert, update,
// delete) shares.
type writeCommand struct {
	coll    string
	ordered bool
	let     bsoncore.Document // update and delete
	wc      writeConcern
	stmts   [][]byte // within maxWriteBatchSize
	// keepEmptyTs: bypassEmptyTsReplacement, store Timestamp(0, 0) as
	// given (emptyts.go).
	keepEmptyTs bool
}

// parseWriteCommand reads a batched write command's collection, top-level
// fields (those of MongoDB's write commands; let where allowLet) and its
// statements, the array or document sequence named field.
func parseWriteCommand(req *request, field string, allowLet bool) (writeCommand, error) {
	w := writeCommand{ordered: true}
	var err error
	if w.coll, err = validCollectionArg(req); err != nil {
		return w, err
	}
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch {
		case k == "ordered":
			if w.ordered, err = boolArg(req.name, k, v); err != nil {
				return w, err
			}
		case k == "bypassDocumentValidation":
			if _, err := boolArg(req.name, k, v); err != nil {
				return w, err
			}
		case k == "bypassEmptyTsReplacement":
			if w.keepEmptyTs, err = boolArg(req.name, k, v); err != nil {
				return w, err
			}
		case k == "let" && allowLet:
			if w.let, err = docArg(req.name, k, v); err != nil {
				return w, err
			}
		case k == field, k == "stmtIds", k == "isTimeseriesNamespace":
		default:
			if !genericFields[k] {
				return w, unknownField(req.name, k)
			}
		}
	}
	if w.wc, err = parseWriteConcern(req); err != nil {
		return w, err
	}
	if w.stmts, err = statements(req, field); err != nil {
		return w, err
	}
	return w, checkBatchSize(len(w.stmts))
}

// journal syncs the store before a write command's reply when its write
// concern asks for j and the command changed something.
func (e *Engine) journal(wc writeConcern, changed bool) error {
	if wc.journal && changed {
		return e.store.Journal()
	}
	return nil
}

func checkBatchSize(n int) error {
	if n < 1 || n > maxWriteBatchSize {
		return errorf(ErrInvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", maxWriteBatchSize, n)
	}
	return nil
}

// shellString renders a value the way MongoDB error messages do
// (value.Render).
func shellString(v bsoncore.Value) string { return value.Render(v) }
