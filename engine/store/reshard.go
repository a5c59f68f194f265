package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Resharding: changing a sharded collection's shard key online
// (reshardCollection).
//
// The documents are copied into a temporary collection sharded by the
// new key, <db>.system.resharding.<uuid>, while the source stays in use;
// the changes made meanwhile are then brought over from the change log,
// from the commit time the copy started at; and a short critical section
// (writers of the source wait, as for a re-placement: waitResharding)
// brings over the last ones and switches: the temporary collection's
// entry takes the source's name, options and throughput in one catalog
// transaction, and the source's documents are purged.
//
// The resharding's state is a record in the catalog,
// m/reshard/<db> 0x00 <coll> (a Resharding, BSON), written in the same
// Badger transaction as each step's change:
//
//	begin      the temporary collection's entry and the record (Phase
//	           "cloning", From: the first commit time after the copy's
//	           start)
//	copy       each batch of copied documents and its range's progress
//	           (m/reshardcopy/<db> 0x00 <coll> 0x00 <range>, a CopyRange:
//	           the next source key and counts): the source's documents
//	           are split into ranges at the start, each copied by a
//	           worker of its own, so the workers' transactions write
//	           apart; once every range is done, one transaction sets
//	           the record's counts and Phase "applying" and deletes the
//	           ranges
//	apply      each batch of changes brought over and the record's From
//	switch     the source's entry replaced by the temporary one, the
//	           temporary entry deleted, and the record set to Phase
//	           "cleanup" (the source's documents are left to purge)
//	abort      the temporary entry deleted and the record set to Phase
//	           "aborting" (the temporary documents are left to purge)
//
// So after a crash the record says where to go on: "cloning" and
// "applying" resume (each range of the copy from its Resume, the changes
// from From; bringing a change over is idempotent: it makes the
// temporary collection hold exactly the source's documents of that _id;
// the copy's filter of keys, copyfilter.go, is built again from the
// documents copied before), "cleanup" and "aborting" finish purging and
// delete the record. Before the switch commits the source is the
// collection and the temporary one is hidden; after it, the new entry
// is: never both.

// Resharding phases, as the record keeps them.
const (
	ReshardCloning  = "cloning"
	ReshardApplying = "applying"
	ReshardCleanup  = "cleanup"
	ReshardAborting = "aborting"
)

// ReshardTempPrefix starts the name of a resharding's temporary
// collection.
const ReshardTempPrefix = "system.resharding."

// ChangeReshard is the change event of a resharding's switch.
const ChangeReshard = "reshardCollection"

var (
	reshardSpace     = "m/reshard/"
	reshardCopySpace = "m/reshardcopy/"
)

func reshardKey(db, name string) []byte {
	k := append([]byte(reshardSpace), db...)
	k = append(k, 0)
	return append(k, name...)
}

// reshardCopyPrefix starts the keys of the copy ranges of db.name's
// resharding; reshardCopyKey is range i's.
func reshardCopyPrefix(db, name string) []byte {
	k := append([]byte(reshardCopySpace), db...)
	k = append(k, 0)
	k = append(k, name...)
	return append(k, 0)
}

func reshardCopyKey(db, name string, i int) []byte {
	return append(reshardCopyPrefix(db, name), byte(i))
}

// ReshardCopyRanges is how many ranges the copy splits the source's
// documents into, each copied by a worker of its own: while one
// worker's batch commits (the store's one write path), the other reads
// and keys its next one.
const ReshardCopyRanges = 2

// CopyRanges are a copy of r's copy ranges (while Phase is "cloning"):
// one from Resume for a record without any.
func (r *Resharding) CopyRanges() []CopyRange {
	if len(r.Ranges) == 0 {
		return []CopyRange{{Resume: r.Resume, Copied: r.Copied, CopiedBytes: r.CopiedBytes}}
	}
	return append([]CopyRange(nil), r.Ranges...)
}

