package plan

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"sync/atomic"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// indexCursor is where an index read stands: which plan (a $or has one
// per branch), which range, and the key to resume from.
type indexCursor struct {
	branch int
	rng    int
	resume []byte // forward: first key still to read; reverse: the key after the last still to read
	seen   map[string]struct{}
	done   bool
}

// IndexDone reports whether an index read has read all its ranges.
func (s *Scan) IndexDone() bool { return s.ix.done }

// WalkIndex reads the plan's index ranges from where the cursor stands,
// fetching each entry's document and passing those the filter matches to
// fn until fn returns false. One read transaction per call.
func (s *Scan) WalkIndex(ctx context.Context, fn func(docKey, doc []byte) (bool, error)) error {
	p := s.plan
	cur := &s.ix
	if cur.done {
		return nil
	}
	plans := []*IndexPlan{p.Index}
	if p.Index.Branches != nil {
		plans = p.Index.Branches
	}
	if p.Index.dedupe() && cur.seen == nil {
		cur.seen = map[string]struct{}{}
	}
	routed := RoutedSpans(p.Coll, p.Spans)
	examined := 0
	return s.view(ctx).View(func(tx storage.Txn) error {
		for cur.branch < len(plans) {
			ip := plans[cur.branch]
			rd := tx.IndexReader(p.Coll, ip.Ix, ip.Reverse) // one iterator for all the ranges
			defer rd.Close()
			for cur.rng < len(ip.ranges) {
				i := cur.rng
				if ip.Reverse {
					i = len(ip.ranges) - 1 - cur.rng
				}
				r := ip.ranges[i]
				start, end := r.start, r.end
				if cur.resume != nil {
					if ip.Reverse {
						end = cur.resume
					} else {
						start = cur.resume
					}
				}
				stopped := false
				err := rd.Scan(start, end, func(e store.IndexEntry) (bool, error) {
					if examined++; examined%ContextCheckEvery == 0 {
						if err := ctx.Err(); err != nil {
							return false, err
						}
					}
					if ip.Reverse {
						cur.resume = append(cur.resume[:0], e.Key...)
					} else {
						cur.resume = append(append(cur.resume[:0], e.Key...), 0)
					}
					s.stats.KeysExamined++
					ip.KeysExamined++
					if routed && !s.inSpans(e.DocKey) {
						return true, nil
					}
					s.countPart(e.DocKey, Stats{KeysExamined: 1})
					if cur.seen != nil {
						if _, dup := cur.seen[string(e.DocKey)]; dup {
							return true, nil
						}
						cur.seen[string(e.DocKey)] = struct{}{}
					}
					doc, err := tx.Get(e.DocKey)
					if errors.Is(err, store.ErrNotFound) {
						return true, nil // removed since this read's snapshot: cannot happen in one transaction
					}
					if err != nil {
						return false, err
					}
					s.stats.DocsExamined++
					s.stats.BytesRead += int64(len(doc))
					s.countPart(e.DocKey, Stats{DocsExamined: 1, BytesRead: int64(len(doc))})
					ok, err := s.Match(doc)
					if err != nil {
						return false, err
					}
					if !ok {
						return true, nil
					}
					s.countPart(e.DocKey, Stats{Returned: 1}) // matched (skip and limit are the read's)
					more, err := fn(e.DocKey, doc)
					if !more {
						stopped = true
					}
					return more, err
				})
				if err != nil || stopped {
					return err
				}
				cur.rng++
				cur.resume = nil
			}
			cur.branch++
			cur.rng = 0
		}
		cur.done = true
		return nil
	})
}

// inSpans reports whether a document key's point is in a partition the
// plan was routed to.
func (s *Scan) inSpans(docKey []byte) bool {
	if len(docKey) < 14 {
		return false
	}
	i := s.spanIndex(docKey)
	return i < len(s.plan.Spans) && s.plan.Spans[i].Contains(docKey)
}

// spanIndex is the position in the plan's spans of the partition a
// document key falls in (len(spans) when past the last).
func (s *Scan) spanIndex(docKey []byte) int {
	return sort.Search(len(s.plan.Spans), func(i int) bool {
		end := s.plan.Spans[i].End
		return end == nil || bytes.Compare(end, docKey) > 0
	})
}

