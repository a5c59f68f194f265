package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestOpCodeString(t *testing.T) {
	for op, want := range map[OpCode]string{
		OpReply: "OP_REPLY", OpQuery: "OP_QUERY", OpCompressed: "OP_COMPRESSED", OpMsg: "OP_MSG", 2010: "opcode(2010)",
	} {
		if got := op.String(); got != want {
			t.Errorf("OpCode(%d).String() = %q, want %q", int32(op), got, want)
		}
	}
}

func TestIsFatal(t *testing.T) {
	if !IsFatal(io.ErrUnexpectedEOF) {
		t.Error("IsFatal(io.ErrUnexpectedEOF) = false; an I/O error must close the connection")
	}
	if IsFatal(protoErr(false, "x")) {
		t.Error("IsFatal(non-fatal ProtocolError) = true")
	}
	if !IsFatal(protoErr(true, "x")) {
		t.Error("IsFatal(fatal ProtocolError) = false")
	}
	wrapped := errors.Join(errors.New("context"), protoErr(false, "x"))
	if IsFatal(wrapped) {
		t.Error("IsFatal does not see a wrapped ProtocolError")
	}
}

// decodeFrame reads a frame the way the server does and decodes it.
func decodeFrame(t *testing.T, frame []byte) Message {
	t.Helper()
	got, err := ReadFrame(bytes.NewReader(frame), nil, MaxMessageSize)
	if err != nil {
		t.Fatalf("ReadFrame: %v", err)
	}
	if !bytes.Equal(got, frame) {
		t.Fatal("ReadFrame did not return the frame")
	}
	m, err := Decode(got)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return m
}

func checkHeader(t *testing.T, m Message, frame []byte, op OpCode, requestID, responseTo int32) {
	t.Helper()
	want := Header{MessageLength: int32(len(frame)), RequestID: requestID, ResponseTo: responseTo, OpCode: op}
	if got := *m.Hdr(); got != want {
		t.Errorf("header = %+v, want %+v", got, want)
	}
}

// lookup returns the value of key in doc, failing the test if it is missing.
func lookup(t *testing.T, doc []byte, key ...string) bson.RawValue {
	t.Helper()
	v, err := bson.Raw(doc).LookupErr(key...)
	if err != nil {
		t.Fatalf("lookup %v in %s: %v", key, bson.Raw(doc), err)
	}
	return v
}

func checkInsertSequence(t *testing.T, msg *Msg) {
	t.Helper()
	if len(msg.Sections) != 2 || msg.Sections[0].Kind != SectionBody || msg.Sections[1].Kind != SectionSequence {
		t.Fatalf("sections = %+v, want a body then a sequence", msg.Sections)
	}
	if got := lookup(t, msg.Body(), "insert").StringValue(); got != "coll" {
		t.Errorf("insert = %q", got)
	}
	seq := msg.Sections[1]
	if seq.Identifier != "documents" || len(seq.Documents) != 3 {
		t.Fatalf("sequence %q with %d documents, want \"documents\" with 3", seq.Identifier, len(seq.Documents))
	}
	for i, d := range seq.Documents {
		if !bytes.Equal(d, insertedDocs(t)[i]) {
			t.Errorf("documents[%d] = %s", i, bson.Raw(d))
		}
	}
}

