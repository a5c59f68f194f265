package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// aggCollections is how aggregation stages reach other collections:
// agg.Collections over the store.
type aggCollections struct {
	e *Engine
}

var _ agg.Collections = aggCollections{}

func (a aggCollections) Scan(ctx context.Context, db, coll string) (agg.Iterator, error) {
	if err := validateCollName(db, coll); err != nil {
		return nil, err
	}
	if docs, ok := a.e.virtualDocs(db, coll); ok {
		return virtualSource(docs), nil
	}
	if r, err := a.e.resolveView(db, coll); err != nil || r != nil {
		if err != nil {
			return nil, err
		}
		return a.e.scanView(ctx, db, r)
	}
	c := a.e.store.Collection(db, coll)
	if c == nil {
		return agg.Empty(), nil
	}
	spans := plan.PartitionsOf(c)
	readers := make([]agg.Iterator, len(spans))
	for i, s := range spans {
		r := a.e.newPartitionReader(a.e.viewOf(ctx), c, s, nil)
		r.readAhead = true // read one after the other by one consumer
		readers[i] = r
	}
	return &concatIter{its: readers}, nil
}

// concatIter streams several iterators one after the other.
type concatIter struct {
	its []agg.Iterator
}

func (c *concatIter) Next(ctx context.Context) (bsoncore.Document, error) {
	for len(c.its) > 0 {
		d, err := c.its[0].Next(ctx)
		if err != nil || d != nil {
			return d, err
		}
		c.its[0].Close()
		c.its = c.its[1:]
	}
	return nil, nil
}

func (c *concatIter) Close() {
	for _, it := range c.its {
		it.Close()
	}
	c.its = nil
}

// find locates the document with _id id: its key, bytes and whether it
// exists. Unsharded collections are keyed by _id; sharded and capped
// ones are searched.
func (a aggCollections) find(tx storage.Txn, c *store.Collection, id bsoncore.Value) ([]byte, []byte, bool, error) {
	if !c.Sharded() && !c.Capped {
		key := plan.IDKey(c, id)
		doc, err := tx.Get(key)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, false, nil
		}
		return key, doc, err == nil, err
	}
	var key, doc []byte
	err := tx.Scan(c, nil, func(k, d []byte) (bool, error) {
		if v, err := bsoncore.Document(d).LookupErr("_id"); err == nil && expr.Compare(v, id) == 0 {
			key, doc = append([]byte(nil), k...), append([]byte(nil), d...)
			return false, nil
		}
		return true, nil
	})
	return key, doc, key != nil, err
}

func (a aggCollections) Get(ctx context.Context, db, coll string, id bsoncore.Value) (bsoncore.Document, bool, error) {
	c := a.e.store.Collection(db, coll)
	if c == nil {
		return nil, false, nil
	}
	var doc []byte
	var found bool
	err := a.e.viewOf(ctx).View(func(tx storage.Txn) error {
		var err error
		_, doc, found, err = a.find(tx, c, id)
		return err
	})
	return doc, found, err
}

func (a aggCollections) Insert(ctx context.Context, db, coll string, doc bsoncore.Document) error {
	if err := validateCollName(db, coll); err != nil {
		return err
	}
	if a.e.isView(db, coll) {
		return notOnView(db, coll)
	}
	c, _, err := a.e.store.EnsureCollection(db, coll)
	if err != nil {
		return err
	}
	d := prepareInsert(doc)
	if d.err != nil {
		return d.err
	}
	_, errs, err := a.e.insertDocs(ctx, nil, c, []insertDoc{d}, true)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return errs[0].commandError()
	}
	return nil
}

func (a aggCollections) Replace(ctx context.Context, db, coll string, id bsoncore.Value, doc bsoncore.Document) error {
	c := a.e.store.Collection(db, coll)
	if c == nil {
		return errorf(ErrNamespaceNotFound, "collection %s.%s was dropped", db, coll)
	}
	d := prepareInsert(doc)
	if d.err != nil {
		return d.err
	}
	return a.e.store.Update(func(tx storage.Txn) error {
		key, old, found, err := a.find(tx, c, id)
		if err != nil {
			return err
		}
		if !found {
			return errorf(ErrNoSuchKey, "$merge: the matching document with _id %s was removed", shellString(id))
		}
		if err := a.e.checkDocument(ctx, c, old, d.doc, false); err != nil {
			return err
		}
		return tx.Replace(c, key, d.doc, len(old))
	})
}

// OpenOut writes $out's result into a temporary collection that is
// renamed over the target at commit, as MongoDB does.
func (a aggCollections) OpenOut(_ context.Context, db, coll string) (agg.OutWriter, error) {
	if err := validateCollName(db, coll); err != nil {
		return nil, err
	}
	if a.e.isView(db, coll) {
		return nil, notOnView(db, coll)
	}
	tmp := fmt.Sprintf("tmp.agg_out.%x", rand.Uint64())
	// As in MongoDB, the new collection keeps the target's options (its
	// validator: $out's documents are validated against it).
	var options bson.Raw
	if target := a.e.store.Collection(db, coll); target != nil {
		options = target.Options
	}
	c, err := a.e.store.CreateCollection(db, tmp, options)
	if err != nil {
		return nil, err
	}
	return &outWriter{e: a.e, c: c, db: db, coll: coll}, nil
}

