package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// topOptions are the flags of `parsec top`.
type topOptions struct {
	uri      string
	http     string
	interval time.Duration
	count    int
	limit    int
}

func newTopCommand() *cobra.Command {
	o := &topOptions{}
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Show the hottest physical partitions, refreshing in the terminal",
		Long: `Show the server's physical partitions ordered by how hot they are: normalized
RU consumption (the busiest second of the last minute against the
partition's RU/s), then RU/s over the last minute; with requests throttled
(or that would have been), storage and the hottest shard-key value of
each. It refreshes every --interval until interrupted, like top(1). It
reads GetPartitionStats, over the wire protocol (--uri) or the HTTP
console (--http).

  parsec top
  parsec top --http 127.0.0.1:8080 --interval 5s --limit 10`,
		Args: cobra.NoArgs,
		RunE: clientRun(func(ctx context.Context, out io.Writer) error { return runTop(ctx, o, out) }),
	}
	f := cmd.Flags()
	uriFlag(f, &o.uri)
	f.StringVar(&o.http, "http", "", "read the server's HTTP console (its --http address) instead of connecting with --uri")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "refresh every this long")
	f.IntVar(&o.count, "count", 0, "stop after this many refreshes (0: never)")
	f.IntVar(&o.limit, "limit", 20, "partitions to show")
	return cmd
}

// hotPartition is one row of parsec top.
type hotPartition struct {
	ns       string
	p        partStat
	limiting bool
}

func runTop(ctx context.Context, o *topOptions, out io.Writer) error {
	if o.interval <= 0 || o.limit < 1 {
		return fmt.Errorf("--interval must be positive and --limit at least 1")
	}
	so := &statsOptions{uri: o.uri, http: o.http, top: 1}
	src, closeSrc, err := so.source()
	if err != nil {
		return err
	}
	defer closeSrc()
	for i := 1; ; i++ {
		colls, err := fetchStats(ctx, src, so)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		buf.WriteString("\033[H\033[2J") // clear the terminal
		fmt.Fprintf(&buf, "parsec top — %s — every %s — hottest physical partitions\n\n", time.Now().Format("15:04:05"), o.interval)
		writeTop(&buf, colls, o.limit)
		if _, err := out.Write(buf.Bytes()); err != nil {
			return err
		}
		if o.count > 0 && i >= o.count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.interval):
		}
	}
}

// writeTop writes the limit hottest partitions of colls.
func writeTop(w io.Writer, colls []collStats, limit int) {
	var rows []hotPartition
	for _, c := range colls {
		for _, p := range c.Partitions {
			rows = append(rows, hotPartition{ns: c.Database + "." + c.Collection, p: p, limiting: c.RateLimiting})
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "no collections")
		return
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].p, rows[j].p
		if a.peak() != b.peak() {
			return a.peak() > b.peak()
		}
		return a.RULastMinute > b.RULastMinute
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "collection\tpartition\tnormalized\tRU/s (1 min)\tRU/s share\tRU this s\tthrottled\tdocuments\tstorage\thottest key\t")
	for i, r := range rows {
		if i == limit {
			break
		}
		hottest := ""
		if len(r.p.Hot) > 0 {
			hottest = fmt.Sprintf("%s (%s RU)", r.p.Hot[0].Key, ruString(r.p.Hot[0].RU))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f%%\t%s\t%.0f\t%s\t%d\t%d\t%s\t%s\t\n", r.ns, r.p.ID, r.p.peak(),
			ruString(r.p.RULastMinute/60), r.p.ThroughputShare, ruString(r.p.RULastSecond),
			r.p.overBudgetCount(r.limiting), r.p.DocumentCount, sizeString(r.p.StorageBytes), hottest)
	}
	_ = tw.Flush()
	if len(rows) > limit {
		fmt.Fprintf(w, "\n(%d more partitions)\n", len(rows)-limit)
	}
}