func TestRecordedFrames(t *testing.T) {
	tests := []struct {
		name  string
		check func(t *testing.T, frame []byte, m Message)
	}{
		{"query_hello", func(t *testing.T, frame []byte, m Message) {
			checkHeader(t, m, frame, OpQuery, 1, 0)
			q := m.(*Query)
			if q.Flags != 4 || q.FullCollectionName != "admin.$cmd" || q.NumberToSkip != 0 || q.NumberToReturn != -1 || q.ReturnFields != nil {
				t.Errorf("query = %+v", q)
			}
			if !bytes.Equal(q.Query, helloDoc(t)) {
				t.Errorf("query document = %s", bson.Raw(q.Query))
			}
			if got := lookup(t, q.Query, "compression", "1").StringValue(); got != "snappy" {
				t.Errorf("compression.1 = %q", got)
			}
			if got := lookup(t, q.Query, "client", "driver", "name").StringValue(); got != "mongo-go-driver" {
				t.Errorf("client.driver.name = %q", got)
			}
		}},
		{"query_wrapped", func(t *testing.T, frame []byte, m Message) {
			checkHeader(t, m, frame, OpQuery, 2, 0)
			q := m.(*Query)
			if q.FullCollectionName != "test.$cmd" {
				t.Errorf("collection = %q", q.FullCollectionName)
			}
			want := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
			if got := unwrapQuery(q.Query); !bytes.Equal(got, want) {
				t.Errorf("unwrapQuery = %s, want %s", bson.Raw(got), bson.Raw(want))
			}
		}},
		{"reply_hello", func(t *testing.T, frame []byte, m Message) {
			checkHeader(t, m, frame, OpReply, 1001, 1)
			r := m.(*Reply)
			if r.ResponseFlags != 0 || r.CursorID != 0 || r.StartingFrom != 0 || r.NumberReturned != 1 || len(r.Documents) != 1 {
				t.Fatalf("reply = %+v", r)
			}
			if got := lookup(t, r.Documents[0], "maxMessageSizeBytes").Int32(); got != MaxMessageSize {
				t.Errorf("maxMessageSizeBytes = %d", got)
			}
		}},
		{"msg_find", func(t *testing.T, frame []byte, m Message) {
			checkHeader(t, m, frame, OpMsg, 3, 0)
			msg := m.(*Msg)
			if msg.Flags != 0 || len(msg.Sections) != 1 || msg.Checksum != 0 {
				t.Errorf("msg = %+v", msg)
			}
			if !bytes.Equal(msg.Body(), findDoc(t)) {
				t.Errorf("body = %s", bson.Raw(msg.Body()))
			}
		}},
		{"msg_insert_seq", func(t *testing.T, frame []byte, m Message) {
			checkHeader(t, m, frame, OpMsg, 4, 0)
			msg := m.(*Msg)
			if msg.Flags != 0 {
				t.Errorf("flags = %#x", msg.Flags)
			}
			checkInsertSequence(t, msg)
		}},
		{"msg_checksum", func(t *testing.T, frame []byte, m Message) {
			checkHeader(t, m, frame, OpMsg, 5, 0)
			msg := m.(*Msg)
			if msg.Flags != FlagChecksumPresent {
				t.Errorf("flags = %#x", msg.Flags)
			}
			if want := crc32c(frame[:len(frame)-4]); msg.Checksum != want {
				t.Errorf("checksum = %#08x, want %#08x", msg.Checksum, want)
			}
			if !bytes.Equal(msg.Body(), findDoc(t)) {
				t.Errorf("body = %s", bson.Raw(msg.Body()))
			}
		}},
		{"msg_more_to_come", func(t *testing.T, frame []byte, m Message) {
			checkHeader(t, m, frame, OpMsg, 6, 0)
			msg := m.(*Msg)
			if msg.Flags != FlagMoreToCome {
				t.Errorf("flags = %#x", msg.Flags)
			}
			if len(msg.Sections) != 2 || msg.Sections[0].Kind != SectionSequence || len(msg.Sections[0].Documents) != 1 {
				t.Fatalf("sections = %+v", msg.Sections)
			}
			if got := lookup(t, msg.Body(), "writeConcern", "w").Int32(); got != 0 {
				t.Errorf("w = %d", got)
			}
		}},
	}
	for i, c := range []CompressorID{CompressorSnappy, CompressorZlib, CompressorZstd} {
		name := map[CompressorID]string{CompressorSnappy: "snappy", CompressorZlib: "zlib", CompressorZstd: "zstd"}[c]
		reqID := int32(20 + i)
		tests = append(tests, struct {
			name  string
			check func(t *testing.T, frame []byte, m Message)
		}{"compressed_" + name, func(t *testing.T, frame []byte, m Message) {
			checkHeader(t, m, frame, OpCompressed, reqID, 0)
			cm := m.(*Compressed)
			if cm.CompressorID != c || cm.OriginalOpCode != OpMsg {
				t.Errorf("compressed = %+v", cm)
			}
			inner, err := cm.Open()
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if int(cm.UncompressedSize) != int(inner.Hdr().MessageLength)-HeaderSize {
				t.Errorf("uncompressedSize %d, inner frame %d bytes", cm.UncompressedSize, inner.Hdr().MessageLength)
			}
			checkHeader(t, inner, loadFrame(t, "msg_insert_seq"), OpMsg, reqID, 0)
			checkInsertSequence(t, inner.(*Msg))
		}})
	}

	names, _ := allRecordedFrames(t)
	if len(names) != len(tests) {
		t.Errorf("testdata has %d frames %v, the table checks %d", len(names), names, len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame := loadFrame(t, tc.name)
			m := decodeFrame(t, frame)
			tc.check(t, frame, m)
			if got := Encode(nil, m); !bytes.Equal(got, frame) {
				t.Errorf("Encode does not give back the frame:\n got %x\nwant %x", got, frame)
			}
			// Encode appends: a prefix in dst is kept.
			if got := Encode([]byte("prefix"), m); !bytes.Equal(got, append([]byte("prefix"), frame...)) {
				t.Error("Encode(dst) does not append to dst")
			}
		})
	}
}

