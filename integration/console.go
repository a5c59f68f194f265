package integration

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/parsecdb/parsec/console"
)

// Console is the HTTP console and metrics listener of a test server.
type Console struct {
	URL  string // http://127.0.0.1:<port>
	srv  *console.Server
	ln   net.Listener
	done chan error
}

// StartConsole serves s's console and /metrics on 127.0.0.1:0 (as
// `parsec serve --http` does) until the test ends; opts.Auth follows the
// server's access control when not set.
func StartConsole(tb testing.TB, s *Server, opts console.Options) *Console {
	tb.Helper()
	c, err := s.LaunchConsole(opts)
	if err != nil {
		tb.Fatalf("start console: %v", err)
	}
	tb.Cleanup(func() { c.Stop() })
	return c
}

// LaunchConsole starts s's console; the caller stops it before s.
func (s *Server) LaunchConsole(opts console.Options) (*Console, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &Console{URL: "http://" + ln.Addr().String(), srv: console.New(s.eng, opts), ln: ln, done: make(chan error, 1)}
	go func() { c.done <- c.srv.Serve(ln) }()
	return c, nil
}

// Stop shuts the console down.
func (c *Console) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.srv.Close(ctx)
	<-c.done
}
