package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Capped collections.
//
// A capped collection keeps its documents in insertion order, and its
// natural order is that order, not _id order. So its documents are keyed
// by an insertion sequence where a sharded collection's shard key goes,
// with point 0 (a capped collection is never sharded):
//
//	d/<collID:4> 00*8 <seq:9> <_id>   -> document (raw BSON)
//	c/<collID:4>s                     -> the last sequence handed out (uint64 BE)
//
// seq is value.EncodeKey of a BSON date holding the sequence number (a
// type byte and 8 bytes), so the key parses like a sharded collection's
// (the document key's _id is where idIndexKey looks) and orders by
// sequence. A lookup by _id alone has nothing to seek in that layout, so
// a capped collection keeps the _id index of a sharded collection
// (idindex.go), and _id is unique across the collection: Insert looks
// the _id up in that index before it writes.
//
// Insert is given the key plan.DocKey makes for any unsharded collection
// (d/<collID> 00*8 <_id>) and places the document at the next sequence.
// Every insert reads and writes c/<collID>s, so two transactions
// inserting into one capped collection conflict and one of them runs
// again: inserts commit in sequence order, which a tailable cursor, which
// reads on after the last key it returned, relies on. The same
// transaction then deletes the oldest documents while the collection
// holds more than CappedSize data bytes or CappedMax documents.

// ErrCappedDocTooLarge refuses a document larger than its capped
// collection's size.
var ErrCappedDocTooLarge = errors.New("object to insert exceeds cappedMaxSize")

// CappedInTransactionError refuses a write to a capped collection inside
// a multi-statement transaction, as MongoDB does: evicting the oldest
// documents would make concurrent transactions conflict on every insert.
type CappedInTransactionError struct{ Namespace string }

func (e *CappedInTransactionError) Error() string {
	return "capped collection " + e.Namespace + " written in a transaction"
}

// checkCappedWrite refuses a write to capped collection c in a
// multi-statement transaction.
func (t *Txn) checkCappedWrite(c *Collection) error {
	if c.Capped && t.owner != nil {
		return &CappedInTransactionError{Namespace: c.Namespace()}
	}
	return nil
}

// encodeSeq is the key form of insertion sequence seq.
func encodeSeq(seq uint64) []byte {
	return value.EncodeKey(make([]byte, 0, 9), bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, int64(seq))})
}

const seqLen = 9 // encodeSeq's length

// RecordID is an int64 that identifies the document at key in c for the
// document's life (MongoDB's record id, which find's showRecordId and
// {$meta: "recordId"} show): a capped collection's insertion sequence;
// else a positive 63-bit FNV-1a hash of the key, which never changes since
// _id and the shard key cannot.
func RecordID(c *Collection, key []byte) int64 {
	if c != nil && c.Capped && len(key) >= docPrefixLen+8+seqLen {
		return int64(binary.BigEndian.Uint64(key[docPrefixLen+9:docPrefixLen+8+seqLen]) ^ 1<<63)
	}
	h := uint64(14695981039346656037)
	for _, b := range key {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return int64(h >> 1)
}

// placeCapped is the key of a document inserted into capped collection c,
// whose key by _id is idKey: the next insertion sequence, handed out in
// this transaction. A present _id gives *DuplicateKeyError.
func (t *Txn) placeCapped(c *Collection, idKey []byte, docLen int) ([]byte, error) {
	if err := t.checkCappedWrite(c); err != nil {
		return nil, err
	}
	if int64(docLen) > c.CappedSize {
		return nil, fmt.Errorf("%w: %d bytes, %d allowed", ErrCappedDocTooLarge, docLen, c.CappedSize)
	}
	if len(idKey) < docPrefixLen+8 {
		return nil, fmt.Errorf("%w: document key %x", ErrCorrupted, idKey)
	}
	idEnc := idKey[docPrefixLen+8:]
	seqKey := cappedSeqKey(c.ID)
	var seq uint64
	item, err := t.t.Get(seqKey)
	switch {
	case err == nil:
		if err := item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("%w: capped sequence of %s", ErrCorrupted, c.Namespace())
			}
			seq = binary.BigEndian.Uint64(v)
			return nil
		}); err != nil {
			return nil, err
		}
	case !errors.Is(err, kv.ErrNotFound):
		return nil, err
	}
	if c.IDIndex != nil {
		it := t.t.NewIterator(kv.IterOptions{Prefix: append(IndexPrefix(c.ID, idIndexID), idEnc...)})
		it.Rewind()
		taken := it.Valid()
		it.Close()
		if taken {
			return nil, &DuplicateKeyError{Key: idKey, Namespace: c.Namespace()}
		}
	}
	seq++
	if err := t.set(seqKey, binary.BigEndian.AppendUint64(nil, seq)); err != nil {
		return nil, mapKVErr(err)
	}
	return DocKey(c.ID, 0, encodeSeq(seq), idEnc), nil
}

// evictCapped deletes the oldest documents of capped collection c while
// it holds more than its size or document limit, as this transaction
// sees it; newest, the document just inserted, stays.
func (t *Txn) evictCapped(c *Collection, newest []byte) error {
	stored, err := t.storedCounts(c)
	if err != nil {
		return err
	}
	now := *stored
	if d := t.deltas[c.ID]; d != nil {
		now.add(*d)
	}
	over := func() bool { return now.Bytes > c.CappedSize || (c.CappedMax > 0 && now.Docs > c.CappedMax) }
	if !over() {
		return nil
	}
	type victim struct {
		key  []byte
		size int
	}
	var victims []victim
	it := t.t.NewIterator(kv.IterOptions{Prefix: DocPrefix(c.ID)})
	for it.Rewind(); it.Valid() && over(); it.Next() {
		item := it.Item()
		if bytes.Equal(item.Key(), newest) {
			break
		}
		size := 0
		if err := item.Value(func(v []byte) error { size = len(v); return nil }); err != nil {
			it.Close()
			return err
		}
		victims = append(victims, victim{item.KeyCopy(nil), size})
		now.Docs--
		now.Bytes -= int64(size)
	}
	it.Close()
	for _, v := range victims {
		if err := t.Delete(c, v.key, v.size); err != nil {
			return err
		}
	}
	return nil
}

// commitSignals wakes those waiting for a commit that writes a
// collection: tailable cursors waiting for new documents.
type commitSignals struct {
	mu sync.Mutex
	ch map[uint32]chan struct{}
}

// CommitSignal is closed when the next transaction that writes
// collection c commits. Take it before reading, so that a commit between
// the read and the wait is not missed.
func (s *Store) CommitSignal(c *Collection) <-chan struct{} {
	s.commits.mu.Lock()
	defer s.commits.mu.Unlock()
	if s.commits.ch == nil {
		s.commits.ch = map[uint32]chan struct{}{}
	}
	ch := s.commits.ch[c.ID]
	if ch == nil {
		ch = make(chan struct{})
		s.commits.ch[c.ID] = ch
	}
	return ch
}

// signalCommit wakes the waiters on the collections a commit wrote.
func (s *Store) signalCommit(written map[uint32]*Collection) {
	if len(written) == 0 {
		return
	}
	s.commits.mu.Lock()
	defer s.commits.mu.Unlock()
	for id := range written {
		if ch := s.commits.ch[id]; ch != nil {
			close(ch)
			delete(s.commits.ch, id)
		}
	}
}
