package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// testHandler answers every request with a document describing it:
//
//	{ok, opCode, db, moreToCome, echo: <body>, sequences: [{id, n}], errmsg}
//
// "hello"/"isMaster" with a compression array negotiates compression, and
// "block" signals started and waits for release (or its context).
type testHandler struct {
	connects, closes atomic.Int32
	started          chan struct{}
	release          chan struct{}

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	OpCode     OpCode
	Body       []byte
	DB         string
	MoreToCome bool
	Err        error
}

func newTestHandler() *testHandler {
	return &testHandler{started: make(chan struct{}, 10), release: make(chan struct{})}
}

func (h *testHandler) Connect(c *Conn) ConnHandler {
	h.connects.Add(1)
	return &testConnHandler{h: h, c: c}
}

func (h *testHandler) requests() []seenRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]seenRequest(nil), h.seen...)
}

type testConnHandler struct {
	h *testHandler
	c *Conn
}

func (tc *testConnHandler) Close() { tc.h.closes.Add(1) }

func (tc *testConnHandler) Handle(ctx context.Context, req *Request) []byte {
	h := tc.h
	h.mu.Lock()
	h.seen = append(h.seen, seenRequest{req.OpCode, bytes.Clone(req.Body), req.DB, req.MoreToCome, req.Err})
	h.mu.Unlock()

	reply := bson.D{
		{Key: "ok", Value: float64(1)},
		{Key: "opCode", Value: int32(req.OpCode)},
		{Key: "db", Value: req.DB},
		{Key: "moreToCome", Value: req.MoreToCome},
		{Key: "connectionId", Value: tc.c.ID()},
	}
	if req.Err != nil {
		reply[0].Value = float64(0)
		return mustMarshal(append(reply, bson.E{Key: "errmsg", Value: req.Err.Error()}))
	}
	reply = append(reply, bson.E{Key: "echo", Value: bson.Raw(req.Body)})
	var seqs bson.A
	for _, s := range req.Sequences {
		seqs = append(seqs, bson.D{{Key: "id", Value: s.Identifier}, {Key: "n", Value: int32(len(s.Documents))}})
	}
	reply = append(reply, bson.E{Key: "sequences", Value: seqs})

	first, _ := bson.Raw(req.Body).IndexErr(0)
	switch first.Key() {
	case "hello", "isMaster":
		if arr, ok := bson.Raw(req.Body).Lookup("compression").ArrayOK(); ok {
			vals, _ := arr.Values()
			var offered []string
			for _, v := range vals {
				offered = append(offered, v.StringValue())
			}
			reply = append(reply, bson.E{Key: "compression", Value: tc.c.NegotiateCompression(offered)})
		}
	case "block":
		h.started <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			reply[0].Value = float64(0)
			reply = append(reply, bson.E{Key: "errmsg", Value: "canceled"})
		}
	}
	return mustMarshal(reply)
}

func mustMarshal(v any) []byte {
	b, err := bson.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

type testServer struct {
	srv   *Server
	addr  string
	serve chan error
}

// startServer serves h on a loopback port until the test ends.
func startServer(t *testing.T, h Handler, maxConns int) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: NewServer(h, slog.New(slog.DiscardHandler), maxConns), addr: ln.Addr().String(), serve: make(chan error, 1)}
	go func() { ts.serve <- ts.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-ts.serve; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

type testClient struct {
	t   *testing.T
	nc  net.Conn
	ids *int32 // last requestID used
}

// on returns c for use in test t (a subtest).
func (c *testClient) on(t *testing.T) *testClient { return &testClient{t: t, nc: c.nc, ids: c.ids} }

// nextID returns a new requestID.
func (c *testClient) nextID() int32 { *c.ids++; return *c.ids }

func dialServer(t *testing.T, addr string) *testClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { _ = nc.Close() })
	ids := int32(100)
	return &testClient{t: t, nc: nc, ids: &ids}
}

