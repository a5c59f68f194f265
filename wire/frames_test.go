package wire

import (
	"bytes"
	"compress/zlib"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/v2/bson"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the recorded frames in testdata/ (TestGenerateFrames)")

// genFrame is one recorded frame: testdata/<name>.hex.
type genFrame struct {
	name    string
	comment string
	frame   []byte
	// inner is the uncompressed frame an OP_COMPRESSED frame wraps (with
	// the compressed frame's requestID and responseTo).
	inner []byte
}

// The documents of the recorded frames.

func helloDoc(tb testing.TB) []byte {
	// Field order of the Go driver's handshake (internal/handshake/operation/hello.go).
	return mustDoc(tb, bson.D{
		{Key: "isMaster", Value: int32(1)},
		{Key: "helloOk", Value: true},
		{Key: "backpressure", Value: "2"},
		{Key: "compression", Value: bson.A{"zstd", "snappy", "zlib"}},
		{Key: "client", Value: bson.D{
			{Key: "driver", Value: bson.D{{Key: "name", Value: "mongo-go-driver"}, {Key: "version", Value: "2.10.0"}}},
			{Key: "os", Value: bson.D{{Key: "type", Value: "linux"}, {Key: "architecture", Value: "amd64"}}},
			{Key: "platform", Value: "go1.26.8"},
		}},
	})
}

func helloReplyDoc(tb testing.TB) []byte {
	return mustDoc(tb, bson.D{
		{Key: "helloOk", Value: true},
		{Key: "ismaster", Value: true},
		{Key: "maxBsonObjectSize", Value: int32(MaxBSONObjectSize)},
		{Key: "maxMessageSizeBytes", Value: int32(MaxMessageSize)},
		{Key: "maxWriteBatchSize", Value: int32(100000)},
		{Key: "localTime", Value: bson.DateTime(1700000000000)},
		{Key: "connectionId", Value: int32(1)},
		{Key: "minWireVersion", Value: int32(0)},
		{Key: "maxWireVersion", Value: int32(21)},
		{Key: "compression", Value: bson.A{"zstd", "snappy", "zlib"}},
		{Key: "readOnly", Value: false},
		{Key: "ok", Value: float64(1)},
	})
}

func findDoc(tb testing.TB) []byte {
	lsid := bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}
	return mustDoc(tb, bson.D{
		{Key: "find", Value: "coll"},
		{Key: "filter", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: int64(1)}}}}},
		{Key: "limit", Value: int64(10)},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: lsid}}},
		{Key: "$db", Value: "test"},
	})
}

func insertDoc(tb testing.TB, writeConcern bool) []byte {
	d := bson.D{
		{Key: "insert", Value: "coll"},
		{Key: "ordered", Value: true},
	}
	if writeConcern {
		d = append(d, bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: int32(0)}}})
	}
	d = append(d, bson.E{Key: "$db", Value: "test"})
	return mustDoc(tb, d)
}

func insertedDocs(tb testing.TB) [][]byte {
	var docs [][]byte
	for i := range 3 {
		docs = append(docs, mustDoc(tb, bson.D{
			{Key: "_id", Value: int32(i)},
			{Key: "name", Value: "document number " + string(rune('a'+i))},
			{Key: "tags", Value: bson.A{"x", "y", "z", "x", "y", "z"}},
		}))
	}
	return docs
}

