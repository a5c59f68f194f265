package integration

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
)

// nodeDeprecationRE matches the notice mongosh 2.12 prints on Node.js
// older than 24: it is about the local Node.js, not about the server.
var nodeDeprecationRE = regexp.MustCompile(`(?s)Deprecation warnings:\n\s*- Using mongosh with Node\.js versions lower than 24\.0\.0 is deprecated[^\n]*\nSee https://www\.mongodb\.com/docs/mongodb-shell/install/#supported-operating-systems[^\n]*\n`)

// serverWarningRE finds anything in mongosh's greeting that would tell a
// user something is wrong with the server: startup warnings it could not
// parse, "non-genuine MongoDB" notices, errors, other warnings.
var serverWarningRE = regexp.MustCompile(`(?i)warn|error|unexpected|genuine|emulation|not supported|deprecat`)

// mongoshPiped runs mongosh as a person would but with its input piped:
// it prints the same greeting as in a terminal (log id, versions, startup
// warnings, notices), then the prompt and the result of each line.
func mongoshPiped(t *testing.T, uri, input string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mongoshBin, uri+"test", "--norc")
	cmd.Env = clientEnv(uri, t.TempDir())
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mongosh: %v\n%s", err, out)
	}
	return string(out)
}

// TestMongoshConnect checks what mongosh prints on connecting: the server
// version, the mongos prompt and no warning or error about the server.
// Against `parsec serve --in-memory` the one startup warning Parsec has is
// shown as MongoDB's are ("<time>: <message>").
func TestMongoshConnect(t *testing.T) {
	requireMongosh(t)
	t.Run("clean", func(t *testing.T) {
		t.Parallel()
		s := StartServer(t, ServerOptions{})
		out := mongoshPiped(t, s.URI(), "db.runCommand({ping: 1})\n")
		t.Logf("mongosh greeting:\n%s", out)
		for _, want := range []string{"Using MongoDB:\t\t7.0.0", "Using Mongosh:\t\t2.12.0", "[direct: mongos] test> {\n  ok: 1,\n  '$clusterTime': {"} {
			if !strings.Contains(out, want) {
				t.Errorf("greeting lacks %q", want)
			}
		}
		rest := nodeDeprecationRE.ReplaceAllString(out, "")
		for _, line := range strings.Split(rest, "\n") {
			if serverWarningRE.MatchString(line) {
				t.Errorf("mongosh printed a warning: %q", line)
			}
		}
	})
	t.Run("in-memory", func(t *testing.T) {
		t.Parallel()
		p := startProc(t, nil, "--listen", "127.0.0.1:0", "--in-memory")
		out := mongoshPiped(t, "mongodb://"+p.addr+"/", "db.runCommand({ping: 1})\n")
		t.Logf("mongosh greeting:\n%s", out)
		banner := regexp.MustCompile(`The server generated these startup warnings when booting\n\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00: Parsec is running with --in-memory: data is lost when the server stops\n`)
		if !banner.MatchString(out) {
			t.Errorf("the --in-memory startup warning is not shown as MongoDB's are")
		}
		if strings.Contains(out, "Unexpected log line format") {
			t.Errorf("mongosh could not parse a startup warning")
		}
		// Stop it and wait, so the process helper's cleanup finds it exited.
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.wait(t, 20*time.Second); err != nil {
			t.Errorf("parsec exited with %v:\n%s", err, p.log())
		}
	})
}

// tmuxSession is mongosh running in a tmux session of its own tmux server.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is the whole pane, history included, wrapped lines joined.
func (s *tmuxSession) screen() string {
	return s.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "mongosh")
}

var promptRE = regexp.MustCompile(`(?m)^\[direct: mongos\] \w+> `)

