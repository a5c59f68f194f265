package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/wire"
	"github.com/spf13/cobra"
)

// serveOptions are the flags of `parsec serve`.
type serveOptions struct {
	listen         string
	dataDir        string
	inMemory       bool
	logLevel       string
	logFormat      string
	httpAddr       string
	httpExplicit   bool // --http given (flag or variable), not the default
	maxConnections int
	testCommands   bool
	crashAt        string // a crash point (crashpoint.go), with testCommands
	cursorTimeout  time.Duration
	ttlInterval    time.Duration
	shutdownGrace  time.Duration
	memoryLimit    byteSize

	// partitions (Cosmos DB's limits)
	partitionMaxRUs          int
	partitionMaxBytes        byteSize
	logicalPartitionMaxBytes byteSize
	changeRetention          time.Duration
	changeRetentionBytes     byteSize
	defaultThroughput        int
	maxThroughput            int

	// request units
	rateLimiting    bool
	serverSideRetry bool
	ruBurstSeconds  float64
	ruAccounting    bool

	// Cosmos DB connection strings: TLS and a replica set name
	tlsCertFile   string
	tlsKeyFile    string
	tlsSelfSigned bool
	replicaSet    string
	advertise     string

	// a node of a cluster (clusterserve.go)
	cluster            clusterOptions
	defaultConsistency string

	// access control
	auth         bool
	rootUser     string
	rootPassword string

	// cpuProfile, when set, is written with the process's CPU profile
	// from start to a clean shutdown (hidden: for measuring).
	cpuProfile string
}