func (c *testClient) send(frame []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read reads and decodes one frame.
func (c *testClient) read() ([]byte, Message) {
	c.t.Helper()
	frame, err := ReadFrame(c.nc, nil, MaxMessageSize)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	m, err := Decode(frame)
	if err != nil {
		c.t.Fatalf("decode reply: %v", err)
	}
	return frame, m
}

// replyDoc reads one reply and returns its document, checking its framing.
func (c *testClient) replyDoc(op OpCode, responseTo int32) bson.Raw {
	c.t.Helper()
	_, m := c.read()
	if cm, ok := m.(*Compressed); ok {
		c.t.Fatalf("unexpected compressed reply (compressor %d)", cm.CompressorID)
	}
	return checkReply(c.t, m, op, responseTo)
}

func checkReply(t *testing.T, m Message, op OpCode, responseTo int32) bson.Raw {
	t.Helper()
	if h := m.Hdr(); h.OpCode != op || h.ResponseTo != responseTo {
		t.Fatalf("reply header %+v, want opcode %v responseTo %d", *h, op, responseTo)
	}
	switch r := m.(type) {
	case *Reply:
		if r.NumberReturned != 1 || len(r.Documents) != 1 {
			t.Fatalf("OP_REPLY with %d documents", len(r.Documents))
		}
		return r.Documents[0]
	case *Msg:
		if len(r.Sections) != 1 {
			t.Fatalf("OP_MSG reply with %d sections", len(r.Sections))
		}
		return r.Body()
	}
	t.Fatalf("reply is %T", m)
	return nil
}

// command sends an OP_MSG with body doc and returns the reply document.
func (c *testClient) command(doc bson.D) bson.Raw {
	c.t.Helper()
	id := c.nextID()
	c.send(Encode(nil, &Msg{Header: Header{RequestID: id, OpCode: OpMsg}, Sections: []Section{{Kind: SectionBody, Documents: [][]byte{mustDoc(c.t, doc)}}}}))
	return c.replyDoc(OpMsg, id)
}

// ping checks that the connection still serves requests.
func (c *testClient) ping() {
	c.t.Helper()
	if doc := c.command(bson.D{{Key: "ping", Value: int32(1)}}); doc.Lookup("ok").Double() != 1 {
		c.t.Fatalf("ping reply %s", doc)
	}
}

// expectClosed reads until the server closes the connection; replies sent
// before the close are returned.
func (c *testClient) expectClosed() (replies int) {
	c.t.Helper()
	for {
		_, err := ReadFrame(c.nc, nil, MaxMessageSize)
		if err == nil {
			replies++
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return replies
		}
		c.t.Fatalf("connection not closed by the server: %v", err)
	}
}

func errmsg(doc bson.Raw) string {
	s, _ := doc.Lookup("errmsg").StringValueOK()
	return s
}

func TestServerMsgRoundTrip(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 0)
	c := dialServer(t, ts.addr)

	c.send(loadFrame(t, "msg_insert_seq"))
	doc := c.replyDoc(OpMsg, 4)
	if doc.Lookup("ok").Double() != 1 || doc.Lookup("opCode").Int32() != int32(OpMsg) || doc.Lookup("db").StringValue() != "" {
		t.Errorf("reply %s", doc)
	}
	if !bytes.Equal(doc.Lookup("echo").Document(), insertDoc(t, false)) {
		t.Errorf("echo %s", doc.Lookup("echo"))
	}
	if got := doc.Lookup("sequences").String(); got != `[{"id": "documents","n": {"$numberInt":"3"}}]` {
		t.Errorf("sequences %s", got)
	}

	// a second request on the same connection, with a larger body
	big := strings.Repeat("x", 100_000)
	d := c.command(bson.D{{Key: "echoBig", Value: big}})
	if d.Lookup("echo", "echoBig").StringValue() != big {
		t.Error("large echo differs")
	}
	c.send(loadFrame(t, "msg_find"))
	if doc := c.replyDoc(OpMsg, 3); !bytes.Equal(doc.Lookup("echo").Document(), findDoc(t)) {
		t.Errorf("echo %s", doc)
	}
	if s := ts.srv.Stats(); s.Current != 1 || s.TotalCreated != 1 || s.Rejected != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestServerQueryReply(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 0)
	c := dialServer(t, ts.addr)

	c.send(loadFrame(t, "query_hello"))
	doc := c.replyDoc(OpReply, 1)
	if doc.Lookup("opCode").Int32() != int32(OpQuery) || doc.Lookup("db").StringValue() != "admin" {
		t.Errorf("reply %s", doc)
	}
	if !bytes.Equal(doc.Lookup("echo").Document(), helloDoc(t)) {
		t.Errorf("echo %s", doc.Lookup("echo"))
	}
	if got := doc.Lookup("compression").String(); got != `["zstd","snappy","zlib"]` {
		t.Errorf("negotiated compression %s", got)
	}

	// {$query: {ping: 1}, $readPreference: ...} reaches the handler as {ping: 1}
	c.send(loadFrame(t, "query_wrapped"))
	doc = c.replyDoc(OpReply, 2)
	want := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
	if !bytes.Equal(doc.Lookup("echo").Document(), want) || doc.Lookup("db").StringValue() != "test" {
		t.Errorf("wrapped query: reply %s", doc)
	}
	// the older "query" spelling of the wrapper
	c.send(rawFrame(3, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0), le32(-1),
		mustDoc(t, bson.D{{Key: "query", Value: bson.D{{Key: "ping", Value: int32(1)}}}, {Key: "$maxTimeMS", Value: int32(5)}})))
	if doc := c.replyDoc(OpReply, 3); !bytes.Equal(doc.Lookup("echo").Document(), want) {
		t.Errorf("query wrapper: reply %s", doc)
	}

	// not a command namespace: an error document, the connection stays open
	c.send(rawFrame(4, 0, OpQuery, le32(0), cstr("test.coll"), le32(0), le32(1), want))
	doc = c.replyDoc(OpReply, 4)
	if doc.Lookup("ok").Double() != 0 || !strings.Contains(errmsg(doc), "only for commands") {
		t.Errorf("OP_QUERY on a collection: reply %s", doc)
	}
	// malformed OP_QUERY: answered as OP_REPLY with the error
	c.send(rawFrame(5, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0), le32(-1), want[:len(want)-1]))
	if doc := c.replyDoc(OpReply, 5); doc.Lookup("ok").Double() != 0 || !strings.Contains(errmsg(doc), "OP_QUERY query") {
		t.Errorf("malformed OP_QUERY: reply %s", doc)
	}
	c.ping()
}

