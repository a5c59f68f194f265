package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// The cluster section compares a three-node cluster (three `parsec serve`
// processes on 127.0.0.1, .2 and .3 of this machine, one Raft group) with
// a single-node server (one `parsec serve` process), in the same run and
// through the same client (the replica-set URI for the cluster):
//
//	clusterSingleFind    findById on the single server
//	clusterFind          findById on the cluster (the writer answers)
//	clusterSingleInsert  insertOne on the single server
//	clusterInsert        insertOne on the cluster (a Raft commit each)
//
// interleaved in rounds, each round after a warmup of its own; the CPU
// time per operation of every server process is read from
// /proc/<pid>/stat around each round. Then the writer is killed
// clusterFailovers times while clients insert, and the gap from the last
// write acknowledged before each kill to the first one sent after it and
// acknowledged is reported (p50, p99, max). Last, with the section's
// servers stopped, clusterRaftAlone runs dragonboat alone on the same
// three addresses (raftalone.go): what consensus itself commits here,
// against the single server's insertOne.
//
// Goals: the cluster's point reads at least 0.7 times the single
// server's, its inserts at least 0.35 times.
//
//	make bench ONLY=cluster
var clusterWorkloads = []string{"clusterSingleFind", "clusterFind", "clusterSingleInsert", "clusterInsert", "clusterFailover", "clusterRaftAlone"}

const clusterFailovers = 5

var clusterGoals = []struct {
	workload, versus string
	min              float64
}{
	{"clusterFind", "clusterSingleFind", 0.7},
	{"clusterInsert", "clusterSingleInsert", 0.35},
}

// clusterReport is the section's figures beyond the common results.
type clusterReport struct {
	// CPU is the CPU time per operation of each server process, per
	// workload and concurrency.
	CPU []clusterCPU `json:"cpu_per_op"`
	// Failover gaps in milliseconds, one per kill of the writer.
	GapsMS []float64 `json:"failover_gaps_ms"`
	GapP50 float64   `json:"failover_gap_p50_ms"`
	GapP99 float64   `json:"failover_gap_p99_ms"`
	// RaftAlone is dragonboat alone on the machine (raftalone.go).
	RaftAlone *raftAloneReport `json:"raft_alone,omitempty"`
}

type clusterCPU struct {
	Workload string `json:"workload"`
	Clients  int    `json:"clients"`
	// PerNodeUS is each process's CPU time per operation: the single
	// server's alone, or the cluster's nodes 1, 2 and 3.
	PerNodeUS []float64 `json:"per_node_us"`
	TotalUS   float64   `json:"total_us"`
	ClientUS  float64   `json:"client_us"`
	Writer    int       `json:"writer,omitempty"` // the cluster's writer (node id)
}

// serverProc is one `parsec serve` process of the section.
type serverProc struct {
	cmd    *exec.Cmd
	dir    string
	client string
	args   []string
	mu     sync.Mutex
	log    strings.Builder
	exited chan struct{}
}

// startServerProc runs bin with args and waits for ready in its log.
func startServerProc(bin, dir, client string, args []string, ready string) (*serverProc, error) {
	p := &serverProc{dir: dir, client: client, args: args}
	return p, p.start(bin, ready)
}

func (p *serverProc) start(bin, ready string) error {
	cmd := exec.Command(bin, p.args...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		once := sync.Once{}
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if strings.Contains(sc.Text(), ready) {
				once.Do(func() { close(started) })
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		_ = cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-started:
		return nil
	case <-p.exited:
		return fmt.Errorf("%s exited at start:\n%s", bin, p.logText())
	case <-time.After(30 * time.Second):
		p.kill()
		return fmt.Errorf("%s did not start in 30 s:\n%s", bin, p.logText())
	}
}

func (p *serverProc) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.cmd = nil
}

// stop ends the process with SIGTERM (so that it writes its CPU
// profile), and kills it if it has not exited in 30 s.
func (p *serverProc) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
}

