package wire

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// MaxDocumentDepth bounds the nesting of documents and arrays in a request.
// MongoDB refuses documents nested deeper than this, and a bound keeps
// recursion in this package and above it safe from hostile input.
const MaxDocumentDepth = 200

// ValidateDocument checks that doc is exactly one well-formed BSON document:
// lengths agree, element types are known, strings are zero-terminated, and
// nesting is at most MaxDocumentDepth.
func ValidateDocument(doc []byte) error {
	n, err := validateDoc(doc, 1)
	if err != nil {
		return err
	}
	if n != len(doc) {
		return fmt.Errorf("document has %d trailing bytes", len(doc)-n)
	}
	return nil
}

// validateDoc validates the document at the start of b and returns its length.
func validateDoc(b []byte, depth int) (int, error) {
	if depth > MaxDocumentDepth {
		return 0, fmt.Errorf("document nested deeper than %d levels", MaxDocumentDepth)
	}
	if len(b) < 5 {
		return 0, fmt.Errorf("document needs at least 5 bytes, have %d", len(b))
	}
	n := int(int32(binary.LittleEndian.Uint32(b)))
	if n < 5 || n > len(b) {
		return 0, fmt.Errorf("document length %d out of range (%d bytes left)", n, len(b))
	}
	if b[n-1] != 0 {
		return 0, fmt.Errorf("document does not end with a zero byte")
	}
	p := 4
	for p < n-1 {
		t := b[p]
		p++
		nameStart := p
		end := p
		for end < n-1 && b[end] != 0 {
			end++
		}
		if end >= n-1 {
			return 0, fmt.Errorf("unterminated element name")
		}
		p = end + 1
		size, err := validateValue(t, b[p:n-1], depth)
		if err != nil {
			fe, ok := err.(*fieldError)
			if !ok {
				fe = &fieldError{err: err}
			}
			fe.path = append(fe.path, errorName(b[nameStart:end]))
			return 0, fe
		}
		p += size
	}
	if p != n-1 {
		return 0, fmt.Errorf("document elements overrun its length")
	}
	return n, nil
}

// fieldError is an error inside a field, with the path of field names to
// it, innermost first. The path is collected as the recursion unwinds and
// formatted once: wrapping the message at every level would cost depth
// times the message size, which a deep document with long names makes huge.
type fieldError struct {
	path []string
	err  error
}

func (e *fieldError) Error() string {
	var sb strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		// A deep path shows its outermost and innermost fields only.
		if skip := len(e.path) - maxErrorPath; skip > 1 && i == len(e.path)-maxErrorPath/2-1 {
			fmt.Fprintf(&sb, "(%d more fields): ", skip)
			i -= skip - 1
			continue
		}
		fmt.Fprintf(&sb, "field %q: ", e.path[i])
	}
	sb.WriteString(e.err.Error())
	return sb.String()
}

// maxErrorPath bounds the fields of a path an error message names.
const maxErrorPath = 8

func (e *fieldError) Unwrap() error { return e.err }

// maxErrorName bounds a client-supplied name quoted in an error message.
const maxErrorName = 64

// errorName returns name for an error message, cut to maxErrorName bytes:
// names come from the client and may be megabytes long.
func errorName[T string | []byte](name T) string {
	if len(name) > maxErrorName {
		return string(name[:maxErrorName]) + "..."
	}
	return string(name)
}

// validateValue validates a value of BSON type t at the start of b and returns its size.
func validateValue(t byte, b []byte, depth int) (int, error) {
	need := func(k int) error {
		if len(b) < k {
			return fmt.Errorf("value of type %#x needs %d bytes, have %d", t, k, len(b))
		}
		return nil
	}
	switch t {
	case 0x01, 0x09, 0x11, 0x12: // double, datetime, timestamp, int64
		return 8, need(8)
	case 0x10: // int32
		return 4, need(4)
	case 0x13: // decimal128
		return 16, need(16)
	case 0x08: // bool
		if err := need(1); err != nil {
			return 0, err
		}
		if b[0] > 1 {
			return 0, fmt.Errorf("boolean byte %d is not 0 or 1", b[0])
		}
		return 1, nil
	case 0x06, 0x0A, 0x7F, 0xFF: // undefined, null, maxKey, minKey
		return 0, nil
	case 0x07: // ObjectId
		return 12, need(12)
	case 0x02, 0x0D, 0x0E: // string, JavaScript, symbol
		return validateString(b)
	case 0x03, 0x04: // document, array
		return validateDoc(b, depth+1)
	case 0x05: // binary
		if err := need(5); err != nil {
			return 0, err
		}
		l := int(int32(binary.LittleEndian.Uint32(b)))
		if l < 0 || l > len(b)-5 {
			return 0, fmt.Errorf("binary length %d out of range", l)
		}
		return 5 + l, nil
	case 0x0B: // regex: two cstrings
		p := 0
		for range 2 {
			i := p
			for i < len(b) && b[i] != 0 {
				i++
			}
			if i >= len(b) {
				return 0, fmt.Errorf("unterminated regular expression")
			}
			p = i + 1
		}
		return p, nil
	case 0x0C: // DBPointer: string + 12 bytes
		n, err := validateString(b)
		if err != nil {
			return 0, err
		}
		if len(b) < n+12 {
			return 0, fmt.Errorf("DBPointer too short")
		}
		return n + 12, nil
	case 0x0F: // code with scope: int32 total, string, document
		if err := need(4); err != nil {
			return 0, err
		}
		total := int(int32(binary.LittleEndian.Uint32(b)))
		if total < 14 || total > len(b) {
			return 0, fmt.Errorf("code with scope length %d out of range", total)
		}
		n, err := validateString(b[4:total])
		if err != nil {
			return 0, err
		}
		m, err := validateDoc(b[4+n:total], depth+1)
		if err != nil {
			return 0, err
		}
		if 4+n+m != total {
			return 0, fmt.Errorf("code with scope length mismatch")
		}
		return total, nil
	}
	return 0, fmt.Errorf("unknown BSON type %#x", t)
}

func validateString(b []byte) (int, error) {
	if len(b) < 5 {
		return 0, fmt.Errorf("string needs at least 5 bytes, have %d", len(b))
	}
	l := int(int32(binary.LittleEndian.Uint32(b)))
	if l < 1 || l > len(b)-4 {
		return 0, fmt.Errorf("string length %d out of range", l)
	}
	if b[4+l-1] != 0 {
		return 0, fmt.Errorf("string is not zero-terminated")
	}
	return 4 + l, nil
}
