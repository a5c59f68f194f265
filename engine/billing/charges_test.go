package billing

import (
	"context"
	"testing"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
)

// A point read pays a small item at admission and the rest of its price
// once it knows what it read.
func TestChargePointRead(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	a := testAccounts(cat, clk, Options{RateLimiting: true}, nil)
	p := onePartition(t, a, cat, 400)
	b := ReadBill{Parts: []*ru.Partition{p}, Point: true}
	var m Meter
	if err := a.AdmitRead(context.Background(), &m, &b); err != nil || m.Charge() != 1 {
		t.Fatalf("admission: %v, charge %v; want the 1 RU of a small item paid", err, m.Charge())
	}
	a.ChargeRead(&m, &b, 1, func(int) Tally { return Tally{DocsExamined: 1, BytesRead: 12 * 1024} })
	want := ru.Charge(ru.Usage{Kind: ru.KindPointRead, BytesRead: 12 * 1024})
	if m.Charge() != want || p.Stats(clk.now()).RU != want {
		t.Fatalf("charged %v (partition %v), want %v in all", m.Charge(), p.Stats(clk.now()).RU, want)
	}
}

// A fan-out's batch is one query price split by the documents each
// partition examined; a getMore counts only the partitions it read from.
func TestChargeFanOutRead(t *testing.T) {
	clk := newClock()
	a := testAccounts(newCatalog(), clk, Options{}, nil)
	parts := ru.NewPool(ru.Manual(20000), ru.Options{}).Change(clk.now(), nil, nil, 2)
	b := ReadBill{Parts: parts}
	tallies := []Tally{{DocsExamined: 0, BytesRead: 0}, {DocsExamined: 100, BytesRead: 100 * 1024}}
	tally := func(i int) Tally { return tallies[i] }
	var m Meter
	if err := a.AdmitRead(context.Background(), &m, &b); err != nil {
		t.Fatal(err)
	}
	a.ChargeRead(&m, &b, 10, tally)
	first := ru.Charge(ru.Usage{Kind: ru.KindQuery, DocsExamined: 100, BytesRead: 100 * 1024, DocsReturned: 10, Partitions: 2})
	if m.Charge() != first {
		t.Fatalf("first batch %v, want %v", m.Charge(), first)
	}
	p0, p1 := parts[0].Stats(clk.now()).RU, parts[1].Stats(clk.now()).RU
	if w := ru.Round(first * 1 / 102); !near(p0, w) || !near(p0+p1, first) {
		t.Fatalf("split %v + %v, want %v by weights 1 and 101", p0, p1, w)
	}
	// The getMore reads 50 more documents on the second partition only.
	tallies[1] = Tally{DocsExamined: 150, BytesRead: 150 * 1024}
	a.ChargeRead(&m, &b, 50, tally)
	more := ru.Charge(ru.Usage{Kind: ru.KindQuery, DocsExamined: 50, BytesRead: 50 * 1024, DocsReturned: 50, Partitions: 1})
	if got := ru.Round(m.Total() - first); !near(got, more) {
		t.Fatalf("getMore %v, want %v", got, more)
	}
	if got := parts[0].Stats(clk.now()).RU; got != p0 {
		t.Fatalf("the idle partition was charged for the getMore: %v, want %v", got, p0)
	}
}

// A write's items are charged once its transaction commits, and a rerun
// of the transaction starts them over.
func TestChargeWrite(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	a := testAccounts(cat, clk, Options{}, nil)
	c := cat.create("d", "c", 400)
	u := a.Of(c)
	key := store.DocKey(c.ID, 0, nil, []byte{1})
	var w WriteTally
	w.Route(u, c, true, u.Holding(key), nil)
	var m Meter
	if err := a.AdmitWrite(context.Background(), &m, &w); err != nil {
		t.Fatal(err)
	}
	w.Item(ru.KindReplace, key, 1024, 0, 0)
	w.Reset() // the transaction reran
	w.Read = 1024
	w.Item(ru.KindReplace, key, 1024, 0, 0)
	a.ChargeWrite(&m, &w)
	want := ru.Charge(ItemUsage(ru.KindReplace, key, 1024, 0, 0))
	if m.Charge() != want || u.Parts()[0].Stats(clk.now()).RU != want {
		t.Fatalf("charged %v, want one replace, %v", m.Charge(), want)
	}

	// A filter that matched nothing pays a point read; a search a query.
	var none, search WriteTally
	none.Route(u, c, true, u.Holding(key), nil)
	none.Read = 2048
	var m2 Meter
	a.ChargeWrite(&m2, &none)
	if want := ru.Charge(ru.Usage{Kind: ru.KindPointRead, BytesRead: 2048}); m2.Charge() != want {
		t.Fatalf("point filter, nothing written: %v, want %v", m2.Charge(), want)
	}
	search.Route(u, c, false, u.Parts(), nil)
	search.Scanned(make([]byte, 512))
	search.Scanned(make([]byte, 512))
	var m3 Meter
	a.ChargeWrite(&m3, &search)
	if want := ru.Charge(ru.Usage{Kind: ru.KindQuery, DocsExamined: 2, BytesRead: 1024, Partitions: 1}); m3.Charge() != want {
		t.Fatalf("search, nothing written: %v, want %v", m3.Charge(), want)
	}
	// Not routed (accounting bypassed, no collection): nothing charged.
	var off WriteTally
	off.Route(nil, c, true, nil, nil)
	off.Item(ru.KindInsert, key, 10, 0, 0)
	var m4 Meter
	a.ChargeWrite(&m4, &off)
	if !m4.Idle() {
		t.Fatalf("an uncharged write charged %v", m4.Charge())
	}
}