// waitPrompts waits until the pane shows n prompts.
func (s *tmuxSession) waitPrompts(n int) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sc := s.screen()
		if len(promptRE.FindAllString(sc, -1)) >= n {
			return sc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no prompt %d after 30s; the screen:\n%s", n, sc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMongoshInteractive drives mongosh in a terminal (tmux send-keys, then
// capture-pane) through what a person does first: the shell commands
// `use`, `show dbs`, `show collections`, a write, a query, an error, and
// checks the screen shows the prompt, the results and the errors as
// MongoDB's. The screen is logged and kept in clients/mongosh_session.txt.
func TestMongoshInteractive(t *testing.T) {
	requireMongosh(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed: run `make clients` (apt-get install -y tmux): %v", err)
	}
	srv := StartServer(t, ServerOptions{})
	bin, err := filepath.Abs(mongoshBin)
	if err != nil {
		t.Fatal(err)
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("parsec-test-%d", os.Getpid())}
	shell := fmt.Sprintf("env HOME=%s MONGOSH_NO_UPDATE_CHECK=1 DO_NOT_TRACK=1 TERM=xterm-256color %s %stest --norc", t.TempDir(), bin, srv.URI())
	s.tmux("new-session", "-d", "-s", "mongosh", "-x", "160", "-y", "50", shell)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })

	s.waitPrompts(1)
	steps := []string{
		`use shop`,
		`db.items.insertMany([{_id: 1, item: "tea", qty: 1}, {_id: 2, item: "coffee", qty: 5}, {_id: 3, item: "cocoa", qty: 2}])`,
		`show dbs`,
		`show collections`,
		`db.items.find({qty: {$gt: 1}}, {_id: 0}).sort({qty: -1})`,
		`db.items.updateOne({_id: 1}, {$inc: {qty: 10}})`,
		`db.items.insertOne({_id: 1, item: "again"})`,
		`db.items.find({$foo: 1})`,
	}
	var sc string
	for i, keys := range steps {
		s.tmux("send-keys", "-t", "mongosh", "-l", keys)
		s.tmux("send-keys", "-t", "mongosh", "Enter")
		sc = s.waitPrompts(i + 2)
	}
	sc = strings.TrimRight(sc, "\n ") + "\n"
	t.Logf("mongosh session:\n%s", sc)
	if err := os.WriteFile(filepath.Join("clients", "mongosh_session.txt"), []byte(sc), 0o644); err != nil {
		t.Errorf("write clients/mongosh_session.txt: %v", err)
	}
	for _, want := range []string{
		"Using MongoDB:          7.0.0",
		"[direct: mongos] test> use shop\nswitched to db shop\n[direct: mongos] shop> ",
		"insertedIds: { '0': 1, '1': 2, '2': 3 }",
		"[direct: mongos] shop> show collections\nitems\n",
		"[ { item: 'coffee', qty: 5 }, { item: 'cocoa', qty: 2 } ]\n",
		"matchedCount: 1,\n  modifiedCount: 1,",
		"MongoServerError: E11000 duplicate key error collection: shop.items index: _id_ dup key: { _id: 1 }\n",
		"MongoServerError[BadValue]: unknown top level operator: $foo.",
	} {
		if !strings.Contains(sc, want) {
			t.Errorf("the screen lacks %q", want)
		}
	}
	if !regexp.MustCompile(`show dbs\n(?:\S+\s+\d+(?:\.\d+)? (?:B|KiB|MiB)\n)*shop\s+\d+(?:\.\d+)? (?:B|KiB|MiB)\n`).MatchString(sc) {
		t.Errorf("show dbs does not list shop with its size")
	}
	for _, bad := range []string{"Unexpected log line", "startup warnings", "Uncaught"} {
		if strings.Contains(sc, bad) {
			t.Errorf("the screen shows %q", bad)
		}
	}
}

// TestMongoshThrottling shows a 16500 as a person using mongosh sees it:
// against a server with rate limiting, a loop of 100 KB inserts into a
// collection of the default 400 RU/s stops at the first refusal, printed
// as "MongoServerError[TooManyRequests]: Error=16500, RetryAfterMs=...".
// (clients/throttled/ holds the scripted scenarios TestClients runs.)
func TestMongoshThrottling(t *testing.T) {
	requireMongosh(t)
	srv := StartServer(t, ServerOptions{RequestUnits: engine.RequestUnitOptions{RateLimiting: true}})
	out := mongoshPiped(t, srv.URI(), strings.Join([]string{
		`use shop`,
		`for (let i = 0; i < 200; i++) db.big.insertOne({_id: i, pad: 'x'.repeat(100 * 1024)})`,
		`db.big.countDocuments() < 200`,
		`db.runCommand({customAction: 'GetPartitionStats', collection: 'big'}).throttledRequests`,
	}, "\n")+"\n")
	t.Logf("mongosh:\n%s", out)
	// Piped, mongosh prefixes an uncaught error with "Uncaught " and a
	// carriage return.
	refused := regexp.MustCompile(`(?m)^\[direct: mongos\] shop> (?:Uncaught[ \r]*)?MongoServerError\[TooManyRequests\]: Error=16500, RetryAfterMs=(\d+), Details='Response status code does not indicate success: TooManyRequests \(429\); Substatus: 3200; Reason: \(Request rate is large\. More Request Units may be needed, so no changes were made\. Please retry this request later\. Learn more: http://aka\.ms/cosmosdb-error-429\)'$`)
	m := refused.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("mongosh does not show the 16500 as MongoServerError[TooManyRequests] with RetryAfterMs")
	}
	if ms, _ := strconv.Atoi(m[1]); ms < 1 || ms > 1000 {
		t.Errorf("RetryAfterMs=%s for a 50 RU insert at 400 RU/s", m[1])
	}
	for _, want := range []string{"[direct: mongos] shop> true\n", "[direct: mongos] shop> 1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q: the loop did not stop at the first refusal", want)
		}
	}
}

// TestMongoshCosmosConnectionString: mongosh with a Cosmos DB connection
// string (host changed, certificate trusted) reaches the replica set
// "globaldb" through TLS as the account, and shows the replica set prompt.
func TestMongoshCosmosConnectionString(t *testing.T) {
	requireMongosh(t)
	tlsCfg, caFile := selfSignedTLS(t)
	s := StartServer(t, ServerOptions{TLS: tlsCfg, Auth: true, RootUser: "acct", RootPassword: "k3y/+=", ReplicaSet: "globaldb"})
	_, port, _ := strings.Cut(s.Addr, ":")
	uri := "mongodb://acct:" + url.QueryEscape("k3y/+=") + "@localhost:" + port + "/?ssl=true&replicaSet=globaldb&retrywrites=false&maxIdleTimeMS=120000&appName=@acct@&tlsCAFile=" + url.QueryEscape(caFile)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mongoshBin, uri, "--norc")
	cmd.Env = clientEnv(uri, t.TempDir())
	cmd.Stdin = strings.NewReader("db.c.insertOne({_id: 1}).insertedId\nrs.status().members[0].stateStr\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mongosh: %v\n%s", err, out)
	}
	for _, want := range []string{"globaldb [primary] test> 1", "globaldb [primary] test> PRIMARY"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("mongosh output lacks %q:\n%s", want, out)
		}
	}
}