// CopyRange is one range of the source's documents the copy goes
// through: document keys [Start, End) (nil Start: from the first, nil
// End: to the last), Resume the next one to copy (nil: Start), Done once
// every one was copied, and what it copied.
type CopyRange struct {
	Start       []byte `bson:"start,omitempty"`
	End         []byte `bson:"end,omitempty"`
	Resume      []byte `bson:"resume,omitempty"`
	Done        bool   `bson:"done"`
	Copied      int64  `bson:"copied"`
	CopiedBytes int64  `bson:"copiedBytes"`
	// fit, above 0, is the most documents of the range one transaction
	// takes, learned when a larger batch did not fit (ErrTooLarge).
	fit int
}

// Resharding is one resharding's record.
type Resharding struct {
	DB   string `bson:"db"`
	Name string `bson:"name"`
	// SourceID and SourceUUID are the collection being resharded;
	// TempID, TempName and TempUUID the temporary one.
	SourceID   uint32 `bson:"sourceID"`
	SourceUUID []byte `bson:"sourceUUID"`
	TempID     uint32 `bson:"tempID"`
	TempName   string `bson:"tempName"`
	TempUUID   []byte `bson:"tempUUID"`
	// Key is the new shard key (shardCollection's form), Partitions the
	// number of physical partitions asked for.
	Key        bson.Raw `bson:"key"`
	Partitions int      `bson:"partitions"`
	Phase      string   `bson:"phase"`
	// Resume is the next source document key to copy (nil: the first),
	// as a record written before the copy had ranges keeps it: it is
	// then the one range's.
	Resume []byte `bson:"resume,omitempty"`
	// Ranges are the copy's ranges while Phase is "cloning", kept apart
	// from the record (reshardCopyKey), one per copy worker.
	Ranges []CopyRange `bson:"-"`
	// FromTS and FromIndex are the next change event to bring over.
	FromTS    int64     `bson:"fromTS"`
	FromIndex int32     `bson:"fromIndex"`
	Started   time.Time `bson:"started"`
	// ApproxDocs and ApproxBytes are the source's size at the start;
	// Copied and CopiedBytes what the copy has written; Applied the
	// change events brought over.
	ApproxDocs  int64 `bson:"approxDocs"`
	ApproxBytes int64 `bson:"approxBytes"`
	Copied      int64 `bson:"copied"`
	CopiedBytes int64 `bson:"copiedBytes"`
	Applied     int64 `bson:"applied"`
}

// Namespace is the source's "db.coll".
func (r *Resharding) Namespace() string { return r.DB + "." + r.Name }

// From is the next change event to bring over.
func (r *Resharding) From() ChangePos {
	return ChangePos{TS: uint64(r.FromTS), Index: uint32(r.FromIndex)}
}

// Spec is the new shard key.
func (r *Resharding) Spec() (shard.Spec, error) { return shard.ParseSpec(bsoncore.Document(r.Key)) }

// ErrReshardingSourceChanged means the collection being resharded was
// dropped, renamed or had its indexes or options changed meanwhile.
var ErrReshardingSourceChanged = errors.New("the collection being resharded was changed by another operation")

// Reshardings are the records of the reshardings in progress (or left
// to clean up).
func (s *Store) Reshardings() ([]*Resharding, error) {
	var out []*Resharding
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: []byte(reshardSpace)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			raw, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			var r Resharding
			if err := bson.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("%w: resharding record %q: %v", ErrCorrupted, it.Item().Key(), err)
			}
			out = append(out, &r)
		}
		for _, r := range out {
			if err := loadCopyRanges(txn, r); err != nil {
				return err
			}
		}
		return nil
	})
	return out, mapKVErr(err)
}

// loadCopyRanges reads the copy ranges of r, while it copies, into
// r.Ranges, and their counts into r.Copied and r.CopiedBytes. A record
// written before the copy had ranges has none: its one range is the
// whole source from r.Resume.
func loadCopyRanges(txn kv.Txn, r *Resharding) error {
	r.Ranges = nil
	if r.Phase != ReshardCloning {
		return nil
	}
	it := txn.NewIterator(kv.IterOptions{Prefix: reshardCopyPrefix(r.DB, r.Name)})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		raw, err := it.Item().ValueCopy(nil)
		if err != nil {
			return err
		}
		var cr CopyRange
		if err := bson.Unmarshal(raw, &cr); err != nil {
			return fmt.Errorf("%w: resharding copy range %q: %v", ErrCorrupted, it.Item().Key(), err)
		}
		r.Ranges = append(r.Ranges, cr)
	}
	if len(r.Ranges) == 0 {
		r.Ranges = []CopyRange{{Resume: r.Resume, Copied: r.Copied, CopiedBytes: r.CopiedBytes}}
		return nil
	}
	r.Copied, r.CopiedBytes = 0, 0
	for _, cr := range r.Ranges {
		r.Copied += cr.Copied
		r.CopiedBytes += cr.CopiedBytes
	}
	return nil
}

