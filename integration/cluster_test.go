package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// clusterNode is one `parsec serve` process of a three-node cluster on
// 127.0.0.1-3.
type clusterNode struct {
	id      int
	args    []string // serve's flags when not the initial members' (a node that joins)
	dir     string
	client  string // host:port for clients
	mu      sync.Mutex
	log     strings.Builder
	cmd     *exec.Cmd
	exited  chan struct{}
	started chan struct{}
}

// testCluster is three nodes sharing a client port and a Raft port, on
// their own loopback addresses.
type testCluster struct {
	t       *testing.T
	nodes   []*clusterNode
	members string
	port    int
	raft    int      // every node's Raft port
	extra   []string // more flags for every node
}

// freePort is a port free on 127.0.0.1 to .5 at once.
func freePort(t *testing.T) int {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		ok := true
		var others []net.Listener
		for _, host := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
			o, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			others = append(others, o)
		}
		_ = l.Close()
		for _, o := range others {
			_ = o.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no port free on 127.0.0.1-5")
	return 0
}

func startTestCluster(t *testing.T, extra ...string) *testCluster {
	t.Helper()
	return startTestClusterOf(t, 3, extra...)
}

// startTestClusterOf starts a cluster of n nodes (at most 5) on
// 127.0.0.1 to .n.
func startTestClusterOf(t *testing.T, n int, extra ...string) *testCluster {
	t.Helper()
	c := &testCluster{t: t, port: freePort(t), extra: extra}
	raft := freePort(t)
	c.raft = raft
	var members []string
	for i := 1; i <= n; i++ {
		members = append(members, fmt.Sprintf("%d=127.0.0.%d:%d", i, i, raft))
		c.nodes = append(c.nodes, &clusterNode{id: i, dir: t.TempDir(), client: fmt.Sprintf("127.0.0.%d:%d", i, c.port)})
	}
	c.members = strings.Join(members, ",")
	for _, n := range c.nodes {
		c.start(n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.kill(n)
		}
	})
	return c
}

