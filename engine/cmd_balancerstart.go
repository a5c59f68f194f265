package engine

import (
	"context"
)

// cmdBalancerStart starts a cluster's balancer (sh.startBalancer()).
// Parsec's own field maxConcurrentMoves (1 to MaxConcurrentMoves) sets
// how many replicas it moves at once, each between two nodes no other
// move uses; it stays until set again.
func (e *Engine) cmdBalancerStart(ctx context.Context, req *request) ([]byte, error) {
	maxMoves := 0
	if v, err := req.body.LookupErr("maxConcurrentMoves"); err == nil {
		n, err := int64Arg(req.name, "maxConcurrentMoves", v)
		if err != nil {
			return nil, err
		}
		if n < 1 || n > MaxConcurrentMoves {
			return nil, errorf(ErrBadValue, "%s: maxConcurrentMoves must be between 1 and %d, not %d", req.name, MaxConcurrentMoves, n)
		}
		maxMoves = int(n)
	}
	return e.setBalancer(ctx, req, true, maxMoves)
}

// setBalancer starts or stops the balancer; a single server has none.
func (e *Engine) setBalancer(ctx context.Context, req *request, on bool, maxMoves int) ([]byte, error) {
	if e.cfg.Balancer == nil {
		return nil, errorf(ErrIllegalOperation, "%s: a single Parsec server has no balancer: its physical partitions split in place (a cluster's balancer moves replicas between nodes)", req.name)
	}
	if err := e.cfg.Balancer.SetEnabled(ctx, on, maxMoves); err != nil {
		return nil, err
	}
	return okReply()
}
