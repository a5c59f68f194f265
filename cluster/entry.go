package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// entryVersion is the first byte of every entry this package writes. A
// replica meeting an entry of another version rejects it (the same way on
// every replica), so a newer format is introduced by a new version byte
// only once every node understands it.
const entryVersion = 1

// durableEntryVersion is an entry of the same format that every replica
// fsyncs its log for before it acknowledges it (logsync.go), with all that
// its log holds before it: a majority has it on disk once it commits.
const durableEntryVersion = 2

// durableEntry is whether cmd is a durable entry.
func durableEntry(cmd []byte) bool { return len(cmd) > 0 && cmd[0] == durableEntryVersion }

// Op kinds, one byte each in an entry.
const (
	OpPut        = 'p' // uvarint(len) key, uvarint(len) value
	OpDelete     = 'd' // uvarint(len) key
	OpAdd        = 'a' // uvarint(len) key, uvarint(n), n x int64 BE: add to a counter vector
	OpExpect     = 'e' // uvarint(len) key, 0 (absent) | 1 uvarint(len) value: a guard
	OpExpectHash = 'h' // uvarint(len) key, 1, 16-byte digest of the value: a guard (ExpectAbsent covers absence)
)

// maxCounterFields bounds the n of an OpAdd.
const maxCounterFields = 16

// Op is one write of a Batch, as DecodeBatch returns it. Key and Value
// alias the decoded entry.
type Op struct {
	Kind   byte
	Key    []byte
	Value  []byte  // OpPut; OpExpect when Absent is false; OpExpectHash: the digest
	Deltas []int64 // OpAdd
	Absent bool    // OpExpect: the key must not exist
}

// Batch is a group's unit of replication: writes to raw keys of the
// group's spans that every replica applies atomically, in the order
// added. Later writes to a key in the same Batch see the earlier ones
// (an OpAdd after an OpPut adds to the put value).
type Batch struct {
	buf []byte
	ops int
}

// NewBatch is an empty batch.
func NewBatch() *Batch { return &Batch{buf: []byte{entryVersion}} }

// DurableBarrier is an empty durable entry: once it commits, a majority
// of the group's replicas has fsynced its log up to it.
func DurableBarrier() *Batch { return &Batch{buf: []byte{durableEntryVersion}} }

// Durable is whether the batch is a durable entry.
func (b *Batch) Durable() bool { return durableEntry(b.buf) }

// Put sets key to value.
func (b *Batch) Put(key, value []byte) {
	b.buf = append(b.buf, OpPut)
	b.buf = appendBytes(b.buf, key)
	b.buf = appendBytes(b.buf, value)
	b.ops++
}

// Delete removes key (absent keys are no error).
func (b *Batch) Delete(key []byte) {
	b.buf = append(b.buf, OpDelete)
	b.buf = appendBytes(b.buf, key)
	b.ops++
}

// Add adds deltas to the counter vector at key: a value of n int64s, big
// endian. An absent key counts as zeros; a stored vector shorter than
// deltas grows, a longer one keeps its other fields. A stored value whose
// length is not a multiple of 8 makes the whole batch rejected.
func (b *Batch) Add(key []byte, deltas ...int64) {
	b.buf = append(b.buf, OpAdd)
	b.buf = appendBytes(b.buf, key)
	b.buf = binary.AppendUvarint(b.buf, uint64(len(deltas)))
	for _, d := range deltas {
		b.buf = binary.BigEndian.AppendUint64(b.buf, uint64(d))
	}
	b.ops++
}

// Expect makes the batch conditional: it applies only if key holds
// value at that point of the batch, and otherwise writes nothing and
// fails with ErrConflict on every replica. A batch that expects a key it
// creates to be absent applies at most once, so it can be proposed again
// after a timeout.
func (b *Batch) Expect(key, value []byte) {
	b.buf = append(b.buf, OpExpect)
	b.buf = appendBytes(b.buf, key)
	b.buf = append(b.buf, 1)
	b.buf = appendBytes(b.buf, value)
	b.ops++
}

// ExpectHash is Expect by the value's digest (ValueDigest) instead of the
// value: a guard of 16 bytes however large the value is.
func (b *Batch) ExpectHash(key []byte, digest [DigestLen]byte) {
	b.buf = append(b.buf, OpExpectHash)
	b.buf = appendBytes(b.buf, key)
	b.buf = append(b.buf, 1)
	b.buf = append(b.buf, digest[:]...)
	b.ops++
}

// DigestLen is the length of a value's digest.
const DigestLen = 16

