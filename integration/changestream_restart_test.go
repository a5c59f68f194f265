package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeChangeStreamRestart runs clients/restart/node_changestream.js
// (the Node.js driver): when it prints RESTART, the server is killed
// with SIGKILL and started again on the same address and data, and the
// script is told BACK; it then checks its stream resumed with nothing
// lost or repeated, and that resumeAfter its last token works.
func TestNodeChangeStreamRestart(t *testing.T) {
	requireMongosh(t) // the Node.js driver comes with the client packages
	dir := t.TempDir()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir, "--http", "")
	addr := p.addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("clients", "restart", "node_changestream.js"))
	cmd.Env = clientEnv(fmt.Sprintf("mongodb://%s/", addr), "")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if line != "RESTART" {
			continue
		}
		_ = p.cmd.Process.Kill()
		_ = p.wait(t, 20*time.Second)
		p = startProc(t, nil, "--listen", addr, "--data-dir", dir, "--http", "")
		if _, err := io.WriteString(stdin, "BACK\n"); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	if err != nil || !strings.Contains(out.String(), "node_changestream: ok") {
		t.Fatalf("node_changestream: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), stderr.String())
	}
}
