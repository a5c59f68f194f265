package engine

import (
	"context"
	"strings"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdListCollections lists a database's collections and views, by name,
// as a cursor whose first batch holds them all, or cursor.batchSize of
// them.
func (e *Engine) cmdListCollections(_ context.Context, req *request) ([]byte, error) {
	if err := validateDBName(req.db); err != nil {
		return nil, err
	}
	filter, nameOnly, batchSize, err := parseListArgs(req, "authorizedCollections")
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	views := e.store.ViewDefinitions(req.db)
	for _, c := range e.store.Collections(req.db) {
		if e.store.Pending(c.ID) || strings.HasPrefix(c.Name, store.ReshardTempPrefix) {
			continue // created by a transaction not yet committed; a resharding's copy
		}
		for len(views) > 0 && views[0].Name < c.Name {
			if docs, err = listView(docs, views[0], filter, nameOnly); err != nil {
				return nil, err
			}
			views = views[1:]
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
	for _, v := range views {
		if docs, err = listView(docs, v, filter, nameOnly); err != nil {
			return nil, err
		}
	}
	return e.listingReply(req, req.db+".$cmd.listCollections", docs, batchSize), nil
}

// listView appends view v's listCollections entry to docs if the filter
// matches it.
func listView(docs [][]byte, v *store.ViewDefinition, filter *query.Filter, nameOnly bool) ([][]byte, error) {
	entry := bson.D{
		{Key: "name", Value: v.Name},
		{Key: "type", Value: "view"},
		{Key: "options", Value: viewListOptions(v)},
		{Key: "info", Value: bson.D{{Key: "readOnly", Value: true}}},
	}
	if nameOnly {
		entry = entry[:2]
	}
	raw, err := bson.Marshal(entry)
	if err != nil {
		return nil, err
	}
	if filter != nil && !filter.Match(bsoncore.Document(raw)) {
		return docs, nil
	}
	return append(docs, raw), nil
}

var emptyDoc = bson.Raw(bsoncore.NewDocumentBuilder().Build())

// idIndexSpec describes the _id index every collection has.
func idIndexSpec() bson.D {
	return bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}
}

// viewListOptions are a view's options as listCollections shows them.
func viewListOptions(v *store.ViewDefinition) bson.D {
	opts := bson.D{{Key: "viewOn", Value: v.ViewOn}, {Key: "pipeline", Value: bson.RawValue{Type: bson.TypeArray, Value: v.Pipeline}}}
	if len(v.Collation) > 0 {
		opts = append(opts, bson.E{Key: "collation", Value: v.Collation})
	}
	return opts
}
