package engine

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// snapshotReads are the commands that take readConcern level "snapshot"
// outside a multi-document transaction in MongoDB 5.0 and later.
var snapshotReads = map[string]bool{"find": true, "aggregate": true, "distinct": true}

// checkReadConcern refuses a snapshot read concern. Commands MongoDB
// refuses it for get MongoDB's error (drivers' snapshot sessions rely on
// it); the reads that would take it (find, aggregate, distinct) are
// refused too, rather than answered with the latest data under a
// snapshot's name: Parsec cannot read at a past point in time
// (atClusterTime), which is what a snapshot session promises.
func checkReadConcern(cmd string, body bsoncore.Document) *CommandError {
	rc, err := body.LookupErr("readConcern")
	if err != nil {
		return nil
	}
	doc, ok := rc.DocumentOK()
	if !ok {
		return nil
	}
	if level, _ := doc.Lookup("level").StringValueOK(); level != "snapshot" {
		return nil
	}
	if _, err := body.LookupErr("autocommit"); err == nil {
		return nil // part of a transaction: refused as such
	}
	if snapshotReads[cmd] {
		return errorf(ErrInvalidOptions, `Command %s does not support { readConcern: { level: "snapshot" } } :: caused by :: snapshot reads are not supported by Parsec: it cannot read at a past point in time (atClusterTime); use readConcern "local" or "majority"`, cmd)
	}
	return errorf(ErrInvalidOptions, `Command %s does not support { readConcern: { level: "snapshot", provenance: "clientSupplied" } } :: caused by :: read concern not supported`, cmd)
}
