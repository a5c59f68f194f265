package engine

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/ru"
)

// Cosmos DB's five consistency levels, as Parsec maps them
// (Config.DefaultConsistency, --default-consistency):
//
//	strong    every read is linearizable: on a cluster, the writer
//	          confirms with a majority (ReadIndex) before it reads;
//	          charged as Cosmos DB charges strong reads (twice)
//	bounded   reads on the writer, charged twice
//	session   reads on the writer: a client reads its own writes (the
//	          default)
//	prefix    as session
//	eventual  as session
//
// A read's own readConcern wins: "linearizable" and "majority" are strong
// (confirmed and charged twice), "local" and "available" are session.

// consistencyLevels are the accepted values of DefaultConsistency.
var consistencyLevels = map[string]bool{"": true, "strong": true, "bounded": true, "session": true, "prefix": true, "eventual": true}

// ValidConsistency checks a --default-consistency value.
func ValidConsistency(level string) error {
	if !consistencyLevels[level] {
		return fmt.Errorf("consistency %q: want strong, bounded, session, prefix or eventual", level)
	}
	return nil
}

// readCommands are the commands that read documents.
var readCommands = map[string]bool{"find": true, "aggregate": true, "count": true, "distinct": true}

// strongRead is whether a read must be confirmed with the cluster.
func (e *Engine) strongRead(body bsoncore.Document) bool {
	switch readConcernLevel(body) {
	case "linearizable", "majority":
		return true
	case "":
		return e.cfg.DefaultConsistency == "strong"
	}
	return false
}

// readConsistency is what a read is charged as: the readConcern it gives,
// else the default level (strong and bounded staleness cost twice).
func (e *Engine) readConsistency(body bsoncore.Document) ru.Consistency {
	if readConcernLevel(body) == "" && (e.cfg.DefaultConsistency == "strong" || e.cfg.DefaultConsistency == "bounded") {
		return ru.ConsistencyStrong
	}
	switch readConcernLevel(body) {
	case "linearizable", "majority":
		return ru.ConsistencyStrong
	}
	return ru.ConsistencySession
}
