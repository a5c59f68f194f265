package integration

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// dirListing is every file and directory under dir with its size, mode
// and modification time, one a line, sorted.
func dirListing(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		lines = append(lines, fmt.Sprintf("%s %d %v %s", rel, info.Size(), info.Mode(), info.ModTime().Format(time.RFC3339Nano)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// runRefused runs `parsec serve args...`, which must exit with an error
// within 20 s; it returns what the process wrote.
func runRefused(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, parsecBinary(t), append([]string{"serve", "--http", ""}, args...)...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("parsec serve %s did not exit within 20 s:\n%s", strings.Join(args, " "), out)
	}
	if err == nil {
		t.Fatalf("parsec serve %s exited without an error:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// TestClusterStartRefusals: a node started with flags that disagree with
// each other or with its data directory is refused at start, with a
// message that says which and what to do, and leaves its data directory
// as it was.
func TestClusterStartRefusals(t *testing.T) {
	raft := freePort(t)
	members := func(port int) string {
		return fmt.Sprintf("1=127.0.0.1:%d,2=127.0.0.2:%d,3=127.0.0.3:%d", port, port, port)
	}
	clientPort := freePort(t)
	listen := func(id int) string { return fmt.Sprintf("127.0.0.%d:%d", id, clientPort) }

	// A node's directory: node 1 of a three-node cluster, started once.
	nodeDir := t.TempDir()
	c := &testCluster{t: t, port: clientPort, members: members(raft)}
	n := &clusterNode{id: 1, dir: nodeDir, client: listen(1)}
	c.nodes = []*clusterNode{n}
	c.start(n)
	c.kill(n)

	// A single server's directory.
	singleDir := t.TempDir()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", singleDir, "--http", "")
	_ = p.cmd.Process.Signal(os.Interrupt)
	if err := p.wait(t, 30*time.Second); err != nil {
		t.Fatalf("the single server did not stop cleanly: %v\n%s", err, p.log())
	}

	emptyDir := t.TempDir()
	cases := []struct {
		name string
		dir  string
		args []string
		want []string // in the message
	}{
		{"node id not a member", emptyDir,
			[]string{"--node-id", "4", "--initial-members", members(raft), "--listen", listen(1)},
			[]string{"--node-id 4 is not among --initial-members"}},
		{"raft address disagrees", emptyDir,
			[]string{"--node-id", "1", "--raft-address", fmt.Sprintf("127.0.0.1:%d", raft+1), "--initial-members", members(raft), "--listen", listen(1)},
			[]string{"--raft-address 127.0.0.1:" + strconv.Itoa(raft+1), "gives node 1 the address 127.0.0.1:" + strconv.Itoa(raft)}},
		{"data dir of another node", nodeDir,
			[]string{"--node-id", "2", "--initial-members", members(raft), "--listen", listen(2)},
			[]string{"is node 1's of its cluster, not node 2's", "start it with --node-id 1, or give node 2 a --data-dir of its own"}},
		{"data dir of another membership", nodeDir,
			[]string{"--node-id", "1", "--initial-members", members(raft + 1), "--listen", listen(1)},
			[]string{"disagrees with the members data directory", "start it with the same list, or give it an empty --data-dir"}},
		{"raft sync interval too long", emptyDir,
			[]string{"--node-id", "1", "--initial-members", members(raft), "--listen", listen(1), "--raft-sync-interval", "2s"},
			[]string{"--raft-sync-interval must be between 0 and 1s"}},
		{"data dir of a single server", singleDir,
			[]string{"--node-id", "1", "--initial-members", members(raft), "--listen", listen(1)},
			[]string{"holds a single server's data", "give this node an empty --data-dir"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := dirListing(t, tc.dir)
			out := runRefused(t, append(tc.args, "--data-dir", tc.dir)...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the message does not say %q:\n%s", w, out)
				}
			}
			if after := dirListing(t, tc.dir); after != before {
				t.Errorf("the data directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestClusterWipedNodeRejoins: a node whose data directory is lost
// rejoins as a new member — started on an empty directory with --join
// and a new id — and is rebuilt from the others (the log it missed is
// compacted away, so by a Raft snapshot); its old id is removed with
// removeNode; once it is the writer it serves every acknowledged
// document. (Raft does not allow a member to come back under its old id
// with an empty log: its peers remember what it had.)
func TestClusterWipedNodeRejoins(t *testing.T) {
	c := startTestCluster(t)
	cl := c.connect()
	coll := cl.Database("app").Collection("wiped", options.Collection().SetWriteConcern(writeconcern.Majority()))

	// More single-document writes than a snapshot takes (10,000 entries):
	// the log before the snapshot is compacted, so a node that starts from
	// nothing cannot be rebuilt from the log alone.
	var acked sync.Map
	var count, failures atomic.Int64
	insert := func(from, to int) {
		var wg sync.WaitGroup
		var next atomic.Int64
		next.Store(int64(from))
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					id := next.Add(1) - 1
					if id >= int64(to) {
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: strings.Repeat("x", 100)}})
					cancel()
					if err == nil {
						acked.Store(id, true)
						count.Add(1)
					} else if failures.Add(1) <= 3 {
						t.Logf("insert %d: %v", id, err)
					}
				}
			}()
		}
		wg.Wait()
	}
	start := time.Now()
	insert(0, 12_000)
	t.Logf("%d inserts acknowledged in %v", count.Load(), time.Since(start).Round(time.Millisecond))

	// A standby loses its data directory; it comes back as node 4, on an
	// empty directory, joining through the writer.
	writer := c.primary(cl)
	lost := c.nodes[0]
	if lost == writer {
		lost = c.nodes[1]
	}
	c.kill(lost)
	if err := os.RemoveAll(lost.dir); err != nil {
		t.Fatal(err)
	}
	insert(12_000, 12_500) // while it is gone
	// The lost member goes first (so that the two left are a majority of
	// the membership), then the new one joins.
	runOK(t, cl.Database("admin"), bson.D{{Key: "removeNode", Value: lost.id}})
	c.nodes = slices.DeleteFunc(c.nodes, func(n *clusterNode) bool { return n == lost })
	victim := &clusterNode{id: 4, dir: t.TempDir(), client: fmt.Sprintf("127.0.0.4:%d", c.port)}
	victim.args = []string{"--join", writer.client, "--raft-address", fmt.Sprintf("127.0.0.4:%d", c.raft)}
	c.nodes = append(c.nodes, victim)
	c.start(victim)
	insert(12_500, 13_000) // while it catches up
	t.Logf("node %d lost its data and came back as node %d; %d inserts acknowledged", lost.id, victim.id, count.Load())
	// The partition's group lost a replica with node 1: the balancer
	// gives it one on the new node, which starts it from a snapshot.
	var members []int64
	for _, n := range c.nodes {
		members = append(members, int64(n.id))
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		p, err := readPlacement(t, cl.Database("admin"))
		if err == nil && p.balanced(members) {
			t.Logf("replicas: %v", p.nodes)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the partitions' groups did not get a replica on node %d: %v (%v)", victim.id, p.nodes, err)
		}
	}

	// Kill the others in turn until the new node is the writer.
	for round := 0; ; round++ {
		if round == 12 {
			t.Fatalf("node %d did not become the writer in %d failovers:\n%s", victim.id, round, victim.logText())
		}
		w := writerNode(t, c, cl)
		if w == victim {
			t.Logf("node %d is the writer after %d failovers", victim.id, round)
			break
		}
		c.kill(w)
		writerNode(t, c, cl) // a writer again
		c.start(w)
		time.Sleep(500 * time.Millisecond)
	}
	if w := writerNode(t, c, cl); w != victim {
		t.Fatalf("node %d is no longer the writer", victim.id)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for cur.Next(ctx) {
		id, _ := cur.Current.Lookup("_id").AsInt64OK()
		seen[id] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	missing := 0
	acked.Range(func(k, _ any) bool {
		if !seen[k.(int64)] {
			missing++
		}
		return true
	})
	t.Logf("the rebuilt node serves %d documents; %d acknowledged", len(seen), count.Load())
	if missing > 0 {
		t.Errorf("%d acknowledged documents missing on the rebuilt node", missing)
	}
	if w := writerNode(t, c, cl); w != victim {
		t.Errorf("the count was not served by node %d: node %d took over meanwhile", victim.id, w.id)
	}
	var snapshots []string
	_ = filepath.WalkDir(filepath.Join(victim.dir, "raft"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "snapshot-") {
			snapshots = append(snapshots, d.Name())
		}
		return nil
	})
	t.Logf("snapshots on the rebuilt node: %v", snapshots)
}

// writerNode is the node hello names as primary, asked again for up to
// 30 s while a failover closes connections or no writer is known yet.
func writerNode(t *testing.T, c *testCluster, cl *mongo.Client) *clusterNode {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var hello struct {
			Primary string `bson:"primary"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}, options.RunCmd().SetReadPreference(readpref.Primary())).Decode(&hello)
		cancel()
		if err == nil {
			for _, n := range c.nodes {
				if n.client == hello.Primary {
					return n
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no writer known after 30 s: hello names %q, %v", hello.Primary, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