// ValueDigest is the digest ExpectHash compares: SHA-256 cut to 16 bytes,
// the same on every replica.
func ValueDigest(v []byte) (d [DigestLen]byte) {
	sum := sha256.Sum256(v)
	copy(d[:], sum[:])
	return d
}

// ExpectAbsent makes the batch conditional on key not existing.
func (b *Batch) ExpectAbsent(key []byte) {
	b.buf = append(b.buf, OpExpect)
	b.buf = appendBytes(b.buf, key)
	b.buf = append(b.buf, 0)
	b.ops++
}

// Len is the number of ops in the batch.
func (b *Batch) Len() int { return b.ops }

// Encoded is the entry as proposed; it aliases the batch.
func (b *Batch) Encoded() []byte { return b.buf }

func appendBytes(buf, p []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(p)))
	return append(buf, p...)
}

var errMalformed = errors.New("malformed entry")

// BatchFrom is the batch an encoded one (Batch.Encoded) holds, checked
// whole: what a node proposes for another that sent it.
func BatchFrom(entry []byte) (*Batch, error) {
	ops, err := DecodeBatch(entry)
	if err != nil {
		return nil, err
	}
	return &Batch{buf: bytes.Clone(entry), ops: len(ops)}, nil
}

// DecodeBatch parses an entry into its ops. Every malformed input is an
// error, never a panic.
func DecodeBatch(entry []byte) ([]Op, error) { return decodeBatchInto(nil, entry) }

// decodeBatchInto is DecodeBatch appending to ops (a buffer to reuse; the
// ops refer to entry's bytes).
func decodeBatchInto(ops []Op, entry []byte) ([]Op, error) {
	if len(entry) == 0 {
		return nil, fmt.Errorf("%w: empty", errMalformed)
	}
	if entry[0] != entryVersion && entry[0] != durableEntryVersion {
		return nil, fmt.Errorf("%w: unknown version %d", errMalformed, entry[0])
	}
	p := entry[1:]
	for len(p) > 0 {
		op := Op{Kind: p[0]}
		p = p[1:]
		var err error
		if op.Key, p, err = readBytes(p); err != nil {
			return nil, err
		}
		if len(op.Key) == 0 {
			return nil, fmt.Errorf("%w: empty key", errMalformed)
		}
		switch op.Kind {
		case OpPut:
			if op.Value, p, err = readBytes(p); err != nil {
				return nil, err
			}
		case OpDelete:
		case OpExpect:
			if len(p) == 0 || p[0] > 1 {
				return nil, fmt.Errorf("%w: bad expectation", errMalformed)
			}
			op.Absent = p[0] == 0
			p = p[1:]
			if !op.Absent {
				if op.Value, p, err = readBytes(p); err != nil {
					return nil, err
				}
			}
		case OpExpectHash:
			if len(p) < 1+DigestLen || p[0] != 1 {
				return nil, fmt.Errorf("%w: bad expectation", errMalformed)
			}
			op.Value, p = p[1:1+DigestLen], p[1+DigestLen:]
		case OpAdd:
			n, k := binary.Uvarint(p)
			if k <= 0 || n == 0 || n > maxCounterFields || uint64(len(p)-k) < n*8 {
				return nil, fmt.Errorf("%w: bad counter deltas", errMalformed)
			}
			p = p[k:]
			op.Deltas = make([]int64, n)
			for i := range op.Deltas {
				op.Deltas[i] = int64(binary.BigEndian.Uint64(p))
				p = p[8:]
			}
		default:
			return nil, fmt.Errorf("%w: unknown op %q", errMalformed, op.Kind)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func readBytes(p []byte) (field, rest []byte, err error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || uint64(len(p)-k) < n {
		return nil, nil, fmt.Errorf("%w: truncated", errMalformed)
	}
	return p[k : k+int(n)], p[k+int(n):], nil
}

// addCounters is stored + deltas, fieldwise; stored may be nil.
func addCounters(stored []byte, deltas []int64) ([]byte, error) {
	if len(stored)%8 != 0 {
		return nil, fmt.Errorf("counter value of %d bytes is not a vector of int64", len(stored))
	}
	out := make([]byte, max(len(stored), 8*len(deltas)))
	copy(out, stored)
	for i, d := range deltas {
		f := out[8*i:]
		binary.BigEndian.PutUint64(f, uint64(int64(binary.BigEndian.Uint64(f))+d))
	}
	return out, nil
}

// Counters decodes a counter vector written by Add.
func Counters(v []byte) ([]int64, error) {
	if len(v)%8 != 0 {
		return nil, fmt.Errorf("counter value of %d bytes is not a vector of int64", len(v))
	}
	out := make([]int64, len(v)/8)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
	}
	return out, nil
}
