package store

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Database is a database that was created explicitly (Cosmos CreateDatabase).
// Databases otherwise exist while they hold collections, as in MongoDB.
type Database struct {
	Name    string    `bson:"name"`
	Created time.Time `bson:"created"`
	// Options holds database-level settings (throughput) as given.
	Options bson.Raw `bson:"options,omitempty"`
	// Throughput is shared by the database's collections that have none
	// of their own (zero: none).
	Throughput Throughput `bson:"throughput,omitempty"`
}

// Throughput is provisioned request units per second: manual (RUs) or
// autoscale (MaxRUs), at most one set; zero means none.
type Throughput struct {
	RUs    int `bson:"rus,omitempty"`
	MaxRUs int `bson:"maxRUs,omitempty"`
}

// IsZero reports whether no throughput is set.
func (t Throughput) IsZero() bool { return t == Throughput{} }

// Collection is one collection's catalog entry. Entries are immutable once
// published: changes replace the entry.
type Collection struct {
	DB      string    `bson:"db"`
	Name    string    `bson:"name"`
	ID      uint32    `bson:"id"`
	UUID    []byte    `bson:"uuid"`
	Created time.Time `bson:"created"`
	// Options are the validated create options, as listCollections shows them.
	Options bson.Raw `bson:"options,omitempty"`

	// Epoch changes when the collection's documents are re-placed (when
	// a collection that has documents is sharded): a writer holding an
	// entry of another epoch fails with ErrCollectionChanged.
	Epoch int64 `bson:"epoch,omitempty"`
	// ShardKey is the shard key's leading path; "" when unsharded.
	// ShardKeyRanged says the leading field is ranged ({path: 1}), not
	// hashed, and ShardKeyRest are a compound key's further fields (see
	// shard.Spec); both empty for the single hashed key.
	ShardKey       string        `bson:"shardKey,omitempty"`
	ShardKeyRanged bool          `bson:"shardKeyRanged,omitempty"`
	ShardKeyRest   []shard.Field `bson:"shardKeyRest,omitempty"`
	// ShardedAt is when the collection was sharded.
	ShardedAt time.Time `bson:"shardedAt,omitempty"`
	// Partitions is the partition map of a sharded collection (empty when
	// unsharded: one partition "0" owns the whole hash space), and
	// NextPartition the id the next new partition gets.
	Partitions    []PartitionEntry `bson:"partitions,omitempty"`
	NextPartition int              `bson:"nextPartition,omitempty"`
	// MapVersion counts the changes of the partition map (splits).
	MapVersion int64 `bson:"mapVersion,omitempty"`
	// Throughput is the collection's own throughput; zero: none given
	// (it uses its database's, or the server's default).
	Throughput Throughput `bson:"throughput,omitempty"`
	// Indexes are the secondary indexes (the _id index is implicit);
	// NextIndexID numbers them (ids are never reused). IndexVersion
	// changes when an index is added or removed: a writer holding an
	// entry of another version fails with ErrCollectionChanged, so that
	// no write misses an index.
	Indexes      []*Index `bson:"indexes,omitempty"`
	NextIndexID  uint32   `bson:"nextIndexID,omitempty"`
	IndexVersion int64    `bson:"indexVersion,omitempty"`
	// IDIndex is the _id index of a sharded collection (idindex.go); nil
	// when unsharded, whose document keys are the _id index.
	IDIndex *Index `bson:"idIndex,omitempty"`
	// CutIDs is set once a document's _id had a cut encoding
	// (value.MaxKeyLen): document keys are then not all in _id order
	// (cutkeys.go).
	CutIDs bool `bson:"cutIDs,omitempty"`
	// Capped: the collection keeps its documents in insertion order and
	// removes the oldest past CappedSize data bytes or CappedMax documents
	// (0: no document limit) (capped.go).
	Capped     bool  `bson:"capped,omitempty"`
	CappedSize int64 `bson:"cappedSize,omitempty"`
	CappedMax  int64 `bson:"cappedMax,omitempty"`

	pmap *shard.Map // Partitions as a map, built by finish
}

// PartitionEntry is one physical partition as the catalog stores it: its
// bounds as signed hashes (inclusive; shard.HashOf of the points), as
// MongoDB's chunks read.
type PartitionEntry struct {
	ID      int   `bson:"id"`
	Min     int64 `bson:"min"`
	Max     int64 `bson:"max"`
	Parents []int `bson:"parents,omitempty"`
}

