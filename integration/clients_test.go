package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClients runs every scenario in clients/ against a fresh server:
// mongosh_*.js with mongosh, node_*.js with Node.js and the official
// driver. The packages come from clients/package-lock.json (`make test`
// installs them).
func TestClients(t *testing.T) {
	modules := filepath.Join("clients", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, ".bin", "mongosh")); err != nil {
		t.Fatalf("mongosh is not installed in %s: run `make test` (or `npm ci` in integration/clients): %v", modules, err)
	}
	scripts, _ := filepath.Glob(filepath.Join("clients", "*.js"))
	if len(scripts) == 0 {
		t.Fatal("no client scenarios found")
	}
	s := StartServer(t, ServerOptions{})
	for _, script := range scripts {
		name := filepath.Base(script)
		t.Run(strings.TrimSuffix(name, ".js"), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var cmd *exec.Cmd
			switch {
			case strings.HasPrefix(name, "mongosh_"):
				cmd = exec.CommandContext(ctx, filepath.Join(modules, ".bin", "mongosh"), s.URI()+"test", "--quiet", "--norc", "--file", script)
			case strings.HasPrefix(name, "node_"):
				cmd = exec.CommandContext(ctx, "node", script)
			default:
				t.Fatalf("scenario %s is neither mongosh_*.js nor node_*.js", name)
			}
			cmd.Env = append(os.Environ(), "PARSEC_URI="+s.URI(), "MONGOSH_NO_UPDATE_CHECK=1", "DO_NOT_TRACK=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s failed: %v\n%s", name, err, out)
			}
			want := strings.TrimSuffix(name, ".js") + ": ok"
			if !strings.Contains(string(out), want) {
				t.Fatalf("%s did not print %q:\n%s", name, want, out)
			}
		})
	}
}
