package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Secondary indexes.
//
// An index entry is x/<coll:4><index:4><index key><doc suffix> -> <doc
// suffix>, where the doc suffix is the document's key without its
// d/<coll:4> prefix (<point:8><shard key><_id>) and the index key is the
// concatenation of the encoded field values (value.EncodeKey, bytes
// inverted for descending fields). A unique index leaves the suffix out
// of the key, so that two documents with one key value collide on one
// Badger key: the uniqueness check is a read of that key, which Badger's
// conflict detection turns into exactly-one-wins under concurrency.
//
// Entries are ordered by index key across the whole collection, so range
// and sorted reads without the shard key are one contiguous scan; each
// entry carries its document's point, so its bytes are counted in its
// logical partition's counters (IndexBytes), which makes per-partition
// index sizes exact and leaves splits nothing to rewrite.

// Index is one secondary index in a collection's catalog entry.
type Index struct {
	ID   uint32   `bson:"id"`
	Name string   `bson:"name"`
	Key  bson.Raw `bson:"key"`
	// Spec is the index as listIndexes shows it (v, key, name and the
	// options given).
	Spec               bson.Raw `bson:"spec"`
	Unique             bool     `bson:"unique,omitempty"`
	Sparse             bool     `bson:"sparse,omitempty"`
	Hidden             bool     `bson:"hidden,omitempty"`
	ExpireAfterSeconds *int64   `bson:"expireAfterSeconds,omitempty"`
	Partial            bson.Raw `bson:"partial,omitempty"`
	// Collation is the index's collation, every option set (as
	// listIndexes shows it); empty: the simple collation. Keys encode
	// strings by its sort keys (value.EncodeKeyWith).
	Collation bson.Raw `bson:"collation,omitempty"`
	// Building is set while the entries of existing documents are being
	// written: writers maintain the index, readers do not use it yet.
	Building bool `bson:"building,omitempty"`
	// Multikey is set once a document had an array in an indexed field.
	Multikey bool `bson:"multikey,omitempty"`
	// CutKeys is set once an entry's key held a value whose encoding is
	// cut (value.MaxKeyLen): such keys order by hash among those sharing
	// their prefix, so the index's order is no longer its values' order
	// and it provides no sort (cutkeys.go).
	CutKeys bool `bson:"cutKeys,omitempty"`
	// PrepareUnique (collMod) refuses new duplicate keys in an index
	// created without unique; ConvertedUnique marks one collMod made
	// unique since. Both keep the per-document entries (uniqueconv.go).
	PrepareUnique   bool `bson:"prepareUnique,omitempty"`
	ConvertedUnique bool `bson:"convertedUnique,omitempty"`

	Fields       []IndexField `bson:"-"`
	Wildcard     bool         `bson:"-"` // $** or <path>.$**
	WildcardRoot string       `bson:"-"`
	partialMatch func(doc []byte) (bool, error)
	coll         *value.Collator
}

// Collator is the index's collation; nil: simple.
func (ix *Index) Collator() *value.Collator { return ix.coll }

// Matcher compiles a partial filter expression into a document test; the
// command layer installs it (SetMatcher) since store has no query language.
type Matcher func(filter []byte) (func(doc []byte) (bool, error), error)

// SetMatcher installs the compiler of partial filter expressions.
func (s *Store) SetMatcher(m Matcher) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	s.matcher = m
	for _, c := range s.colls {
		for _, ix := range c.Indexes {
			if err := ix.compile(m); err != nil {
				s.logger.Warn("partial filter expression does not compile", "index", ix.Name, "err", err)
			}
		}
	}
}

// finish parses the key pattern (and compiles the partial filter).
func (ix *Index) finish(m Matcher) error {
	ix.Fields = ix.Fields[:0]
	ix.Wildcard, ix.WildcardRoot = false, ""
	elems, err := bsoncore.Document(ix.Key).Elements()
	if err != nil {
		return fmt.Errorf("%w: key pattern of index %s: %v", ErrCorrupted, ix.Name, err)
	}
	for _, e := range elems {
		path := e.Key()
		if path == "$**" || hasSuffix(path, ".$**") {
			ix.Wildcard = true
			if path != "$**" {
				ix.WildcardRoot = path[:len(path)-4]
			}
			continue
		}
		desc := false
		if f, ok := e.Value().AsFloat64OK(); ok && f < 0 {
			desc = true
		}
		ix.Fields = append(ix.Fields, IndexField{Path: path, Desc: desc})
	}
	return ix.compile(m)
}

