package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The cluster's administration from the command line: `parsec cluster
// add`, `remove` and `balancer` send addShard, removeShard and the
// balancer's commands to a running cluster, as mongosh's sh.addShard(),
// sh.removeShard() and sh.startBalancer() would.

// clusterAdminOptions are the flags the admin subcommands share.
type clusterAdminOptions struct {
	uri  string
	wait time.Duration
}

func newClusterAddCommand() *cobra.Command {
	o := &clusterAdminOptions{}
	var id uint64
	var raft string
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Add a node to a running cluster (addShard); the balancer moves replicas onto it",
		Long: `Add node --node-id at Raft address --raft-address to the cluster --uri
reaches (addShard). Start the node with
  parsec serve --node-id N --raft-address host:port --join <any node's client address>
(which sends the same request itself; either order works). It joins empty:
the balancer then moves partitions' replicas onto it until every node holds
about as many (parsec stats shows each move).`,
		Args: cobra.NoArgs,
		RunE: clientRun(func(ctx context.Context, out io.Writer) error {
			if id == 0 || raft == "" {
				return errors.New("--node-id and --raft-address are required")
			}
			return withAdmin(ctx, o, func(admin *mongo.Database) error {
				var r bson.M
				if err := admin.RunCommand(ctx, bson.D{{Key: "addShard", Value: raft}, {Key: "name", Value: fmt.Sprintf("node%d", id)}}).Decode(&r); err != nil {
					return err
				}
				fmt.Fprintf(out, "node %d (%s) is a member; the balancer moves replicas onto it\n", id, raft)
				return nil
			})
		}),
	}
	f := cmd.Flags()
	uriFlag(f, &o.uri)
	f.Uint64Var(&id, "node-id", 0, "the new node's --node-id")
	f.StringVar(&raft, "raft-address", "", "the new node's --raft-address (host:port)")
	return cmd
}

func newClusterRemoveCommand() *cobra.Command {
	o := &clusterAdminOptions{}
	var id uint64
	cmd := &cobra.Command{
		Use:   "remove",
		Short: "Drain a node of a running cluster and remove it (removeShard)",
		Long: `Drain node --node-id: the balancer moves every replica it holds to the other
nodes, then the node leaves the cluster (removeShard, asked until it
answers completed). Progress is printed as it goes; --wait bounds it. Stop
the node's process once it is removed.`,
		Args: cobra.NoArgs,
		RunE: clientRun(func(ctx context.Context, out io.Writer) error {
			if id == 0 {
				return errors.New("--node-id is required")
			}
			return withAdmin(ctx, o, func(admin *mongo.Database) error {
				return drainNode(ctx, admin, id, o.wait, out)
			})
		}),
	}
	f := cmd.Flags()
	uriFlag(f, &o.uri)
	f.Uint64Var(&id, "node-id", 0, "the node to remove")
	f.DurationVar(&o.wait, "wait", 30*time.Minute, "give up after this long (the draining goes on)")
	return cmd
}

