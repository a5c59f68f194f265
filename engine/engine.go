// Package engine is Parsec's command layer: it receives command documents
// from wire, dispatches them by name to one handler per command
// (cmd_<name>.go, registered in commands.go), and runs them against store
// and the language packages (query, and later update and agg). Every
// command is charged in request units against its partitions' throughput
// (engine/billing).
//
// Contract: engine is the only package that speaks MongoDB error codes.
// Every reply is a BSON document; failures are {ok: 0, errmsg, code,
// codeName}, built from a CommandError. Handlers never panic on client
// input; a panic that escapes anyway is turned into an InternalError reply
// and logged, and the server keeps serving.
package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/sessions"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Version is Parsec's version; main overrides it at link time.
var Version = "0.1.0-dev"

// MongoVersion is the MongoDB version Parsec answers as.
const MongoVersion = "7.0.0"

// Config is what an Engine needs from outside.
type Config struct {
	Store storage.Storage
	// ReadOnly serves reads of a store another node writes (a cluster
	// standby's replica): no background work writes (expiring TTL
	// documents, sessions, the root user); the caller sends it reads
	// only.
	ReadOnly bool
	Logger   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Wait waits d by that clock, or until ctx is done and then returns
	// ctx's error; nil means a real timer. Server-side retry waits with
	// it (engine/billing).
	Wait func(ctx context.Context, d time.Duration) error
	// CursorTimeout closes idle cursors; 0 means 10 minutes.
	CursorTimeout time.Duration
	// ConnStats reports connection counts for serverStatus (may be nil).
	ConnStats func() wire.Stats
	// MaxConnections is reported by serverStatus (0: none).
	MaxConnections int
	// CmdLine is what getCmdLineOpts reports: argv and parsed options.
	Argv    []string
	Options map[string]any
	// StartupWarnings appear in getLog: "startupWarnings".
	StartupWarnings []string
	// ChangeLog bounds the change log change streams read.
	ChangeLog ChangeLogLimits
	// EnableTestCommands registers configureFailPoint, the hook drivers'
	// specification tests use (MongoDB's enableTestCommands).
	EnableTestCommands bool
	// AggMemoryLimit is what each blocking aggregation stage may hold
	// (0: 100 MB, MongoDB's default).
	AggMemoryLimit int64
	// TTLInterval is how often expired documents are deleted (0: 60 s).
	TTLInterval time.Duration
	// TransactionLifetime aborts a transaction open longer than this
	// (0: 60 s, MongoDB's transactionLifetimeLimitSeconds).
	TransactionLifetime time.Duration
	// Partition limits and throughput defaults (partitions.go).
	Partitions PartitionLimits
	// RequestUnits configures request-unit accounting and throttling
	// (engine/billing).
	RequestUnits RequestUnitOptions
	// Auth turns access control on: commands need an authenticated user
	// whose roles allow them (authz.go). Users authenticate either way.
	Auth bool
	// Port is the port the server listens on, as config.shards and
	// $collStats name it (0: 27017).
	Port int
	// ReplicaSet, when set, makes the server answer hello as the primary of
	// a one-member replica set of that name instead of as a router
	// (cmd_replset.go); Advertise is the host:port it names itself by there
	// ("": the address each client connected to).
	ReplicaSet, Advertise string
	// Members, when set, are the replica set's members (host:port, this
	// server's Advertise among them): a cluster's nodes, of which this
	// one is the primary. ElectionTerm is the term it became primary in:
	// hello's electionId carries it, so drivers see a later primary's as
	// newer (0: the server's start time).
	Members      func() []string
	ElectionTerm uint64
	// MajorityJournaled is whether every acknowledged write is on disk
	// (a cluster whose nodes fsync their Raft logs before a write counts):
	// replSetGetConfig's writeConcernMajorityJournalDefault.
	MajorityJournaled bool
	// NodeID is this node's id in a cluster (0: a single server): the
	// shard name explain, listShards and config.chunks give is node<id>.
	NodeID uint64
	// ReadBarrier, when set, returns once this node has applied
	// everything its cluster committed before the call (a Raft ReadIndex
	// round): strong reads wait for it (consistency.go).
	ReadBarrier func(ctx context.Context) error
	// AddNode, when set, adds a node to the cluster (addNode): its id and
	// Raft address.
	AddNode func(ctx context.Context, id uint64, raftAddress string) error
	// RemoveNode, when set, takes a node out of the cluster (removeNode).
	RemoveNode func(ctx context.Context, id uint64) error
	// Balancer, on a cluster of partition groups, moves replicas and
	// leaders between nodes (balancerStatus, removeShard).
	Balancer Balancer
	// Cluster, when set, reports the cluster's nodes as this node (its
	// writer) sees them: replSetGetStatus, serverStatus and
	// GetPartitionStats show them (clusterstatus.go).
	Cluster func(ctx context.Context) ClusterStatus
	// PartitionLeader, on a cluster of partition groups, is the node
	// leading the group that holds point of collection coll (ok false:
	// none known): the shard config.chunks names for a chunk.
	PartitionLeader func(coll uint32, point uint64) (node uint64, ok bool)
	// Moves, on a cluster of partition groups, reads the replica moves
	// from this node's catalog replica: those under way (with the
	// writer's phase and bytes copied when this node makes them) and
	// the finished ones and failed attempts (config.locks,
	// config.changelog).
	Moves func() (current []MoveStatus, done []MoveRecord, err error)
	// DefaultConsistency is the Cosmos DB consistency level of reads that
	// give no readConcern: "strong", "bounded", "session" (""), "prefix"
	// or "eventual" (consistency.go).
	DefaultConsistency string
	// RootUser and RootPassword, when set, make sure admin.RootUser exists
	// with role root and this password (the password is reset at every
	// start), so a fresh server with Auth can be used at once.
	RootUser, RootPassword string
	// AuthBackoff slows the authentication attempts of an address that
	// keeps failing (zero fields: auth.DefaultBackoffLimits).
	AuthBackoff auth.BackoffLimits
	// DecoyKey keys the credentials shown for users that do not exist
	// (nil: a random key per process; cmd_auth.go).
	DecoyKey []byte
}

