package store

import (
	"sync"

	"github.com/parsecdb/parsec/engine/kv"
)

// A resharding's copy reads the source as it was when the copy began in
// this process, not as it is at each batch: a document written after
// that is brought over from the change log anyway, since it was written
// at a commit time after the copy's From (BeginResharding takes From
// before the copy can begin, and every commit at or before it had been
// made by then). Read at each batch, the copy also took every document
// inserted ahead of it while it ran, and under a steady insert load it
// copied as many again as there were at its start (bench -only
// '^reshard$': 405,376 copied of 215,746), or never ended when the
// writers inserted faster than it copied.
//
// The copy keeps no transaction open for that. It keeps the version its
// range's first batch read at (kv.ReadVersioner), reads each batch in a
// transaction of its own, and passes over every document whose version
// is newer (kv.VersionedItem): written since, so the change log brings
// it (bringing a change over makes the temporary collection hold exactly
// the source's documents of that _id, whatever the copy took). A read
// transaction held open for the whole copy (as the copy once did) kept
// Badger from forgetting the transactions committed meanwhile, and every
// commit checked its reads against all of them: under 8 clients while a
// million documents were copied, 27 % of the server's CPU went to that
// check, and the foreground fell to 0.30 x its rate before the copy.
//
// A copy resumed after a restart begins again, at a later point: it
// copies what was written meanwhile too, which bringing the changes over
// makes right (it is idempotent). On a kv that keeps groups apart
// (cluster), or one that tells no versions, each batch reads the state
// of its own time: the node that runs the copy may change.
type copySnapshots struct {
	mu       sync.Mutex
	versions map[copySnapshotKey]uint64
}

type copySnapshotKey struct {
	temp  uint32 // the resharding's temporary collection
	index int    // its copy range
}

// scanCopy visits the documents of src in [start, end) (end nil: to the
// last) as range i of r's copy reads them: those written at or before
// the version its first batch read at.
func (s *Store) scanCopy(r *Resharding, i int, src *Collection, start, end []byte, fn func(key, doc []byte) (bool, error)) error {
	if s.grouped != nil {
		return s.View(func(tx *Txn) error { return tx.ScanRange(src, start, end, fn) })
	}
	k := copySnapshotKey{r.TempID, i}
	return s.View(func(tx *Txn) error {
		rv, ok := tx.t.(kv.ReadVersioner)
		if !ok {
			return tx.ScanRange(src, start, end, fn)
		}
		cs := &s.copySnaps
		cs.mu.Lock()
		at, ok := cs.versions[k]
		if !ok {
			at = rv.ReadVersion()
			if cs.versions == nil {
				cs.versions = map[copySnapshotKey]uint64{}
			}
			cs.versions[k] = at
		}
		cs.mu.Unlock()
		return tx.scanItems(src, start, end, func(item kv.Item) bool {
			v, ok := item.(kv.VersionedItem)
			return ok && v.Version() > at // written since the copy began: the change log has it
		}, fn)
	})
}

// dropCopySnapshots forgets the read versions of r's copy: of range i,
// or of every range when i < 0; of every resharding when r is nil.
func (s *Store) dropCopySnapshots(r *Resharding, i int) {
	cs := &s.copySnaps
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for k := range cs.versions {
		if r == nil || k.temp == r.TempID && (i < 0 || k.index == i) {
			delete(cs.versions, k)
		}
	}
}