// endProcs ends every process: with SIGTERM when they profile (so that
// they write their profiles), else with SIGKILL. An ended one is left as
// it is.
func endProcs(procs []*serverProc, profiling bool) {
	for _, p := range procs {
		if profiling {
			p.stop()
		} else {
			p.kill()
		}
	}
}

func (p *serverProc) pid() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *serverProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// loopbackPort is a TCP port free on 127.0.0.1, .2, .3 and .4 at once.
func loopbackPort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{l}
		for _, host := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
			o, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				break
			}
			ls = append(ls, o)
		}
		for _, x := range ls {
			_ = x.Close()
		}
		if len(ls) == 4 {
			return port, nil
		}
	}
	return 0, errors.New("no port free on 127.0.0.1-4 (the cluster sections need those loopback addresses)")
}

// clusterScaffold is what a section running `parsec serve` processes
// on loopback addresses starts with: the binary and a directory for the
// nodes' data, both removed by cleanup.
func clusterScaffold(section string) (bin, root string, cleanup func(), err error) {
	if runtime.GOOS != "linux" {
		return "", "", nil, fmt.Errorf("%s: the section needs Linux (127.0.0.2-4 and /proc)", section)
	}
	if bin, err = buildParsec(); err != nil {
		return "", "", nil, err
	}
	if root, err = os.MkdirTemp("", "parsec-bench-"+section+"-"); err != nil {
		_ = os.RemoveAll(filepath.Dir(bin))
		return "", "", nil, err
	}
	return bin, root, func() { _ = os.RemoveAll(filepath.Dir(bin)); _ = os.RemoveAll(root) }, nil
}

