package billing

import (
	"context"

	"github.com/parsecdb/parsec/ru"
)

// Charging reads (find, count, distinct, aggregate and their getMores):
// a read is admitted on the partitions it runs on, runs a batch, and pays
// for what the batch did since the previous one, as one ru.Usage split
// across the partitions by the documents each examined.

// Tally is what a read has done so far on one partition: running
// totals, which the command layer's plans keep.
type Tally struct {
	DocsExamined int64
	BytesRead    int64
}

// ReadBill is a read's account across its batches.
type ReadBill struct {
	// Parts are the partitions it runs on, aligned with its tallies
	// (none: no collection).
	Parts []*ru.Partition
	// Key is the logical partition when it targets one.
	Key []byte
	// Point: a point read, one item by shard key and _id.
	Point       bool
	Consistency ru.Consistency

	batch  int     // batches charged
	paid   float64 // paid at admission, not yet set against a batch
	billed []Tally // per partition: what earlier batches paid for
	first  Tally   // billed[0] without allocating for one partition
}

// AdmitRead admits the next batch of a read: a point read pays for a
// small item in advance, anything else only needs its partitions'
// balances not to be negative.
func (a *Accounts) AdmitRead(ctx context.Context, m *Meter, b *ReadBill) error {
	if a.opts.Bypass {
		return nil
	}
	if b.Point && len(b.Parts) == 1 {
		b.paid = ru.Charge(ru.Usage{Kind: ru.KindPointRead, Consistency: b.Consistency})
		return a.Admit(ctx, m, b.Parts[0], b.Key, b.paid)
	}
	if len(b.Parts) == 1 {
		return a.Admit(ctx, m, b.Parts[0], b.Key, 0)
	}
	return a.AdmitAll(ctx, m, b.Parts)
}

// ChargeRead charges the batch just read, which returned returned
// documents. tally(i) is what the read has done so far on Parts[i]; nil
// when the read keeps no tally (it is charged as a query of one
// partition that examined nothing).
func (a *Accounts) ChargeRead(m *Meter, b *ReadBill, returned int, tally func(i int) Tally) {
	if a.opts.Bypass {
		return
	}
	paid := b.paid
	b.paid = 0
	batch := b.batch
	b.batch++
	if b.Point {
		var read int64
		if tally != nil {
			read = tally(0).BytesRead
		}
		price := ru.Charge(ru.Usage{Kind: ru.KindPointRead, BytesRead: read, Consistency: b.Consistency})
		var p *ru.Partition
		if len(b.Parts) == 1 {
			p = b.Parts[0]
		}
		a.ChargeTo(m, p, b.Key, price-paid)
		return
	}
	u := ru.Usage{Kind: ru.KindQuery, DocsReturned: int64(returned), Consistency: b.Consistency}
	n := len(b.Parts)
	if tally == nil || n == 0 {
		u.Partitions = 1
		a.ChargeSplit(m, nil, nil, ru.Charge(u)-paid)
		return
	}
	if n > 1 && b.billed == nil {
		b.billed = make([]Tally, n)
	}
	var weights []float64
	if n > 1 {
		weights = make([]float64, n)
	}
	touched := 0
	for i := range n {
		now := tally(i)
		prev := &b.first
		if n > 1 {
			prev = &b.billed[i]
		}
		ex, by := now.DocsExamined-prev.DocsExamined, now.BytesRead-prev.BytesRead
		*prev = now
		u.DocsExamined += ex
		u.BytesRead += by
		// The first batch runs on every partition of the plan; a getMore
		// only on those it read from.
		if batch == 0 || ex > 0 {
			touched++
			if weights != nil {
				weights[i] = 1 + float64(ex)
			}
		}
	}
	u.Partitions = max(touched, 1)
	price := ru.Charge(u) - paid
	if n == 1 {
		a.ChargeTo(m, b.Parts[0], b.Key, price)
		return
	}
	a.ChargeSplit(m, b.Parts, weights, price)
}
