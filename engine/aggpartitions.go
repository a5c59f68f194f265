package engine

import (
	"bytes"
	"context"
	"errors"
	"encoding/binary"
	"sync/atomic"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// partitionSpan is one physical partition as a read sees it: its
// partitionKeyRangeId and the key range [start, end) of its documents
// (end nil: to the end of the collection).
type partitionSpan struct {
	id         string
	start, end []byte
}

// partitionsOf lists the physical partitions of a collection: documents
// are keyed by the hash of their shard key, so each partition's
// documents are one contiguous key range.
func partitionsOf(c *store.Collection) []partitionSpan {
	prefix := store.DocPrefix(c.ID)
	parts := c.Map().Partitions()
	out := make([]partitionSpan, len(parts))
	for i, p := range parts {
		s := partitionSpan{id: p.IDString(), start: binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), p.Min)}
		if next, ok := p.End(); ok {
			s.end = binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), next)
		}
		out[i] = s
	}
	return out
}

// routePartitions narrows a collection's partitions to those a filter
// can match: equality (or $in) on the whole shard key targets the
// owning partitions; anything else reads them all.
func routePartitions(c *store.Collection, filter bsoncore.Document) []partitionSpan {
	all := partitionsOf(c)
	if len(all) == 1 || len(filter) <= 5 || !c.Sharded() {
		return all
	}
	points, ok := c.Spec().Points(filter)
	if !ok {
		return all
	}
	var out []partitionSpan
	for _, i := range c.Map().Route(points) {
		out = append(out, all[i])
	}
	return out
}

// partitionReader streams one partition's documents in key order, a
// batch per read transaction, resuming after the last key it read. With
// point set it reads that one key.
type partitionReader struct {
	store *store.Store
	coll  *store.Collection
	span  partitionSpan
	point []byte
	next  []byte
	done  bool

	arena []byte
	docs  [][]byte // slices of arena
	pos   int

	examined *atomic.Int64 // documents read, for explain (may be nil)
}

// Batch limits of a partition read: large enough that opening a read
// transaction and seeking its iterator, once per batch, costs little
// next to reading the batch.
const (
	readBatchDocs  = 4096
	readBatchBytes = 4 << 20
)

func (e *Engine) newPartitionReader(c *store.Collection, span partitionSpan, examined *atomic.Int64) *partitionReader {
	return &partitionReader{store: e.store, coll: c, span: span, examined: examined}
}

func (r *partitionReader) Next(ctx context.Context) (bsoncore.Document, error) {
	if r.pos < len(r.docs) {
		d := r.docs[r.pos]
		r.pos++
		return d, nil
	}
	if r.done {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.fill(); err != nil {
		return nil, err
	}
	if len(r.docs) == 0 {
		return nil, nil
	}
	r.pos = 1
	return r.docs[0], nil
}

// fill reads the next batch into the arena (reused: the previous batch's
// documents are no longer valid, as the Iterator contract allows).
func (r *partitionReader) fill() error {
	r.arena, r.docs, r.pos = r.arena[:0], r.docs[:0], 0
	var offs []int
	add := func(doc []byte) {
		offs = append(offs, len(r.arena))
		r.arena = append(r.arena, doc...)
	}
	if r.point != nil {
		r.done = true
		err := r.store.View(func(tx *store.Txn) error {
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
		start := r.next
		if start == nil {
			start = r.span.start
		}
		exhausted := true
		err := r.store.View(func(tx *store.Txn) error {
			return tx.Scan(r.coll, start, func(key, doc []byte) (bool, error) {
				if r.span.end != nil && bytes.Compare(key, r.span.end) >= 0 {
					return false, nil
				}
				if len(offs) >= readBatchDocs || len(r.arena) >= readBatchBytes {
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
		r.done = exhausted
	}
	if r.examined != nil {
		r.examined.Add(int64(len(offs)))
	}
	for i, o := range offs {
		end := len(r.arena)
		if i+1 < len(offs) {
			end = offs[i+1]
		}
		r.docs = append(r.docs, r.arena[o:end:end])
	}
	return nil
}

func (r *partitionReader) Close() { r.done, r.docs, r.arena = true, nil, nil }

// aggPartitionSources opens a reader per partition the pipeline's
// leading $match can match. An unsharded collection read by _id
// equality reads just that key.
func (e *Engine) aggPartitionSources(db, coll string, c *store.Collection, p *agg.Pipeline, examined *atomic.Int64) ([]partitionSpan, []agg.Iterator) {
	if docs, ok := e.virtualDocs(db, coll); ok {
		return []partitionSpan{{id: "0"}}, []agg.Iterator{virtualSource(docs)}
	}
	if c == nil {
		return []partitionSpan{{id: "0"}}, []agg.Iterator{agg.Empty()}
	}
	filter := p.LeadingMatch()
	spans := routePartitions(c, filter)
	its := make([]agg.Iterator, len(spans))
	for i, s := range spans {
		r := e.newPartitionReader(c, s, examined)
		if !c.Sharded() && len(filter) > 5 {
			if f, err := query.Compile(filter); err == nil {
				if id, ok := f.IDEquality(); ok {
					r.point = idKey(c, id)
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
