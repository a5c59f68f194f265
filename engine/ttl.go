package engine

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TTL: a background pass, every Config.TTLInterval (MongoDB's
// ttlMonitorSleepSecs, 60 s), deletes the documents whose TTL-indexed
// date is more than expireAfterSeconds in the past (for an array of
// dates, its earliest), reading the TTL index's range below the cutoff.

// DefaultTTLInterval is how often the TTL pass runs.
const DefaultTTLInterval = 60 * time.Second

// ttlStats count the passes and deletions, for serverStatus.
type ttlStats struct {
	passes, deleted atomic.Int64
}

// ttlPass runs one TTL pass, bounded by the interval between passes.
func (e *Engine) ttlPass(every time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), every)
	n, err := e.expire(ctx)
	cancel()
	if err != nil && !errors.Is(err, store.ErrClosed) {
		e.logger.Warn("TTL pass", "err", err)
	} else if n > 0 {
		e.logger.Debug("TTL pass", "deleted", n)
	}
}

// expire runs one TTL pass over every collection and returns how many
// documents it deleted.
func (e *Engine) expire(ctx context.Context) (int64, error) {
	e.ttl.passes.Add(1)
	var total int64
	for _, db := range e.store.Databases() {
		for _, c := range e.store.Collections(db) {
			for _, ix := range c.Indexes {
				if ix.ExpireAfterSeconds == nil || ix.Building || len(ix.Fields) != 1 {
					continue
				}
				n, err := e.expireIndex(ctx, c, ix)
				total += n
				e.ttl.deleted.Add(n)
				if err != nil {
					return total, err
				}
			}
		}
	}
	return total, nil
}

// expireIndex deletes the expired documents of one TTL index.
func (e *Engine) expireIndex(ctx context.Context, c *store.Collection, ix *store.Index) (int64, error) {
	cutoff := e.now().Add(-time.Duration(*ix.ExpireAfterSeconds) * time.Second)
	filterDoc := bsoncore.NewDocumentBuilder().
		AppendDocument(ix.Fields[0].Path, bsoncore.NewDocumentBuilder().AppendDateTime("$lt", cutoff.UnixMilli()).Build()).
		Build()
	filter, err := query.Compile(filterDoc)
	if err != nil {
		return 0, err
	}
	p := &readPlan{NS: c.Namespace(), Coll: c, Filter: filter}
	p.Index = plan.HintedIndex(ix, filterDoc, nil)
	src := e.planner().Scan(p)
	var deleted int64
	for !src.IndexDone() {
		var keys [][]byte
		err := src.WalkIndex(ctx, func(docKey, _ []byte) (bool, error) {
			keys = append(keys, bytes.Clone(docKey))
			return len(keys) < 256, nil
		})
		if err != nil {
			return deleted, err
		}
		if len(keys) == 0 {
			continue
		}
		for len(keys) > 0 {
			var n int64
			type deletion struct {
				key  []byte
				size int
				ix   store.IndexWork
			}
			var done []deletion
			var later [][]byte // keys of other physical partitions (tx.Plan): the next transaction's
			err = e.store.Update(func(tx storage.Txn) error {
				n, done, later = 0, done[:0], later[:0]
				for _, k := range keys {
					if !tx.Plan(c, k) {
						later = append(later, bytes.Clone(k))
						continue
					}
					doc, err := tx.Get(k)
					if errors.Is(err, store.ErrNotFound) {
						continue
					}
					if err != nil {
						return err
					}
					if ok, _ := filter.MatchErr(doc); !ok {
						continue // updated since: no longer expired
					}
					before := tx.IndexWork()
					if err := tx.Delete(c, k, len(doc)); err != nil {
						return err
					}
					after := tx.IndexWork()
					done = append(done, deletion{k, len(doc), store.IndexWork{Entries: after.Entries - before.Entries, Bytes: after.Bytes - before.Bytes}})
					n++
				}
				return nil
			})
			if errors.Is(err, store.ErrCollectionChanged) {
				return deleted, nil // dropped or changed: the next pass sees the new entry
			}
			if err != nil {
				return deleted, err
			}
			for _, d := range done {
				e.chargeTTLDelete(c, d.key, d.size, d.ix)
			}
			deleted += n
			keys = append(keys[:0:0], later...)
		}
	}
	return deleted, nil
}

// chargeTTLDelete charges a TTL deletion to its partition like a delete
// (it is counted, never refused: the deletion has happened).
func (e *Engine) chargeTTLDelete(c *store.Collection, key []byte, size int, ix store.IndexWork) {
	u := e.units.Of(c)
	if u == nil {
		return
	}
	price := ru.Charge(billing.ItemUsage(ru.KindDelete, key, size, ix.Entries, ix.Bytes))
	u.At(key).Charge(e.now(), billing.LogicalKey(c, key), price)
}