func clusterPhase(ctx context.Context, cfg config, rep *report, want func(string) bool, tmpl template) (err error) {
	bin, root, cleanup, err := clusterScaffold("cluster")
	if err != nil {
		return err
	}
	defer cleanup()
	var procs []*serverProc
	defer func() { endProcs(procs, cfg.CPUProfile != "") }()
	// With -cpuprofile every server process writes its own profile, from
	// its start to the end of the section: <path>.clusterSingle-0.<ext>,
	// .clusterNode1-0 and so on.
	profileArgs := func(name string) []string {
		if cfg.CPUProfile == "" {
			return nil
		}
		return []string{"--cpuprofile", profilePath(cfg.CPUProfile, name, 0)}
	}

	singleDir := filepath.Join(root, "single")
	single, err := startServerProc(bin, singleDir, "", append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", singleDir, "--http", ""}, profileArgs("clusterSingle")...), "address=")
	if err != nil {
		return err
	}
	procs = append(procs, single)
	m := memoryAddrRE.FindStringSubmatch(single.logText())
	if m == nil {
		return fmt.Errorf("cluster: the single server's address is not in its log:\n%s", single.logText())
	}
	singleURI := "mongodb://" + m[1] + "/"

	clientPort, err := loopbackPort()
	if err != nil {
		return err
	}
	raftPort, err := loopbackPort()
	if err != nil {
		return err
	}
	var members, hosts []string
	for i := 1; i <= 3; i++ {
		members = append(members, fmt.Sprintf("%d=127.0.0.%d:%d", i, i, raftPort))
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d:%d", i, clientPort))
	}
	nodes := make([]*serverProc, 3)
	for i := range nodes {
		dir := filepath.Join(root, fmt.Sprintf("node%d", i+1))
		nodes[i], err = startServerProc(bin, dir, hosts[i], append([]string{"serve", "--node-id", strconv.Itoa(i + 1),
			"--initial-members", strings.Join(members, ","), "--listen", hosts[i], "--data-dir", dir, "--http", ""}, profileArgs(fmt.Sprintf("clusterNode%d", i+1))...), "cluster node started")
		if err != nil {
			return err
		}
		procs = append(procs, nodes[i])
	}
	clusterURI := "mongodb://" + strings.Join(hosts, ",") + "/?replicaSet=parsec"
	progress("cluster: single server on %s, cluster on %s", m[1], strings.Join(hosts, ","))

	workers := slices.Max(cfg.Clients)
	singleCl, err := connect(cfg.ClientMode, singleURI, workers)
	if err != nil {
		return err
	}
	clusterCl, err := connect(cfg.ClientMode, clusterURI, workers)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range append(singleCl, clusterCl...) {
			_ = c.Disconnect(context.Background())
		}
	}()
	pick := func(cs []*mongo.Client, w int, name string) *mongo.Collection {
		return cs[w%len(cs)].Database("bench").Collection(name)
	}
	for _, cs := range [][]*mongo.Client{singleCl, clusterCl} {
		if want("clusterSingleFind") || want("clusterFind") {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			err := preloadServer(pctx, pick(cs, 0, "find"), tmpl, cfg.Docs)
			cancel()
			if err != nil {
				return fmt.Errorf("cluster: %w", err)
			}
		}
	}
	writer, err := clusterWriter(ctx, clusterCl[0], hosts)
	if err != nil {
		return err
	}
	progress("cluster: %d documents preloaded on each; the writer is node %d", cfg.Docs, writer)

	type wl struct {
		name  string
		procs []*serverProc
		mk    func(w int) opFunc
	}
	all := []wl{
		{"clusterSingleFind", []*serverProc{single}, func(w int) opFunc { return findOp(pick(singleCl, w, "find"), cfg.Docs, uint64(w)+1) }},
		{"clusterFind", nodes, func(w int) opFunc { return findOp(pick(clusterCl, w, "find"), cfg.Docs, uint64(w)+1) }},
		{"clusterSingleInsert", []*serverProc{single}, func(w int) opFunc { return insertOp(pick(singleCl, w, "insert"), tmpl) }},
		{"clusterInsert", nodes, func(w int) opFunc { return insertOp(pick(clusterCl, w, "insert"), tmpl) }},
	}
	var selected []wl
	for _, x := range all {
		if want(x.name) {
			selected = append(selected, x)
		}
	}
	crep := &clusterReport{}
	for _, n := range cfg.Clients {
		res := make([]result, len(selected))
		procCPU := make([][]time.Duration, len(selected))
		ops := make([][]opFunc, len(selected))
		for i, x := range selected {
			res[i] = result{Workload: x.name, Kind: "server-cluster", Clients: n}
			procCPU[i] = make([]time.Duration, len(x.procs))
			ops[i] = make([]opFunc, n)
			for w := range ops[i] {
				ops[i][w] = x.mk(w)
			}
		}
		for rd := range cfg.Rounds {
			for i, x := range selected {
				if ctx.Err() != nil {
					return nil
				}
				// A warmup of its own, unmeasured, so that the processes'
				// CPU times below cover measured operations only.
				warm := runSlice(ctx, x.name, n, 0, max(cfg.Warmup/time.Duration(1+4*min(rd, 1)), 50*time.Millisecond), cfg.MaxOps, ops[i], 0)
				if warm.errors > 0 {
					return fmt.Errorf("cluster: %s: %d errors, first: %v", x.name, warm.errors, warm.firstErr)
				}
				before := make([]time.Duration, len(x.procs))
				for j, p := range x.procs {
					before[j] = processCPU(p.pid())
				}
				s := runSlice(ctx, x.name, n, 0, cfg.Duration/time.Duration(cfg.Rounds), max(cfg.MaxOps/int64(cfg.Rounds), 1), ops[i], 0)
				for j, p := range x.procs {
					procCPU[i][j] += processCPU(p.pid()) - before[j]
				}
				res[i].add(s)
				runtime.GC()
				r := res[i].Rounds[rd]
				line := fmt.Sprintf("%-19s c=%-3d round %d/%d  %8d ops in %.2fs  %9.0f ops/s", x.name, n, rd+1, cfg.Rounds, r.Ops, r.Seconds, r.OpsPerS)
				if s.errors > 0 {
					line += fmt.Sprintf("  %d ERRORS, first: %v", s.errors, s.firstErr)
				}
				progress("%s", line)
			}
		}
		for i, x := range selected {
			r := &res[i]
			r.finish()
			if r.Ops == 0 {
				continue
			}
			c := clusterCPU{Workload: x.name, Clients: n, ClientUS: r.CPUPerOpUS}
			if len(x.procs) > 1 {
				c.Writer = writer
			}
			for _, d := range procCPU[i] {
				perOp := us(d) / float64(r.Ops)
				c.PerNodeUS = append(c.PerNodeUS, perOp)
				c.TotalUS += perOp
			}
			r.ServerCPUPerOpUS = c.TotalUS
			crep.CPU = append(crep.CPU, c)
		}
		rep.Results = append(rep.Results, res...)
	}

	if want("clusterFailover") && ctx.Err() == nil {
		gaps, err := benchFailovers(ctx, bin, nodes, clusterCl[0], hosts)
		if err != nil {
			return err
		}
		slices.Sort(gaps)
		for _, g := range gaps {
			crep.GapsMS = append(crep.GapsMS, float64(g)/1e6)
		}
		crep.GapP50, crep.GapP99 = float64(percentile(gaps, 50))/1e6, float64(percentile(gaps, 99))/1e6
	}
	if want("clusterRaftAlone") && ctx.Err() == nil {
		// Alone on the machine: the section's servers are stopped first.
		endProcs(procs, cfg.CPUProfile != "")
		ra, err := raftAlone(ctx, root, cfg.Duration, cfg.CPUProfile)
		if err != nil {
			return err
		}
		if b := rep.find("clusterSingleInsert", raftAloneProposers); b != nil && b.OpsPerS > 0 {
			ra.VsSingleInsert = ra.OpsPerS / b.OpsPerS
		}
		crep.RaftAlone = ra
	}
	rep.Cluster = crep
	return nil
}

