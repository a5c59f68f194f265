// Package value holds what Parsec knows about single BSON values: MongoDB's
// comparison order across types, numeric conversion, EncodeKey, the
// order-preserving encoding used in storage keys, and Render, the notation
// mongod's error messages give values in. It is pure and imports none of
// Parsec's packages.
//
// # Comparison
//
// Compare orders values as MongoDB does: by TypeRank, then within the
// rank. Numbers (int32, int64, double, decimal128) compare by exact value,
// whatever their types:
//
//  1. Equal values of different types are equal: 1, NumberLong(1), 1.0
//     and NumberDecimal("1.00"); -0 equals 0.
//  2. Nothing is rounded: double 0.1 is
//     0.1000000000000000055511151231257827021181583404541015625, above
//     NumberDecimal("0.1"); NumberLong(2^53+1) is above double 2^53;
//     NumberDecimal("1E400") lies between the largest double and Infinity.
//  3. NaN (double or decimal, any payload) equals NaN and sorts below
//     -Infinity; -Infinity and Infinity of both types are equal.
//  4. A decimal128 whose coefficient is 10^34 or more is not canonical and
//     means zero, as IEEE 754-2008 and MongoDB read it.
//
// # Key encoding
//
// EncodeKey(v) is a byte string such that, for all values a and b,
// bytes.Compare(EncodeKey(a), EncodeKey(b)) has the sign of Compare(a, b).
// Consequently equal values (1 and 1.0) encode identically. Encodings are
// self-delimiting and prefix-free: no encoding is a proper prefix of
// another, so concatenated encodings (shard key, then _id) sort as the
// tuples do, KeyLen finds where each ends, and a descending index may
// invert every byte of a component and still sort correctly.
//
// Every encoding starts with the value's TypeRank byte; what follows
// depends on the rank:
//
//	MinKey, null/undefined, MaxKey   nothing
//	number                           class [exponent:2 pairs… terminator]
//	string, symbol; JavaScript       escaped bytes
//	document                         per element: rank, escaped name, encoding; then 0x00
//	array                            per element: rank, encoding; then 0x00
//	binary                           length:4 (BE), subtype, bytes (MongoDB's order)
//	ObjectId                         12 bytes
//	boolean                          0x00 or 0x01
//	date                             int64 BE with the sign bit flipped
//	timestamp                        seconds:4, increment:4 (BE, unsigned)
//	regex                            escaped pattern, escaped options
//	DBPointer                        escaped namespace, ObjectId
//	code with scope                  escaped code, scope encoded as a document
//
// Escaped bytes are the bytes with each 0x00 written 0x00 0xFF, then the
// terminator 0x00 0x01.
//
// Numbers are encoded by value, the same way whatever their type. A finite
// non-zero number is written ±0.d1d2…dn × 10^E with d1 and dn not zero, E
// in [-6175, 6145]. Integers and decimals have at most 34 significant
// digits and are written exactly. A double is a binary fraction and so has
// an exact decimal expansion too, but a long one (0.1 has 55 significant
// digits, 2^-1074 has 751); a key keeps its first 34 digits and, if any
// non-zero digit follows, a 35th digit 1. Order and equality survive:
//
//  1. Two different doubles differ within their first 17 digits.
//  2. Integers and decimals have no non-zero digit past the 34th.
//  3. So the only other number that can share a double d's first 34
//     digits is their truncation t, when d has more: t < d, and t's key
//     (d's key without the final 1) sorts just below d's.
//
// Hence keys of numbers (and numKeys, which Compare uses for decimals) are
// equal exactly when the numbers are equal, and ordered as they are.
//
//	class  0x01 NaN, 0x02 -Infinity, 0x03 negative, 0x04 zero,
//	       0x05 positive, 0x06 +Infinity; only 0x03 and 0x05 go on
//	E      uint16 big endian, E + 0x8000
//	pairs  one byte per two digits, 1 + 10·d(2i-1) + d(2i), in [0x01, 0x64];
//	       an odd last digit is paired with 0
//	end    0x00, below every pair byte, so 0.12 < 0.123
//
// For negative numbers E, the pairs and the terminator are inverted (each
// byte XOR 0xFF), so that larger magnitudes sort first and the terminator
// is 0xFF. For example:
//
//	NaN          0a 01
//	-1           0a 03 7f fe f4 ff
//	0, -0, 0E9   0a 04
//	1, 1.00      0a 05 80 01 0b 00
//	123          0a 05 80 03 0d 1f 00
//	0.5          0a 05 80 00 33 00
//	0.1 (double) 0a 05 80 00 0b 01 01 01 01 01 01 01 06 38 0c 10 0d 20 1a 4f 1c 0b 00
//	Infinity     0a 06
//
// # Collations
//
// A Collator (collation.go, on golang.org/x/text/collate) orders strings
// by a MongoDB collation; a nil *Collator is the simple collation (UTF-8
// bytes). CompareWith(a, b, c) is Compare with strings and symbols, also
// those inside documents and arrays, ordered by c; EncodeKeyWith(v, c) is
// EncodeKey with each such string's bytes replaced by its collation sort
// key (then escaped as above), so bytes.Compare of two encodings has the
// sign of CompareWith and strings c holds equal encode alike. Sort keys
// cannot be turned back into strings: an index with a collation provides
// order and equality, never the values.
//
// # Long values
//
// An encoding longer than 1883 bytes is cut to MaxKeyLen (1900) bytes:
//
//	first 1883 bytes of the whole encoding | 0xFE | SHA-256(whole encoding)[:16]
//
// so that keys of any value fit in Badger's 65,000-byte key limit (a
// value in a document is at most 16 MB). What holds, and what does not:
//
//  1. Equal values still encode alike (their whole encodings are equal),
//     and different values encode differently unless 128 bits of SHA-256
//     collide; uniqueness and immutability checks compare encodings.
//  2. Cut encodings are still self-delimiting: only the outermost value is
//     cut, and KeyLen knows a cut one by its 1883 bytes, which start an
//     encoding that does not end within them, then the marker.
//  3. Order is kept except among values whose encodings are both cut and
//     share their 1883-byte prefix: those order by hash. A value and any
//     other value either differ within the prefix, where the cut keeps the
//     bytes, or share it. So a range bound made from a cut value must
//     cover every key that starts with its prefix (CutPrefix), and a
//     store that keeps keys in order must not take key order for value
//     order once it holds a cut key.
//
// The format is the one this version writes, not a compatible evolution:
// earlier development builds encoded numbers as a float64 and an integer
// remainder, and kept encodings longer than 1883 bytes whole; keys they
// wrote are not migrated (no release ever wrote them).
package value
