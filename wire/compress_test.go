package wire

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/v2/bson"
)

var allCompressors = []struct {
	name string
	id   CompressorID
}{
	{"noop", CompressorNoop},
	{"snappy", CompressorSnappy},
	{"zlib", CompressorZlib},
	{"zstd", CompressorZstd},
}

func TestCompressorByName(t *testing.T) {
	for _, c := range allCompressors {
		if id, ok := CompressorByName(c.name); !ok || id != c.id {
			t.Errorf("CompressorByName(%q) = %d, %v", c.name, id, ok)
		}
	}
	for _, name := range []string{"", "lz4", "ZSTD", "snappy "} {
		if _, ok := CompressorByName(name); ok {
			t.Errorf("CompressorByName(%q) succeeded", name)
		}
	}
	for _, name := range SupportedCompressors {
		if _, ok := CompressorByName(name); !ok {
			t.Errorf("supported compressor %q is unknown", name)
		}
	}
}

// deflate compresses body with compressor id independently of compress().
func deflate(tb testing.TB, id CompressorID, body []byte) []byte {
	tb.Helper()
	switch id {
	case CompressorNoop:
		return bytes.Clone(body)
	case CompressorSnappy:
		return snappy.Encode(nil, body)
	case CompressorZlib:
		var buf bytes.Buffer
		w := zlib.NewWriter(&buf)
		_, _ = w.Write(body)
		_ = w.Close()
		return buf.Bytes()
	case CompressorZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			tb.Fatal(err)
		}
		return enc.EncodeAll(body, nil)
	}
	tb.Fatalf("no compressor %d", id)
	return nil
}

// compressedFrame builds an OP_COMPRESSED frame by hand.
func compressedFrame(orig OpCode, size int32, id CompressorID, payload []byte) []byte {
	return rawFrame(42, 0, OpCompressed, le32(int32(orig)), le32(size), []byte{byte(id)}, payload)
}

func TestCompressRoundTrip(t *testing.T) {
	for _, c := range allCompressors {
		for _, name := range []string{"msg_find", "msg_insert_seq", "msg_checksum", "msg_more_to_come", "query_hello", "reply_hello"} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				orig := loadFrame(t, name)
				m := decodeFrame(t, orig)
				frame := Compress([]byte("xx"), c.id, m)[2:]
				cm, ok := decodeFrame(t, frame).(*Compressed)
				if !ok {
					t.Fatal("Compress did not make an OP_COMPRESSED frame")
				}
				h := m.Hdr()
				if cm.CompressorID != c.id || cm.OriginalOpCode != h.OpCode || int(cm.UncompressedSize) != len(orig)-HeaderSize ||
					cm.Header.RequestID != h.RequestID || cm.Header.ResponseTo != h.ResponseTo || cm.Header.OpCode != OpCompressed {
					t.Errorf("compressed = %+v", cm)
				}
				inner, err := cm.Open()
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if got := Encode(nil, inner); !bytes.Equal(got, orig) {
					t.Errorf("Open+Encode does not give back the frame")
				}
				// The payload inflates with the reference implementation too.
				body, err := decompress(c.id, deflate(t, c.id, orig[HeaderSize:]), len(orig)-HeaderSize)
				if err != nil || !bytes.Equal(body, orig[HeaderSize:]) {
					t.Errorf("decompress of an independently compressed payload: %v", err)
				}
			})
		}
	}
}

