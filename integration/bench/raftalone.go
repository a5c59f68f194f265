package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lni/dragonboat/v4"
	dbconfig "github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/parsecdb/parsec/cluster"
)

// The Raft-alone part of the cluster section measures what dragonboat
// itself does on this machine with nothing of Parsec around it: three
// processes of this binary on 127.0.0.1, .2 and .3, each a NodeHost set
// up as a Parsec node sets up its own (tan log store, RTT 10 ms, an
// election after 20 RTTs, a heartbeat every 2, check-quorum and
// pre-vote), running one group whose state machine only counts what it
// applies. Node 1, once it leads, runs raftAloneProposers goroutines that
// propose entries of raftAloneEntryBytes in a loop (SyncPropose: each
// waits for its entry to be applied on the leader) for the section's
// -duration, in its own process: no client, no network hop before the
// proposal, no MongoDB command, no Badger write anywhere.
//
// Its rate is an upper bound on what any state machine on dragonboat
// can commit here with that many writers, and the section reports it
// against the single server's insertOne at the same concurrency.
const (
	raftAloneProposers  = 16
	raftAloneEntryBytes = 1200 // about an insertOne's batch of a 1 KB document
	raftAloneShard      = 1
)

// raftAloneReport is what the Raft-alone run measured.
type raftAloneReport struct {
	Proposers  int       `json:"proposers"`
	EntryBytes int       `json:"entry_bytes"`
	Ops        int64     `json:"ops"`
	OpsPerS    float64   `json:"ops_per_s"`
	PerNodeUS  []float64 `json:"cpu_per_op_per_node_us"`
	TotalUS    float64   `json:"cpu_per_op_us"`
	// VsSingleInsert is OpsPerS over the single server's insertOne at
	// the same concurrency in the same run.
	VsSingleInsert float64 `json:"vs_single_insert,omitempty"`
}

// raftNodeCommand is the first argument that makes this binary one node
// of the Raft-alone run instead of the bench.
const raftNodeCommand = "raft-alone-node"

var raftAloneResultRE = regexp.MustCompile(`raft-alone measured ops=(\d+) seconds=([0-9.]+)`)

// raftAlone runs the three processes, reads their CPU times around node
// 1's measured window and stops them.
func raftAlone(ctx context.Context, root string, duration time.Duration, cpuProfile string) (*raftAloneReport, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	port, err := loopbackPort()
	if err != nil {
		return nil, err
	}
	var members []string
	for i := 1; i <= 3; i++ {
		members = append(members, fmt.Sprintf("%d=127.0.0.%d:%d", i, i, port))
	}
	procs := make([]*serverProc, 3)
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.stop()
			}
		}
	}()
	// Nodes 2 and 3 first: node 1 starts its load as soon as it leads.
	for _, i := range []int{2, 3, 1} {
		args := []string{raftNodeCommand, "-id", strconv.Itoa(i), "-members", strings.Join(members, ","),
			"-dir", filepath.Join(root, fmt.Sprintf("raft%d", i))}
		ready := "raft-alone node started"
		if cpuProfile != "" {
			args = append(args, "-cpuprofile", profilePath(cpuProfile, fmt.Sprintf("raftAloneNode%d", i), 0))
		}
		if i == 1 {
			args = append(args, "-proposers", strconv.Itoa(raftAloneProposers), "-duration", duration.String())
			ready = "raft-alone measuring"
		}
		if procs[i-1], err = startServerProc(bin, "", "", args, ready); err != nil {
			return nil, fmt.Errorf("raft alone: node %d: %w", i, err)
		}
	}
	before := make([]time.Duration, 3)
	for i, p := range procs {
		before[i] = processCPU(p.pid())
	}
	deadline := time.Now().Add(duration + time.Minute)
	var m []string
	for m == nil {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("raft alone: no result from node 1:\n%s", procs[0].logText())
		}
		time.Sleep(20 * time.Millisecond)
		m = raftAloneResultRE.FindStringSubmatch(procs[0].logText())
	}
	rep := &raftAloneReport{Proposers: raftAloneProposers, EntryBytes: raftAloneEntryBytes}
	rep.Ops, _ = strconv.ParseInt(m[1], 10, 64)
	secs, _ := strconv.ParseFloat(m[2], 64)
	if rep.Ops == 0 || secs == 0 {
		return nil, fmt.Errorf("raft alone: nothing committed:\n%s", procs[0].logText())
	}
	rep.OpsPerS = float64(rep.Ops) / secs
	for i, p := range procs {
		// Node 1 stops proposing before it prints the result, and the
		// others only follow it: what they used since is idle time.
		perOp := us(processCPU(p.pid())-before[i]) / float64(rep.Ops)
		rep.PerNodeUS = append(rep.PerNodeUS, perOp)
		rep.TotalUS += perOp
	}
	return rep, nil
}