// Namespace is "db.coll".
func (c *Collection) Namespace() string { return c.DB + "." + c.Name }

// Sharded reports whether the collection has a shard key.
func (c *Collection) Sharded() bool { return c.ShardKey != "" }

// Spec is the shard key (zero when unsharded).
func (c *Collection) Spec() shard.Spec {
	return shard.Spec{Path: c.ShardKey, Ranged: c.ShardKeyRanged, Rest: c.ShardKeyRest}
}

// setSpec makes spec the collection's shard key.
func (c *Collection) setSpec(spec shard.Spec) {
	c.ShardKey, c.ShardKeyRanged, c.ShardKeyRest = spec.Path, spec.Ranged, slices.Clone(spec.Rest)
}

// single is the map of every unsharded collection.
var single = shard.NewMap(1)

// Map is the collection's partition map; unsharded collections have one
// partition "0".
func (c *Collection) Map() *shard.Map {
	if c.pmap == nil {
		return single
	}
	return c.pmap
}

// finish builds the entry's partition map from its stored partitions.
func (c *Collection) finish() error {
	for _, ix := range c.Indexes {
		if err := ix.finish(nil); err != nil {
			return err
		}
	}
	if c.IDIndex != nil {
		if err := c.IDIndex.finish(nil); err != nil {
			return err
		}
	}
	if !c.Sharded() {
		c.pmap = nil
		return nil
	}
	parts := make([]shard.Partition, len(c.Partitions))
	for i, p := range c.Partitions {
		parts[i] = shard.Partition{ID: p.ID, Min: shard.PointOf(p.Min), Max: shard.PointOf(p.Max), Parents: p.Parents}
	}
	m, err := shard.MapOf(parts, c.NextPartition)
	if err != nil {
		return fmt.Errorf("%w: partition map of %s: %v", ErrCorrupted, c.Namespace(), err)
	}
	c.pmap = m
	return nil
}

// setMap stores m as the entry's partitions.
func (c *Collection) setMap(m *shard.Map) {
	c.Partitions = make([]PartitionEntry, m.Len())
	for i, p := range m.Partitions() {
		c.Partitions[i] = PartitionEntry{ID: p.ID, Min: shard.HashOf(p.Min), Max: shard.HashOf(p.Max), Parents: p.Parents}
	}
	c.NextPartition = m.NextID()
	c.pmap = m
}