func TestServerErrorReplies(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 0)
	c := dialServer(t, ts.addr)
	ping := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
	badQuery := cat(le32(0), cstr("admin.$cmd"), le32(0), le32(-1), ping[:5])
	tests := []struct {
		name  string
		frame []byte
		op    OpCode
		want  string
	}{
		{"unknown opcode", rawFrame(11, 0, 2010, ping), OpMsg, "unsupported opcode 2010"},
		{"OP_REPLY from a client", loadFrame(t, "reply_hello"), OpMsg, "clients may not send OP_REPLY"},
		{"two body sections", rawFrame(12, 0, OpMsg, le32(0), bodySection(ping), bodySection(ping)), OpMsg, "exactly one body section"},
		{"unknown required flag", rawFrame(13, 0, OpMsg, le32(1<<3), bodySection(ping)), OpMsg, "unknown required flag bits"},
		{"invalid BSON", rawFrame(14, 0, OpMsg, le32(0), bodySection(cat(le32(14), []byte{0x02, 'a', 0, 9, 0, 0, 0, 'x', 0, 0}))), OpMsg, "string length 9"},
		{"too deep", rawFrame(15, 0, OpMsg, le32(0), bodySection(nestedDoc(100_000, 0x03))), OpMsg, "nested deeper than 200"},
		{"compressed OP_QUERY with a bad document", compressedFrame(OpQuery, int32(len(badQuery)), CompressorNoop, badQuery), OpReply, "OP_QUERY query"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.frame[4:8]
			reqID := int32(h[0]) | int32(h[1])<<8 | int32(h[2])<<16 | int32(h[3])<<24
			c := c.on(t)
			c.send(tc.frame)
			doc := c.replyDoc(tc.op, reqID)
			if doc.Lookup("ok").Double() != 0 || !strings.Contains(errmsg(doc), tc.want) {
				t.Errorf("reply %s, want an error containing %q", doc, tc.want)
			}
			c.ping()
		})
	}
}

