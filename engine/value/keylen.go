package value

import "encoding/binary"

// KeyLen is the length of the one EncodeKey encoding that b starts with,
// or false when b does not start with a whole, well-formed one. Because
// encodings are self-delimiting, a key made of several encodings in a
// row (a shard-key value, then an _id) splits at KeyLen.
func KeyLen(b []byte) (int, bool) {
	n, ok := keyLen(b, 0)
	return n, ok
}

// maxKeyDepth bounds nesting, as BSON's own depth limit does.
const maxKeyDepth = 200

func keyLen(b []byte, depth int) (int, bool) {
	if len(b) == 0 || depth > maxKeyDepth {
		return 0, false
	}
	rank := b[0]
	rest := b[1:]
	var n int
	var ok bool
	switch rank {
	case 1, 5, 127: // MinKey; null and undefined; MaxKey
		return 1, true
	case 10: // numbers: class, then exponent and digit pairs if finite, non-zero
		n, ok = numberLen(rest)
	case 15, 60: // strings and symbols; JavaScript
		n, ok = escapedLen(rest)
	case 20, 25: // documents, arrays
		n, ok = elementsLen(rest, rank == 20, depth)
	case 30: // binary: length, subtype, bytes
		if len(rest) < 5 {
			return 0, false
		}
		l := binary.BigEndian.Uint32(rest)
		if uint64(l) > uint64(len(rest)-5) {
			return 0, false
		}
		n, ok = 5+int(l), true
	case 35: // ObjectId
		n, ok = fixed(rest, 12)
	case 40: // boolean
		n, ok = fixed(rest, 1)
	case 45, 47: // date, timestamp
		n, ok = fixed(rest, 8)
	case 50: // regex: pattern, options
		var m int
		if n, ok = escapedLen(rest); ok {
			m, ok = escapedLen(rest[n:])
			n += m
		}
	case 55: // DBPointer: namespace, ObjectId
		if n, ok = escapedLen(rest); ok && len(rest)-n >= 12 {
			n += 12
		} else {
			ok = false
		}
	case 65: // code with scope: code, then the scope as a document
		var m int
		if n, ok = escapedLen(rest); ok {
			m, ok = keyLen(rest[n:], depth+1)
			n += m
		}
	default:
		return 0, false
	}
	if !ok {
		return 0, false
	}
	return 1 + n, true
}

// numberLen is the length of what appendExactNum writes: a class byte,
// and for finite non-zero numbers two exponent bytes and digit pairs up
// to the terminator (all inverted for negative numbers).
func numberLen(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var inv byte
	switch b[0] {
	case numNaN, numNegInf, numZero, numPosInf:
		return 1, true
	case numNeg:
		inv = 0xFF
	case numPos:
	default:
		return 0, false
	}
	for i := 3; i < len(b); i++ {
		switch p := b[i] ^ inv; {
		case p == 0:
			return i + 1, i > 3 // at least one pair
		case p > 100:
			return 0, false
		}
	}
	return 0, false
}

func fixed(b []byte, n int) (int, bool) { return n, len(b) >= n }

// escapedLen is the length of an appendEscaped string: up to and including
// the 0x00 0x01 terminator (0x00 0xFF is an escaped NUL).
func escapedLen(b []byte) (int, bool) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		switch b[i+1] {
		case 1:
			return i + 2, true
		case 0xFF:
			i++
		default:
			return 0, false
		}
	}
	return 0, false
}

// elementsLen is the length of a document's or array's elements and its
// end byte: each element is its type rank, its escaped name (documents
// only) and its value's encoding.
func elementsLen(b []byte, named bool, depth int) (int, bool) {
	i := 0
	for {
		if i >= len(b) {
			return 0, false
		}
		if b[i] == endOfDoc {
			return i + 1, true
		}
		i++ // the element's rank, repeated by its value's encoding
		if named {
			n, ok := escapedLen(b[i:])
			if !ok {
				return 0, false
			}
			i += n
		}
		n, ok := keyLen(b[i:], depth+1)
		if !ok {
			return 0, false
		}
		i += n
	}
}
