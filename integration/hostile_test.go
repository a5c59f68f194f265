package integration

// Hostile input on raw TCP sockets against a real server. After every case
// the test proves that the server is still up: a driver client connected
// before the attack still pings, inserts and finds, and a new client can
// connect and do the same.

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// hsTimeout bounds every raw socket read and write, and every driver call.
const hsTimeout = 5 * time.Second

// hostileEnv is one server and a driver client connected before any attack.
type hostileEnv struct {
	s      *Server
	before *mongo.Client
	n      int // documents inserted by health checks
}

func newHostileEnv(t *testing.T) *hostileEnv {
	t.Helper()
	s := StartServer(t, ServerOptions{})
	c := hsConnect(t, s)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	env := &hostileEnv{s: s, before: c}
	env.healthy(t)
	return env
}

func hsConnect(t *testing.T, s *Server) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(s.URI()).
		SetServerSelectionTimeout(hsTimeout).SetConnectTimeout(hsTimeout).SetTimeout(hsTimeout))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c
}

// healthy proves the server still serves: the old client pings, inserts and
// finds; a new client connects and does the same.
func (env *hostileEnv) healthy(t *testing.T) {
	t.Helper()
	select {
	case err := <-env.s.done:
		env.s.done <- err // leave it for Stop
		t.Fatalf("server stopped serving: %v", err)
	default:
	}
	check := func(who string, c *mongo.Client) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*hsTimeout)
		defer cancel()
		if err := c.Ping(ctx, nil); err != nil {
			t.Fatalf("%s client: ping: %v", who, err)
		}
		env.n++
		id := env.n
		coll := c.Database("hostile").Collection("alive")
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "who", Value: who}}); err != nil {
			t.Fatalf("%s client: insert: %v", who, err)
		}
		var got bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil {
			t.Fatalf("%s client: find: %v", who, err)
		}
		if got["who"] != who {
			t.Fatalf("%s client: find returned %v", who, got)
		}
	}
	check("old", env.before)
	c := hsConnect(t, env.s)
	defer func() { _ = c.Disconnect(context.Background()) }()
	check("new", c)
}

// ---- raw sockets ----

type hsConn struct {
	t  *testing.T
	nc net.Conn
	id int32
}

func (env *hostileEnv) dial(t *testing.T) *hsConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", env.s.Addr, hsTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &hsConn{t: t, nc: nc, id: 100}
}

func (c *hsConn) nextID() int32 { c.id++; return c.id }

// write sends b; errors are returned, since the server may legitimately
// have closed the connection.
func (c *hsConn) write(b []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(hsTimeout))
	_, err := c.nc.Write(b)
	return err
}

func (c *hsConn) mustWrite(b []byte) {
	c.t.Helper()
	if err := c.write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// closeWrite half-closes the connection: the server sees EOF.
func (c *hsConn) closeWrite() {
	c.t.Helper()
	if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
		c.t.Fatalf("CloseWrite: %v", err)
	}
}

// readFrame reads one frame within hsTimeout.
func (c *hsConn) readFrame(timeout time.Duration) ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	return wire.ReadFrame(c.nc, nil, wire.MaxMessageSize)
}

func hsIsTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

func hsIsClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// hsDecodeReply decodes a reply frame to its header and single document.
func hsDecodeReply(t *testing.T, frame []byte) (wire.Header, bson.Raw) {
	t.Helper()
	m, err := wire.Decode(frame)
	if err != nil {
		t.Fatalf("server sent an undecodable frame: %v\n% x", err, frame[:min(len(frame), 64)])
	}
	if cm, ok := m.(*wire.Compressed); ok {
		if m, err = cm.Open(); err != nil {
			t.Fatalf("server sent an undecodable OP_COMPRESSED: %v", err)
		}
	}
	var doc []byte
	switch mm := m.(type) {
	case *wire.Msg:
		if len(mm.Sections) != 1 {
			t.Fatalf("reply has %d sections", len(mm.Sections))
		}
		doc = mm.Body()
	case *wire.Reply:
		if len(mm.Documents) != 1 {
			t.Fatalf("OP_REPLY has %d documents", len(mm.Documents))
		}
		doc = mm.Documents[0]
	default:
		t.Fatalf("server replied with %T", m)
	}
	if err := bson.Raw(doc).Validate(); err != nil {
		t.Fatalf("reply document is invalid BSON: %v", err)
	}
	return *m.Hdr(), bson.Raw(doc)
}

// reply reads the reply to request id.
func (c *hsConn) reply(id int32) bson.Raw {
	c.t.Helper()
	frame, err := c.readFrame(hsTimeout)
	if err != nil {
		c.t.Fatalf("want a reply to request %d: %v", id, err)
	}
	h, doc := hsDecodeReply(c.t, frame)
	if h.ResponseTo != id {
		c.t.Fatalf("reply responseTo %d, want %d: %v", h.ResponseTo, id, doc)
	}
	return doc
}

// hsCheckErrorDoc asserts doc is {ok: 0, errmsg, code, codeName}.
func hsCheckErrorDoc(t *testing.T, doc bson.Raw) {
	t.Helper()
	ok, err := doc.LookupErr("ok")
	if err != nil {
		t.Fatalf("error reply has no ok: %v", doc)
	}
	if f, isNum := ok.AsFloat64OK(); !isNum || f != 0 {
		t.Fatalf("want ok: 0, got %v", doc)
	}
	if s, isStr := doc.Lookup("errmsg").StringValueOK(); !isStr || s == "" {
		t.Fatalf("error reply without errmsg: %v", doc)
	}
	if code, isInt := doc.Lookup("code").AsInt64OK(); !isInt || code == 0 {
		t.Fatalf("error reply without code: %v", doc)
	}
	if s, isStr := doc.Lookup("codeName").StringValueOK(); !isStr || s == "" {
		t.Fatalf("error reply without codeName: %v", doc)
	}
}

// expectError reads the reply to request id and asserts it is an error.
func (c *hsConn) expectError(id int32) bson.Raw {
	c.t.Helper()
	doc := c.reply(id)
	hsCheckErrorDoc(c.t, doc)
	return doc
}

// expectClosed asserts the server closes the connection without replying.
func (c *hsConn) expectClosed() {
	c.t.Helper()
	frame, err := c.readFrame(hsTimeout)
	switch {
	case err == nil:
		_, doc := hsDecodeReply(c.t, frame)
		c.t.Fatalf("want the connection closed, got a reply: %v", doc)
	case hsIsTimeout(err):
		c.t.Fatalf("server neither replied nor closed the connection within %v", hsTimeout)
	case !hsIsClosed(err):
		c.t.Fatalf("want the connection closed, got %v", err)
	}
}

