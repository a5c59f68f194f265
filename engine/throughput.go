package engine

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
)

// Throughput as requests see it: one ru.Pool per provisioned throughput
// (a collection's own, or a database's shared by its collections without
// their own) and one ru.Partition per physical partition.
//
// The catalog is the truth; throughputs follows it lazily. A request
// looks its collection's partitions up by the catalog entry it holds:
// when that entry is the one they were built from and the generation has
// not moved, the lookup is one read-locked map access. Otherwise (a
// split or a throughput change replaced the entry; a database's shared
// throughput changed, or a collection was dropped or renamed, which bump
// the generation) the request re-syncs the collection under the lock: a
// split detaches the parent's partition and attaches new ones for the
// children, a throughput change re-divides, a move between shared and own
// throughput moves the partitions with their statistics.

// throughputs is the registry of pools and partitions.
type throughputs struct {
	store     storage.Storage
	now       func() time.Time
	opts      ru.Options
	effective func(*store.Collection) (ru.Throughput, bool) // (*Engine).effectiveThroughput

	gen atomic.Int64 // bumped by catalog changes entries do not show

	mu     sync.RWMutex // guards colls; syncs hold it for writing
	colls  map[uint32]*collUnits
	dbs    map[string]*ru.Pool // shared database throughput
	pruned int64               // the generation prune last ran at
}

// collUnits are one collection's partitions as of one catalog entry.
// Published values are never changed: a re-sync publishes a new one.
type collUnits struct {
	entry  *store.Collection
	gen    int64
	pool   *ru.Pool
	shared bool
	parts  []*ru.Partition       // in entry.Map() order
	byID   map[int]*ru.Partition // every partition the collection had, split ones included
}

func newThroughputs(s storage.Storage, now func() time.Time, opts ru.Options, effective func(*store.Collection) (ru.Throughput, bool)) *throughputs {
	return &throughputs{store: s, now: now, opts: opts, effective: effective,
		colls: map[uint32]*collUnits{}, dbs: map[string]*ru.Pool{}}
}

// catalogChanged is called after a change the collection entries do not
// show: a database's shared throughput, a drop, a rename.
func (t *throughputs) catalogChanged() { t.gen.Add(1) }

// of returns c's partitions, syncing them when c's entry is new to them.
// It returns nil when c is no longer in the catalog and was never synced.
func (t *throughputs) of(c *store.Collection) *collUnits {
	t.mu.RLock()
	u := t.colls[c.ID]
	t.mu.RUnlock()
	if u != nil && u.entry == c && u.gen == t.gen.Load() {
		return u
	}
	return t.sync(c)
}

func (t *throughputs) sync(c *store.Collection) *collUnits {
	t.mu.Lock()
	defer t.mu.Unlock()
	gen := t.gen.Load()
	if t.pruned != gen {
		t.prune()
		t.pruned = gen
	}
	cur := t.store.Collection(c.DB, c.Name)
	if cur == nil || cur.ID != c.ID {
		return t.colls[c.ID] // dropped or renamed meanwhile: as it was
	}
	u := t.syncLocked(cur, gen)
	if u.shared {
		// Shared throughput is divided among the partitions of all the
		// database's collections without their own, used yet or not.
		for _, other := range t.store.Collections(cur.DB) {
			if o := t.colls[other.ID]; o == nil || o.entry != other || o.gen != gen {
				t.syncLocked(other, gen)
			}
		}
	}
	return u
}

