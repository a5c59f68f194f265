package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/store"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdCollStats reports a collection's counts and sizes. Sizes are the
// exact sums kept by the store: data is the BSON size of the documents,
// the _id index is the size of their keys. A missing collection reports
// zeros, as mongod does.
func (e *Engine) cmdCollStats(_ context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	scale, err := scaleArg(req)
	if err != nil {
		return nil, err
	}
	var count, size, idx int64
	var coll *store.Collection
	sharded, chunks := false, int32(1)
	if c := e.store.Collection(req.db, name); c != nil {
		sharded, chunks = c.Sharded(), int32(c.Map().Len())
		counts, err := e.store.Counts(c)
		if err != nil {
			return nil, err
		}
		count, size, idx = counts.Docs, counts.Bytes, counts.IndexTotal()
		coll = c
	}
	nindexes, sizes, err := e.indexSizes(coll, idx, scale, nil)
	if err != nil {
		return nil, err
	}
	fields := []bson.E{
		{Key: "ns", Value: namespaceOf(req.db, name)},
		{Key: "size", Value: size / scale},
		{Key: "count", Value: count},
	}
	if count > 0 {
		fields = append(fields, bson.E{Key: "avgObjSize", Value: size / count})
	}
	fields = append(fields,
		bson.E{Key: "storageSize", Value: size / scale},
		bson.E{Key: "freeStorageSize", Value: int64(0)},
		bson.E{Key: "capped", Value: false},
		bson.E{Key: "nindexes", Value: int32(nindexes)},
		bson.E{Key: "indexBuilds", Value: bson.A{}},
		bson.E{Key: "totalIndexSize", Value: idx / scale},
		bson.E{Key: "totalSize", Value: (size + idx) / scale},
		bson.E{Key: "indexSizes", Value: sizes},
		bson.E{Key: "scaleFactor", Value: int32(scale)},
		bson.E{Key: "sharded", Value: sharded},
		bson.E{Key: "nchunks", Value: chunks},
	)
	return okReply(fields...)
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

// indexSizes are collStats' nindexes and indexSizes: the _id index's
// bytes are what is left of total (all index bytes) after the secondary
// indexes', each read from its entries; share scales them to one
// partition's part (nil: all).
func (e *Engine) indexSizes(c *store.Collection, total, scale int64, share func(int64) int64) (int32, bson.D, error) {
	if share == nil {
		share = func(n int64) int64 { return n }
	}
	sizes := bson.D{{Key: "_id_", Value: total / scale}}
	if c == nil || len(c.Indexes) == 0 {
		return 1, sizes, nil
	}
	per, err := e.store.IndexSizes(c)
	if err != nil {
		return 0, nil, err
	}
	var secondary int64
	for _, ix := range c.Indexes {
		if !ix.Building {
			sizes = append(sizes, bson.E{Key: ix.Name, Value: share(per[ix.Name]) / scale})
			secondary += share(per[ix.Name])
		}
	}
	sizes[0].Value = max(total-secondary, 0) / scale
	return int32(len(sizes)), sizes, nil // one per index built
}
