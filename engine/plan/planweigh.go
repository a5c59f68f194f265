package plan

import (
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
)

// Weighing a shard-key read against a secondary index. A read routed by
// the shard key reads whole logical partitions; a secondary index that
// also serves the filter may read fewer documents, or more. An index plan
// of whole keys is narrowed to the logical partitions' entries
// (narrowToLogicalPartitions), so it never reads more than they hold and
// is kept. Any other index plan is kept only when its entries in the
// routed partitions are fewer than the logical partitions' documents: it
// counts them, stopping at that number, so weighing costs at most what
// the cheaper plan reads.

// maxWeighedPartitions caps the logical partitions whose exact counters
// the weighing reads; the rest are estimated from their average.
const maxWeighedPartitions = 64

// WeighShardKeyScan drops p's index plan when reading its logical
// partitions is cheaper.
func (pl *Planner) WeighShardKeyScan(p *Read) {
	if p.Index == nil || !p.ShardKeyScan || p.Hinted != nil || p.Coll == nil {
		return
	}
	if p.Index.Branches == nil && p.Index.points && !p.Index.Ix.Unique && !p.Index.Ix.Wildcard {
		return // narrowed to the logical partitions' own entries
	}
	if !pl.indexCheaper(p.Coll, p.Index, p.Spans) {
		p.Index = nil
	}
}

// indexCheaper reports whether ip reads fewer documents of spans than
// spans' logical partitions hold.
func (pl *Planner) indexCheaper(c *store.Collection, ip *IndexPlan, spans []Span) bool {
	var lps []store.KeyRange
	total := 0
	for _, sp := range spans {
		total += len(sp.LPs)
		for _, r := range sp.LPs {
			if len(lps) < maxWeighedPartitions {
				lps = append(lps, r)
			}
		}
	}
	docs, err := pl.Storage.LogicalPartitionDocs(c, lps)
	if err != nil || len(lps) == 0 {
		return true
	}
	if total > len(lps) {
		docs = docs * int64(total) / int64(len(lps))
	}
	if docs == 0 {
		return false
	}
	// Count the index's entries in the routed logical partitions, and
	// its keys read, up to what the logical partitions hold: past that
	// the index cannot win.
	plans := []*IndexPlan{ip}
	if ip.Branches != nil {
		plans = ip.Branches
	}
	var fetched, keys int64
	limitKeys := 4 * docs
	src := &Scan{plan: &Read{Coll: c, Spans: spans}}
	err = pl.Storage.View(func(tx storage.Txn) error {
		for _, bp := range plans {
			r := tx.IndexReader(c, bp.Ix, false)
			for _, rg := range bp.ranges {
				stop := false
				err := r.Scan(rg.start, rg.end, func(en store.IndexEntry) (bool, error) {
					keys++
					if src.inSpans(en.DocKey) {
						fetched++
					}
					stop = fetched >= docs || keys >= limitKeys
					return !stop, nil
				})
				if err != nil || stop {
					r.Close()
					return err
				}
			}
			r.Close()
		}
		return nil
	})
	return err == nil && fetched < docs && keys < limitKeys
}
