package value

import "encoding/binary"

// KeyLen is the length of the one EncodeKey encoding that b starts with,
// or false when b does not start with a whole, well-formed one. Because
// encodings are self-delimiting, a key made of several encodings in a
// row (a shard-key value, then an _id) splits at KeyLen.
//
// A cut encoding is recognised by its first cutPrefixLen bytes: they are
// the start of a well-formed encoding that does not end within them
// (encodings are prefix-free, so no whole encoding that short starts the
// same way), followed by the marker and the hash.
func KeyLen(b []byte) (int, bool) {
	head := b[:min(len(b), cutPrefixLen)]
	n, st := keyLen(head, 0)
	switch {
	case st == whole:
		return n, true
	case st == short && len(head) == cutPrefixLen && len(b) >= MaxKeyLen && b[cutPrefixLen] == cutMarker:
		return MaxKeyLen, true
	}
	return 0, false
}

// parse is how far a parse of an encoding got.
type parse int8

const (
	whole     parse = iota // a whole encoding
	short                  // well formed as far as the bytes go, but unfinished
	malformed              // not the start of any encoding
)

// maxKeyDepth bounds nesting, as BSON's own depth limit does.
const maxKeyDepth = 200

func keyLen(b []byte, depth int) (int, parse) {
	if len(b) == 0 {
		return 0, short
	}
	if depth > maxKeyDepth {
		return 0, malformed
	}
	rank := b[0]
	rest := b[1:]
	var n int
	var st parse
	switch rank {
	case 1, 5, 127: // MinKey; null and undefined; MaxKey
		return 1, whole
	case 10: // numbers: class, then exponent and digit pairs if finite, non-zero
		n, st = numberLen(rest)
	case 15, 60: // strings and symbols; JavaScript
		n, st = escapedLen(rest)
	case 20, 25: // documents, arrays
		n, st = elementsLen(rest, rank == 20, depth)
	case 30: // binary: length, subtype, bytes
		if len(rest) < 5 {
			return 0, short
		}
		l := binary.BigEndian.Uint32(rest)
		if uint64(l) > uint64(len(rest)-5) {
			return 0, short
		}
		n, st = 5+int(l), whole
	case 35: // ObjectId
		n, st = fixed(rest, 12)
	case 40: // boolean
		n, st = fixed(rest, 1)
	case 45, 47: // date, timestamp
		n, st = fixed(rest, 8)
	case 50: // regex: pattern, options
		n, st = escapedLen(rest)
		if st == whole {
			var m int
			m, st = escapedLen(rest[n:])
			n += m
		}
	case 55: // DBPointer: namespace, ObjectId
		n, st = escapedLen(rest)
		if st == whole {
			var m int
			m, st = fixed(rest[n:], 12)
			n += m
		}
	case 65: // code with scope: code, then the scope as a document
		n, st = escapedLen(rest)
		if st == whole {
			var m int
			m, st = keyLen(rest[n:], depth+1)
			n += m
		}
	default:
		return 0, malformed
	}
	if st != whole {
		return 0, st
	}
	return 1 + n, whole
}

// numberLen is the length of what appendNumber writes: a class byte,
// and for finite non-zero numbers two exponent bytes and digit pairs up
// to the terminator (all inverted for negative numbers).
func numberLen(b []byte) (int, parse) {
	if len(b) == 0 {
		return 0, short
	}
	var inv byte
	switch b[0] {
	case numNaN, numNegInf, numZero, numPosInf:
		return 1, whole
	case numNeg:
		inv = 0xFF
	case numPos:
	default:
		return 0, malformed
	}
	for i := 3; i < len(b); i++ {
		switch p := b[i] ^ inv; {
		case p == 0:
			if i == 3 { // at least one pair
				return 0, malformed
			}
			return i + 1, whole
		case p > 100:
			return 0, malformed
		}
	}
	return 0, short
}

func fixed(b []byte, n int) (int, parse) {
	if len(b) < n {
		return 0, short
	}
	return n, whole
}

// escapedLen is the length of an appendEscaped string: up to and including
// the 0x00 0x01 terminator (0x00 0xFF is an escaped NUL).
func escapedLen(b []byte) (int, parse) {
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		if i+1 == len(b) {
			return 0, short
		}
		switch b[i+1] {
		case 1:
			return i + 2, whole
		case 0xFF:
			i++
		default:
			return 0, malformed
		}
	}
	return 0, short
}

// elementsLen is the length of a document's or array's elements and its
// end byte: each element is its type rank, its escaped name (documents
// only) and its value's encoding.
func elementsLen(b []byte, named bool, depth int) (int, parse) {
	i := 0
	for {
		if i >= len(b) {
			return 0, short
		}
		if b[i] == endOfDoc {
			return i + 1, whole
		}
		i++ // the element's rank, repeated by its value's encoding
		if named {
			n, st := escapedLen(b[i:])
			if st != whole {
				return 0, st
			}
			i += n
		}
		n, st := keyLen(b[i:], depth+1)
		if st != whole {
			return 0, st
		}
		i += n
	}
}