// Refresh reloads the catalog of a read-only store (Options.ReadOnly)
// from what is stored now.
func (s *Store) Refresh() error {
	if !s.readOnly {
		return errors.New("store: Refresh is for read-only stores")
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	return s.loadCatalog()
}

func (s *Store) loadCatalog() error {
	s.dbs = map[string]*Database{}
	s.colls = map[string]*Collection{}
	s.views = map[string]*ViewDefinition{}
	s.orphans = nil
	run := s.update
	if s.readOnly { // read only: the boot number is the writer's business
		run = func(fn func(kv.Txn) error, _ ...*ChangeEvent) error { return s.db.View(fn) }
	}
	err := run(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: []byte(catalogSpace)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			err := item.Value(func(v []byte) error {
				switch {
				case hasPrefix(k, dbSpace):
					var d Database
					if err := bson.Unmarshal(v, &d); err != nil {
						return fmt.Errorf("%w: database entry %q: %v", ErrCorrupted, k, err)
					}
					s.dbs[d.Name] = &d
				case hasPrefix(k, collSpace):
					var c Collection
					if err := bson.Unmarshal(v, &c); err != nil {
						return fmt.Errorf("%w: collection entry %q: %v", ErrCorrupted, k, err)
					}
					if err := c.finish(); err != nil {
						return err
					}
					s.colls[c.Namespace()] = &c
				case hasPrefix(k, viewSpace):
					return s.loadView(k, v)
				case string(k) == string(seqKey):
					s.lastCID = u32(v)
				case string(k) == string(bootKey):
					s.boot = binary.BigEndian.Uint64(v)
				case hasPrefix(k, pendingSpace) && len(k) == len(pendingSpace)+4:
					s.orphans = append(s.orphans, u32(k[len(pendingSpace):]))
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if s.readOnly {
			return nil
		}
		s.boot++
		return txn.Set(bootKey, binary.BigEndian.AppendUint64(nil, s.boot))
	})
	if err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	return nil
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// Collection returns the collection db.name, or nil.
func (s *Store) Collection(db, name string) *Collection {
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	return s.colls[db+"."+name]
}

// CollectionByID returns the live collection with id, or nil.
func (s *Store) CollectionByID(id uint32) *Collection {
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	for _, c := range s.colls {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// Collections returns db's collections sorted by name.
func (s *Store) Collections(db string) []*Collection {
	s.catMu.RLock()
	var out []*Collection
	for _, c := range s.colls {
		if c.DB == db {
			out = append(out, c)
		}
	}
	s.catMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Databases returns the names of databases that have collections or were
// created explicitly, sorted.
func (s *Store) Databases() []string {
	s.catMu.RLock()
	set := map[string]bool{}
	for name := range s.dbs {
		set[name] = true
	}
	for _, c := range s.colls {
		set[c.DB] = true
	}
	for _, v := range s.views {
		set[v.DB] = true
	}
	s.catMu.RUnlock()
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Database returns the explicit entry for db, or nil.
func (s *Store) Database(db string) *Database {
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	return s.dbs[db]
}

// CreateDatabase records db explicitly with options. ErrExists if recorded.
func (s *Store) CreateDatabase(name string, options bson.Raw) (*Database, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.dbs[name] != nil {
		return nil, fmt.Errorf("database %s: %w", name, ErrExists)
	}
	d := &Database{Name: name, Created: time.Now().UTC(), Options: options}
	return d, s.putDatabase(d)
}

// SetDatabaseOptions replaces the options of an explicit database entry,
// creating the entry if needed.
func (s *Store) SetDatabaseOptions(name string, options bson.Raw) (*Database, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	d := &Database{Name: name, Created: time.Now().UTC(), Options: options}
	if old := s.dbs[name]; old != nil {
		d.Created = old.Created
	}
	return d, s.putDatabase(d)
}

func (s *Store) putDatabase(d *Database) error {
	raw, err := bson.Marshal(d)
	if err != nil {
		return err
	}
	if err := s.update(func(txn kv.Txn) error { return txn.Set(dbKey(d.Name), raw) }); err != nil {
		return fmt.Errorf("create database %s: %w", d.Name, err)
	}
	s.dbs[d.Name] = d
	return nil
}

// CreateCollection creates db.name with the given (already validated)
// options. ErrExists if it exists.
func (s *Store) CreateCollection(db, name string, options bson.Raw) (*Collection, error) {
	return s.CreateCollectionWith(db, name, NewCollection{Options: options})
}

// NewCollection describes a collection to create.
type NewCollection struct {
	Options bson.Raw
	// ShardKey is the hashed shard key's path ("": unsharded), or Spec
	// the shard key (when its Path is set, it wins), and Partitions how
	// many equal partitions it starts with (at least 1).
	ShardKey   string
	Spec       shard.Spec
	Partitions int
	Throughput Throughput
	// Capped, CappedSize and CappedMax make a capped collection
	// (unsharded only).
	Capped     bool
	CappedSize int64
	CappedMax  int64
}

// CreateCollectionWith creates db.name as nc describes. ErrExists if it
// exists.
func (s *Store) CreateCollectionWith(db, name string, nc NewCollection) (*Collection, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.colls[db+"."+name] != nil || s.views[db+"."+name] != nil {
		return nil, fmt.Errorf("collection %s.%s: %w", db, name, ErrExists)
	}
	return s.createLocked(db, name, nc)
}

// EnsureCollection returns db.name, creating it with default options if
// it does not exist; created says which.
func (s *Store) EnsureCollection(db, name string) (c *Collection, created bool, err error) {
	if c := s.Collection(db, name); c != nil {
		return c, false, nil
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if c := s.colls[db+"."+name]; c != nil {
		return c, false, nil
	}
	if s.views[db+"."+name] != nil {
		return nil, false, fmt.Errorf("collection %s.%s: %w", db, name, ErrIsView)
	}
	c, err = s.createLocked(db, name, NewCollection{})
	return c, err == nil, err
}

func (s *Store) createLocked(db, name string, nc NewCollection) (*Collection, error) {
	c := &Collection{DB: db, Name: name, ID: s.lastCID + 1, UUID: newUUID(), Created: time.Now().UTC(),
		Options: nc.Options, Throughput: nc.Throughput}
	if nc.Spec.Path == "" && nc.ShardKey != "" {
		nc.Spec = shard.Spec{Path: nc.ShardKey}
	}
	if nc.Spec.Path != "" {
		c.setSpec(nc.Spec)
		c.ShardedAt = c.Created
		c.setMap(shard.NewMap(nc.Partitions))
		c.IDIndex = newIDIndex(false)
	}
	if nc.Capped && nc.Spec.Path == "" {
		c.Capped, c.CappedSize, c.CappedMax = true, nc.CappedSize, nc.CappedMax
		c.IDIndex = newIDIndex(false) // documents are keyed by insertion order
	}
	raw, err := bson.Marshal(c)
	if err != nil {
		return nil, err
	}
	evs := []*ChangeEvent{catalogEvent(ChangeCreate, c, createDescription(c))}
	if c.Sharded() {
		evs = append(evs, catalogEvent(ChangeShard, c, shardDescription(c)))
	}
	err = s.update(func(txn kv.Txn) error {
		if err := txn.Set(seqKey, binary.BigEndian.AppendUint32(nil, c.ID)); err != nil {
			return err
		}
		return txn.Set(collKey(db, name), raw)
	}, evs...)
	if err != nil {
		return nil, fmt.Errorf("create collection %s.%s: %w", db, name, err)
	}
	s.lastCID = c.ID
	s.colls[c.Namespace()] = c
	return c, nil
}

func newUUID() []byte {
	uuid := make([]byte, 16)
	_, _ = rand.Read(uuid)
	uuid[6] = uuid[6]&0x0f | 0x40 // version 4
	uuid[8] = uuid[8]&0x3f | 0x80 // RFC 4122 variant
	return uuid
}

// DropCollection removes db.name and its documents. ErrNotFound if absent.
func (s *Store) DropCollection(db, name string) error {
	c := s.Collection(db, name)
	if c == nil {
		return fmt.Errorf("collection %s.%s: %w", db, name, ErrNotFound)
	}
	unfence := s.lockFences(c.ID) // writers in flight commit first (fence.go)
	dropped, err := s.dropFenced(c)
	unfence()
	if err == nil && !dropped {
		return s.DropCollection(db, name) // changed meanwhile: drop what is there now
	}
	return err
}

// dropFenced removes collection c and its documents, its fence held;
// false when c is no longer the published entry of its namespace.
func (s *Store) dropFenced(c *Collection) (bool, error) {
	s.catMu.Lock()
	if s.colls[c.Namespace()] != c {
		s.catMu.Unlock()
		return false, nil
	}
	err := s.update(func(txn kv.Txn) error { return txn.Delete(collKey(c.DB, c.Name)) }, catalogEvent(ChangeDrop, c, nil))
	if err == nil {
		delete(s.colls, c.Namespace())
	}
	s.catMu.Unlock()
	if err != nil {
		return false, fmt.Errorf("drop collection %s: %w", c.Namespace(), err)
	}
	return true, s.purge(c.ID)
}

// DropDatabase removes db's explicit entry and all its collections.
func (s *Store) DropDatabase(db string) error {
	for _, c := range s.Collections(db) {
		if err := s.DropCollection(db, c.Name); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	if err := s.dropViews(db); err != nil {
		return err
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	ev := &ChangeEvent{Op: ChangeDropDatabase, DB: db}
	if s.dbs[db] == nil {
		// No entry to delete: the event is the whole change.
		return s.update(func(kv.Txn) error { return nil }, ev)
	}
	if err := s.update(func(txn kv.Txn) error { return txn.Delete(dbKey(db)) }, ev); err != nil {
		return fmt.Errorf("drop database %s: %w", db, err)
	}
	delete(s.dbs, db)
	return nil
}

// RenameCollection moves fromDB.from to toDB.to without copying documents:
// documents are keyed by collection id, which the entry keeps. If the
// target exists it is dropped when dropTarget is set, else ErrExists.
func (s *Store) RenameCollection(fromDB, from, toDB, to string, dropTarget bool) error {
	if fromDB == toDB && from == to {
		// With dropTarget this would purge the collection being renamed.
		return fmt.Errorf("rename %s.%s to itself: %w", fromDB, from, ErrExists)
	}
	src0, dst0 := s.Collection(fromDB, from), s.Collection(toDB, to)
	ids := []uint32{}
	for _, c := range []*Collection{src0, dst0} {
		if c != nil {
			ids = append(ids, c.ID)
		}
	}
	unfence := s.lockFences(ids...) // writers in flight commit first (fence.go)
	defer unfence()
	s.catMu.Lock()
	src := s.colls[fromDB+"."+from]
	if src == nil {
		s.catMu.Unlock()
		return fmt.Errorf("source collection %s.%s: %w", fromDB, from, ErrNotFound)
	}
	if s.views[toDB+"."+to] != nil {
		s.catMu.Unlock()
		return fmt.Errorf("target %s.%s: %w", toDB, to, ErrIsView)
	}
	dst := s.colls[toDB+"."+to]
	if src != src0 || dst != dst0 {
		s.catMu.Unlock()
		unfence()
		return s.RenameCollection(fromDB, from, toDB, to, dropTarget) // changed meanwhile: again
	}
	if dst != nil && !dropTarget {
		s.catMu.Unlock()
		return fmt.Errorf("target collection %s.%s: %w", toDB, to, ErrExists)
	}
	moved := *src
	moved.DB, moved.Name = toDB, to
	raw, err := bson.Marshal(&moved)
	if err != nil {
		s.catMu.Unlock()
		return err
	}
	evs := []*ChangeEvent{}
	if dst != nil {
		evs = append(evs, catalogEvent(ChangeDrop, dst, nil))
	}
	rename := catalogEvent(ChangeRename, src, renameDescription(toDB, to, dst))
	rename.ToDB, rename.ToColl = toDB, to
	evs = append(evs, rename)
	err = s.update(func(txn kv.Txn) error {
		if err := txn.Delete(collKey(fromDB, from)); err != nil {
			return err
		}
		return txn.Set(collKey(toDB, to), raw)
	}, evs...)
	if err == nil {
		delete(s.colls, src.Namespace())
		s.colls[moved.Namespace()] = &moved
	}
	s.catMu.Unlock()
	if err != nil {
		return fmt.Errorf("rename %s.%s to %s.%s: %w", fromDB, from, toDB, to, err)
	}
	if dst != nil {
		return s.purge(dst.ID)
	}
	return nil
}

// purge deletes every document and counter of a collection id that is no
// longer in the catalog.
func (s *Store) purge(id uint32) error {
	s.dropTracker(id)
	if err := s.keepPurgedVersions(id); err != nil {
		return fmt.Errorf("purge collection %d: %w", id, err)
	}
	for _, space := range []byte{'d', 'c', 'x'} {
		prefix := []byte{space, '/', 0, 0, 0, 0}
		binary.BigEndian.PutUint32(prefix[2:], id)
		if err := s.deletePrefix(prefix); err != nil {
			return fmt.Errorf("purge collection %d: %w", id, err)
		}
	}
	return nil
}

func (s *Store) deletePrefix(prefix []byte) error {
	from := prefix
	for {
		var keys [][]byte
		err := s.db.View(func(txn kv.Txn) error {
			it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
			defer it.Close()
			// Resume after the last batch: seeking from the start again
			// would walk every tombstone written so far.
			for it.Seek(from); it.Valid() && len(keys) < 10000; it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		if err := s.deleteKeys(keys); err != nil {
			return err
		}
		from = append(keys[len(keys)-1], 0)
	}
}

// SetOptions replaces the collection's create options (collMod's
// validator, validationLevel and validationAction). Writers in flight
// finish first, and later ones holding the old entry find it stale
// (IndexVersion changes), so none checks documents against options that
// are no longer the collection's.
func (s *Store) SetOptions(c *Collection, options bson.Raw) (*Collection, error) {
	return s.changeEntryFenced(c, func(e *Collection) error {
		if len(options) == 0 {
			e.Options = nil
		} else {
			e.Options = append(bson.Raw(nil), options...)
		}
		e.IndexVersion++
		return nil
	})
}
