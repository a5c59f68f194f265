package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one command as the Handler sees it. Its byte slices alias the
// connection's read buffer and are valid only until Handle returns: a
// Handler that keeps any of them must copy.
type Request struct {
	OpCode OpCode
	// Body is the command document (OP_MSG kind-0 section, or the OP_QUERY
	// query with any $query wrapper removed).
	Body []byte
	// Sequences are the OP_MSG kind-1 sections, in frame order.
	Sequences []Section
	// DB is the database named by an OP_QUERY namespace ("admin" for
	// "admin.$cmd"); empty for OP_MSG, whose body carries $db.
	DB string
	// MoreToCome is set when the client expects no reply.
	MoreToCome     bool
	ExhaustAllowed bool
	// Err is set when the frame was readable but its content was not: the
	// Handler must answer with an error document.
	Err error
	// CloseConnection, set by the Handler, closes the connection instead of
	// replying (used to simulate network errors for driver tests).
	CloseConnection bool
}

// Handler serves the connections of a Server.
type Handler interface {
	// Connect is called once per accepted connection, before its first
	// request. The returned ConnHandler serves that connection's requests
	// one at a time, in order.
	Connect(c *Conn) ConnHandler
}

// ConnHandler serves one connection.
type ConnHandler interface {
	// Handle runs a request and returns the reply document. The reply is
	// discarded when the request has MoreToCome.
	Handle(ctx context.Context, req *Request) []byte
	// Close is called once when the connection ends.
	Close()
}

// Conn describes one client connection to its Handler.
type Conn struct {
	id          int64
	remote      net.Addr
	local       net.Addr
	compressors atomic.Pointer[[]CompressorID]
}

// ID is the server-unique connection number, starting at 1.
func (c *Conn) ID() int64 { return c.id }

// RemoteAddr is the client's address.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// LocalAddr is the server side's address.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// NegotiateCompression records which of the client's offered compressors
// the connection may use and returns their names, in the client's order.
func (c *Conn) NegotiateCompression(offered []string) []string {
	var names []string
	var ids []CompressorID
	for _, name := range offered {
		id, ok := CompressorByName(name)
		if !ok || id == CompressorNoop {
			continue
		}
		names = append(names, name)
		ids = append(ids, id)
	}
	c.compressors.Store(&ids)
	return names
}

func (c *Conn) mayCompress(id CompressorID) bool {
	p := c.compressors.Load()
	if p == nil {
		return false
	}
	for _, x := range *p {
		if x == id {
			return true
		}
	}
	return false
}

// Stats are connection counts for serverStatus.
type Stats struct {
	Current      int64
	TotalCreated int64
	Rejected     int64
}

// Server accepts connections and serves them with a Handler.
type Server struct {
	handler  Handler
	logger   *slog.Logger
	maxConns int64

	nextID   atomic.Int64
	current  atomic.Int64
	rejected atomic.Int64

	mu       sync.Mutex
	closing  atomic.Bool // read per request without the lock; set under mu
	listener net.Listener
	conns    map[*serverConn]struct{}
	wg       sync.WaitGroup
}

// NewServer makes a Server. maxConns <= 0 means no limit.
func NewServer(h Handler, logger *slog.Logger, maxConns int) *Server {
	return &Server{handler: h, logger: logger, maxConns: int64(maxConns), conns: map[*serverConn]struct{}{}}
}

// Stats returns connection counts.
func (s *Server) Stats() Stats {
	return Stats{Current: s.current.Load(), TotalCreated: s.nextID.Load(), Rejected: s.rejected.Load()}
}

// MaxConnections returns the configured limit (0: none).
func (s *Server) MaxConnections() int64 { return s.maxConns }

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("wire: server closed")

// Serve accepts connections on ln until Shutdown is called or ln fails.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listener = ln
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing.Load()
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		if s.maxConns > 0 && s.current.Load() >= s.maxConns {
			s.rejected.Add(1)
			s.logger.Warn("connection refused: too many open connections", "remote", nc.RemoteAddr().String(), "max", s.maxConns)
			_ = nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
			_ = tc.SetKeepAlive(true)
		}
		c := &serverConn{srv: s, nc: nc, conn: &Conn{id: s.nextID.Add(1), remote: nc.RemoteAddr(), local: nc.LocalAddr()}}
		c.ctx, c.cancel = context.WithCancel(context.Background())
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			_ = nc.Close()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.current.Add(1)
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting, closes idle connections, lets requests in
// flight finish and waits for every connection to end or ctx to expire,
// after which the remaining connections are closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	if s.listener != nil {
		_ = s.listener.Close()
	}
	for c := range s.conns {
		c.closeIfIdle()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.cancel() // let handlers blocked on their context return
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (s *Server) isClosing() bool { return s.closing.Load() }

type serverConn struct {
	srv    *Server
	nc     net.Conn
	conn   *Conn
	ctx    context.Context // passed to the Handler; canceled when the connection ends
	cancel context.CancelFunc

	mu   sync.Mutex
	busy bool
}

func (c *serverConn) closeIfIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.busy {
		_ = c.nc.Close()
	}
}

func (c *serverConn) setBusy(b bool) (closing bool) {
	c.mu.Lock()
	c.busy = b
	c.mu.Unlock()
	return c.srv.isClosing()
}

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16*1024) }}