func TestServerMoreToCome(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 0)
	c := dialServer(t, ts.addr)

	c.send(loadFrame(t, "msg_more_to_come"))
	// A malformed request with moreToCome gets no reply either.
	ping := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
	c.send(rawFrame(7, 0, OpMsg, le32(int32(FlagMoreToCome)), bodySection(ping), bodySection(ping)))
	c.send(loadFrame(t, "msg_find"))
	// The first reply must answer msg_find (requestID 3).
	doc := c.replyDoc(OpMsg, 3)
	if !bytes.Equal(doc.Lookup("echo").Document(), findDoc(t)) {
		t.Errorf("reply %s", doc)
	}
	seen := h.requests()
	if len(seen) != 3 || !seen[0].MoreToCome || !bytes.Equal(seen[0].Body, insertDoc(t, true)) ||
		!seen[1].MoreToCome || seen[1].Err == nil || seen[2].MoreToCome {
		t.Errorf("handler saw %+v", seen)
	}
	c.ping()
}

func TestServerChecksum(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 0)
	c := dialServer(t, ts.addr)

	c.send(loadFrame(t, "msg_checksum"))
	frame, m := c.read() // Decode verifies the checksum
	msg := checkReply(t, m, OpMsg, 5)
	if got := m.(*Msg); got.Flags != FlagChecksumPresent || got.Checksum != crc32c(frame[:len(frame)-4]) {
		t.Errorf("reply flags %#x checksum %#08x", got.Flags, got.Checksum)
	}
	if !bytes.Equal(msg.Lookup("echo").Document(), findDoc(t)) {
		t.Errorf("reply %s", msg)
	}

	// A request without checksum gets a reply without one.
	c.send(loadFrame(t, "msg_find"))
	if _, m := c.read(); m.(*Msg).Flags != 0 {
		t.Errorf("reply flags %#x, want 0", m.(*Msg).Flags)
	}

	// A bad checksum is answered with an error; the connection stays open.
	bad := loadFrame(t, "msg_checksum")
	bad[len(bad)-2] ^= 0x40
	c.send(bad)
	if doc := c.replyDoc(OpMsg, 5); doc.Lookup("ok").Double() != 0 || !strings.Contains(errmsg(doc), "checksum mismatch") {
		t.Errorf("bad checksum: reply %s", doc)
	}
	c.ping()
}

