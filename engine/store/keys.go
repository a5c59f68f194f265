package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Every key family of the store is built here; doc.go draws them.

// Catalog: m/ ... (catalog.go, users.go, pending.go), told apart by
// their prefixes when the catalog is loaded.
const (
	catalogSpace = "m/"
	dbSpace      = "m/db/"
	collSpace    = "m/coll/"
	viewSpace    = "m/view/"
	userSpace    = "m/user/"
	pendingSpace = "m/pending/"
)

func dbKey(name string) []byte { return append([]byte(dbSpace), name...) }

func collKey(db, name string) []byte {
	k := append([]byte(collSpace), db...)
	k = append(k, 0)
	return append(k, name...)
}

func viewKey(db, name string) []byte {
	k := append([]byte(viewSpace), db...)
	k = append(k, 0)
	return append(k, name...)
}

var (
	seqKey  = []byte("m/seq/coll")
	bootKey = []byte("m/boot")
)

func userPrefix(db string) []byte {
	k := append([]byte(userSpace), db...)
	return append(k, 0)
}

func userKey(db, name string) []byte { return append(userPrefix(db), name...) }

func pendingKey(id uint32) []byte { return binary.BigEndian.AppendUint32([]byte(pendingSpace), id) }

// Documents: d/<collID:4><point:8><shard key><_id> (docs.go).

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

// Counters: c/<collID:4> ... (counters.go, lpcounters.go).

func counterPrefix(id uint32) []byte {
	k := make([]byte, 6, 6+1+16)
	k[0], k[1] = 'c', '/'
	binary.BigEndian.PutUint32(k[2:], id)
	return k
}

// Collection counters are cells c/<collID:4>k<point:8> ...: a base
// (b) and deltas (d<boot:8><seq:8>). A cell's point is a point of the
// physical partition whose transaction wrote it: what it counts is part
// of the collection's total (the sum of every cell), and it belongs to
// the physical partition holding its point, so a split moves none.
const cellTag = 'k'

func cellPrefix(id uint32, point uint64) []byte {
	return binary.BigEndian.AppendUint64(append(counterPrefix(id), cellTag), point)
}

func counterBaseKey(id uint32, point uint64) []byte { return append(cellPrefix(id, point), 'b') }

func (s *Store) deltaKey(id uint32, point uint64) []byte {
	k := append(cellPrefix(id, point), 'd')
	k = binary.BigEndian.AppendUint64(k, s.boot)
	return binary.BigEndian.AppendUint64(k, s.deltaSeq.Add(1))
}

// isCounterBase reports whether k, a key under c/<collID> before the
// logical-partition counters, is a base rather than a delta (a base of
// the layout before cells, c/<collID>b, too).
func isCounterBase(k []byte) bool {
	return len(k) == 7 && k[6] == 'b' || len(k) == 16 && k[6] == cellTag && k[15] == 'b'
}

const (
	lpTag    = 'l' // after c/<collID>: logical-partition counters
	lpBase   = 'b' // after a logical partition: its base
	lpDeltaT = 'd' // after a logical partition: a delta
)

func lpPrefix(id uint32) []byte { return append(counterPrefix(id), lpTag) }

// lpKeyPrefix is the prefix of one logical partition's counter keys. lp is
// <point:8><shardKey>; shardKey is self-delimiting, so no logical
// partition's prefix is a prefix of another's.
func lpKeyPrefix(id uint32, lp []byte) []byte {
	k := make([]byte, 0, 7+len(lp)+1+16)
	k = append(k, lpPrefix(id)...)
	return append(k, lp...)
}

func lpBaseKey(id uint32, lp []byte) []byte { return append(lpKeyPrefix(id, lp), lpBase) }

func (s *Store) lpDeltaKey(id uint32, lp []byte) []byte {
	k := append(lpKeyPrefix(id, lp), lpDeltaT)
	k = binary.BigEndian.AppendUint64(k, s.boot)
	return binary.BigEndian.AppendUint64(k, s.deltaSeq.Add(1))
}

// cappedSeqTag follows c/<collID> in the key of a capped collection's
// sequence; it sorts after the logical-partition counters' tag.
const cappedSeqTag = 's'

func cappedSeqKey(id uint32) []byte { return append(counterPrefix(id), cappedSeqTag) }

// Index entries x/<collID:4><ixID:4> ... and unique guards u/ ... (indexes.go, uniqueconv.go).

// IndexPrefix is the key prefix of index ix of collection coll.
func IndexPrefix(coll, ix uint32) []byte {
	k := make([]byte, 10, 64)
	k[0], k[1] = 'x', '/'
	binary.BigEndian.PutUint32(k[2:], coll)
	binary.BigEndian.PutUint32(k[6:], ix)
	return k
}