// Engine runs commands. It implements wire.Handler.
type Engine struct {
	cfg     Config
	store   storage.Storage
	logger  *slog.Logger
	now     func() time.Time
	started time.Time
	host    string
	running opRegistry // commands running (ops.go)

	commands   map[string]command
	failPoint  failCommand
	cursors    *cursorRegistry
	ops        opCounters
	logs       *logRing
	warnings   []string      // startup warnings as structured log lines (cmd_getlog.go)
	writes     writeState    // update clock and document locks (updates.go)
	validators validators    // compiled collection validators (validation.go)
	plans      *plan.Planner // the read planner, made once (planning.go)
	limits     PartitionLimits
	ttl        ttlStats
	ruOpts     RequestUnitOptions
	units      *accounts             // request-unit pools, partitions and admission (engine/billing)
	commandRU  atomic.Int64          // centi-RU charged to no partition (metadata commands)
	electionID bson.ObjectID         // the replica set's electionId (cmd_replset.go)
	profile    profileState          // the profile command's setting (cmd_profile.go)
	snapshots  *sessions.Snapshots   // snapshot reads' snapshots (snapshots.go)
	analyzer   queryAnalyzer         // sampled queries (queryanalyzer.go)
	clock      sessions.ClusterClock // operationTime and snapshots' cluster times (clustertime.go)

	// getMoreFailPoint is failGetMoreAfterCursorCheckout (changestreams.go).
	getMoreFailPoint failCommand

	// usersVersion changes with every change to users: connections then
	// re-read their user's roles (cmd_auth.go).
	usersVersion atomic.Uint64
	// decoys answer for unknown users; logins slows and reports the
	// addresses that keep failing to authenticate (cmd_auth.go).
	decoys *auth.Decoys
	logins *auth.LoginBackoff

	// what the console and metrics read (monitor.go, cmdtimings.go,
	// engine/billing's throttle log)
	timings   commandTimings
	throttles throttleLog
	monitor   monitorLogins

	// logical sessions (engine/sessions) and retryable writes' fail point
	// (retryable.go)
	sessions          *sessions.Table
	txnWriteFailPoint txnWriteFailPoint

	// reshardings running (reshard.go)
	reshards reshardRegistry

	stop chan struct{}
	wg   sync.WaitGroup
}

type opCounters struct {
	insert, query, update, delete, getmore, command atomic.Int64
}