func TestServerCompression(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 0)
	ping := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
	for _, comp := range allCompressors[1:] {
		t.Run(comp.name, func(t *testing.T) {
			c := dialServer(t, ts.addr)
			hello := &Query{Header: Header{RequestID: 1, OpCode: OpQuery}, FullCollectionName: "admin.$cmd", NumberToReturn: -1,
				Query: mustDoc(t, bson.D{{Key: "isMaster", Value: int32(1)}, {Key: "compression", Value: bson.A{"lz4", comp.name}}})}
			c.send(Encode(nil, hello))
			if doc := c.replyDoc(OpReply, 1); doc.Lookup("compression").String() != `["`+comp.name+`"]` {
				t.Fatalf("hello reply %s", doc)
			}
			for _, req := range []Message{
				&Msg{Header: Header{RequestID: 2, OpCode: OpMsg}, Sections: []Section{{Kind: SectionBody, Documents: [][]byte{ping}}}},
				decodeFrame(t, loadFrame(t, "msg_insert_seq")),
				// a checksum inside a compressed message: the reply has none
				decodeFrame(t, loadFrame(t, "msg_checksum")),
			} {
				id := req.Hdr().RequestID
				c.send(Compress(nil, comp.id, req))
				_, m := c.read()
				cm, ok := m.(*Compressed)
				if !ok {
					t.Fatalf("request %d: reply is %T, want *Compressed", id, m)
				}
				if cm.CompressorID != comp.id || cm.OriginalOpCode != OpMsg {
					t.Errorf("request %d: reply compressor %d, opcode %v", id, cm.CompressorID, cm.OriginalOpCode)
				}
				inner, err := cm.Open()
				if err != nil {
					t.Fatalf("request %d: Open: %v", id, err)
				}
				doc := checkReply(t, inner, OpMsg, id)
				if inner.(*Msg).Flags != 0 || !bytes.Equal(doc.Lookup("echo").Document(), req.(*Msg).Body()) {
					t.Errorf("request %d: reply flags %#x, %s", id, inner.(*Msg).Flags, doc)
				}
			}
			// A compressor the client did not offer is answered uncompressed,
			// and so is noop.
			for _, other := range allCompressors {
				if other.id == comp.id {
					continue
				}
				c.send(Compress(nil, other.id, &Msg{Header: Header{RequestID: 9, OpCode: OpMsg}, Sections: []Section{{Kind: SectionBody, Documents: [][]byte{ping}}}}))
				if doc := c.replyDoc(OpMsg, 9); doc.Lookup("ok").Double() != 1 {
					t.Errorf("%s request: reply %s", other.name, doc)
				}
			}
		})
	}

	t.Run("not negotiated", func(t *testing.T) {
		c := dialServer(t, ts.addr)
		c.send(Compress(nil, CompressorZstd, &Msg{Header: Header{RequestID: 3, OpCode: OpMsg}, Sections: []Section{{Kind: SectionBody, Documents: [][]byte{ping}}}}))
		if doc := c.replyDoc(OpMsg, 3); doc.Lookup("ok").Double() != 1 {
			t.Errorf("reply %s", doc)
		}
	})
}

// TestServerBadInput sends frames that cannot be trusted: the server closes
// that connection and keeps serving the others.
func TestServerBadInput(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 0)
	other := dialServer(t, ts.addr)
	other.ping()

	body := loadFrame(t, "msg_insert_seq")[HeaderSize:]
	tests := []struct {
		name      string
		data      []byte
		halfClose bool // the server waits for more data: close our side
	}{
		{"HTTP request", []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"), false},
		{"random bytes", []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, false},
		{"length 0", make([]byte, 16), false},
		{"length 15", cat(le32(15), make([]byte, 12)), false},
		{"length negative", cat(le32(-16), make([]byte, 12)), false},
		{"length over the max", cat(le32(MaxMessageSize+1), make([]byte, 12)), false},
		{"length longer than the data", cat(le32(1000), le32(1), le32(0), le32(int32(OpMsg)), make([]byte, 100)), true},
		{"length shorter than the message", cat(setLength(loadFrame(t, "msg_find"), 20)), true},
		{"truncated header", []byte{16, 0, 0, 0, 1, 0}, true},
		{"OP_COMPRESSED wrapping OP_COMPRESSED", compressedFrame(OpCompressed, int32(len(body)), CompressorNoop, body), false},
		{"OP_COMPRESSED size lie", compressedFrame(OpMsg, int32(len(body))+1, CompressorSnappy, deflate(t, CompressorSnappy, body)), false},
		{"OP_COMPRESSED corrupt zstd", compressedFrame(OpMsg, int32(len(body)), CompressorZstd, []byte("(\xb5/\xfd garbage")), false},
		{"OP_COMPRESSED too short", rawFrame(1, 0, OpCompressed, []byte{1, 2, 3}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dialServer(t, ts.addr)
			c.send(tc.data)
			if tc.halfClose {
				_ = c.nc.(*net.TCPConn).CloseWrite()
			}
			c.expectClosed()
			other.on(t).ping()
		})
	}
	// a connection opened after all that works too
	dialServer(t, ts.addr).ping()
	// every closed connection was released
	waitFor(t, func() bool { return ts.srv.Stats().Current == 2 })
	if n := h.connects.Load(); h.closes.Load() != n-2 {
		t.Errorf("%d connects, %d closes", n, h.closes.Load())
	}
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServerRefusesHugeLength(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 0)
	c := dialServer(t, ts.addr)
	c.ping()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c.send(cat(le32(50_000_000), le32(1), le32(0), le32(int32(OpMsg)), make([]byte, 100)))
	c.expectClosed()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("refusing a 50 MB length allocated %d bytes", grew)
	}
	dialServer(t, ts.addr).ping()
}

