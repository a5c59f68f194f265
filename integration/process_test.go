package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// parsecBinary builds the parsec command once per test run (or uses
// $PARSEC_BIN) so process-level behaviour is tested on the real binary.
func parsecBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("PARSEC_BIN"); p != "" {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "parsec-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "parsec")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/parsecdb/parsec").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a parsec process started by a test.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	stderr strings.Builder
	exited chan error
}

var addrRE = regexp.MustCompile(`address=(127\.0\.0\.1:\d+)`)

// startProc runs `parsec serve` with args and waits for its start-up line.
func startProc(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p, err := tryStartProc(t, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func tryStartProc(t *testing.T, env []string, args ...string) (*proc, error) {
	t.Helper()
	cmd := exec.Command(parsecBinary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if m := addrRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		// Kill is harmless on a process that has exited; reading
		// ProcessState here would race with the goroutine in cmd.Wait.
		_ = cmd.Process.Kill()
	})
	select {
	case p.addr = <-found:
		return p, nil
	case err := <-p.exited:
		p.exited <- err
		return p, fmt.Errorf("parsec exited before listening: %v\n%s", err, p.log())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		return p, fmt.Errorf("parsec did not start in 20s:\n%s", p.log())
	}
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for the process to exit and returns its error.
func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-p.exited:
		return err
	case <-time.After(d):
		t.Fatalf("parsec did not exit within %v:\n%s", d, p.log())
		return nil
	}
}

