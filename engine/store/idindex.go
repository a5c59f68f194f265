package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The _id index of a sharded collection.
//
// An unsharded collection's documents are keyed by _id alone, so the
// document layout is its _id index. A sharded collection's are keyed by
// (point, shard key, _id), which makes each logical partition one key
// range but leaves a lookup by _id alone nothing to seek. So a sharded
// collection keeps one more index, ID 0 (never handed out to secondary
// indexes, whose ids start at 1), with one entry per document in the
// secondary index format:
//
//	x/<coll:4> 00 00 00 00 <_id> <point:8><shard key><_id>  ->  <point:8><shard key><_id>
//
// Its key is the encoded _id, which the document key already ends with,
// so writers maintain it from the document key alone, without reading the
// document: an insert adds the entry, a delete removes it, and an update
// (which cannot change _id) leaves it. _id stays unique per logical
// partition, as in Cosmos DB, by the document keys themselves: the index
// is not unique. Its bytes count in the document's logical partition
// (Counts.IndexBytes) like any index's, but not as index work of a write
// (IndexWork): like the primary key's, its cost is part of every write.
//
// A collection sharded by an older version of Parsec has no such index:
// Open builds it in the background (Building set until done; readers use
// it only once built).

// idIndexID is the id of the _id index of a sharded collection.
const idIndexID = 0

// IDIndexName is the name of the _id index.
const IDIndexName = "_id_"

// newIDIndex is the _id index of a sharded collection.
func newIDIndex(building bool) *Index {
	key, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(1)}})
	spec, _ := bson.Marshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.Raw(key)}, {Key: "name", Value: IDIndexName}})
	ix := &Index{ID: idIndexID, Name: IDIndexName, Key: key, Spec: spec, Building: building}
	_ = ix.finish(nil) // a fixed, valid key pattern
	return ix
}

// idIndexKey is the _id index key of the document at docKey of sharded
// collection c: the encoded _id that ends docKey.
func idIndexKey(docKey []byte) ([]byte, error) {
	rest := docKey[docPrefixLen+8:]
	n, ok := value.KeyLen(rest) // the shard key
	if !ok || n > len(rest) {
		return nil, fmt.Errorf("%w: document key %x has no shard key", ErrCorrupted, docKey)
	}
	return rest[n:], nil
}

// putIDEntry adds the _id index entry of the document at docKey (an
// insert into a sharded collection). Every insert passes here, so it also
// notes an _id whose encoding is cut (CutIDs), sharded or not.
func (t *Txn) putIDEntry(c *Collection, docKey []byte) error {
	if (!c.CutIDs || (c.IDIndex != nil && !c.IDIndex.CutKeys)) && hasCutID(c, docKey) {
		t.s.markCutIDs(c)
	}
	return t.changeIDEntry(c, docKey, true)
}

// removeIDEntry removes the _id index entry of the document at docKey (a
// delete from a sharded collection).
func (t *Txn) removeIDEntry(c *Collection, docKey []byte) error {
	return t.changeIDEntry(c, docKey, false)
}

// changeIDEntry adds (or removes) the _id index entry of the document at
// docKey and counts its bytes in the document's logical partition.
func (t *Txn) changeIDEntry(c *Collection, docKey []byte, add bool) error {
	if c.IDIndex == nil {
		return nil
	}
	key, err := idIndexKey(docKey)
	if err != nil {
		return err
	}
	k, v := c.IDIndex.entry(c, key, docKey)
	if c.IDIndex.Building {
		// The build may or may not have reached this document: add or
		// remove the entry, and count it, once.
		if found, err := t.has(k, nil); err != nil || found == add {
			return err
		}
	}
	n := int64(len(k) + len(v))
	if add {
		err = t.set(k, v)
	} else {
		err, n = t.del(k), -n
	}
	if err != nil {
		return mapKVErr(err)
	}
	return t.account(c, docKey, Counts{IndexBytes: n})
}

// buildIDIndexes gives every sharded collection without an _id index one,
// built in the background: collections sharded before Parsec kept one.
func (s *Store) buildIDIndexes() {
	s.catMu.RLock()
	var todo []*Collection
	for _, c := range s.colls {
		if c.Sharded() && (c.IDIndex == nil || c.IDIndex.Building) {
			todo = append(todo, c)
		}
	}
	s.catMu.RUnlock()
	if len(todo) == 0 {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		for _, c := range todo {
			if err := s.buildIDIndex(ctx, c); err != nil && ctx.Err() == nil && !errors.Is(err, ErrCollectionChanged) {
				s.logger.Warn("building the _id index of a sharded collection", "collection", c.Namespace(), "err", err)
			}
		}
	}()
}

// buildIDIndex adds the _id index to sharded collection c and writes its
// entries: writers maintain it from the moment it is added, readers use
// it once it is built.
func (s *Store) buildIDIndex(ctx context.Context, c *Collection) error {
	added, err := s.changeEntryFenced(c, func(e *Collection) error {
		if e.IDIndex == nil {
			e.IDIndex = newIDIndex(true)
			e.IndexVersion++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.backfill(ctx, added, []uint32{idIndexID}, nil); err != nil {
		return err
	}
	for {
		cur := s.Collection(c.DB, c.Name)
		if cur == nil || cur.ID != c.ID {
			return ErrCollectionChanged
		}
		_, err := s.changeEntryKeep(cur, func(e *Collection) error {
			if e.IDIndex != nil {
				e.IDIndex.Building = false
			}
			return nil
		})
		if errors.Is(err, ErrCollectionChanged) {
			continue
		}
		return err
	}
}