// New makes an Engine and starts its background work (cursor reaping).
func New(cfg Config) *Engine {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	timeout := cfg.CursorTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	host, _ := os.Hostname()
	e := &Engine{
		cfg:      cfg,
		store:    cfg.Store,
		logger:   logger,
		now:      now,
		started:  now(),
		host:     host,
		commands: newCommandTable(),
		cursors:  newCursorRegistry(now, timeout),
		logs:     newLogRing(256),
		sessions: sessions.NewTable(cfg.Store, logger, afterFuncOf(cfg.Wait)),
		stop:     make(chan struct{}),
	}
	e.electionID = electionID(e.started, cfg.ElectionTerm)
	e.snapshots = sessions.NewSnapshots(e.store, now, &e.clock)
	decoys, err := auth.NewDecoys(cfg.DecoyKey)
	if err != nil {
		logger.Error("decoy key refused: using a random one", "err", err)
		decoys, _ = auth.NewDecoys(nil) // crypto/rand does not fail
	}
	e.decoys = decoys
	e.logins = auth.NewLoginBackoff(cfg.AuthBackoff)
	e.profile.init()
	if cfg.EnableTestCommands {
		e.commands["configureFailPoint"] = command{name: "configureFailPoint", adminOnly: true,
			help: "make chosen commands fail, block or drop the connection (test command)", run: (*Engine).cmdConfigureFailPoint}
	}
	for _, w := range cfg.StartupWarnings {
		line := logLine(e.started, "W", "CONTROL", 22120, "initandlisten", w, "startupWarnings")
		e.warnings = append(e.warnings, line)
		e.logs.add(line)
	}
	e.limits = cfg.Partitions.withDefaults()
	e.ruOpts = cfg.RequestUnits
	e.units = billing.New(billing.Config{Store: e.store, Now: now, Wait: cfg.Wait, Options: e.ruOpts, Effective: e.effectiveThroughput})
	if e.store != nil {
		e.store.SetLimits(e.limits.storeLimits())
		e.store.SetMatcher(partialMatcher)
		e.startChangeLog()
		e.resumeReshardings()
	}
	if cfg.RootUser != "" && e.store != nil && !cfg.ReadOnly {
		if err := e.ensureRootUser(cfg.RootUser, cfg.RootPassword); err != nil {
			logger.Error("creating the root user", "user", cfg.RootUser, "err", err)
		} else {
			logger.Info("root user ready", "user", cfg.RootUser, "db", "admin")
		}
	}
	e.every(min(timeout/4, time.Minute), e.reapCursors)
	e.every(e.logins.Limits().LogInterval, e.reportAuthFailures)
	e.every(throttleLogInterval, e.logThrottles)
	e.plans = &plan.Planner{
		Storage: e.store,
		ViewOf:  func(ctx context.Context) plan.Reader { return e.viewOf(ctx) },
		Errors:  planErrors{},
	}
	if e.store != nil && !cfg.ReadOnly {
		every := cfg.TTLInterval
		if every <= 0 {
			every = DefaultTTLInterval
		}
		e.every(every, func() { e.ttlPass(every) })
		e.every(time.Minute, e.expireSessions)
		e.every(time.Minute, func() { e.snapshots.Expire(false) })
	}
	return e
}

// hostPort names this server as config.shards, config.mongos and
// $collStats do: the host name and the port it listens on.
func (e *Engine) hostPort() string {
	port := e.cfg.Port
	if port == 0 {
		port = 27017
	}
	return fmt.Sprintf("%s:%d", e.host, port)
}

// every runs fn every d on a goroutine of its own until Close.
func (e *Engine) every(d time.Duration, fn func()) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// Close stops background work and closes every cursor.
func (e *Engine) Close() {
	close(e.stop)
	e.wg.Wait()
	e.cursors.CloseAll()
	e.snapshots.Expire(true)
}

// reapCursors closes the cursors idle past their timeout.
func (e *Engine) reapCursors() {
	if n := e.cursors.ReapIdle(); n > 0 {
		e.logger.Debug("closed idle cursors", "count", n)
	}
}

// ReapIdleCursors closes the cursors idle past their timeout now, as the
// background reaper does every quarter of the timeout. Tests that move
// the clock (Config.Now) call it rather than wait for the reaper's next
// round.
func (e *Engine) ReapIdleCursors() { e.reapCursors() }