// expectErrorOrClosed accepts an error reply to id (after which the
// connection must still work) or a closed connection. It reports whether
// the connection is still open.
func (c *hsConn) expectErrorOrClosed(id int32) bool {
	c.t.Helper()
	frame, err := c.readFrame(hsTimeout)
	switch {
	case err == nil:
		h, doc := hsDecodeReply(c.t, frame)
		if h.ResponseTo != id {
			c.t.Fatalf("reply responseTo %d, want %d: %v", h.ResponseTo, id, doc)
		}
		hsCheckErrorDoc(c.t, doc)
		c.t.Logf("error reply: %v", doc)
		c.ping()
		return true
	case hsIsTimeout(err):
		c.t.Fatalf("server neither replied nor closed the connection within %v", hsTimeout)
	case !hsIsClosed(err):
		c.t.Fatalf("want an error reply or a closed connection, got %v", err)
	}
	c.t.Logf("connection closed: %v", err)
	return false
}

// ping runs {ping: 1} on the connection and asserts ok: 1.
func (c *hsConn) ping() {
	c.t.Helper()
	id := c.nextID()
	c.mustWrite(hsEncodeMsg(id, 0, hsDoc(c.t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})))
	doc := c.reply(id)
	if f, _ := doc.Lookup("ok").AsFloat64OK(); f != 1 {
		c.t.Fatalf("ping after hostile input: %v", doc)
	}
}

// ---- frames ----

