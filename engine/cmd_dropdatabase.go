package engine

import (
	"context"
)

func (e *Engine) cmdDropDatabase(_ context.Context, req *request) ([]byte, error) {
	if err := validateDBName(req.db); err != nil {
		return nil, err
	}
	for _, c := range e.store.Collections(req.db) {
		e.cursors.CloseForNamespace(c.Namespace())
	}
	if err := e.store.DropDatabase(req.db); err != nil {
		return nil, err
	}
	e.units.CatalogChanged()
	return okReply() // MongoDB 5.0+ replies {ok: 1}, without the "dropped" of earlier versions
}
