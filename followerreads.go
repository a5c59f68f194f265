package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/wire"
)

// Follower reads. A standby answers a read whose read preference allows
// a secondary (engine.FollowerRead) from its own replica: a read-only
// store over the node's applied state and an engine that serves reads
// only. The replica has applied a prefix of the cluster's log, so such a
// read sees a state the cluster was in, possibly behind the writer's (a
// stale read, as from a MongoDB secondary; Cosmos DB's eventual and
// consistent-prefix levels), and keeps working while no writer is known.
// The catalog the store holds in memory is reloaded whenever the replica
// applied a change under catalogPrefix (cluster.Node.Generation).
//
// With access control on, reads are forwarded to the writer as before:
// a client authenticates over its forwarded connection, which the
// standby's own engine does not see.

// catalogPrefix is the key prefix of engine/store's catalog.
var catalogPrefix = []byte("m/")

// follower is a standby's read-only view of its replica.
type follower struct {
	mu  sync.Mutex // serializes refreshes
	st  *store.Store
	eng *engine.Engine
	gen uint64 // the replica's generation the catalog was loaded at
}

// errStandbyWrite refuses a write through a standby's read-only view.
var errStandbyWrite = errors.New("this node is a standby of its cluster: its own replica is read only")

// followerReads is whether standbys answer reads from their replicas:
// not with access control (see above), and not when the default
// consistency is strong or bounded staleness (Cosmos DB's levels that
// promise every replica's reads the latest or nearly latest writes):
// then the writer answers them, with its checks and charges.
func (h *clusterHandler) followerReads() bool {
	switch h.o.defaultConsistency {
	case "strong", "bounded":
		return false
	}
	return !h.o.auth && h.o.rootUser == ""
}

// follower opens the standby's view on first use.
func (h *clusterHandler) follower() (*follower, error) {
	if f := h.reader.Load(); f != nil {
		return f, nil
	}
	h.readerMu.Lock()
	defer h.readerMu.Unlock()
	if f := h.reader.Load(); f != nil {
		return f, nil
	}
	var kvs kv.DB
	if h.groups != nil {
		kvs = h.groups.routed(nil) // reads every group's keys
	} else {
		r, err := h.node.KV(dataGroup)
		if err != nil {
			return nil, err
		}
		kvs = r
	}
	gen := h.node.Generation(dataGroup)
	st, err := store.Open(store.Options{KV: readOnlyKV{kvs}, Logger: h.logger, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("opening the replica to read: %w", err)
	}
	cfg := h.o.engineConfig(storage.Local(st), h.logger, h.conns, h.argv, nil, h.port)
	cfg.ReadOnly = true
	cfg.RootUser = ""
	if h.groups != nil {
		cfg.Moves = h.groups.moveHistory // config.locks and config.changelog from the replica
	}
	f := &follower{st: st, eng: engine.New(cfg), gen: gen}
	h.reader.Store(f)
	return f, nil
}

// serve answers req from the replica, reloading the catalog first if
// the replica changed it.
func (f *follower) serve(ctx context.Context, h *clusterHandler, ch wire.ConnHandler, req *wire.Request) []byte {
	f.mu.Lock()
	if g := h.node.Generation(dataGroup); g != f.gen {
		if err := f.st.Refresh(); err != nil {
			h.logger.Warn("reloading the replica's catalog", "err", err)
		} else {
			f.gen = g
		}
	}
	f.mu.Unlock()
	return ch.Handle(ctx, req)
}

func (f *follower) close() {
	f.eng.Close()
	_ = f.st.Close()
}

// readOnlyKV is a kv.DB whose transactions and batches write nothing.
type readOnlyKV struct{ kv.DB }

func (r readOnlyKV) NewTransaction(bool) kv.Txn { return readOnlyTxn{r.DB.NewTransaction(false)} }

func (r readOnlyKV) View(fn func(kv.Txn) error) error {
	return r.DB.View(func(t kv.Txn) error { return fn(readOnlyTxn{t}) })
}

func (r readOnlyKV) NewWriteBatch() kv.WriteBatch { return readOnlyBatch{} }

// Close leaves the replica open: the node owns it.
func (r readOnlyKV) Close() error { return nil }

type readOnlyTxn struct{ kv.Txn }

func (readOnlyTxn) Set(_, _ []byte) error { return errStandbyWrite }
func (readOnlyTxn) Delete([]byte) error   { return errStandbyWrite }

type readOnlyBatch struct{}

func (readOnlyBatch) Set(_, _ []byte) error { return errStandbyWrite }
func (readOnlyBatch) Delete([]byte) error   { return errStandbyWrite }
func (readOnlyBatch) Flush() error          { return nil }
func (readOnlyBatch) Cancel()               {}