// TestTruncatedFrames cuts every recorded frame at every length.
func TestTruncatedFrames(t *testing.T) {
	names, frames := allRecordedFrames(t)
	for i, frame := range frames {
		for n := range len(frame) {
			cut := frame[:n]
			// As a stream: ReadFrame must not return a partial frame.
			if _, err := ReadFrame(bytes.NewReader(cut), nil, MaxMessageSize); err == nil {
				t.Fatalf("%s cut at %d: ReadFrame succeeded", names[i], n)
			} else if n == 0 && err != io.EOF {
				t.Fatalf("%s: ReadFrame of nothing = %v, want io.EOF", names[i], err)
			} else if n > 0 && err != io.ErrUnexpectedEOF {
				t.Fatalf("%s cut at %d: ReadFrame = %v, want io.ErrUnexpectedEOF", names[i], n, err)
			}
			// As a frame: the header's length no longer matches.
			if _, err := Decode(cut); err == nil || !IsFatal(err) {
				t.Fatalf("%s cut at %d: Decode = %v, want a fatal error", names[i], n, err)
			}
			if n < HeaderSize {
				continue
			}
			// With a length that agrees: an error, or a shorter message that
			// still encodes to the same bytes (e.g. an OP_MSG cut between sections).
			fixed := setLength(cut, int32(n))
			m, err := Decode(fixed)
			if err != nil {
				continue
			}
			if c, ok := m.(*Compressed); ok {
				if _, err := c.Open(); err == nil {
					t.Errorf("%s cut at %d: Open of a truncated payload succeeded", names[i], n)
				}
			}
			if got := Encode(nil, m); !bytes.Equal(got, fixed) {
				t.Errorf("%s cut at %d: decoded but does not encode back", names[i], n)
			}
		}
	}
}

