package billing

import (
	"math"
	"testing"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/shard"
)

func rateOf(t *testing.T, a *Accounts, c *store.Collection, clk *clock) float64 {
	t.Helper()
	u := a.Of(c)
	if u == nil || len(u.Parts()) != 1 {
		t.Fatalf("%s: units %+v, want one partition", c.Namespace(), u)
	}
	return u.Parts()[0].Stats(clk.now()).Rate
}

// A database's shared throughput is divided among the partitions of all
// its collections without their own, and re-divided when one goes.
func TestSharedThroughputRedivides(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	cat.shared["s"] = ru.Manual(1200)
	a := testAccounts(cat, clk, Options{}, nil)
	x, y := cat.create("s", "x", 0), cat.create("s", "y", 0)
	z := cat.create("s", "z", 0)
	for _, c := range []*store.Collection{x, y, z} {
		if got := rateOf(t, a, c, clk); got != 400 {
			t.Fatalf("%s: %v RU/s of 1200 shared by 3, want 400", c.Name, got)
		}
	}
	cat.drop("s", "z")
	a.CatalogChanged()
	if got := rateOf(t, a, x, clk); got != 600 {
		t.Fatalf("after a drop: %v RU/s, want 1200 / 2", got)
	}
	// A collection given its own throughput leaves the shared pool, with
	// its partition and that partition's statistics.
	p := a.Of(y).Parts()[0]
	a.ChargeTo(nil, p, nil, 42)
	y2 := cat.replace("s", "y", 500)
	u := a.Of(y2)
	if u.Parts()[0] != p || p.Stats(clk.now()).Rate != 500 || p.Stats(clk.now()).RU != 42 {
		t.Fatalf("moved to its own throughput: %+v, want the same partition at 500 RU/s with its 42 RU", p.Stats(clk.now()))
	}
	if got := rateOf(t, a, x, clk); got != 1200 {
		t.Fatalf("alone in the shared pool: %v RU/s, want 1200", got)
	}
}

// A throughput change re-divides at once; a request still holding the
// older entry sees the partitions as they are now.
func TestThroughputChange(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	a := testAccounts(cat, clk, Options{}, nil)
	old := cat.create("d", "c", 400)
	p := a.Of(old).Parts()[0]
	next := cat.replace("d", "c", 1000)
	if got := rateOf(t, a, next, clk); got != 1000 {
		t.Fatalf("after the change: %v RU/s, want 1000", got)
	}
	if a.Of(old).Parts()[0] != p || a.Of(next).Parts()[0] != p {
		t.Fatal("the change replaced the partition: its statistics would be lost")
	}
	if got := len(a.All()); got != 1 {
		t.Fatalf("All: %d collections, want 1", got)
	}
}

// A split detaches the parent's partition and divides the throughput
// among the children; the parent's statistics stay in the collection's.
func TestSplitRedivides(t *testing.T) {
	st, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := storage.Local(st)
	if _, err := s.CreateCollection("d", "c", nil); err != nil {
		t.Fatal(err)
	}
	c, err := s.ShardCollection("d", "c", shard.Spec{Path: "k"}, 1, store.Throughput{RUs: 10000})
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	own := func(c *store.Collection) (ru.Throughput, bool) { return ru.Manual(c.Throughput.RUs), false }
	a := New(Config{Store: s, Now: clk.now, Effective: own})
	parent := a.Of(c).Parts()[0]
	a.ChargeTo(nil, parent, nil, 100)

	next, err := s.SetThroughput(c, store.Throughput{RUs: 30000}, 3)
	if err != nil {
		t.Fatal(err)
	}
	u := a.Of(next)
	if len(u.Parts()) != 3 {
		t.Fatalf("%d partitions after the split, want 3", len(u.Parts()))
	}
	for i, p := range u.Parts() {
		if p == parent {
			t.Fatalf("partition %d is the parent: it should have been detached", i)
		}
		if got := p.Stats(clk.now()).Rate; got != 10000 {
			t.Fatalf("child %d: %v RU/s, want 30000 / 3", i, got)
		}
	}
	if u.Partition(c.Map().At(0).ID) != parent {
		t.Fatal("the parent is no longer among the collection's partitions")
	}
	var sum Sum
	sum.AddPartitions(u, clk.now())
	if sum.Total != 100 {
		t.Fatalf("collection total %v RU, want the parent's 100", sum.Total)
	}
	// A request holding the entry from before the split charges the
	// partition that owns the key now.
	key := store.DocKey(c.ID, math.MaxUint64, nil, nil) // the top of the hash space
	if got := a.Of(c).At(key); got != u.Parts()[2] {
		t.Fatal("a key at the top of the hash space is charged to the wrong partition")
	}
}
