package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// OpCode identifies the kind of a wire message.
type OpCode int32

// The opcodes Parsec understands.
const (
	OpReply      OpCode = 1
	OpQuery      OpCode = 2004
	OpCompressed OpCode = 2012
	OpMsg        OpCode = 2013
)

func (o OpCode) String() string {
	switch o {
	case OpReply:
		return "OP_REPLY"
	case OpQuery:
		return "OP_QUERY"
	case OpCompressed:
		return "OP_COMPRESSED"
	case OpMsg:
		return "OP_MSG"
	}
	return fmt.Sprintf("opcode(%d)", int32(o))
}

// Limits of the protocol as Parsec enforces them.
const (
	HeaderSize     = 16
	MaxMessageSize = 48_000_000
	// MaxBSONObjectSize is the largest document a client may store.
	MaxBSONObjectSize = 16 * 1024 * 1024
	// MaxCommandSize leaves room for the command fields around a maximal document.
	MaxCommandSize = MaxBSONObjectSize + 16*1024
)

// OP_MSG flag bits.
const (
	FlagChecksumPresent uint32 = 1 << 0
	FlagMoreToCome      uint32 = 1 << 1
	FlagExhaustAllowed  uint32 = 1 << 16
	// flags a sender may set; any other required bit (0-15) is an error.
	knownFlags = FlagChecksumPresent | FlagMoreToCome | FlagExhaustAllowed
)

// Header is the 16-byte prefix of every message.
type Header struct {
	MessageLength int32
	RequestID     int32
	ResponseTo    int32
	OpCode        OpCode
}

// ProtocolError describes a malformed frame. Fatal errors leave the stream in
// an unknown state: the connection must be closed.
type ProtocolError struct {
	Msg   string
	Fatal bool
}

func (e *ProtocolError) Error() string { return e.Msg }

func protoErr(fatal bool, format string, args ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, args...), Fatal: fatal}
}

// IsFatal reports whether err requires closing the connection.
func IsFatal(err error) bool {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Fatal
	}
	return true
}

// Message is a decoded frame: one of *Msg, *Query, *Reply or *Compressed.
type Message interface {
	// Header returns the frame header; MessageLength is that of the frame
	// the message was decoded from (or will be encoded to, once encoded).
	Hdr() *Header
	// appendBody appends everything after the header.
	appendBody(dst []byte) []byte
}

// Section kinds of OP_MSG.
const (
	SectionBody     byte = 0
	SectionSequence byte = 1
)

// Section is one OP_MSG section: a body (Kind 0) or a document sequence (Kind 1).
type Section struct {
	Kind       byte
	Identifier string   // Kind 1 only
	Documents  [][]byte // one document for Kind 0
}

// Msg is an OP_MSG message.
type Msg struct {
	Header   Header
	Flags    uint32
	Sections []Section
	Checksum uint32 // valid when Flags has FlagChecksumPresent
}

// Hdr implements Message.
func (m *Msg) Hdr() *Header { return &m.Header }

// Body returns the kind-0 section's document.
func (m *Msg) Body() []byte {
	for _, s := range m.Sections {
		if s.Kind == SectionBody {
			return s.Documents[0]
		}
	}
	return nil
}

func (m *Msg) appendBody(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, m.Flags)
	for _, s := range m.Sections {
		dst = append(dst, s.Kind)
		if s.Kind == SectionBody {
			dst = append(dst, s.Documents[0]...)
			continue
		}
		size := 4 + len(s.Identifier) + 1
		for _, d := range s.Documents {
			size += len(d)
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(size))
		dst = append(dst, s.Identifier...)
		dst = append(dst, 0)
		for _, d := range s.Documents {
			dst = append(dst, d...)
		}
	}
	if m.Flags&FlagChecksumPresent != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, m.Checksum)
	}
	return dst
}

// Query is an OP_QUERY message.
type Query struct {
	Header             Header
	Flags              int32
	FullCollectionName string
	NumberToSkip       int32
	NumberToReturn     int32
	Query              []byte
	ReturnFields       []byte // optional
}

