package engine

import (
	"context"
)

// cmdBalancerStop stops a cluster's balancer (sh.stopBalancer()): it
// starts no new move; one under way finishes.
func (e *Engine) cmdBalancerStop(ctx context.Context, req *request) ([]byte, error) {
	return e.setBalancer(ctx, req, false, 0)
}
