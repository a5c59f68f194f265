package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// Transport carries dragonboat's messages and snapshot chunks between
// nodes over TCP (config.TransportFactory): what the node hands it is
// already batched, ordered and retried by dragonboat; Transport only
// moves the bytes. Each message batch or chunk is one frame, written with
// one write and read through a buffer:
//
//	kind (1: 'm' message batch, 'c' snapshot chunk, 'p' end of a
//	snapshot stream, 'a' its acknowledgement), length (4, big endian),
//	CRC-32C of the payload (4), payload (the batch or chunk, marshaled)
//
// after a connection's preamble (transportMagic). dragonboat's own TCP
// transport writes a message as three writes (a magic number, a header,
// the payload) and reads it as three, each a trip through the kernel's
// network stack; between the processes of one machine that was about a
// tenth of each node's CPU under inserts.
//
// A node speaks one transport: nodes with this one and nodes with
// dragonboat's cannot talk (the preamble tells them apart, and a
// connection that does not start with it is closed).
type Transport struct {
	addr     string
	messages raftio.MessageHandler
	chunks   raftio.ChunkHandler
	logger   *slog.Logger

	mu       sync.Mutex
	listener net.Listener
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// TransportFactory makes Transports (NodeHostConfig.Expert.TransportFactory).
type TransportFactory struct {
	// Logger gets a line per connection refused or broken by bad input.
	Logger *slog.Logger
}

var _ config.TransportFactory = TransportFactory{}

// Create is the node's transport, listening on its listen address.
func (f TransportFactory) Create(nh config.NodeHostConfig, messages raftio.MessageHandler, chunks raftio.ChunkHandler) raftio.ITransport {
	logger := f.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Transport{addr: nh.GetListenAddress(), messages: messages, chunks: chunks, logger: logger, conns: map[net.Conn]struct{}{}}
}

// Validate accepts host:port addresses.
func (TransportFactory) Validate(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p > 0 && p < 65536
}

const (
	transportMagic = "PSRT\x01" // a connection's first bytes
	frameHeader    = 9
	// maxFrame bounds a frame's payload: dragonboat cuts snapshots into
	// chunks of 2 MB and message batches at 64 MB (its
	// MaxMessageBatchSize).
	maxFrame = 256 << 20
	// frameWriteTimeout bounds one frame's write: a peer that stopped
	// reading breaks the connection, and dragonboat dials again.
	frameWriteTimeout = 15 * time.Second
	// streamEndTimeout bounds the wait for a snapshot stream's
	// acknowledgement.
	streamEndTimeout = 5 * time.Second
	dialTimeout      = 5 * time.Second
)

const (
	frameMessages  = 'm'
	frameChunk     = 'c'
	frameStreamEnd = 'p'
	frameStreamAck = 'a'
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

var errTransportClosed = errors.New("cluster: transport closed")

func (t *Transport) Name() string { return "parsec-tcp" }

// Start listens for other nodes' connections.
func (t *Transport) Start() error {
	ln, err := net.Listen("tcp", t.addr)
	if err != nil {
		return fmt.Errorf("cluster: transport: %w", err)
	}
	t.mu.Lock()
	t.listener = ln
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				t.mu.Lock()
				closed := t.closed
				t.mu.Unlock()
				if closed || errors.Is(err, net.ErrClosed) {
					return
				}
				// (out of file descriptors, say: the peers dial again)
				t.logger.Warn("raft listener", "err", err)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if !t.track(conn) {
				conn.Close()
				return
			}
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				defer t.untrack(conn)
				if err := t.serve(conn); err != nil {
					t.logger.Warn("raft connection dropped", "from", conn.RemoteAddr().String(), "err", err)
				}
			}()
		}
	}()
	return nil
}

func (t *Transport) track(conn net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[conn] = struct{}{}
	return true
}

func (t *Transport) untrack(conn net.Conn) {
	conn.Close()
	t.mu.Lock()
	delete(t.conns, conn)
	t.mu.Unlock()
}

// Close stops listening, closes every connection it accepted and waits
// for their readers.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	if t.listener != nil {
		t.listener.Close()
	}
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}