// clusterWriter is the id of the node hello names primary, asked again
// for up to 30 s.
func clusterWriter(ctx context.Context, cl *mongo.Client, hosts []string) (int, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var hello struct {
			Primary string `bson:"primary"`
		}
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := cl.Database("admin").RunCommand(hctx, bson.D{{Key: "hello", Value: 1}}, options.RunCmd().SetReadPreference(readpref.Primary())).Decode(&hello)
		cancel()
		if i := slices.Index(hosts, hello.Primary); err == nil && i >= 0 {
			return i + 1, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("cluster: no writer known after 30 s (hello names %q, %v)", hello.Primary, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// benchFailovers kills the writer clusterFailovers times while four
// clients insert, starting it again after each, and returns each gap:
// from the last write acknowledged before the kill to the first
// acknowledged of those sent after the process was gone.
func benchFailovers(ctx context.Context, bin string, nodes []*serverProc, cl *mongo.Client, hosts []string) ([]time.Duration, error) {
	coll := cl.Database("bench").Collection("failover")
	type ack struct{ call, at time.Time }
	var mu sync.Mutex
	var acks []ack
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10_000_000 && fctx.Err() == nil; i++ {
				octx, cancel := context.WithTimeout(fctx, 20*time.Second)
				call := time.Now()
				_, err := coll.InsertOne(octx, bson.D{{Key: "_id", Value: int64(w)<<40 | int64(i)}})
				cancel()
				if err == nil {
					mu.Lock()
					acks = append(acks, ack{call, time.Now()})
					mu.Unlock()
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	around := func(killed, gone time.Time) (n int, last, first time.Time) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range acks {
			if a.at.Before(killed) && a.at.After(last) {
				last = a.at
			}
			if a.call.After(gone) {
				n++
				if first.IsZero() || a.at.Before(first) {
					first = a.at
				}
			}
		}
		return n, last, first
	}
	waitAcks := func(killed, gone time.Time, n int) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			if got, _, _ := around(killed, gone); got >= n {
				return nil
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("cluster: fewer than %d writes acknowledged within 30 s of a failover", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := waitAcks(time.Time{}, time.Time{}, 100); err != nil {
		return nil, err
	}
	var gaps []time.Duration
	for round := range clusterFailovers {
		id, err := clusterWriter(ctx, cl, hosts)
		if err != nil {
			return nil, err
		}
		victim := nodes[id-1]
		killed := time.Now()
		victim.kill()
		gone := time.Now()
		if err := waitAcks(killed, gone, 50); err != nil {
			return nil, err
		}
		_, last, first := around(killed, gone)
		gaps = append(gaps, first.Sub(last))
		progress("cluster: failover %d/%d: killed node %d (the writer); %v from the last acknowledged write before to the first after",
			round+1, clusterFailovers, id, first.Sub(last).Round(time.Millisecond))
		if err := victim.start(bin, "cluster node started"); err != nil {
			return nil, err
		}
		time.Sleep(time.Second) // it catches up before the next kill
	}
	return gaps, nil
}

// clusterGoalsJudge adds the section's goals to the report.
func clusterGoalsJudge(rep *report, clients []int) {
	n := slices.Max(clients)
	for _, g := range clusterGoals {
		a, b := rep.find(g.workload, n), rep.find(g.versus, n)
		if a == nil && b == nil {
			continue
		}
		rep.Goals = append(rep.Goals, goal{
			Name:     fmt.Sprintf("%s@%d >= %.2f x %s@%d", g.workload, n, g.min, g.versus, n),
			Workload: g.workload, Clients: n, Min: g.min,
		}.judge(a, b))
	}
}

func printClusterSummary(w io.Writer, rep *report) {
	c := rep.Cluster
	if c == nil {
		return
	}
	fmt.Fprintln(w, "\ncluster: three nodes on this machine against one single-node server, same client; CPU time per operation of each server process (/proc/<pid>/stat):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tclients\tops/s\tvs single\tserver cpu/op (per node)\tservers cpu/op\tclient cpu/op\t")
	for _, x := range c.CPU {
		r := rep.find(x.Workload, x.Clients)
		vs := "-"
		for _, g := range clusterGoals {
			if g.workload == x.Workload {
				if b := rep.find(g.versus, x.Clients); b != nil && b.OpsPerS > 0 {
					vs = fmt.Sprintf("%.2f", r.OpsPerS/b.OpsPerS)
				}
			}
		}
		per := make([]string, len(x.PerNodeUS))
		for i, v := range x.PerNodeUS {
			per[i] = fmtUS(v)
			if x.Writer == i+1 {
				per[i] += " (writer)"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t\n", x.Workload, x.Clients, r.OpsPerS, vs, strings.Join(per, " / "), fmtUS(x.TotalUS), fmtUS(x.ClientUS))
	}
	_ = tw.Flush()
	if len(c.GapsMS) > 0 {
		fmt.Fprintf(w, "failover (the writer killed with SIGKILL %d times, 4 clients inserting): gap p50 %.0f ms, p99 %.0f ms (all: %v)\n", len(c.GapsMS), c.GapP50, c.GapP99, fmtMS(c.GapsMS))
	}
	if a := c.RaftAlone; a != nil {
		per := make([]string, len(a.PerNodeUS))
		for i, v := range a.PerNodeUS {
			per[i] = fmtUS(v)
		}
		vs := "-"
		if a.VsSingleInsert > 0 {
			vs = fmt.Sprintf("%.2f x the single server's insertOne@%d", a.VsSingleInsert, a.Proposers)
		}
		fmt.Fprintf(w, "dragonboat alone (three processes, one group, a state machine that only counts; %d proposers in the leader's process, %d-byte entries): %.0f commits/s (%s); CPU per commit %s (%s)\n",
			a.Proposers, a.EntryBytes, a.OpsPerS, vs, fmtUS(a.TotalUS), strings.Join(per, " / "))
	}
}

func fmtMS(ms []float64) string {
	s := make([]string, len(ms))
	for i, v := range ms {
		s[i] = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strings.Join(s, " ")
}
