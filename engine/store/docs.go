package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ErrCollectionChanged means the collection a transaction wrote to was
// dropped or renamed meanwhile; the caller should look it up again.
var ErrCollectionChanged = errors.New("collection was dropped or renamed during the operation")

// DocPrefix is the key prefix of all documents of collection id.
func DocPrefix(id uint32) []byte {
	k := make([]byte, 6, 32)
	k[0], k[1] = 'd', '/'
	binary.BigEndian.PutUint32(k[2:], id)
	return k
}

// DocKey is the key of a document: its collection, shard-key hash, encoded
// shard-key value (empty when unsharded) and encoded _id (see EncodeKey).
func DocKey(id uint32, hash uint64, shardKey, idKey []byte) []byte {
	k := DocPrefix(id)
	k = binary.BigEndian.AppendUint64(k, hash)
	k = append(k, shardKey...)
	return append(k, idKey...)
}

// Txn is a read-write or read-only transaction over documents. Counters of
// the collections it writes are kept in step and written at commit.
type Txn struct {
	s       *Store
	t       *badger.Txn
	checked map[uint32]bool
	deltas  map[uint32]*Counts
}

// Counts are a collection's document count, data bytes (the sum of its
// documents' BSON sizes) and key bytes (the sum of its document keys'
// sizes: the primary _id index).
type Counts struct {
	Docs     int64
	Bytes    int64
	KeyBytes int64
}

// Update runs fn in a read-write transaction and commits it. Conflicts with
// concurrent transactions rerun fn (up to a bound), so fn must have no
// effects outside the transaction.
func (s *Store) Update(fn func(*Txn) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	for attempt := 0; ; attempt++ {
		tx := &Txn{s: s, t: s.db.NewTransaction(true)}
		err := fn(tx)
		if err == nil {
			err = tx.commit()
		}
		tx.t.Discard()
		if errors.Is(err, badger.ErrConflict) && attempt < 1000 {
			continue
		}
		if err == nil {
			s.dirty.Store(true)
		}
		return mapBadgerErr(err)
	}
}

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(*Txn) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	tx := &Txn{s: s, t: s.db.NewTransaction(false)}
	defer tx.t.Discard()
	return mapBadgerErr(fn(tx))
}

func (t *Txn) commit() error {
	for id, d := range t.deltas {
		if *d == (Counts{}) {
			continue
		}
		if err := t.t.Set(t.s.deltaKey(id), encodeCounts(*d)); err != nil {
			return err
		}
	}
	return t.t.Commit()
}

// checkCollection makes the transaction conflict with any concurrent drop
// or rename of c, and fails if c is already gone.
func (t *Txn) checkCollection(c *Collection) error {
	if t.checked[c.ID] {
		return nil
	}
	item, err := t.t.Get(collKey(c.DB, c.Name))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return ErrCollectionChanged
	}
	if err != nil {
		return err
	}
	// A collection re-created under the same name has another id.
	same := false
	if err := item.Value(func(v []byte) error {
		id, ok := bsoncore.Document(v).Lookup("id").AsInt64OK()
		same = ok && id == int64(c.ID)
		return nil
	}); err != nil {
		return err
	}
	if !same {
		return ErrCollectionChanged
	}
	if t.checked == nil {
		t.checked = map[uint32]bool{}
	}
	t.checked[c.ID] = true
	return nil
}

func (t *Txn) delta(id uint32) *Counts {
	if t.deltas == nil {
		t.deltas = map[uint32]*Counts{}
	}
	d := t.deltas[id]
	if d == nil {
		d = &Counts{}
		t.deltas[id] = d
	}
	return d
}

// Get returns the document at key, or ErrNotFound. The slice is valid
// until the transaction ends.
func (t *Txn) Get(key []byte) ([]byte, error) {
	item, err := t.t.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// Insert stores doc at key in c; a present key gives *DuplicateKeyError.
func (t *Txn) Insert(c *Collection, key, doc []byte) error {
	if err := t.checkCollection(c); err != nil {
		return err
	}
	_, err := t.t.Get(key)
	if err == nil {
		return &DuplicateKeyError{Key: key}
	}
	if !errors.Is(err, badger.ErrKeyNotFound) {
		return err
	}
	if err := t.t.Set(key, doc); err != nil {
		return mapBadgerErr(err)
	}
	d := t.delta(c.ID)
	d.Docs++
	d.Bytes += int64(len(doc))
	d.KeyBytes += int64(len(key))
	return nil
}

// exists fails with ErrNotFound unless key holds a document. Reading the
// key also makes the transaction conflict with a concurrent write of it, so
// two transactions cannot both delete one document and count it twice.
func (t *Txn) exists(key []byte) error {
	_, err := t.t.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return fmt.Errorf("document %x: %w", key, ErrNotFound)
	}
	return err
}

// Replace overwrites the document at key, whose current version has
// oldSize bytes. ErrNotFound if there is no document at key.
func (t *Txn) Replace(c *Collection, key, doc []byte, oldSize int) error {
	if err := t.checkCollection(c); err != nil {
		return err
	}
	if err := t.exists(key); err != nil {
		return err
	}
	if err := t.t.Set(key, doc); err != nil {
		return mapBadgerErr(err)
	}
	t.delta(c.ID).Bytes += int64(len(doc) - oldSize)
	return nil
}

// Delete removes the document at key, whose current version has oldSize
// bytes. ErrNotFound if there is no document at key.
func (t *Txn) Delete(c *Collection, key []byte, oldSize int) error {
	if err := t.checkCollection(c); err != nil {
		return err
	}
	if err := t.exists(key); err != nil {
		return err
	}
	if err := t.t.Delete(key); err != nil {
		return mapBadgerErr(err)
	}
	d := t.delta(c.ID)
	d.Docs--
	d.Bytes -= int64(oldSize)
	d.KeyBytes -= int64(len(key))
	return nil
}

// Scan visits the documents of c whose keys are >= start (or all, when
// start is nil) in key order, until fn returns false or an error. key and
// doc are valid only during the call.
func (t *Txn) Scan(c *Collection, start []byte, fn func(key, doc []byte) (bool, error)) error {
	prefix := DocPrefix(c.ID)
	it := t.t.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	if bytes.Compare(start, prefix) < 0 { // nil, or before c's documents
		start = prefix
	}
	for it.Seek(start); it.Valid(); it.Next() {
		item := it.Item()
		var more bool
		err := item.Value(func(v []byte) error {
			var err error
			more, err = fn(item.Key(), v)
			return err
		})
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return nil
}

// Counts returns c's document count and data bytes, exact as of now.
func (s *Store) Counts(c *Collection) (Counts, error) {
	if s.closed.Load() {
		return Counts{}, ErrClosed
	}
	var total Counts
	deltas := 0
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		total, deltas, err = readCounts(txn, c.ID)
		return err
	})
	if err != nil {
		return Counts{}, fmt.Errorf("counts of %s: %w", c.Namespace(), err)
	}
	if deltas > foldThreshold {
		s.foldInBackground(c)
	}
	return total, nil
}

// foldThreshold is how many deltas make Counts fold a collection's counters.
const foldThreshold = 256

func (s *Store) foldInBackground(c *Collection) {
	s.foldMu.Lock()
	defer s.foldMu.Unlock()
	if s.closing || s.folding[c.ID] {
		return
	}
	s.folds.Add(1)
	go func() {
		defer s.folds.Done()
		if err := s.fold(c.ID); err != nil {
			s.logger.Debug("folding counters", "collection", c.Namespace(), "err", err)
		}
	}()
}
