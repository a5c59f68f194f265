package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func (e *Engine) cmdDropDatabase(_ context.Context, req *request) ([]byte, error) {
	if err := validateDBName(req.db); err != nil {
		return nil, err
	}
	for _, c := range e.store.Collections(req.db) {
		e.cursors.closeForNamespace(c.Namespace())
	}
	if err := e.store.DropDatabase(req.db); err != nil {
		return nil, err
	}
	e.units.catalogChanged()
	return okReply(bson.E{Key: "dropped", Value: req.db})
}
