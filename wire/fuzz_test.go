package wire

import (
	"bytes"
	"testing"
)

// FuzzReadMessage feeds arbitrary bytes to the frame reader and decoder.
// Nothing may panic; a message that decodes must encode back to exactly the
// bytes it came from; an OP_COMPRESSED message that opens must survive
// another encode/decode round.
//
//	go test ./wire -run XXX -fuzz FuzzReadMessage -fuzztime 60s
func FuzzReadMessage(f *testing.F) {
	_, frames := allRecordedFrames(f)
	for _, frame := range frames {
		f.Add(frame)
	}
	// A few malformed shapes the mutator would take long to find.
	f.Add([]byte{16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0x07, 0, 0})
	f.Add(withChecksum(rawFrame(1, 0, OpMsg, le32(int32(FlagChecksumPresent)), bodySection(nestedDoc(5, 0x04)))))
	f.Add(rawFrame(1, 0, OpMsg, le32(0), bodySection(nestedDoc(MaxDocumentDepth+1, 0x03))))
	f.Add(compressedFrame(OpCompressed, 30, CompressorNoop, compressedFrame(OpMsg, 5, CompressorNoop, []byte{0, 0, 0, 0, 0})[HeaderSize:]))
	f.Add(compressedFrame(OpQuery, 0, CompressorZlib, nil))

	f.Fuzz(func(t *testing.T, data []byte) {
		frame, err := ReadFrame(bytes.NewReader(data), nil, MaxMessageSize)
		if err != nil {
			return
		}
		m, err := Decode(frame)
		if err != nil {
			if m != nil {
				t.Fatalf("Decode returned a message with error %v", err)
			}
			_ = IsFatal(err)
			return
		}
		if got := Encode(nil, m); !bytes.Equal(got, frame) {
			t.Fatalf("Decode/Encode round trip differs:\n in %x\nout %x", frame, got)
		}
		c, ok := m.(*Compressed)
		if !ok {
			return
		}
		inner, err := c.Open()
		if err != nil {
			if inner != nil {
				t.Fatalf("Open returned a message with error %v", err)
			}
			return
		}
		if inner.Hdr().OpCode == OpCompressed {
			t.Fatal("Open returned an OP_COMPRESSED message")
		}
		// The opened message is not checked against a frame (its checksum
		// is not verified), but once encoded it must decode to the same bytes.
		enc := Encode(nil, inner)
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded inner message does not decode: %v", err)
		}
		if got := Encode(nil, again); !bytes.Equal(got, enc) {
			t.Fatalf("inner message round trip differs")
		}
	})
}
