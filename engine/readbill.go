package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A read's request units: billing.ReadBill charges it batch by batch,
// from the tallies of what it did on each partition, which the read's
// plan keeps (below).

// tallySource is a read that says what it has done so far on each
// partition it runs on (i: the partition's position in the plan's
// routing).
type tallySource interface {
	tally(i int) planStats
}

// readBill is a read's account across its batches, and the tallies it
// is charged from.
type readBill struct {
	billing.ReadBill
	src tallySource
}

// newReadBill starts the account of a read of c routed to spans (none:
// the whole collection), a point read when point is set. Reads of
// nothing (a missing or virtual collection) have no partitions.
func (e *Engine) newReadBill(req *request, c *store.Collection, spans []partitionSpan, point []byte, filter bsoncore.Document, src tallySource) readBill {
	b := readBill{src: src}
	b.Consistency, b.Point = e.readConsistency(req.body), point != nil
	if c == nil {
		return b
	}
	u := e.units.Of(c)
	if u == nil {
		return b
	}
	switch {
	case point != nil:
		b.Parts, b.Key = u.Holding(point), billing.LogicalKey(c, point)
	default:
		b.Parts, b.Key = spanParts(u, spans), spansLogicalKey(spans)
	}
	return b
}

// admitRead admits the next batch of a read.
func (e *Engine) admitRead(ctx context.Context, req *request, b *readBill) error {
	return ruError(e.units.AdmitRead(ctx, &req.units, &b.ReadBill))
}

// chargeRead charges the batch just read, which returned returned
// documents.
func (e *Engine) chargeRead(req *request, b *readBill, returned int) {
	var tally func(i int) billing.Tally
	if src := b.src; src != nil {
		tally = func(i int) billing.Tally {
			t := src.tally(i)
			return billing.Tally{DocsExamined: t.DocsExamined, BytesRead: t.BytesRead}
		}
	}
	e.units.ChargeRead(&req.units, &b.ReadBill, returned, tally)
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
