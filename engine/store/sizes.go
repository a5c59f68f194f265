package store

import (
	"fmt"

	"github.com/parsecdb/parsec/engine/kv/badgerkv"
)

// MaxKeyBytes is the longest key Badger stores (its txn.go: keys' lengths
// must fit a uint16 with room for a timestamp). Values are cut in keys
// (value.MaxKeyLen) so that document keys and index entries stay below it;
// what still does not fit is refused with ErrKeyTooLarge.
const MaxKeyBytes = badgerkv.MaxKeyBytes

// checkSizes refuses a key or value Badger would refuse, with a message
// that names sizes only (Badger's own error dumps the key in hex).
func (s *Store) checkSizes(key, val []byte) error {
	if len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: a storage key of %d bytes is over the limit of %d bytes", ErrKeyTooLarge, len(key), MaxKeyBytes)
	}
	if s.maxValue > 0 && int64(len(val)) > s.maxValue {
		return fmt.Errorf("%w: a document of %d bytes is over this store's limit of %d bytes per document", ErrValueTooLarge, len(val), s.maxValue)
	}
	return nil
}

// checkEntrySize refuses, before anything is written, an entry of index
// ix whose Badger key (prefix, index key, and the document's suffix
// unless unique) would be too long.
func checkEntrySize(c *Collection, ix *Index, key, docKey []byte) error {
	n := len(IndexPrefix(c.ID, ix.ID)) + len(key)
	if !ix.Unique {
		n += len(docKey) - docPrefixLen
	}
	if n > MaxKeyBytes {
		return fmt.Errorf("%w: index %s of %s: a key of %d bytes is over the limit of %d bytes", ErrKeyTooLarge, ix.Name, c.Namespace(), n, MaxKeyBytes)
	}
	return nil
}
