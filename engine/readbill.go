package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Charging reads (find, count, distinct, aggregate and their getMores):
// a read is admitted on the partitions it runs on, runs a batch, and pays
// for what the batch did since the previous one, as one ru.Usage split
// across the partitions by the documents each examined.

// tallySource is a read that says what it has done so far on each
// partition it runs on (i: the partition's position in the plan's
// routing).
type tallySource interface {
	tally(i int) planStats
}

// readBill is a read's account across its batches.
type readBill struct {
	parts  []*ru.Partition // the partitions it runs on, aligned with the source's tallies (none: no collection)
	key    []byte          // the logical partition when it targets one
	point  bool            // a point read: one item by shard key and _id
	cons   ru.Consistency  //
	src    tallySource     //
	batch  int             // batches charged
	paid   float64         // paid at admission, not yet set against a batch
	billed []planStats     // per partition: what earlier batches paid for
	first  planStats       // billed[0] without allocating for one partition
}

// newReadBill starts the account of a read of c routed to spans (none:
// the whole collection), a point read when point is set. Reads of
// nothing (a missing or virtual collection) have no partitions.
func (e *Engine) newReadBill(req *request, c *store.Collection, spans []partitionSpan, point []byte, filter bsoncore.Document, src tallySource) readBill {
	b := readBill{src: src, cons: strongRead(req.body), point: point != nil}
	if c == nil {
		return b
	}
	u := e.units.of(c)
	if u == nil {
		return b
	}
	switch {
	case point != nil:
		i := u.index(point)
		b.parts, b.key = u.parts[i:i+1], logicalKey(c, point)
	default:
		b.parts, b.key = u.spanParts(spans), spansLogicalKey(spans)
	}
	return b
}

// admitRead admits the next batch of a read: a point read pays for a
// small item in advance, anything else only needs its partitions'
// balances not to be negative.
func (e *Engine) admitRead(ctx context.Context, req *request, b *readBill) error {
	if e.ruOpts.Bypass {
		return nil
	}
	if b.point && len(b.parts) == 1 {
		b.paid = ru.Charge(ru.Usage{Kind: ru.KindPointRead, Consistency: b.cons})
		return e.admit(ctx, &req.units, b.parts[0], b.key, b.paid)
	}
	if len(b.parts) == 1 {
		return e.admit(ctx, &req.units, b.parts[0], b.key, 0)
	}
	return e.admitAll(ctx, &req.units, b.parts)
}

// chargeRead charges the batch just read, which returned returned
// documents.
func (e *Engine) chargeRead(req *request, b *readBill, returned int) {
	if e.ruOpts.Bypass {
		return
	}
	paid := b.paid
	b.paid = 0
	batch := b.batch
	b.batch++
	if b.point {
		var read int64
		if b.src != nil {
			read = b.src.tally(0).BytesRead
		}
		price := ru.Charge(ru.Usage{Kind: ru.KindPointRead, BytesRead: read, Consistency: b.cons})
		var p *ru.Partition
		if len(b.parts) == 1 {
			p = b.parts[0]
		}
		e.chargeTo(&req.units, p, b.key, price-paid)
		return
	}
	u := ru.Usage{Kind: ru.KindQuery, DocsReturned: int64(returned), Consistency: b.cons}
	n := len(b.parts)
	if b.src == nil || n == 0 {
		u.Partitions = 1
		e.chargeSplit(&req.units, nil, nil, ru.Charge(u)-paid)
		return
	}
	if n > 1 && b.billed == nil {
		b.billed = make([]planStats, n)
	}
	var weights []float64
	if n > 1 {
		weights = make([]float64, n)
	}
	touched := 0
	for i := range n {
		now := b.src.tally(i)
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
		e.chargeTo(&req.units, b.parts[0], b.key, price)
		return
	}
	e.chargeSplit(&req.units, b.parts, weights, price)
}

// statsTally is a read that runs to completion in one call (count,
// distinct): its totals, all on its first partition.
type statsTally planStats

func (s *statsTally) tally(i int) planStats {
	if i > 0 {
		return planStats{}
	}
	return planStats(*s)
}

// tallyOf is src's tally, if it keeps one.
func tallyOf(src batchSource) tallySource {
	t, _ := src.(tallySource)
	return t
}
