package engine

import (
	"bytes"
	"math"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Limits and checks MongoDB applies to every command before it runs:
// the size of the command and of each document it carries, the commands
// legacy OP_QUERY may still carry, duplicate fields, and the generic
// arguments (maxTimeMS, readConcern, txnNumber) with MongoDB 7.0's codes
// and messages.

// legacyQueryCommands are the commands MongoDB 6.0 and later take over
// OP_QUERY on <db>.$cmd: the handshake alone.
var legacyQueryCommands = map[string]bool{"hello": true, "isMaster": true, "ismaster": true}

// checkLegacyQuery refuses any other command sent with OP_QUERY.
func checkLegacyQuery(op wire.OpCode, name string) *CommandError {
	if op != wire.OpQuery || legacyQueryCommands[name] {
		return nil
	}
	return errorf(ErrUnsupportedOpQueryCommand, "Unsupported OP_QUERY command: %s. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal", name)
}

// checkRequestSize refuses a command document, or a document of a kind-1
// sequence, larger than the largest BSON object MongoDB reads (16 MiB and
// 16 KiB): it answers 10334 BSONObjectTooLarge where Parsec would
// otherwise run a 40 MB filter. Each document of a sequence may be up to
// that size, so two 10 MB documents in one insert pass; one over 16 MiB
// is refused by the insert itself.
func checkRequestSize(body bsoncore.Document, seqs []wire.Section) *CommandError {
	if len(body) > maxInternalBSONSize {
		return objectTooLarge(body)
	}
	for _, s := range seqs {
		for _, d := range s.Documents {
			if len(d) > maxInternalBSONSize {
				return objectTooLarge(d)
			}
		}
	}
	return nil
}

func objectTooLarge(doc bsoncore.Document) *CommandError {
	first := ""
	if e, err := doc.IndexErr(0); err == nil {
		first = e.Key() + ": " + shellString(e.Value())
		if len(first) > 200 {
			first = first[:200] + "..."
		}
	}
	return errorf(ErrBSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB) First element: %s", len(doc), len(doc), maxInternalBSONSize, first)
}

// driverAppended reports the fields the Go driver appends to a RunCommand
// even when the command already has them: maxTimeMS under a context
// deadline, its implicit session's lsid, the $clusterTime it gossips, its
// read preference and the Stable API fields of the client's options.
func driverAppended(k []byte) bool {
	switch string(k) {
	case "maxTimeMS", "lsid", "$clusterTime", "$readPreference", "apiVersion", "apiStrict", "apiDeprecationErrors":
		return true
	}
	return false
}

// duplicateField finds a top-level field given twice ("" when none),
// the fields a driver appends aside (driverAppended): the first is used. Commands are small: a
// pairwise comparison of the keys costs less than a map.
func duplicateField(body bsoncore.Document) string {
	var keys [32][]byte
	var more map[string]bool
	n := 0
	rest, ok := body, len(body) >= 5
	if !ok {
		return ""
	}
	rest = rest[4 : len(rest)-1]
	for len(rest) > 0 {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return ""
		}
		rest = r
		k := el.KeyBytes()
		if driverAppended(k) {
			continue
		}
		if n < len(keys) {
			for _, o := range keys[:n] {
				if bytes.Equal(o, k) {
					return string(k)
				}
			}
			keys[n] = k
			n++
			continue
		}
		if more == nil {
			more = make(map[string]bool, 2*len(keys))
			for _, o := range keys {
				more[string(o)] = true
			}
		}
		if more[string(k)] {
			return string(k)
		}
		more[string(k)] = true
	}
	return ""
}

// negativeMaxTimeMS is MongoDB's refusal of a negative maxTimeMS: find
// and aggregate parse it with their IDL's ">= 0" validator (51024) before
// the generic check every other command gets (BadValue).
func negativeMaxTimeMS(cmd string, ms int64) *CommandError {
	switch cmd {
	case "find", "aggregate":
		return negativeValue("maxTimeMS", ms)
	}
	return errorf(ErrBadValue, "%d value for maxTimeMS is out of range", ms)
}

// checkGenericArgs checks what every command may carry: no field twice,
// maxTimeMS within MongoDB's range, a readConcern document with a known
// level, and txnNumber only with lsid.
func checkGenericArgs(cmd string, body bsoncore.Document) *CommandError {
	if k := duplicateField(body); k != "" {
		return errorf(ErrDuplicateField, "BSON field '%s.%s' is a duplicate field", cmd, k)
	}
	if v, err := body.LookupErr("maxTimeMS"); err == nil && cmd != "getMore" {
		ms, err := int64Arg(cmd, "maxTimeMS", v)
		if err != nil {
			return toCommandError(err)
		}
		if ms < 0 {
			return negativeMaxTimeMS(cmd, ms)
		}
		if ms > math.MaxInt32 {
			return errorf(ErrBadValue, "%d value for maxTimeMS is out of range", ms)
		}
	}
	if v, err := body.LookupErr("readConcern"); err == nil {
		if ce := checkReadConcernArg(v); ce != nil {
			return ce
		}
	}
	if _, err := body.LookupErr("txnNumber"); err == nil {
		if _, err := body.LookupErr("lsid"); err != nil {
			return errorf(ErrInvalidOptions, "Transaction number requires a session ID to also be specified")
		}
	}
	return checkAPIParams(cmd, body)
}

// readConcernLevels are the levels MongoDB knows.
var readConcernLevels = map[string]bool{"local": true, "majority": true, "linearizable": true, "available": true, "snapshot": true}

// checkReadConcernArg checks readConcern's type and level as MongoDB's
// ReadConcernArgs does.
func checkReadConcernArg(v bsoncore.Value) *CommandError {
	doc, ok := v.DocumentOK()
	if !ok {
		return errorf(ErrFailedToParse, "readConcern field should be an object")
	}
	lv, err := doc.LookupErr("level")
	if err != nil {
		return nil
	}
	level, ok := lv.StringValueOK()
	if !ok {
		return errorf(ErrTypeMismatch, "\"level\" had the wrong type. Expected string, found %s", TypeName(lv.Type))
	}
	if !readConcernLevels[level] {
		return errorf(ErrFailedToParse, "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'")
	}
	return nil
}
