package engine

import (
	"context"
)

// cmdBalancerStart starts a cluster's balancer (sh.startBalancer()).
func (e *Engine) cmdBalancerStart(ctx context.Context, req *request) ([]byte, error) {
	return e.setBalancer(ctx, req, true)
}

// setBalancer starts or stops the balancer; a single server has none.
func (e *Engine) setBalancer(ctx context.Context, req *request, on bool) ([]byte, error) {
	if e.cfg.Balancer == nil {
		return nil, errorf(ErrIllegalOperation, "%s: a single Parsec server has no balancer: its physical partitions split in place (a cluster's balancer moves replicas between nodes)", req.name)
	}
	if err := e.cfg.Balancer.SetEnabled(ctx, on); err != nil {
		return nil, err
	}
	return okReply()
}