// serve reads conn's frames until it ends: nil at a clean end (EOF
// between frames, or a snapshot stream's end acknowledged), an error for
// bad input, which drops the connection (the sender dials again).
func (t *Transport) serve(conn net.Conn) error {
	r := bufio.NewReaderSize(conn, 256<<10)
	magic := make([]byte, len(transportMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if string(magic) != transportMagic {
		return fmt.Errorf("not a Parsec raft connection (preamble %q)", magic)
	}
	var payload []byte
	for {
		kind, p, err := readFrame(r, payload)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if cap(p) <= 4<<20 {
			payload = p[:0] // reused: the handlers copy what they keep
		}
		switch kind {
		case frameMessages:
			var b pb.MessageBatch
			if err := b.Unmarshal(p); err != nil {
				return fmt.Errorf("bad message batch: %w", err)
			}
			t.messages(b)
		case frameChunk:
			var c pb.Chunk
			if err := c.Unmarshal(p); err != nil {
				return fmt.Errorf("bad snapshot chunk: %w", err)
			}
			if !t.chunks(c) {
				return fmt.Errorf("snapshot chunk %d of group %d refused", c.ChunkId, c.ShardID)
			}
		case frameStreamEnd:
			conn.SetWriteDeadline(time.Now().Add(frameWriteTimeout))
			_, err := conn.Write(appendFrameHeader(nil, frameStreamAck, nil))
			return err
		default:
			return fmt.Errorf("unknown frame kind %q", kind)
		}
	}
}

// readFrame reads one frame into buf (grown as needed); io.EOF only when
// the stream ends between frames.
func readFrame(r *bufio.Reader, buf []byte) (kind byte, payload []byte, err error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("truncated frame header: %w", err)
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:5])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes is over the limit of %d", n, maxFrame)
	}
	if uint32(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, fmt.Errorf("truncated frame: %w", noEOF(err))
	}
	if crc32.Checksum(buf, crcTable) != binary.BigEndian.Uint32(h[5:9]) {
		return 0, nil, errors.New("frame checksum mismatch")
	}
	return h[0], buf, nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendFrameHeader appends kind's header for payload to buf.
func appendFrameHeader(buf []byte, kind byte, payload []byte) []byte {
	buf = append(buf, kind)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(payload, crcTable))
}

// dial connects to target and sends the preamble.
func (t *Transport) dial(ctx context.Context, target string) (net.Conn, error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, errTransportClosed
	}
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: 15 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, err
	}
	conn.SetWriteDeadline(time.Now().Add(frameWriteTimeout))
	if _, err := io.WriteString(conn, transportMagic); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// GetConnection is a connection for message batches to target.
func (t *Transport) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	conn, err := t.dial(ctx, target)
	if err != nil {
		return nil, err
	}
	return &messageConn{frameConn{conn: conn}}, nil
}

// GetSnapshotConnection is a connection for one snapshot's chunks to
// target.
func (t *Transport) GetSnapshotConnection(ctx context.Context, target string) (raftio.ISnapshotConnection, error) {
	conn, err := t.dial(ctx, target)
	if err != nil {
		return nil, err
	}
	return &snapshotConn{frameConn{conn: conn}}, nil
}

// frameConn writes frames to one peer; dragonboat uses each from one
// goroutine at a time.
type frameConn struct {
	conn net.Conn
	buf  []byte
}

// messageConn carries message batches.
type messageConn struct{ frameConn }

// snapshotConn carries one snapshot's chunks.
type snapshotConn struct{ frameConn }

var (
	_ raftio.IConnection         = (*messageConn)(nil)
	_ raftio.ISnapshotConnection = (*snapshotConn)(nil)
)

type marshaler interface {
	MarshalTo([]byte) (int, error)
}

// send writes one frame of m, marshaled after its header in one buffer,
// with one write.
func (c *frameConn) send(kind byte, m marshaler, size int) error {
	need := frameHeader + size
	if cap(c.buf) < need {
		c.buf = make([]byte, need)
	}
	buf := c.buf[:need]
	n, err := m.MarshalTo(buf[frameHeader:])
	if err != nil {
		return err
	}
	payload := buf[frameHeader : frameHeader+n]
	appendFrameHeader(buf[:0], kind, payload)
	if err := c.conn.SetWriteDeadline(time.Now().Add(frameWriteTimeout)); err != nil {
		return err
	}
	_, err = c.conn.Write(buf[:frameHeader+n])
	if cap(c.buf) > 4<<20 {
		c.buf = nil // a large batch's buffer is not kept
	}
	return err
}

func (c *messageConn) SendMessageBatch(b pb.MessageBatch) error {
	return c.send(frameMessages, &b, b.SizeUpperLimit())
}

// Close drops the connection: messages are resent as dragonboat sees
// fit.
func (c *messageConn) Close() { c.conn.Close() }

func (c *snapshotConn) SendChunk(ch pb.Chunk) error {
	return c.send(frameChunk, &ch, ch.Size())
}

// Close ends the stream and waits (bounded) for the receiver to
// acknowledge it, so that the last chunks are read before the connection
// goes.
func (c *snapshotConn) Close() {
	defer c.conn.Close()
	c.conn.SetDeadline(time.Now().Add(streamEndTimeout))
	if _, err := c.conn.Write(appendFrameHeader(nil, frameStreamEnd, nil)); err != nil {
		return
	}
	var h [frameHeader]byte
	_, _ = io.ReadFull(c.conn, h[:])
}
