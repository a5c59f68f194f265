package billing

import (
	"context"
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
// The catalog is the truth; Accounts follows it lazily. A request
// looks its collection's partitions up by the catalog entry it holds:
// when that entry is the one they were built from and the generation has
// not moved, the lookup is one read-locked map access. Otherwise (a
// split or a throughput change replaced the entry; a database's shared
// throughput changed, or a collection was dropped or renamed, which bump
// the generation) the request re-syncs the collection under the lock: a
// split detaches the parent's partition and attaches new ones for the
// children, a throughput change re-divides, a move between shared and own
// throughput moves the partitions with their statistics.

// Config is what Accounts needs of the server.
type Config struct {
	// Store is the catalog the accounts follow (and where the hot
	// logical partitions' shard-key values are read).
	Store storage.Storage
	// Now is the clock of every charge and statistic.
	Now func() time.Time
	// Wait waits d by Now's clock, or until ctx is done and then returns
	// its error: server-side retry's sleep (nil: a real timer).
	Wait    func(ctx context.Context, d time.Duration) error
	Options Options
	// Effective is a collection's provisioned throughput and whether it
	// is its database's, shared.
	Effective func(*store.Collection) (ru.Throughput, bool)
}

// Accounts are the server's request-unit accounts: the registry of pools
// and partitions, and the rules that admit and charge requests against
// them. It is safe for concurrent use.
type Accounts struct {
	store     storage.Storage
	now       func() time.Time
	wait      func(ctx context.Context, d time.Duration) error
	opts      Options
	bucket    ru.Options
	effective func(*store.Collection) (ru.Throughput, bool)

	gen atomic.Int64 // bumped by catalog changes entries do not show

	mu     sync.RWMutex // guards colls; syncs hold it for writing
	colls  map[uint32]*Units
	dbs    map[string]*ru.Pool // shared database throughput
	pruned int64               // the generation prune last ran at
}

// Units are one collection's partitions as of one catalog entry.
// Published values are never changed: a re-sync publishes a new one.
type Units struct {
	entry  *store.Collection
	gen    int64
	pool   *ru.Pool
	shared bool
	parts  []*ru.Partition       // in entry.Map() order
	byID   map[int]*ru.Partition // every partition the collection had, split ones included
}

// New returns the accounts of a server with no partitions synced yet.
func New(cfg Config) *Accounts {
	return &Accounts{store: cfg.Store, now: cfg.Now, wait: cfg.Wait, opts: cfg.Options,
		bucket: ru.Options{BurstSeconds: cfg.Options.BurstSeconds}, effective: cfg.Effective,
		colls: map[uint32]*Units{}, dbs: map[string]*ru.Pool{}}
}

// CatalogChanged is called after a change the collection entries do not
// show: a database's shared throughput, a drop, a rename.
func (a *Accounts) CatalogChanged() { a.gen.Add(1) }

// Of returns c's partitions, syncing them when c's entry is new to them.
// It returns nil when c is no longer in the catalog and was never synced.
func (a *Accounts) Of(c *store.Collection) *Units {
	a.mu.RLock()
	u := a.colls[c.ID]
	a.mu.RUnlock()
	if u != nil && u.entry == c && u.gen == a.gen.Load() {
		return u
	}
	return a.sync(c)
}

func (a *Accounts) sync(c *store.Collection) *Units {
	a.mu.Lock()
	defer a.mu.Unlock()
	gen := a.gen.Load()
	if a.pruned != gen {
		a.prune()
		a.pruned = gen
	}
	cur := a.store.Collection(c.DB, c.Name)
	if cur == nil || cur.ID != c.ID {
		return a.colls[c.ID] // dropped or renamed meanwhile: as it was
	}
	u := a.syncLocked(cur, gen)
	if u.shared {
		// Shared throughput is divided among the partitions of all the
		// database's collections without their own, used yet or not.
		for _, other := range a.store.Collections(cur.DB) {
			if o := a.colls[other.ID]; o == nil || o.entry != other || o.gen != gen {
				a.syncLocked(other, gen)
			}
		}
	}
	return u
}

// syncLocked builds c's partitions anew from entry c, reusing the ones
// it already has. a.mu is held.
func (a *Accounts) syncLocked(c *store.Collection, gen int64) *Units {
	old := a.colls[c.ID]
	if old != nil && old.entry == c && old.gen == gen {
		return old
	}
	now := a.now()
	thr, shared := a.effective(c)
	var pool *ru.Pool
	switch {
	case shared:
		if pool = a.dbs[c.DB]; pool == nil {
			pool = ru.NewPool(thr, a.bucket)
			a.dbs[c.DB] = pool
		}
	case old != nil && !old.shared:
		pool = old.pool
	default:
		pool = ru.NewPool(thr, a.bucket)
	}
	if pool.Throughput() != thr {
		pool.SetThroughput(now, thr)
	}
	u := &Units{entry: c, gen: gen, pool: pool, shared: shared, byID: map[int]*ru.Partition{}}
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
	a.colls[c.ID] = u
	return u
}

// prune forgets collections that are no longer in the catalog under the
// name they had, detaching their partitions from their pools (a shared
// pool re-divides among the rest), and shared pools no collection uses.
// a.mu is held.
func (a *Accounts) prune() {
	now := a.now()
	used := map[*ru.Pool]bool{}
	for id, u := range a.colls {
		if cur := a.store.Collection(u.entry.DB, u.entry.Name); cur == nil || cur.ID != id {
			for _, rp := range u.parts {
				u.pool.Detach(now, rp)
			}
			delete(a.colls, id)
			continue
		}
		used[u.pool] = true
	}
	for db, p := range a.dbs {
		if !used[p] {
			delete(a.dbs, db)
		}
	}
}

// All returns every collection's partitions synced with the catalog now.
func (a *Accounts) All() []*Units {
	var out []*Units
	for _, db := range a.store.Databases() {
		for _, c := range a.store.Collections(db) {
			if u := a.Of(c); u != nil {
				out = append(out, u)
			}
		}
	}
	return out
}

// Index is the position in Parts of the partition that holds document
// key (d/<coll:4><point:8>...), by u's map: a request holding an older
// entry charges the partition that owns the key now.
func (u *Units) Index(key []byte) int {
	if len(u.parts) == 1 || len(key) < 14 {
		return 0
	}
	return u.entry.Map().Lookup(binary.BigEndian.Uint64(key[6:14]))
}

// At is the partition that holds document key.
func (u *Units) At(key []byte) *ru.Partition { return u.parts[u.Index(key)] }

// Holding is At as a slice of one partition (u's own, not a copy): the
// partitions of a statement that targets the item at key.
func (u *Units) Holding(key []byte) []*ru.Partition {
	i := u.Index(key)
	return u.parts[i : i+1]
}

// Parts are the collection's partitions now, in the order of its
// partition map. The slice is u's own: callers do not change it.
func (u *Units) Parts() []*ru.Partition { return u.parts }

// Partition is the partition with id, one that split included (nil:
// none).
func (u *Units) Partition(id int) *ru.Partition { return u.byID[id] }
