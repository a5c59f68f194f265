package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local cluster of Parsec nodes, and change a running cluster's members",
	}
	cmd.AddCommand(newClusterUpCommand(), newClusterAddCommand(), newClusterRemoveCommand(), newClusterBalancerCommand())
	return cmd
}

// clusterUpOptions are the flags of `parsec cluster up`.
type clusterUpOptions struct {
	nodes    int
	dir      string
	port     int
	raftPort int
	httpPort int
	extra    []string
}

func newClusterUpCommand() *cobra.Command {
	o := &clusterUpOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster on loopback addresses and stop it on Ctrl-C",
		Long: `Start a cluster of --nodes Parsec nodes on this machine: node N listens
for clients on 127.0.0.N:--port and talks Raft on 127.0.0.N:--raft-port,
with its data under --dir/nodeN (kept across runs). It prints the
connection string, passes every node's log through with a [nodeN] prefix,
and stops all nodes on Ctrl-C (SIGINT or SIGTERM).

Extra flags for every node's "parsec serve" go after --, for example
  parsec cluster up -- --default-consistency strong`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			o.extra = args
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return clusterUp(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 3, "how many nodes (1 to 7; a majority of them must be up to take writes)")
	f.StringVar(&o.dir, "dir", "./parsec-cluster", "directory holding each node's data directory (nodeN)")
	f.IntVar(&o.port, "port", 27017, "client port of every node")
	f.IntVar(&o.raftPort, "raft-port", 7001, "Raft port of every node")
	f.IntVar(&o.httpPort, "http-port", 8080, "port of every node's metrics and console, at its own address (0: none); the writer serves them, standbys answer 503 naming it")
	return cmd
}

// clusterUp runs the nodes until ctx is done or every node exited.
func clusterUp(ctx context.Context, o *clusterUpOptions, stdout, stderr io.Writer) error {
	if o.nodes < 1 || o.nodes > 7 {
		return fmt.Errorf("--nodes must be between 1 and 7")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var members, hosts []string
	for i := 1; i <= o.nodes; i++ {
		members = append(members, fmt.Sprintf("%d=127.0.0.%d:%d", i, i, o.raftPort))
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d:%d", i, o.port))
	}
	var logMu sync.Mutex
	var wg sync.WaitGroup
	var cmds []*exec.Cmd
	exited := make(chan int, o.nodes)
	for i := 1; i <= o.nodes; i++ {
		dir := filepath.Join(o.dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		web := ""
		if o.httpPort > 0 {
			web = fmt.Sprintf("127.0.0.%d:%d", i, o.httpPort)
		}
		args := append([]string{"serve", "--node-id", strconv.Itoa(i), "--initial-members", strings.Join(members, ","),
			"--listen", hosts[i-1], "--data-dir", dir, "--http", web}, o.extra...)
		c := exec.Command(self, args...)
		c.Env = os.Environ()
		pipe, err := c.StderrPipe()
		if err != nil {
			return err
		}
		c.Stdout = c.Stderr
		if err := c.Start(); err != nil {
			for _, started := range cmds {
				_ = started.Process.Kill()
			}
			wg.Wait()
			return fmt.Errorf("start node %d: %w", i, err)
		}
		cmds = append(cmds, c)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sc := bufio.NewScanner(pipe)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				logMu.Lock()
				fmt.Fprintf(stderr, "[node%d] %s\n", i, sc.Text())
				logMu.Unlock()
			}
			_ = c.Wait()
			exited <- i
		}(i)
	}
	fmt.Fprintf(stdout, "Parsec cluster of %d nodes (data under %s)\nconnection string: mongodb://%s/?replicaSet=parsec\nCtrl-C stops it.\n", o.nodes, o.dir, strings.Join(hosts, ","))
	running := o.nodes
	for running > 0 {
		select {
		case <-ctx.Done():
			stopNodes(cmds, exited, running)
			wg.Wait()
			return nil
		case i := <-exited:
			running--
			logMu.Lock()
			fmt.Fprintf(stderr, "node %d exited (%v)\n", i, cmds[i-1].ProcessState)
			logMu.Unlock()
		}
	}
	wg.Wait()
	return errors.New("every node exited")
}

// stopNodes asks each node to stop (SIGTERM), waits for the running
// ones to exit (each reports on exited) and kills those still running
// after 30 s.
func stopNodes(cmds []*exec.Cmd, exited <-chan int, running int) {
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for ; running > 0; running-- {
		select {
		case <-exited:
		case <-deadline.C:
			for _, c := range cmds {
				_ = c.Process.Kill()
			}
			return
		}
	}
}
