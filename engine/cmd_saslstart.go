package engine

import (
	"context"
)

// cmdSaslStart begins a SCRAM exchange: {saslStart: 1, mechanism, payload,
// options: {skipEmptyExchange}}.
func (e *Engine) cmdSaslStart(ctx context.Context, req *request) ([]byte, error) {
	out, err := e.saslStart(ctx, req.c, req.name, req.db, req.body)
	if err != nil {
		return nil, err
	}
	return okReply(out...)
}