func newServeCommand() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the server",
		Long: `Run the Parsec server until SIGINT or SIGTERM.

Every flag can also be set with an environment variable named PARSEC_ and
the flag in capitals, dashes as underscores: PARSEC_LISTEN, PARSEC_DATA_DIR,
PARSEC_IN_MEMORY, PARSEC_LOG_LEVEL, PARSEC_MAX_CONNECTIONS, ... A flag on
the command line wins over its variable.

On SIGINT or SIGTERM the server stops accepting connections, lets requests
in flight finish (up to --shutdown-grace), and closes the store cleanly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			o.httpExplicit = cmd.Flags().Changed("http")
			o.cluster.groupsExplicit = cmd.Flags().Changed("partition-groups")
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, o, os.Args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:27017", "address to listen on (host:port)")
	f.StringVar(&o.dataDir, "data-dir", "./parsec-data", "directory for the data files")
	f.BoolVar(&o.inMemory, "in-memory", false, "keep all data in memory (nothing survives a restart)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text (key=value) or json (one object a line)")
	f.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "address of the HTTP listener: Prometheus /metrics and the web console at / (\"\" turns it off; with --auth it needs a user with clusterMonitor, by basic auth; TLS when the server has it)")
	f.IntVar(&o.maxConnections, "max-connections", 1_000_000, "most client connections open at once")
	f.BoolVar(&o.testCommands, "enable-test-commands", false, "register configureFailPoint (for drivers' specification tests; never in production)")
	f.StringVar(&o.crashAt, "crash-at", "", "with --enable-test-commands: a point where a cluster node kills itself once (crash tests)")
	_ = f.MarkHidden("crash-at")
	f.DurationVar(&o.cursorTimeout, "cursor-timeout", 10*time.Minute, "close cursors idle for longer than this")
	f.DurationVar(&o.ttlInterval, "ttl-interval", 60*time.Second, "how often documents past their TTL index's expireAfterSeconds are deleted")
	f.DurationVar(&o.shutdownGrace, "shutdown-grace", 30*time.Second, "how long shutdown waits for requests in flight")
	o.memoryLimit = defaultMemoryLimit()
	f.Var(&o.memoryLimit, "memory-limit", "memory the server keeps its own (anonymous) memory under: sizes the storage engine's memtables and index cache and sets Go's soft memory limit; memory-mapped data files come on top, and the kernel reclaims their pages (default: 1 GiB or a quarter of RAM, whichever is smaller)")
	o.partitionMaxBytes = engine.DefaultPartitionMaxBytes
	o.logicalPartitionMaxBytes = engine.DefaultLogicalPartitionMaxBytes
	f.IntVar(&o.partitionMaxRUs, "partition-max-rus", engine.DefaultPartitionMaxRUs, "most RU/s one physical partition serves: raising throughput past partitions x this splits partitions")
	f.Var(&o.partitionMaxBytes, "partition-max-bytes", "a physical partition bigger than this splits (units B, KiB, MiB, GiB, TiB; KB etc. are the same)")
	f.Var(&o.logicalPartitionMaxBytes, "logical-partition-max-bytes", "writes that would grow one shard-key value's documents past this fail")
	f.DurationVar(&o.changeRetention, "change-retention", 24*time.Hour, "how long the change log keeps events for change streams (0: for ever)")
	f.Var(&o.changeRetentionBytes, "change-retention-bytes", "trim the change log's oldest events past this size (0: no size bound)")
	f.IntVar(&o.defaultThroughput, "default-throughput", engine.DefaultThroughputRUs, "RU/s of a collection created without throughput (manual)")
	f.IntVar(&o.maxThroughput, "max-throughput", engine.DefaultMaxThroughput, "most RU/s (manual, or autoscale's maximum) a collection or database may be given")
	f.BoolVar(&o.rateLimiting, "rate-limiting", false, "refuse requests over their partition's RU budget with 16500 TooManyRequests (request units are charged and reported either way)")
	f.BoolVar(&o.serverSideRetry, "server-side-retry", false, "wait and retry requests over budget, up to 60 s, then fail with 50 ExceededTimeLimit (implies --rate-limiting)")
	f.Float64Var(&o.ruBurstSeconds, "ru-burst-seconds", 1, "each partition's bucket holds this many seconds of its RU/s (Cosmos DB: 1)")
	f.BoolVar(&o.ruAccounting, "ru-accounting", true, "charge request units at all; false is for measuring what accounting costs (benchmarks), and disables throttling and RU statistics")
	_ = f.MarkHidden("ru-accounting")
	f.StringVar(&o.tlsCertFile, "tls-cert-file", "", "serve TLS only, with this PEM certificate (chain) and --tls-key-file")
	f.StringVar(&o.tlsKeyFile, "tls-key-file", "", "the PEM private key of --tls-cert-file")
	f.BoolVar(&o.tlsSelfSigned, "tls-self-signed", false, "serve TLS only, with a new self-signed certificate for localhost and this host, written to <data-dir>/tls-cert.pem for clients' tlsCAFile")
	f.StringVar(&o.replicaSet, "replica-set", "", "answer as the primary of a one-member replica set of this name (Cosmos DB's is globaldb) instead of as a router, so connection strings with replicaSet=<name> work")
	f.StringVar(&o.advertise, "advertise", "", "with --replica-set, the host:port the server names itself by (default: the address each client connected to)")
	f.Uint64Var(&o.cluster.nodeID, "node-id", 0, "with --initial-members: this node's id among them")
	f.StringVar(&o.cluster.raftAddress, "raft-address", "", "with --initial-members: the host:port this node's replicas talk Raft on (default: its address in --initial-members, which it must equal)")
	f.StringVar(&o.cluster.join, "join", "", "join a running cluster as a new node, through any of its nodes' client address (host:port), with --node-id (an id no member has) and --raft-address; it catches up from the others")
	f.BoolVar(&o.cluster.partitionGroups, "partition-groups", true, "with --initial-members: make each physical partition a Raft group of its own, and the catalog one more (false: one group holds everything); a node's data directory keeps the layout it was made with")
	f.StringVar(&o.cluster.initialMembers, "initial-members", "", "run as a node of a cluster of these members, \"1=host:port,2=host:port,3=host:port\" (node ids and Raft addresses); every node listens for clients on the same port, at its Raft host")
	f.DurationVar(&o.cluster.raftSyncInterval, "raft-sync-interval", 100*time.Millisecond, "with --initial-members or --join: how long an entry in a node's Raft log may wait for its fsync, at most 1s. A write is acknowledged once a majority of its partition's replicas hold it in their logs (which survives their processes being killed, not their machines losing power) and is on their disks within this interval; a write with j: true waits for a majority's fsync. 0 fsyncs every log append before it counts")
	f.StringVar(&o.defaultConsistency, "default-consistency", "session", "Cosmos DB consistency level of reads that give no readConcern: strong (confirmed with a majority of the cluster, charged twice), bounded (charged twice), session, prefix or eventual")
	f.BoolVar(&o.auth, "auth", false, "access control: every command but the handshake needs an authenticated user (SCRAM-SHA-1/256) whose built-in roles allow it; while no user exists, a client on localhost may create the first one in admin")
	f.StringVar(&o.rootUser, "root-user", "", "make sure admin.<name> exists with role root and --root-password (reset at every start); implies --auth")
	f.StringVar(&o.rootPassword, "root-password", "", "password of --root-user (prefer the PARSEC_ROOT_PASSWORD variable: flags show in the process list)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write the server's CPU profile to this file, from start until it stops on SIGINT or SIGTERM (pprof format)")
	_ = f.MarkHidden("cpuprofile")
	return cmd
}

func (o *serveOptions) validate() error {
	switch {
	case o.crashAt != "" && !o.testCommands:
		return fmt.Errorf("--crash-at is for crash tests: it needs --enable-test-commands")
	case o.crashAt != "" && o.crashAt != crashMoveRemoved:
		return fmt.Errorf("--crash-at: unknown crash point %q (known: %s)", o.crashAt, crashMoveRemoved)
	case o.partitionMaxRUs < 1:
		return fmt.Errorf("--partition-max-rus must be at least 1")
	case o.maxThroughput < 400:
		return fmt.Errorf("--max-throughput must be at least 400")
	case o.memoryLimit < 64<<20:
		return fmt.Errorf("--memory-limit must be at least 64MiB")
	case o.partitionMaxBytes < 1 || o.logicalPartitionMaxBytes < 1:
		return fmt.Errorf("--partition-max-bytes and --logical-partition-max-bytes must be positive")
	case o.defaultThroughput < 400 || o.defaultThroughput%100 != 0:
		return fmt.Errorf("--default-throughput must be a multiple of 100 of at least 400 RU/s")
	case o.ruBurstSeconds < 1 || o.ruBurstSeconds > 3600:
		return fmt.Errorf("--ru-burst-seconds must be between 1 and 3600")
	case !o.ruAccounting && (o.rateLimiting || o.serverSideRetry):
		return fmt.Errorf("--rate-limiting and --server-side-retry need --ru-accounting")
	case (o.tlsCertFile == "") != (o.tlsKeyFile == ""):
		return fmt.Errorf("--tls-cert-file and --tls-key-file go together")
	case o.tlsSelfSigned && o.tlsCertFile != "":
		return fmt.Errorf("--tls-self-signed and --tls-cert-file exclude each other")
	case o.cluster.raftSyncInterval < 0 || o.cluster.raftSyncInterval > time.Second:
		return fmt.Errorf("--raft-sync-interval must be between 0 and 1s")
	case o.advertise != "" && o.replicaSet == "":
		return fmt.Errorf("--advertise needs --replica-set")
	case engine.ValidConsistency(o.defaultConsistency) != nil:
		return fmt.Errorf("--default-consistency: %v", engine.ValidConsistency(o.defaultConsistency))
	case (o.rootUser == "") != (o.rootPassword == ""):
		return fmt.Errorf("--root-user and --root-password go together")
	case strings.IndexByte(o.rootUser, 0) >= 0:
		return fmt.Errorf("--root-user must not contain a zero byte")
	}
	if o.rootUser != "" {
		if _, err := auth.NewCredentials(o.rootUser, o.rootPassword, nil); err != nil {
			return fmt.Errorf("--root-password: %w", err)
		}
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// serve runs a server until ctx is done.
func serve(ctx context.Context, o *serveOptions, argv []string) error {
	level, err := parseLevel(o.logLevel)
	if err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	logger, err := newLogger(os.Stderr, o.logFormat, level)
	if err != nil {
		return err
	}
	restrictFileModes()
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop(logger)
	}
	if o.clustered() {
		debug.SetMemoryLimit(int64(o.memoryLimit))
		return serveCluster(ctx, o, argv, logger)
	}
	if o.cluster.nodeID != 0 || o.cluster.raftAddress != "" {
		return fmt.Errorf("--node-id and --raft-address need --initial-members or --join")
	}
	dataDir := o.dataDir
	if o.inMemory {
		dataDir = ""
	} else if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	// Go's soft limit keeps the heap (and so anonymous memory) under the
	// limit by collecting sooner and returning freed pages.
	debug.SetMemoryLimit(int64(o.memoryLimit))
	st, err := store.Open(store.Options{Dir: dataDir, InMemory: o.inMemory, Logger: logger, MemoryLimit: int64(o.memoryLimit)})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("data directory %s is already in use by another Parsec server; stop it or choose another --data-dir", dataDir)
		}
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	tlsCfg, certPath, err := o.tlsConfig(selfSignedPath(dataDir))
	if err != nil {
		_ = ln.Close()
		_ = st.Close()
		return err
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		logger.Info("TLS on", "certificate", certPath, "self_signed", o.tlsSelfSigned)
	}
	var srv *wire.Server
	var warnings []string
	if o.inMemory {
		warnings = append(warnings, "Parsec is running with --in-memory: data is lost when the server stops")
	}
	eng := engine.New(o.engineConfig(storage.Local(st), logger, func() wire.Stats { return srv.Stats() }, argv, warnings, ln.Addr().(*net.TCPAddr).Port))
	srv = wire.NewServer(eng, logger, o.maxConnections)
	where := dataDir
	if o.inMemory {
		where = "(in memory)"
	}
	web, herr := startHTTP(o.httpAddr, eng, tlsCfg, o.auth || o.rootUser != "", logger)
	if herr != nil && o.httpExplicit {
		eng.Close()
		_ = ln.Close()
		_ = st.Close()
		return herr
	} else if herr != nil {
		logger.Warn("console and metrics are off: the default address is taken (give --http another address)", "err", herr)
	}
	logger.Info("parsec started", "version", engine.Version, "address", ln.Addr().String(), "data_dir", where)

	err = serveUntil(ctx, srv, ln, logger)
	sctx, cancel := shutdownWire(srv, o.shutdownGrace, logger)
	defer cancel()
	web.stop(sctx, logger)
	eng.Close()
	if cerr := st.Close(); cerr != nil {
		logger.Error("closing the store", "err", cerr)
		if err == nil {
			err = cerr
		}
	}
	if errors.Is(err, wire.ErrServerClosed) {
		err = nil
	}
	logger.Info("parsec stopped")
	return err
}

// startCPUProfile profiles the process's CPU into path until the
// returned function is called.
func startCPUProfile(path string) (func(*slog.Logger), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func(logger *slog.Logger) {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			logger.Error("writing the CPU profile", "path", path, "err", err)
		}
	}, nil
}

// serveUntil serves clients on ln until ctx is done or the listener
// fails (its error).
func serveUntil(ctx context.Context, srv *wire.Server, ln net.Listener, logger *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		logger.Info("shutting down")
		return nil
	}
}

// shutdownWire stops taking connections and lets requests in flight
// finish for up to grace; the context it returns bounds the rest of the
// shutdown by the same grace.
func shutdownWire(srv *wire.Server, grace time.Duration, logger *slog.Logger) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("shutdown did not finish in time; open connections were closed", "err", err)
	}
	return sctx, cancel
}

// engineConfig is the engine's configuration from the flags.
func (o *serveOptions) engineConfig(st storage.Storage, logger *slog.Logger, conns func() wire.Stats, argv, warnings []string, port int) engine.Config {
	return engine.Config{
		Store:              st,
		Logger:             logger,
		CursorTimeout:      o.cursorTimeout,
		ChangeLog:          engine.ChangeLogLimits{Retention: changeRetentionOf(o.changeRetention), Bytes: int64(o.changeRetentionBytes)},
		TTLInterval:        o.ttlInterval,
		ConnStats:          conns,
		MaxConnections:     o.maxConnections,
		EnableTestCommands: o.testCommands,
		Partitions: engine.PartitionLimits{
			MaxRUs:            o.partitionMaxRUs,
			MaxBytes:          int64(o.partitionMaxBytes),
			LogicalMaxBytes:   int64(o.logicalPartitionMaxBytes),
			DefaultThroughput: o.defaultThroughput,
			MaxThroughput:     o.maxThroughput,
		},
		RequestUnits: engine.RequestUnitOptions{
			RateLimiting:    o.rateLimiting,
			ServerSideRetry: o.serverSideRetry,
			BurstSeconds:    o.ruBurstSeconds,
			Bypass:          !o.ruAccounting,
		},
		Argv:            redactArgv(argv),
		Options:         o.asMap(),
		StartupWarnings: warnings,
		Port:            port,
		Auth:            o.auth || o.rootUser != "",
		ReplicaSet:      o.replicaSet,
		Advertise:       o.advertise,
		RootUser:        o.rootUser,
		RootPassword:    o.rootPassword,

		DefaultConsistency: o.defaultConsistency,
	}
}

func (o *serveOptions) asMap() map[string]any {
	return map[string]any{
		"listen":         o.listen,
		"dataDir":        o.dataDir,
		"inMemory":       o.inMemory,
		"logLevel":       o.logLevel,
		"logFormat":      o.logFormat,
		"http":           o.httpAddr,
		"maxConnections": int64(o.maxConnections),
		"cursorTimeout":  o.cursorTimeout.String(),
		"ttlInterval":    o.ttlInterval.String(),
		"memoryLimit":    int64(o.memoryLimit),

		"partitionMaxRUs":          int64(o.partitionMaxRUs),
		"partitionMaxBytes":        int64(o.partitionMaxBytes),
		"logicalPartitionMaxBytes": int64(o.logicalPartitionMaxBytes),
		"defaultThroughput":        int64(o.defaultThroughput),
		"maxThroughput":            int64(o.maxThroughput),

		"rateLimiting":    o.rateLimiting,
		"serverSideRetry": o.serverSideRetry,
		"ruBurstSeconds":  o.ruBurstSeconds,
		"ruAccounting":    o.ruAccounting,

		"auth":       o.auth || o.rootUser != "",
		"rootUser":   o.rootUser,
		"tls":        o.tlsCertFile != "" || o.tlsSelfSigned,
		"replicaSet": o.replicaSet,

		"defaultConsistency": o.defaultConsistency,
		"nodeId":             int64(o.cluster.nodeID),
		"initialMembers":     o.cluster.initialMembers,
		"join":               o.cluster.join,
	}
}

// redactArgv hides the value of --root-password from getCmdLineOpts.
func redactArgv(argv []string) []string {
	out := slices.Clone(argv)
	for i, a := range out {
		switch {
		case strings.HasPrefix(a, "--root-password="):
			out[i] = "--root-password=<redacted>"
		case a == "--root-password" && i+1 < len(out):
			out[i+1] = "<redacted>"
		}
	}
	return out
}

// changeRetentionOf is --change-retention as the engine takes it: 0
// there means the default, so "keep for ever" is negative.
func changeRetentionOf(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