// Hdr implements Message.
func (q *Query) Hdr() *Header { return &q.Header }

func (q *Query) appendBody(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(q.Flags))
	dst = append(dst, q.FullCollectionName...)
	dst = append(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(q.NumberToSkip))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(q.NumberToReturn))
	dst = append(dst, q.Query...)
	return append(dst, q.ReturnFields...)
}

// Reply is an OP_REPLY message.
type Reply struct {
	Header         Header
	ResponseFlags  int32
	CursorID       int64
	StartingFrom   int32
	NumberReturned int32
	Documents      [][]byte
}

// Hdr implements Message.
func (r *Reply) Hdr() *Header { return &r.Header }

func (r *Reply) appendBody(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.ResponseFlags))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.CursorID))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.StartingFrom))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.NumberReturned))
	for _, d := range r.Documents {
		dst = append(dst, d...)
	}
	return dst
}

// Compressed is an OP_COMPRESSED message, kept compressed. Decompress it with
// (*Compressed).Open.
type Compressed struct {
	Header           Header
	OriginalOpCode   OpCode
	UncompressedSize int32
	CompressorID     CompressorID
	Payload          []byte
}

// Hdr implements Message.
func (c *Compressed) Hdr() *Header { return &c.Header }

func (c *Compressed) appendBody(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(c.OriginalOpCode))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(c.UncompressedSize))
	dst = append(dst, byte(c.CompressorID))
	return append(dst, c.Payload...)
}

// Open decompresses c and decodes the message inside it. The inner message
// keeps c's requestID and responseTo.
func (c *Compressed) Open() (Message, error) {
	if c.OriginalOpCode == OpCompressed {
		return nil, protoErr(true, "OP_COMPRESSED may not wrap OP_COMPRESSED")
	}
	if c.UncompressedSize < 0 || c.UncompressedSize > MaxMessageSize-HeaderSize {
		return nil, protoErr(true, "OP_COMPRESSED uncompressedSize %d out of range", c.UncompressedSize)
	}
	body, err := decompress(c.CompressorID, c.Payload, int(c.UncompressedSize))
	if err != nil {
		return nil, protoErr(true, "OP_COMPRESSED: %v", err)
	}
	h := c.Header
	h.OpCode = c.OriginalOpCode
	h.MessageLength = int32(HeaderSize + len(body))
	return decodeBody(h, body, nil)
}

// Encode appends the frame of m to dst, setting m's MessageLength and, for an
// OP_MSG with FlagChecksumPresent, computing its checksum.
func Encode(dst []byte, m Message) []byte {
	start := len(dst)
	h := m.Hdr()
	dst = append(dst, make([]byte, HeaderSize)...)
	dst = m.appendBody(dst)
	if msg, ok := m.(*Msg); ok && msg.Flags&FlagChecksumPresent != 0 {
		binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
		putHeaderRest(dst[start:], h)
		sum := crc32.Checksum(dst[start:len(dst)-4], castagnoli)
		msg.Checksum = sum
		binary.LittleEndian.PutUint32(dst[len(dst)-4:], sum)
	}
	h.MessageLength = int32(len(dst) - start)
	binary.LittleEndian.PutUint32(dst[start:], uint32(h.MessageLength))
	putHeaderRest(dst[start:], h)
	return dst
}

