// Package integration tests Parsec end to end: each test talks to a real
// server (store on disk, engine, wire listener on 127.0.0.1:0) only through
// the official MongoDB Go driver or raw sockets. clients/ holds mongosh and
// Node.js driver scenarios.
package integration

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/wire"
)

// Server is a Parsec server running in this process.
type Server struct {
	Addr  string
	Dir   string
	store *store.Store
	eng   *engine.Engine
	srv   *wire.Server
	done  chan error
}

// ServerOptions tune StartServer.
type ServerOptions struct {
	Dir            string // reuse a data directory (restart tests); "" makes a new one
	InMemory       bool
	MaxConnections int
	CursorTimeout  time.Duration
	TTLInterval    time.Duration // how often TTL indexes expire documents (0: 60 s)
	// TransactionLifetime aborts transactions open longer (0: 60 s).
	TransactionLifetime time.Duration
	// EnableTestCommands registers configureFailPoint.
	EnableTestCommands bool
	// Partitions are the partition limits (zero fields: Cosmos DB's).
	Partitions engine.PartitionLimits
	// AggMemoryLimit is each blocking aggregation stage's memory budget
	// (0: MongoDB's 100 MB).
	AggMemoryLimit int64
	// RequestUnits turns on throttling (RateLimiting, ServerSideRetry)
	// and bounds server-side retry (RetryLimit); Bypass turns accounting
	// off, for benchmarks. Zero: accounting on, throttling off.
	RequestUnits engine.RequestUnitOptions
	// Auth turns access control on; RootUser and RootPassword make an
	// admin user with role root (as --root-user does).
	Auth                   bool
	RootUser, RootPassword string
	// TLS serves TLS only, with this configuration.
	TLS *tls.Config
	// ReplicaSet presents the server as the primary of a one-member
	// replica set of that name (as --replica-set does).
	ReplicaSet string
	// AuthBackoff slows addresses that keep failing to authenticate
	// (zero fields: the defaults).
	AuthBackoff auth.BackoffLimits
	// Clock is the server's clock (nil: real time): request-unit buckets
	// and statistics, cursor timeouts and every other time the engine
	// keeps are read from it.
	Clock *Clock
}

// Clock is a server clock a test moves with Advance, safe for concurrent
// use. A stopped clock (NewClock) stands still between Advance calls, so
// whatever depends on time (a bucket refilled, a cursor idle past its
// timeout) is decided by the test alone. A running clock
// (NewRunningClock) also moves with real time, for a test that measures
// rates over real time or whose server waits in real time (server-side
// retry): Advance then skips ahead.
type Clock struct {
	mu    sync.Mutex
	at    time.Time // the time at the real instant since
	since time.Time // zero: stopped
}

// NewClock returns a stopped clock reading the current second.
func NewClock() *Clock { return &Clock{at: time.Now().Truncate(time.Second)} }

// NewRunningClock returns a clock that moves with real time from now on.
func NewRunningClock() *Clock {
	now := time.Now()
	return &Clock{at: now, since: now}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since.IsZero() {
		return c.at
	}
	return c.at.Add(time.Since(c.since))
}

// Advance moves the clock d ahead at once.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

// StartServer starts a server on 127.0.0.1:0 with its data in a temporary
// directory and stops it when the test ends.
func StartServer(tb testing.TB, opts ServerOptions) *Server {
	tb.Helper()
	s, err := Launch(opts)
	if err != nil {
		tb.Fatalf("start server: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("stop server: %v", err)
		}
	})
	return s
}

// Launch starts a server; dir "" makes a temporary one the caller owns.
func Launch(opts ServerOptions) (*Server, error) {
	dir := opts.Dir
	if dir == "" && !opts.InMemory {
		var err error
		if dir, err = os.MkdirTemp("", "parsec-test-"); err != nil {
			return nil, err
		}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := store.Open(store.Options{Dir: dir, InMemory: opts.InMemory, Logger: logger})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
	}
	s := &Server{Addr: ln.Addr().String(), Dir: dir, store: st, done: make(chan error, 1)}
	var now func() time.Time
	if opts.Clock != nil {
		now = opts.Clock.Now
	}
	s.eng = engine.New(engine.Config{
		Store:               st,
		Logger:              logger,
		Now:                 now,
		CursorTimeout:       opts.CursorTimeout,
		TTLInterval:         opts.TTLInterval,
		TransactionLifetime: opts.TransactionLifetime,
		ConnStats:           func() wire.Stats { return s.srv.Stats() },
		MaxConnections:      opts.MaxConnections,
		EnableTestCommands:  opts.EnableTestCommands,
		Partitions:          opts.Partitions,
		AggMemoryLimit:      opts.AggMemoryLimit,
		RequestUnits:        opts.RequestUnits,
		Port:                ln.Addr().(*net.TCPAddr).Port,
		Auth:                opts.Auth,
		RootUser:            opts.RootUser,
		RootPassword:        opts.RootPassword,
		ReplicaSet:          opts.ReplicaSet,
		AuthBackoff:         opts.AuthBackoff,
		Argv:                []string{"parsec", "serve", "--listen", "127.0.0.1:0"},
		Options:             map[string]any{"listen": "127.0.0.1:0", "dataDir": dir},
	})
	s.srv = wire.NewServer(s.eng, logger, opts.MaxConnections)
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Store is the server's storage, for benchmarks that compare a command
// with the bare storage work under it on the same data. Tests must not
// write through it.
func (s *Server) Store() *store.Store { return s.store }

// ReapIdleCursors closes the cursors idle past the cursor timeout by the
// server's clock now, without waiting for the reaper's next round.
func (s *Server) ReapIdleCursors() { s.eng.ReapIdleCursors() }

// URI is a connection string for the server.
func (s *Server) URI() string { return "mongodb://" + s.Addr + "/" }

// Stop shuts the server down cleanly and closes its store; the data
// directory is kept.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
	s.eng.Close()
	return s.store.Close()
}

// selfSignedTLS makes a self-signed certificate for a test server: its
// TLS configuration, and the certificate's PEM file for clients'
// tlsCAFile (removed when the test ends).
func selfSignedTLS(tb testing.TB) (*tls.Config, string) {
	tb.Helper()
	cert, certPEM, err := wire.SelfSignedCert(time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	caFile := filepath.Join(tb.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, caFile
}