// Resharding is the record of db.name's resharding, or nil.
func (s *Store) Resharding(db, name string) (*Resharding, error) {
	var r *Resharding
	err := s.db.View(func(txn kv.Txn) error {
		item, err := txn.Get(reshardKey(db, name))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		raw, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		r = &Resharding{}
		if err := bson.Unmarshal(raw, r); err != nil {
			return err
		}
		return loadCopyRanges(txn, r)
	})
	return r, mapKVErr(err)
}

func putReshard(txn kv.Txn, r *Resharding) error {
	raw, err := bson.Marshal(r)
	if err != nil {
		return err
	}
	return txn.Set(reshardKey(r.DB, r.Name), raw)
}

// BeginResharding starts resharding src by spec into partitions physical
// partitions: it creates the hidden temporary collection (the source's
// secondary indexes, the new key) and the record, in one transaction.
// ErrConflict when src is already being resharded.
func (s *Store) BeginResharding(src *Collection, spec shard.Spec, partitions int) (*Resharding, error) {
	if !src.Sharded() || src.IDIndex == nil || src.IDIndex.Building {
		return nil, fmt.Errorf("%s: the _id index is being built: %w", src.Namespace(), ErrConflict)
	}
	counts, err := s.Counts(src)
	if err != nil {
		return nil, err
	}
	ranges, err := s.copyRanges(src, ReshardCopyRanges)
	if err != nil {
		return nil, err
	}
	// Every event after `visible` commits later, at a greater time.
	visible, _ := s.ChangesVisible()
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.colls[src.Namespace()] != src {
		return nil, fmt.Errorf("reshard %s: %w", src.Namespace(), ErrCollectionChanged)
	}
	if r, err := s.Resharding(src.DB, src.Name); err != nil {
		return nil, err
	} else if r != nil {
		return nil, fmt.Errorf("%s is being resharded already: %w", src.Namespace(), ErrConflict)
	}
	uuid := newUUID()
	tmp := &Collection{DB: src.DB, Name: ReshardTempPrefix + uuidString(src.UUID), ID: s.lastCID + 1, UUID: uuid,
		Created: time.Now().UTC(), Options: src.Options, Throughput: src.Throughput,
		Indexes: src.Indexes, NextIndexID: src.NextIndexID}
	tmp.cloneIndexes()
	tmp.setSpec(spec)
	tmp.ShardedAt = tmp.Created
	if spec.Ranged {
		tmp.setMap(shard.NewMap(1)) // split where the data is, at the switch
	} else {
		tmp.setMap(shard.NewMap(max(partitions, 1)))
	}
	tmp.IDIndex = newIDIndex(false)
	if err := tmp.finish(); err != nil {
		return nil, err
	}
	r := &Resharding{DB: src.DB, Name: src.Name, SourceID: src.ID, SourceUUID: src.UUID,
		TempID: tmp.ID, TempName: tmp.Name, TempUUID: uuid, Key: bson.Raw(spec.Doc()), Partitions: partitions,
		Phase: ReshardCloning, FromTS: int64(visible + 1), Started: time.Now().UTC(),
		ApproxDocs: counts.Docs, ApproxBytes: counts.Bytes, Ranges: ranges}
	raw, err := bson.Marshal(tmp)
	if err != nil {
		return nil, err
	}
	err = s.update(func(txn kv.Txn) error {
		if err := txn.Set(seqKey, binary.BigEndian.AppendUint32(nil, tmp.ID)); err != nil {
			return err
		}
		if err := txn.Set(collKey(tmp.DB, tmp.Name), raw); err != nil {
			return err
		}
		for i := range ranges {
			if err := putCopyRange(txn, r, i, &ranges[i]); err != nil {
				return err
			}
		}
		return putReshard(txn, r)
	})
	if err != nil {
		return nil, fmt.Errorf("reshard %s: %w", src.Namespace(), err)
	}
	s.lastCID = tmp.ID
	s.colls[tmp.Namespace()] = tmp
	return r, nil
}