// start runs node n and waits for its start-up line.
func (c *testCluster) start(n *clusterNode) {
	c.t.Helper()
	args := n.args
	if args == nil {
		args = []string{"--initial-members", c.members}
	}
	cmd := exec.Command(parsecBinary(c.t), append(append([]string{"serve", "--node-id", strconv.Itoa(n.id),
		"--listen", n.client, "--data-dir", n.dir, "--http", "", "--log-level", "info"}, args...), c.extra...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	n.cmd, n.exited, n.started = cmd, make(chan struct{}), make(chan struct{})
	started := n.started
	go func() {
		sc := bufio.NewScanner(pipe)
		once := sync.Once{}
		for sc.Scan() {
			n.mu.Lock()
			n.log.WriteString(sc.Text() + "\n")
			n.mu.Unlock()
			if strings.Contains(sc.Text(), "cluster node started") {
				once.Do(func() { close(started) })
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		_ = cmd.Wait()
		close(n.exited)
	}()
	select {
	case <-started:
	case <-n.exited:
		var others strings.Builder
		for _, o := range c.nodes {
			if o != n && o.cmd != nil {
				fmt.Fprintf(&others, "--- node %d:\n%s", o.id, o.logText())
			}
		}
		c.t.Fatalf("node %d exited at start:\n%s\nthe other nodes' logs:\n%s", n.id, n.logText(), others.String())
	case <-time.After(20 * time.Second):
		c.t.Fatalf("node %d did not start:\n%s", n.id, n.logText())
	}
}

// kill ends node n with SIGKILL.
func (c *testCluster) kill(n *clusterNode) {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.exited
	n.cmd = nil
}

func (n *clusterNode) logText() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}

// waitCount waits until count (read under mu) reaches n, failing the
// test after within: the writers of a cluster test acknowledging enough.
func waitCount(t *testing.T, mu *sync.Mutex, count func() int, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		mu.Lock()
		got := count()
		mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged, waiting for %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uri lists every node, as an application would.
func (c *testCluster) uri() string {
	hosts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		hosts[i] = n.client
	}
	return "mongodb://" + strings.Join(hosts, ",") + "/?replicaSet=parsec"
}

func (c *testCluster) connect() *mongo.Client {
	c.t.Helper()
	cl, err := mongo.Connect(options.Client().ApplyURI(c.uri()).SetTimeout(30 * time.Second).
		SetServerSelectionTimeout(30 * time.Second))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = cl.Disconnect(context.Background()) })
	return cl
}

// primary is the node the cluster names as its writer.
func (c *testCluster) primary(cl *mongo.Client) *clusterNode {
	c.t.Helper()
	var hello struct {
		Primary string `bson:"primary"`
	}
	if err := cl.Database("admin").RunCommand(testCtx(c.t), bson.D{{Key: "hello", Value: 1}}, options.RunCmd().SetReadPreference(readpref.Primary())).Decode(&hello); err != nil {
		c.t.Fatal(err)
	}
	for _, n := range c.nodes {
		if n.client == hello.Primary {
			return n
		}
	}
	c.t.Fatalf("hello names %q as primary, not a node", hello.Primary)
	return nil
}

// TestClusterFailover: three nodes on 127.0.0.1-3; a client that lists
// them all writes continuously while the writer is killed with SIGKILL,
// twice (the first one restarted in between): every write the client saw
// acknowledged is there at the end exactly once, on a cluster that took
// writes again within 5 s each time.
func TestClusterFailover(t *testing.T) {
	c := startTestCluster(t)
	cl := c.connect()
	coll := cl.Database("app").Collection("events", options.Collection().SetWriteConcern(writeconcern.Majority()))
	ctx := testCtx(t)

	var mu sync.Mutex
	acked := map[int]bool{}
	var stamps []time.Time // when each acknowledgement arrived
	stop := make(chan struct{})
	var wg sync.WaitGroup
	writers := 4
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := w*1_000_000 + i
				wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: id}, {Key: "w", Value: w}})
				cancel()
				if err == nil {
					mu.Lock()
					acked[id] = true
					stamps = append(stamps, time.Now())
					mu.Unlock()
				}
			}
		}(w)
	}
	waitAcked := func(n int) { waitCount(t, &mu, func() int { return len(acked) }, n, 30*time.Second) }
	// gapAfter is the longest pause between acknowledgements after at.
	gapAfter := func(at time.Time) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		ts := append([]time.Time(nil), stamps...)
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		var gap time.Duration
		prev := at
		for _, s := range ts {
			if s.Before(at) {
				continue
			}
			gap = max(gap, s.Sub(prev))
			prev = s
		}
		return gap
	}

	waitAcked(200)
	var gaps []time.Duration
	for round := 0; round < 2; round++ {
		victim := c.primary(cl)
		mu.Lock()
		before := len(acked)
		mu.Unlock()
		killed := time.Now()
		c.kill(victim)
		waitAcked(before + 200)
		gap := gapAfter(killed)
		gaps = append(gaps, gap)
		t.Logf("round %d: killed node %d (the writer); longest pause in acknowledgements after it: %v", round+1, victim.id, gap.Round(time.Millisecond))
		if gap > 5*time.Second {
			t.Errorf("round %d: the cluster took %v to take writes again, want under 5 s", round+1, gap)
		}
		c.start(victim) // it catches up from the log or a snapshot
	}
	close(stop)
	wg.Wait()

	// Every acknowledged write, exactly once.
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for cur.Next(ctx) {
		id, _ := cur.Current.Lookup("_id").AsInt64OK()
		seen[int(id)]++
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	missing, dups := 0, 0
	for id := range acked {
		if seen[id] == 0 {
			missing++
		}
	}
	for _, n := range seen {
		if n > 1 {
			dups++
		}
	}
	t.Logf("%d writes acknowledged, %d documents stored", len(acked), len(seen))
	if missing > 0 || dups > 0 {
		t.Errorf("%d acknowledged writes missing, %d stored twice", missing, dups)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || int(n) != len(seen) {
		t.Errorf("countDocuments = %d, %v; the scan found %d", n, err, len(seen))
	}
}

// TestClusterAnyNode: a client may talk to any node. Connected to one
// node alone (as mongosh given one host), a standby forwards reads and
// writes to the writer; through the replica set, reads that prefer
// secondaries are answered too; hello names the writer everywhere.
func TestClusterAnyNode(t *testing.T) {
	c := startTestCluster(t)
	setCl := c.connect()
	writer := c.primary(setCl)
	ctx := testCtx(t)
	for _, n := range c.nodes {
		cl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + n.client + "/?directConnection=true").SetTimeout(20 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Disconnect(context.Background())
		// A standby learns who leads from the group's heartbeats: soon
		// after the writer took over, not necessarily before.
		var hello bson.M
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			hello = nil
			if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
				t.Fatal(err)
			}
			if hello["primary"] != nil || time.Now().After(deadline) {
				break
			}
		}
		isWriter := n == writer
		if hello["isWritablePrimary"] != isWriter || hello["primary"] != writer.client || hello["setName"] != "parsec" {
			t.Errorf("node %d's hello: %v (writer: node %d)", n.id, hello, writer.id)
		}
		coll := cl.Database("anynode").Collection("c")
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: n.id}, {Key: "via", Value: n.client}}); err != nil {
			t.Fatalf("insert through node %d: %v", n.id, err)
		}
		var got bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: n.id}}).Decode(&got); err != nil || got["via"] != n.client {
			t.Errorf("read back through node %d: %v %v", n.id, got, err)
		}
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: n.id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
			t.Errorf("update through node %d: %v", n.id, err)
		}
	}
	// Every write went to the one writer: the replica set sees them all,
	// also when reads prefer a secondary (which answers from its replica,
	// soon up to date).
	coll := setCl.Database("anynode").Collection("c", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
	var n int64
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if n, err = coll.CountDocuments(ctx, bson.D{{Key: "n", Value: 1}}); err == nil && n == 3 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || n != 3 {
		t.Errorf("documents written through the three nodes, read preferring secondaries: %d, %v", n, err)
	}
}

