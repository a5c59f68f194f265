package wire

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// CompressorID is the compressor byte of OP_COMPRESSED.
type CompressorID uint8

// Compressors defined by the wire protocol.
const (
	CompressorNoop   CompressorID = 0
	CompressorSnappy CompressorID = 1
	CompressorZlib   CompressorID = 2
	CompressorZstd   CompressorID = 3
)

// SupportedCompressors lists the names a client may negotiate, in the
// server's order of preference.
var SupportedCompressors = []string{"zstd", "snappy", "zlib"}

// CompressorByName maps a hello "compression" name to its id.
func CompressorByName(name string) (CompressorID, bool) {
	switch name {
	case "snappy":
		return CompressorSnappy, true
	case "zlib":
		return CompressorZlib, true
	case "zstd":
		return CompressorZstd, true
	case "noop":
		return CompressorNoop, true
	}
	return 0, false
}

var (
	zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxMessageSize))
	zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	zlibWriters    = sync.Pool{New: func() any { return zlib.NewWriter(nil) }}
)

// decompress inflates payload, which must inflate to exactly size bytes.
func decompress(id CompressorID, payload []byte, size int) ([]byte, error) {
	var out []byte
	var err error
	switch id {
	case CompressorNoop:
		out = payload
	case CompressorSnappy:
		n, derr := snappy.DecodedLen(payload)
		if derr != nil {
			return nil, fmt.Errorf("snappy: %w", derr)
		}
		if n != size {
			return nil, fmt.Errorf("snappy payload inflates to %d bytes, header says %d", n, size)
		}
		out, err = snappy.Decode(make([]byte, n), payload)
	case CompressorZlib:
		r, zerr := zlib.NewReader(bytes.NewReader(payload))
		if zerr != nil {
			return nil, fmt.Errorf("zlib: %w", zerr)
		}
		// Grow with what actually inflates, not with the size the client
		// claims: a few dozen bytes must not buy a 48 MB allocation. Reading
		// to EOF verifies the Adler-32 checksum; one byte past size shows a
		// stream that inflates too far.
		var buf bytes.Buffer
		if _, rerr := buf.ReadFrom(io.LimitReader(r, int64(size)+1)); rerr != nil {
			err = fmt.Errorf("zlib: %w", rerr)
		} else if buf.Len() > size {
			err = fmt.Errorf("zlib payload inflates past %d bytes", size)
		}
		out = buf.Bytes()
	case CompressorZstd:
		// nil dst: the decoder sizes its output from the frame, not from
		// the client's claim (and is capped at MaxMessageSize).
		out, err = zstdDecoder.DecodeAll(payload, nil)
	default:
		return nil, fmt.Errorf("unknown compressor id %d", id)
	}
	if err != nil {
		return nil, err
	}
	if len(out) != size {
		return nil, fmt.Errorf("payload inflates to %d bytes, header says %d", len(out), size)
	}
	return out, nil
}

// compress deflates body with compressor id, appending to dst.
func compress(dst []byte, id CompressorID, body []byte) []byte {
	switch id {
	case CompressorSnappy:
		return append(dst, snappy.Encode(nil, body)...)
	case CompressorZlib:
		buf := bytes.NewBuffer(dst)
		w := zlibWriters.Get().(*zlib.Writer)
		w.Reset(buf)
		_, _ = w.Write(body)
		_ = w.Close()
		zlibWriters.Put(w)
		return buf.Bytes()
	case CompressorZstd:
		return zstdEncoder.EncodeAll(body, dst)
	}
	return append(dst, body...)
}

// Compress wraps the encoded frame of m in an OP_COMPRESSED frame appended
// to dst.
func Compress(dst []byte, id CompressorID, m Message) []byte {
	inner := Encode(nil, m)
	c := &Compressed{
		Header:           *m.Hdr(),
		OriginalOpCode:   m.Hdr().OpCode,
		UncompressedSize: int32(len(inner) - HeaderSize),
		CompressorID:     id,
	}
	c.Header.OpCode = OpCompressed
	c.Payload = compress(nil, id, inner[HeaderSize:])
	return Encode(dst, c)
}
