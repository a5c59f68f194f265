package engine

import (
	"context"
)

func (e *Engine) cmdEndSessions(_ context.Context, req *request) ([]byte, error) {
	ids, err := sessionIDs(req)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		e.cursors.CloseForSession(id)
	}
	e.forgetSessions(ids)
	return okReply()
}
