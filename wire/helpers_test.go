package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// mustDoc marshals v (usually a bson.D) to a BSON document.
func mustDoc(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		tb.Fatalf("bson.Marshal(%v): %v", v, err)
	}
	return b
}

// rawFrame builds a frame from a header and a body, with a correct length.
func rawFrame(requestID, responseTo int32, op OpCode, parts ...[]byte) []byte {
	b := make([]byte, HeaderSize)
	for _, p := range parts {
		b = append(b, p...)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(requestID))
	binary.LittleEndian.PutUint32(b[8:], uint32(responseTo))
	binary.LittleEndian.PutUint32(b[12:], uint32(op))
	return b
}

// le32 is the little-endian encoding of v.
func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// cstr is s followed by a zero byte.
func cstr(s string) []byte { return append([]byte(s), 0) }

// seqSection is an OP_MSG kind-1 section with a correct size.
func seqSection(id string, docs ...[]byte) []byte {
	payload := cat(append([][]byte{cstr(id)}, docs...)...)
	return cat([]byte{SectionSequence}, le32(int32(4+len(payload))), payload)
}

// bodySection is an OP_MSG kind-0 section.
func bodySection(doc []byte) []byte { return cat([]byte{SectionBody}, doc) }

// withChecksum appends the CRC-32C of frame to it and fixes its length.
func withChecksum(frame []byte) []byte {
	out := append(bytes.Clone(frame), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	sum := crc32c(out[:len(out)-4])
	binary.LittleEndian.PutUint32(out[len(out)-4:], sum)
	return out
}

// crc32c is computed here independently of the package's table.
func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// setLength overwrites the messageLength field of a copy of frame.
func setLength(frame []byte, n int32) []byte {
	out := bytes.Clone(frame)
	binary.LittleEndian.PutUint32(out, uint32(n))
	return out
}

// nestedDoc returns a document nested depth levels deep ({a: {a: ... {}}}),
// counting the outermost document as level 1, using element type typ
// (0x03 document or 0x04 array) for the nesting.
func nestedDoc(depth int, typ byte) []byte {
	const step = 4 + 3 + 1 // length, type+"a\0", terminator
	b := make([]byte, 0, 5+step*(depth-1))
	for level := 1; level < depth; level++ {
		b = binary.LittleEndian.AppendUint32(b, uint32(5+step*(depth-level)))
		b = append(b, typ, 'a', 0)
	}
	b = append(b, 5, 0, 0, 0, 0)
	for level := 1; level < depth; level++ {
		b = append(b, 0)
	}
	return b
}

// asProtocolError returns err as a *ProtocolError or fails the test.
func asProtocolError(tb testing.TB, err error) *ProtocolError {
	tb.Helper()
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		tb.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
	}
	return pe
}

// Hex frame files: '#' starts a comment line, whitespace is ignored.

func parseHexFrame(text []byte) ([]byte, error) {
	var digits strings.Builder
	for line := range strings.SplitSeq(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, f := range strings.Fields(line) {
			digits.WriteString(f)
		}
	}
	return hex.DecodeString(digits.String())
}

func formatHexFrame(comment string, frame []byte) []byte {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(comment, "\n"), "\n") {
		b.WriteString("# " + line + "\n")
	}
	for i := 0; i < len(frame); i += 16 {
		row := frame[i:min(i+16, len(frame))]
		for j := 0; j < len(row); j += 4 {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(hex.EncodeToString(row[j:min(j+4, len(row))]))
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// loadFrame reads testdata/<name>.hex.
func loadFrame(tb testing.TB, name string) []byte {
	tb.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", name+".hex"))
	if err != nil {
		tb.Fatalf("read testdata: %v (regenerate with go test ./wire -run TestGenerateFrames -rewrite)", err)
	}
	frame, err := parseHexFrame(text)
	if err != nil {
		tb.Fatalf("testdata/%s.hex: %v", name, err)
	}
	return frame
}

// allRecordedFrames returns every testdata/*.hex frame by name, sorted.
func allRecordedFrames(tb testing.TB) (names []string, frames [][]byte) {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.hex"))
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".hex")
		names = append(names, name)
		frames = append(frames, loadFrame(tb, name))
	}
	return names, frames
}
