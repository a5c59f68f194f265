package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/parsecdb/parsec/console"
	"github.com/parsecdb/parsec/engine"
)

// newLogger makes the server's logger: text (logfmt-like key=value) or
// JSON lines on w, at level.
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want json or text", format)
}

// httpConsole is the running HTTP listener of --http.
type httpConsole struct {
	srv  *console.Server
	addr string
	done chan error
}

// startHTTP serves metrics and the console on addr ("" : not at all),
// with TLS when tlsCfg is set and basic auth when auth is.
func startHTTP(addr string, eng *engine.Engine, tlsCfg *tls.Config, auth bool, logger *slog.Logger) (*httpConsole, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http: listen on %s: %w", addr, err)
	}
	scheme := "http"
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		scheme = "https"
	}
	c := &httpConsole{
		srv:  console.New(eng, console.Options{Logger: logger, Auth: auth}),
		addr: ln.Addr().String(),
		done: make(chan error, 1),
	}
	go func() { c.done <- c.srv.Serve(ln) }()
	logger.Info("console and metrics", "url", scheme+"://"+c.addr+"/", "metrics", scheme+"://"+c.addr+"/metrics", "auth", auth)
	return c, nil
}

// stop shuts the listener down (waiting for requests in flight until
// ctx ends).
func (c *httpConsole) stop(ctx context.Context, logger *slog.Logger) {
	if c == nil {
		return
	}
	if err := c.srv.Close(ctx); err != nil {
		logger.Warn("stopping the console", "err", err)
	}
	if err := <-c.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("console listener", "err", err)
	}
}
