// Command parsec is a database server that speaks the MongoDB wire protocol
// and partitions data the way Azure Cosmos DB does. `parsec serve` runs it;
// `parsec stats` shows how a running server's documents spread over
// physical partitions, `parsec top` its hottest partitions, refreshing;
// `parsec version` prints its version.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/parsecdb/parsec/engine"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "parsec",
		Short: "Parsec: a MongoDB wire-protocol server with Cosmos DB-style partitions and request units",
		Long: `Parsec speaks the MongoDB wire protocol, so mongosh, the official drivers and
mongo-tools connect to it unchanged. It keeps data in an embedded Badger store.

Start a server with "parsec serve"; every flag can also be given as an
environment variable PARSEC_<FLAG> (for example PARSEC_LISTEN=127.0.0.1:27018).`,
		SilenceUsage: true,
		// --version prints what "parsec version" prints.
		Version: engine.Version,
	}
	root.SetVersionTemplate(versionLine())
	root.AddCommand(newServeCommand(), newClusterCommand(), newStatsCommand(), newAdviseCommand(), newTopCommand(), newVersionCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Parsec's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprint(cmd.OutOrStdout(), versionLine())
		},
	}
}

// versionLine is the version as "parsec version" and "parsec --version"
// print it.
func versionLine() string {
	return fmt.Sprintf("parsec %s (MongoDB %s wire protocol)\n", engine.Version, engine.MongoVersion)
}

// applyEnv sets every flag not given on the command line from its
// PARSEC_<FLAG> environment variable.
func applyEnv(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := "PARSEC_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if e := flags.Set(f.Name, v); e != nil {
				err = fmt.Errorf("environment variable %s: %w", name, e)
			}
		}
	})
	return err
}