// TestClusterUp: `parsec cluster up` starts three nodes, prints a
// connection string that works, and stops them all on SIGINT.
func TestClusterUp(t *testing.T) {
	port, raft, web := freePort(t), freePort(t), freePort(t)
	dir := t.TempDir()
	cmd := exec.Command(parsecBinary(t), "cluster", "up", "--nodes", "3", "--dir", dir, "--port", strconv.Itoa(port), "--raft-port", strconv.Itoa(raft), "--http-port", strconv.Itoa(web))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	uri := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "connection string: "); ok {
				uri <- s
			}
		}
	}()
	var u string
	select {
	case u = <-uri:
	case <-time.After(20 * time.Second):
		t.Fatal("no connection string printed")
	}
	want := fmt.Sprintf("mongodb://127.0.0.1:%d,127.0.0.2:%d,127.0.0.3:%d/?replicaSet=parsec", port, port, port)
	if u != want {
		t.Fatalf("connection string %q, want %q", u, want)
	}
	cl, err := mongo.Connect(options.Client().ApplyURI(u).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	if _, err := cl.Database("up").Collection("c").InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert through the printed connection string: %v", err)
	}
	// The writer serves metrics and the console; a standby answers 503
	// naming the writer.
	var hello struct {
		Primary string `bson:"primary"`
	}
	if err := cl.Database("admin").RunCommand(testCtx(t), bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	writerHost, _, _ := net.SplitHostPort(hello.Primary)
	for i := 1; i <= 3; i++ {
		host := fmt.Sprintf("127.0.0.%d", i)
		var status int
		var body string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, err := http.Get(fmt.Sprintf("http://%s:%d/metrics", host, web))
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				status, body = resp.StatusCode, string(b)
			}
			if (host == writerHost && status == 200) || (host != writerHost && status == 503 && strings.Contains(body, hello.Primary)) || time.Now().After(deadline) {
				break
			}
		}
		switch {
		case host == writerHost && (status != 200 || !strings.Contains(body, "parsec_")):
			t.Errorf("the writer's /metrics: %d %.200s", status, body)
		case host != writerHost && (status != 503 || !strings.Contains(body, hello.Primary)):
			t.Errorf("standby %s's /metrics: %d %.200s", host, status, body)
		}
	}
	// Disconnect first: a client whose servers are all gone waits for one
	// to end its sessions.
	_ = cl.Disconnect(context.Background())
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("cluster up after SIGINT: %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("cluster up did not stop its nodes on SIGINT")
	}
	for i := 1; i <= 3; i++ {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.%d:%d", i, port), time.Second); err == nil {
			c.Close()
			t.Errorf("node %d still listens after cluster up stopped", i)
		}
	}
}

