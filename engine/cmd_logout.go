package engine

import (
	"context"
)

// cmdLogout forgets the connection's user.
func (e *Engine) cmdLogout(_ context.Context, req *request) ([]byte, error) {
	req.c.auth.mu.Lock()
	req.c.auth.user = nil
	req.c.auth.conv = nil
	req.c.auth.mu.Unlock()
	return okReply()
}
