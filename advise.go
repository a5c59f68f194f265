package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/parsecdb/parsec/engine"
	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// adviseOptions are the flags of `parsec advise`.
type adviseOptions struct {
	uri          string
	db           string
	collection   string
	keys         []string
	throughput   int
	autoscaleMax int
	sampleSize   int64
	json         bool
}

func newAdviseCommand() *cobra.Command {
	o := &adviseOptions{}
	cmd := &cobra.Command{
		Use:   "advise",
		Short: "Compare candidate partition keys for a collection before sharding it",
		Long: `Connect to a running Parsec server and ask, for each candidate partition
key (--key, repeatable: a path, hashed as Cosmos DB's partition key, or a
key pattern such as '{"ts": 1}' or '{"tenant": 1, "user": 1}', placed by
range as Parsec shards by it), how the collection would spread over Cosmos DB's
physical partitions at a throughput (--throughput or --autoscale-max; by
default the collection's own): the partitions it would start with, the
storage and RU/s each would carry against its budget, the largest logical
partitions against the logical-partition limit, the share of the sampled
queries that would fan out, the predicted share of 16500 (TooManyRequests),
and a verdict. It reads {customAction: "AnalyzePartitionKey"}; run
configureQueryAnalyzer on the collection first so that the routing of its
queries counts.

  parsec advise --db shop --collection orders --key customer --key region
  parsec advise --db shop --collection orders --key customer --throughput 40000
  parsec advise --db shop --collection orders --key customer --key '{"created": 1}'
  parsec advise --db shop --collection orders --key customer --autoscale-max 100000 --json`,
		Args: cobra.NoArgs,
		RunE: clientRun(func(ctx context.Context, out io.Writer) error { return runAdvise(ctx, o, out) }),
	}
	f := cmd.Flags()
	uriFlag(f, &o.uri)
	f.StringVar(&o.db, "db", "", "the collection's database")
	f.StringVar(&o.collection, "collection", "", "the collection")
	f.StringArrayVar(&o.keys, "key", nil, "a candidate partition key: a path (hashed), or a key pattern such as '{\"ts\": 1}' (repeat to compare several)")
	f.IntVar(&o.throughput, "throughput", 0, "manual throughput in RU/s to evaluate at")
	f.IntVar(&o.autoscaleMax, "autoscale-max", 0, "autoscale maximum throughput in RU/s to evaluate at")
	f.Int64Var(&o.sampleSize, "sample-size", 0, "documents to sample (0: the server's default)")
	f.BoolVar(&o.json, "json", false, "print the server's answer as JSON")
	return cmd
}

// adviseCommand is the AnalyzePartitionKey command the options ask for.
func adviseCommand(o *adviseOptions) (bson.D, error) {
	switch {
	case o.db == "" || o.collection == "":
		return nil, fmt.Errorf("--db and --collection are required")
	case len(o.keys) == 0:
		return nil, fmt.Errorf("give at least one --key")
	case o.throughput > 0 && o.autoscaleMax > 0:
		return nil, fmt.Errorf("give --throughput or --autoscale-max, not both")
	}
	cmd, err := engine.AdviseRequest{DB: o.db, Collection: o.collection, Keys: o.keys,
		Throughput: int64(o.throughput), AutoscaleMax: int64(o.autoscaleMax), SampleSize: o.sampleSize}.Command()
	if err != nil {
		var ce *engine.CommandError
		if errors.As(err, &ce) {
			return nil, errors.New(ce.Msg)
		}
		return nil, err
	}
	return cmd, nil
}

func runAdvise(ctx context.Context, o *adviseOptions, out io.Writer) error {
	cmd, err := adviseCommand(o)
	if err != nil {
		return err
	}
	client, err := mongo.Connect(options.Client().ApplyURI(o.uri).SetAppName("parsec advise").SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	raw, err := client.Database(o.db).RunCommand(ctx, cmd).Raw()
	if err != nil {
		return err
	}
	if o.json {
		js, err := bson.MarshalExtJSONIndent(raw, false, false, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(js))
		return err
	}
	return printAdvice(out, o.db+"."+o.collection, raw)
}

// printAdvice writes the candidates side by side, one column each.
func printAdvice(out io.Writer, ns string, raw bson.Raw) error {
	cands, err := raw.Lookup("candidates").Array().Values()
	if err != nil {
		return fmt.Errorf("unexpected reply: %v", raw)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\t", ns)
	for _, c := range cands {
		fmt.Fprintf(tw, "%s\t", c.Document().Lookup("key").StringValue())
	}
	fmt.Fprintln(tw)
	row := func(label string, cell func(bson.Raw) string) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, c := range cands {
			fmt.Fprintf(tw, "%s\t", cell(c.Document()))
		}
		fmt.Fprintln(tw)
	}
	num := func(path ...string) func(bson.Raw) string {
		return func(d bson.Raw) string {
			v, err := d.LookupErr(path...)
			if err != nil {
				return "-"
			}
			if f, ok := v.AsFloat64OK(); ok {
				return fmt.Sprintf("%.4g", f)
			}
			return v.String()
		}
	}
	row("verdict", func(d bson.Raw) string { return d.Lookup("verdict").StringValue() })
	row("physical partitions", num("physicalPartitions"))
	row("RU/s per partition", num("partitionBudgetRUs"))
	row("distinct values", num("numDistinctValues"))
	row("documents missing the key", num("numDocsMissingShardKey"))
	row("largest partition storage %", func(d bson.Raw) string {
		parts, _ := d.Lookup("partitions").Array().Values()
		most := 0.0
		for _, p := range parts {
			most = max(most, p.Document().Lookup("dataShare").Double())
		}
		return fmt.Sprintf("%.1f", most)
	})
	row("busiest partition budget %", num("maxBudgetShare"))
	row("largest logical partition", func(d bson.Raw) string {
		lps, _ := d.Lookup("largestLogicalPartitions").Array().Values()
		if len(lps) == 0 {
			return "-"
		}
		lp := lps[0].Document()
		return fmt.Sprintf("%s (%s bytes)", lp.Lookup("shardKey").String(), num("dataBytes")(lp))
	})
	row("queries fanning out %", num("workload", "fanOutPercent"))
	row("predicted 16500 %", num("predictedThrottledPercent"))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cands {
		d := c.Document()
		fmt.Fprintf(out, "\n%s: %s\n", d.Lookup("key").StringValue(), d.Lookup("advice").StringValue())
	}
	return nil
}
