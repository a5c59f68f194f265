// Package console is Parsec's HTTP listener: Prometheus metrics at
// /metrics and a web console of partitions and request units at /,
// served from files embedded in the binary.
//
// Contract:
//   - It reads the server only through Engine, a small interface the
//     engine implements: GetPartitionStats' reply, a snapshot of the
//     server, the split history, command latencies, and the check of
//     HTTP credentials. It never reaches into the engine's internals and
//     runs no command on a client connection.
//   - No request blocks the database: figures are computed into memory,
//     then written; the listener has read and write deadlines, so a slow
//     client only holds its own goroutine. The whole server's statistics
//     are computed at most once per Options.MinRefresh however many
//     clients ask, so scraping costs the same at any rate, and no more
//     often than keeps that work under 2% of a core.
//   - With access control on, every path needs HTTP basic auth of an
//     admin user whose roles grant clusterMonitor; failures are 401 with
//     no detail. Unknown paths are 404.
//   - Labels stay bounded: per collection and physical partition, per
//     command name the engine knows, and shard-key values only as the
//     top Options.TopK of each partition.
//   - /api/advise runs the partition-key what-if (AnalyzePartitionKey,
//     which samples the collection rather than reading it all), one
//     request at a time; others wait their turn or their deadline.
//   - A sampler records every collection's normalized RU consumption per
//     partition every Options.SampleEvery for the last Options.History,
//     the heat map's data; it stops with Close.
package console

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Engine is what the console reads from the server.
type Engine interface {
	// PartitionStatsDocument is GetPartitionStats' reply on db ("admin"
	// and no collection: the whole server).
	PartitionStatsDocument(ctx context.Context, db, collection string, top int) (bson.Raw, error)
	Snapshot() engine.ServerSnapshot
	Splits(since time.Time) []engine.SplitEvent
	SplitCount(db, collection string) int64
	CommandTimings() []engine.CommandTiming
	// Advise is {customAction: "AnalyzePartitionKey"}'s reply: the
	// what-if of candidate partition keys for a collection.
	Advise(ctx context.Context, r engine.AdviseRequest) (bson.Raw, error)
	// AuthorizeMonitor checks basic-auth credentials: nil when they are
	// right and grant clusterMonitor, or when access control is off.
	AuthorizeMonitor(ctx context.Context, source, user, password string) error
}

// Options tune a Server; zero fields take the defaults.
type Options struct {
	Logger *slog.Logger
	// Auth: every request needs basic auth (Engine.AuthorizeMonitor).
	Auth bool
	// MinRefresh: the whole server's statistics are recomputed at most
	// this often (1 s).
	MinRefresh time.Duration
	// SampleEvery is the heat map's resolution (10 s); History how far
	// back it goes (1 h).
	SampleEvery, History time.Duration
	// TopK shard-key values per partition in metrics (3).
	TopK int
	// StatsBudget is the share of one core that computing the server's
	// statistics may take (0.02): after a computation that took d, the
	// next one waits at least d / StatsBudget. 1 or more: no bound.
	StatsBudget float64
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = time.Second
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 10 * time.Second
	}
	if o.History <= 0 {
		o.History = time.Hour
	}
	if o.TopK <= 0 {
		o.TopK = 3
	}
	if o.StatsBudget <= 0 {
		o.StatsBudget = 0.02
	}
	return o
}

//go:embed assets
var assets embed.FS

// Server serves /metrics, the console and its JSON API.
type Server struct {
	eng      Engine
	opts     Options
	registry *prometheus.Registry
	cache    statsCache
	history  *history
	handler  http.Handler
	// advising admits one what-if at a time (apiAdvise).
	advising chan struct{}

	mu   sync.Mutex
	http *http.Server
	stop chan struct{}
	wg   sync.WaitGroup
}

// New makes a Server and starts its sampler.
func New(eng Engine, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{eng: eng, opts: opts, stop: make(chan struct{}), advising: make(chan struct{}, 1)}
	s.cache = statsCache{eng: eng, every: opts.MinRefresh, budget: min(opts.StatsBudget, 1)}
	s.history = newHistory(opts.History)
	s.registry = prometheus.NewRegistry()
	s.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newCollector(s),
	)
	s.handler = s.routes()
	s.wg.Add(1)
	go s.sample()
	return s
}

// Handler is the console's HTTP handler (authentication included).
func (s *Server) Handler() http.Handler { return s.handler }

// Registry holds the metrics /metrics serves.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             30 * time.Second,
	}))
	mux.HandleFunc("GET /api/server", s.apiServer)
	mux.HandleFunc("GET /api/collection", s.apiCollection)
	mux.HandleFunc("GET /api/partitions", s.apiPartitions)
	mux.HandleFunc("GET /api/heatmap", s.apiHeatmap)
	mux.HandleFunc("GET /api/advise", s.apiAdvise)
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux.HandleFunc("GET /assets/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		http.StripPrefix("/assets", files).ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page, err := assets.ReadFile("assets/index.html")
		if err != nil {
			http.Error(w, "console missing from this build", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(page)
	})
	var h http.Handler = mux
	h = securityHeaders(h)
	if s.opts.Auth {
		h = s.basicAuth(h)
	}
	return h
}

// securityHeaders keep the page from being framed or sniffed, and
// scripts to the console's own files.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
		next.ServeHTTP(w, r)
	})
}

// basicAuth lets through requests whose basic-auth credentials the engine
// accepts; others get 401 and nothing more.
func (s *Server) basicAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		if ok {
			source := r.RemoteAddr
			if host, _, err := net.SplitHostPort(source); err == nil {
				source = host
			}
			if err := s.eng.AuthorizeMonitor(r.Context(), source, user, password); err == nil {
				next.ServeHTTP(w, r)
				return
			} else if !errors.Is(err, engine.ErrMonitorDenied) && r.Context().Err() == nil {
				s.opts.Logger.Warn("console authentication", "err", err)
			}
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="Parsec", charset="UTF-8"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
}

// Serve serves HTTP on ln until Close; it returns http.ErrServerClosed
// after Close.
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	s.http = hs
	s.mu.Unlock()
	return hs.Serve(ln)
}

// Close stops the listener (waiting for requests in flight until ctx
// ends) and the sampler.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	hs := s.http
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.mu.Unlock()
	var err error
	if hs != nil {
		err = hs.Shutdown(ctx)
	}
	s.wg.Wait()
	return err
}

// statsCache computes the whole server's GetPartitionStats at most once
// per every, and no more often than keeps it within budget: with 2%, a
// server whose statistics take 40 ms to compute recomputes them at most
// every 2 s. Callers meanwhile share the last answer.
type statsCache struct {
	eng    Engine
	every  time.Duration
	budget float64 // share of a core, in (0, 1]

	mu   sync.Mutex
	at   time.Time
	cost time.Duration // what the last computation took
	doc  []collectionStats
	err  error
}

// statsTop is how many logical partitions per partition the cached
// statistics list (the metrics' top-k and the page's lists).
const statsTop = 10

// get returns the server's statistics, at most every old.
func (c *statsCache) get(ctx context.Context) ([]collectionStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < max(c.every, time.Duration(float64(c.cost)/c.budget)) {
		return c.doc, c.err
	}
	start := time.Now()
	raw, err := c.eng.PartitionStatsDocument(ctx, "admin", "", statsTop)
	var doc []collectionStats
	if err == nil {
		doc, err = parseServerStats(raw)
	}
	c.at, c.cost, c.doc, c.err = time.Now(), time.Since(start), doc, err
	return doc, err
}