// Connect implements wire.Handler.
func (e *Engine) Connect(c *wire.Conn) wire.ConnHandler {
	cn := &conn{e: e, wc: c}
	binary.BigEndian.PutUint64(cn.seed[:], rand.Uint64())
	return cn
}

// conn is one client connection's state.
type conn struct {
	e  *Engine
	wc *wire.Conn

	mu      sync.Mutex
	lastCmd string
	lastDur time.Duration
	appName string // client.application.name from the handshake
	// helloSeen: a hello or isMaster ran on the connection; client
	// metadata may come only with the first (cmd_hello.go).
	helloSeen bool
	// The previous command's request charge and number, for
	// getLastRequestStatistics; seed makes ActivityIds unique.
	lastCharge float64
	requests   uint64
	seed       [8]byte

	auth authState // the authenticated user and SCRAM exchange (cmd_auth.go)
}

// request is one command being run.
type request struct {
	name string // command name as sent (first field)
	db   string
	body bsoncore.Document
	seqs []wire.Section
	c    *conn
	// units is the request's request-unit account.
	units meter
	// wr is the wire request: setting its CloseConnection drops the
	// connection instead of replying (the onPrimaryTransactionalWrite
	// fail point, retryable.go). Nil in requests made inside the engine.
	wr *wire.Request
	// op registers the command while it runs ($currentOp, killOp).
	op activeOp
}

// sequence returns the documents of kind-1 section id, if present.
func (r *request) sequence(id string) ([][]byte, bool) {
	for _, s := range r.seqs {
		if s.Identifier == id {
			return s.Documents, true
		}
	}
	return nil, false
}

// Close implements wire.ConnHandler: cursors the connection opened outside
// a session die with it.
func (c *conn) Close() {
	c.e.cursors.CloseForConn(c.wc.ID())
}

// Handle implements wire.ConnHandler.
func (c *conn) Handle(ctx context.Context, wr *wire.Request) []byte {
	start := c.e.now()
	reply, name, charge := c.run(ctx, wr)
	if name == "getLastRequestStatistics" {
		return reply // it reports the command before it, however often asked
	}
	dur := c.e.now().Sub(start)
	c.e.observeCommand(name, dur)
	c.mu.Lock()
	c.lastCmd, c.lastDur, c.lastCharge = name, dur, charge
	c.requests++
	c.mu.Unlock()
	if dur >= c.e.profile.slowThreshold() && name != "" {
		c.e.logSlow(c, wr, name, dur, charge)
	}
	return reply
}

// countOp counts a command in serverStatus.opcounters. As in MongoDB,
// insert, update and delete count their documents and statements, not the
// command: their handlers add those once the command has parsed.
func (e *Engine) countOp(name string) {
	switch name {
	case "insert", "delete", "update":
	case "find", "count", "aggregate", "distinct":
		e.ops.query.Add(1)
	case "findAndModify":
		e.ops.update.Add(1)
	case "getMore":
		e.ops.getmore.Add(1)
	default:
		e.ops.command.Add(1)
	}
}

// errorReply builds {ok: 0, errmsg, code, codeName}.
func errorReply(ce *CommandError) []byte {
	b := bsoncore.NewDocumentBuilder().
		AppendDouble("ok", 0).
		AppendString("errmsg", ce.Msg).
		AppendInt32("code", int32(ce.Code)).
		AppendString("codeName", ce.codeName())
	if len(ce.Extra) > 0 {
		if raw, err := bson.Marshal(ce.Extra); err == nil {
			elems, _ := bsoncore.Document(raw).Elements()
			for _, el := range elems {
				b.AppendValue(el.Key(), el.Value())
			}
		}
	}
	return b.Build()
}

// logRing keeps recent log lines for getLog.
type logRing struct {
	mu    sync.Mutex
	lines []string
	max   int
	total int
}

func newLogRing(max int) *logRing { return &logRing{max: max} }

func (r *logRing) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	r.lines = append(r.lines, line)
	if len(r.lines) > r.max {
		r.lines = r.lines[len(r.lines)-r.max:]
	}
}

func (r *logRing) snapshot() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...), r.total
}

func namespaceOf(db, coll string) string { return db + "." + coll }