// TestClusterStatus: replSetGetStatus, serverStatus and GetPartitionStats
// show the nodes, the writer, what each replica applied, and a node
// that is down as down.
func TestClusterStatus(t *testing.T) {
	c := startTestCluster(t)
	cl := c.connect()
	ctx := testCtx(t)
	writer := c.primary(cl)
	db := cl.Database("st")
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"}, {Key: "shardKey", Value: "k"}})
	if _, err := db.Collection("c").InsertMany(ctx, []any{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	type member struct {
		ID      int32   `bson:"_id"`
		Name    string  `bson:"name"`
		Health  float64 `bson:"health"`
		State   int32   `bson:"state"`
		Applied int64   `bson:"raftAppliedIndex"`
	}
	status := func() []member {
		var st struct {
			Members []member `bson:"members"`
		}
		if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Members
	}
	// Every replica applies the writes soon after they commit (a majority
	// acknowledged them; the third may lag a little).
	var ms []member
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ms = status()
		caught := len(ms) == 3
		for _, m := range ms {
			caught = caught && m.Applied > 0
		}
		if caught || time.Now().After(deadline) {
			break
		}
	}
	if len(ms) != 3 {
		t.Fatalf("members: %+v", ms)
	}
	for _, m := range ms {
		wantState := int32(2)
		if m.Name == writer.client {
			wantState = 1
		}
		if m.Health != 1 || m.State != wantState || m.Applied <= 0 {
			t.Errorf("member %+v: want healthy, state %d, an applied index", m, wantState)
		}
	}
	// listShards lists the nodes; the chunks are on the writer's.
	var shards struct {
		Shards []struct {
			ID   string `bson:"_id"`
			Host string `bson:"host"`
		} `bson:"shards"`
	}
	if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "listShards", Value: 1}}).Decode(&shards); err != nil {
		t.Fatal(err)
	}
	if len(shards.Shards) != 3 {
		t.Fatalf("listShards: %+v", shards)
	}
	for i, sh := range shards.Shards {
		if sh.ID != fmt.Sprintf("node%d", c.nodes[i].id) || sh.Host != c.nodes[i].client {
			t.Errorf("shard %d: %+v, want node%d at %s", i, sh, c.nodes[i].id, c.nodes[i].client)
		}
	}
	var ss bson.Raw
	if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&ss); err != nil {
		t.Fatal(err)
	}
	if role := mustLookup(t, ss, "parsec", "cluster", "role").StringValue(); role != "writer" {
		t.Errorf("serverStatus' cluster role %q", role)
	}
	// The Raft log's entries are fsynced every 100 ms (the default), by
	// the node's own loop once the writes above made the log dirty.
	if ms := mustLookup(t, ss, "parsec", "cluster", "raftLog", "syncIntervalMillis").Int64(); ms != 100 {
		t.Errorf("serverStatus' raftLog.syncIntervalMillis %d, want 100", ms)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&ss); err != nil {
			t.Fatal(err)
		}
		if mustLookup(t, ss, "parsec", "cluster", "raftLog", "deferredFsyncs").Int64() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no deferred fsync of the Raft log in 5 s: %v", mustLookup(t, ss, "parsec", "cluster", "raftLog"))
		}
	}
	// Each partition is a group of its own, led by one of its three
	// replicas (not necessarily the writer's node); config.chunks names
	// that node as the chunk's shard, and parsec stats shows it.
	stats := runOK(t, db, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: "c"}})
	parts, _ := mustLookup(t, stats, "partitions").Array().Values()
	if len(parts) == 0 {
		t.Fatal("no partitions")
	}
	leaderOf := map[string]int64{} // partitionKeyRangeId -> leading node
	for _, p := range parts {
		reps, _ := p.Document().Lookup("replicas").Array().Values()
		leaders := 0
		for _, r := range reps {
			if r.Document().Lookup("leader").Boolean() {
				leaders++
				leaderOf[p.Document().Lookup("partitionKeyRangeId").StringValue()], _ = r.Document().Lookup("node").AsInt64OK()
			}
		}
		if _, ok := p.Document().Lookup("raftGroup").AsInt64OK(); len(reps) != 3 || leaders != 1 || !ok {
			t.Errorf("partition replicas: %v", p)
		}
	}
	cur, err := cl.Database("config").Collection("chunks").Find(ctx, bson.D{{Key: "ns", Value: "st.c"}})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []bson.M
	if err := cur.All(ctx, &chunks); err != nil || len(chunks) != len(parts) {
		t.Fatalf("%d chunks (%v), want %d", len(chunks), err, len(parts))
	}
	for _, ch := range chunks {
		id, _ := ch["partitionKeyRangeId"].(string)
		if want := fmt.Sprintf("node%d", leaderOf[id]); ch["shard"] != want {
			t.Errorf("chunk %s's shard %v, want %s (its group's leader)", id, ch["shard"], want)
		}
	}
	out, err := exec.Command(parsecBinary(t), "stats", "--uri", c.uri(), "--db", "st", "--collection", "c").CombinedOutput()
	for _, node := range leaderOf {
		if err != nil || !strings.Contains(string(out), fmt.Sprintf("node %d, 3/3 replicas", node)) || !strings.Contains(string(out), "leader") {
			t.Errorf("parsec stats on the cluster: %v\n%s", err, out)
			break
		}
	}
}