func (ix *Index) compile(m Matcher) error {
	if len(ix.Collation) > 0 && ix.coll == nil {
		spec, ok := value.CollationOfDocument(ix.Collation)
		if !ok {
			return fmt.Errorf("index %s: unreadable collation %s", ix.Name, ix.Collation)
		}
		c, err := value.NewCollator(spec)
		if err != nil {
			return fmt.Errorf("index %s: collation: %w", ix.Name, err)
		}
		ix.coll = c
	}
	if len(ix.Partial) == 0 || m == nil {
		return nil
	}
	f, err := m(ix.Partial)
	if err != nil {
		return err
	}
	ix.partialMatch = f
	return nil
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// Index returns c's index named name, or nil.
func (c *Collection) Index(name string) *Index {
	for _, ix := range c.Indexes {
		if ix.Name == name {
			return ix
		}
	}
	return nil
}

const docPrefixLen = 6 // d/<coll:4>

// entry is the Badger key and value of one index entry.
func (ix *Index) entry(c *Collection, key, docKey []byte) (k, v []byte) {
	suffix := bytes.Clone(docKey[docPrefixLen:]) // Badger keeps what Set is given until the commit
	k = append(IndexPrefix(c.ID, ix.ID), key...)
	if !ix.Unique {
		k = append(k, suffix...)
	}
	return k, suffix
}

// IndexWork counts the index entries a transaction added and removed, for
// request-unit charges.
type IndexWork struct {
	Entries int64
	Bytes   int64
}

// IndexWork is what the transaction did to secondary indexes so far.
func (t *Txn) IndexWork() IndexWork { return t.ixWork }

// ixChange is what one write does to one index: the keys it adds and
// removes.
type ixChange struct {
	ix          *Index
	add, remove [][]byte
}

// has reports whether key is present (with value want, when not nil).
func (t *Txn) has(key, want []byte) (bool, error) {
	item, err := t.t.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil || want == nil {
		return err == nil, err
	}
	same := false
	err = item.Value(func(v []byte) error { same = bytes.Equal(v, want); return nil })
	return same, err
}

// indexChanges works out how the entries of the document at docKey change
// from those of old (nil: none) to those of doc (nil: none), and checks
// the unique indexes, before anything is written: a refused write leaves
// the transaction as it was.
func (t *Txn) indexChanges(c *Collection, docKey, old, doc []byte) ([]ixChange, error) {
	changes := make([]ixChange, 0, len(c.Indexes))
	for _, ix := range c.Indexes {
		var before, after [][]byte
		var err error
		if old != nil {
			if before, _, err = ix.IndexKeys(old); err != nil && !errors.Is(err, ErrParallelArrays) {
				return nil, err
			}
		}
		if doc != nil {
			var multikey bool
			if after, multikey, err = ix.IndexKeys(doc); err != nil {
				return nil, err
			}
			if multikey && !ix.Multikey {
				t.s.markMultikey(c, ix.ID)
			}
			if !ix.CutKeys && ix.anyCut(after) {
				t.s.markCutKeys(c, ix.ID)
			}
		}
		ch := ixChange{ix: ix}
		for _, k := range before {
			if !containsKey(after, k) {
				ch.remove = append(ch.remove, k)
			}
		}
		for _, k := range after {
			if containsKey(before, k) {
				continue
			}
			if err := checkEntrySize(c, ix, k, docKey); err != nil {
				return nil, err
			}
			switch {
			case ix.Unique:
				if err := t.checkUnique(c, ix, docKey, doc, k); err != nil {
					return nil, err
				}
			case ix.uniqueByScan():
				if err := t.checkUniqueByScan(c, ix, docKey, doc, k); err != nil {
					return nil, err
				}
			}
			ch.add = append(ch.add, k)
		}
		if ch.add != nil || ch.remove != nil {
			changes = append(changes, ch)
		}
	}
	return changes, nil
}

// checkUnique fails with *DuplicateKeyError when another document holds
// key in unique index ix. The read makes concurrent inserts of one key
// conflict, so that exactly one of them commits.
func (t *Txn) checkUnique(c *Collection, ix *Index, docKey, doc, key []byte) error {
	k, v := ix.entry(c, key, docKey)
	item, err := t.t.Get(k)
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	same := false
	if err := item.Value(func(old []byte) error { same = bytes.Equal(old, v); return nil }); err != nil {
		return err
	}
	if same {
		return nil
	}
	return &DuplicateKeyError{Key: k, Index: ix.Name, Namespace: c.Namespace(), KeyPattern: ix.Key, KeyValue: ix.DupKey(doc, key)}
}

// applyIndexChanges writes what indexChanges worked out.
func (t *Txn) applyIndexChanges(c *Collection, docKey []byte, changes []ixChange) error {
	for _, ch := range changes {
		for _, k := range ch.remove {
			if err := t.removeEntry(c, ch.ix, docKey, k); err != nil {
				return err
			}
		}
		for _, k := range ch.add {
			if err := t.putEntry(c, ch.ix, docKey, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// addEntry checks and writes one entry (index builds).
func (t *Txn) addEntry(c *Collection, ix *Index, docKey, doc, key []byte) error {
	if ix.Unique {
		if err := t.checkUnique(c, ix, docKey, doc, key); err != nil {
			return err
		}
	}
	return t.putEntry(c, ix, docKey, key)
}

func (t *Txn) putEntry(c *Collection, ix *Index, docKey, key []byte) error {
	k, v := ix.entry(c, key, docKey)
	if ix.Building {
		// The build may have written it already: count it once.
		if found, err := t.has(k, nil); err != nil || found {
			return err
		}
	}
	if err := t.set(k, v); err != nil {
		return mapKVErr(err)
	}
	n := int64(len(k) + len(v))
	t.ixWork.Entries++
	t.ixWork.Bytes += n
	return t.account(c, docKey, Counts{IndexBytes: n})
}

func (t *Txn) removeEntry(c *Collection, ix *Index, docKey, key []byte) error {
	k, v := ix.entry(c, key, docKey)
	if ix.Building {
		// The build may not have reached this document: there is nothing
		// to remove, nor to take off the counters. (The read also makes
		// this write conflict with a build batch that writes the entry.)
		var mine []byte // a unique entry must be this document's
		if ix.Unique {
			mine = v
		}
		if found, err := t.has(k, mine); err != nil || !found {
			return err
		}
	}
	if err := t.del(k); err != nil {
		return mapKVErr(err)
	}
	n := int64(len(k) + len(v))
	t.ixWork.Entries++
	t.ixWork.Bytes += n
	return t.account(c, docKey, Counts{IndexBytes: -n})
}

// markMultikey records that index id of c has met an array. It commits
// before the write that met it, so that no reader plans with the index
// believed single-valued while such a document exists.
func (s *Store) markMultikey(c *Collection, id uint32) {
	s.markIndex(c, id, "multikey", func(ix *Index) *bool { return &ix.Multikey })
}

// markIndex sets the flag of index id of c that flag points to, in the
// published catalog entry, unless it is set already.
func (s *Store) markIndex(c *Collection, id uint32, what string, flag func(*Index) *bool) {
	s.catMu.Lock()
	cur := s.colls[c.Namespace()]
	s.catMu.Unlock()
	if cur == nil || cur.ID != c.ID {
		return
	}
	if ix := cur.indexByID(id); ix == nil || *flag(ix) {
		return
	}
	_, err := s.changeEntryKeep(cur, func(e *Collection) error {
		if ix := e.indexByID(id); ix != nil {
			*flag(ix) = true
		}
		return nil
	})
	if err != nil {
		s.logger.Debug("marking an index", "flag", what, "collection", c.Namespace(), "err", err)
	}
}

func (c *Collection) indexByID(id uint32) *Index {
	if id == idIndexID {
		return c.IDIndex
	}
	for _, ix := range c.Indexes {
		if ix.ID == id {
			return ix
		}
	}
	return nil
}

// cloneIndexes copies the index list, each index by value, so that an
// edited catalog entry does not change the published one.
func (c *Collection) cloneIndexes() {
	out := make([]*Index, len(c.Indexes))
	for i, ix := range c.Indexes {
		cp := *ix
		cp.Fields = append([]IndexField(nil), ix.Fields...)
		out[i] = &cp
	}
	c.Indexes = out
	if c.IDIndex != nil {
		cp := *c.IDIndex
		cp.Fields = append([]IndexField(nil), c.IDIndex.Fields...)
		c.IDIndex = &cp
	}
}

// changeEntryKeep is changeEntry for changes that do not invalidate
// writers' entries (multikey, hidden, TTL): IndexVersion stays.
func (s *Store) changeEntryKeep(c *Collection, change func(*Collection) error) (*Collection, error) {
	return s.changeEntry(c, func(e *Collection) error {
		e.cloneIndexes()
		return change(e)
	})
}

// ErrIndexBuildAborted wraps the reason an index build stopped.
var ErrIndexBuildAborted = errors.New("index build aborted")

// CreateIndexes adds ixs to c and writes their entries for c's documents,
// in one pass over them. Each needs Name, Key, Spec and its options; IDs
// are assigned. Writers maintain the indexes from the moment they are
// added; readers see them when the build is done. A duplicate key in a
// unique index (*DuplicateKeyError) or a document one cannot index aborts
// the build: all of ixs and every entry written are removed.
func (s *Store) CreateIndexes(ctx context.Context, c *Collection, ixs []Index) (*Collection, error) {
	return s.CreateIndexesWithProgress(ctx, c, ixs, nil)
}

// BuildProgress is how far an index build is: documents indexed so far
// of Total, the collection's count when the build started (writes during
// the build may make Done pass it).
type BuildProgress struct {
	Done, Total atomic.Int64
}

// CreateIndexesWithProgress is CreateIndexes reporting, when p is not
// nil, its progress in p as it goes.
func (s *Store) CreateIndexesWithProgress(ctx context.Context, c *Collection, ixs []Index, p *BuildProgress) (*Collection, error) {
	m := s.matcherFn()
	building := make([]*Index, len(ixs))
	for i := range ixs {
		ix := ixs[i]
		ix.Building = true
		if err := ix.finish(m); err != nil {
			return nil, err
		}
		building[i] = &ix
	}
	var ids []uint32
	added, err := s.changeEntryFenced(c, func(e *Collection) error {
		e.cloneIndexes()
		for _, ix := range building {
			if e.Index(ix.Name) != nil {
				return fmt.Errorf("index %s: %w", ix.Name, ErrExists)
			}
			e.NextIndexID++
			ix.ID = e.NextIndexID
			ids = append(ids, ix.ID)
			e.Indexes = append(e.Indexes, ix)
		}
		e.IndexVersion++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p != nil {
		if counts, err := s.Counts(added); err == nil {
			p.Total.Store(counts.Docs)
		}
	}
	if err := s.backfill(ctx, added, ids, p); err != nil {
		for _, ix := range building {
			if _, derr := s.DropIndex(s.Collection(c.DB, c.Name), ix.Name); derr != nil && !errors.Is(derr, ErrNotFound) {
				s.logger.Warn("removing an aborted index build", "index", ix.Name, "err", derr)
			}
		}
		return nil, err
	}
	for {
		cur := s.Collection(c.DB, c.Name)
		if cur == nil || cur.ID != c.ID {
			return nil, ErrCollectionChanged
		}
		done, err := s.changeEntryKeep(cur, func(e *Collection) error {
			for _, id := range ids {
				if ix := e.indexByID(id); ix != nil {
					ix.Building = false
				}
			}
			return nil
		})
		if errors.Is(err, ErrCollectionChanged) {
			continue // a concurrent catalog change: try again on the new entry
		}
		return done, err
	}
}

func (s *Store) matcherFn() Matcher {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	return s.matcher
}

// backfill writes the entries of indexes ids for every document of c, in
// transactions of at most 256 documents, and fewer once a transaction was
// larger than the kv commits at once (documents with many entries).
func (s *Store) backfill(ctx context.Context, c *Collection, ids []uint32, p *BuildProgress) error {
	var resume []byte
	chunk := 256
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		cur := s.Collection(c.DB, c.Name)
		if cur == nil || cur.ID != c.ID {
			return ErrCollectionChanged
		}
		ixs := make([]*Index, len(ids))
		for i, id := range ids {
			if ixs[i] = cur.indexByID(id); ixs[i] == nil {
				return fmt.Errorf("%w: index dropped during its build", ErrIndexBuildAborted)
			}
		}
		var next []byte
		n := 0
		err := s.Update(func(tx *Txn) error {
			next = nil
			n = 0
			if err := tx.checkCollection(cur); err != nil {
				return err
			}
			return tx.Scan(cur, resume, func(key, doc []byte) (bool, error) {
				if n == chunk || !tx.Plan(cur, key) {
					next = append([]byte(nil), key...)
					return false, nil
				}
				n++
				for _, ix := range ixs {
					keys, multikey, err := ix.IndexKeys(doc)
					if err != nil {
						return false, err
					}
					if multikey && !ix.Multikey {
						s.markMultikey(cur, ix.ID)
					}
					if !ix.CutKeys && ix.anyCut(keys) {
						s.markCutKeys(cur, ix.ID)
					}
					for _, k := range keys {
						// addEntry counts an entry a writer added since the
						// index exists only once (putEntry, Building).
						if err := tx.addEntry(cur, ix, key, doc, k); err != nil {
							return false, err
						}
					}
				}
				return true, nil
			})
		})
		if errors.Is(err, ErrTooLarge) && chunk > 1 {
			chunk /= 2
			continue
		}
		if err != nil {
			return err
		}
		if p != nil {
			p.Done.Add(int64(n))
		}
		if next == nil {
			return nil
		}
		resume = next
	}
}

// DropIndex removes index name of c and all its entries.
func (s *Store) DropIndex(c *Collection, name string) (*Collection, error) {
	if c == nil {
		return nil, ErrNotFound
	}
	var ix *Index
	out, err := s.changeEntryFenced(c, func(e *Collection) error {
		e.cloneIndexes()
		for i, x := range e.Indexes {
			if x.Name == name {
				ix = x
				e.Indexes = append(e.Indexes[:i:i], e.Indexes[i+1:]...)
				e.IndexVersion++
				return nil
			}
		}
		return fmt.Errorf("index %s: %w", name, ErrNotFound)
	})
	if err != nil {
		return nil, err
	}
	// Writers holding the old entry conflict on the catalog key and come
	// back with the new one: nobody writes these entries any more.
	return out, s.removeEntries(out, ix.ID)
}

// removeEntries deletes every entry of index id and takes their bytes off
// the counters of their logical partitions.
func (s *Store) removeEntries(c *Collection, id uint32) error {
	prefix := IndexPrefix(c.ID, id)
	from := prefix
	for {
		type entry struct{ k, suffix []byte }
		var batch []entry
		err := s.db.View(func(txn kv.Txn) error {
			it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
			defer it.Close()
			// From after the last batch, not from the start: the deleted
			// entries' tombstones would be walked again each time.
			for it.Seek(from); it.Valid() && len(batch) < 1000; it.Next() {
				v, err := it.Item().ValueCopy(nil)
				if err != nil {
					return err
				}
				batch = append(batch, entry{it.Item().KeyCopy(nil), v})
			}
			return nil
		})
		if err != nil || len(batch) == 0 {
			return err
		}
		// Entries of documents in other physical partitions than the
		// first's go in the next transaction (Txn.Plan), and as many as
		// fit in each.
		err = updateFitting(s, batch, func(tx *Txn, part []entry) ([]entry, error) {
			var later []entry
			for _, e := range part {
				docKey := append(DocPrefix(c.ID), e.suffix...)
				if !tx.Plan(c, docKey) {
					later = append(later, e)
					continue
				}
				if err := tx.del(e.k); err != nil {
					return nil, err
				}
				if err := tx.account(c, docKey, Counts{IndexBytes: -int64(len(e.k) + len(e.suffix))}); err != nil {
					return nil, err
				}
			}
			return later, nil
		})
		if err != nil {
			return err
		}
		from = append(bytes.Clone(batch[len(batch)-1].k), 0)
	}
}

// SetIndexOptions changes the hidden flag or the TTL of index name.
func (s *Store) SetIndexOptions(c *Collection, name string, hidden *bool, expire *int64) (*Collection, error) {
	return s.changeEntryKeep(c, func(e *Collection) error {
		ix := e.Index(name)
		if ix == nil {
			return fmt.Errorf("index %s: %w", name, ErrNotFound)
		}
		if hidden != nil {
			ix.Hidden = *hidden
		}
		if expire != nil {
			v := *expire
			ix.ExpireAfterSeconds = &v
		}
		ix.Spec = respec(ix)
		return nil
	})
}

// respec rewrites the listIndexes document of ix after an option change.
func respec(ix *Index) bson.Raw {
	var d bson.D
	if err := bson.Unmarshal(ix.Spec, &d); err != nil {
		return ix.Spec
	}
	set := func(key string, v any, keep bool) {
		for i, e := range d {
			if e.Key == key {
				if keep {
					d[i].Value = v
				} else {
					d = append(d[:i], d[i+1:]...)
				}
				return
			}
		}
		if keep {
			d = append(d, bson.E{Key: key, Value: v})
		}
	}
	set("hidden", true, ix.Hidden)
	if ix.ConvertedUnique {
		set("unique", true, true)
	}
	set("prepareUnique", true, ix.PrepareUnique)
	if ix.ExpireAfterSeconds != nil {
		set("expireAfterSeconds", *ix.ExpireAfterSeconds, true)
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		return ix.Spec
	}
	return raw
}

// IndexEntry is one entry met by ScanIndex: its index key and the key of
// its document.
type IndexEntry struct {
	Key    []byte // index key (without the x/<coll><index> prefix and, for non-unique indexes, with the doc suffix)
	DocKey []byte
}

// ScanIndex visits the entries of index ix of c with keys in [start, end)
// (relative to the index: encoded field values), in order (reverse: from
// the end down), until fn returns false or an error. DocKey and Key are
// valid only during the call.
func (t *Txn) ScanIndex(c *Collection, ix *Index, start, end []byte, reverse bool, fn func(IndexEntry) (bool, error)) error {
	r := t.IndexReader(c, ix, reverse)
	defer r.Close()
	return r.Scan(start, end, fn)
}

// IndexReader reads one index's ranges with one iterator: a read of many
// small ranges (a $in of many values) seeks instead of opening an
// iterator per range.
type IndexReader struct {
	it      kv.Iterator
	prefix  []byte
	reverse bool
	docKey  []byte
	lo, hi  []byte
}

// IndexReader opens a reader of index ix of c (reverse: each range from
// its end down). Close it before the transaction ends.
func (t *Txn) IndexReader(c *Collection, ix *Index, reverse bool) *IndexReader {
	prefix := IndexPrefix(c.ID, ix.ID)
	return &IndexReader{
		it:      t.t.NewIterator(kv.IterOptions{Prefix: prefix, Reverse: reverse}),
		prefix:  prefix,
		reverse: reverse,
		docKey:  DocPrefix(c.ID),
	}
}

// Close releases the reader's iterator.
func (r *IndexReader) Close() { r.it.Close() }

// Scan visits the entries with keys in [start, end) (relative to the
// index; end nil: to the end), as ScanIndex does.
func (r *IndexReader) Scan(start, end []byte, fn func(IndexEntry) (bool, error)) error {
	prefix := r.prefix
	lo := append(append(r.lo[:0], prefix...), start...)
	r.lo = lo
	var hi []byte
	if end != nil {
		hi = append(append(r.hi[:0], prefix...), end...)
		r.hi = hi
	}
	it := r.it
	switch {
	case !r.reverse:
		it.Seek(lo)
	case hi != nil:
		it.Seek(hi) // a reverse seek finds the last key <= hi; hi itself is excluded below
	default:
		it.Rewind() // the index's last entry
	}
	for ; it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if hi != nil && bytes.Compare(k, hi) >= 0 {
			if r.reverse {
				continue
			}
			return nil
		}
		if bytes.Compare(k, lo) < 0 {
			if r.reverse {
				return nil
			}
			continue
		}
		more, err := visitItem(item, func(k, v []byte) (bool, error) {
			r.docKey = append(r.docKey[:docPrefixLen], v...)
			return fn(IndexEntry{Key: k[len(prefix):], DocKey: r.docKey})
		})
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// withIDIndex is c's secondary indexes and, when sharded, its _id index.
func (c *Collection) withIDIndex() []*Index {
	if c.IDIndex == nil {
		return c.Indexes
	}
	return append(append(make([]*Index, 0, len(c.Indexes)+1), c.Indexes...), c.IDIndex)
}

// IndexSizes are the bytes of each index of c (entries' keys and values),
// read from the index; a sharded collection's _id index is "_id_".
func (s *Store) IndexSizes(c *Collection) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.db.View(func(txn kv.Txn) error {
		for _, ix := range c.withIDIndex() {
			it := txn.NewIterator(kv.IterOptions{Prefix: IndexPrefix(c.ID, ix.ID), Prefetch: false})
			var n int64
			for it.Rewind(); it.Valid(); it.Next() {
				n += int64(len(it.Item().Key())) + it.Item().ValueSize()
			}
			it.Close()
			out[ix.Name] = n
		}
		return nil
	})
	return out, err
}

// IndexTotal is the size of all indexes: the _id index (KeyBytes) and the
// secondary indexes.
func (c Counts) IndexTotal() int64 { return c.KeyBytes + c.IndexBytes }

// IndexCheck is what ValidateIndexes found for one index.
type IndexCheck struct {
	Name    string
	Keys    int64    // entries in the index
	Missing int64    // entries a document should have and the index lacks
	Extra   int64    // entries no document accounts for
	Errors  []string // the first few problems, described
}

// ValidateIndexes compares every secondary index of c with its
// documents, in one snapshot: each document's keys must be in the index
// and each entry must belong to a document that has that key. It also
// checks that the stored index byte counters equal the entries' sizes.
func (s *Store) ValidateIndexes(c *Collection) ([]IndexCheck, error) {
	all := c.withIDIndex()
	out := make([]IndexCheck, len(all))
	var entryBytes int64
	err := s.View(func(tx *Txn) error {
		for i, ix := range all {
			chk := &out[i]
			chk.Name = ix.Name
			want := map[string][]byte{} // entry key -> value
			err := tx.Scan(c, nil, func(key, doc []byte) (bool, error) {
				keys, _, err := ix.IndexKeys(doc)
				if err != nil {
					return false, err
				}
				for _, k := range keys {
					ek, v := ix.entry(c, k, key)
					want[string(ek)] = bytes.Clone(v)
				}
				return true, nil
			})
			if err != nil {
				return err
			}
			it := tx.t.NewIterator(kv.IterOptions{Prefix: IndexPrefix(c.ID, ix.ID)})
			for it.Rewind(); it.Valid(); it.Next() {
				item := it.Item()
				chk.Keys++
				v, err := item.ValueCopy(nil)
				if err != nil {
					it.Close()
					return err
				}
				entryBytes += int64(len(item.Key()) + len(v))
				wv, ok := want[string(item.Key())]
				switch {
				case !ok:
					chk.Extra++
					chk.note(fmt.Sprintf("entry %x belongs to no document", item.Key()))
				case !bytes.Equal(wv, v):
					chk.Extra++
					chk.note(fmt.Sprintf("entry %x points to %x, not %x", item.Key(), v, wv))
				}
				delete(want, string(item.Key()))
			}
			it.Close()
			for k := range want {
				chk.Missing++
				chk.note(fmt.Sprintf("entry %x is missing", k))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	counts, err := s.Counts(c)
	if err != nil {
		return nil, err
	}
	if counts.IndexBytes != entryBytes && len(out) > 0 {
		out[0].note(fmt.Sprintf("index byte counters say %d, the entries have %d", counts.IndexBytes, entryBytes))
	} else if counts.IndexBytes != entryBytes {
		out = append(out, IndexCheck{Name: "(counters)", Errors: []string{fmt.Sprintf("index byte counters say %d, there are no secondary indexes", counts.IndexBytes)}})
	}
	return out, nil
}

func (c *IndexCheck) note(s string) {
	if len(c.Errors) < 10 {
		c.Errors = append(c.Errors, s)
	}
}