func connect(t *testing.T, addr string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/").SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

func countDocs(t *testing.T, coll *mongo.Collection) int {
	t.Helper()
	cur, err := coll.Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	return len(docs)
}

// TestKill9Durability writes with j:true and with the default write
// concern, kills the process with SIGKILL, restarts it on the same data
// directory and checks every acknowledged write is there.
func TestKill9Durability(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir)
	ctx := context.Background()
	c := connect(t, p.addr)
	journaled := c.Database("dur").Collection("j", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 1, Journal: boolPtr(true)}))
	plain := c.Database("dur").Collection("plain")
	const n = 300
	for i := range n {
		if _, err := journaled.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: strings.Repeat("x", 100)}}); err != nil {
			t.Fatal(err)
		}
	}
	batch := make([]any, 0, 1000)
	for i := range 1000 {
		batch = append(batch, bson.D{{Key: "_id", Value: i}})
	}
	if _, err := journaled.Database().Collection("jbatch", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 1, Journal: boolPtr(true)})).InsertMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := plain.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := plain.DeleteMany(ctx, bson.D{{Key: "_id", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)

	p2 := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir)
	c2 := connect(t, p2.addr)
	db := c2.Database("dur")
	if got := countDocs(t, db.Collection("j")); got != n {
		t.Errorf("j:true inserts after kill -9: %d documents, want %d", got, n)
	}
	if got := countDocs(t, db.Collection("jbatch")); got != 1000 {
		t.Errorf("j:true batch after kill -9: %d documents, want 1000", got)
	}
	if got := countDocs(t, db.Collection("plain")); got != n-1 {
		t.Errorf("default write concern after kill -9: %d documents, want %d", got, n-1)
	}
	// the counters behind collStats are exact after the crash too
	var stats struct {
		Count int64 `bson:"count"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: "plain"}}).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	if stats.Count != n-1 {
		t.Errorf("collStats count after kill -9 = %d, want %d", stats.Count, n-1)
	}
}

func boolPtr(b bool) *bool { return &b }

// TestGracefulShutdown sends SIGTERM: the process exits 0 after closing
// the store, and the data is there after a restart.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir)
	c := connect(t, p.addr)
	ctx := context.Background()
	if _, err := c.Database("g").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: "kept"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log())
	}
	if !strings.Contains(p.log(), "parsec stopped") {
		t.Errorf("no clean-stop line in the log:\n%s", p.log())
	}
	p2 := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir)
	if got := countDocs(t, connect(t, p2.addr).Database("g").Collection("c")); got != 1 {
		t.Errorf("after restart: %d documents, want 1", got)
	}
}

// TestSecondServerSameDataDir: a second server on a data directory in use
// fails fast with a clear message and the first keeps serving.
func TestSecondServerSameDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir)
	start := time.Now()
	second, err := tryStartProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir)
	if err == nil {
		t.Fatalf("second server on the same data dir started at %s", second.addr)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("second server took %v to fail", time.Since(start))
	}
	if !strings.Contains(second.log(), "already in use") {
		t.Errorf("second server's message does not say the directory is in use:\n%s", second.log())
	}
	if second.cmd.ProcessState == nil || second.cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("second server should exit non-zero")
	}
	if err := connect(t, p.addr).Ping(context.Background(), nil); err != nil {
		t.Errorf("first server stopped serving: %v", err)
	}
}

// TestEnvironmentFlags: every flag can come from PARSEC_<FLAG>.
func TestEnvironmentFlags(t *testing.T) {
	t.Parallel()
	p := startProc(t, []string{"PARSEC_LISTEN=127.0.0.1:0", "PARSEC_IN_MEMORY=true", "PARSEC_LOG_LEVEL=debug", "PARSEC_MAX_CONNECTIONS=50"})
	if !strings.Contains(p.log(), "data_dir=\"(in memory)\"") {
		t.Errorf("PARSEC_IN_MEMORY not applied; start-up log:\n%s", p.log())
	}
	var opts struct {
		Parsed bson.M `bson:"parsed"`
	}
	if err := connect(t, p.addr).Database("admin").RunCommand(context.Background(), bson.D{{Key: "getCmdLineOpts", Value: 1}}).Decode(&opts); err != nil {
		t.Fatal(err)
	}
	if opts.Parsed["maxConnections"] != int64(50) || opts.Parsed["inMemory"] != true {
		t.Errorf("parsed options = %v", opts.Parsed)
	}
	bad, err := tryStartProc(t, []string{"PARSEC_LOG_LEVEL=loud"}, "--listen", "127.0.0.1:0", "--in-memory")
	if err == nil {
		t.Fatalf("bad PARSEC_LOG_LEVEL accepted")
	}
	if !strings.Contains(bad.log(), "log-level") {
		t.Errorf("error does not name the flag:\n%s", bad.log())
	}
}

// TestStartupLine: one line with version, address and data dir.
func TestStartupLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir)
	var line string
	for _, l := range strings.Split(p.log(), "\n") {
		if strings.Contains(l, "parsec started") {
			line = l
		}
	}
	for _, want := range []string{"version=", "address=127.0.0.1:", "data_dir=" + dir} {
		if !strings.Contains(line, want) {
			t.Errorf("start-up line %q lacks %q", line, want)
		}
	}
	out, err := exec.Command(parsecBinary(t), "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "parsec ") {
		t.Errorf("parsec version: %q, %v", out, err)
	}
	help, _ := exec.Command(parsecBinary(t), "serve", "--help").Output()
	for _, flag := range []string{"--listen", "--data-dir", "--in-memory", "--log-level", "--max-connections", "PARSEC_"} {
		if !strings.Contains(string(help), flag) {
			t.Errorf("serve --help does not mention %s", flag)
		}
	}
}

// TestRootUser: --root-user with PARSEC_ROOT_PASSWORD turns access control
// on and makes a root user at once; the password never shows in
// getCmdLineOpts; the two flags go together.
func TestRootUser(t *testing.T) {
	t.Parallel()
	p := startProc(t, []string{"PARSEC_ROOT_PASSWORD=from-env"}, "--listen", "127.0.0.1:0", "--in-memory", "--root-user", "boss")
	ctx := context.Background()
	anon := connect(t, p.addr)
	_, err := anon.Database("test").Collection("c").InsertOne(ctx, bson.D{})
	wantUnauthorized(t, err, "requires authentication")

	opts := options.Client().ApplyURI("mongodb://boss:from-env@" + p.addr + "/?authSource=admin").SetServerSelectionTimeout(5 * time.Second)
	boss, err := mongo.Connect(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = boss.Disconnect(ctx) }()
	if _, err := boss.Database("test").Collection("c").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatalf("root user's insert: %v", err)
	}
	raw, err := boss.Database("admin").RunCommand(ctx, bson.D{{Key: "getCmdLineOpts", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw.String(), "from-env") {
		t.Errorf("getCmdLineOpts shows the root password: %s", raw)
	}

	flagged := startProc(t, nil, "--listen", "127.0.0.1:0", "--in-memory", "--root-user", "boss", "--root-password", "on-the-command-line")
	fc, err := mongo.Connect(options.Client().ApplyURI("mongodb://boss:on-the-command-line@" + flagged.addr + "/?authSource=admin").SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fc.Disconnect(ctx) }()
	raw, err = fc.Database("admin").RunCommand(ctx, bson.D{{Key: "getCmdLineOpts", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw.String(), "on-the-command-line") || !strings.Contains(raw.String(), "redacted") {
		t.Errorf("getCmdLineOpts does not redact --root-password: %s", raw)
	}

	bad, err := tryStartProc(t, nil, "--listen", "127.0.0.1:0", "--in-memory", "--root-user", "boss")
	if err == nil {
		t.Fatal("--root-user without a password started")
	}
	if !strings.Contains(bad.log(), "--root-password") {
		t.Errorf("error does not name --root-password:\n%s", bad.log())
	}
}

// TestTLSSelfSigned: --tls-self-signed writes its certificate to the data
// directory, and a client that trusts it connects through TLS to the
// replica set --replica-set names.
func TestTLSSelfSigned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir, "--tls-self-signed", "--replica-set", "rs0")
	caFile := filepath.Join(dir, "tls-cert.pem")
	if _, err := os.Stat(caFile); err != nil {
		t.Fatalf("no certificate in the data directory: %v\n%s", err, p.log())
	}
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + p.addr + "/?tls=true&replicaSet=rs0&tlsCAFile=" + caFile).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Disconnect(ctx) }()
	if _, err := c.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("insert through TLS to replica set rs0: %v\n%s", err, p.log())
	}
	for _, args := range [][]string{
		{"--advertise", "h:1"},
		{"--tls-cert-file", caFile},
		{"--tls-self-signed", "--tls-cert-file", caFile, "--tls-key-file", caFile},
	} {
		bad, err := tryStartProc(t, nil, append([]string{"--listen", "127.0.0.1:0", "--in-memory"}, args...)...)
		if err == nil {
			t.Errorf("%v: started", args)
			continue
		}
		if !strings.Contains(bad.log(), args[0]) {
			t.Errorf("%v: the error does not name %s:\n%s", args, args[0], bad.log())
		}
	}
}