func hsDoc(t *testing.T, d bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hsEncodeMsg is a well-formed OP_MSG with one body section, via wire.Encode.
func hsEncodeMsg(id int32, flags uint32, body []byte) []byte {
	return wire.Encode(nil, &wire.Msg{
		Header:   wire.Header{RequestID: id, OpCode: wire.OpMsg},
		Flags:    flags,
		Sections: []wire.Section{{Kind: wire.SectionBody, Documents: [][]byte{body}}},
	})
}

// hsFrame builds a frame by hand with a correct messageLength.
func hsFrame(id int32, op wire.OpCode, parts ...[]byte) []byte {
	b := make([]byte, wire.HeaderSize)
	for _, p := range parts {
		b = append(b, p...)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(id))
	binary.LittleEndian.PutUint32(b[12:], uint32(op))
	return b
}

// hsHeader is a bare header claiming length n.
func hsHeader(n, id int32, op wire.OpCode) []byte {
	b := make([]byte, wire.HeaderSize)
	binary.LittleEndian.PutUint32(b, uint32(n))
	binary.LittleEndian.PutUint32(b[4:], uint32(id))
	binary.LittleEndian.PutUint32(b[12:], uint32(op))
	return b
}

func hsLE32(v int32) []byte  { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
func hsU32(v uint32) []byte  { return binary.LittleEndian.AppendUint32(nil, v) }
func hsCstr(s string) []byte { return append([]byte(s), 0) }
func hsCat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

// hsWithLen is a document made of elems (which must include the terminating
// zero) with a correct length prefix.
func hsWithLen(elems ...byte) []byte { return hsCat(hsLE32(int32(4+len(elems))), elems) }

func hsBodySec(doc []byte) []byte { return hsCat([]byte{wire.SectionBody}, doc) }

// hsSeqSec is a kind-1 section with a correct size.
func hsSeqSec(id string, docs ...[]byte) []byte {
	payload := hsCat(append([][]byte{hsCstr(id)}, docs...)...)
	return hsSeqSecSized(id, int32(4+len(payload)), docs...)
}

// hsSeqSecSized is a kind-1 section claiming size.
func hsSeqSecSized(id string, size int32, docs ...[]byte) []byte {
	payload := hsCat(append([][]byte{hsCstr(id)}, docs...)...)
	return hsCat([]byte{wire.SectionSequence}, hsLE32(size), payload)
}

// hsNested is {k: {k: ... {}}} (typ 0x03) or {k: [[...]]} (typ 0x04), depth
// levels deep counting the outermost document as level 1. Built
// iteratively: 100,000 levels must not need recursion here either.
func hsNested(depth int, typ byte) []byte {
	const step = 4 + 3 + 1 // length, type + "a\0" (or "0\0"), terminator
	b := make([]byte, 0, 5+step*(depth-1))
	for level := 1; level < depth; level++ {
		key := byte('a')
		if typ == 0x04 && level > 1 {
			key = '0' // array elements are keyed "0"
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(5+step*(depth-level)))
		b = append(b, typ, key, 0)
	}
	b = append(b, 5, 0, 0, 0, 0)
	for level := 1; level < depth; level++ {
		b = append(b, 0)
	}
	return b
}

// hsNestedNamed is like hsNested(depth, 0x03) with every field named name.
func hsNestedNamed(depth int, name []byte) []byte {
	step := 4 + 1 + len(name) + 1 + 1 // length, type, name, terminator
	b := make([]byte, 0, 5+step*(depth-1))
	for level := 1; level < depth; level++ {
		b = binary.LittleEndian.AppendUint32(b, uint32(5+step*(depth-level)))
		b = append(b, 0x03)
		b = append(b, name...)
		b = append(b, 0)
	}
	b = append(b, 5, 0, 0, 0, 0)
	for level := 1; level < depth; level++ {
		b = append(b, 0)
	}
	return b
}

// hsAllocDuring reports the bytes allocated in this process while f runs.
func hsAllocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// ---- the test ----

func TestHostileInput(t *testing.T) {
	env := newHostileEnv(t)
	ping := func(t *testing.T) []byte {
		return hsDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	}
	// run runs one case in a subtest and then proves the server healthy.
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			f(t)
			env.healthy(t)
		})
	}

	run("garbage/random-bytes", func(t *testing.T) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := range 30 {
			c := env.dial(t)
			b := make([]byte, 1+rng.IntN(4096))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			if i%3 == 0 { // a length the server accepts, so it reads on
				binary.LittleEndian.PutUint32(b, uint32(wire.HeaderSize+rng.IntN(8192)))
			}
			_ = c.write(b)
			// The server may already have reset the connection.
			_ = c.nc.(*net.TCPConn).CloseWrite()
			// Whatever frames the garbage happened to form, the server must
			// end the connection once it sees EOF.
			for range 100 {
				frame, err := c.readFrame(hsTimeout)
				if err == nil {
					hsDecodeReply(t, frame)
					continue
				}
				if hsIsTimeout(err) {
					t.Fatalf("round %d: server did not close a half-closed connection after garbage", i)
				}
				break
			}
		}
	})

	run("garbage/random-bodies-in-valid-frames", func(t *testing.T) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 2))
		ops := []wire.OpCode{wire.OpMsg, wire.OpQuery, wire.OpCompressed, wire.OpReply, 2002, 9999}
		c := env.dial(t)
		for range 60 {
			body := make([]byte, rng.IntN(512))
			for j := range body {
				body[j] = byte(rng.Uint32())
			}
			op := ops[rng.IntN(len(ops))]
			if op == wire.OpMsg && len(body) >= 4 {
				body[0] &^= byte(wire.FlagMoreToCome) // want a reply
			}
			id := c.nextID()
			if err := c.write(hsFrame(id, op, body)); err != nil {
				c = env.dial(t)
				continue
			}
			if !c.expectErrorOrClosed(id) {
				c = env.dial(t)
			}
		}
	})

	// ---- truncated frames ----

	run("truncated/header-only-then-close", func(t *testing.T) {
		c := env.dial(t)
		c.mustWrite(hsHeader(100, c.nextID(), wire.OpMsg))
		_ = c.nc.Close()
	})
	run("truncated/header-only-then-eof", func(t *testing.T) {
		c := env.dial(t)
		c.mustWrite(hsHeader(100, c.nextID(), wire.OpMsg))
		c.closeWrite()
		c.expectClosed()
	})
	run("truncated/partial-header-then-eof", func(t *testing.T) {
		c := env.dial(t)
		c.mustWrite(hsHeader(100, c.nextID(), wire.OpMsg)[:7])
		c.closeWrite()
		c.expectClosed()
	})
	run("truncated/half-body-then-close", func(t *testing.T) {
		c := env.dial(t)
		f := hsEncodeMsg(c.nextID(), 0, ping(t))
		c.mustWrite(f[:wire.HeaderSize+(len(f)-wire.HeaderSize)/2])
		_ = c.nc.Close()
	})
	run("truncated/half-body-then-eof", func(t *testing.T) {
		c := env.dial(t)
		f := hsEncodeMsg(c.nextID(), 0, ping(t))
		c.mustWrite(f[:wire.HeaderSize+(len(f)-wire.HeaderSize)/2])
		c.closeWrite()
		c.expectClosed()
	})
	run("truncated/valid-frame-then-half-frame", func(t *testing.T) {
		c := env.dial(t)
		id := c.nextID()
		f := hsEncodeMsg(id, 0, ping(t))
		c.mustWrite(hsCat(f, f[:len(f)-3]))
		if doc := c.reply(id); doc.Lookup("ok").Double() != 1 {
			t.Fatalf("ping: %v", doc)
		}
		c.closeWrite()
		c.expectClosed()
	})

	// ---- lying lengths ----

	for _, n := range []int32{0, 1, 4, 15, -1, -16, math.MinInt32} {
		run(fmt.Sprintf("length/%d", n), func(t *testing.T) {
			c := env.dial(t)
			f := hsEncodeMsg(c.nextID(), 0, ping(t))
			binary.LittleEndian.PutUint32(f, uint32(n))
			_ = c.write(f)
			c.expectClosed()
		})
	}

	run("length/larger-than-sent-idle", func(t *testing.T) {
		// Several connections each stuck mid-frame must not stop anyone else.
		var idle []*hsConn
		var rests [][]byte
		var ids []int32
		for range 3 {
			c := env.dial(t)
			id := c.nextID()
			f := hsEncodeMsg(id, 0, ping(t))
			c.mustWrite(f[:len(f)-5])
			idle, rests, ids = append(idle, c), append(rests, f[len(f)-5:]), append(ids, id)
		}
		stuck := env.dial(t) // promises 1000 bytes, sends 16
		stuck.mustWrite(hsHeader(1000, stuck.nextID(), wire.OpMsg))
		idle = append(idle, stuck)
		env.healthy(t) // while they hang
		// The server was waiting, not gone: nothing came back yet...
		for _, c := range idle {
			if _, err := c.readFrame(100 * time.Millisecond); !hsIsTimeout(err) {
				t.Fatalf("server answered or closed a connection mid-frame: %v", err)
			}
		}
		// ...and completing the frames gets them answered.
		for i, c := range idle[:len(rests)] {
			c.mustWrite(rests[i])
			if doc := c.reply(ids[i]); doc.Lookup("ok").Double() != 1 {
				t.Fatalf("completed ping: %v", doc)
			}
		}
	})

	run("length/50MB-prefix-refused-without-allocating", func(t *testing.T) {
		var c *hsConn
		alloc := hsAllocDuring(func() {
			c = env.dial(t)
			_ = c.write(hsHeader(50_000_000, c.nextID(), wire.OpMsg))
			c.expectClosed()
		})
		if alloc > 8<<20 {
			t.Fatalf("refusing a 50 MB length prefix allocated %d bytes", alloc)
		}
	})

	run("length/just-over-max", func(t *testing.T) {
		c := env.dial(t)
		_ = c.write(hsHeader(wire.MaxMessageSize+1, c.nextID(), wire.OpMsg))
		c.expectClosed()
	})

	run("length/50MB-frame-sent", func(t *testing.T) {
		c := env.dial(t)
		const total = 50_000_000
		chunk := make([]byte, 1<<20)
		copy(chunk, hsHeader(total, c.nextID(), wire.OpMsg))
		deadline := time.Now().Add(hsTimeout)
		_ = c.nc.SetWriteDeadline(deadline)
		sent, werr := 0, error(nil)
		for sent < total && werr == nil {
			var n int
			n, werr = c.nc.Write(chunk[:min(len(chunk), total-sent)])
			sent += n
			clear(chunk[:wire.HeaderSize])
		}
		if werr != nil && !hsIsClosed(werr) {
			t.Fatalf("write after %d bytes: %v (the server should have closed the connection)", sent, werr)
		}
		c.expectClosed()
	})

	// ---- checksums and flags ----

	run("checksum/bad-crc32c", func(t *testing.T) {
		c := env.dial(t)
		id := c.nextID()
		f := hsEncodeMsg(id, wire.FlagChecksumPresent, ping(t))
		f[len(f)-1] ^= 0xff
		c.mustWrite(f)
		c.expectError(id)
		c.ping()
	})
	run("checksum/flag-without-checksum", func(t *testing.T) {
		c := env.dial(t)
		id := c.nextID()
		c.mustWrite(hsFrame(id, wire.OpMsg, hsU32(wire.FlagChecksumPresent)))
		c.expectError(id)
		c.ping()
	})
	run("checksum/good-crc32c", func(t *testing.T) {
		c := env.dial(t)
		id := c.nextID()
		f := hsEncodeMsg(id, wire.FlagChecksumPresent, ping(t))
		if got := binary.LittleEndian.Uint32(f[len(f)-4:]); got != crc32.Checksum(f[:len(f)-4], crc32.MakeTable(crc32.Castagnoli)) {
			t.Fatalf("wire.Encode checksum %#x is wrong", got)
		}
		c.mustWrite(f)
		if doc := c.reply(id); doc.Lookup("ok").Double() != 1 {
			t.Fatalf("ping with checksum: %v", doc)
		}
	})
	run("flags/unknown-required-bit", func(t *testing.T) {
		c := env.dial(t)
		id := c.nextID()
		c.mustWrite(hsEncodeMsg(id, 1<<5, ping(t)))
		c.expectError(id)
		c.ping()
	})
	run("flags/moreToCome-with-bad-body-gets-no-reply", func(t *testing.T) {
		c := env.dial(t)
		bad := hsFrame(c.nextID(), wire.OpMsg, hsU32(wire.FlagMoreToCome), hsBodySec([]byte{200, 0, 0, 0, 0}))
		c.mustWrite(bad)
		c.ping() // the next frame read must be the ping's reply
	})

	// ---- opcodes ----

	opcodeCases := []struct {
		name string
		op   wire.OpCode
		body func(t *testing.T) []byte
	}{
		{"9999", 9999, func(t *testing.T) []byte { return hsCat(hsU32(0), hsBodySec(ping(t))) }},
		{"empty-9999", 9999, func(t *testing.T) []byte { return nil }},
		{"negative", -1, func(t *testing.T) []byte { return hsCat(hsU32(0), hsBodySec(ping(t))) }},
		{"OP_REPLY", wire.OpReply, func(t *testing.T) []byte {
			return hsCat(hsLE32(0), make([]byte, 8), hsLE32(0), hsLE32(1), hsDoc(t, bson.D{{Key: "ok", Value: 1.0}}))
		}},
		{"OP_REPLY-short", wire.OpReply, func(t *testing.T) []byte { return []byte{1, 2, 3} }},
		{"OP_INSERT", 2002, func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("hostile.legacy"), hsDoc(t, bson.D{{Key: "_id", Value: 1}}))
		}},
		{"OP_UPDATE", 2001, func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("hostile.legacy"), hsLE32(0), hsDoc(t, bson.D{}), hsDoc(t, bson.D{}))
		}},
		{"OP_GET_MORE", 2005, func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("hostile.legacy"), hsLE32(0), make([]byte, 8))
		}},
		{"OP_KILL_CURSORS", 2007, func(t *testing.T) []byte { return hsCat(hsLE32(0), hsLE32(1), make([]byte, 8)) }},
	}
	for _, tc := range opcodeCases {
		run("opcode/"+tc.name, func(t *testing.T) {
			c := env.dial(t)
			id := c.nextID()
			c.mustWrite(hsFrame(id, tc.op, tc.body(t)))
			c.expectErrorOrClosed(id)
		})
	}
	run("opcode/OP_INSERT-inserts-nothing", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
		defer cancel()
		n, err := hsCount(ctx, env.before.Database("hostile").Collection("legacy"))
		if err != nil || n != 0 {
			t.Fatalf("legacy OP_INSERT stored documents: n=%d err=%v", n, err)
		}
	})

	// ---- OP_QUERY ----

	queryCases := []struct {
		name string
		body func(t *testing.T) []byte
	}{
		{"not-a-command-namespace", func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("hostile.coll"), hsLE32(0), hsLE32(1), hsDoc(t, bson.D{{Key: "ping", Value: 1}}))
		}},
		{"no-dot", func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("admin"), hsLE32(0), hsLE32(1), hsDoc(t, bson.D{{Key: "ping", Value: 1}}))
		}},
		{"huge-namespace", func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr(string(bytes.Repeat([]byte{1}, 1<<20))), hsLE32(0), hsLE32(1), hsDoc(t, bson.D{{Key: "ping", Value: 1}}))
		}},
		{"unterminated-namespace", func(t *testing.T) []byte { return hsCat(hsLE32(0), []byte("admin.$cmd")) }},
		{"no-query-document", func(t *testing.T) []byte { return hsCat(hsLE32(0), hsCstr("admin.$cmd"), hsLE32(0), hsLE32(1)) }},
		{"query-length-lies", func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("admin.$cmd"), hsLE32(0), hsLE32(1), hsLE32(500), []byte{0x10, 'p', 0, 1, 0, 0, 0, 0})
		}},
		{"trailing-garbage", func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("admin.$cmd"), hsLE32(0), hsLE32(1), hsDoc(t, bson.D{{Key: "ping", Value: 1}}), []byte{1, 2, 3})
		}},
		{"empty-query", func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("admin.$cmd"), hsLE32(0), hsLE32(1), hsDoc(t, bson.D{}))
		}},
		{"$query-empty", func(t *testing.T) []byte {
			return hsCat(hsLE32(0), hsCstr("admin.$cmd"), hsLE32(0), hsLE32(1), hsDoc(t, bson.D{{Key: "$query", Value: bson.D{}}}))
		}},
		{"$query-too-deep", func(t *testing.T) []byte {
			q := bsoncore.NewDocumentBuilder().AppendDocument("$query", hsNested(1000, 0x03)).Build()
			return hsCat(hsLE32(0), hsCstr("admin.$cmd"), hsLE32(0), hsLE32(1), q)
		}},
	}
	for _, tc := range queryCases {
		run("opquery/"+tc.name, func(t *testing.T) {
			c := env.dial(t)
			id := c.nextID()
			f := hsFrame(id, wire.OpQuery, tc.body(t))
			c.mustWrite(f)
			if doc := c.expectError(id); len(doc) > 64<<10 {
				t.Fatalf("a %d-byte request got a %d-byte error reply", len(f), len(doc))
			}
			c.ping()
		})
	}

	// ---- OP_MSG sections ----

	insertBody := func(t *testing.T) []byte {
		return hsDoc(t, bson.D{{Key: "insert", Value: "sections"}, {Key: "$db", Value: "hostile"}})
	}
	good := func(t *testing.T) []byte { return hsDoc(t, bson.D{{Key: "_id", Value: "s"}}) }
	sectionCases := []struct {
		name     string
		sections func(t *testing.T) []byte
	}{
		{"header-and-nothing-else", func(t *testing.T) []byte { return nil }},
		{"flags-only", func(t *testing.T) []byte { return hsU32(0) }},
		{"zero-body-sections", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsSeqSec("documents", good(t)))
		}},
		{"two-body-sections", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(ping(t)), hsBodySec(ping(t)))
		}},
		{"kind-2", func(t *testing.T) []byte { return hsCat(hsU32(0), hsBodySec(ping(t)), []byte{2}, ping(t)) }},
		{"kind-255-first", func(t *testing.T) []byte { return hsCat(hsU32(0), []byte{255}, ping(t)) }},
		{"kind-byte-alone", func(t *testing.T) []byte { return hsCat(hsU32(0), []byte{0}) }},
		{"sequence-size-too-large", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(insertBody(t)), hsSeqSecSized("documents", 1000, good(t)))
		}},
		{"sequence-size-negative", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(insertBody(t)), hsSeqSecSized("documents", -5, good(t)))
		}},
		{"sequence-size-zero", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(insertBody(t)), hsSeqSecSized("documents", 0, good(t)))
		}},
		{"sequence-size-cuts-document", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(insertBody(t)), hsSeqSecSized("documents", int32(4+10+len(good(t))-3), good(t)))
		}},
		{"sequence-size-cuts-identifier", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(insertBody(t)), hsSeqSecSized("documents", 7, good(t)))
		}},
		{"sequence-size-truncated", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(insertBody(t)), []byte{1, 20, 0})
		}},
		{"sequence-invalid-document", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(insertBody(t)), hsSeqSec("documents", []byte{12, 0, 0, 0, 0x42, 'x', 0, 0, 0, 0, 0, 0}))
		}},
		{"sequence-trailing-byte", func(t *testing.T) []byte {
			return hsCat(hsU32(0), hsBodySec(insertBody(t)), hsSeqSec("documents", good(t), []byte{0}))
		}},
	}
	for _, tc := range sectionCases {
		run("opmsg/"+tc.name, func(t *testing.T) {
			c := env.dial(t)
			id := c.nextID()
			c.mustWrite(hsFrame(id, wire.OpMsg, tc.sections(t)))
			c.expectError(id)
			c.ping()
		})
	}
	run("opmsg/huge-sequence-identifier", func(t *testing.T) {
		c := env.dial(t)
		id := c.nextID()
		name := string(bytes.Repeat([]byte{1}, 1<<20))
		f := hsFrame(id, wire.OpMsg, hsU32(0), hsBodySec(insertBody(t)), hsSeqSec(name, []byte{5, 0, 0, 0, 1}))
		c.mustWrite(f)
		if doc := c.expectError(id); len(doc) > 64<<10 {
			t.Fatalf("a %d-byte request got a %d-byte error reply", len(f), len(doc))
		}
		c.ping()
	})
	run("opmsg/nothing-inserted-by-bad-sequences", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
		defer cancel()
		n, err := hsCount(ctx, env.before.Database("hostile").Collection("sections"))
		if err != nil || n != 0 {
			t.Fatalf("malformed sections stored documents: n=%d err=%v", n, err)
		}
	})

	// ---- invalid BSON in the body ----

	bsonCases := []struct {
		name string
		doc  []byte
	}{
		{"length-past-end", hsCat(hsLE32(400), []byte{0x10, 'p', 'i', 'n', 'g', 0, 1, 0, 0, 0, 0})},
		{"length-negative", hsCat(hsLE32(-20), []byte{0x10, 'p', 'i', 'n', 'g', 0, 1, 0, 0, 0, 0})},
		{"length-4", hsCat(hsLE32(4), []byte{0})},
		{"length-short-cuts-element", hsCat(hsLE32(8), []byte{0x10, 'p', 'i', 'n', 'g', 0, 1, 0, 0, 0, 0})},
		{"no-terminator", hsWithLen(0x10, 'p', 'i', 'n', 'g', 0, 1, 0, 0, 0, 7)},
		{"unknown-element-type", hsWithLen(0x42, 'p', 'i', 'n', 'g', 0, 1, 0, 0, 0, 0)},
		{"element-type-0x20", hsWithLen(0x20, 'p', 0, 1, 0, 0, 0, 0)},
		{"unterminated-element-name", hsWithLen(0x10, 'p', 'i', 'n', 'g', 0)},
		{"string-length-past-end", hsWithLen(0x02, 's', 0, 100, 0, 0, 0, 'a', 'b', 'c', 0, 0)},
		{"string-length-negative", hsWithLen(0x02, 's', 0, 0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c', 0, 0)},
		{"string-length-zero", hsWithLen(0x02, 's', 0, 0, 0, 0, 0, 'a', 0)},
		{"string-unterminated", hsWithLen(0x02, 's', 0, 4, 0, 0, 0, 'a', 'b', 'c', 'd', 0)},
		{"regex-unterminated-cstring", hsWithLen(0x0B, 'r', 0, 'a', 'b', 0, 'i', 0)},
		{"binary-length-lies", hsWithLen(0x05, 'b', 0, 0, 0, 1, 0, 0, 'x', 'y', 0)},
		{"binary-length-negative", hsWithLen(0x05, 'b', 0, 0xff, 0xff, 0xff, 0xff, 0, 'x', 'y', 0)},
		{"bool-not-0-or-1", hsWithLen(0x08, 'b', 0, 7, 0)},
		{"embedded-length-lies", hsWithLen(0x03, 'd', 0, 50, 0, 0, 0, 0, 0)},
		{"embedded-unterminated", hsWithLen(0x03, 'd', 0, 6, 0, 0, 0, 0x0A, 0, 0)},
		{"int32-truncated", hsWithLen(0x10, 'i', 0, 1, 0)},
		{"code-with-scope-lies", hsWithLen(0x0F, 'c', 0, 0xff, 0, 0, 0, 2, 0, 0, 0, 'x', 0, 5, 0, 0, 0, 0, 0)},
		{"trailing-bytes-after-document", hsCat(hsWithLen(0x10, 'p', 'i', 'n', 'g', 0, 1, 0, 0, 0, 0), []byte{1, 2})},
	}
	for _, tc := range bsonCases {
		run("bson/"+tc.name, func(t *testing.T) {
			c := env.dial(t)
			id := c.nextID()
			c.mustWrite(hsFrame(id, wire.OpMsg, hsU32(0), hsBodySec(tc.doc)))
			c.expectError(id)
			c.ping()
		})
	}

	// ---- deep nesting ----

	for _, depth := range []int{1000, 100_000} {
		deepCases := []struct {
			name  string
			frame func(id int32) []byte
		}{
			{"command-field", func(id int32) []byte {
				d := bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendDocument("x", hsNested(depth, 0x03)).
					AppendString("$db", "admin").Build()
				return hsEncodeMsg(id, 0, d)
			}},
			{"find-filter-arrays", func(id int32) []byte {
				d := bsoncore.NewDocumentBuilder().AppendString("find", "deep").AppendDocument("filter", hsNested(depth, 0x04)).
					AppendString("$db", "hostile").Build()
				return hsEncodeMsg(id, 0, d)
			}},
			{"insert-in-body", func(id int32) []byte {
				docs := bsoncore.NewArrayBuilder().AppendDocument(hsNested(depth, 0x03)).Build()
				d := bsoncore.NewDocumentBuilder().AppendString("insert", "deep").AppendArray("documents", docs).
					AppendString("$db", "hostile").Build()
				return hsEncodeMsg(id, 0, d)
			}},
			{"insert-in-sequence", func(id int32) []byte {
				d := bsoncore.NewDocumentBuilder().AppendString("insert", "deep").AppendString("$db", "hostile").Build()
				return hsFrame(id, wire.OpMsg, hsU32(0), hsBodySec(d), hsSeqSec("documents", hsNested(depth, 0x03)))
			}},
			{"command-is-deep", func(id int32) []byte { return hsEncodeMsg(id, 0, hsNested(depth, 0x03)) }},
		}
		for _, tc := range deepCases {
			run(fmt.Sprintf("nesting/%d/%s", depth, tc.name), func(t *testing.T) {
				c := env.dial(t)
				id := c.nextID()
				c.mustWrite(tc.frame(id))
				c.expectError(id)
				c.ping()
			})
		}
	}
	// Deep documents with long field names: the error must stay small and
	// cheap to build, not grow with depth times name length.
	run("nesting/deep-with-long-names", func(t *testing.T) {
		c := env.dial(t)
		id := c.nextID()
		f := hsEncodeMsg(id, 0, bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).
			AppendDocument("x", hsNestedNamed(300, bytes.Repeat([]byte{1}, 4096))).AppendString("$db", "admin").Build())
		var doc bson.Raw
		alloc := hsAllocDuring(func() {
			c.mustWrite(f)
			doc = c.expectError(id)
		})
		if len(doc) > 64<<10 {
			t.Fatalf("a %d-byte request got a %d-byte error reply", len(f), len(doc))
		}
		if alloc > 64<<20 {
			t.Fatalf("rejecting a %d-byte request allocated %d bytes", len(f), alloc)
		}
		c.ping()
	})
	run("nesting/near-limit-is-served", func(t *testing.T) {
		// Just inside the limit the engine must answer (either way) and live.
		c := env.dial(t)
		id := c.nextID()
		d := bsoncore.NewDocumentBuilder().AppendString("insert", "deep").AppendString("$db", "hostile").Build()
		c.mustWrite(hsFrame(id, wire.OpMsg, hsU32(0), hsBodySec(d), hsSeqSec("documents", hsNested(wire.MaxDocumentDepth, 0x03))))
		doc := c.reply(id)
		if _, err := doc.LookupErr("ok"); err != nil {
			t.Fatalf("reply without ok: %v", doc)
		}
		id = c.nextID()
		f := bsoncore.NewDocumentBuilder().AppendString("find", "deep").
			AppendDocument("filter", hsNested(wire.MaxDocumentDepth-2, 0x03)).AppendString("$db", "hostile").Build()
		c.mustWrite(hsEncodeMsg(id, 0, f))
		doc = c.reply(id)
		if _, err := doc.LookupErr("ok"); err != nil {
			t.Fatalf("reply without ok: %v", doc)
		}
	})
	run("nesting/nothing-too-deep-inserted", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
		defer cancel()
		cur, err := env.before.Database("hostile").Collection("deep").Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		defer cur.Close(ctx)
		for cur.Next(ctx) {
			if depth := hsDepth(cur.Current); depth > wire.MaxDocumentDepth {
				t.Fatalf("stored a document %d levels deep", depth)
			}
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
	})

	// ---- well-formed BSON that is not a command ----

	notCommands := []struct {
		name string
		doc  func(t *testing.T) []byte
	}{
		{"empty-document", func(t *testing.T) []byte { return hsDoc(t, bson.D{}) }},
		{"no-$db", func(t *testing.T) []byte { return hsDoc(t, bson.D{{Key: "ping", Value: 1}}) }},
		{"$db-not-a-string", func(t *testing.T) []byte {
			return hsDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: 5}})
		}},
		{"$db-empty", func(t *testing.T) []byte {
			return hsDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: ""}})
		}},
		{"only-$db", func(t *testing.T) []byte { return hsDoc(t, bson.D{{Key: "$db", Value: "admin"}}) }},
		{"unknown-command", func(t *testing.T) []byte {
			return hsDoc(t, bson.D{{Key: "noSuchCommand", Value: 1}, {Key: "$db", Value: "admin"}})
		}},
		{"empty-command-name", func(t *testing.T) []byte {
			return hsDoc(t, bson.D{{Key: "", Value: 1}, {Key: "$db", Value: "admin"}})
		}},
		{"insert-documents-not-array", func(t *testing.T) []byte {
			return hsDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: 5}, {Key: "$db", Value: "hostile"}})
		}},
		{"insert-collection-not-string", func(t *testing.T) []byte {
			return hsDoc(t, bson.D{{Key: "insert", Value: bson.D{}}, {Key: "documents", Value: bson.A{}}, {Key: "$db", Value: "hostile"}})
		}},
		{"find-bad-db-name", func(t *testing.T) []byte {
			return hsDoc(t, bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "a/b"}})
		}},
	}
	for _, tc := range notCommands {
		run("notcommand/"+tc.name, func(t *testing.T) {
			c := env.dial(t)
			id := c.nextID()
			c.mustWrite(hsEncodeMsg(id, 0, tc.doc(t)))
			c.expectError(id)
			c.ping()
		})
	}

	// ---- OP_COMPRESSED ----

	pingBody := func(t *testing.T, id int32) []byte { return hsEncodeMsg(id, 0, ping(t))[wire.HeaderSize:] }
	compressed := func(id int32, orig wire.OpCode, size int32, compressor byte, payload []byte) []byte {
		return hsFrame(id, wire.OpCompressed, hsLE32(int32(orig)), hsLE32(size), []byte{compressor}, payload)
	}
	zlibOf := func(b []byte) []byte {
		var buf bytes.Buffer
		w := zlib.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	zstdOf := func(b []byte) []byte {
		enc, _ := zstd.NewWriter(nil)
		defer enc.Close()
		return enc.EncodeAll(b, nil)
	}
	compressedCases := []struct {
		name  string
		frame func(t *testing.T, id int32) []byte
	}{
		{"unknown-compressor", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, int32(len(b)), 7, b)
		}},
		{"unknown-compressor-255", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, int32(len(b)), 255, b)
		}},
		{"too-short", func(t *testing.T, id int32) []byte { return hsFrame(id, wire.OpCompressed, hsLE32(2013), hsLE32(5)) }},
		{"zlib-garbage", func(t *testing.T, id int32) []byte {
			return compressed(id, wire.OpMsg, 30, 2, []byte("this is not a zlib stream at all"))
		}},
		{"zlib-truncated", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			z := zlibOf(b)
			return compressed(id, wire.OpMsg, int32(len(b)), 2, z[:len(z)/2])
		}},
		{"zlib-bad-adler", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			z := zlibOf(b)
			z[len(z)-1] ^= 0xff
			return compressed(id, wire.OpMsg, int32(len(b)), 2, z)
		}},
		{"snappy-garbage", func(t *testing.T, id int32) []byte {
			return compressed(id, wire.OpMsg, 30, 1, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3})
		}},
		{"snappy-corrupt", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			s := snappy.Encode(nil, b)
			return compressed(id, wire.OpMsg, int32(len(b)), 1, append(s[:2], 0xfe, 0xff, 0xff, 0xff))
		}},
		{"zstd-garbage", func(t *testing.T, id int32) []byte {
			return compressed(id, wire.OpMsg, 30, 3, []byte{0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3, 4, 5, 6, 7})
		}},
		{"zstd-truncated", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			z := zstdOf(b)
			return compressed(id, wire.OpMsg, int32(len(b)), 3, z[:len(z)-4])
		}},
		{"size-lies-larger-zlib", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, int32(len(b)+100), 2, zlibOf(b))
		}},
		{"size-lies-smaller-zlib", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, int32(len(b)-1), 2, zlibOf(b))
		}},
		{"size-lies-snappy", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, int32(len(b)+1), 1, snappy.Encode(nil, b))
		}},
		{"size-lies-zstd", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, int32(len(b)+1), 3, zstdOf(b))
		}},
		{"size-lies-noop", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, int32(len(b)+1), 0, b)
		}},
		{"size-negative", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, -1, 2, zlibOf(b))
		}},
		{"size-max-int32", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, wire.OpMsg, math.MaxInt32, 2, zlibOf(b))
		}},
		{"wraps-compressed", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			inner := compressed(id, wire.OpMsg, int32(len(b)), 0, b)[wire.HeaderSize:]
			return compressed(id, wire.OpCompressed, int32(len(inner)), 0, inner)
		}},
		{"wraps-unknown-opcode", func(t *testing.T, id int32) []byte {
			b := pingBody(t, id)
			return compressed(id, 9999, int32(len(b)), 0, b)
		}},
		{"wraps-bad-bson", func(t *testing.T, id int32) []byte {
			b := hsCat(hsU32(0), hsBodySec(hsCat(hsLE32(15), []byte{0x42, 'p', 'i', 'n', 'g', 0, 1, 0, 0, 0, 0})))
			return compressed(id, wire.OpMsg, int32(len(b)), 2, zlibOf(b))
		}},
		{"wraps-too-deep", func(t *testing.T, id int32) []byte {
			d := bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendDocument("x", hsNested(100_000, 0x03)).
				AppendString("$db", "admin").Build()
			b := hsEncodeMsg(id, 0, d)[wire.HeaderSize:]
			return compressed(id, wire.OpMsg, int32(len(b)), 3, zstdOf(b))
		}},
	}
	for _, tc := range compressedCases {
		run("compressed/"+tc.name, func(t *testing.T) {
			c := env.dial(t)
			id := c.nextID()
			c.mustWrite(tc.frame(t, id))
			c.expectErrorOrClosed(id)
		})
	}

	// A lying uncompressedSize must not make the server allocate it: a
	// frame of a few dozen bytes is not worth 47 MB of memory.
	for _, comp := range []struct {
		name string
		id   byte
		enc  func([]byte) []byte
	}{
		{"zlib", 2, zlibOf},
		{"zstd", 3, zstdOf},
		{"snappy", 1, func(b []byte) []byte { return snappy.Encode(nil, b) }},
	} {
		run("compressed/size-lies-huge-"+comp.name, func(t *testing.T) {
			c := env.dial(t)
			id := c.nextID()
			f := compressed(id, wire.OpMsg, 47_000_000, comp.id, comp.enc(pingBody(t, id)))
			alloc := hsAllocDuring(func() {
				c.mustWrite(f)
				c.expectErrorOrClosed(id)
			})
			if alloc > 8<<20 {
				t.Fatalf("a %d-byte OP_COMPRESSED claiming 47,000,000 bytes made the server allocate %d bytes", len(f), alloc)
			}
		})
	}

	run("compressed/valid-still-works", func(t *testing.T) {
		c := env.dial(t)
		for _, comp := range []struct {
			id  byte
			enc func([]byte) []byte
		}{{0, func(b []byte) []byte { return b }}, {1, func(b []byte) []byte { return snappy.Encode(nil, b) }}, {2, zlibOf}, {3, zstdOf}} {
			id := c.nextID()
			b := pingBody(t, id)
			c.mustWrite(compressed(id, wire.OpMsg, int32(len(b)), comp.id, comp.enc(b)))
			if doc := c.reply(id); doc.Lookup("ok").Double() != 1 {
				t.Fatalf("compressor %d: %v", comp.id, doc)
			}
		}
	})

	// ---- connection churn ----

	run("connections/open-and-drop-200", func(t *testing.T) {
		base := env.s.srv.Stats().Current
		for i := range 200 {
			nc, err := net.DialTimeout("tcp", env.s.Addr, hsTimeout)
			if err != nil {
				t.Fatalf("dial %d: %v", i, err)
			}
			_ = nc.SetWriteDeadline(time.Now().Add(hsTimeout))
			switch i % 4 {
			case 1: // half a header
				_, _ = nc.Write(hsHeader(100, 1, wire.OpMsg)[:6])
			case 2: // a request whose reply is never read
				_, _ = nc.Write(hsEncodeMsg(1, 0, ping(t)))
			case 3: // a frame cut short
				_, _ = nc.Write(hsEncodeMsg(1, 0, ping(t))[:20])
			}
			if i%2 == 0 {
				_ = nc.(*net.TCPConn).SetLinger(0) // reset rather than FIN
			}
			_ = nc.Close()
		}
		// The server must notice every drop and release the connections.
		deadline := time.Now().Add(hsTimeout)
		for env.s.srv.Stats().Current > base+2 { // slack for driver pool churn
			if time.Now().After(deadline) {
				t.Fatalf("%d connections still open after the clients dropped them (baseline %d)", env.s.srv.Stats().Current, base)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// hsCount counts a collection's documents with find (no aggregate needed).
func hsCount(ctx context.Context, coll *mongo.Collection) (int, error) {
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		return 0, err
	}
	var docs []bson.Raw
	err = cur.All(ctx, &docs)
	return len(docs), err
}

// hsDepth is the nesting depth of a document (1 for a flat one), computed
// iteratively.
func hsDepth(doc bson.Raw) int {
	type frame struct {
		d     bson.Raw
		depth int
	}
	maxDepth := 0
	stack := []frame{{doc, 1}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		maxDepth = max(maxDepth, f.depth)
		elems, err := f.d.Elements()
		if err != nil {
			return math.MaxInt
		}
		for _, e := range elems {
			v := e.Value()
			switch v.Type {
			case bson.TypeEmbeddedDocument:
				stack = append(stack, frame{v.Document(), f.depth + 1})
			case bson.TypeArray:
				stack = append(stack, frame{bson.Raw(v.Array()), f.depth + 1})
			}
		}
	}
	return maxDepth
}

// TestHostileIdleConnectionsDoNotBlockShutdown: connections stuck mid-frame
// must not hold up a clean shutdown.
func TestHostileIdleConnectionsDoNotBlockShutdown(t *testing.T) {
	s, err := Launch(ServerOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = s.Stop()
		}
	})
	var conns []net.Conn
	for i := range 3 {
		nc, err := net.DialTimeout("tcp", s.Addr, hsTimeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
		_ = nc.SetWriteDeadline(time.Now().Add(hsTimeout))
		switch i {
		case 0:
			_, err = nc.Write(hsHeader(1000, 1, wire.OpMsg)[:10])
		case 1:
			_, err = nc.Write(hsHeader(1000, 1, wire.OpMsg))
		case 2:
			_, err = nc.Write(hsHeader(40_000_000, 1, wire.OpMsg))
		}
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
	}
	// Let the server read what was sent.
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Stop took %v with idle mid-frame connections", d)
	}
	for i, nc := range conns {
		_ = nc.SetReadDeadline(time.Now().Add(hsTimeout))
		if _, err := nc.Read(make([]byte, 1)); !hsIsClosed(err) {
			t.Fatalf("connection %d not closed by shutdown: %v", i, err)
		}
	}
}

// TestZeroBytesInNames sends names that arrive as string values, where a
// zero byte is legal BSON, but that commands would turn into field names,
// where it is not: each gets MongoDB's error and the server goes on.
func TestZeroBytesInNames(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("zero_bytes")
	if _, err := db.Collection("c").InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	agg := func(stage bson.D) bson.D {
		return bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{stage}}, {Key: "cursor", Value: bson.D{}}}
	}
	runFail(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a\x00b"}}, 31032, "Location31032")
	runFail(t, db, agg(bson.D{{Key: "$project", Value: bson.D{{Key: "o", Value: bson.D{{Key: "$arrayToObject", Value: bson.A{bson.A{bson.A{"k\x00", 1}}}}}}}}}), 4940400, "Location4940400")
	runFail(t, db, agg(bson.D{{Key: "$project", Value: bson.D{{Key: "o", Value: bson.D{{Key: "$arrayToObject", Value: bson.A{bson.A{bson.D{{Key: "k", Value: "k\x00"}, {Key: "v", Value: 1}}}}}}}}}}), 4940401, "Location4940401")
	runFail(t, db, agg(bson.D{{Key: "$count", Value: "n\x00"}}), 40156, "Location40156")
	runFail(t, db, agg(bson.D{{Key: "$unwind", Value: bson.D{{Key: "path", Value: "$a"}, {Key: "includeArrayIndex", Value: "i\x00"}}}}), 16410, "Location16410")
	runFail(t, db, agg(bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "c"}, {Key: "localField", Value: "a"}, {Key: "foreignField", Value: "a"}, {Key: "as", Value: "x\x00"}}}}), 16410, "Location16410")
	runFail(t, db, agg(bson.D{{Key: "$project", Value: bson.D{{Key: "o", Value: bson.D{{Key: "$setField", Value: bson.D{{Key: "field", Value: "f\x00"}, {Key: "input", Value: "$$ROOT"}, {Key: "value", Value: 1}}}}}}}}), 2, "BadValue")
	r := runUpdate(t, db, updateCmd("c", bson.A{updStmt(idIs(1), bson.D{{Key: "$rename", Value: bson.D{{Key: "a", Value: "b\x00"}}}})}))
	if len(r.WriteErrors) != 1 || r.WriteErrors[0].Code != 2 {
		t.Fatalf("$rename to a name with a zero byte: want one write error 2, got %+v", r.WriteErrors)
	}
	var doc bson.D
	if err := db.Collection("c").FindOne(testCtx(t), idIs(1)).Decode(&doc); err != nil || len(doc) != 2 || doc[1].Key != "a" {
		t.Fatalf("document after the refused writes: %v, %v", doc, err)
	}
}
