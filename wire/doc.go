// Package wire implements the MongoDB wire protocol as Parsec speaks it: the
// framing of OP_MSG, the legacy OP_QUERY/OP_REPLY pair used for the first
// handshake, OP_COMPRESSED (snappy, zlib, zstd), and the TCP server with one
// goroutine per connection.
//
// Contract: wire knows frames, not commands. It hands each request body to a
// Handler and writes back the document the Handler returns, in the framing
// and compression of the request. It never panics on input: a malformed frame
// is answered with an error document when the request can still be
// identified, and the connection is closed when it cannot. wire imports no
// other Parsec package.
//
// # Frame layout
//
// Every message starts with a 16-byte header; all integers are little endian.
//
//	 0               4               8               12              16
//	+---------------+---------------+---------------+---------------+
//	| messageLength |   requestID   |  responseTo   |    opCode     |
//	+---------------+---------------+---------------+---------------+
//	messageLength counts the whole frame, header included.
//
// OP_MSG (2013):
//
//	+-------------+-----------------------------------+--------------+
//	| flagBits u32| sections ...                      | [crc32c u32] |
//	+-------------+-----------------------------------+--------------+
//	section kind 0: 0x00 | BSON document (the command body, exactly one)
//	section kind 1: 0x01 | size i32 | identifier cstring | BSON document*
//	                (size counts itself, the identifier and the documents)
//	flagBits: bit 0 checksumPresent, bit 1 moreToCome, bit 16 exhaustAllowed.
//	The CRC-32C (Castagnoli) covers every byte before it, header included.
//
// OP_QUERY (2004), answered only on "<db>.$cmd":
//
//	| flags i32 | fullCollectionName cstring | numberToSkip i32 |
//	| numberToReturn i32 | query BSON | [returnFieldsSelector BSON] |
//
// OP_REPLY (1), sent only in answer to OP_QUERY:
//
//	| responseFlags i32 | cursorID i64 | startingFrom i32 |
//	| numberReturned i32 | documents BSON* |
//
// OP_COMPRESSED (2012) wraps any other message:
//
//	| originalOpcode i32 | uncompressedSize i32 | compressorId u8 |
//	| compressedMessage (the original message without its header) |
//	compressorId: 0 noop, 1 snappy, 2 zlib, 3 zstd.
//
// Limits: a frame longer than MaxMessageSize (48,000,000 bytes) or shorter
// than its fixed fields is rejected; a BSON document must be well formed and
// nested at most MaxDocumentDepth levels.
package wire