// TestClusterSplitsAcrossFailover: a sharded collection splits by size
// while writers insert and the writer is killed with SIGKILL: afterwards
// every acknowledged document is there exactly once, and the partition
// map and its statistics agree with a scan (each split is one entry of
// the log: applied whole or not at all).
func TestClusterSplitsAcrossFailover(t *testing.T) {
	c := startTestCluster(t, "--partition-max-bytes", "64KiB")
	cl := c.connect()
	db := cl.Database("splits")
	runOK(t, cl.Database("admin"), bson.D{{Key: "shardCollection", Value: "splits.c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}})
	coll := db.Collection("c")
	acked := insertKillingWriter(t, c, cl, coll, 600, 1500)

	stats := checkStatsAgainstScan(t, coll, "tenant")
	if stats.PartitionCount < 2 {
		t.Errorf("%d partitions: the collection never split", stats.PartitionCount)
	}
	seen := countIDs(t, coll)
	missing := 0
	for id := range acked {
		if seen[id] != 1 {
			missing++
		}
	}
	t.Logf("%d inserts acknowledged, %d documents in %d partitions", len(acked), len(seen), stats.PartitionCount)
	if missing > 0 {
		t.Errorf("%d acknowledged documents missing or stored twice", missing)
	}
}

// insertKillingWriter runs three writers inserting documents of 97
// tenants into coll, kills the writer node (SIGKILL) once before inserts
// are acknowledged, and stops them once after are; it returns the
// acknowledged _ids.
func insertKillingWriter(t *testing.T, c *testCluster, cl *mongo.Client, coll *mongo.Collection, before, after int) map[int]bool {
	t.Helper()
	ctx := testCtx(t)
	var mu sync.Mutex
	acked := map[int]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pad := strings.Repeat("p", 400)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := w*100_000 + i
				wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%03d", id%97)}, {Key: "n", Value: 0}, {Key: "pad", Value: pad}})
				cancel()
				if err == nil {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				}
			}
		}(w)
	}
	waitFor := func(n int) { waitCount(t, &mu, func() int { return len(acked) }, n, 60*time.Second) }
	waitFor(before)
	c.kill(c.primary(cl))
	waitFor(after)
	close(stop)
	wg.Wait()
	return acked
}

