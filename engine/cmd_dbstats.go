package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdDBStats sums collStats over a database's collections: the exact
// counters of each (store/doc.go, "Counters").
func (e *Engine) cmdDBStats(_ context.Context, req *request) ([]byte, error) {
	if err := validateDBName(req.db); err != nil {
		return nil, err
	}
	scale, err := scaleArg(req)
	if err != nil {
		return nil, err
	}
	colls := e.store.Collections(req.db)
	var objects, data, idx, nindexes int64
	for _, c := range colls {
		nindexes += int64(readyIndexes(c))
		counts, err := e.store.Counts(c)
		if err != nil {
			return nil, err
		}
		objects += counts.Docs
		data += counts.Bytes
		idx += counts.IndexTotal()
	}
	avg := 0.0
	if objects > 0 {
		avg = float64(data) / float64(objects)
	}
	// MongoDB divides by the scale as a double: 100 bytes at scale 1024
	// are 0.09765625, not 0.
	scaled := func(n int64) float64 { return float64(n) / float64(scale) }
	// With freeStorage: 1, MongoDB adds the space its files hold free for
	// reuse; Parsec's documents are in Badger's tables and logs, which
	// keep no free space inside to reuse: 0.
	free := false
	if v, err := req.body.LookupErr("freeStorage"); err == nil {
		free, _ = boolArg(req.name, "freeStorage", v) // MongoDB takes its truth value
	}
	d := bson.D{
		{Key: "db", Value: req.db},
		{Key: "collections", Value: int64(len(colls))},
		{Key: "views", Value: int64(len(e.store.ViewDefinitions(req.db)))},
		{Key: "objects", Value: objects},
		{Key: "avgObjSize", Value: avg},
		{Key: "dataSize", Value: scaled(data)},
		{Key: "storageSize", Value: scaled(data)},
	}
	if free {
		d = append(d, bson.E{Key: "freeStorageSize", Value: float64(0)})
	}
	d = append(d,
		bson.E{Key: "indexes", Value: nindexes},
		bson.E{Key: "indexSize", Value: scaled(idx)},
	)
	if free {
		d = append(d, bson.E{Key: "indexFreeStorageSize", Value: float64(0)})
	}
	d = append(d, bson.E{Key: "totalSize", Value: scaled(data + idx)})
	if free {
		d = append(d, bson.E{Key: "totalFreeStorageSize", Value: float64(0)})
	}
	d = append(d, bson.E{Key: "scaleFactor", Value: scale})
	return okReply(d...)
}

// readyIndexes is how many indexes c has that are built, as
// listIndexes lists them: _id, the shard-key index of a sharded
// collection, and its secondary indexes not still building.
func readyIndexes(c *store.Collection) int {
	n := 1
	if c.Sharded() {
		n++
	}
	for _, ix := range c.Indexes {
		if !ix.Building {
			n++
		}
	}
	return n
}