// raftAloneNode is the main of one Raft-alone process.
func raftAloneNode(args []string) error {
	fs := flag.NewFlagSet(raftNodeCommand, flag.ContinueOnError)
	id := fs.Uint64("id", 0, "replica id")
	membersFlag := fs.String("members", "", "id=host:port,...")
	dir := fs.String("dir", "", "data directory")
	proposers := fs.Int("proposers", 0, "proposing goroutines (node 1)")
	duration := fs.Duration("duration", 3*time.Second, "measured time")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured window (node 1) or of the whole run (others, until SIGTERM)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	members := map[uint64]dragonboat.Target{}
	for _, m := range strings.Split(*membersFlag, ",") {
		k, v, ok := strings.Cut(m, "=")
		n, err := strconv.ParseUint(k, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("bad -members entry %q", m)
		}
		members[n] = v
	}
	if members[*id] == "" || *dir == "" {
		return errors.New("-id must name one of -members, and -dir is required")
	}
	cluster.QuietLogs()
	expert := dbconfig.GetDefaultExpertConfig()
	expert.LogDB = dbconfig.GetTinyMemLogDBConfig()
	expert.LogDB.KVWriteBufferSize = 1 << 20
	expert.LogDBFactory = tan.Factory
	expert.TransportFactory = cluster.TransportFactory{}
	nh, err := dragonboat.NewNodeHost(dbconfig.NodeHostConfig{DeploymentID: 1, NodeHostDir: *dir, WALDir: *dir,
		RTTMillisecond: 10, RaftAddress: members[*id], Expert: expert})
	if err != nil {
		return err
	}
	defer nh.Close()
	rc := dbconfig.Config{ShardID: raftAloneShard, ReplicaID: *id, ElectionRTT: 20, HeartbeatRTT: 2,
		CheckQuorum: true, PreVote: true, SnapshotEntries: 10000, CompactionOverhead: 5000}
	if err := nh.StartOnDiskReplica(members, false, func(uint64, uint64) sm.IOnDiskStateMachine { return &countingSM{} }, rc); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "raft-alone node started")
	if *proposers == 0 {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		<-term
		stop()
		return nil
	}
	// Lead, then load.
	for deadline := time.Now().Add(30 * time.Second); ; {
		leader, _, ok, err := nh.GetLeaderID(raftAloneShard)
		if err == nil && ok && leader == *id {
			break
		}
		if err == nil && ok {
			_ = nh.RequestLeaderTransfer(raftAloneShard, *id)
		}
		if time.Now().After(deadline) {
			return errors.New("node did not become the leader within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	session := nh.GetNoOPSession(raftAloneShard)
	payload := make([]byte, raftAloneEntryBytes)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	run := func(d time.Duration) (int64, time.Duration, error) {
		var ops atomic.Int64
		var first atomic.Value
		var wg sync.WaitGroup
		start := time.Now()
		stop := start.Add(d)
		for range *proposers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := nh.SyncPropose(ctx, session, payload)
					cancel()
					if err != nil {
						first.CompareAndSwap(nil, err)
						return
					}
					ops.Add(1)
				}
			}()
		}
		wg.Wait()
		if err, _ := first.Load().(error); err != nil {
			return 0, 0, err
		}
		return ops.Load(), time.Since(start), nil
	}
	if _, _, err := run(500 * time.Millisecond); err != nil { // warmup
		return err
	}
	stop, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "raft-alone measuring")
	ops, took, err := run(*duration)
	stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "raft-alone measured ops=%d seconds=%.3f\n", ops, took.Seconds())
	select {}
}

// countingSM is an on-disk state machine that keeps nothing but how
// many entries it applied.
type countingSM struct{ applied, count uint64 }

func (s *countingSM) Open(<-chan struct{}) (uint64, error) { return s.applied, nil }

func (s *countingSM) Update(entries []sm.Entry) ([]sm.Entry, error) {
	for i := range entries {
		s.count++
		entries[i].Result = sm.Result{Value: s.count}
	}
	s.applied = entries[len(entries)-1].Index
	return entries, nil
}

func (s *countingSM) Lookup(any) (any, error) { return s.count, nil }
func (s *countingSM) Sync() error             { return nil }

func (s *countingSM) PrepareSnapshot() (any, error) { return s.count, nil }

func (s *countingSM) SaveSnapshot(ctx any, w io.Writer, _ <-chan struct{}) error {
	_, err := w.Write(binary.BigEndian.AppendUint64(nil, ctx.(uint64)))
	return err
}

func (s *countingSM) RecoverFromSnapshot(r io.Reader, _ <-chan struct{}) error {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	s.count = binary.BigEndian.Uint64(b[:])
	return nil
}

func (s *countingSM) Close() error { return nil }
