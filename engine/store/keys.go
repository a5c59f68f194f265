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

func counterBaseKey(id uint32) []byte { return append(counterPrefix(id), 'b') }

func (s *Store) deltaKey(id uint32) []byte {
	k := append(counterPrefix(id), 'd')
	k = binary.BigEndian.AppendUint64(k, s.boot)
	return binary.BigEndian.AppendUint64(k, s.deltaSeq.Add(1))
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

// Retryable writes: s/h<lsid> and s/r<lsid><stmtId> (sessions.go).

var (
	sessionHeadPrefix = []byte("s/h")
	sessionStmtPrefix = []byte("s/r")
)

func sessionHeadKey(lsid []byte) []byte {
	return append(append(make([]byte, 0, len(sessionHeadPrefix)+SessionIDLen), sessionHeadPrefix...), lsid...)
}

// sessionStmtsPrefix is the prefix of the statement keys of lsid.
func sessionStmtsPrefix(lsid []byte) []byte {
	return append(append(make([]byte, 0, len(sessionStmtPrefix)+SessionIDLen+4), sessionStmtPrefix...), lsid...)
}

func sessionStmtKey(lsid []byte, id int32) []byte {
	return binary.BigEndian.AppendUint32(sessionStmtsPrefix(lsid), uint32(id))
}

// Change log: l/e<ts:8><index:4> and l/h, an inserted or replacing
// version's marker l/r<document key> and its kept image
// l/i<ts:8><index:4> (changes.go).

var (
	changeEventPrefix = []byte("l/e")
	changeHorizonKey  = []byte("l/h")
	changeRefPrefix   = []byte("l/r")
	changeImagePrefix = []byte("l/i")
)

func changeRefKey(docKey []byte) []byte {
	return append(append(make([]byte, 0, len(changeRefPrefix)+len(docKey)), changeRefPrefix...), docKey...)
}

func changeImageKey(p ChangePos) []byte {
	k := make([]byte, 0, len(changeImagePrefix)+12)
	k = append(k, changeImagePrefix...)
	k = binary.BigEndian.AppendUint64(k, p.TS)
	return binary.BigEndian.AppendUint32(k, p.Index)
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

func parseChangeKey(k []byte) (ChangePos, bool) {
	if len(k) != len(changeEventPrefix)+12 || !bytes.HasPrefix(k, changeEventPrefix) {
		return ChangePos{}, false
	}
	k = k[len(changeEventPrefix):]
	return ChangePos{TS: binary.BigEndian.Uint64(k), Index: binary.BigEndian.Uint32(k[8:])}, true
}

// Scope is the part of the data a key belongs to: what a store that keeps
// physical partitions apart (a consensus group each) keeps it with.
type Scope uint8

const (
	// ScopeFollows: the key goes with the documents its transaction
	// writes (index entries, collection counters, retryable-write
	// records): a transaction that writes documents writes them in one
	// physical partition, and these keys with them.
	ScopeFollows Scope = iota
	// ScopePartition: a document or a logical partition's counter, kept
	// by the physical partition whose range holds Point.
	ScopePartition
	// ScopeCatalog: databases, collections, views, users, sequences.
	ScopeCatalog
	// ScopeReplica: a replica's own bookkeeping (r/), never replicated.
	ScopeReplica
)

// Owner is where a key belongs.
type Owner struct {
	Scope Scope
	Coll  uint32 // ScopePartition
	Point uint64 // ScopePartition: the key's place in the hash space
}

// OwnerOf says where key belongs, from the key alone. Index entries carry
// no point in every form (a unique index's key is the value alone), so
// they follow their document, as every key of ScopeFollows does.
func OwnerOf(key []byte) (Owner, error) {
	if len(key) < 2 || key[1] != '/' {
		return Owner{}, fmt.Errorf("%w: key %x has no space tag", ErrCorrupted, key)
	}
	switch key[0] {
	case 'm':
		return Owner{Scope: ScopeCatalog}, nil
	case 'r':
		return Owner{Scope: ScopeReplica}, nil
	case 'd':
		if len(key) < docPrefixLen+8 {
			return Owner{}, fmt.Errorf("%w: document key %x is too short", ErrCorrupted, key)
		}
		return Owner{Scope: ScopePartition, Coll: u32(key[2:]), Point: binary.BigEndian.Uint64(key[docPrefixLen:])}, nil
	case 'c':
		if len(key) >= 7+8 && key[6] == lpTag {
			return Owner{Scope: ScopePartition, Coll: u32(key[2:]), Point: binary.BigEndian.Uint64(key[7:])}, nil
		}
		return Owner{Scope: ScopeFollows}, nil
	case 'x', 'u', 's', 'l':
		return Owner{Scope: ScopeFollows}, nil
	}
	return Owner{}, fmt.Errorf("%w: key %x has an unknown space tag", ErrCorrupted, key)
}
