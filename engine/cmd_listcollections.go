package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdListCollections lists a database's collections as a cursor whose
// first batch holds them all, or cursor.batchSize of them.
func (e *Engine) cmdListCollections(_ context.Context, req *request) ([]byte, error) {
	if err := validateDBName(req.db); err != nil {
		return nil, err
	}
	filter, nameOnly, batchSize, err := parseListArgs(req, "authorizedCollections")
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	for _, c := range e.store.Collections(req.db) {
		if e.store.Pending(c.ID) {
			continue // created by a transaction not yet committed
		}
		opts := bson.Raw(c.Options)
		if opts == nil {
			opts = emptyDoc
		}
		entry := bson.D{
			{Key: "name", Value: c.Name},
			{Key: "type", Value: "collection"},
			{Key: "options", Value: opts},
			{Key: "info", Value: bson.D{
				{Key: "readOnly", Value: false},
				{Key: "uuid", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: c.UUID}},
			}},
			{Key: "idIndex", Value: idIndexSpec()},
		}
		// As in MongoDB, the filter sees the entry that is returned: with
		// nameOnly, just {name, type}.
		if nameOnly {
			entry = entry[:2]
		}
		raw, err := bson.Marshal(entry)
		if err != nil {
			return nil, err
		}
		if filter != nil && !filter.Match(bsoncore.Document(raw)) {
			continue
		}
		docs = append(docs, raw)
	}
	return e.listingReply(req, req.db+".$cmd.listCollections", docs, batchSize), nil
}

var emptyDoc = bson.Raw(bsoncore.NewDocumentBuilder().Build())

// idIndexSpec describes the _id index every collection has.
func idIndexSpec() bson.D {
	return bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}
}
