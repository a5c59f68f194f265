package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The change-stream workloads measure what one open change stream costs
// inserts, and how long an acknowledged write takes to reach the stream:
// one server, insertOne of fresh 1 KB documents, in two workloads
// interleaved in rounds:
//
//	changesUnwatched  no stream is open
//	changesWatched    one change stream on the collection, opened while
//	                  (and only while) this workload runs, reads every
//	                  event; each event's delay after its insert was
//	                  acknowledged is recorded (p50 and p99 reported)
//
// Run them alone with `make bench ONLY=changes`.
var changesWorkloads = []string{"changesUnwatched", "changesWatched"}

const changesCollection = "changes"

// changesReport is the latency from a write's acknowledgement to its
// event on the stream.
type changesReport struct {
	Events int64   `json:"events"`
	P50MS  float64 `json:"ack_to_event_p50_ms"`
	P99MS  float64 `json:"ack_to_event_p99_ms"`
}

func changesPhase(ctx context.Context, cfg config, rep *report, want func(string) bool) (err error) {
	srv, stop, err := launchPhase("changes", integration.ServerOptions{})
	if err != nil {
		return err
	}
	defer stop(&err)
	mcs, err := connect(cfg.ClientMode, srv.URI(), max(slicesMax(cfg.Clients), 1))
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range mcs {
			_ = c.Disconnect(context.Background())
		}
	}()
	watchClient, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
	if err != nil {
		return err
	}
	defer func() { _ = watchClient.Disconnect(context.Background()) }()

	var active atomic.Int64 // last insert of changesWatched, unix ns
	var acks sync.Map       // _id -> time the insert was acknowledged
	var mu sync.Mutex
	var delays []time.Duration
	recent := func() bool { return time.Since(time.Unix(0, active.Load())) < 200*time.Millisecond }

	wctx, stopWatcher := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopWatcher(); wg.Wait() }()
	var watchErr atomic.Value
	wg.Add(1)
	go func() {
		defer wg.Done()
		coll := watchClient.Database("bench").Collection(changesCollection)
		for wctx.Err() == nil {
			if !recent() {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			cs, err := coll.Watch(wctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(100*time.Millisecond))
			if err != nil {
				if wctx.Err() == nil {
					watchErr.Store(err)
				}
				return
			}
			for recent() && wctx.Err() == nil {
				if !cs.TryNext(wctx) {
					if err := cs.Err(); err != nil && wctx.Err() == nil {
						watchErr.Store(err)
					}
					continue
				}
				seen := time.Now()
				id, ok := cs.Current.Lookup("documentKey", "_id").Int64OK()
				if !ok {
					continue
				}
				if at, ok := acks.LoadAndDelete(id); ok {
					d := max(seen.Sub(at.(time.Time)), 0)
					mu.Lock()
					delays = append(delays, d)
					mu.Unlock()
				}
			}
			_ = cs.Close(context.Background())
		}
	}()

	pad := strings.Repeat("x", 1000)
	var seq atomic.Int64 // _ids, unique across workers and rounds
	insertOp := func(w int, watched bool) opFunc {
		coll := mcs[w%len(mcs)].Database("bench").Collection(changesCollection)
		return func(ctx context.Context) error {
			id := seq.Add(1)
			if watched {
				id |= 1 << 62
				active.Store(time.Now().UnixNano())
			}
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: pad}}); err != nil {
				return err
			}
			if watched && recent() {
				acks.Store(id, time.Now())
			}
			return nil
		}
	}
	err = runPhase(ctx, cfg, rep, want, []workload{
		{"changesUnwatched", "server-changes", func(w int) opFunc { return insertOp(w, false) }},
		{"changesWatched", "server-changes", func(w int) opFunc { return insertOp(w, true) }},
	})
	if err != nil {
		return err
	}
	if e, ok := watchErr.Load().(error); ok {
		return fmt.Errorf("changes: the change stream failed: %w", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(delays) == 0 {
		if want("changesWatched") {
			return fmt.Errorf("changes: the stream saw no event while changesWatched ran")
		}
		return nil
	}
	slices.Sort(delays)
	pct := func(p float64) float64 { return float64(delays[int(p*float64(len(delays)-1))]) / 1e6 }
	rep.Changes = &changesReport{Events: int64(len(delays)), P50MS: pct(0.50), P99MS: pct(0.99)}
	progress("changes: %d events, write-ack to event p50 %.2f ms, p99 %.2f ms", len(delays), rep.Changes.P50MS, rep.Changes.P99MS)
	return nil
}
