package engine

import (
	"context"
)

func (e *Engine) cmdKillSessions(ctx context.Context, req *request) ([]byte, error) {
	return e.cmdEndSessions(ctx, req)
}
