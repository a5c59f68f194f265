package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// command is one entry of the dispatch table.
type command struct {
	name      string // canonical name (aliases share it)
	help      string
	adminOnly bool
	run       func(e *Engine, ctx context.Context, req *request) ([]byte, error)
}

// newCommandTable maps every accepted command name (aliases included) to
// its handler. An Engine builds it once and never changes it.
func newCommandTable() map[string]command {
	return buildCommandTable([]command{
		// handshake and server
		{name: "hello", help: "describe this server and the connection's options", run: (*Engine).cmdHello},
		{name: "isMaster", help: "legacy name of hello", run: (*Engine).cmdHello},
		{name: "ping", help: "check the server answers", run: (*Engine).cmdPing},
		{name: "buildInfo", help: "version and build facts", run: (*Engine).cmdBuildInfo},
		{name: "getParameter", help: "read server parameters", adminOnly: true, run: (*Engine).cmdGetParameter},
		{name: "getCmdLineOpts", help: "the command line the server started with", adminOnly: true, run: (*Engine).cmdGetCmdLineOpts},
		{name: "getLog", help: "recent log lines ('global', 'startupWarnings' or '*')", adminOnly: true, run: (*Engine).cmdGetLog},
		{name: "hostInfo", help: "facts about the host machine", run: (*Engine).cmdHostInfo},
		{name: "whatsmyuri", help: "the client's address as the server sees it", run: (*Engine).cmdWhatsMyURI},
		{name: "connectionStatus", help: "authentication state of the connection", run: (*Engine).cmdConnectionStatus},
		{name: "serverStatus", help: "uptime, connections, operation counters, memory", run: (*Engine).cmdServerStatus},
		{name: "listCommands", help: "every command with its help", run: (*Engine).cmdListCommands},
		{name: "getLastRequestStatistics", help: "request charge (RU), duration and ActivityId of the connection's previous command (Cosmos DB)", run: (*Engine).cmdGetLastRequestStatistics},
		{name: "startSession", help: "start a logical session: its lsid and timeout", run: (*Engine).cmdStartSession},
		{name: "endSessions", help: "end logical sessions", run: (*Engine).cmdEndSessions},
		{name: "killSessions", help: "kill logical sessions and their cursors", run: (*Engine).cmdKillSessions},
		{name: "killAllSessions", help: "kill all logical sessions and their cursors", run: (*Engine).cmdKillAllSessions},

		{name: "fsync", help: "flush acknowledged writes to disk (the lock form is refused)", adminOnly: true, run: (*Engine).cmdFsync},
		{name: "fsyncUnlock", help: "nothing is ever locked: answers as MongoDB does then", adminOnly: true, run: (*Engine).cmdFsyncUnlock},
		{name: "profile", help: "read or set the profiling level (0 or 1), slowms and sampleRate", run: (*Engine).cmdProfile},
		{name: "currentOp", help: "the operations in progress ($currentOp as a command), filtered by the other fields", adminOnly: true, run: (*Engine).cmdCurrentOp},
		{name: "killOp", help: "interrupt an operation $currentOp lists", adminOnly: true, run: (*Engine).cmdKillOp},
		{name: "getDefaultRWConcern", help: "the default read and write concerns", adminOnly: true, run: (*Engine).cmdGetDefaultRWConcern},
		{name: "listShards", help: "the one shard (partitions are inside it)", adminOnly: true, run: (*Engine).cmdListShards},
		{name: "balancerStatus", help: "the balancer: on a cluster, whether it runs and the replica moves under way", adminOnly: true, run: (*Engine).cmdBalancerStatus},
		{name: "balancerStart", help: "start a cluster's balancer (it moves partitions' replicas and leaders between nodes)", adminOnly: true, run: (*Engine).cmdBalancerStart},
		{name: "balancerStop", help: "stop a cluster's balancer (a move under way finishes)", adminOnly: true, run: (*Engine).cmdBalancerStop},
		{name: "addShard", help: "add a node to the cluster: {addShard: <raft address>, name: \"node<id>\"} (as addNode)", adminOnly: true, run: (*Engine).cmdAddShard},
		{name: "removeShard", help: "drain a node of the cluster and remove it: {removeShard: \"node<id>\"}, asked again until completed", adminOnly: true, run: (*Engine).cmdRemoveShard},
		{name: "replSetGetStatus", help: "replica set status (with --replica-set: this server, the primary)", adminOnly: true, run: (*Engine).cmdReplSetGetStatus},
		{name: "removeNode", help: "remove a node from the cluster: {removeNode: <id>} (a node that lost its data, replaced by one that joined)", adminOnly: true, run: (*Engine).cmdRemoveNode},
		{name: "addNode", help: "add a node to the cluster: {addNode: <raft address>, nodeId: <id>} (what parsec serve --join sends)", adminOnly: true, run: (*Engine).cmdAddNode},
		{name: "replSetGetConfig", help: "replica set configuration (with --replica-set)", adminOnly: true, run: (*Engine).cmdReplSetGetConfig},

		// authentication and users (cmd_auth.go, cmd_users.go)
		{name: "saslStart", help: "begin a SCRAM-SHA-1 or SCRAM-SHA-256 authentication", run: (*Engine).cmdSaslStart},
		{name: "saslContinue", help: "continue a SCRAM authentication", run: (*Engine).cmdSaslContinue},
		{name: "authenticate", help: "legacy authentication (X.509, MONGODB-CR): not available, use SCRAM", run: (*Engine).cmdAuthenticate},
		{name: "logout", help: "forget the connection's user", run: (*Engine).cmdLogout},
		{name: "createUser", help: "create a user with a password and built-in roles", run: (*Engine).cmdCreateUser},
		{name: "updateUser", help: "change a user's password, roles, mechanisms or customData", run: (*Engine).cmdUpdateUser},
		{name: "dropUser", help: "delete a user", run: (*Engine).cmdDropUser},
		{name: "dropAllUsersFromDatabase", help: "delete every user of the database", run: (*Engine).cmdDropAllUsersFromDatabase},
		{name: "grantRolesToUser", help: "add built-in roles to a user", run: (*Engine).cmdGrantRevokeRoles},
		{name: "revokeRolesFromUser", help: "remove roles from a user", run: (*Engine).cmdGrantRevokeRoles},
		{name: "usersInfo", help: "describe users", run: (*Engine).cmdUsersInfo},
		{name: "rolesInfo", help: "describe built-in roles", run: (*Engine).cmdRolesInfo},
		{name: "createRole", help: "user-defined roles are not supported: refused", run: (*Engine).cmdUserDefinedRoles},
		{name: "updateRole", help: "user-defined roles are not supported: refused", run: (*Engine).cmdUserDefinedRoles},
		{name: "dropRole", help: "user-defined roles are not supported: refused", run: (*Engine).cmdUserDefinedRoles},
		{name: "dropAllRolesFromDatabase", help: "user-defined roles are not supported: refused", run: (*Engine).cmdUserDefinedRoles},
		{name: "grantRolesToRole", help: "user-defined roles are not supported: refused", run: (*Engine).cmdUserDefinedRoles},
		{name: "revokeRolesFromRole", help: "user-defined roles are not supported: refused", run: (*Engine).cmdUserDefinedRoles},
		{name: "grantPrivilegesToRole", help: "user-defined roles are not supported: refused", run: (*Engine).cmdUserDefinedRoles},
		{name: "revokePrivilegesFromRole", help: "user-defined roles are not supported: refused", run: (*Engine).cmdUserDefinedRoles},

		// catalog
		{name: "create", help: "create a collection", run: (*Engine).cmdCreate},
		{name: "drop", help: "drop a collection", run: (*Engine).cmdDrop},
		{name: "dropDatabase", help: "drop the current database", run: (*Engine).cmdDropDatabase},
		{name: "listDatabases", help: "list databases with their sizes", adminOnly: true, run: (*Engine).cmdListDatabases},
		{name: "listCollections", help: "list the collections of a database", run: (*Engine).cmdListCollections},
		{name: "renameCollection", help: "rename a collection, within or across databases", adminOnly: true, run: (*Engine).cmdRenameCollection},
		{name: "convertToCapped", help: "make a collection capped (size in bytes), keeping its newest documents that fit", run: (*Engine).cmdConvertToCapped},
		{name: "collStats", help: "storage statistics of a collection", run: (*Engine).cmdCollStats},
		{name: "dbStats", help: "storage statistics of a database", run: (*Engine).cmdDBStats},
		{name: "createIndexes", help: "build secondary indexes (single-field, compound, multikey, unique, sparse, partial, TTL, hidden, wildcard)", run: (*Engine).cmdCreateIndexes},
		{name: "listIndexes", help: "list a collection's indexes", run: (*Engine).cmdListIndexes},
		{name: "dropIndexes", help: "drop indexes by name, key pattern, list of names or \"*\"", run: (*Engine).cmdDropIndexes},
		{name: "commitTransaction", help: "commits the session's multi-document transaction", adminOnly: true, run: (*Engine).cmdCommitTransaction},
		{name: "abortTransaction", help: "aborts the session's multi-document transaction", adminOnly: true, run: (*Engine).cmdAbortTransaction},
		{name: "validate", help: "check a collection's indexes against its documents", run: (*Engine).cmdValidate},
		{name: "collMod", help: "change an index's hidden flag or TTL", run: (*Engine).cmdCollMod},
		{name: "createSearchIndexes", help: "Atlas Search indexes (not available: answers as MongoDB outside Atlas)", run: (*Engine).cmdSearchIndexes},
		{name: "updateSearchIndex", help: "Atlas Search indexes (not available: answers as MongoDB outside Atlas)", run: (*Engine).cmdSearchIndexes},
		{name: "dropSearchIndex", help: "Atlas Search indexes (not available: answers as MongoDB outside Atlas)", run: (*Engine).cmdSearchIndexes},

		// partitions (sharding) and Cosmos DB's extension commands
		{name: "shardCollection", help: "shard a collection by a hashed key: {shardCollection: \"db.coll\", key: {<field>: \"hashed\"}}", adminOnly: true, run: (*Engine).cmdShardCollection},
		{name: "reshardCollection", help: "change a sharded collection's shard key online: {reshardCollection: \"db.coll\", key: {...}}", adminOnly: true, run: (*Engine).cmdReshardCollection},
		{name: "abortReshardCollection", help: "stop a running reshardCollection: the collection keeps its shard key", adminOnly: true, run: (*Engine).cmdAbortReshardCollection},
		{name: "commitReshardCollection", help: "make a running reshardCollection switch as soon as its copy has caught up", adminOnly: true, run: (*Engine).cmdCommitReshardCollection},
		{name: "analyzeShardKey", help: "metrics of a candidate shard key: cardinality, frequency, monotonicity, and the read and write distribution of the sampled queries", adminOnly: true, run: (*Engine).cmdAnalyzeShardKey},
		{name: "configureQueryAnalyzer", help: "sample a collection's queries for analyzeShardKey: {configureQueryAnalyzer: \"db.coll\", mode: \"full\"|\"off\", samplesPerSecond: n}", adminOnly: true, run: (*Engine).cmdConfigureQueryAnalyzer},
		{name: "enableSharding", help: "accepted: every database can hold sharded collections", adminOnly: true, run: (*Engine).cmdEnableSharding},
		{name: "customAction", help: "Cosmos DB extension commands: Create/Update/GetDatabase, Create/Update/GetCollection, GetPartitionStats", run: (*Engine).cmdCustomAction},

		// CRUD
		{name: "insert", help: "insert documents", run: (*Engine).cmdInsert},
		{name: "find", help: "query documents", run: (*Engine).cmdFind},
		{name: "getMore", help: "next batch of a cursor", run: (*Engine).cmdGetMore},
		{name: "killCursors", help: "close cursors", run: (*Engine).cmdKillCursors},
		{name: "count", help: "count the documents matching a query", run: (*Engine).cmdCount},
		{name: "distinct", help: "distinct values of a field among the documents matching a query", run: (*Engine).cmdDistinct},
		{name: "explain", help: "describe how a find, count, distinct or aggregate runs (queryPlanner, executionStats)", run: (*Engine).cmdExplain},
		{name: "delete", help: "delete documents", run: (*Engine).cmdDelete},
		{name: "update", help: "update documents", run: (*Engine).cmdUpdate},
		{name: "findAndModify", help: "update or remove one document and return it", run: (*Engine).cmdFindAndModify},
		{name: "aggregate", help: "run an aggregation pipeline (per partition, then merged)", run: (*Engine).cmdAggregate},
	}, map[string]string{"ismaster": "isMaster", "buildinfo": "buildInfo", "dbstats": "dbStats", "collstats": "collStats", "findandmodify": "findAndModify", "shardcollection": "shardCollection", "enablesharding": "enableSharding", "dropIndex": "dropIndexes", "deleteIndexes": "dropIndexes"})
}

func buildCommandTable(cmds []command, aliases map[string]string) map[string]command {
	t := make(map[string]command, len(cmds)+len(aliases))
	for _, c := range cmds {
		t[c.name] = c
	}
	for alias, name := range aliases {
		t[alias] = t[name]
	}
	return t
}

// marshal encodes a reply built as bson.D.
func marshal(d bson.D) ([]byte, error) { return bson.Marshal(d) }

// okReply is {ok: 1} plus fields.
func okReply(fields ...bson.E) ([]byte, error) {
	return marshal(append(bson.D(fields), bson.E{Key: "ok", Value: 1.0}))
}