func (c *serverConn) serve() {
	s := c.srv
	h := s.handler.Connect(c.conn)
	ctx := c.ctx
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(c.nc)
	opened := time.Now()
	s.logger.Debug("connection opened", "conn", c.conn.id, "remote", c.conn.remote.String(), "open", s.current.Load())
	defer func() {
		s.logger.Debug("connection closed", "conn", c.conn.id, "remote", c.conn.remote.String(), "duration", time.Since(opened).Round(time.Millisecond))
		c.cancel()
		h.Close()
		_ = c.nc.Close()
		br.Reset(nil)
		readerPool.Put(br)
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.current.Add(-1)
		s.wg.Done()
	}()
	var in, out []byte
	for {
		frame, err := ReadFrame(br, in, MaxMessageSize)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.logger.Debug("connection closed on read", "conn", c.conn.id, "err", err)
			}
			return
		}
		if cap(frame) <= 1<<20 { // keep ordinary buffers, drop huge ones
			in = frame[:0]
		} else {
			in = nil
		}
		if c.setBusy(true) {
			return
		}
		out, err = c.handleFrame(ctx, h, frame, out[:0])
		if err == nil && len(out) > 0 {
			_, err = c.nc.Write(out)
		}
		if cap(out) > 1<<20 {
			out = nil
		}
		closing := c.setBusy(false)
		if err != nil {
			s.logger.Debug("closing connection", "conn", c.conn.id, "err", err)
			return
		}
		if closing {
			return
		}
	}
}

// handleFrame decodes one frame, runs it and appends the reply frame (if
// any) to out. An error means the connection must be closed.
func (c *serverConn) handleFrame(ctx context.Context, h ConnHandler, frame, out []byte) ([]byte, error) {
	m, err := Decode(frame)
	var compressor CompressorID
	compressed, checksum := false, false
	hdr, _ := ParseHeader(frame)
	if err == nil {
		if cm, ok := m.(*Compressed); ok {
			compressor, compressed = cm.CompressorID, true
			hdr.OpCode = cm.OriginalOpCode // answer in the framing of the inner message even if it fails to decode
			m, err = cm.Open()
		}
	}
	if err != nil && IsFatal(err) {
		return out, err
	}
	req := &Request{Err: err}
	if m != nil {
		hdr = *m.Hdr()
	}
	switch mm := m.(type) {
	case *Msg:
		req.OpCode = OpMsg
		req.Body = mm.Body()
		req.MoreToCome = mm.Flags&FlagMoreToCome != 0
		req.ExhaustAllowed = mm.Flags&FlagExhaustAllowed != 0
		checksum = mm.Flags&FlagChecksumPresent != 0
		for _, sec := range mm.Sections {
			if sec.Kind == SectionSequence {
				req.Sequences = append(req.Sequences, sec)
			}
		}
	case *Query:
		req.OpCode = OpQuery
		db, coll, ok := strings.Cut(mm.FullCollectionName, ".")
		if !ok || coll != "$cmd" {
			if req.Err == nil {
				req.Err = protoErr(false, "OP_QUERY is supported only for commands on <db>.$cmd, not %q; use OP_MSG", errorName(mm.FullCollectionName))
			}
		}
		req.DB = db
		req.Body = unwrapQuery(mm.Query)
	case *Reply:
		req.OpCode = OpReply
		req.Err = protoErr(false, "clients may not send OP_REPLY")
	case nil:
		req.OpCode = hdr.OpCode
		// An OP_MSG that failed to decode still says whether the client
		// waits for a reply: an unexpected reply would desynchronize it.
		if hdr.OpCode == OpMsg && !compressed && len(frame) >= HeaderSize+4 {
			req.MoreToCome = binary.LittleEndian.Uint32(frame[HeaderSize:])&FlagMoreToCome != 0
		}
	}
	reply := h.Handle(ctx, req)
	if req.CloseConnection {
		return out, errCloseRequested
	}
	if req.MoreToCome {
		return out, nil
	}
	respHdr := Header{RequestID: nextResponseID.Add(1), ResponseTo: hdr.RequestID}
	var resp Message
	if req.OpCode == OpQuery {
		respHdr.OpCode = OpReply
		resp = &Reply{Header: respHdr, NumberReturned: 1, Documents: [][]byte{reply}}
	} else {
		respHdr.OpCode = OpMsg
		msg := &Msg{Header: respHdr, Sections: []Section{{Kind: SectionBody, Documents: [][]byte{reply}}}}
		if checksum && !compressed {
			msg.Flags = FlagChecksumPresent
		}
		resp = msg
	}
	if compressed && compressor != CompressorNoop && c.conn.mayCompress(compressor) {
		return Compress(out, compressor, resp), nil
	}
	return Encode(out, resp), nil
}

var nextResponseID atomic.Int32

var errCloseRequested = errors.New("the handler asked to close the connection")

// unwrapQuery returns the command inside a legacy {$query: {...}, ...}
// wrapper, or q itself.
func unwrapQuery(q []byte) []byte {
	if len(q) < 5+1+7 || (q[4] != 0x03) {
		return q
	}
	name := q[5:]
	var key string
	switch {
	case strings.HasPrefix(string(name[:min(len(name), 7)]), "$query\x00"):
		key = "$query"
	case strings.HasPrefix(string(name[:min(len(name), 6)]), "query\x00"):
		key = "query"
	default:
		return q
	}
	inner := name[len(key)+1:]
	n := int(binary.LittleEndian.Uint32(inner))
	return inner[:n:n]
}
