package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// partitionReader streams one partition's documents in key order, a
// batch per read transaction, resuming after the last key it read. With
// readAhead a goroutine reads the next batch while the pipeline works on
// the current one (two batch buffers circulate), so that one partition
// keeps two cores busy; when several partitions run in parallel they
// read in their own workers instead. With point set it reads that one
// key.
type partitionReader struct {
	store     reader
	coll      *store.Collection
	span      partitionSpan
	point     []byte
	readAhead bool
	next      []byte // resume key; owned by the reading goroutine

	cur      *readBatch
	pos      int
	lastSeen bool // cur is the last batch
	started  bool
	ready    chan *readBatch
	free     chan *readBatch
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	examined *atomic.Int64 // documents read, for explain (may be nil)
	counter  *readCounter  // documents and bytes read, for request units (may be nil)
}

// readBatch is one batch of documents, copied into an arena that is
// reused once the pipeline is done with the batch.
type readBatch struct {
	arena []byte
	offs  []int    // where each document starts in arena
	docs  [][]byte // slices of arena
	last  bool     // no batch follows
	err   error
}

// Batch limits of a partition read: large enough that opening a read
// transaction and seeking its iterator, once per batch, costs little
// next to reading the batch.
const (
	readBatchDocs  = 4096
	readBatchBytes = 4 << 20
)

func (e *Engine) newPartitionReader(view reader, c *store.Collection, span partitionSpan, examined *atomic.Int64) *partitionReader {
	return &partitionReader{store: view, coll: c, span: span, examined: examined}
}

