package engine

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// snapshotReads are the commands that take readConcern level "snapshot"
// outside a multi-document transaction (MongoDB 5.0 and later).
var snapshotReads = map[string]bool{"find": true, "aggregate": true, "distinct": true}

// checkReadConcern rejects a snapshot read concern where MongoDB does:
// outside a transaction only find, aggregate and distinct accept one
// (drivers' snapshot sessions rely on the error for everything else).
func checkReadConcern(cmd string, body bsoncore.Document) *CommandError {
	rc, err := body.LookupErr("readConcern")
	if err != nil {
		return nil
	}
	doc, ok := rc.DocumentOK()
	if !ok {
		return nil
	}
	if level, _ := doc.Lookup("level").StringValueOK(); level != "snapshot" || snapshotReads[cmd] {
		return nil
	}
	if _, err := body.LookupErr("autocommit"); err == nil {
		return nil // part of a transaction
	}
	return errorf(ErrInvalidOptions, `Command %s does not support { readConcern: { level: "snapshot", provenance: "clientSupplied" } } :: caused by :: read concern not supported`, cmd)
}
