package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/parsecdb/parsec/engine/kv"
)

func encodeCounts(c Counts) []byte {
	b := make([]byte, 0, 32)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Docs))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Bytes))
	b = binary.BigEndian.AppendUint64(b, uint64(c.KeyBytes))
	if c.IndexBytes != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(c.IndexBytes))
	}
	return b
}

func decodeCounts(b []byte) (Counts, error) {
	if len(b) != 24 && len(b) != 32 {
		return Counts{}, fmt.Errorf("%w: counter of %d bytes", ErrCorrupted, len(b))
	}
	c := Counts{
		Docs:     int64(binary.BigEndian.Uint64(b)),
		Bytes:    int64(binary.BigEndian.Uint64(b[8:])),
		KeyBytes: int64(binary.BigEndian.Uint64(b[16:])),
	}
	if len(b) == 32 { // secondary index bytes, when not zero
		c.IndexBytes = int64(binary.BigEndian.Uint64(b[24:]))
	}
	return c, nil
}

func (c *Counts) add(o Counts) {
	c.Docs += o.Docs
	c.Bytes += o.Bytes
	c.KeyBytes += o.KeyBytes
	c.IndexBytes += o.IndexBytes
}

// readCounts sums the base and every delta of collection id and says how
// many deltas there were.
func readCounts(txn kv.Txn, id uint32) (Counts, int, error) {
	var total Counts
	deltas := 0
	it := txn.NewIterator(kv.IterOptions{Prefix: counterPrefix(id)})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if pastCollectionCounters(item.Key()) {
			break // logical-partition counters follow the collection's
		}
		if !isCounterBase(item.Key()) {
			deltas++
		}
		err := item.Value(func(v []byte) error {
			c, err := decodeCounts(v)
			total.add(c)
			return err
		})
		if err != nil {
			return Counts{}, 0, err
		}
	}
	return total, deltas, nil
}

// fold sums every counter cell of collection id into one base. Deltas
// committed meanwhile are not read and so not deleted; two folds at once
// conflict on the base key and one is retried.
//
// A store whose kv keeps physical partitions apart (kv.Grouped: a
// cluster, where each may be a group of its own) folds each partition's
// cells apart.
func (s *Store) fold(id uint32) error {
	if s.grouped == nil {
		return s.foldRange(id, 0, math.MaxUint64)
	}
	c := s.CollectionByID(id)
	if c == nil {
		return nil // dropped: its purge removes the cells
	}
	for _, p := range c.Map().Partitions() {
		if err := s.foldRange(id, p.Min, p.Max); err != nil {
			return err
		}
	}
	return nil
}

// foldRange sums collection id's counter cells at points lo..hi (and,
// when lo is 0, the cells of the layout before points) into a base at lo
// and deletes the others, in transactions of at most foldReads cells: what
// one physical partition [lo, hi] does with the cells it owns.
func (s *Store) foldRange(id uint32, lo, hi uint64) error {
	s.foldMu.Lock()
	if s.folding[id] {
		s.foldMu.Unlock()
		return nil
	}
	s.folding[id] = true
	s.foldMu.Unlock()
	defer func() {
		s.foldMu.Lock()
		delete(s.folding, id)
		s.foldMu.Unlock()
	}()
	from, base := cellPrefix(id, lo), counterBaseKey(id, lo)
	if lo == 0 {
		from = counterPrefix(id)
	}
	var to []byte // first key past the range
	if hi < math.MaxUint64 {
		to = cellPrefix(id, hi+1)
	} else {
		to = append(counterPrefix(id), cellTag+1)
	}
	for {
		more := false
		err := s.update(func(txn kv.Txn) error {
			var total Counts
			var dead [][]byte
			it := txn.NewIterator(kv.IterOptions{Prefix: counterPrefix(id)})
			for it.Seek(from); it.Valid(); it.Next() {
				item := it.Item()
				if bytes.Compare(item.Key(), to) >= 0 {
					break
				}
				if !bytes.Equal(item.Key(), base) {
					if len(dead) >= foldReads { // keep the transaction small (lpcounters.go)
						more = true
						break
					}
					dead = append(dead, item.KeyCopy(nil))
				}
				if err := item.Value(func(v []byte) error {
					c, err := decodeCounts(v)
					total.add(c)
					return err
				}); err != nil {
					it.Close()
					return err
				}
			}
			it.Close()
			if len(dead) == 0 {
				return nil
			}
			for _, k := range dead {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return txn.Set(base, encodeCounts(total))
		})
		if err != nil {
			return err
		}
		if !more {
			return s.foldLogicalRange(id, nil, lo, hi)
		}
	}
}

// pastCollectionCounters reports whether a key under c/<collID> comes
// after the collection's own counters: a logical-partition counter, or
// a capped collection's insertion sequence (c/<collID>s).
func pastCollectionCounters(k []byte) bool { return len(k) > 6 && k[6] >= lpTag }