// countIDs counts coll's documents by _id.
func countIDs(t *testing.T, coll *mongo.Collection) map[int]int {
	t.Helper()
	ctx := testCtx(t)
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for cur.Next(ctx) {
		id, _ := cur.Current.Lookup("_id").AsInt64OK()
		seen[int(id)]++
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return seen
}

// TestClusterAuth: with --root-user on every node, the writer makes the
// user, and a client authenticates through the replica set or through a
// standby alone (which forwards the SASL conversation to the writer over
// the client's own connection); without credentials it is refused.
func TestClusterAuth(t *testing.T) {
	c := startTestCluster(t, "--root-user", "root", "--root-password", "s3cret-cluster")
	ctx := testCtx(t)
	hosts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		hosts[i] = n.client
	}
	uri := "mongodb://root:s3cret-cluster@" + strings.Join(hosts, ",") + "/?replicaSet=parsec&authSource=admin"
	set, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Disconnect(context.Background())
	if _, err := set.Database("secure").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert as root through the replica set: %v", err)
	}
	writer := c.primary(set)
	for _, n := range c.nodes {
		if n == writer {
			continue
		}
		direct, err := mongo.Connect(options.Client().ApplyURI("mongodb://root:s3cret-cluster@" + n.client + "/?directConnection=true&authSource=admin").SetTimeout(20 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer direct.Disconnect(context.Background())
		var got bson.M
		if err := direct.Database("secure").Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil {
			t.Errorf("read as root through standby node %d: %v", n.id, err)
		}
		anon, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + n.client + "/?directConnection=true").SetTimeout(20 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer anon.Disconnect(context.Background())
		err = anon.Database("secure").Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err()
		wantCode(t, err, 13, "Unauthorized")
		wrong, err := mongo.Connect(options.Client().ApplyURI("mongodb://root:wrong@" + n.client + "/?directConnection=true&authSource=admin").SetTimeout(20 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer wrong.Disconnect(context.Background())
		if err := wrong.Ping(ctx, nil); err == nil {
			t.Errorf("a wrong password through standby node %d was accepted", n.id)
		}
	}
}

// TestClusterJoin: a fourth node joins a running cluster with --join
// (through a standby, which forwards addNode to the writer), catches up,
// shows in every node's hello and in replSetGetStatus, and counts in the
// quorum: with the writer killed, the cluster still takes writes; the
// joined node restarts from its own state.
func TestClusterJoin(t *testing.T) {
	c := startTestCluster(t)
	cl := c.connect()
	ctx := testCtx(t)
	coll := cl.Database("join").Collection("c")
	docs := make([]any, 200)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	writer := c.primary(cl)
	var via *clusterNode
	for _, n := range c.nodes {
		if n != writer {
			via = n
			break
		}
	}
	n4 := &clusterNode{id: 4, dir: t.TempDir(), client: fmt.Sprintf("127.0.0.4:%d", c.port)}
	n4.args = []string{"--join", via.client, "--raft-address", fmt.Sprintf("127.0.0.4:%d", c.raft)}
	c.nodes = append(c.nodes, n4)
	c.start(n4)

	type member struct {
		Name    string  `bson:"name"`
		Health  float64 `bson:"health"`
		Applied int64   `bson:"raftAppliedIndex"`
	}
	var members []member
	caughtUp := func() bool {
		var st struct {
			Members []member `bson:"members"`
		}
		if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st); err != nil {
			return false
		}
		members = st.Members
		var writerApplied, joined int64 = 0, -1
		for _, m := range st.Members {
			if m.Name == writer.client {
				writerApplied = m.Applied
			}
			if m.Name == n4.client && m.Health == 1 {
				joined = m.Applied
			}
		}
		return len(st.Members) == 4 && joined > 0 && joined+5 >= writerApplied
	}
	for deadline := time.Now().Add(30 * time.Second); !caughtUp(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("node 4 did not join and catch up: %+v\n%s", members, n4.logText())
		}
	}
	// Every node names four hosts.
	for _, n := range c.nodes {
		direct, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + n.client + "/?directConnection=true").SetTimeout(20 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var hello struct {
			Hosts []string `bson:"hosts"`
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err := direct.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
				t.Fatal(err)
			}
			if len(hello.Hosts) == 4 || time.Now().After(deadline) {
				break
			}
		}
		_ = direct.Disconnect(context.Background())
		if len(hello.Hosts) != 4 {
			t.Errorf("node %d's hello lists %v", n.id, hello.Hosts)
		}
	}
	// A fourth member counts: the writer killed, three of four elect a
	// new writer, which takes writes.
	c.kill(writer)
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
		t.Fatalf("insert after the writer died, with four members: %v", err)
	}
	// The joined node restarts from its own state.
	c.kill(n4)
	c.start(n4)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if n, err := coll.CountDocuments(ctx, bson.D{}); err == nil && n == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the documents are not all there after node 4 restarted")
		}
	}
	if strings.Contains(n4.logText(), "refused") {
		t.Errorf("node 4's restart log:\n%s", n4.logText())
	}
}

