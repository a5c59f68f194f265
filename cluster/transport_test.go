package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/config"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// received is what a test transport's handlers got.
type received struct {
	mu      sync.Mutex
	batches []pb.MessageBatch
	chunks  []pb.Chunk
	refuse  bool
}

func (r *received) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches), len(r.chunks)
}

func startTransport(t *testing.T) (*Transport, *received, string) {
	t.Helper()
	r := &received{}
	tr := TransportFactory{}.Create(config.NodeHostConfig{RaftAddress: "127.0.0.1:0"},
		func(b pb.MessageBatch) { r.mu.Lock(); r.batches = append(r.batches, b); r.mu.Unlock() },
		func(c pb.Chunk) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.refuse {
				return false
			}
			r.chunks = append(r.chunks, c)
			return true
		}).(*Transport)
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, r, tr.listener.Addr().String()
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTransportCarriesBatchesAndChunks: message batches arrive whole and
// in order, with their entries' bytes; a snapshot's chunks are all read
// before its connection's Close returns; a refused chunk breaks the
// stream.
func TestTransportCarriesBatchesAndChunks(t *testing.T) {
	a, got, addr := startTransport(t)
	b, _, _ := startTransport(t)
	conn, err := b.GetConnection(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	big := bytes.Repeat([]byte("x"), 3<<20) // over the reused buffers' size
	for i := range 50 {
		cmd := []byte{byte(i)}
		if i == 25 {
			cmd = big
		}
		batch := pb.MessageBatch{DeploymentId: 7, SourceAddress: "127.0.0.9:1", BinVer: 3, Requests: []pb.Message{{
			Type: pb.Replicate, To: 2, From: 1, ShardID: 5, Term: 3, LogIndex: uint64(i),
			Entries: []pb.Entry{{Index: uint64(i + 1), Term: 3, Cmd: cmd}},
		}}}
		if err := conn.SendMessageBatch(batch); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "50 batches", func() bool { n, _ := got.counts(); return n == 50 })
	got.mu.Lock()
	for i, bt := range got.batches {
		m := bt.Requests[0]
		want := []byte{byte(i)}
		if i == 25 {
			want = big
		}
		if bt.DeploymentId != 7 || bt.SourceAddress != "127.0.0.9:1" || m.LogIndex != uint64(i) || m.Type != pb.Replicate ||
			len(m.Entries) != 1 || !bytes.Equal(m.Entries[0].Cmd, want) {
			t.Fatalf("batch %d arrived as %+v", i, bt.Requests[0].LogIndex)
		}
	}
	got.mu.Unlock()

	sc, err := b.GetSnapshotConnection(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := sc.SendChunk(pb.Chunk{ShardID: 5, ReplicaID: 2, ChunkId: uint64(i), ChunkCount: 3, Data: bytes.Repeat([]byte{byte(i)}, 1<<20)}); err != nil {
			t.Fatal(err)
		}
	}
	sc.Close()
	if _, n := got.counts(); n != 3 {
		t.Fatalf("%d chunks read when the stream's Close returned, want 3", n)
	}
	for i, c := range got.chunks {
		if c.ChunkId != uint64(i) || len(c.Data) != 1<<20 || c.Data[0] != byte(i) {
			t.Fatalf("chunk %d arrived as id %d with %d bytes", i, c.ChunkId, len(c.Data))
		}
	}

	got.mu.Lock()
	got.refuse = true
	got.mu.Unlock()
	sc, err = b.GetSnapshotConnection(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var sendErr error
	for i := 0; i < 200 && sendErr == nil; i++ {
		sendErr = sc.SendChunk(pb.Chunk{ShardID: 5, ChunkId: uint64(i), ChunkCount: 200, Data: make([]byte, 64<<10)})
		time.Sleep(time.Millisecond)
	}
	if sendErr == nil {
		t.Error("chunks kept going to a receiver that refused the first")
	}
	_ = a
}

// TestTransportRefusesBadInput: a connection without the preamble, with
// a bad checksum, an oversized frame, an unknown kind or a truncated
// frame is dropped without reaching the handlers, and the transport
// goes on serving others.
func TestTransportRefusesBadInput(t *testing.T) {
	_, got, addr := startTransport(t)
	frame := func(kind byte, payload []byte) []byte {
		return append(appendFrameHeader(nil, kind, payload), payload...)
	}
	good := pb.MessageBatch{DeploymentId: 1, Requests: []pb.Message{{Type: pb.Heartbeat, To: 1, From: 2, ShardID: 1}}}
	raw, err := good.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	badCRC := frame(frameMessages, raw)
	badCRC[5] ^= 0xff
	huge := appendFrameHeader(nil, frameMessages, nil)
	binary.BigEndian.PutUint32(huge[1:5], maxFrame+1)
	for name, in := range map[string][]byte{
		"no preamble":     append([]byte("GET / HTTP/1.1\r\n\r\n"), frame(frameMessages, raw)...),
		"bad checksum":    append([]byte(transportMagic), badCRC...),
		"oversized frame": append([]byte(transportMagic), huge...),
		"unknown kind":    append([]byte(transportMagic), frame('z', raw)...),
		"not a batch":     append([]byte(transportMagic), frame(frameMessages, []byte{0xff, 0xff, 0xff})...),
		"truncated":       append([]byte(transportMagic), frame(frameMessages, raw)[:frameHeader+3]...),
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(in); err != nil {
			t.Fatal(err)
		}
		if name == "truncated" {
			c.(*net.TCPConn).CloseWrite()
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil || n > 0 {
			t.Errorf("%s: the connection stayed open (read %d, %v)", name, n, err)
		}
		c.Close()
	}
	if n, _ := got.counts(); n != 0 {
		t.Fatalf("%d bad batches reached the handler", n)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append([]byte(transportMagic), frame(frameMessages, raw)...)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a good batch after the bad ones", func() bool { n, _ := got.counts(); return n == 1 })
}

func TestTransportValidate(t *testing.T) {
	f := TransportFactory{}
	for addr, want := range map[string]bool{"127.0.0.1:7001": true, "node-3.example:7001": true, "[::1]:7001": true,
		"127.0.0.1": false, ":7001": false, "127.0.0.1:0": false, "127.0.0.1:70000": false, "127.0.0.1:x": false} {
		if f.Validate(addr) != want {
			t.Errorf("Validate(%q) = %v", addr, !want)
		}
	}
}
