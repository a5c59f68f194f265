package billing

import (
	"context"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/ru"
)

// LogicalKey is the logical partition of a document key of a sharded
// collection, d/<coll:4><point:8><shard key><_id>: its <point:8><shard
// key> part, as the store's logical-partition counters key it (a
// sub-slice of key). nil for an unsharded collection, which has one.
func LogicalKey(c *store.Collection, key []byte) []byte {
	if c == nil || !c.Sharded() || len(key) < 14 {
		return nil
	}
	n, ok := value.KeyLen(key[14:])
	if !ok {
		return nil
	}
	return key[6 : 14+n]
}

// IndexWork is what tx has written to (or removed from) secondary
// indexes so far: entries and bytes. It is the one place secondary index
// entries enter write charges; writes measure it before and after each
// item.
func IndexWork(tx storage.Txn) (entries, bytes int64) {
	w := tx.IndexWork()
	return w.Entries, w.Bytes
}

// ItemUsage is the usage of writing (or removing) one item of size bytes
// at key: its _id index entry and the secondary ones measured.
func ItemUsage(kind ru.Kind, key []byte, size int, ixEntries, ixBytes int64) ru.Usage {
	return ru.Usage{Kind: kind, BytesWritten: int64(size), IndexEntries: 1 + ixEntries, IndexBytes: int64(len(key)) + ixBytes}
}

// ItemCharge is one item a write stored or removed, priced, to charge
// once its transaction commits.
type ItemCharge struct {
	Part   *ru.Partition // the partition that holds it (nil: none)
	Key    []byte        // its logical partition (nil: none)
	Amount float64
}

// WriteTally is the request-unit side of a write statement: where it
// runs (Route) and what one attempt of its transaction did, the items it
// wrote and the documents its search loaded. A transaction that reruns
// starts the tally over (Reset), so nothing is charged twice; it is
// charged once the transaction commits (ChargeWrite).
type WriteTally struct {
	units  *Units // nil: not charged
	coll   *store.Collection
	point  bool            // the filter pins one item
	search []*ru.Partition // the partitions the filter routes to
	key    []byte          // the logical partition it pins, if one

	one  ItemCharge
	more []ItemCharge
	n    int
	// Examined is the documents the search loaded (not a point lookup).
	Examined int64
	// Read is their bytes, or the bytes of the item a point lookup read.
	Read int64
}

// Route points w at the partitions of u (nil: the statement is not
// charged) for a statement on c whose filter pins one item (point) or
// routes to the partitions search; key is the logical partition it pins,
// if one.
func (w *WriteTally) Route(u *Units, c *store.Collection, point bool, search []*ru.Partition, key []byte) {
	w.units, w.coll, w.point, w.search, w.key = u, c, point, search, key
}

// Reset starts an attempt of the statement's transaction over.
func (w *WriteTally) Reset() {
	w.n, w.more, w.Examined, w.Read = 0, w.more[:0], 0, 0
}

// Add adds an item charge.
func (w *WriteTally) Add(c ItemCharge) {
	if w.n == 0 {
		w.one = c
	} else {
		w.more = append(w.more, c)
	}
	w.n++
}

// Scanned counts one document a search loaded.
func (w *WriteTally) Scanned(doc []byte) {
	w.Examined++
	w.Read += int64(len(doc))
}

// Item prices one written item and adds it.
func (w *WriteTally) Item(kind ru.Kind, key []byte, size int, ixEntries, ixBytes int64) {
	if w.units == nil {
		return
	}
	w.Add(ItemCharge{Part: w.units.At(key), Key: LogicalKey(w.coll, key), Amount: ru.Charge(ItemUsage(kind, key, size, ixEntries, ixBytes))})
}

// AdmitWrite admits a write statement on the partitions it is routed
// to; what it costs is known once it ran.
func (a *Accounts) AdmitWrite(ctx context.Context, m *Meter, w *WriteTally) error {
	switch {
	case w.units == nil:
		return nil
	case len(w.search) == 1:
		return a.Admit(ctx, m, w.search[0], w.key, 0)
	}
	return a.AdmitAll(ctx, m, w.search)
}

// ChargeItems charges the items of a committed write.
func (a *Accounts) ChargeItems(m *Meter, w *WriteTally) {
	if w.n == 0 {
		return
	}
	now := a.now()
	for i := range w.n {
		c := w.one
		if i > 0 {
			c = w.more[i-1]
		}
		if c.Part != nil {
			c.Part.Charge(now, c.Key, c.Amount)
		}
		m.Add(c.Amount)
	}
}

// ChargeWrite charges a committed attempt of a write statement: its
// items, and its search: for a filter that pins one item, the price of a
// point read when nothing was written (a written item's price covers
// reading it); otherwise a query over the partitions it was routed to.
func (a *Accounts) ChargeWrite(m *Meter, w *WriteTally) {
	if w.units == nil {
		return
	}
	a.ChargeItems(m, w)
	switch {
	case w.point && w.n == 0:
		a.ChargeTo(m, w.search[0], w.key, ru.Charge(ru.Usage{Kind: ru.KindPointRead, BytesRead: w.Read}))
	case !w.point:
		price := ru.Charge(ru.Usage{Kind: ru.KindQuery, DocsExamined: w.Examined, BytesRead: w.Read, Partitions: max(len(w.search), 1)})
		if len(w.search) == 1 {
			a.ChargeTo(m, w.search[0], w.key, price)
			return
		}
		a.ChargeSplit(m, w.search, nil, price)
	}
}
