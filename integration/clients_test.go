package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
)

// mongoshBin is mongosh as `make clients` installs it from
// clients/package-lock.json.
var mongoshBin = filepath.Join("clients", "node_modules", ".bin", "mongosh")

// requireMongosh fails the test (never skips) when mongosh is missing.
func requireMongosh(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(mongoshBin); err != nil {
		t.Fatalf("mongosh is not installed in clients/node_modules: run `make clients` (npm ci in integration/clients): %v", err)
	}
}

// clientEnv is the environment of a client program: the server's URI, no
// update checks or telemetry, and for mongosh a HOME of its own so it
// neither reads nor writes the user's ~/.mongodb.
func clientEnv(uri, home string) []string {
	env := append(os.Environ(), "PARSEC_URI="+uri, "MONGOSH_NO_UPDATE_CHECK=1", "DO_NOT_TRACK=1")
	if home != "" {
		env = append(env, "HOME="+home)
	}
	return env
}

// warningRE finds what a scenario must not print: warnings from the
// client about the server or about the calls the scenario makes
// (deprecations), and errors it did not catch.
var warningRE = regexp.MustCompile(`(?i)warn|deprecat|unexpected|uncaught`)

// TestClients runs every client scenario against one fresh server, two at
// a time:
//
//   - clients/mongosh_*.js with mongosh --quiet --file (assertions throw);
//   - clients/node_*.js with Node.js and the official driver;
//   - clients/python_*.py with /usr/bin/python3 and Debian's pymongo 3.11;
//   - govone/ (its own module, the v1 Go driver) with `go run .`.
//
// The scenarios in clients/throttled/ (mongosh_*.js, node_*.js) drive a
// collection over its RU budget, so they run against a second server with
// rate limiting on (`parsec serve --rate-limiting`); those in
// clients/auth/ against a third with access control and a root user
// (`parsec serve --root-user root`), authenticated as root.
//
// Each must exit 0, print "<name>: ok" and print no warning. A missing
// client fails the test with the command that installs it. The results
// go to clients/summary.txt, which .ci/run shows.
func TestClients(t *testing.T) {
	requireMongosh(t)
	if out, err := exec.Command("/usr/bin/python3", "-c", "import pymongo").CombinedOutput(); err != nil {
		t.Fatalf("pymongo is not installed for /usr/bin/python3: run `make clients` (apt-get install -y python3-pymongo): %v\n%s", err, out)
	}
	type scenario struct {
		name      string
		timeout   time.Duration
		throttled bool // run against the server with rate limiting
		auth      bool // run against the server with access control, as root
		cmd       func(ctx context.Context, uri string) *exec.Cmd
	}
	var scenarios []scenario
	home := t.TempDir()
	for _, pattern := range []string{"mongosh_*.js", "node_*.js", "python_*.py", "throttled/mongosh_*.js", "throttled/node_*.js", "auth/mongosh_*.js"} {
		files, _ := filepath.Glob(filepath.Join("clients", pattern))
		for _, file := range files {
			name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".js"), ".py")
			sc := scenario{name: name, timeout: 2 * time.Minute, throttled: strings.HasPrefix(pattern, "throttled/"), auth: strings.HasPrefix(pattern, "auth/")}
			db := "test"
			if sc.auth {
				db = "admin" // where the root user authenticates
			}
			switch {
			case strings.HasPrefix(name, "mongosh_"):
				sc.cmd = func(ctx context.Context, uri string) *exec.Cmd {
					cmd := exec.CommandContext(ctx, mongoshBin, uri+db, "--quiet", "--norc", "--file", file)
					cmd.Env = clientEnv(uri, home)
					return cmd
				}
			case strings.HasPrefix(name, "node_"):
				sc.cmd = func(ctx context.Context, uri string) *exec.Cmd {
					cmd := exec.CommandContext(ctx, "node", file)
					cmd.Env = clientEnv(uri, "")
					return cmd
				}
			default:
				sc.cmd = func(ctx context.Context, uri string) *exec.Cmd {
					cmd := exec.CommandContext(ctx, "/usr/bin/python3", file)
					cmd.Env = clientEnv(uri, "")
					return cmd
				}
			}
			scenarios = append(scenarios, sc)
		}
	}
	// The v1 Go driver: compiled on first use (the build cache keeps it).
	scenarios = append(scenarios, scenario{name: "govone", timeout: 5 * time.Minute, cmd: func(ctx context.Context, uri string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "go", "run", ".")
		cmd.Dir = "govone"
		cmd.Env = clientEnv(uri, "")
		return cmd
	}})
	if len(scenarios) < 8 {
		t.Fatalf("only %d client scenarios found", len(scenarios))
	}

	s := StartServer(t, ServerOptions{})
	throttling := StartServer(t, ServerOptions{RequestUnits: engine.RequestUnitOptions{RateLimiting: true}})
	const rootPwd = "clients-r00t"
	guarded := StartServer(t, ServerOptions{Auth: true, RootUser: "root", RootPassword: rootPwd})
	var mu sync.Mutex
	results := map[string]string{}
	t.Cleanup(func() { writeClientSummary(t, results) })
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			result := "FAIL"
			defer func() {
				mu.Lock()
				results[sc.name] = fmt.Sprintf("%-4s %-16s %5.1fs", result, sc.name, time.Since(start).Seconds())
				mu.Unlock()
			}()
			ctx, cancel := context.WithTimeout(context.Background(), sc.timeout)
			defer cancel()
			uri := s.URI()
			switch {
			case sc.throttled:
				uri = throttling.URI()
			case sc.auth:
				uri = "mongodb://root:" + rootPwd + "@" + guarded.Addr + "/"
			}
			out, err := sc.cmd(ctx, uri).CombinedOutput()
			if err != nil {
				t.Fatalf("%s failed: %v\n%s", sc.name, err, out)
			}
			want := sc.name + ": ok"
			if !strings.Contains(string(out), want) {
				t.Fatalf("%s did not print %q:\n%s", sc.name, want, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if warningRE.MatchString(line) {
					t.Fatalf("%s printed a warning: %q\n%s", sc.name, line, out)
				}
			}
			result = "PASS"
		})
	}
}

// writeClientSummary writes clients/summary.txt: one line per scenario.
func writeClientSummary(t *testing.T, results map[string]string) {
	lines := make([]string, 0, len(results))
	passed := 0
	for _, r := range results {
		lines = append(lines, r)
		if strings.HasPrefix(r, "PASS") {
			passed++
		}
	}
	sort.Strings(lines)
	text := strings.Join(lines, "\n") + fmt.Sprintf("\nclients: %d passed, %d failed\n", passed, len(results)-passed)
	if err := os.WriteFile(filepath.Join("clients", "summary.txt"), []byte(text), 0o644); err != nil {
		t.Errorf("write clients/summary.txt: %v", err)
	}
	t.Log("\n" + text)
}
