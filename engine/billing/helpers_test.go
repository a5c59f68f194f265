package billing

import (
	"context"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
)

// clock is the injected clock of a test: it moves only when told to
// (advance, or a server-side retry's wait).
type clock struct{ t time.Time }

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// wait is server-side retry's sleep on the test clock: it records the
// waits and moves the clock by each.
func (c *clock) wait(waits *[]time.Duration) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		*waits = append(*waits, d)
		c.advance(d)
		return nil
	}
}

// catalog is a catalog of unsharded collections: what Accounts reads of
// storage. Every other method of storage.Storage panics (nil embedded).
type catalog struct {
	storage.Storage
	dbs    []string
	colls  map[string][]*store.Collection
	shared map[string]ru.Throughput // databases with shared throughput
	nextID uint32
}

func newCatalog() *catalog {
	return &catalog{colls: map[string][]*store.Collection{}, shared: map[string]ru.Throughput{}}
}

func (c *catalog) Databases() []string { return c.dbs }

func (c *catalog) Collections(db string) []*store.Collection { return c.colls[db] }

func (c *catalog) Collection(db, name string) *store.Collection {
	for _, e := range c.colls[db] {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// create adds collection db.name with its own throughput rus (0: none,
// its database's shared throughput).
func (c *catalog) create(db, name string, rus int) *store.Collection {
	if _, ok := c.colls[db]; !ok {
		c.dbs = append(c.dbs, db)
	}
	c.nextID++
	e := &store.Collection{DB: db, Name: name, ID: c.nextID, Throughput: store.Throughput{RUs: rus}}
	c.colls[db] = append(c.colls[db], e)
	return e
}

// replace publishes a new entry for db.name with throughput rus, as a
// catalog change does; the old entry stays valid for requests holding it.
func (c *catalog) replace(db, name string, rus int) *store.Collection {
	for i, e := range c.colls[db] {
		if e.Name == name {
			n := *e
			n.Throughput = store.Throughput{RUs: rus}
			c.colls[db][i] = &n
			return &n
		}
	}
	panic("no collection " + db + "." + name)
}

func (c *catalog) drop(db, name string) {
	list := c.colls[db]
	for i, e := range list {
		if e.Name == name {
			c.colls[db] = append(list[:i:i], list[i+1:]...)
			return
		}
	}
}

// effective is the engine's rule: a collection's own throughput, else its
// database's shared one, else 400 RU/s.
func (c *catalog) effective(e *store.Collection) (ru.Throughput, bool) {
	if !e.Throughput.IsZero() {
		return ru.Manual(e.Throughput.RUs), false
	}
	if t, ok := c.shared[e.DB]; ok {
		return t, true
	}
	return ru.Manual(400), false
}

// testAccounts are accounts over cat on clk.
func testAccounts(cat *catalog, clk *clock, opts Options, waits *[]time.Duration) *Accounts {
	cfg := Config{Store: cat, Now: clk.now, Options: opts, Effective: cat.effective}
	if waits != nil {
		cfg.Wait = clk.wait(waits)
	}
	return New(cfg)
}

// onePartition is the single partition of a new collection d.c with rus
// RU/s of its own.
func onePartition(t *testing.T, a *Accounts, cat *catalog, rus int) *ru.Partition {
	t.Helper()
	u := a.Of(cat.create("d", "c", rus))
	if u == nil || len(u.Parts()) != 1 {
		t.Fatalf("units %+v, want one partition", u)
	}
	return u.Parts()[0]
}
