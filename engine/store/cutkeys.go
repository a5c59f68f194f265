package store

import "github.com/parsecdb/parsec/engine/value"

// Cut keys.
//
// value.EncodeKey cuts an encoding longer than value.MaxKeyLen to a prefix
// and a hash, so that any value fits in a key; keys that share such a
// prefix order by hash, not by value. Readers that take key order for
// value order must know when that can happen: an index that has held a
// cut key is marked CutKeys, a collection that has held a document with a
// cut _id CutIDs (and its _id index, when sharded, CutKeys). The marks
// are set once, before the write that needs them commits (as Multikey
// is), and never cleared: a reader that sees one sorts in memory instead.

// anyCut reports whether one of keys, entries of ix, has a cut component.
// A wildcard index provides no sort, and is left unmarked.
func (ix *Index) anyCut(keys [][]byte) bool {
	if ix.Wildcard {
		return false
	}
	for _, k := range keys {
		if len(k) >= value.MaxKeyLen && ix.hasCut(k) {
			return true
		}
	}
	return false
}

// hasCut walks the components of one index key (a descending field's
// bytes are inverted) and reports whether one is cut.
func (ix *Index) hasCut(key []byte) bool {
	var buf []byte
	for _, f := range ix.Fields {
		comp := key
		if f.Desc {
			buf = append(buf[:0], key[:min(len(key), value.MaxKeyLen)]...)
			invert(buf)
			comp = buf
		}
		n, ok := value.KeyLen(comp)
		if !ok {
			return false
		}
		if _, cut := value.CutPrefix(comp[:n]); cut {
			return true
		}
		key = key[n:]
	}
	return false
}

// hasCutID reports whether the _id that ends docKey, a document key of c,
// is cut.
func hasCutID(c *Collection, docKey []byte) bool {
	rest := docKey[min(len(docKey), docPrefixLen+8):]
	if len(rest) < value.MaxKeyLen {
		return false
	}
	if c.Sharded() {
		n, ok := value.KeyLen(rest) // the shard-key value
		if !ok {
			return false
		}
		rest = rest[n:]
	}
	_, cut := value.CutPrefix(rest)
	return cut
}

// markCutKeys records that index id of c has held a cut key.
func (s *Store) markCutKeys(c *Collection, id uint32) {
	s.markIndex(c, id, "cut keys", func(ix *Index) *bool { return &ix.CutKeys })
}

// markCutIDs records that c has held a document with a cut _id: its
// document keys, and the entries of a sharded collection's _id index, are
// no longer all in _id order.
func (s *Store) markCutIDs(c *Collection) {
	s.catMu.Lock()
	cur := s.colls[c.Namespace()]
	s.catMu.Unlock()
	if cur == nil || cur.ID != c.ID || (cur.CutIDs && (cur.IDIndex == nil || cur.IDIndex.CutKeys)) {
		return
	}
	_, err := s.changeEntryKeep(cur, func(e *Collection) error {
		e.CutIDs = true
		if e.IDIndex != nil {
			e.IDIndex.CutKeys = true
		}
		return nil
	})
	if err != nil {
		s.logger.Debug("marking a collection's _ids cut", "collection", c.Namespace(), "err", err)
	}
}