func (r *partitionReader) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		if r.cur != nil && r.pos < len(r.cur.docs) {
			d := r.cur.docs[r.pos]
			r.pos++
			return d, nil
		}
		if r.lastSeen {
			return nil, nil
		}
		if !r.readAhead {
			if r.cur == nil {
				r.cur = &readBatch{}
			}
			if err := r.fill(r.cur); err != nil {
				r.lastSeen = true
				return nil, err
			}
			r.pos, r.lastSeen = 0, r.cur.last
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			continue
		}
		if !r.started {
			r.start()
		}
		if r.cur != nil {
			r.free <- r.cur // never blocks: two buffers, two slots
			r.cur = nil
		}
		select {
		case b := <-r.ready:
			if b.err != nil {
				r.lastSeen = true
				return nil, b.err
			}
			r.cur, r.pos, r.lastSeen = b, 0, b.last
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (r *partitionReader) start() {
	r.started = true
	r.ready, r.free, r.stop = make(chan *readBatch, 2), make(chan *readBatch, 2), make(chan struct{})
	r.free <- &readBatch{}
	r.free <- &readBatch{}
	r.wg.Add(1)
	go r.readLoop()
}

// readLoop fills batches until the partition is read, an error, or Close.
func (r *partitionReader) readLoop() {
	defer r.wg.Done()
	for {
		var b *readBatch
		select {
		case b = <-r.free:
		case <-r.stop:
			return
		}
		b.err = r.fillRecovering(b)
		select {
		case r.ready <- b:
		case <-r.stop:
			return
		}
		if b.err != nil || b.last {
			return
		}
	}
}

// fillRecovering is fill on the read-ahead goroutine, a panic becoming
// the batch's error.
func (r *partitionReader) fillRecovering(b *readBatch) (err error) {
	defer func() {
		if p := agg.Recovered(recover()); p != nil {
			err = p
		}
	}()
	return r.fill(b)
}

// fill reads the next batch into b.
func (r *partitionReader) fill(b *readBatch) error {
	b.arena, b.offs, b.docs, b.last = b.arena[:0], b.offs[:0], b.docs[:0], false
	add := func(doc []byte) {
		b.offs = append(b.offs, len(b.arena))
		b.arena = append(b.arena, doc...)
	}
	if r.point != nil {
		b.last = true
		err := r.store.View(func(tx storage.Txn) error {
			doc, err := tx.Get(r.point)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			add(doc)
			return nil
		})
		if err != nil {
			return err
		}
	} else {
		exhausted := true
		err := r.store.View(func(tx storage.Txn) error {
			return tx.ScanRanges(r.coll, r.span.RangesFrom(r.next), func(key, doc []byte) (bool, error) {
				if len(b.offs) >= readBatchDocs || len(b.arena) >= readBatchBytes {
					exhausted = false
					r.next = append(r.next[:0], key...)
					return false, nil
				}
				add(doc)
				return true, nil
			})
		})
		if err != nil {
			return err
		}
		b.last = exhausted
	}
	if r.examined != nil {
		r.examined.Add(int64(len(b.offs)))
	}
	if r.counter != nil {
		r.counter.docs.Add(int64(len(b.offs)))
		r.counter.bytes.Add(int64(len(b.arena)))
	}
	for i, o := range b.offs {
		end := len(b.arena)
		if i+1 < len(b.offs) {
			end = b.offs[i+1]
		}
		b.docs = append(b.docs, b.arena[o:end:end])
	}
	return nil
}

// Close stops the reading goroutine and waits for it.
func (r *partitionReader) Close() {
	r.lastSeen, r.cur = true, nil
	if r.started {
		r.stopOnce.Do(func() { close(r.stop) })
		r.wg.Wait()
	}
}

// aggPartitionSources opens a reader per partition the pipeline's
// leading $match can match. An unsharded collection read by _id
// equality reads just that key.
func (e *Engine) aggPartitionSources(view reader, db, coll string, c *store.Collection, p *agg.Pipeline, examined *atomic.Int64) ([]partitionSpan, []agg.Iterator) {
	if docs, ok := e.virtualDocs(db, coll); ok {
		return []partitionSpan{{ID: "0"}}, []agg.Iterator{virtualSource(docs)}
	}
	if c == nil {
		return []partitionSpan{{ID: "0"}}, []agg.Iterator{agg.Empty()}
	}
	filter, collation := p.LeadingMatch(), p.Collation()
	spans := plan.RoutePartitions(c, plan.Uncollated(filter, collation))
	its := make([]agg.Iterator, len(spans))
	_, snapshot := view.(storage.Snapshot) // its index entries may predate an index
	if len(filter) > 5 && (len(c.Indexes) > 0 || plan.BuiltIDIndex(c) != nil) && !snapshot {
		if f, err := query.CompileWith(filter, query.Options{Collation: collation}); err == nil {
			routed := plan.RoutedSpans(c, spans)
			chosen := plan.IndexForCollation(c, filter, nil, collation)
			indexed := chosen != nil
			if indexed && plan.ByShardKey(spans) {
				probe := &readPlan{Coll: c, Spans: spans, Index: chosen, ShardKeyScan: true}
				e.planner().WeighShardKeyScan(probe)
				indexed = probe.Index != nil
			}
			for i, s := range spans {
				if !indexed {
					break
				}
				ip := chosen.Clone() // a plan per partition: each is narrowed to its own
				its[i] = e.planner().IndexIterator(c, f, ip, s, routed || len(spans) > 1, examined)
			}
			if indexed {
				return spans, its
			}
		}
	}
	for i, s := range spans {
		r := e.newPartitionReader(view, c, s, examined)
		r.readAhead = len(spans) == 1
		if !c.Sharded() && !c.Capped && len(filter) > 5 {
			if f, err := query.Compile(filter); err == nil {
				if id, ok := f.IDEquality(); ok && (collation == nil || !value.Collatable(id)) {
					r.point = plan.IDKey(c, id)
				}
			}
		}
		its[i] = r
	}
	return spans, its
}

// virtualSource streams the documents of a config view.
func virtualSource(docs [][]byte) agg.Iterator {
	out := make([]bsoncore.Document, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return agg.Docs(out)
}