// generateFrames builds every recorded frame byte by byte, without the
// package's encoder, so the recorded bytes do not depend on the code they test.
func generateFrames(tb testing.TB) []genFrame {
	msgInsert := func(reqID int32) []byte {
		return rawFrame(reqID, 0, OpMsg, le32(0), bodySection(insertDoc(tb, false)),
			seqSection("documents", insertedDocs(tb)...))
	}
	compressed := func(reqID int32, id CompressorID) (frame, inner []byte) {
		inner = msgInsert(reqID)
		body := inner[HeaderSize:]
		var payload []byte
		switch id {
		case CompressorSnappy:
			payload = snappy.Encode(nil, body)
		case CompressorZlib:
			var buf bytes.Buffer
			w := zlib.NewWriter(&buf)
			_, _ = w.Write(body)
			_ = w.Close()
			payload = buf.Bytes()
		case CompressorZstd:
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
			if err != nil {
				tb.Fatal(err)
			}
			payload = enc.EncodeAll(body, nil)
		}
		frame = rawFrame(reqID, 0, OpCompressed, le32(int32(OpMsg)), le32(int32(len(body))), []byte{byte(id)}, payload)
		return frame, inner
	}
	snappyFrame, snappyInner := compressed(20, CompressorSnappy)
	zlibFrame, zlibInner := compressed(21, CompressorZlib)
	zstdFrame, zstdInner := compressed(22, CompressorZstd)

	return []genFrame{
		{
			name: "query_hello",
			comment: "OP_QUERY legacy hello on admin.$cmd as the Go driver sends it first:\n" +
				"flags SecondaryOK (4), numberToSkip 0, numberToReturn -1, no $query wrapper.",
			frame: rawFrame(1, 0, OpQuery, le32(4), cstr("admin.$cmd"), le32(0), le32(-1), helloDoc(tb)),
		},
		{
			name:    "query_wrapped",
			comment: "OP_QUERY with a {$query: ..., $readPreference: ...} wrapper, as sent to a mongos.",
			frame: rawFrame(2, 0, OpQuery, le32(4), cstr("test.$cmd"), le32(0), le32(-1), mustDoc(tb, bson.D{
				{Key: "$query", Value: bson.D{{Key: "ping", Value: int32(1)}}},
				{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "secondaryPreferred"}}},
			})),
		},
		{
			name:    "reply_hello",
			comment: "OP_REPLY answering query_hello (responseTo 1) with one document.",
			frame:   rawFrame(1001, 1, OpReply, le32(0), make([]byte, 8), le32(0), le32(1), helloReplyDoc(tb)),
		},
		{
			name:    "msg_find",
			comment: "OP_MSG, flags 0, a single kind-0 body: find on test.coll.",
			frame:   rawFrame(3, 0, OpMsg, le32(0), bodySection(findDoc(tb))),
		},
		{
			name:    "msg_insert_seq",
			comment: "OP_MSG, flags 0, kind-0 body {insert: \"coll\"} and a kind-1 \"documents\" sequence of 3 documents.",
			frame:   msgInsert(4),
		},
		{
			name:    "msg_checksum",
			comment: "OP_MSG with checksumPresent: kind-0 find body followed by the CRC-32C of all bytes before it.",
			frame:   withChecksum(rawFrame(5, 0, OpMsg, le32(int32(FlagChecksumPresent)), bodySection(findDoc(tb)))),
		},
		{
			name: "msg_more_to_come",
			comment: "OP_MSG with moreToCome (an unacknowledged w:0 insert): the server sends no reply.\n" +
				"The kind-1 section comes before the body, which the protocol allows.",
			frame: rawFrame(6, 0, OpMsg, le32(int32(FlagMoreToCome)),
				seqSection("documents", insertedDocs(tb)[0]), bodySection(insertDoc(tb, true))),
		},
		{
			name:    "compressed_snappy",
			comment: "OP_COMPRESSED (compressorId 1, snappy) wrapping msg_insert_seq.",
			frame:   snappyFrame,
			inner:   snappyInner,
		},
		{
			name:    "compressed_zlib",
			comment: "OP_COMPRESSED (compressorId 2, zlib) wrapping msg_insert_seq.",
			frame:   zlibFrame,
			inner:   zlibInner,
		},
		{
			name:    "compressed_zstd",
			comment: "OP_COMPRESSED (compressorId 3, zstd) wrapping msg_insert_seq.",
			frame:   zstdFrame,
			inner:   zstdInner,
		},
	}
}

// TestGenerateFrames writes testdata/*.hex with -rewrite. Without it, it
// checks that the files agree with the generator: byte for byte for plain
// frames, and for compressed ones (whose bytes depend on the compressor's
// version) that they inflate to the generated inner frame.
func TestGenerateFrames(t *testing.T) {
	for _, g := range generateFrames(t) {
		path := filepath.Join("testdata", g.name+".hex")
		if *rewrite {
			comment := g.comment + "\nGenerated by: go test ./wire -run TestGenerateFrames -rewrite"
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, formatHexFrame(comment, g.frame), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got := loadFrame(t, g.name)
		if g.inner == nil {
			if !bytes.Equal(got, g.frame) {
				t.Errorf("%s differs from the generator; rerun with -rewrite if the change is intended", path)
			}
			continue
		}
		m, err := Decode(got)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		inner, err := m.(*Compressed).Open()
		if err != nil {
			t.Errorf("%s: Open: %v", path, err)
			continue
		}
		if enc := Encode(nil, inner); !bytes.Equal(enc, g.inner) {
			t.Errorf("%s does not inflate to the generated inner frame", path)
		}
	}
}