// syncLocked builds c's partitions anew from entry c, reusing the ones
// it already has. t.mu is held.
func (t *throughputs) syncLocked(c *store.Collection, gen int64) *collUnits {
	old := t.colls[c.ID]
	if old != nil && old.entry == c && old.gen == gen {
		return old
	}
	now := t.now()
	thr, shared := t.effective(c)
	var pool *ru.Pool
	switch {
	case shared:
		if pool = t.dbs[c.DB]; pool == nil {
			pool = ru.NewPool(thr, t.opts)
			t.dbs[c.DB] = pool
		}
	case old != nil && !old.shared:
		pool = old.pool
	default:
		pool = ru.NewPool(thr, t.opts)
	}
	if pool.Throughput() != thr {
		pool.SetThroughput(now, thr)
	}
	u := &collUnits{entry: c, gen: gen, pool: pool, shared: shared, byID: map[int]*ru.Partition{}}
	live := map[*ru.Partition]bool{}
	if old != nil {
		for id, p := range old.byID {
			u.byID[id] = p
		}
	}
	// One change of each pool, however many partitions come and go.
	m := c.Map()
	u.parts = make([]*ru.Partition, m.Len())
	var missing []int // positions without a partition yet
	var moved []*ru.Partition
	for i, p := range m.Partitions() {
		rp := u.byID[p.ID]
		switch {
		case rp == nil:
			missing = append(missing, i)
			continue
		case old.pool != pool:
			moved = append(moved, rp)
		}
		u.parts[i] = rp
		live[rp] = true
	}
	var gone []*ru.Partition
	if old != nil {
		for _, rp := range old.parts {
			if !live[rp] { // split: its children serve its range now
				gone = append(gone, rp)
			}
		}
	}
	if old != nil && old.pool != pool {
		old.pool.Change(now, append(gone, moved...), nil, 0)
		gone = nil
	}
	if len(gone) > 0 || len(moved) > 0 || len(missing) > 0 {
		added := pool.Change(now, gone, moved, len(missing))
		for j, i := range missing {
			u.parts[i] = added[j]
			u.byID[m.At(i).ID] = added[j]
		}
	}
	t.colls[c.ID] = u
	return u
}

// prune forgets collections that are no longer in the catalog under the
// name they had, detaching their partitions from their pools (a shared
// pool re-divides among the rest), and shared pools no collection uses.
// t.mu is held.
func (t *throughputs) prune() {
	now := t.now()
	used := map[*ru.Pool]bool{}
	for id, u := range t.colls {
		if cur := t.store.Collection(u.entry.DB, u.entry.Name); cur == nil || cur.ID != id {
			for _, rp := range u.parts {
				u.pool.Detach(now, rp)
			}
			delete(t.colls, id)
			continue
		}
		used[u.pool] = true
	}
	for db, p := range t.dbs {
		if !used[p] {
			delete(t.dbs, db)
		}
	}
}

// all returns every collection's partitions synced with the catalog now.
func (t *throughputs) all() []*collUnits {
	var out []*collUnits
	for _, db := range t.store.Databases() {
		for _, c := range t.store.Collections(db) {
			if u := t.of(c); u != nil {
				out = append(out, u)
			}
		}
	}
	return out
}

// index is the position in u.parts of the partition that holds document
// key (d/<coll:4><point:8>...), by u's map: a request holding an older
// entry charges the partition that owns the key now.
func (u *collUnits) index(key []byte) int {
	if len(u.parts) == 1 || len(key) < 14 {
		return 0
	}
	return u.entry.Map().Lookup(binary.BigEndian.Uint64(key[6:14]))
}

// at is the partition that holds document key.
func (u *collUnits) at(key []byte) *ru.Partition { return u.parts[u.index(key)] }

// spanParts are the partitions of spans (a plan's routing, in hash order;
// none: the whole collection). Routed to every partition, it is u.parts
// itself, without allocating.
func (u *collUnits) spanParts(spans []partitionSpan) []*ru.Partition {
	switch {
	case len(spans) == 0 || len(u.parts) == 1:
		return u.parts
	case len(spans) == 1:
		i := u.index(spans[0].Start)
		return u.parts[i : i+1]
	case len(spans) == len(u.parts) && u.index(spans[0].Start) == 0 && u.index(spans[len(spans)-1].Start) == len(u.parts)-1:
		return u.parts
	}
	out := make([]*ru.Partition, 0, len(spans))
	for _, s := range spans {
		p := u.at(s.Start)
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}
