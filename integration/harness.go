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
	"github.com/parsecdb/parsec/engine/storage"
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
	// ChangeLog bounds the change log (as --change-retention and
	// --change-retention-bytes do; zero: 24 h, no size bound).
	ChangeLog engine.ChangeLogLimits
	// Clock is the server's clock (nil: real time): request-unit buckets
	// and statistics, cursor timeouts and every other time the engine
	// keeps are read from it, and server-side retry waits by it.
	Clock *Clock
}

// Clock is a server clock a test moves with Advance, safe for concurrent
// use. It stands still between Advance calls, so whatever depends on time
// (a bucket refilled, a cursor idle past its timeout, a server-side retry
// waited out) is decided by the test alone.
type Clock struct {
	mu      sync.Mutex
	changed sync.Cond // signalled when the clock moves or a waiter comes or goes
	at      time.Time
	waiters map[*clockWaiter]bool
}

// clockWaiter is a caller of Wait: until is closed when the clock reaches at.
type clockWaiter struct {
	at    time.Time
	until chan struct{}
}

// NewClock returns a clock reading the current second.
func NewClock() *Clock {
	c := &Clock{at: time.Now().Truncate(time.Second), waiters: map[*clockWaiter]bool{}}
	c.changed.L = &c.mu
	return c
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// Advance moves the clock d ahead at once, releasing the callers of Wait
// whose time has come.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
	for w := range c.waiters {
		if !w.at.After(c.at) {
			close(w.until)
			delete(c.waiters, w)
		}
	}
	c.changed.Broadcast()
}

// Wait returns once the clock has moved d ahead, or ctx's error when ctx
// is done first. The server waits with it (engine.Config.Wait).
func (c *Clock) Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	w := &clockWaiter{at: c.at.Add(d), until: make(chan struct{})}
	c.waiters[w] = true
	c.changed.Broadcast()
	c.mu.Unlock()
	select {
	case <-w.until:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.waiters, w)
		c.changed.Broadcast()
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Notify wakes the callers of Until, to look at what they wait for again.
func (c *Clock) Notify() {
	c.mu.Lock()
	c.changed.Broadcast()
	c.mu.Unlock()
}

// Until waits until cond, given the number of callers blocked in Wait,
// holds; it looks again whenever that number changes, the clock moves or
// Notify is called. It reports false if within (real time) passed first.
func (c *Clock) Until(within time.Duration, cond func(waiting int) bool) bool {
	expired := false
	t := time.AfterFunc(within, func() {
		c.mu.Lock()
		expired = true
		c.changed.Broadcast()
		c.mu.Unlock()
	})
	defer t.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !cond(len(c.waiters)) {
		if expired {
			return false
		}
		c.changed.Wait()
	}
	return true
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
	var wait func(context.Context, time.Duration) error
	if opts.Clock != nil {
		now, wait = opts.Clock.Now, opts.Clock.Wait
	}
	s.eng = engine.New(engine.Config{
		Store:               storage.Local(st),
		Logger:              logger,
		Now:                 now,
		Wait:                wait,
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
		ChangeLog:           opts.ChangeLog,
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
