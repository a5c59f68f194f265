package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parsecdb/parsec/cluster"
	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/engine/kv"
)

// What the replica moves show (balancer.go moves them).
//
// While a move's new replica catches up, the writer asks the target node
// every copyPollEvery how much its replica copied in (the peer request
// copyProgress, cluster.CopyProgress): the bytes of the snapshot its
// restore took in, keys and values with their lengths (the snapshot is
// received whole first, then restored), plus the bytes of the log
// entries it applied, the batches' keys and values as proposed (a
// replica catching up from the log, not a snapshot, copies those). The
// last answer is the move's bytesCopied, kept in the writer's memory:
// balancerStatus, serverStatus, GetPartitionStats and config.locks on
// the writer show it; a standby, which reads the catalog's move records
// only, says it is the writer's to know.
//
// Every finished move, and every failed attempt at one, is recorded in
// the catalog: m/gmovelog/<time ns:8><group:8> -> a BSON
// engine.MoveRecord, written in the commit that ends the move (or, for a
// failure, in one of its own: once per move and error text, at most
// maxFailuresPerMove per move, since a round retries every second). The
// newest moveLogKeep are kept. config.changelog shows them on any node.

var moveLogPrefix = []byte("m/gmovelog/")

// errRecorded: the failure is in the move log already.
var errRecorded = errors.New("recorded already")

const (
	copyPollEvery      = 500 * time.Millisecond
	moveLogKeep        = 1000
	maxFailuresPerMove = 10
)

func moveLogKey(at time.Time, group uint64) []byte {
	k := binary.BigEndian.AppendUint64(bytes.Clone(moveLogPrefix), uint64(at.UnixNano()))
	return binary.BigEndian.AppendUint64(k, group)
}

// watchCopy asks cur's target every copyPollEvery how much its replica
// copied in, until the function it returns is called, which asks a
// last time.
func (b *balancer) watchCopy(ctx context.Context, cur *groupMove) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(copyPollEvery)
		defer t.Stop()
		for {
			b.readCopied(wctx, cur)
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
		b.readCopied(ctx, cur)
	}
}

// readCopied asks cur's target how much its replica copied in (nothing
// changes when it does not answer within a second).
func (b *balancer) readCopied(ctx context.Context, cur *groupMove) {
	var p cluster.CopyProgress
	if cur.to == b.gs.h.self {
		p = b.gs.h.node.CopyProgress(cur.group)
	} else {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var err error
		if p, err = b.gs.peers.CopyProgress(actx, cur.to, cur.group); err != nil {
			return
		}
	}
	b.mu.Lock()
	cur.copied = p.Bytes()
	b.mu.Unlock()
}

func (b *balancer) copiedSoFar(cur *groupMove) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return cur.copied
}

// moveRecord is cur's record for the move log: finished (failure nil)
// or failed.
func (b *balancer) moveRecord(w *writer, cur *groupMove, g partitionGroup, failure error) engine.MoveRecord {
	b.mu.Lock()
	r := engine.MoveRecord{Time: time.Now(), Server: int64(b.gs.h.self), Group: int64(cur.group),
		From: int64(cur.from), To: int64(cur.to), Started: cur.started, PartitionBytes: cur.bytes, BytesCopied: cur.copied,
		Min: bson.D{}, Max: bson.D{}, Partitions: []string{}}
	if failure != nil {
		r.Phase, r.Err = cur.phase, failure.Error()
	}
	b.mu.Unlock()
	if st := w.open.Load(); st != nil && g.id != 0 {
		if c := st.CollectionByID(g.coll); c != nil {
			r.NS = c.Namespace()
			r.Min, r.Max, r.Partitions = engine.GroupChunk(c, g.min, g.max)
		}
	}
	return r
}

// writeMoveLog adds r to the move log in tx and drops the oldest records
// beyond moveLogKeep.
func writeMoveLog(tx kv.Txn, r engine.MoveRecord) error {
	v, err := bson.Marshal(r)
	if err != nil {
		return err
	}
	if err := tx.Set(moveLogKey(r.Time, uint64(r.Group)), v); err != nil {
		return err
	}
	var keys [][]byte
	it := tx.NewIterator(kv.IterOptions{Prefix: moveLogPrefix})
	for it.Rewind(); it.Valid(); it.Next() {
		keys = append(keys, bytes.Clone(it.Item().Key()))
	}
	it.Close()
	for i := 0; i < len(keys)-moveLogKeep; i++ {
		if err := tx.Delete(keys[i]); err != nil {
			return err
		}
	}
	return nil
}

