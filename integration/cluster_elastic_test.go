package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// addClusterNode starts node id (127.0.0.<id>) with --join through via.
func (c *testCluster) addClusterNode(id int, via *clusterNode) *clusterNode {
	c.t.Helper()
	n := &clusterNode{id: id, dir: c.t.TempDir(), client: fmt.Sprintf("127.0.0.%d:%d", id, c.port)}
	n.args = []string{"--join", via.client, "--raft-address", fmt.Sprintf("127.0.0.%d:%d", id, c.raft)}
	c.nodes = append(c.nodes, n)
	c.start(n)
	return n
}

// groupPlacement is what serverStatus says of the partition groups: the
// nodes holding each one's replicas, and the moves under way.
type groupPlacement struct {
	nodes   map[int64][]int64 // group -> nodes
	leaders map[int64]int64   // group -> its leader's node
	moving  map[int64]bson.Raw
}

func readPlacement(t *testing.T, admin *mongo.Database) (groupPlacement, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}, options.RunCmd().SetReadPreference(readpref.Primary())).Raw()
	if err != nil {
		return groupPlacement{}, err
	}
	p := groupPlacement{nodes: map[int64][]int64{}, leaders: map[int64]int64{}, moving: map[int64]bson.Raw{}}
	groups, err := raw.LookupErr("parsec", "cluster", "groups")
	if err != nil {
		return p, fmt.Errorf("serverStatus without parsec.cluster.groups")
	}
	vals, _ := groups.Array().Values()
	for _, v := range vals[1:] { // the catalog's first
		d := v.Document()
		id, _ := d.Lookup("group").AsInt64OK()
		nodes, _ := d.Lookup("nodes").Array().Values()
		for _, n := range nodes {
			x, _ := n.AsInt64OK()
			p.nodes[id] = append(p.nodes[id], x)
		}
		if m, err := d.LookupErr("moving"); err == nil {
			p.moving[id] = m.Document()
		}
		reps, _ := d.Lookup("replicas").Array().Values()
		for _, r := range reps {
			if r.Document().Lookup("leader").Boolean() {
				p.leaders[id], _ = r.Document().Lookup("node").AsInt64OK()
			}
		}
	}
	return p, nil
}

// spread is how many replicas each of nodes holds.
func (p groupPlacement) spread(nodes []int64) map[int64]int {
	out := map[int64]int{}
	for _, n := range nodes {
		out[n] = 0
	}
	for _, ns := range p.nodes {
		for _, n := range ns {
			out[n]++
		}
	}
	return out
}

// leadersSpread is whether every node of nodes leads within one group
// of the mean.
func (p groupPlacement) leadersSpread(nodes []int64) bool {
	led := map[int64]int{}
	for _, n := range p.leaders {
		led[n]++
	}
	if len(p.leaders) != len(p.nodes) {
		return false
	}
	mean := float64(len(p.leaders)) / float64(len(nodes))
	for _, n := range nodes {
		if float64(led[n]) < mean-1 || float64(led[n]) > mean+1 {
			return false
		}
	}
	return true
}

// balanced is whether every node of nodes holds within one replica of
// the mean, every group has three and none is moving.
func (p groupPlacement) balanced(nodes []int64) bool {
	if len(p.moving) > 0 {
		return false
	}
	total := 0
	for _, ns := range p.nodes {
		if len(ns) != 3 {
			return false
		}
		for _, n := range ns {
			if !slices.Contains(nodes, n) {
				return false
			}
		}
		total += len(ns)
	}
	mean := float64(total) / float64(len(nodes))
	for _, count := range p.spread(nodes) {
		if float64(count) < mean-1 || float64(count) > mean+1 {
			return false
		}
	}
	return true
}