func uniqueGuardKey(prefix []byte) []byte {
	return append([]byte{'u', '/'}, prefix[2:]...)
}

// Retryable writes: s/h<lsid>[<home>] and s/r<lsid><stmtId>[<home>]
// (sessions.go). home is <collID:4><point:8>, the physical partition
// whose transaction wrote the record (its first document's collection,
// and the first point of that document's partition); a record written
// by a transaction that wrote no document has none and belongs to the
// catalog. A session that wrote in several partitions has a head in
// each, as a MongoDB session has a transaction record on each shard.

var (
	sessionHeadPrefix = []byte("s/h")
	sessionStmtPrefix = []byte("s/r")
)

// home is where a transaction keeps what follows its documents: the
// physical partition of the first document it wrote (ok false: none).
type home struct {
	coll  uint32
	point uint64 // the partition's first point
	ok    bool
}

func (h home) append(k []byte) []byte {
	if !h.ok {
		return k
	}
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(k, h.coll), h.point)
}

const homeLen = 12

func sessionHeadsPrefix(lsid []byte) []byte {
	return append(append(make([]byte, 0, len(sessionHeadPrefix)+SessionIDLen+homeLen), sessionHeadPrefix...), lsid...)
}

func sessionHeadKey(lsid []byte, h home) []byte { return h.append(sessionHeadsPrefix(lsid)) }

// sessionStmtsPrefix is the prefix of the statement keys of lsid.
func sessionStmtsPrefix(lsid []byte) []byte {
	return append(append(make([]byte, 0, len(sessionStmtPrefix)+SessionIDLen+4+homeLen), sessionStmtPrefix...), lsid...)
}

func sessionStmtKey(lsid []byte, id int32, h home) []byte {
	return h.append(binary.BigEndian.AppendUint32(sessionStmtsPrefix(lsid), uint32(id)))
}

// Change log: l/e<ts:8><index:4>[<collID:4><point:8>] and l/h, an
// inserted or replacing version's marker l/r<document key> and its kept
// image l/i<ts:8><index:4>[<collID:4><point:8>] (changes.go). A document's
// event and image end with its document key's collection and point (the
// partition they belong to); a catalog change's event has no suffix.

var (
	changeEventPrefix = []byte("l/e")
	changeHorizonKey  = []byte("l/h")
	changeRefPrefix   = []byte("l/r")
	changeImagePrefix = []byte("l/i")
)

func changeRefKey(docKey []byte) []byte {
	return append(append(make([]byte, 0, len(changeRefPrefix)+len(docKey)), changeRefPrefix...), docKey...)
}

// docOwnerSuffix is the <collID:4><point:8> of a document key (nil for
// any other key).
func docOwnerSuffix(docKey []byte) []byte {
	if len(docKey) < docPrefixLen+8 || docKey[0] != 'd' {
		return nil
	}
	return docKey[2 : docPrefixLen+8]
}

func changeImageKey(p ChangePos, docKey []byte) []byte {
	k := make([]byte, 0, len(changeImagePrefix)+24)
	k = append(k, changeImagePrefix...)
	k = binary.BigEndian.AppendUint64(k, p.TS)
	k = binary.BigEndian.AppendUint32(k, p.Index)
	return append(k, docOwnerSuffix(docKey)...)
}

func encodeChangePos(p ChangePos) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(make([]byte, 0, 12), p.TS), p.Index)
}

func decodeChangePos(b []byte) (ChangePos, bool) {
	if len(b) != 12 {
		return ChangePos{}, false
	}
	return ChangePos{TS: binary.BigEndian.Uint64(b), Index: binary.BigEndian.Uint32(b[8:])}, true
}

func changeKey(p ChangePos) []byte {
	k := make([]byte, 0, len(changeEventPrefix)+12)
	k = append(k, changeEventPrefix...)
	k = binary.BigEndian.AppendUint64(k, p.TS)
	return binary.BigEndian.AppendUint32(k, p.Index)
}

// changeEventKey is the key of the event at p, of the document at
// docKey (nil: a catalog change).
func changeEventKey(p ChangePos, docKey []byte) []byte {
	return append(changeKey(p), docOwnerSuffix(docKey)...)
}

func parseChangeKey(k []byte) (ChangePos, bool) {
	if len(k) != len(changeEventPrefix)+12 && len(k) != len(changeEventPrefix)+24 || !bytes.HasPrefix(k, changeEventPrefix) {
		return ChangePos{}, false
	}
	k = k[len(changeEventPrefix):]
	return ChangePos{TS: binary.BigEndian.Uint64(k), Index: binary.BigEndian.Uint32(k[8:])}, true
}

// Scope is the part of the data a key belongs to: what a store that keeps
// physical partitions apart (a consensus group each) keeps it with.
type Scope uint8