func TestReadFrameLengths(t *testing.T) {
	body := loadFrame(t, "msg_find")[4:]
	tests := []struct {
		name   string
		length int32
		data   []byte // after the length; nil: body
		fatal  bool   // want a fatal ProtocolError
		err    error  // or this error
	}{
		{name: "zero", length: 0, fatal: true},
		{name: "one under a header", length: HeaderSize - 1, fatal: true},
		{name: "negative", length: -1, fatal: true},
		{name: "min int32", length: -1 << 31, fatal: true},
		{name: "one over the max", length: MaxMessageSize + 1, fatal: true},
		{name: "max int32", length: 1<<31 - 1, fatal: true},
		{name: "longer than the data", length: int32(len(body) + 4 + 1), err: io.ErrUnexpectedEOF},
		{name: "header only, data missing", length: HeaderSize, data: []byte{1, 2, 3}, err: io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data
			if data == nil {
				data = body
			}
			_, err := ReadFrame(bytes.NewReader(cat(le32(tc.length), data)), nil, MaxMessageSize)
			if err == nil {
				t.Fatal("ReadFrame succeeded")
			}
			if !IsFatal(err) {
				t.Errorf("error %v is not fatal", err)
			}
			if tc.fatal {
				asProtocolError(t, err)
			} else if !errors.Is(err, tc.err) {
				t.Errorf("error = %v, want %v", err, tc.err)
			}
		})
	}

	t.Run("partial length", func(t *testing.T) {
		if _, err := ReadFrame(bytes.NewReader([]byte{20, 0}), nil, MaxMessageSize); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("error = %v, want io.ErrUnexpectedEOF", err)
		}
	})
	t.Run("smaller maxSize", func(t *testing.T) {
		frame := loadFrame(t, "msg_find")
		if _, err := ReadFrame(bytes.NewReader(frame), nil, len(frame)-1); err == nil || !IsFatal(err) {
			t.Errorf("error = %v, want fatal", err)
		}
		if _, err := ReadFrame(bytes.NewReader(frame), nil, len(frame)); err != nil {
			t.Errorf("frame of exactly maxSize: %v", err)
		}
	})
	t.Run("buffer reuse", func(t *testing.T) {
		a, b := loadFrame(t, "msg_insert_seq"), loadFrame(t, "msg_find")
		r := bytes.NewReader(cat(a, b))
		buf := make([]byte, 0, 1024)
		got, err := ReadFrame(r, buf, MaxMessageSize)
		if err != nil || !bytes.Equal(got, a) || &got[0] != &buf[:1][0] {
			t.Fatalf("first frame: %v (reused buffer: %v)", err, err == nil && &got[0] == &buf[:1][0])
		}
		got, err = ReadFrame(r, got[:0], MaxMessageSize)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("second frame: %v", err)
		}
		if _, err := ReadFrame(r, got[:0], MaxMessageSize); err != io.EOF {
			t.Fatalf("after the last frame: %v, want io.EOF", err)
		}
	})
}

