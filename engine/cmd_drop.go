package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdDrop drops a collection or a view. As in MongoDB 7.0, dropping a
// collection that does not exist succeeds.
func (e *Engine) cmdDrop(_ context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	if err := e.store.DropView(req.db, name); !errors.Is(err, store.ErrNotFound) {
		if err != nil {
			return nil, err
		}
		return okReply(bson.E{Key: "ns", Value: namespaceOf(req.db, name)}) // a view has no indexes
	}
	if err := e.store.DropCollection(req.db, name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return okReply()
		}
		return nil, err
	}
	e.cursors.CloseForNamespace(namespaceOf(req.db, name))
	e.units.CatalogChanged()
	return okReply(bson.E{Key: "nIndexesWas", Value: int32(1)}, bson.E{Key: "ns", Value: namespaceOf(req.db, name)})
}
