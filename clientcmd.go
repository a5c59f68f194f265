package main

import (
	"context"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The client subcommands (stats, top, advise) share their start: flags
// from the environment, a context that Ctrl-C or SIGTERM cancels, and the
// server's address.

// clientRun makes a cobra RunE of run.
func clientRun(run func(ctx context.Context, out io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := applyEnv(cmd.Flags()); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return run(ctx, cmd.OutOrStdout())
	}
}

// uriFlag is the --uri flag of a client subcommand.
func uriFlag(f *pflag.FlagSet, uri *string) {
	f.StringVar(uri, "uri", "mongodb://127.0.0.1:27017", "connection string of the server")
}