// TestDecodeMalformed checks the errors for frames that are read whole but
// are not valid messages.
func TestDecodeMalformed(t *testing.T) {
	doc := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
	badDoc := cat(le32(12), []byte{0x14, 'a', 0, 1, 2, 3, 4, 0}) // unknown type 0x14
	checksummed := withChecksum(rawFrame(7, 0, OpMsg, le32(int32(FlagChecksumPresent)), bodySection(doc)))
	badSum := bytes.Clone(checksummed)
	badSum[len(badSum)-1] ^= 0xff
	badSumBody := bytes.Clone(checksummed)
	badSumBody[HeaderSize+4+1+4+1] ^= 0x01 // a byte of "ping"
	zeroSum := withChecksum(rawFrame(7, 0, OpMsg, le32(int32(FlagChecksumPresent)), bodySection(doc)))
	zeroSum = setLength(append(zeroSum[:len(zeroSum)-4], 0, 0, 0, 0), int32(len(zeroSum)))

	tests := []struct {
		name  string
		frame []byte
		fatal bool
		want  string // substring of the error
	}{
		// header
		{"empty", nil, true, "shorter than a header"},
		{"15 bytes", make([]byte, 15), true, "shorter than a header"},
		{"length < actual", setLength(rawFrame(1, 0, OpMsg, le32(0), bodySection(doc)), 20), true, "does not match"},
		{"length > actual", setLength(rawFrame(1, 0, OpMsg, le32(0), bodySection(doc)), 100), true, "does not match"},
		{"length negative", setLength(rawFrame(1, 0, OpMsg, le32(0), bodySection(doc)), -5), true, "does not match"},

		// opcodes
		{"unknown opcode", rawFrame(1, 0, 9999, doc), false, "unsupported opcode"},
		{"OP_COMMAND", rawFrame(1, 0, 2010, doc), false, "unsupported opcode"},
		{"OP_INSERT", rawFrame(1, 0, 2002, doc), false, "unsupported opcode"},
		{"OP_MSG without a body", rawFrame(1, 0, OpMsg), false, "too short for its flags"},

		// OP_MSG flags
		{"required flag bit 2", rawFrame(1, 0, OpMsg, le32(1<<2), bodySection(doc)), false, "unknown required flag bits 0x4"},
		{"required flag bit 15", rawFrame(1, 0, OpMsg, le32(1<<15), bodySection(doc)), false, "unknown required flag bits 0x8000"},

		// OP_MSG checksum
		{"bad checksum", badSum, false, "checksum mismatch"},
		{"body changed under checksum", badSumBody, false, "checksum mismatch"},
		{"zero checksum", zeroSum, false, "checksum mismatch"},
		{"checksum flag, no room", rawFrame(1, 0, OpMsg, le32(int32(FlagChecksumPresent)), []byte{0, 0}), false, "too short for its checksum"},
		{"checksum flag, no checksum", rawFrame(1, 0, OpMsg, le32(int32(FlagChecksumPresent)), bodySection(doc)), false, "checksum mismatch"},

		// OP_MSG sections
		{"zero sections", rawFrame(1, 0, OpMsg, le32(0)), false, "exactly one body section, found 0"},
		{"only a sequence", rawFrame(1, 0, OpMsg, le32(0), seqSection("documents", doc)), false, "found 0"},
		{"two bodies", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), bodySection(doc)), false, "found 2"},
		{"two bodies around a sequence", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), seqSection("d"), bodySection(doc)), false, "found 2"},
		{"section kind 2", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{2}, doc), false, "unknown section kind 2"},
		{"body kind byte only", rawFrame(1, 0, OpMsg, le32(0), []byte{0}), false, "OP_MSG body"},
		{"body truncated", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc)[:len(doc)]), false, "OP_MSG body"},
		{"body invalid BSON", rawFrame(1, 0, OpMsg, le32(0), bodySection(badDoc)), false, "unknown BSON type 0x14"},
		{"trailing byte after body", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{0}), false, "OP_MSG body"},

		// OP_MSG document sequences
		{"sequence size missing", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1, 5, 0}), false, "too short for its size"},
		{"sequence size 4", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1}, le32(4), []byte{0}), false, "size 4 out of range"},
		{"sequence size 0", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1}, le32(0)), false, "size 0 out of range"},
		{"sequence size negative", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1}, le32(-100), cstr("d")), false, "size -100 out of range"},
		{"sequence size past the end", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1}, le32(100), cstr("d"), doc), false, "size 100 out of range"},
		{"sequence size huge", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1}, le32(1<<31-1), cstr("d")), false, "out of range"},
		{"sequence identifier unterminated", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1}, le32(7), []byte("abc")), false, "identifier"},
		{"sequence size cuts a document", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1}, le32(int32(4+2+len(doc)-1)), cstr("d"), doc), false, "document sequence \"d\""},
		{"sequence with invalid BSON", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), seqSection("d", doc, badDoc)), false, "unknown BSON type"},
		{"sequence size shorter than the section", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), []byte{1}, le32(6), cstr("d"), doc), false, "unknown section kind"},

		// OP_QUERY
		{"query empty", rawFrame(1, 0, OpQuery), false, "OP_QUERY too short"},
		{"query name unterminated", rawFrame(1, 0, OpQuery, le32(0), []byte("admin.$cmd")), false, "unterminated string"},
		{"query no skip/return", rawFrame(1, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0)), false, "OP_QUERY too short"},
		{"query no document", rawFrame(1, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0), le32(-1)), false, "OP_QUERY query"},
		{"query invalid document", rawFrame(1, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0), le32(-1), badDoc), false, "OP_QUERY query"},
		{"query bad returnFields", rawFrame(1, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0), le32(-1), doc, badDoc), false, "returnFieldsSelector"},
		{"query trailing bytes", rawFrame(1, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0), le32(-1), doc, doc, []byte{1}), false, "1 trailing bytes"},
		{"query two trailing documents", rawFrame(1, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0), le32(-1), doc, doc, doc), false, "trailing bytes"},

		// OP_REPLY
		{"reply too short", rawFrame(1, 0, OpReply, make([]byte, 19)), false, "OP_REPLY too short"},
		{"reply numberReturned too high", rawFrame(1, 0, OpReply, make([]byte, 16), le32(2), doc), false, "numberReturned 2 but 1"},
		{"reply numberReturned negative", rawFrame(1, 0, OpReply, make([]byte, 16), le32(-1)), false, "numberReturned -1 but 0"},
		{"reply invalid document", rawFrame(1, 0, OpReply, make([]byte, 16), le32(1), badDoc), false, "OP_REPLY document"},

		// OP_COMPRESSED
		{"compressed too short", rawFrame(1, 0, OpCompressed, le32(int32(OpMsg)), le32(0)), true, "too short"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(tc.frame)
			if err == nil {
				t.Fatalf("Decode succeeded: %+v", m)
			}
			if m != nil {
				t.Errorf("Decode returned a message with its error")
			}
			pe := asProtocolError(t, err)
			if pe.Fatal != tc.fatal || IsFatal(err) != tc.fatal {
				t.Errorf("fatal = %v, want %v (%v)", pe.Fatal, tc.fatal, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestDecodeEdgeCases are valid frames at the limits of the format.
func TestDecodeEdgeCases(t *testing.T) {
	doc := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
	empty := mustDoc(t, bson.D{})
	tests := []struct {
		name  string
		frame []byte
		check func(t *testing.T, m Message)
	}{
		{"optional flag bits are kept", rawFrame(1, 0, OpMsg, binary.LittleEndian.AppendUint32(nil, FlagExhaustAllowed|1<<20|1<<31), bodySection(doc)), func(t *testing.T, m Message) {
			if f := m.(*Msg).Flags; f != FlagExhaustAllowed|1<<20|1<<31 {
				t.Errorf("flags = %#x", f)
			}
		}},
		{"all known flags", withChecksum(rawFrame(1, 0, OpMsg, le32(int32(knownFlags)), bodySection(doc))), nil},
		{"empty sequence", rawFrame(1, 0, OpMsg, le32(0), bodySection(doc), seqSection("documents")), func(t *testing.T, m Message) {
			s := m.(*Msg).Sections[1]
			if s.Identifier != "documents" || len(s.Documents) != 0 {
				t.Errorf("sequence = %+v", s)
			}
		}},
		{"empty identifier", rawFrame(1, 0, OpMsg, le32(0), seqSection("", doc), bodySection(doc)), nil},
		{"several sequences", rawFrame(1, 0, OpMsg, le32(0), seqSection("a", doc), bodySection(empty), seqSection("b", doc, doc, empty)), func(t *testing.T, m Message) {
			msg := m.(*Msg)
			if len(msg.Sections) != 3 || msg.Sections[2].Identifier != "b" || len(msg.Sections[2].Documents) != 3 {
				t.Errorf("sections = %+v", msg.Sections)
			}
			if !bytes.Equal(msg.Body(), empty) {
				t.Errorf("body = %x", msg.Body())
			}
		}},
		{"empty body", rawFrame(1, 0, OpMsg, le32(0), bodySection(empty)), nil},
		{"query with returnFields", rawFrame(1, 0, OpQuery, le32(0), cstr("db.$cmd"), le32(0), le32(1), doc, empty), func(t *testing.T, m Message) {
			if q := m.(*Query); !bytes.Equal(q.ReturnFields, empty) {
				t.Errorf("returnFields = %x", q.ReturnFields)
			}
		}},
		{"query empty name", rawFrame(1, 0, OpQuery, le32(0), cstr(""), le32(0), le32(0), doc), nil},
		{"reply with no documents", rawFrame(1, 0, OpReply, le32(8), binary.LittleEndian.AppendUint64(nil, 1<<40), le32(3), le32(0)), func(t *testing.T, m Message) {
			r := m.(*Reply)
			if r.ResponseFlags != 8 || r.CursorID != 1<<40 || r.StartingFrom != 3 || len(r.Documents) != 0 {
				t.Errorf("reply = %+v", r)
			}
		}},
		{"reply with several documents", rawFrame(1, 0, OpReply, make([]byte, 16), le32(3), doc, empty, doc), nil},
		{"compressed with empty payload", rawFrame(1, 0, OpCompressed, le32(int32(OpMsg)), le32(0), []byte{0}), nil},
		{"negative ids", rawFrame(-7, -8, OpMsg, le32(0), bodySection(doc)), func(t *testing.T, m Message) {
			if h := m.Hdr(); h.RequestID != -7 || h.ResponseTo != -8 {
				t.Errorf("header = %+v", h)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := decodeFrame(t, tc.frame)
			if tc.check != nil {
				tc.check(t, m)
			}
			if got := Encode(nil, m); !bytes.Equal(got, tc.frame) {
				t.Errorf("Encode does not give back the frame:\n got %x\nwant %x", got, tc.frame)
			}
		})
	}
}

func TestDecodeDeepNesting(t *testing.T) {
	for _, depth := range []int{MaxDocumentDepth + 1, 1000, 100_000} {
		doc := nestedDoc(depth, 0x03)
		for _, frame := range [][]byte{
			rawFrame(1, 0, OpMsg, le32(0), bodySection(doc)),
			rawFrame(1, 0, OpMsg, le32(0), bodySection(mustDoc(t, bson.D{})), seqSection("documents", doc)),
			rawFrame(1, 0, OpQuery, le32(0), cstr("admin.$cmd"), le32(0), le32(-1), doc),
			rawFrame(1, 0, OpReply, make([]byte, 16), le32(1), doc),
		} {
			_, err := Decode(frame)
			if err == nil {
				t.Fatalf("depth %d: Decode succeeded", depth)
			}
			if IsFatal(err) || !strings.Contains(err.Error(), "nested deeper than 200") {
				t.Errorf("depth %d: error = %.200v (fatal %v)", depth, err, IsFatal(err))
			}
		}
	}
	frame := rawFrame(1, 0, OpMsg, le32(0), bodySection(nestedDoc(MaxDocumentDepth, 0x03)))
	if _, err := Decode(frame); err != nil {
		t.Errorf("depth %d: %v", MaxDocumentDepth, err)
	}
}

func TestEncodeChecksum(t *testing.T) {
	doc := mustDoc(t, bson.D{{Key: "ping", Value: int32(1)}})
	m := &Msg{
		Header:   Header{RequestID: 9, ResponseTo: 3, OpCode: OpMsg},
		Flags:    FlagChecksumPresent | FlagExhaustAllowed,
		Sections: []Section{{Kind: SectionBody, Documents: [][]byte{doc}}, {Kind: SectionSequence, Identifier: "updates", Documents: [][]byte{doc, doc}}},
		Checksum: 0xdeadbeef, // recomputed by Encode
	}
	frame := Encode([]byte{1, 2, 3}, m)[3:]
	if want := crc32c(frame[:len(frame)-4]); m.Checksum != want || binary.LittleEndian.Uint32(frame[len(frame)-4:]) != want {
		t.Errorf("checksum %#08x, frame has %#08x, want %#08x", m.Checksum, binary.LittleEndian.Uint32(frame[len(frame)-4:]), want)
	}
	if m.Header.MessageLength != int32(len(frame)) {
		t.Errorf("MessageLength = %d, frame is %d bytes", m.Header.MessageLength, len(frame))
	}
	got := decodeFrame(t, frame).(*Msg)
	if got.Checksum != m.Checksum || got.Flags != m.Flags || len(got.Sections) != 2 || len(got.Sections[1].Documents) != 2 {
		t.Errorf("decoded = %+v", got)
	}
}

func BenchmarkDecodeMsg(b *testing.B) {
	for _, name := range []string{"msg_find", "msg_insert_seq", "msg_checksum"} {
		frame := loadFrame(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if _, err := Decode(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
