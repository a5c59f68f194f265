package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The elastic section moves a partition's replica between nodes of a
// cluster: three `parsec serve` nodes on 127.0.0.1-3 hold an unsharded
// collection of elasticBytes (one partition, one Raft group) and a small
// one; nodes 4 and 5 join empty while the balancer is stopped; then
// removeShard drains one of the three (not the writer), so the balancer
// moves its replica of the large partition to a new node, by a snapshot
// of the group:
//
//	move rate    with nothing else running: the partition's bytes over
//	             the move's duration, from the move's record to the
//	             registry naming the new node (the writer logs it); goal
//	             >= elasticMoveGoal MB/s
//	foreground   elasticWorkers clients, half inserting into and half
//	             reading by _id the small collection, for elasticBefore
//	             (the balancer stopped), then while a second drain moves
//	             the large partition's replica again; goal: ops/s during
//	             that move >= elasticForegroundGoal x before
//
//	floor        the first move's snapshot stream (the leader's log) and
//	             Badger alone taking in the same documents, measured in
//	             the same run: dragonboat restores a snapshot only once
//	             it received all of it, so no move is shorter than both
//	             (Badger alone again once the nodes are stopped: idle)
//
//	go run ./integration/bench -only elastic
const (
	elasticWorkload       = "elastic"
	elasticBytes          = 100 << 20
	elasticDocBytes       = 1000
	elasticWorkers        = 8
	elasticBefore         = 3 * time.Second
	elasticMoveGoal       = 50.0
	elasticForegroundGoal = 0.7
)

// elasticReport is the section's figures.
type elasticReport struct {
	PartitionBytes int64   `json:"partition_bytes"`
	MoveSeconds    float64 `json:"move_seconds"`
	MoveMBPerS     float64 `json:"move_mb_per_s"`
	// LoadedMoveSeconds is the second move's, under the foreground load.
	LoadedMoveSeconds float64 `json:"move_seconds_under_load"`
	// The first move's catch-up in parts: the leader's stream of the
	// snapshot (the first, and how many times it streamed it), the
	// target's restore, and Badger alone taking in the same documents
	// (each with two small records) in a database of its own: with
	// dragonboat's snapshots, which are received whole before they are
	// restored, the move takes at least the stream and that.
	StreamSeconds      float64 `json:"stream_seconds"`
	Streams            int     `json:"streams"`
	RestoreSeconds     float64 `json:"restore_seconds"`
	BadgerAloneSeconds float64 `json:"badger_alone_seconds"`
	FloorMBPerS        float64 `json:"floor_mb_per_s"`
	// The same once the nodes are stopped.
	BadgerIdleSeconds float64 `json:"badger_alone_idle_seconds"`
	IdleFloorMBPerS   float64 `json:"idle_floor_mb_per_s"`
	ForegroundBefore  float64 `json:"foreground_ops_per_s_before"`
	ForegroundDuring  float64 `json:"foreground_ops_per_s_during_move"`
	ForegroundRatio   float64 `json:"foreground_ratio"`
}

var snapshotRE = regexp.MustCompile(`msg="(streamed|restored) a snapshot of a group" group=\d+ applied=(\d+) records=\d+ bytes=(\d+) .*duration=(\S+)`)

var movedRE = regexp.MustCompile(`msg="moved a partition's replica" group=(\d+) from=\d+ to=\d+ bytes=(\d+) duration=(\S+)(?: bytesCopied=(\d+))?(?: phases="([^"]*)")?`)