func TestServerMaxConnections(t *testing.T) {
	h := newTestHandler()
	ts := startServer(t, h, 2)
	if ts.srv.MaxConnections() != 2 {
		t.Errorf("MaxConnections = %d", ts.srv.MaxConnections())
	}
	c1 := dialServer(t, ts.addr)
	c1.ping()
	c2 := dialServer(t, ts.addr)
	c2.ping()

	c3 := dialServer(t, ts.addr)
	c3.send(loadFrame(t, "msg_find"))
	if n := c3.expectClosed(); n != 0 {
		t.Errorf("refused connection got %d replies", n)
	}
	if s := ts.srv.Stats(); s.Current != 2 || s.Rejected != 1 || s.TotalCreated != 2 {
		t.Errorf("stats %+v", s)
	}
	c1.ping()
	c2.ping()

	// Once a connection ends, a new one is accepted.
	_ = c1.nc.Close()
	waitFor(t, func() bool { return ts.srv.Stats().Current == 1 })
	c4 := dialServer(t, ts.addr)
	c4.ping()
	if s := ts.srv.Stats(); s.Current != 2 || s.Rejected != 1 || s.TotalCreated != 3 {
		t.Errorf("stats %+v", s)
	}
	if h.connects.Load() != 3 {
		t.Errorf("Connect called %d times, want 3", h.connects.Load())
	}
}

func TestServerShutdownWaitsForInFlight(t *testing.T) {
	h := newTestHandler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(h, slog.New(slog.DiscardHandler), 0)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()

	busy := dialServer(t, addr)
	idle := dialServer(t, addr)
	idle.ping()
	busy.ping()

	blockID := busy.nextID()
	busy.send(Encode(nil, &Msg{Header: Header{RequestID: blockID, OpCode: OpMsg},
		Sections: []Section{{Kind: SectionBody, Documents: [][]byte{mustDoc(t, bson.D{{Key: "block", Value: int32(1)}})}}}}))
	<-h.started

	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdown <- srv.Shutdown(ctx)
	}()

	// The idle connection is closed at once, the listener too.
	idle.expectClosed()
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve returned %v", err)
	}
	if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = nc.Close()
		t.Error("the listener still accepts connections")
	}
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned %v while a request was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(h.release)
	if doc := busy.replyDoc(OpMsg, blockID); doc.Lookup("ok").Double() != 1 {
		t.Errorf("in-flight request: reply %s", doc)
	}
	select {
	case err := <-shutdown:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after the request finished")
	}
	busy.expectClosed()
	if s := srv.Stats(); s.Current != 0 {
		t.Errorf("stats after shutdown %+v", s)
	}
	if h.connects.Load() != 2 || h.closes.Load() != 2 {
		t.Errorf("%d connects, %d closes", h.connects.Load(), h.closes.Load())
	}
	if err := srv.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Shutdown = %v", err)
	}
}

// TestServerShutdownDeadline: when ctx expires, Shutdown closes the
// remaining connections and cancels their handlers' contexts.
func TestServerShutdownDeadline(t *testing.T) {
	h := newTestHandler()
	defer close(h.release) // in case Shutdown does not cancel the handler
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(h, slog.New(slog.DiscardHandler), 0)
	go func() { _ = srv.Serve(ln) }()
	c := dialServer(t, ln.Addr().String())
	c.send(Encode(nil, &Msg{Header: Header{RequestID: 1, OpCode: OpMsg},
		Sections: []Section{{Kind: SectionBody, Documents: [][]byte{mustDoc(t, bson.D{{Key: "block", Value: int32(1)}})}}}}))
	<-h.started

	shutdown := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		shutdown <- srv.Shutdown(ctx)
	}()
	select {
	case err := <-shutdown:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Errorf("Shutdown returned after %v, before its deadline", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after its deadline: the blocked handler's context was not canceled")
	}
	c.expectClosed()
}