func uuidString(u []byte) string {
	if len(u) != 16 {
		return fmt.Sprintf("%x", u)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// reshardColls are the published entries of r's source and temporary
// collection; ErrReshardingSourceChanged when either is not r's any more.
func (s *Store) reshardColls(r *Resharding) (src, tmp *Collection, err error) {
	s.catMu.RLock()
	src, tmp = s.colls[r.Namespace()], s.colls[r.DB+"."+r.TempName]
	s.catMu.RUnlock()
	if src == nil || src.ID != r.SourceID || tmp == nil || tmp.ID != r.TempID {
		return nil, nil, fmt.Errorf("%s: %w", r.Namespace(), ErrReshardingSourceChanged)
	}
	return src, tmp, nil
}

// copyRanges splits src's documents into at most n ranges of about the
// same bytes, at points of its logical partitions (a logical partition
// is never split; one that holds most of the data makes fewer ranges).
func (s *Store) copyRanges(src *Collection, n int) ([]CopyRange, error) {
	points, sizes, err := s.dataPoints(src)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, size := range sizes {
		total += size
	}
	out := []CopyRange{{}}
	var before int64 // bytes at the points before points[i]
	for i, p := range points {
		if len(out) == n {
			break
		}
		if k := int64(len(out)); before > 0 && before >= total*k/int64(n) {
			at := binary.BigEndian.AppendUint64(DocPrefix(src.ID), p)
			out[len(out)-1].End = at
			out = append(out, CopyRange{Start: at})
		}
		before += sizes[i]
	}
	return out, nil
}

func putCopyRange(txn kv.Txn, r *Resharding, i int, cr *CopyRange) error {
	raw, err := bson.Marshal(cr)
	if err != nil {
		return err
	}
	return txn.Set(reshardCopyKey(r.DB, r.Name, i), raw)
}

// CopyResharding copies the next batch of at most n source documents
// into the temporary collection, the ranges one after the other (as
// CopyReshardingRange); done once every document was copied (r.Phase is
// then "applying", as EndReshardingCopy leaves it). r is updated in
// place.
func (s *Store) CopyResharding(r *Resharding, n int) (done bool, err error) {
	r.Ranges = r.CopyRanges()
	for i := range r.Ranges {
		cr := &r.Ranges[i]
		if cr.Done {
			continue
		}
		copied, bytesCopied := cr.Copied, cr.CopiedBytes
		if err := s.CopyReshardingRange(r, i, cr, n); err != nil {
			return false, err
		}
		r.Copied += cr.Copied - copied
		r.CopiedBytes += cr.CopiedBytes - bytesCopied
		if !cr.Done {
			return false, nil
		}
	}
	if err := s.EndReshardingCopy(r, r.Ranges); err != nil {
		return false, err
	}
	return true, nil
}

// CopyReshardingRange copies the next batch of at most n documents of
// cr, range i of r's copy, into the temporary collection, with cr's
// progress in the same transaction; cr is updated in place, and Done
// once the range is copied. Different ranges may be copied at the same
// time (each its own caller's); r is only read. A batch larger than one
// transaction holds is copied as half as many documents, and the range's
// later batches take no more than that.
func (s *Store) CopyReshardingRange(r *Resharding, i int, cr *CopyRange, n int) error {
	for {
		if cr.fit > 0 {
			n = min(n, cr.fit)
		}
		err := s.copyReshardingBatch(r, i, cr, n)
		if errors.Is(err, ErrTooLarge) && n > 1 {
			cr.fit = n / 2
			continue
		}
		return err
	}
}

func (s *Store) copyReshardingBatch(r *Resharding, i int, cr *CopyRange, n int) error {
	if cr.Done {
		return nil
	}
	src, tmp, err := s.reshardColls(r)
	if err != nil {
		return err
	}
	spec := tmp.Spec()
	type doc struct{ key, raw []byte }
	batch := make([]doc, 0, n)
	var next []byte
	start := cr.Resume
	if start == nil {
		start = cr.Start
	}
	// The batch's documents and keys, one after the other: Badger keeps
	// what a transaction sets until it commits.
	var raws, keys []byte
	err = s.scanCopy(r, i, src, start, cr.End, func(key, raw []byte) (bool, error) {
		if len(batch) == n {
			next = bytes.Clone(key)
			return false, nil
		}
		if raws == nil {
			raws = make([]byte, 0, n*(len(raw)+len(raw)/4))
			keys = make([]byte, 0, n*(len(key)+len(key)/2+16))
		}
		kat := len(keys)
		var err error
		if keys, err = appendReshardKey(keys, tmp, spec, raw); err != nil {
			return false, err
		}
		at := len(raws)
		raws = append(raws, raw...)
		batch = append(batch, doc{keys[kat:len(keys):len(keys)], raws[at:len(raws):len(raws)]})
		return true, nil
	})
	if err != nil {
		return err
	}
	var bytesCopied int64
	for _, d := range batch {
		bytesCopied += int64(len(d.raw))
	}
	ncr := *cr
	ncr.Resume, ncr.Copied, ncr.CopiedBytes = next, cr.Copied+int64(len(batch)), cr.CopiedBytes+bytesCopied
	ncr.Done = next == nil
	filter, err := s.copyFilterOf(r, tmp)
	if err != nil {
		return err
	}
	// The batch claims its documents' keys and the counter keys of
	// their logical partitions, each once.
	docKeys := make([][]byte, len(batch))
	var lpKeys [][]byte
	lpAt := make(map[string]int, len(batch)) // logical partition -> its place in lpKeys
	for j, d := range batch {
		docKeys[j] = d.key
		lp, err := logicalPartitionOf(d.key)
		if err != nil {
			return err
		}
		if _, ok := lpAt[string(lp)]; !ok {
			lpAt[string(lp)] = len(lpKeys)
			lpKeys = append(lpKeys, lpBaseKey(tmp.ID, lp))
		}
	}
	claim, read, fresh := filter.claim(docKeys, lpKeys)
	defer filter.release(claim)
	err = s.Update(func(tx *Txn) error {
		tx.unlogged = true // the hidden copy is no change of anyone's
		// The batch and its progress go in one transaction: they need no
		// sync of their own (a lost batch is copied again). Syncing the
		// copy's log every 100 ms wrote it to disk twice, as log and as
		// table, where Badger's log files are otherwise deleted unwritten
		// once their memtable is flushed.
		tx.quiet = true
		// On a kv that keeps groups apart the batch may land group by
		// group, its progress last; a batch redone after a crash then
		// finds some of its documents copied already (the same bytes).
		tx.each = true
		j := 0
		tx.absent = func([]byte) bool { return !read[j] }
		tx.freshLP = func(lp []byte) bool {
			at, ok := lpAt[string(lp)]
			return ok && fresh[at]
		}
		for ; j < len(batch); j++ {
			d := batch[j]
			err := tx.Insert(tmp, d.key, d.raw)
			var dup *DuplicateKeyError
			if errors.As(err, &dup) && s.grouped != nil {
				if have, gerr := tx.Get(d.key); gerr == nil && bytes.Equal(have, d.raw) {
					continue
				}
			}
			if err != nil {
				return err
			}
		}
		return putCopyRange(tx.t, r, i, &ncr)
	})
	if err != nil {
		return err
	}
	*cr = ncr
	if cr.Done {
		s.dropCopySnapshots(r, i)
	}
	return nil
}

// EndReshardingCopy ends r's copy once every one of ranges (r's, as the
// copy left them) is done: the record takes their counts and Phase
// "applying", and the ranges are deleted, in one transaction. r is
// updated in place.
func (s *Store) EndReshardingCopy(r *Resharding, ranges []CopyRange) error {
	nr := *r
	nr.Phase, nr.Resume, nr.Ranges, nr.Copied, nr.CopiedBytes = ReshardApplying, nil, nil, 0, 0
	if len(ranges) == 0 {
		return fmt.Errorf("resharding %s: the copy has no range", r.Namespace())
	}
	for _, cr := range ranges {
		if !cr.Done {
			return fmt.Errorf("resharding %s: a range of the copy is not done", r.Namespace())
		}
		nr.Copied += cr.Copied
		nr.CopiedBytes += cr.CopiedBytes
	}
	err := s.update(func(txn kv.Txn) error {
		if err := deleteCopyRanges(txn, r); err != nil {
			return err
		}
		return putReshard(txn, &nr)
	})
	if err != nil {
		return fmt.Errorf("reshard %s: %w", r.Namespace(), err)
	}
	s.dropCopyFilter(r.TempID)
	s.dropCopySnapshots(r, -1)
	*r = nr
	return nil
}

// deleteCopyRanges deletes the keys of r's copy ranges.
func deleteCopyRanges(txn kv.Txn, r *Resharding) error {
	var keys [][]byte
	it := txn.NewIterator(kv.IterOptions{Prefix: reshardCopyPrefix(r.DB, r.Name)})
	for it.Rewind(); it.Valid(); it.Next() {
		keys = append(keys, it.Item().KeyCopy(nil))
	}
	it.Close()
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// reshardKeyOf is the key of raw in tmp, sharded by spec.
func reshardKeyOf(tmp *Collection, spec shard.Spec, raw []byte) ([]byte, error) {
	return appendReshardKey(nil, tmp, spec, raw)
}

// appendReshardKey appends the key of raw in tmp, sharded by spec, to
// dst.
func appendReshardKey(dst []byte, tmp *Collection, spec shard.Spec, raw []byte) ([]byte, error) {
	sk, err := spec.Extract(raw)
	if err != nil {
		id, _ := bsoncore.Document(raw).LookupErr("_id")
		return nil, fmt.Errorf("document with _id %s: %w", id, err)
	}
	id, err := bsoncore.Document(raw).LookupErr("_id")
	if err != nil {
		return nil, fmt.Errorf("%w: a document without _id", ErrCorrupted)
	}
	dst = append(dst, 'd', '/')
	dst = binary.BigEndian.AppendUint32(dst, tmp.ID)
	dst = binary.BigEndian.AppendUint64(dst, spec.Point(sk))
	return value.EncodeKey(value.EncodeKey(dst, sk), id), nil
}

// ApplyResharding brings over the source's changes from r.From() up to
// commit time upTo, at most n events per transaction, with r's progress
// in each; it returns how many events of the source it brought over. A
// catalog change of the source (drop, rename, index or option change)
// fails with ErrReshardingSourceChanged.
func (s *Store) ApplyResharding(r *Resharding, upTo uint64, n int) (int, error) {
	total := 0
	for {
		src, tmp, err := s.reshardColls(r)
		if err != nil {
			return total, err
		}
		var ids [][]byte // encoded _ids changed, in order, without repeats
		seen := map[string]bool{}
		events := 0
		next := r.From()
		err = s.ReadChanges(r.From(), upTo, func(ev *ChangeEvent) (bool, error) {
			if events == n {
				return false, nil
			}
			next = ChangePos{TS: ev.Pos.TS, Index: ev.Pos.Index + 1}
			if ev.DB != r.DB || ev.Coll != r.Name || !bytes.Equal(ev.UUID, r.SourceUUID) {
				return true, nil
			}
			switch ev.Op {
			case ChangeInsert, ChangeUpdate, ChangeReplace, ChangeDelete:
			default:
				return false, fmt.Errorf("%s: %s: %w", r.Namespace(), ev.Op, ErrReshardingSourceChanged)
			}
			events++
			id, err := ev.DocumentKey.LookupErr("_id")
			if err != nil {
				return true, nil
			}
			enc := value.EncodeKey(nil, id)
			if !seen[string(enc)] {
				seen[string(enc)] = true
				ids = append(ids, enc)
			}
			return true, nil
		})
		if err != nil {
			return total, err
		}
		if next == r.From() {
			return total, nil // nothing more up to upTo
		}
		// The _id index entries are read first, in a read-only
		// transaction: Badger iterators in one that writes sort its
		// pending writes each time. The temporary collection has no
		// other writer; a source document this misses (inserted since)
		// or finds gone (deleted since) has a later event.
		srcKeys, tmpKeys := make([][][]byte, len(ids)), make([][][]byte, len(ids))
		err = s.View(func(tx *Txn) error {
			for i, id := range ids {
				var err error
				if srcKeys[i], err = tx.idEntries(src, id); err != nil {
					return err
				}
				if tmpKeys[i], err = tx.idEntries(tmp, id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		nr := *r
		nr.FromTS, nr.FromIndex, nr.Applied = int64(next.TS), int32(next.Index), r.Applied+int64(events)
		err = s.Update(func(tx *Txn) error {
			tx.unlogged = true
			tx.each = true // redone from the record after a crash: syncByID is idempotent
			for i := range ids {
				if err := tx.syncByID(tmp, srcKeys[i], tmpKeys[i]); err != nil {
					return err
				}
			}
			return putReshard(tx.t, &nr)
		})
		if err != nil {
			return total, err
		}
		*r = nr
		total += events
	}
}

// syncByID makes tmp hold exactly the source's documents of one _id
// (those at srcKeys, when still there), each at its key by tmp's shard
// key; tmpKeys are tmp's documents of that _id. Those unchanged stay,
// others are replaced, inserted or deleted.
func (t *Txn) syncByID(tmp *Collection, srcKeys, tmpKeys [][]byte) error {
	want := map[string][]byte{}
	spec := tmp.Spec()
	for _, docKey := range srcKeys {
		raw, err := t.Get(docKey)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		k, err := reshardKeyOf(tmp, spec, raw)
		if err != nil {
			return err
		}
		want[string(k)] = raw
	}
	for _, k := range tmpKeys {
		old, err := t.Get(k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		doc, keep := want[string(k)]
		switch {
		case keep && bytes.Equal(doc, old):
		case keep:
			err = t.Replace(tmp, k, doc, len(old))
		default:
			err = t.Delete(tmp, k, len(old))
		}
		if err != nil {
			return err
		}
		delete(want, string(k))
	}
	for k, doc := range want {
		if err := t.Insert(tmp, []byte(k), doc); err != nil {
			return err
		}
	}
	return nil
}

// idEntries are the keys of c's documents of _id id (encoded), read from
// c's _id index.
func (t *Txn) idEntries(c *Collection, id []byte) ([][]byte, error) {
	prefix := append(IndexPrefix(c.ID, idIndexID), id...)
	it := t.t.NewIterator(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	var keys [][]byte
	for it.Rewind(); it.Valid(); it.Next() {
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		// The entry's key goes on with the document key's tail, which
		// begins with a point: an _id is self-delimiting, so a longer
		// _id with this prefix cannot match.
		keys = append(keys, append(DocPrefix(c.ID), v...))
	}
	return keys, nil
}

// SwitchResharding is the critical section: writers of the source wait
// (new ones before they start, those in flight commit first), catchUp
// runs (it brings over the last changes: ApplyResharding up to
// ChangesVisible, which then covers every write of the source), and the
// temporary collection becomes the source: its name, options,
// throughput and creation time, the new key, its partitions, indexes and
// uuid, in one catalog transaction with the record's "cleanup". Then
// writers go on against the new entry and the source's documents are
// left for FinishResharding to purge. It returns the new entry.
func (s *Store) SwitchResharding(r *Resharding, catchUp func() error) (*Collection, error) {
	ns := r.Namespace()
	release, err := s.holdResharded(ns)
	if err != nil {
		return nil, err
	}
	defer release()
	src, tmp, err := s.reshardColls(r)
	if err != nil {
		return nil, err
	}
	// A ranged key's partitions split where the copied data is, worked
	// out before writers wait (any map tiles the point space, so the
	// last changes cannot make it wrong, only a little less even).
	var pmap *shard.Map
	if tmp.ShardKeyRanged && r.Partitions > 1 {
		points, sizes, err := s.dataPoints(tmp)
		if err != nil {
			return nil, err
		}
		pmap = tmp.Map().SplitToData(tmp.Spec(), r.Partitions, points, sizes)
	}
	unfence := s.lockFences(src.ID)
	defer unfence()
	if err := catchUp(); err != nil {
		return nil, err
	}
	if src, tmp, err = s.reshardColls(r); err != nil {
		return nil, err
	}
	next := *tmp
	next.DB, next.Name = src.DB, src.Name
	next.Created, next.Options, next.Throughput = src.Created, src.Options, src.Throughput
	next.Epoch = src.Epoch + 1
	next.MapVersion = src.MapVersion + 1
	next.ShardedAt = time.Now().UTC()
	next.cloneIndexes()
	if pmap != nil {
		next.setMap(pmap)
	}
	if err := next.finish(); err != nil {
		return nil, err
	}
	raw, err := bson.Marshal(&next)
	if err != nil {
		return nil, err
	}
	nr := *r
	nr.Phase = ReshardCleanup
	s.catMu.Lock()
	if s.colls[ns] != src || s.colls[tmp.Namespace()] != tmp {
		s.catMu.Unlock()
		return nil, fmt.Errorf("%s: %w", ns, ErrReshardingSourceChanged)
	}
	err = s.update(func(txn kv.Txn) error {
		if err := txn.Set(collKey(src.DB, src.Name), raw); err != nil {
			return err
		}
		if err := txn.Delete(collKey(tmp.DB, tmp.Name)); err != nil {
			return err
		}
		return putReshard(txn, &nr)
	}, catalogEvent(ChangeReshard, &next, reshardDescription(src, &next)))
	if err == nil {
		s.colls[ns] = &next
		delete(s.colls, tmp.Namespace())
	}
	s.catMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("reshard %s: %w", ns, err)
	}
	*r = nr
	if s.partLimit.Load() > 0 {
		s.requestSplit(next.ID)
	}
	return &next, nil
}

// reshardDescription is the operationDescription of a reshardCollection
// event, as MongoDB writes it.
func reshardDescription(src, next *Collection) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendBinary("reshardUUID", 4, next.UUID).
		AppendDocument("shardKey", next.Spec().Doc()).
		AppendDocument("oldShardKey", src.Spec().Doc()).
		AppendBoolean("unique", false).
		AppendInt64("numInitialChunks", int64(next.Map().Len())).
		Build()
}

// AbortResharding gives r up: the temporary collection's entry goes, with
// the record's "aborting", in one transaction; its documents are then
// purged and the record deleted. The source is untouched.
func (s *Store) AbortResharding(r *Resharding) error {
	if r.Phase == ReshardCleanup {
		return s.FinishResharding(r)
	}
	nr := *r
	nr.Phase = ReshardAborting
	s.catMu.Lock()
	tmpNS := r.DB + "." + r.TempName
	tmp := s.colls[tmpNS]
	err := s.update(func(txn kv.Txn) error {
		if tmp != nil && tmp.ID == r.TempID {
			if err := txn.Delete(collKey(r.DB, r.TempName)); err != nil {
				return err
			}
		}
		return putReshard(txn, &nr)
	})
	if err == nil && tmp != nil && tmp.ID == r.TempID {
		delete(s.colls, tmpNS)
	}
	s.catMu.Unlock()
	if err != nil {
		return fmt.Errorf("abort resharding %s: %w", r.Namespace(), err)
	}
	if tmp != nil {
		unfence := s.lockFences(tmp.ID) // writers in flight end first
		unfence()
	}
	*r = nr
	return s.FinishResharding(r)
}

// FinishResharding ends a resharding that switched (Phase "cleanup":
// the source's documents are purged) or aborted ("aborting": the
// temporary collection's), deleting its record.
func (s *Store) FinishResharding(r *Resharding) error {
	var id uint32
	switch r.Phase {
	case ReshardCleanup:
		id = r.SourceID
	case ReshardAborting:
		id = r.TempID
	default:
		return fmt.Errorf("resharding %s is %s, not finished", r.Namespace(), r.Phase)
	}
	s.dropCopyFilter(r.TempID)
	s.dropCopySnapshots(r, -1)
	if err := s.purge(id); err != nil {
		return err
	}
	return s.update(func(txn kv.Txn) error {
		if err := deleteCopyRanges(txn, r); err != nil {
			return err
		}
		return txn.Delete(reshardKey(r.DB, r.Name))
	})
}