func putHeaderRest(b []byte, h *Header) {
	binary.LittleEndian.PutUint32(b[4:], uint32(h.RequestID))
	binary.LittleEndian.PutUint32(b[8:], uint32(h.ResponseTo))
	binary.LittleEndian.PutUint32(b[12:], uint32(h.OpCode))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ReadFrame reads one whole frame from r into buf (grown as needed) and
// returns it. Lengths outside [HeaderSize, maxSize] are fatal errors: the
// stream can no longer be trusted.
func ReadFrame(r io.Reader, buf []byte, maxSize int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(hdr[:])))
	if n < HeaderSize || n > maxSize {
		return nil, protoErr(true, "message length %d outside [%d, %d]", n, HeaderSize, maxSize)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	copy(buf, hdr[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// ParseHeader reads the header at the start of frame.
func ParseHeader(frame []byte) (Header, error) {
	if len(frame) < HeaderSize {
		return Header{}, protoErr(true, "frame of %d bytes is shorter than a header", len(frame))
	}
	h := Header{
		MessageLength: int32(binary.LittleEndian.Uint32(frame)),
		RequestID:     int32(binary.LittleEndian.Uint32(frame[4:])),
		ResponseTo:    int32(binary.LittleEndian.Uint32(frame[8:])),
		OpCode:        OpCode(int32(binary.LittleEndian.Uint32(frame[12:]))),
	}
	if int(h.MessageLength) != len(frame) {
		return h, protoErr(true, "header length %d does not match frame of %d bytes", h.MessageLength, len(frame))
	}
	return h, nil
}

// Decode decodes a whole frame. Documents in the result alias frame.
// OP_COMPRESSED is returned as *Compressed; call Open to get the inner message.
func Decode(frame []byte) (Message, error) {
	h, err := ParseHeader(frame)
	if err != nil {
		return nil, err
	}
	return decodeBody(h, frame[HeaderSize:], frame)
}

// decodeBody decodes the part of a message after its header. frame, when
// not nil, is the whole frame (needed to verify an OP_MSG checksum).
func decodeBody(h Header, body, frame []byte) (Message, error) {
	// The decoders return concrete pointer types: on error, return a nil
	// Message, not an interface holding a nil pointer.
	var m Message
	var err error
	switch h.OpCode {
	case OpMsg:
		m, err = decodeMsg(h, body, frame)
	case OpQuery:
		m, err = decodeQuery(h, body)
	case OpReply:
		m, err = decodeReply(h, body)
	case OpCompressed:
		if len(body) < 9 {
			return nil, protoErr(true, "OP_COMPRESSED of %d bytes is too short", len(body))
		}
		return &Compressed{
			Header:           h,
			OriginalOpCode:   OpCode(int32(binary.LittleEndian.Uint32(body))),
			UncompressedSize: int32(binary.LittleEndian.Uint32(body[4:])),
			CompressorID:     CompressorID(body[8]),
			Payload:          body[9:],
		}, nil
	default:
		return nil, protoErr(false, "unsupported opcode %d", int32(h.OpCode))
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func decodeMsg(h Header, body, frame []byte) (*Msg, error) {
	if len(body) < 4 {
		return nil, protoErr(false, "OP_MSG too short for its flags")
	}
	m := &Msg{Header: h, Flags: binary.LittleEndian.Uint32(body)}
	if m.Flags&0xffff&^knownFlags != 0 {
		return nil, protoErr(false, "OP_MSG has unknown required flag bits %#x", m.Flags&0xffff&^knownFlags)
	}
	rest := body[4:]
	if m.Flags&FlagChecksumPresent != 0 {
		if len(rest) < 4 {
			return nil, protoErr(false, "OP_MSG too short for its checksum")
		}
		m.Checksum = binary.LittleEndian.Uint32(rest[len(rest)-4:])
		rest = rest[:len(rest)-4]
		if frame != nil {
			if got := crc32.Checksum(frame[:len(frame)-4], castagnoli); got != m.Checksum {
				return nil, protoErr(false, "OP_MSG checksum mismatch: computed %#08x, frame says %#08x", got, m.Checksum)
			}
		}
	}
	bodies := 0
	for len(rest) > 0 {
		kind := rest[0]
		rest = rest[1:]
		switch kind {
		case SectionBody:
			doc, n, err := readDocument(rest)
			if err != nil {
				return nil, protoErr(false, "OP_MSG body: %v", err)
			}
			rest = rest[n:]
			bodies++
			m.Sections = append(m.Sections, Section{Kind: SectionBody, Documents: [][]byte{doc}})
		case SectionSequence:
			if len(rest) < 4 {
				return nil, protoErr(false, "OP_MSG document sequence too short for its size")
			}
			size := int(int32(binary.LittleEndian.Uint32(rest)))
			if size < 5 || size > len(rest) {
				return nil, protoErr(false, "OP_MSG document sequence size %d out of range", size)
			}
			seq := rest[4:size]
			rest = rest[size:]
			id, n, err := readCString(seq)
			if err != nil {
				return nil, protoErr(false, "OP_MSG document sequence identifier: %v", err)
			}
			seq = seq[n:]
			s := Section{Kind: SectionSequence, Identifier: id}
			for len(seq) > 0 {
				doc, n, err := readDocument(seq)
				if err != nil {
					return nil, protoErr(false, "OP_MSG document sequence %q: %v", errorName(id), err)
				}
				s.Documents = append(s.Documents, doc)
				seq = seq[n:]
			}
			m.Sections = append(m.Sections, s)
		default:
			return nil, protoErr(false, "OP_MSG has unknown section kind %d", kind)
		}
	}
	if bodies != 1 {
		return nil, protoErr(false, "OP_MSG must have exactly one body section, found %d", bodies)
	}
	return m, nil
}

func decodeQuery(h Header, body []byte) (*Query, error) {
	if len(body) < 4 {
		return nil, protoErr(false, "OP_QUERY too short")
	}
	q := &Query{Header: h, Flags: int32(binary.LittleEndian.Uint32(body))}
	rest := body[4:]
	name, n, err := readCString(rest)
	if err != nil {
		return nil, protoErr(false, "OP_QUERY collection name: %v", err)
	}
	q.FullCollectionName = name
	rest = rest[n:]
	if len(rest) < 8 {
		return nil, protoErr(false, "OP_QUERY too short")
	}
	q.NumberToSkip = int32(binary.LittleEndian.Uint32(rest))
	q.NumberToReturn = int32(binary.LittleEndian.Uint32(rest[4:]))
	rest = rest[8:]
	if q.Query, n, err = readDocument(rest); err != nil {
		return nil, protoErr(false, "OP_QUERY query: %v", err)
	}
	rest = rest[n:]
	if len(rest) > 0 {
		if q.ReturnFields, n, err = readDocument(rest); err != nil {
			return nil, protoErr(false, "OP_QUERY returnFieldsSelector: %v", err)
		}
		if n != len(rest) {
			return nil, protoErr(false, "OP_QUERY has %d trailing bytes", len(rest)-n)
		}
	}
	return q, nil
}

func decodeReply(h Header, body []byte) (*Reply, error) {
	if len(body) < 20 {
		return nil, protoErr(false, "OP_REPLY too short")
	}
	r := &Reply{
		Header:         h,
		ResponseFlags:  int32(binary.LittleEndian.Uint32(body)),
		CursorID:       int64(binary.LittleEndian.Uint64(body[4:])),
		StartingFrom:   int32(binary.LittleEndian.Uint32(body[12:])),
		NumberReturned: int32(binary.LittleEndian.Uint32(body[16:])),
	}
	rest := body[20:]
	for len(rest) > 0 {
		doc, n, err := readDocument(rest)
		if err != nil {
			return nil, protoErr(false, "OP_REPLY document: %v", err)
		}
		r.Documents = append(r.Documents, doc)
		rest = rest[n:]
	}
	if int(r.NumberReturned) != len(r.Documents) {
		return nil, protoErr(false, "OP_REPLY numberReturned %d but %d documents", r.NumberReturned, len(r.Documents))
	}
	return r, nil
}

func readCString(b []byte) (string, int, error) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), i + 1, nil
		}
	}
	return "", 0, errors.New("unterminated string")
}

// readDocument reads and validates one BSON document at the start of b.
func readDocument(b []byte) ([]byte, int, error) {
	if len(b) < 5 {
		return nil, 0, fmt.Errorf("document needs at least 5 bytes, have %d", len(b))
	}
	n := int(int32(binary.LittleEndian.Uint32(b)))
	if n < 5 || n > len(b) {
		return nil, 0, fmt.Errorf("document length %d out of range (%d bytes left)", n, len(b))
	}
	if err := ValidateDocument(b[:n]); err != nil {
		return nil, 0, err
	}
	return b[:n:n], n, nil
}