// TestClusterTransactionScope: in a cluster a transaction writes to one
// physical partition; one that would write to a second is refused with
// 263 at that write, and nothing of it is committed.
func TestClusterTransactionScope(t *testing.T) {
	c := startTestCluster(t)
	cl := c.connect()
	ctx := testCtx(t)
	db := cl.Database("scope")
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "sharded"},
		{Key: "shardKey", Value: "tenant"}, {Key: "offerThroughput", Value: 40000}})
	sharded := db.Collection("sharded")
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	// Two writes: tenant "a", then tenant x. The sharded collection has
	// several physical partitions, so of 100 tenants some share a's and
	// some do not.
	var same, refused int
	for i := range 100 {
		x := fmt.Sprintf("t%03d", i)
		err := mongo.WithSession(ctx, sess, func(sc context.Context) error {
			if err := sess.StartTransaction(); err != nil {
				return err
			}
			if _, err := sharded.InsertOne(sc, bson.D{{Key: "tenant", Value: "a"}, {Key: "x", Value: x}}); err != nil {
				return err
			}
			if _, err := sharded.InsertOne(sc, bson.D{{Key: "tenant", Value: x}}); err != nil {
				_ = sess.AbortTransaction(context.Background())
				return err
			}
			return sess.CommitTransaction(sc)
		})
		var se mongo.ServerError
		switch {
		case err == nil:
			same++
		case errors.As(err, &se) && se.HasErrorCode(263):
			refused++
			if !strings.Contains(err.Error(), "one physical partition") {
				t.Errorf("refusal without the rule: %v", err)
			}
			if n, err := sharded.CountDocuments(ctx, bson.D{{Key: "x", Value: x}}); err != nil || n != 0 {
				t.Fatalf("a refused transaction left %d documents (%v)", n, err)
			}
		default:
			t.Fatalf("transaction with tenants a and %s: %v", x, err)
		}
	}
	if same == 0 || refused == 0 {
		t.Fatalf("%d transactions in one partition committed, %d across partitions refused: want some of each", same, refused)
	}
	if n, err := sharded.CountDocuments(ctx, bson.D{{Key: "tenant", Value: "a"}}); err != nil || int(n) != same {
		t.Fatalf("tenant a has %d documents (%v), want %d", n, err, same)
	}
	// Unsharded: one collection is one partition; two are two.
	one, two := db.Collection("one"), db.Collection("two")
	for _, coll := range []*mongo.Collection{one, two} {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if _, err := one.InsertOne(sc, bson.D{{Key: "_id", Value: 1}}); err != nil {
			return nil, err
		}
		return one.UpdateOne(sc, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 1}}}})
	}); err != nil {
		t.Fatalf("a transaction in one unsharded collection: %v", err)
	}
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if _, err := one.InsertOne(sc, bson.D{{Key: "_id", Value: 2}}); err != nil {
			return nil, err
		}
		return two.InsertOne(sc, bson.D{{Key: "_id", Value: 2}})
	})
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(263) {
		t.Fatalf("a transaction over two unsharded collections: %v", err)
	}
	if n, _ := one.CountDocuments(ctx, bson.D{{Key: "_id", Value: 2}}); n != 0 {
		t.Fatal("the refused transaction's first write was committed")
	}
}