type outWriter struct {
	e        *Engine
	c        *store.Collection
	db, coll string
	pending  []insertDoc
	bytes    int
}

func (w *outWriter) Insert(ctx context.Context, doc bsoncore.Document) error {
	d := prepareInsert(append(bsoncore.Document(nil), doc...))
	if d.err != nil {
		return d.err
	}
	w.pending = append(w.pending, d)
	w.bytes += len(d.doc)
	if len(w.pending) >= chunkDocs || w.bytes >= chunkBytes {
		return w.flush(ctx)
	}
	return nil
}

func (w *outWriter) flush(ctx context.Context) error {
	if len(w.pending) == 0 {
		return nil
	}
	_, errs, err := w.e.insertDocs(ctx, nil, w.c, w.pending, true)
	w.pending, w.bytes = w.pending[:0], 0
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return errs[0].commandError()
	}
	return nil
}

func (w *outWriter) Commit(ctx context.Context) error {
	if err := w.flush(ctx); err != nil {
		w.Abort()
		return err
	}
	if err := w.e.store.RenameCollection(w.db, w.c.Name, w.db, w.coll, true); err != nil {
		w.Abort()
		return err
	}
	w.e.cursors.CloseForNamespace(namespaceOf(w.db, w.coll))
	w.e.units.CatalogChanged()
	return nil
}

func (w *outWriter) Abort() { _ = w.e.store.DropCollection(w.db, w.c.Name) }

// CollStats answers $collStats as a mongos does: one document per shard,
// and Parsec is one shard (explainShardName, as listShards and
// config.shards name it) holding every physical partition. So the one
// document's storageStats and count are the whole collection's, exact
// from the store's counters, as collStats reports them; config.chunks
// and GetPartitionStats give the per-partition figures, which add up to
// them. (mongosh's getShardDistribution() counts a shard's chunks in
// config.chunks once per $collStats document of that shard, and stats()
// keys its per-shard figures by shard name: one document per partition,
// all naming one shard, would multiply the chunks and hide partitions.)
func (a aggCollections) CollStats(_ context.Context, db, coll string, spec bsoncore.Document) ([]bsoncore.Document, error) {
	c := a.e.store.Collection(db, coll)
	d := bson.D{
		{Key: "ns", Value: namespaceOf(db, coll)},
		{Key: "shard", Value: a.e.shardName()},
		{Key: "host", Value: a.e.hostPort()},
		{Key: "localTime", Value: bson.DateTime(a.e.now().UnixMilli())},
	}
	if v, err := spec.LookupErr("latencyStats"); err == nil {
		hist := false
		if h, err := v.Document().LookupErr("histograms"); err == nil {
			hist = h.Type == bsoncore.TypeBoolean && h.Boolean()
		}
		op := func() bson.D {
			d := bson.D{{Key: "latency", Value: int64(0)}, {Key: "ops", Value: int64(0)}}
			if hist {
				d = append(d, bson.E{Key: "histogram", Value: bson.A{}})
			}
			return d
		}
		d = append(d, bson.E{Key: "latencyStats", Value: bson.D{
			{Key: "reads", Value: op()}, {Key: "writes", Value: op()}, {Key: "commands", Value: op()}, {Key: "transactions", Value: op()},
		}})
	}
	if v, err := spec.LookupErr("storageStats"); err == nil {
		scale := int64(1)
		if sc, err := v.Document().LookupErr("scale"); err == nil {
			if n, ok := numberFloat(sc); ok && n >= 1 {
				scale = int64(n)
			}
		}
		st, err := a.e.storageStats(c, scale)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: "storageStats", Value: bson.D(st)})
	}
	if _, err := spec.LookupErr("count"); err == nil {
		var n int64
		if c != nil {
			counts, err := a.e.store.Counts(c)
			if err != nil {
				return nil, err
			}
			n = counts.Docs
		}
		d = append(d, bson.E{Key: "count", Value: number(n)})
	}
	if _, err := spec.LookupErr("queryExecStats"); err == nil {
		d = append(d, bson.E{Key: "queryExecStats", Value: bson.D{{Key: "collectionScans", Value: bson.D{
			{Key: "total", Value: int64(0)}, {Key: "nonTailable", Value: int64(0)}}}}})
	}
	b, err := bson.Marshal(d)
	if err != nil {
		return nil, err
	}
	return []bsoncore.Document{b}, nil
}

// IndexStats answers $indexStats: every index listIndexes lists, with
// no recorded accesses.
func (a aggCollections) IndexStats(_ context.Context, db, coll string) ([]bsoncore.Document, error) {
	c := a.e.store.Collection(db, coll)
	if c == nil {
		return nil, nil
	}
	since := bson.DateTime(a.e.started.UnixMilli())
	var out []bsoncore.Document
	for _, spec := range listedIndexes(c) {
		b, err := bson.Marshal(bson.D{
			{Key: "name", Value: spec.Lookup("name").StringValue()},
			{Key: "key", Value: spec.Lookup("key").Document()},
			{Key: "host", Value: a.e.hostPort()},
			{Key: "accesses", Value: bson.D{{Key: "ops", Value: int64(0)}, {Key: "since", Value: since}}},
			{Key: "shard", Value: a.e.shardName()},
			{Key: "spec", Value: spec},
		})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