const (
	// ScopeFollows: a unique-index guard (u/), which is never stored: a
	// write reads and deletes it in the transaction of its document, so
	// it goes with that transaction.
	ScopeFollows Scope = iota
	// ScopePartition: kept by the physical partition of collection Coll
	// whose range holds Point: documents, counters, index entries,
	// retryable-write records and change events of its documents.
	ScopePartition
	// ScopeCatalog: databases, collections, views, users, sequences,
	// catalog changes' events, the change log's horizon, and the
	// retryable-write records of transactions that wrote no document.
	ScopeCatalog
	// ScopeReplica: a replica's own bookkeeping (r/), never replicated.
	ScopeReplica
)

// Owner is where a key belongs.
type Owner struct {
	Scope Scope
	Coll  uint32 // ScopePartition
	Point uint64 // ScopePartition: the key's place in the point space
}

func partitionOwner(collPoint []byte) Owner {
	return Owner{Scope: ScopePartition, Coll: u32(collPoint), Point: binary.BigEndian.Uint64(collPoint[4:])}
}

// OwnerInKey reports whether OwnerOf's answer for key is the same
// whatever the value: true for every key but an index entry's (x/), whose
// value names its document's point.
func OwnerInKey(key []byte) bool { return len(key) < 1 || key[0] != 'x' }

// OwnerOf says where a stored key belongs, from the key and its value.
// Every key but an index entry's names its owner itself; an index entry
// (x/) is named by its value, which begins with its document's point
// (indexes.go). A split of a physical partition therefore moves no key:
// the keys at the points of the new range are the new partition's.
func OwnerOf(key, value []byte) (Owner, error) {
	if len(key) < 2 || key[1] != '/' {
		return Owner{}, fmt.Errorf("%w: key %x has no space tag", ErrCorrupted, key)
	}
	short := func(what string) (Owner, error) {
		return Owner{}, fmt.Errorf("%w: %s key %x is too short", ErrCorrupted, what, key)
	}
	switch key[0] {
	case 'm':
		return Owner{Scope: ScopeCatalog}, nil
	case 'r':
		return Owner{Scope: ScopeReplica}, nil
	case 'd':
		if len(key) < docPrefixLen+8 {
			return short("document")
		}
		return partitionOwner(key[2:]), nil
	case 'c':
		switch {
		case len(key) < 7:
			return short("counter")
		case key[6] == lpTag || key[6] == cellTag:
			if len(key) < 7+8 {
				return short("counter")
			}
			return Owner{Scope: ScopePartition, Coll: u32(key[2:]), Point: binary.BigEndian.Uint64(key[7:])}, nil
		}
		// A capped collection's sequence, or a collection counter of
		// the layout before cells: unsharded, or counted in the total
		// only, so kept at point 0.
		return Owner{Scope: ScopePartition, Coll: u32(key[2:])}, nil
	case 'x':
		if len(key) < 10 {
			return short("index entry")
		}
		if len(value) < 8 {
			return Owner{}, fmt.Errorf("%w: index entry %x has a value of %d bytes", ErrCorrupted, key, len(value))
		}
		return Owner{Scope: ScopePartition, Coll: u32(key[2:]), Point: binary.BigEndian.Uint64(value)}, nil
	case 'u':
		return Owner{Scope: ScopeFollows}, nil
	case 's':
		n := len(sessionHeadPrefix) + SessionIDLen
		if bytes.HasPrefix(key, sessionStmtPrefix) {
			n += 4
		} else if !bytes.HasPrefix(key, sessionHeadPrefix) {
			break
		}
		switch len(key) {
		case n:
			return Owner{Scope: ScopeCatalog}, nil
		case n + homeLen:
			return partitionOwner(key[n:]), nil
		}
		return Owner{}, fmt.Errorf("%w: retryable-write key %x has %d bytes", ErrCorrupted, key, len(key))
	case 'l':
		switch {
		case bytes.Equal(key, changeHorizonKey):
			return Owner{Scope: ScopeCatalog}, nil
		case bytes.HasPrefix(key, changeRefPrefix):
			return OwnerOf(key[len(changeRefPrefix):], nil)
		case bytes.HasPrefix(key, changeEventPrefix) || bytes.HasPrefix(key, changeImagePrefix):
			switch len(key) {
			case len(changeEventPrefix) + 12:
				return Owner{Scope: ScopeCatalog}, nil
			case len(changeEventPrefix) + 24:
				return partitionOwner(key[len(changeEventPrefix)+12:]), nil
			}
			return Owner{}, fmt.Errorf("%w: change-log key %x has %d bytes", ErrCorrupted, key, len(key))
		}
	}
	return Owner{}, fmt.Errorf("%w: key %x has an unknown space tag", ErrCorrupted, key)
}