// countPart adds d to the statistics of the partition the document at
// docKey is in, when the index read runs over several partitions: for
// explain's per-partition figures and to split the read's charge by what
// each partition did (one partition's read counts in s.stats alone).
func (s *Scan) countPart(docKey []byte, d Stats) {
	if len(s.plan.Spans) < 2 {
		return
	}
	i := s.spanIndex(docKey)
	if i >= len(s.plan.Spans) {
		return
	}
	if s.perPart == nil {
		s.perPart = make(map[string]Stats, len(s.plan.Spans))
	}
	id := s.plan.Spans[i].ID
	st := s.perPart[id]
	st.KeysExamined += d.KeysExamined
	st.DocsExamined += d.DocsExamined
	st.BytesRead += d.BytesRead
	st.Returned += d.Returned
	s.perPart[id] = st
}

// scanIndex is scan for a plan that reads an index: up to max documents
// (maxBytes of them), skipping and limiting; keep unset only counts.
func (s *Scan) scanIndex(ctx context.Context, max, maxBytes int, keep bool) ([][]byte, bool, error) {
	p := s.plan
	var docs [][]byte
	size := 0
	if s.pending != nil {
		docs, size, s.pending = append(docs, s.pending), len(s.pending), nil
	}
	err := s.WalkIndex(ctx, func(key, doc []byte) (bool, error) {
		if s.skip > 0 {
			s.skip--
			return true, nil
		}
		s.sent++
		s.stats.Returned++
		if keep {
			out, err := s.shape(key, doc)
			if err != nil {
				return false, err
			}
			if len(docs) > 0 && size+len(out) > maxBytes {
				s.pending = out // the next batch starts with it
				return false, nil
			}
			docs = append(docs, out)
			size += len(out)
		}
		full := (max > 0 && len(docs) >= max) || (p.Limit > 0 && s.sent >= p.Limit)
		return !full, nil
	})
	if err != nil {
		return nil, false, err
	}
	done := s.ix.done && s.pending == nil
	if p.Limit > 0 && s.sent >= p.Limit && s.pending == nil {
		done = true
	}
	s.done = done
	return docs, done, nil
}

// collectIndex returns every match of an index plan, unshaped: what a
// blocking sort sorts.
func (s *Scan) collectIndex(ctx context.Context) ([][]byte, error) {
	var out [][]byte
	for !s.ix.done {
		err := s.WalkIndex(ctx, func(key, doc []byte) (bool, error) {
			out = append(out, s.tagRecordID(key, doc)) // a copy already: Txn.Get copies
			return len(out)%4096 != 0, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// IndexIterator streams the documents one partition's index entries
// point to, for aggregation's partition sources: the documents of span
// that the plan's filter matches.
type IndexIterator struct {
	src      *Scan
	buf      [][]byte
	pos      int
	examined *atomic.Int64
	// Docs and Bytes, when set, count the documents and bytes read, for
	// request units.
	Docs, Bytes *atomic.Int64
}

// iteratorBatch is how many documents an IndexIterator reads per read
// transaction.
const iteratorBatch = 4096

// IndexIterator reads span through ip (a plan of its own: it is
// narrowed to span), adding the documents it examines to examined (may
// be nil).
func (pl *Planner) IndexIterator(c *store.Collection, filter *query.Filter, ip *IndexPlan, span Span, routed bool, examined *atomic.Int64) *IndexIterator {
	p := &Read{NS: c.Namespace(), Coll: c, Filter: filter, Index: ip}
	if routed {
		p.Spans = []Span{span}
		if ip.Branches == nil {
			ip.NarrowToSpans(p.Spans)
		}
	}
	return &IndexIterator{src: pl.Scan(p), examined: examined}
}

// Next is the next matching document (nil at the end).
func (it *IndexIterator) Next(ctx context.Context) (bsoncore.Document, error) {
	for it.pos >= len(it.buf) {
		if it.src.ix.done {
			return nil, nil
		}
		it.buf, it.pos = it.buf[:0], 0
		before, bytesBefore := it.src.stats.DocsExamined, it.src.stats.BytesRead
		err := it.src.WalkIndex(ctx, func(_, doc []byte) (bool, error) {
			it.buf = append(it.buf, doc) // a copy: Txn.Get copies
			return len(it.buf) < iteratorBatch, nil
		})
		if it.examined != nil {
			it.examined.Add(it.src.stats.DocsExamined - before)
		}
		if it.Docs != nil {
			it.Docs.Add(it.src.stats.DocsExamined - before)
		}
		if it.Bytes != nil {
			it.Bytes.Add(it.src.stats.BytesRead - bytesBefore)
		}
		if err != nil {
			return nil, err
		}
	}
	d := it.buf[it.pos]
	it.buf[it.pos] = nil
	it.pos++
	return d, nil
}

// Close releases the iterator's buffer.
func (it *IndexIterator) Close() { it.buf = nil }