func TestOpenErrors(t *testing.T) {
	inner := loadFrame(t, "msg_insert_seq")
	body := inner[HeaderSize:]
	size := int32(len(body))
	payload := func(id CompressorID) []byte { return deflate(t, id, body) }

	zlibBadSum := payload(CompressorZlib)
	zlibBadSum[len(zlibBadSum)-1] ^= 0xff // Adler-32 is the last 4 bytes
	zlibNoSum := payload(CompressorZlib)
	zlibNoSum = zlibNoSum[:len(zlibNoSum)-4]
	snappyHuge := binary.AppendUvarint(nil, 1<<31) // claims 2 GiB
	nested := compressedFrame(OpMsg, size, CompressorNoop, body)[HeaderSize:]
	badInner := cat(le32(0), []byte{0}, le32(5)) // OP_MSG body section with a truncated document

	type tc struct {
		name  string
		frame []byte
		fatal bool
		want  string
	}
	tests := []tc{
		{"wraps OP_COMPRESSED", compressedFrame(OpCompressed, int32(len(nested)), CompressorNoop, nested), true, "may not wrap OP_COMPRESSED"},
		{"size negative", compressedFrame(OpMsg, -1, CompressorNoop, body), true, "uncompressedSize -1 out of range"},
		{"size min int32", compressedFrame(OpMsg, -1<<31, CompressorSnappy, payload(CompressorSnappy)), true, "out of range"},
		{"size over the max", compressedFrame(OpMsg, MaxMessageSize-HeaderSize+1, CompressorZlib, payload(CompressorZlib)), true, "out of range"},
		{"unknown compressor 4", compressedFrame(OpMsg, size, 4, body), true, "unknown compressor id 4"},
		{"unknown compressor 255", compressedFrame(OpMsg, size, 255, body), true, "unknown compressor id 255"},
		{"snappy garbage", compressedFrame(OpMsg, size, CompressorSnappy, []byte("\x05garbage")), true, "snappy"},
		{"snappy claims 2 GiB", compressedFrame(OpMsg, size, CompressorSnappy, snappyHuge), true, "snappy"},
		{"snappy truncated", compressedFrame(OpMsg, size, CompressorSnappy, payload(CompressorSnappy)[:20]), true, "OP_COMPRESSED"},
		{"zlib garbage", compressedFrame(OpMsg, size, CompressorZlib, []byte("not zlib at all")), true, "zlib"},
		{"zlib truncated", compressedFrame(OpMsg, size, CompressorZlib, payload(CompressorZlib)[:20]), true, "OP_COMPRESSED"},
		{"zlib bad Adler-32", compressedFrame(OpMsg, size, CompressorZlib, zlibBadSum), true, "checksum"},
		{"zlib missing Adler-32", compressedFrame(OpMsg, size, CompressorZlib, zlibNoSum), true, "OP_COMPRESSED"},
		{"zstd garbage", compressedFrame(OpMsg, size, CompressorZstd, []byte("not zstd at all")), true, "OP_COMPRESSED"},
		{"zstd truncated", compressedFrame(OpMsg, size, CompressorZstd, payload(CompressorZstd)[:20]), true, "OP_COMPRESSED"},
		{"zstd trailing garbage", compressedFrame(OpMsg, size, CompressorZstd, cat(payload(CompressorZstd), []byte("xyz"))), true, "OP_COMPRESSED"},
		// the inner message is decoded like any other: its errors are not fatal
		{"inner opcode unknown", compressedFrame(9999, size, CompressorNoop, body), false, "unsupported opcode 9999"},
		{"inner message invalid", compressedFrame(OpMsg, int32(len(badInner)), CompressorNoop, badInner), false, "OP_MSG body"},
		{"inner empty", compressedFrame(OpMsg, 0, CompressorSnappy, snappy.Encode(nil, nil)), false, "too short for its flags"},
	}
	// uncompressedSize lies, for every compressor, in both directions
	for _, c := range allCompressors {
		for _, lie := range []int32{size + 1, size - 1, 0, size * 2, MaxMessageSize - HeaderSize} {
			tests = append(tests, tc{
				name:  c.name + " size lie " + string(rune('0'+len(tests)%10)),
				frame: compressedFrame(OpMsg, lie, c.id, payload(c.id)),
				fatal: true,
				want:  "OP_COMPRESSED",
			})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm, ok := decodeFrame(t, tc.frame).(*Compressed)
			if !ok {
				t.Fatal("not decoded as *Compressed")
			}
			m, err := cm.Open()
			if err == nil {
				t.Fatalf("Open succeeded: %+v", m)
			}
			pe := asProtocolError(t, err)
			if pe.Fatal != tc.fatal {
				t.Errorf("fatal = %v, want %v (%v)", pe.Fatal, tc.fatal, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestOpenKeepsHeader checks that the inner message keeps the requestID and
// responseTo of the OP_COMPRESSED frame, not those of anything inside.
func TestOpenKeepsHeader(t *testing.T) {
	doc := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
	body := cat(le32(0), bodySection(doc))
	frame := rawFrame(77, 66, OpCompressed, le32(int32(OpMsg)), le32(int32(len(body))), []byte{byte(CompressorSnappy)}, snappy.Encode(nil, body))
	inner, err := decodeFrame(t, frame).(*Compressed).Open()
	if err != nil {
		t.Fatal(err)
	}
	want := Header{MessageLength: int32(HeaderSize + len(body)), RequestID: 77, ResponseTo: 66, OpCode: OpMsg}
	if *inner.Hdr() != want {
		t.Errorf("inner header = %+v, want %+v", *inner.Hdr(), want)
	}
}
