package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdCollStats reports a collection's counts and sizes. Sizes are the
// exact sums kept by the store (store/doc.go, "Counters"): data is the
// BSON size of the documents, the indexes' the size of their keys and
// entries (indexSizes). A missing collection reports zeros, as mongod
// does. The figures are the whole collection's, on Parsec's one shard:
// the same as $collStats' storageStats, and the sums of GetPartitionStats'
// partitions.
func (e *Engine) cmdCollStats(_ context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	scale, err := scaleArg(req)
	if err != nil {
		return nil, err
	}
	if e.isView(req.db, name) {
		return nil, notOnView(req.db, name)
	}
	c := e.store.Collection(req.db, name)
	storage, err := e.storageStats(c, scale)
	if err != nil {
		return nil, err
	}
	sharded, chunks := false, int32(1)
	if c != nil {
		sharded, chunks = c.Sharded(), int32(c.Map().Len())
	}
	fields := append([]bson.E{{Key: "ns", Value: namespaceOf(req.db, name)}}, storage...)
	fields = append(fields,
		bson.E{Key: "sharded", Value: sharded},
		bson.E{Key: "nchunks", Value: chunks},
	)
	return okReply(fields...)
}

// storageStats are collStats' size fields for c (nil: a missing
// collection), as collStats and $collStats' storageStats report them:
// sizes divided by scale, counts not; int32 when they fit, as mongod
// writes them (so the shell prints 50000, not Long('50000')).
func (e *Engine) storageStats(c *store.Collection, scale int64) ([]bson.E, error) {
	var counts store.Counts
	if c != nil {
		var err error
		if counts, err = e.store.Counts(c); err != nil {
			return nil, err
		}
	}
	nindexes, sizes, err := e.indexSizes(c, counts, scale)
	if err != nil {
		return nil, err
	}
	size, idx := counts.Bytes, counts.IndexTotal()
	fields := []bson.E{
		{Key: "size", Value: number(size / scale)},
		{Key: "count", Value: number(counts.Docs)},
	}
	if counts.Docs > 0 {
		fields = append(fields, bson.E{Key: "avgObjSize", Value: number(size / counts.Docs)})
	}
	fields = append(fields,
		bson.E{Key: "storageSize", Value: number(size / scale)},
		bson.E{Key: "freeStorageSize", Value: int32(0)})
	fields = append(fields, cappedStats(c, scale)...)
	return append(fields,
		bson.E{Key: "nindexes", Value: nindexes},
		bson.E{Key: "indexBuilds", Value: bson.A{}},
		bson.E{Key: "totalIndexSize", Value: number(idx / scale)},
		bson.E{Key: "totalSize", Value: number((size + idx) / scale)},
		bson.E{Key: "indexSizes", Value: sizes},
		bson.E{Key: "scaleFactor", Value: int32(scale)},
	), nil
}

// scaleArg reads the optional positive scale divisor.
func scaleArg(req *request) (int64, error) {
	v, err := req.body.LookupErr("scale")
	if err != nil {
		return 1, nil
	}
	scale, err := int64Arg(req.name, "scale", v)
	if err != nil {
		return 0, err
	}
	if scale < 1 {
		return 0, errorf(ErrBadValue, "Scale factor must be greater than zero")
	}
	return scale, nil
}

// indexSizes are collStats' nindexes and indexSizes for c, in
// listIndexes' order, from its counters (counts). Every index built is
// listed; the sizes add up to counts.IndexTotal():
//
//   - an unsharded collection's documents are keyed by _id, so its _id
//     index is the document keys (KeyBytes);
//   - a sharded collection's documents are keyed by (hash of the shard
//     key, shard key, _id), so the document keys are its shard-key index
//     (KeyBytes, engine/plan/shardkeyindex.go), and its _id index (store/idindex.go)
//     is what the index counters hold beyond the secondary indexes;
//   - each secondary index's size is read from its entries.
func (e *Engine) indexSizes(c *store.Collection, counts store.Counts, scale int64) (int32, bson.D, error) {
	if c == nil {
		return 1, bson.D{{Key: idIndexName, Value: int32(0)}}, nil
	}
	var per map[string]int64
	if len(c.Indexes) > 0 {
		var err error
		if per, err = e.store.IndexSizes(c); err != nil {
			return 0, nil, err
		}
	}
	var secondary int64
	var rest bson.D
	for _, ix := range c.Indexes {
		if !ix.Building {
			rest = append(rest, bson.E{Key: ix.Name, Value: number(per[ix.Name] / scale)})
			secondary += per[ix.Name]
		}
	}
	var sizes bson.D
	if c.Sharded() {
		id := max(counts.IndexBytes-secondary, 0)
		sizes = bson.D{
			{Key: idIndexName, Value: number(id / scale)},
			{Key: plan.ShardKeyIndexName(c), Value: number(counts.KeyBytes / scale)},
		}
	} else {
		sizes = bson.D{{Key: idIndexName, Value: number(max(counts.IndexTotal()-secondary, 0) / scale)}}
	}
	sizes = append(sizes, rest...)
	return int32(len(sizes)), sizes, nil // one per index built
}