func elasticPhase(ctx context.Context, cfg config, rep *report) (err error) {
	bin, root, cleanup, err := clusterScaffold("elastic")
	if err != nil {
		return err
	}
	defer cleanup()
	var procs []*serverProc
	defer func() {
		if err != nil {
			// The nodes' last lines say why a move did not start or end.
			for i, p := range procs {
				lines := strings.Split(strings.TrimSpace(p.logText()), "\n")
				progress("elastic: node %d's last log lines:\n%s", i+1, strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
		endProcs(procs, cfg.CPUProfile != "")
	}()
	// With -cpuprofile every node writes its profile, from its start to
	// the end of the section: <path>.elasticNode1-0.<ext> and so on.
	profileArgs := func(id int) []string {
		if cfg.CPUProfile == "" {
			return nil
		}
		return []string{"--cpuprofile", profilePath(cfg.CPUProfile, fmt.Sprintf("elasticNode%d", id), 0)}
	}
	clientPort, err := loopbackPort()
	if err != nil {
		return err
	}
	raftPort, err := loopbackPort()
	if err != nil {
		return err
	}
	var members, hosts []string
	for i := 1; i <= 5; i++ {
		members = append(members, fmt.Sprintf("%d=127.0.0.%d:%d", i, i, raftPort))
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d:%d", i, clientPort))
	}
	for i := range 3 {
		dir := filepath.Join(root, fmt.Sprintf("node%d", i+1))
		p, err := startServerProc(bin, dir, hosts[i], append([]string{"serve", "--node-id", strconv.Itoa(i + 1),
			"--initial-members", strings.Join(members[:3], ","), "--listen", hosts[i], "--data-dir", dir, "--http", ""}, profileArgs(i+1)...), "cluster node started")
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	cl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + strings.Join(hosts[:3], ",") + "/?replicaSet=parsec").SetMaxPoolSize(elasticWorkers + 8))
	if err != nil {
		return err
	}
	defer func() { _ = cl.Disconnect(context.Background()) }()
	db := cl.Database("bench")
	big, small := db.Collection("big"), db.Collection("small")

	docs := elasticBytes / elasticDocBytes
	progress("elastic: loading %d documents of %d bytes", docs, elasticDocBytes)
	pad := strings.Repeat("x", elasticDocBytes-40)
	var next atomic.Int64
	var wg sync.WaitGroup
	var loadErr atomic.Value
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := next.Add(500) - 500
				if from >= int64(docs) || ctx.Err() != nil {
					return
				}
				batch := make([]any, 0, 500)
				for i := from; i < min(from+500, int64(docs)); i++ {
					batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}})
				}
				if _, err := big.InsertMany(ctx, batch); err != nil {
					loadErr.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if e, ok := loadErr.Load().(error); ok {
		return fmt.Errorf("elastic: loading: %w", e)
	}
	const smallDocs = 10_000
	batch := make([]any, 0, smallDocs)
	for i := range smallDocs {
		batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i}})
	}
	if _, err := small.InsertMany(ctx, batch); err != nil {
		return err
	}
	writer, err := clusterWriter(ctx, cl, hosts[:3])
	if err != nil {
		return err
	}
	// The balancer waits while node 4 joins and the load before is
	// measured; it moves nothing before the drain.
	admin := cl.Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStop", Value: 1}}).Err(); err != nil {
		return err
	}
	for id := 4; id <= 5; id++ {
		dir := filepath.Join(root, fmt.Sprintf("node%d", id))
		p, err := startServerProc(bin, dir, hosts[id-1], append([]string{"serve", "--node-id", strconv.Itoa(id), "--raft-address", fmt.Sprintf("127.0.0.%d:%d", id, raftPort),
			"--join", hosts[writer-1], "--listen", hosts[id-1], "--data-dir", dir, "--http", ""}, profileArgs(id)...), "cluster node started")
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	var drains []int // two of nodes 1-3, not the writer
	for n := 1; n <= 3 && len(drains) < 2; n++ {
		if n != writer {
			drains = append(drains, n)
		}
	}
	// bigMove drains node and returns the duration and bytes of the large
	// partition's move, once the writer logs its end (the nth such line),
	// calling started when the move shows in balancerStatus.
	bigMove := func(node, nth int, started func()) (time.Duration, int64, error) {
		progress("elastic: draining node %d; the balancer moves its replicas to nodes 4 and 5", node)
		if err := admin.RunCommand(ctx, bson.D{{Key: "removeShard", Value: fmt.Sprintf("node%d", node)}}).Err(); err != nil {
			return 0, 0, fmt.Errorf("elastic: removeShard: %w", err)
		}
		if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStart", Value: 1}}).Err(); err != nil {
			return 0, 0, err
		}
		deadline := time.Now().Add(5 * time.Minute)
		for seen := false; !seen; time.Sleep(10 * time.Millisecond) {
			var st struct {
				Moves []struct {
					Bytes int64 `bson:"partitionBytes"`
				} `bson:"moves"`
			}
			if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStatus", Value: 1}}).Decode(&st); err == nil {
				for _, m := range st.Moves {
					seen = seen || m.Bytes > elasticBytes/2
				}
			}
			if time.Now().After(deadline) {
				return 0, 0, errors.New("elastic: the large partition's move did not start within 5 minutes")
			}
		}
		started()
		for ; ; time.Sleep(10 * time.Millisecond) {
			var big [][]string
			for _, m := range movedRE.FindAllStringSubmatch(procs[writer-1].logText(), -1) {
				if b, _ := strconv.ParseInt(m[2], 10, 64); b > elasticBytes/2 {
					big = append(big, m)
				}
			}
			if len(big) >= nth {
				m := big[nth-1]
				progress("elastic: moved a partition of %s bytes in %s, %s bytes copied (%s)", m[2], m[3], m[4], m[5])
				d, err := time.ParseDuration(m[3])
				b, _ := strconv.ParseInt(m[2], 10, 64)
				return d, b, err
			}
			if time.Now().After(deadline) {
				return 0, 0, errors.New("elastic: the large partition's move did not end within 5 minutes")
			}
		}
	}
	// The move with nothing else running; the drain is finished (the
	// node leaves) before the next one starts.
	d, bytes, err := bigMove(drains[0], 1, func() {})
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var r struct {
			State string `bson:"state"`
		}
		if err := admin.RunCommand(ctx, bson.D{{Key: "removeShard", Value: fmt.Sprintf("node%d", drains[0])}}).Decode(&r); err == nil && r.State == "completed" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("elastic: node %d was not drained within 5 minutes", drains[0])
		}
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStop", Value: 1}}).Err(); err != nil {
		return err
	}

	// The foreground load, counted per window.
	var ops atomic.Int64
	stop := make(chan struct{})
	var fg sync.WaitGroup
	for w := range elasticWorkers {
		fg.Add(1)
		go func() {
			defer fg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			id := int64(smallDocs + w*10_000_000)
			for {
				select {
				case <-stop:
					return
				default:
				}
				octx, cancel := context.WithTimeout(ctx, 20*time.Second)
				var err error
				if w%2 == 0 {
					id++
					_, err = small.InsertOne(octx, bson.D{{Key: "_id", Value: id}, {Key: "v", Value: id}})
				} else {
					err = small.FindOne(octx, bson.D{{Key: "_id", Value: rng.IntN(smallDocs)}}).Err()
				}
				cancel()
				if err == nil {
					ops.Add(1)
				}
			}
		}()
	}
	var stopOnce sync.Once
	stopLoad := func() {
		stopOnce.Do(func() {
			close(stop)
			fg.Wait()
		})
	}
	defer stopLoad()
	time.Sleep(time.Second) // warm up
	before := ops.Load()
	time.Sleep(elasticBefore)
	beforeRate := float64(ops.Load()-before) / elasticBefore.Seconds()

	var startOps int64
	var start time.Time
	d2, _, err := bigMove(drains[1], 2, func() { start, startOps = time.Now(), ops.Load() })
	if err != nil {
		return err
	}
	window := time.Since(start)
	duringRate := float64(ops.Load()-startOps) / window.Seconds()
	stopLoad() // nothing else runs while Badger alone is measured
	r := &elasticReport{PartitionBytes: bytes, MoveSeconds: d.Seconds(), MoveMBPerS: float64(bytes) / (1 << 20) / d.Seconds(),
		LoadedMoveSeconds: d2.Seconds(), ForegroundBefore: beforeRate, ForegroundDuring: duringRate}
	if beforeRate > 0 {
		r.ForegroundRatio = duringRate / beforeRate
	}
	rep.Elastic = r
	for _, line := range strings.Split(procs[writer-1].logText(), "\n") {
		if strings.Contains(line, "moved a partition's replica") {
			progress("elastic: %s", line)
		}
	}
	// Each node's snapshots streamed and restored: the catch-up's parts.
	// The first move's snapshot is the large one with the lowest index.
	type snap struct {
		restored bool
		applied  int64
		seconds  float64
	}
	var snaps []snap
	first := int64(-1)
	for i, p := range procs {
		for _, line := range strings.Split(p.logText(), "\n") {
			if !strings.Contains(line, "a snapshot of a group") {
				continue
			}
			progress("elastic: node %d: %s", i+1, line)
			m := snapshotRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			applied, _ := strconv.ParseInt(m[2], 10, 64)
			b, _ := strconv.ParseInt(m[3], 10, 64)
			d, _ := time.ParseDuration(m[4])
			if b > elasticBytes/2 {
				snaps = append(snaps, snap{m[1] == "restored", applied, d.Seconds()})
				if m[1] == "restored" && (first < 0 || applied < first) {
					first = applied
				}
			}
		}
	}
	for _, sn := range snaps {
		switch {
		case sn.applied != first:
		case sn.restored:
			r.RestoreSeconds = sn.seconds
		default:
			if r.Streams++; r.Streams == 1 {
				r.StreamSeconds = sn.seconds
			}
		}
	}
	shape := ingestShape{docs: docs, docBytes: elasticDocBytes, extra: 2, extraBytes: 40}
	alone, err := badgerIngest(shape)
	if err != nil {
		return err
	}
	// Again once the nodes are gone: what Badger does on this machine
	// with nothing else running.
	endProcs(procs, cfg.CPUProfile != "")
	idle, err := badgerIngest(shape)
	if err != nil {
		return err
	}
	r.BadgerAloneSeconds, r.BadgerIdleSeconds = alone.Seconds(), idle.Seconds()
	mb := float64(bytes) / (1 << 20)
	if r.StreamSeconds > 0 {
		r.FloorMBPerS = mb / (r.StreamSeconds + r.BadgerAloneSeconds)
		r.IdleFloorMBPerS = mb / (r.StreamSeconds + r.BadgerIdleSeconds)
	}
	progress("elastic: the first move's catch-up: stream %.2f s (streamed %d times), restore %.2f s; Badger alone takes in the same documents in %.2f s beside the nodes, %.2f s without them: stream + that = %.2f s (%.1f MB/s at most), %.2f s (%.1f MB/s)",
		r.StreamSeconds, r.Streams, r.RestoreSeconds, r.BadgerAloneSeconds, r.BadgerIdleSeconds,
		r.StreamSeconds+r.BadgerAloneSeconds, r.FloorMBPerS, r.StreamSeconds+r.BadgerIdleSeconds, r.IdleFloorMBPerS)
	progress("elastic: moved %.1f MB in %.2f s (%.1f MB/s), under load in %.2f s; foreground %.0f ops/s before, %.0f during (%.2fx)",
		float64(bytes)/(1<<20), d.Seconds(), r.MoveMBPerS, d2.Seconds(), beforeRate, duringRate, r.ForegroundRatio)
	return nil
}

func elasticGoals(rep *report) {
	r := rep.Elastic
	if r == nil {
		return
	}
	g := goal{Name: fmt.Sprintf("elastic: moving a partition >= %.0f MB/s (ratio to it)", elasticMoveGoal), Workload: elasticWorkload, Min: 1, Ratio: r.MoveMBPerS / elasticMoveGoal}
	rep.Goals = append(rep.Goals, atLeast(g))
	g = goal{Name: fmt.Sprintf("elastic: foreground ops during the move >= %.1f x before", elasticForegroundGoal), Workload: elasticWorkload, Clients: elasticWorkers, Min: elasticForegroundGoal, Ratio: r.ForegroundRatio}
	rep.Goals = append(rep.Goals, atLeast(g))
}
