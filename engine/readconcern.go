package engine

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// snapshotReads are the commands that take readConcern level "snapshot"
// outside a multi-document transaction in MongoDB 5.0 and later.
var snapshotReads = map[string]bool{"find": true, "aggregate": true, "distinct": true}

// cursorCommands take any read concern and ignore it: a cursor reads as
// the command that opened it did. Drivers send a snapshot session's read
// concern with every command of the session, getMore included.
var cursorCommands = map[string]bool{"getMore": true, "killCursors": true}

// checkReadConcern refuses a snapshot read concern for the commands
// MongoDB refuses it for, with MongoDB's error (drivers' snapshot sessions
// rely on it). find, aggregate and distinct take it: for them it returns
// the read concern, and they read a snapshot (snapshots.go).
func checkReadConcern(cmd string, body bsoncore.Document) (snapshot bsoncore.Document, _ *CommandError) {
	rc, err := body.LookupErr("readConcern")
	if err != nil {
		return nil, nil
	}
	doc, ok := rc.DocumentOK()
	if !ok {
		return nil, nil
	}
	if level, _ := doc.Lookup("level").StringValueOK(); level != "snapshot" {
		return nil, nil
	}
	if _, err := body.LookupErr("autocommit"); err == nil {
		return nil, nil // part of a transaction: refused as such
	}
	switch {
	case snapshotReads[cmd]:
		return doc, nil
	case cursorCommands[cmd]:
		return nil, nil
	}
	return nil, errorf(ErrInvalidOptions, `Command %s does not support { readConcern: { level: "snapshot", provenance: "clientSupplied" } } :: caused by :: read concern not supported`, cmd)
}