// TestClusterElastic: a cluster grows from three nodes to five and
// shrinks back to three while clients read, write and compare-and-set
// registers and insert and increment (the checks of
// TestClusterLinearizable: a linearizable history, every acknowledged
// insert there, counters exact). Nodes 4 and 5 join empty and the
// balancer moves replicas and leaders onto them until every node holds
// and leads within one of the mean; the writer is killed (SIGKILL) in the middle of a move,
// which the next writer finishes; then removeShard drains node 5 and
// node 4 (started, ongoing with the replicas left, completed) and they
// leave; every group ends with three replicas on nodes 1-3.
func TestClusterElastic(t *testing.T) {
	c := startTestCluster(t)
	cl := c.connect()
	admin := cl.Database("admin")
	ctx := testCtx(t)
	// Data to move: a collection of eight partitions.
	runOK(t, admin, bson.D{{Key: "enableSharding", Value: "bulk"}})
	runOK(t, admin, bson.D{{Key: "shardCollection", Value: "bulk.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}},
		{Key: "numInitialChunks", Value: 8}})
	bulk := cl.Database("bulk").Collection("c")
	docs := make([]any, 2000)
	pad := strings.Repeat("x", 1000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "pad", Value: pad}}
	}
	if _, err := bulk.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}

	// Two moves at once, each between nodes no other uses; a count out
	// of range is refused.
	if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStart", Value: 1}, {Key: "maxConcurrentMoves", Value: 0}}).Err(); commandCode(err) != 2 {
		t.Errorf("balancerStart with maxConcurrentMoves 0: %v, want BadValue", err)
	}
	runOK(t, admin, bson.D{{Key: "balancerStart", Value: 1}, {Key: "maxConcurrentMoves", Value: 2}})
	var bst struct {
		MaxMoves int32 `bson:"maxConcurrentMoves"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStatus", Value: 1}}).Decode(&bst); err != nil || bst.MaxMoves != 2 {
		t.Errorf("balancerStatus after maxConcurrentMoves 2: %+v, %v", bst, err)
	}
	mostAtOnce := 0
	nodeLogs := func() string {
		var logs strings.Builder
		for _, n := range c.nodes {
			for _, line := range strings.Split(n.logText(), "\n") {
				if strings.Contains(line, "balanc") || strings.Contains(line, "mov") || strings.Contains(line, "drop") || strings.Contains(line, "WARN") {
					fmt.Fprintf(&logs, "node %d: %s\n", n.id, line)
				}
			}
		}
		return logs.String()
	}
	waitPlacement := func(what string, nodes []int64, within time.Duration, until func(groupPlacement) bool) groupPlacement {
		t.Helper()
		var last groupPlacement
		var lastErr error
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			p, err := readPlacement(t, admin)
			if err != nil {
				lastErr = err
				continue
			}
			last = p
			inMove := map[string]int64{}
			for g, m := range p.moving {
				for _, k := range []string{"from", "to"} {
					n, ok := m.Lookup(k).StringValueOK()
					if !ok {
						continue
					}
					if other, busy := inMove[n]; busy {
						t.Errorf("%s takes part in the moves of groups %d and %d at once", n, other, g)
					}
					inMove[n] = g
				}
			}
			if len(p.moving) > 2 {
				t.Errorf("%d moves at once, with maxConcurrentMoves 2: %v", len(p.moving), p.moving)
			}
			mostAtOnce = max(mostAtOnce, len(p.moving))
			if until(p) {
				return p
			}
		}
		var logs strings.Builder
		for _, n := range c.nodes {
			for _, line := range strings.Split(n.logText(), "\n") {
				if strings.Contains(line, "balanc") || strings.Contains(line, "mov") || strings.Contains(line, "drop") || strings.Contains(line, "WARN") {
					fmt.Fprintf(&logs, "node %d: %s\n", n.id, line)
				}
			}
		}
		if os.Getenv("PARSEC_ELASTIC_STACKS") != "" {
			for _, n := range c.nodes {
				if n.cmd != nil {
					_ = n.cmd.Process.Signal(syscall.SIGQUIT)
				}
			}
			time.Sleep(2 * time.Second)
			for _, n := range c.nodes {
				_ = os.WriteFile(fmt.Sprintf("/tmp/elastic-node%d.log", n.id), []byte(n.logText()), 0o644)
			}
		}
		t.Fatalf("%s: not within %v; placement %v (spread %v), moving %v, last error %v\n%s", what, within, last.nodes, last.spread(nodes), last.moving, lastErr, logs.String())
		return last
	}

	checkRegisters(t, c, 5*time.Minute, 6000, func(begin, end time.Time) int {
		faults := 0
		logf := func(format string, args ...any) {
			t.Logf("%v: %s", time.Since(begin).Round(time.Millisecond), fmt.Sprintf(format, args...))
		}
		// Grow: two nodes join; the writer dies in the middle of a move.
		c.addClusterNode(4, c.nodes[0])
		c.addClusterNode(5, c.nodes[1])
		logf("nodes 4 and 5 joined")
		five := []int64{1, 2, 3, 4, 5}
		waitPlacement("a replica moving", five, 60*time.Second, func(p groupPlacement) bool { return len(p.moving) > 0 })
		writer := c.primary(cl)
		c.kill(writer)
		faults++
		logf("killed the writer, node %d, during a move", writer.id)
		time.Sleep(time.Second)
		c.start(writer)
		logf("node %d started again", writer.id)
		p := waitPlacement("replicas and leaders spread over five nodes", five, 90*time.Second, func(p groupPlacement) bool {
			return p.balanced(five) && p.leadersSpread(five)
		})
		logf("balanced over five nodes: replicas %v, leaders %v; at most %d moves seen at once", p.spread(five), p.leaders, mostAtOnce)
		// Shrink: node 5, then node 4, drained and removed (node 4 by
		// `parsec cluster remove`). One removal at a time.
		for _, gone := range []int{5, 4} {
			if gone == 4 {
				out, err := exec.Command(parsecBinary(t), "cluster", "remove", "--uri", c.uri(), "--node-id", "4", "--wait", "4m").CombinedOutput()
				if err != nil || !strings.Contains(string(out), "completed") {
					t.Fatalf("parsec cluster remove --node-id 4: %v\n%s\n%s", err, out, nodeLogs())
				}
				logf("node4 removed by parsec cluster remove:\n%s", out)
				for i, n := range c.nodes {
					if n.id == gone {
						c.kill(n)
						c.nodes = slices.Delete(c.nodes, i, i+1)
						break
					}
				}
				faults++
				continue
			}
			name := fmt.Sprintf("node%d", gone)
			var state string
			var remaining []int64
			for deadline := time.Now().Add(4 * time.Minute); state != "completed"; time.Sleep(500 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("removeShard %s did not complete: last state %q, remaining %v", name, state, remaining)
				}
				var r struct {
					State     string `bson:"state"`
					Remaining struct {
						Chunks int64 `bson:"chunks"`
					} `bson:"remaining"`
				}
				rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := admin.RunCommand(rctx, bson.D{{Key: "removeShard", Value: name}}).Decode(&r)
				cancel()
				if err != nil {
					logf("removeShard %s: %v", name, err)
					continue
				}
				if state == "" && r.State != "started" {
					t.Errorf("the first removeShard %s answered %q, not started", name, r.State)
				}
				if state == "" {
					// A second removal while this one runs is refused.
					rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					err := admin.RunCommand(rctx, bson.D{{Key: "removeShard", Value: "node4"}}).Err()
					cancel()
					if code := commandCode(err); code != 117 {
						t.Errorf("removeShard node4 while node5 drains: %v, want ConflictingOperationInProgress", err)
					}
				}
				if r.State == "ongoing" {
					remaining = append(remaining, r.Remaining.Chunks)
				}
				state = r.State
			}
			logf("%s removed (remaining replicas seen: %v)", name, remaining)
			for i, n := range c.nodes {
				if n.id == gone {
					c.kill(n)
					c.nodes = slices.Delete(c.nodes, i, i+1)
					break
				}
			}
			faults++
		}
		three := []int64{1, 2, 3}
		p = waitPlacement("replicas back on three nodes", three, time.Minute, func(p groupPlacement) bool { return p.balanced(three) })
		logf("back on three nodes: %v", p.spread(three))
		// Refusals: below three nodes, an unknown shard.
		for cmd, want := range map[string]int32{"node3": 20, "node9": 70} {
			rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := admin.RunCommand(rctx, bson.D{{Key: "removeShard", Value: cmd}}).Err()
			cancel()
			if code := commandCode(err); code != want {
				t.Errorf("removeShard %s on three nodes: %v, want code %d", cmd, err, want)
			}
		}
		// A node that is not waiting to join (here a single server on
		// the cluster's client port) is not added.
		single := exec.Command(parsecBinary(t), "serve", "--listen", fmt.Sprintf("127.0.0.6:%d", c.port), "--data-dir", t.TempDir(), "--http", "")
		if err := single.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = single.Process.Kill(); _ = single.Wait() }()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.6:%d", c.port), time.Second); err == nil {
				_ = conn.Close()
				break
			}
		}
		actx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := admin.RunCommand(actx, bson.D{{Key: "addShard", Value: fmt.Sprintf("127.0.0.6:%d", c.raft)}, {Key: "name", Value: "node6"}}).Err()
		cancel()
		if code := commandCode(err); code != 20 {
			t.Errorf("addShard of a single server's address: %v, want IllegalOperation", err)
		}
		lctx2, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var after struct {
			Shards []bson.Raw `bson:"shards"`
		}
		if err := admin.RunCommand(lctx2, bson.D{{Key: "listShards", Value: 1}}).Decode(&after); err != nil || len(after.Shards) != 3 {
			t.Errorf("listShards after the refused addShard: %v, %v", after.Shards, err)
		}
		cancel()
		// The balancer stops and starts, and says so.
		for _, on := range []bool{false, true} {
			rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cmd := "balancerStop"
			if on {
				cmd = "balancerStart"
			}
			if err := admin.RunCommand(rctx, bson.D{{Key: cmd, Value: 1}}).Err(); err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			var st struct {
				Mode string `bson:"mode"`
			}
			var settings struct {
				Stopped bool `bson:"stopped"`
			}
			if err := admin.RunCommand(rctx, bson.D{{Key: "balancerStatus", Value: 1}}).Decode(&st); err != nil {
				t.Fatal(err)
			}
			if err := cl.Database("config").Collection("settings").FindOne(rctx, bson.D{{Key: "_id", Value: "balancer"}}).Decode(&settings); err != nil {
				t.Fatal(err)
			}
			cancel()
			if want := map[bool]string{true: "full", false: "off"}[on]; st.Mode != want || settings.Stopped == on {
				t.Errorf("after %s: balancerStatus mode %q, config.settings stopped %v", cmd, st.Mode, settings.Stopped)
			}
		}
		var shards struct {
			Shards []struct {
				ID string `bson:"_id"`
			} `bson:"shards"`
		}
		lctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := admin.RunCommand(lctx, bson.D{{Key: "listShards", Value: 1}}).Decode(&shards); err != nil || len(shards.Shards) != 3 {
			t.Errorf("listShards after the removals: %+v, %v", shards, err)
		}
		return faults
	})
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := bulk.CountDocuments(cctx, bson.D{}); err != nil || n != int64(len(docs)) {
		t.Fatalf("the moved collection holds %d documents (%v), want %d", n, err, len(docs))
	}
}