// recordFailure records a failed attempt at move cur: once per move and
// error text, at most maxFailuresPerMove per move (the catalog's records
// decide, so a writer that follows another writes no record twice).
func (b *balancer) recordFailure(w *writer, cur *groupMove, failure error) {
	gs := b.gs
	if gs.h.cur.Load() != w {
		return // no longer the writer: its catalog commits are refused
	}
	id := fmt.Sprintf("%d/%d/%d", cur.group, cur.started.UnixMilli(), cur.to)
	text := failure.Error()
	b.mu.Lock()
	if b.failures == nil {
		b.failures = map[string]map[string]bool{}
	}
	seen := b.failures[id]
	known := seen[text] || len(seen) >= maxFailuresPerMove
	b.mu.Unlock()
	if known {
		return
	}
	g, _ := gs.registry().byID(cur.group)
	r := b.moveRecord(w, cur, g, failure)
	// The groups' lock, which a move's recording holds: two commits
	// writing the log at once would fail each other's guards.
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var texts map[string]bool
	err := gs.catalogTxn(w, func(tx kv.Txn) error {
		var err error
		texts, err = addFailure(tx, r)
		return err
	})
	if err != nil && !errors.Is(err, errRecorded) {
		gs.h.logger.Warn("recording a failed replica move", "group", cur.group, "err", err)
		return
	}
	b.mu.Lock()
	b.failures[id] = texts
	b.mu.Unlock()
}

// addFailure writes failed attempt r to the move log in tx unless the
// log holds its error text for the same move already, or
// maxFailuresPerMove of them (errRecorded); texts are the move's error
// texts in the log then.
func addFailure(tx kv.Txn, r engine.MoveRecord) (texts map[string]bool, err error) {
	texts = map[string]bool{}
	err = scanPrefix(tx, moveLogPrefix, func(_, v []byte) error {
		var o engine.MoveRecord
		if bson.Unmarshal(v, &o) == nil && o.Err != "" && o.Group == r.Group && o.To == r.To && o.Started.UnixMilli() == r.Started.UnixMilli() {
			texts[o.Err] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if texts[r.Err] || len(texts) >= maxFailuresPerMove {
		return texts, errRecorded
	}
	texts[r.Err] = true
	return texts, writeMoveLog(tx, r)
}

// moveHistory reads the replica moves from this node's catalog replica
// (engine.Config.Moves): those under way, with the phase and bytes
// copied of those this node makes as the writer (phase "recorded": one
// it has not begun or resumed yet), and the move log.
func (gs *groups) moveHistory() ([]engine.MoveStatus, []engine.MoveRecord, error) {
	kvs, err := gs.h.node.KV(dataGroup)
	if err != nil {
		return nil, nil, err
	}
	var st balanceState
	var done []engine.MoveRecord
	err = kvs.View(func(t kv.Txn) error {
		var err error
		if st, err = readBalanceState(t); err != nil {
			return err
		}
		return scanPrefix(t, moveLogPrefix, func(k, v []byte) error {
			var r engine.MoveRecord
			if err := bson.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("move log record %x: %w", k, err)
			}
			done = append(done, r)
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	tracked := map[uint64]engine.MoveStatus{}
	if gs.bal != nil {
		for _, m := range gs.bal.moves() {
			tracked[m.Group] = m
		}
	}
	reg := gs.registry()
	writer := gs.h.cur.Load() != nil
	current := make([]engine.MoveStatus, 0, len(st.moves))
	for _, m := range st.moves {
		if t, ok := tracked[m.group]; ok && t.To == m.to {
			current = append(current, t)
			continue
		}
		ms := engine.MoveStatus{Group: m.group, From: m.from, To: m.to, Started: m.started, PartitionBytes: m.bytes}
		if writer {
			// Recorded, not (yet) being made: just begun, or waiting
			// for a round that resumes it (one a node does not answer).
			ms.Tracked, ms.Phase = true, "recorded"
		}
		if g, ok := reg.byID(m.group); ok {
			ms.Coll, ms.Min, ms.Max = g.coll, g.min, g.max
		}
		current = append(current, ms)
	}
	return current, done, nil
}
