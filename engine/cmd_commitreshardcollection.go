package engine

import "context"

// cmdCommitReshardCollection makes a running resharding switch as soon as
// its copy has caught up, rather than after more rounds of changes:
// {commitReshardCollection: "db.coll"}. It answers once the collection
// has its new shard key (or with the resharding's error); 339
// NoSuchReshardCollection when none runs.
func (e *Engine) cmdCommitReshardCollection(ctx context.Context, req *request) ([]byte, error) {
	rs, err := e.reshardingOf(req)
	if err != nil {
		return nil, err
	}
	rs.commitOnce.Do(func() { close(rs.commit) })
	if err := rs.wait(ctx.Done(), e.stop); err != nil {
		return nil, err
	}
	return okReply()
}