// drainNode asks removeShard for node id until it completes.
func drainNode(ctx context.Context, admin *mongo.Database, id uint64, wait time.Duration, out io.Writer) error {
	deadline := time.Now().Add(wait)
	last := ""
	for {
		var r struct {
			State     string `bson:"state"`
			Remaining struct {
				Chunks int64 `bson:"chunks"`
			} `bson:"remaining"`
		}
		err := admin.RunCommand(ctx, bson.D{{Key: "removeShard", Value: fmt.Sprintf("node%d", id)}}).Decode(&r)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !retryableAdminError(err):
			return err
		case err == nil:
			line := r.State
			if r.State == "ongoing" {
				line = fmt.Sprintf("ongoing: %d replicas left on node %d", r.Remaining.Chunks, id)
			}
			if line != last {
				fmt.Fprintf(out, "%s  %s\n", time.Now().Format("15:04:05"), line)
				last = line
			}
			if r.State == "completed" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d is not drained after %v (still %s); ask again to follow it", id, wait, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// retryableAdminError is an error a removeShard asked again may not get:
// a connection closed by a writer handing its place over.
func retryableAdminError(err error) bool {
	var le mongo.LabeledError
	if errors.As(err, &le) && (le.HasErrorLabel("RetryableWriteError") || le.HasErrorLabel("NetworkError")) {
		return true
	}
	return mongo.IsNetworkError(err) || strings.Contains(err.Error(), "connection")
}

func newClusterBalancerCommand() *cobra.Command {
	o := &clusterAdminOptions{}
	var maxMoves int
	cmd := &cobra.Command{
		Use:   "balancer [status|start|stop]",
		Short: "Show, start or stop a running cluster's balancer",
		Long: `Show, start or stop a running cluster's balancer. start --max-moves N lets it
move up to N replicas at once (each between two nodes no other move uses);
the number stays until set again.`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"status", "start", "stop"},
	}
	cmd.RunE = func(c *cobra.Command, args []string) error {
		what := "status"
		if len(args) == 1 {
			what = args[0]
		}
		return clientRun(func(ctx context.Context, out io.Writer) error {
			return withAdmin(ctx, o, func(admin *mongo.Database) error {
				switch what {
				case "start", "stop":
					body := bson.D{{Key: "balancer" + strings.ToUpper(what[:1]) + what[1:], Value: 1}}
					if c.Flags().Changed("max-moves") {
						if what != "start" {
							return fmt.Errorf("--max-moves goes with start")
						}
						body = append(body, bson.E{Key: "maxConcurrentMoves", Value: maxMoves})
					}
					if err := admin.RunCommand(ctx, body).Err(); err != nil {
						return err
					}
				case "status":
				default:
					return fmt.Errorf("unknown balancer action %q: status, start or stop", what)
				}
				return printBalancer(ctx, admin, out)
			})
		})(c, nil)
	}
	uriFlag(cmd.Flags(), &o.uri)
	cmd.Flags().IntVar(&maxMoves, "max-moves", 1, "with start: how many replicas the balancer moves at once")
	return cmd
}

// printBalancer prints balancerStatus.
func printBalancer(ctx context.Context, admin *mongo.Database, out io.Writer) error {
	var st struct {
		Mode     string   `bson:"mode"`
		InRound  bool     `bson:"inBalancerRound"`
		Rounds   int64    `bson:"numBalancerRounds"`
		MaxMoves int      `bson:"maxConcurrentMoves"`
		Waiting  string   `bson:"waiting"`
		Draining []string `bson:"draining"`
		Moves    []struct {
			Group   int64  `bson:"raftGroup"`
			From    string `bson:"from"`
			To      string `bson:"to"`
			Phase   string `bson:"phase"`
			Bytes   int64  `bson:"partitionBytes"`
			Copied  int64  `bson:"bytesCopied"`
			Elapsed int64  `bson:"elapsedMillis"`
		} `bson:"moves"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStatus", Value: 1}}).Decode(&st); err != nil {
		return err
	}
	fmt.Fprintf(out, "balancer: %s, %d rounds, up to %d moves at once", st.Mode, st.Rounds, st.MaxMoves)
	if st.Waiting != "" {
		fmt.Fprintf(out, ", waiting: %s", st.Waiting)
	}
	fmt.Fprintln(out)
	if len(st.Draining) > 0 {
		fmt.Fprintf(out, "draining: %s\n", strings.Join(st.Draining, ", "))
	}
	for _, m := range st.Moves {
		from := m.From
		if from == "" {
			from = "(added)"
		}
		fmt.Fprintf(out, "moving group %d: %s -> %s, %s, %s of %s copied, %.1f s\n", m.Group, from, m.To, m.Phase, sizeString(m.Copied), sizeString(m.Bytes), float64(m.Elapsed)/1000)
	}
	return nil
}

// withAdmin connects to o.uri and runs fn on its admin database.
func withAdmin(ctx context.Context, o *clusterAdminOptions, fn func(*mongo.Database) error) error {
	client, err := mongo.Connect(options.Client().ApplyURI(o.uri).SetAppName("parsec cluster").SetServerSelectionTimeout(10 * time.Second))
	if err != nil {
		return err
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	return fn(client.Database("admin"))
}
