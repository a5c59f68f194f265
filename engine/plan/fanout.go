package plan

import (
	"context"
	"runtime"
	"sync"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/storage"
)

// Fan-out reads: a plan over several physical partitions reads them in
// parallel, at most GOMAXPROCS at a time, each in its own read
// transaction. Results come out partition by partition, in hash order
// (MongoDB promises no order without a sort); each partition's matches
// wait in a bounded buffer of the cursor until their turn, so no scan
// work is thrown away and no goroutine outlives a batch.

// fanOut is the state of a fan-out read across batches.
type fanOut struct {
	parts []*partScan
}

// partScan is one partition's progress.
type partScan struct {
	span  Span
	next  []byte // resume key; nil: the start of the span
	done  bool
	buf   [][]byte // matches (shaped) not yet handed out
	bytes int
	stats Stats
}

// Per-partition buffer bounds of one refill.
const fanOutBufferBytes = 4 << 20

// runParallel runs fn(0..n-1) on at most GOMAXPROCS goroutines and
// returns the first error.
func runParallel(n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= n || first != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := callRecovering(fn, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// callRecovering runs fn(i) on a worker goroutine, turning a panic into
// the request's error (agg.PanicError): a filter that panics on one
// partition fails its request, not the process.
func callRecovering(fn func(i int) error, i int) (err error) {
	defer func() {
		if p := agg.Recovered(recover()); p != nil {
			err = p
		}
	}()
	return fn(i)
}

// fill reads part onward until it holds wantDocs matches (0: no limit) or
// wantBytes of them (0: no limit), or the partition ends. keep unset only
// counts.
func (s *Scan) fill(ctx context.Context, part *partScan, wantDocs, wantBytes int, keep bool) error {
	p := s.plan
	stopped := false
	examined := 0
	err := s.view(ctx).View(func(tx storage.Txn) error {
		return tx.ScanRanges(p.Coll, part.span.RangesFrom(part.next), func(key, doc []byte) (bool, error) {
			if examined++; examined%ContextCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			if (wantDocs > 0 && len(part.buf) >= wantDocs) || (wantBytes > 0 && part.bytes >= wantBytes) {
				stopped = true
				part.next = append(part.next[:0], key...)
				return false, nil
			}
			part.stats.DocsExamined++
			part.stats.BytesRead += int64(len(doc))
			if p.UseIDIndex || p.ShardKeyScan {
				part.stats.KeysExamined++
			}
			ok, err := s.Match(doc)
			if err != nil {
				return false, err
			}
			if ok {
				var out []byte
				if keep {
					if out, err = s.shape(key, doc); err != nil {
						return false, err
					}
				}
				part.buf = append(part.buf, out)
				part.bytes += len(out)
			}
			part.next = append(append(part.next[:0], key...), 0) // successor of key
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	part.done = !stopped
	return nil
}

// scanFanOut is scan over several partitions.
func (s *Scan) scanFanOut(ctx context.Context, max, maxBytes int, keep bool) ([][]byte, bool, error) {
	p := s.plan
	if s.fan == nil {
		s.fan = &fanOut{parts: make([]*partScan, len(p.Spans))}
		for i, sp := range p.Spans {
			s.fan.parts[i] = &partScan{span: sp}
		}
	}
	if !keep {
		return nil, true, s.countFanOut(ctx)
	}
	var docs [][]byte
	bytes := 0
	for {
		// Hand out what the buffers hold, partition by partition.
		for _, part := range s.fan.parts {
			for len(part.buf) > 0 {
				if (max > 0 && len(docs) >= max) || (p.Limit > 0 && s.sent >= p.Limit) {
					return docs, s.finishFanOut(), nil
				}
				d := part.buf[0]
				if len(docs) > 0 && bytes+len(d) > maxBytes {
					return docs, false, nil
				}
				part.buf[0] = nil
				part.buf = part.buf[1:]
				part.bytes -= len(d)
				if s.skip > 0 {
					s.skip--
					continue
				}
				docs = append(docs, d)
				bytes += len(d)
				s.sent++
				s.stats.Returned++
				part.stats.Returned++
			}
			if !part.done {
				break // keep partition order: refill this one first
			}
		}
		if (max > 0 && len(docs) >= max) || (p.Limit > 0 && s.sent >= p.Limit) {
			return docs, s.finishFanOut(), nil
		}
		// Refill every unfinished partition whose buffer is empty.
		var pending []*partScan
		for _, part := range s.fan.parts {
			if !part.done && len(part.buf) == 0 {
				pending = append(pending, part)
			}
		}
		if len(pending) == 0 {
			return docs, s.finishFanOut(), nil
		}
		want := int(s.skip)
		if max > 0 {
			want += max - len(docs)
		} else {
			want = 0
		}
		if p.Limit > 0 {
			if rest := int(p.Limit - s.sent + s.skip); want == 0 || rest < want {
				want = rest
			}
		}
		err := runParallel(len(pending), func(i int) error { return s.fill(ctx, pending[i], want, fanOutBufferBytes, true) })
		s.sumStats()
		if err != nil {
			return nil, false, err
		}
	}
}

// finishFanOut reports whether the fan-out is over, and ends it when the
// limit is reached.
func (s *Scan) finishFanOut() bool {
	p := s.plan
	if p.Limit > 0 && s.sent >= p.Limit {
		s.done = true
		return true
	}
	for _, part := range s.fan.parts {
		if !part.done || len(part.buf) > 0 {
			return false
		}
	}
	s.done = true
	return true
}

// sumStats adds up the partitions' statistics into the source's.
func (s *Scan) sumStats() {
	var st Stats
	for _, part := range s.fan.parts {
		st.DocsExamined += part.stats.DocsExamined
		st.BytesRead += part.stats.BytesRead
		st.KeysExamined += part.stats.KeysExamined
	}
	s.stats.DocsExamined, s.stats.KeysExamined, s.stats.BytesRead = st.DocsExamined, st.KeysExamined, st.BytesRead
}

// countFanOut counts the matches of every partition in parallel, then
// applies skip and limit.
func (s *Scan) countFanOut(ctx context.Context) error {
	p := s.plan
	counts := make([]int64, len(s.fan.parts))
	err := runParallel(len(s.fan.parts), func(i int) error {
		part := s.fan.parts[i]
		for !part.done {
			if err := s.fill(ctx, part, 4096, 0, false); err != nil {
				return err
			}
			counts[i] += int64(len(part.buf))
			part.buf, part.bytes = part.buf[:0], 0
		}
		return nil
	})
	s.sumStats()
	if err != nil {
		return err
	}
	var total int64
	for _, n := range counts {
		total += n
	}
	n := max(total-s.skip, 0)
	if p.Limit > 0 {
		n = min(n, p.Limit-s.sent)
	}
	s.skip = 0
	s.sent += n
	s.stats.Returned += n
	s.done = true
	for i, part := range s.fan.parts {
		part.stats.Returned = counts[i]
	}
	return nil
}

// tagOnly are the record-id fields of the raw read under a blocking
// sort: its documents carry their record id in $recordId (tagRecordID)
// until they are shaped.
func tagOnly(p *Read) []string {
	if len(p.RecordIDFields) == 0 {
		return nil
	}
	return []string{recordIDTag}
}

// collectAll returns every document the plan's filter matches (unshaped
// copies), reading the partitions in parallel: what a blocking sort
// sorts.
func (s *Scan) collectAll(ctx context.Context) ([][]byte, error) {
	p := s.plan
	switch {
	case p.Virtual != nil:
		var out [][]byte
		for _, doc := range p.Virtual {
			s.stats.DocsExamined++
			s.stats.BytesRead += int64(len(doc))
			ok, err := s.Match(doc)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, doc)
			}
		}
		return out, nil
	case p.Coll == nil:
		return nil, nil
	case p.Index != nil:
		raw := &Scan{pl: s.pl, plan: &Read{Coll: p.Coll, Filter: p.Filter, Spans: p.Spans, Index: p.Index, RecordIDFields: tagOnly(p)}}
		out, err := raw.collectIndex(ctx)
		s.stats.DocsExamined += raw.stats.DocsExamined
		s.stats.KeysExamined += raw.stats.KeysExamined
		s.stats.BytesRead += raw.stats.BytesRead
		s.perPart = raw.perPart
		return out, err
	}
	spans := p.Spans
	if len(spans) == 0 {
		spans = PartitionsOf(p.Coll)
	}
	parts := make([]*partScan, len(spans))
	for i, sp := range spans {
		parts[i] = &partScan{span: sp}
	}
	raw := &Scan{pl: s.pl, plan: &Read{Coll: p.Coll, Filter: p.Filter, IDBounds: p.IDBounds,
		UseIDIndex: p.UseIDIndex, Proj: nil, RecordIDFields: tagOnly(p)}}
	err := runParallel(len(parts), func(i int) error {
		// keep: shaping with no projection copies the document
		return raw.fill(ctx, parts[i], 0, 0, true)
	})
	var out [][]byte
	s.perPart = map[string]Stats{}
	for _, part := range parts {
		s.stats.DocsExamined += part.stats.DocsExamined
		s.stats.BytesRead += part.stats.BytesRead
		s.stats.KeysExamined += part.stats.KeysExamined
		st := part.stats
		st.Returned = int64(len(part.buf)) // what the partition passed on to the merge
		s.perPart[part.span.ID] = st
		out = append(out, part.buf...)
	}
	return out, err
}

// PartitionStats are the statistics of each partition a fan-out read,
// by partitionKeyRangeId (nil when the plan read one partition).
func (s *Scan) PartitionStats() map[string]Stats {
	if s.perPart != nil {
		return s.perPart
	}
	if s.fan == nil {
		return nil
	}
	out := make(map[string]Stats, len(s.fan.parts))
	for _, part := range s.fan.parts {
		out[part.span.ID] = part.stats
	}
	return out
}
