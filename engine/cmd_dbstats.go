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
	return okReply(
		bson.E{Key: "db", Value: req.db},
		bson.E{Key: "collections", Value: int64(len(colls))},
		bson.E{Key: "views", Value: int64(0)},
		bson.E{Key: "objects", Value: objects},
		bson.E{Key: "avgObjSize", Value: avg},
		bson.E{Key: "dataSize", Value: float64(data / scale)},
		bson.E{Key: "storageSize", Value: float64(data / scale)},
		bson.E{Key: "indexes", Value: nindexes},
		bson.E{Key: "indexSize", Value: float64(idx / scale)},
		bson.E{Key: "totalSize", Value: float64((data + idx) / scale)},
		bson.E{Key: "scaleFactor", Value: scale},
	)
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