// TestClusterFollowerReads: a read that allows a secondary is answered
// by a standby from its own replica — also when it is the only node up
// and the cluster has no writer — and sees the catalog changes its
// replica applies.
func TestClusterFollowerReads(t *testing.T) {
	c := startTestCluster(t)
	cl := c.connect()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	writer := c.primary(cl)
	coll := cl.Database("fr").Collection("c")
	var docs []any
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "even", Value: i%2 == 0}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var standby *clusterNode
	for _, n := range c.nodes {
		if n != writer {
			standby = n
			break
		}
	}
	direct, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + standby.client + "/?directConnection=true&readPreference=secondary").SetTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Disconnect(context.Background())
	dcoll := direct.Database("fr").Collection("c")
	count := func(coll *mongo.Collection, want int64) {
		t.Helper()
		var n int64
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if n, err = coll.CountDocuments(ctx, bson.D{}); err == nil && n == want || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || n != want {
			t.Fatalf("%s on the standby: %d documents (%v), want %d", coll.Name(), n, err, want)
		}
	}
	count(dcoll, 100)
	// The other two nodes die: no quorum, no writer. The standby still
	// answers reads that allow a secondary, from what it applied.
	for _, n := range c.nodes {
		if n != standby {
			c.kill(n)
		}
	}
	cur, err := dcoll.Find(ctx, bson.D{{Key: "even", Value: true}}, options.Find().SetBatchSize(7).SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatalf("find on the lone standby: %v", err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil || len(got) != 50 || got[49]["_id"] != int32(98) {
		t.Fatalf("find on the lone standby (getMore included): %d documents, %v", len(got), err)
	}
	var agg []bson.M
	acur, err := dcoll.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$even"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}})
	if err != nil || acur.All(ctx, &agg) != nil || len(agg) != 2 {
		t.Fatalf("aggregate on the lone standby: %v %v", agg, err)
	}
	// A write has no writer to go to.
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	if _, err := direct.Database("fr").Collection("c").InsertOne(wctx, bson.D{{Key: "_id", Value: "x"}}); err == nil {
		t.Fatal("a write succeeded with no writer")
	}
	wcancel()
	// Back to three: a new collection reaches the standby's catalog.
	for _, n := range c.nodes {
		if n != standby {
			c.start(n)
		}
	}
	cl2 := c.connect()
	c.primary(cl2)
	if _, err := cl2.Database("fr").Collection("d").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	count(direct.Database("fr").Collection("d"), 1)
	// (The write tried with no writer may have been applied since: the
	// client gave up waiting, not the standby forwarding it.)
	if _, err := cl2.Database("fr").Collection("c").DeleteMany(ctx, bson.D{{Key: "even", Value: bson.D{{Key: "$ne", Value: true}}}}); err != nil {
		t.Fatal(err)
	}
	count(dcoll, 50)
}
