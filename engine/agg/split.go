package agg

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Split is a pipeline divided as a router divides it: Shard runs once per
// physical partition, Merge once on the union of their outputs.
type Split struct {
	Shard, Merge *Pipeline
}

// partitionLocal reports whether a stage can run on each partition's
// documents independently (it looks at one document at a time).
func partitionLocal(s stage) bool {
	switch s.(type) {
	case *matchStage, *projectStage, *unwindStage, *replaceRootStage, *redactStage:
		return true
	}
	return false
}

// Split divides the pipeline: its longest partition-local prefix, plus
// the partial half of a $group that follows it, run per partition; the
// final half of that $group and the rest run on the merged stream.
func (p *Pipeline) Split() *Split {
	i := 0
	for i < len(p.stages) && partitionLocal(p.stages[i]) {
		i++
	}
	shard := &Pipeline{env: p.env, stages: append([]stage(nil), p.stages[:i]...)}
	merge := &Pipeline{env: p.env, stages: append([]stage(nil), p.stages[i:]...)}
	if i < len(p.stages) {
		if g, ok := p.stages[i].(*groupStage); ok && g.mode == groupWhole {
			shard.stages = append(shard.stages, g.withMode(groupPartial))
			merge.stages[0] = g.withMode(groupFinal)
		}
	}
	return &Split{Shard: shard, Merge: merge}
}

// Explain lists both parts' stages.
func (s *Split) Explain() (shardsPart, mergerPart []bsoncore.Document) {
	return s.Shard.Explain(), s.Merge.Explain()
}

// partitionBatch is how many documents a partition worker hands over at
// once.
const partitionBatch = 128

// Run runs the shard part on every partition's stream (at most parallel
// at a time) and the merge part once on their union. With one partition
// it runs in the caller's goroutine and keeps the partition's order.
func (s *Split) Run(partitions []Iterator, parallel int) Iterator {
	switch len(partitions) {
	case 0:
		return s.Merge.Run(s.Shard.Run(Empty()))
	case 1:
		return s.Merge.Run(s.Shard.Run(partitions[0]))
	}
	return s.Merge.Run(newUnion(s.Shard, partitions, parallel))
}

// union runs a pipeline on several streams in goroutines and yields
// their outputs as they come.
type union struct {
	batches chan []bsoncore.Document
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error
	errc    chan struct{} // closed when err is set
	left    int           // workers not finished (consumer side)
	cur     []bsoncore.Document
	closed  bool
}

func newUnion(p *Pipeline, parts []Iterator, parallel int) *union {
	ctx, cancel := context.WithCancel(context.Background())
	u := &union{batches: make(chan []bsoncore.Document, 2*len(parts)), cancel: cancel, errc: make(chan struct{})}
	parallel = max(parallel, 1)
	sem := make(chan struct{}, parallel)
	u.wg.Add(len(parts))
	u.left = len(parts)
	for _, part := range parts {
		go func(part Iterator) {
			defer u.wg.Done()
			defer func() {
				select {
				case u.batches <- nil: // end of this worker
				case <-ctx.Done():
				}
			}()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				part.Close()
				return
			}
			defer func() { <-sem }()
			defer func() {
				if err := Recovered(recover()); err != nil {
					u.fail(err)
				}
			}()
			it := p.Run(part)
			defer it.Close()
			batch := make([]bsoncore.Document, 0, partitionBatch)
			for {
				d, err := it.Next(ctx)
				if err != nil {
					u.fail(err)
					return
				}
				if d != nil {
					batch = append(batch, clone(d))
				}
				if len(batch) == partitionBatch || (d == nil && len(batch) > 0) {
					select {
					case u.batches <- batch:
					case <-ctx.Done():
						return
					}
					batch = make([]bsoncore.Document, 0, partitionBatch)
				}
				if d == nil {
					return
				}
			}
		}(part)
	}
	return u
}

func (u *union) fail(err error) {
	u.errOnce.Do(func() {
		u.err = err
		close(u.errc)
		u.cancel()
	})
}

func (u *union) Next(ctx context.Context) (bsoncore.Document, error) {
	for len(u.cur) == 0 {
		if u.left == 0 {
			return nil, nil
		}
		select {
		case b := <-u.batches:
			if b == nil {
				u.left--
				continue
			}
			u.cur = b
		case <-u.errc:
			return nil, u.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case <-u.errc:
		return nil, u.err
	default:
	}
	d := u.cur[0]
	u.cur[0] = nil
	u.cur = u.cur[1:]
	return d, nil
}

// Close stops the workers and waits for them.
func (u *union) Close() {
	if u.closed {
		return
	}
	u.closed = true
	u.cancel()
	u.wg.Wait()
}
