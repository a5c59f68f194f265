package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// statsOptions are the flags of `parsec stats`.
type statsOptions struct {
	uri        string
	http       string // the console's address: read its API instead of the wire protocol
	db         string
	collection string
	json       bool
	watch      time.Duration
	count      int
	top        int
	hot        float64 // show only partitions at least this hot (normalized RU %); 0: all
}

func newStatsCommand() *cobra.Command {
	o := &statsOptions{}
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show how documents and request units spread over physical partitions",
		Long: `Connect to a running Parsec server and print, for each collection, its
physical partitions: documents, storage and a bar of each partition's share,
request units (RU charged in the last second and minute, normalized RU
consumption: the busiest second's share of the partition's RU/s, capped
at 100%, and the requests throttled, or without --rate-limiting on the
server those that would have been), the largest logical partitions and
the hottest ones (shard-key values by RU), and a warning when the spread
is skewed or a partition hot. It reads {customAction: "GetPartitionStats"}.

--hot shows only hot partitions: those whose normalized RU consumption in
the last minute reached the threshold (70% when given without one).

  parsec stats --uri mongodb://127.0.0.1:27017
  parsec stats --db shop --collection orders --watch 2s
  parsec stats --hot --watch 1s
  parsec stats --json
  parsec stats --http 127.0.0.1:8080         (the HTTP console's API instead)
  parsec stats --http https://monitor:pw@db.example:8080`,
		Args: cobra.NoArgs,
		RunE: clientRun(func(ctx context.Context, out io.Writer) error { return runStats(ctx, o, out) }),
	}
	f := cmd.Flags()
	uriFlag(f, &o.uri)
	f.StringVar(&o.http, "http", "", "read the server's HTTP console (its --http address, or a URL with user:password@ under --auth) instead of connecting with --uri")
	f.StringVar(&o.db, "db", "", "only this database")
	f.StringVar(&o.collection, "collection", "", "only this collection (needs --db)")
	f.BoolVar(&o.json, "json", false, "print the statistics as JSON (one document per collection, in an array)")
	f.DurationVar(&o.watch, "watch", 0, "refresh at this interval until interrupted")
	f.IntVar(&o.count, "count", 0, "with --watch, stop after this many refreshes (0: never)")
	f.IntVar(&o.top, "top", 3, "largest (and hottest) logical partitions to list per partition")
	f.Float64Var(&o.hot, "hot", 0, "only partitions whose normalized RU consumption reached this percentage (bare --hot: 70)")
	f.Lookup("hot").NoOptDefVal = "70"
	return cmd
}

func runStats(ctx context.Context, o *statsOptions, out io.Writer) error {
	if o.collection != "" && o.db == "" {
		return fmt.Errorf("--collection needs --db")
	}
	if o.hot < 0 || math.IsNaN(o.hot) {
		return fmt.Errorf("--hot must be a percentage of at least 0")
	}
	src, closeSrc, err := o.source()
	if err != nil {
		return err
	}
	defer closeSrc()
	for i := 1; ; i++ {
		colls, err := fetchStats(ctx, src, o)
		if err != nil {
			return err
		}
		if o.hot > 0 {
			colls = hotOnly(colls, o.hot)
		}
		var buf bytes.Buffer
		if o.watch > 0 {
			buf.WriteString("\033[H\033[2J") // clear the terminal
			fmt.Fprintf(&buf, "parsec stats — %s — every %s\n\n", time.Now().Format("15:04:05"), o.watch)
		}
		switch {
		case o.json:
			err = writeStatsJSON(&buf, colls)
		case o.hot > 0 && len(colls) == 0:
			fmt.Fprintf(&buf, "no hot partitions: none reached %g%% normalized RU consumption in the last minute\n", o.hot)
		default:
			writeStatsTable(&buf, colls)
		}
		if err != nil {
			return err
		}
		if _, err := out.Write(buf.Bytes()); err != nil {
			return err
		}
		if o.watch <= 0 || (o.count > 0 && i >= o.count) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.watch):
		}
	}
}

// collStats is one collection's GetPartitionStats document.
type collStats struct {
	Database    string     `bson:"database" json:"database"`
	Collection  string     `bson:"collection" json:"collection"`
	ShardKey    keyPattern `bson:"shardKey" json:"shardKey"`
	Provisioned int64      `bson:"provisionedThroughput" json:"provisionedThroughput,omitempty"`
	AutoScale   *struct {
		MaxThroughput int64 `bson:"maxThroughput" json:"maxThroughput"`
	} `bson:"autoScaleSettings" json:"autoScaleSettings,omitempty"`
	Shared         bool        `bson:"sharedThroughput" json:"sharedThroughput"`
	PartitionCount int64       `bson:"partitionCount" json:"partitionCount"`
	DocumentCount  int64       `bson:"documentCount" json:"documentCount"`
	DataBytes      int64       `bson:"dataBytes" json:"dataBytes"`
	IndexBytes     int64       `bson:"indexBytes" json:"indexBytes"`
	LogicalCount   int64       `bson:"logicalPartitionCount" json:"logicalPartitionCount"`
	Limits         statsLimits `bson:"limits" json:"limits"`
	Partitions     []partStat  `bson:"partitions" json:"partitions"`
	RUFigures      `bson:",inline"`
	// ScaledThroughput is the RU/s an autoscale collection scaled to.
	ScaledThroughput float64 `bson:"scaledThroughput,omitempty" json:"scaledThroughput,omitempty"`
	// RateLimiting: the server refuses requests over budget
	// (throttledRequests); when off it counts those it would have refused
	// (wouldHaveBeenThrottledRequests).
	RateLimiting bool `bson:"rateLimiting" json:"rateLimiting"`
}

// RUFigures are the request-unit figures of a partition or a collection.
type RUFigures struct {
	RUTotal      float64 `bson:"ruTotal" json:"ruTotal"`
	RULastSecond float64 `bson:"ruLastSecond" json:"ruLastSecond"`
	RULastMinute float64 `bson:"ruLastMinute" json:"ruLastMinute"`
	// Normalized is Cosmos DB's normalized RU consumption (0–100%);
	// Uncapped the same ratio without the cap.
	Normalized float64 `bson:"normalizedRUConsumption" json:"normalizedRUConsumption"`
	Uncapped   float64 `bson:"normalizedRUConsumptionUncapped" json:"normalizedRUConsumptionUncapped"`
	Requests   int64   `bson:"requestCount" json:"requestCount"`
	// Throttled were refused (rate limiting on); WouldThrottle would have
	// been (rate limiting off).
	Throttled     int64 `bson:"throttledRequests" json:"throttledRequests"`
	WouldThrottle int64 `bson:"wouldHaveBeenThrottledRequests" json:"wouldHaveBeenThrottledRequests"`
}

// peak is the busiest second's share of the partition's RU/s, uncapped
// (a server that reports only the capped figure: that).
func (f RUFigures) peak() float64 { return max(f.Normalized, f.Uncapped) }

// overBudget describes the requests over budget: refused, or with rate
// limiting off, those that would have been.
func (f RUFigures) overBudget(rateLimiting bool) string {
	if rateLimiting {
		return fmt.Sprintf("%d requests throttled", f.Throttled)
	}
	return fmt.Sprintf("%d requests would have been throttled (rate limiting is off: none refused)", f.WouldThrottle)
}

// overBudgetCount is the count overBudget describes.
func (f RUFigures) overBudgetCount(rateLimiting bool) int64 {
	if rateLimiting {
		return f.Throttled
	}
	return f.WouldThrottle
}

type statsLimits struct {
	PartitionMaxBytes        int64 `bson:"partitionMaxBytes" json:"partitionMaxBytes"`
	LogicalPartitionMaxBytes int64 `bson:"logicalPartitionMaxBytes" json:"logicalPartitionMaxBytes"`
	PartitionMaxRUs          int64 `bson:"partitionMaxRUs" json:"partitionMaxRUs"`
}

type partStat struct {
	ID           string `bson:"partitionKeyRangeId" json:"partitionKeyRangeId"`
	MinInclusive string `bson:"minInclusive" json:"minInclusive"`
	MaxExclusive string `bson:"maxExclusive" json:"maxExclusive"`
	// Min and Max are the bounds as key values (MongoDB's chunk bounds);
	// a ranged key's are shown instead of points.
	Min             bson.Raw `bson:"min" json:"-"`
	Max             bson.Raw `bson:"max" json:"-"`
	Parents         []string `bson:"parents" json:"parents"`
	DocumentCount   int64    `bson:"documentCount" json:"documentCount"`
	DataBytes       int64    `bson:"dataBytes" json:"dataBytes"`
	IndexBytes      int64    `bson:"indexBytes" json:"indexBytes"`
	StorageBytes    int64    `bson:"storageBytes" json:"storageBytes"`
	LogicalCount    int64    `bson:"logicalPartitionCount" json:"logicalPartitionCount"`
	ThroughputShare float64  `bson:"throughputShare" json:"throughputShare"`
	Largest         []lpStat `bson:"largestLogicalPartitions" json:"largestLogicalPartitions"`
	RUFigures       `bson:",inline"`
	Hot             []hotStat `bson:"hotLogicalPartitions" json:"hotLogicalPartitions"`
	// Replicas are the partition's copies on a cluster's nodes.
	Replicas []replicaStat `bson:"replicas" json:"replicas,omitempty"`
	// Moving is a replica of it moving between nodes (the balancer).
	Moving *moveStat `bson:"moving" json:"moving,omitempty"`
}

// moveStat is a replica moving between a cluster's nodes.
type moveStat struct {
	From  string `bson:"from" json:"from,omitempty"` // empty: a replica added
	To    string `bson:"to" json:"to"`
	Phase string `bson:"phase" json:"phase"`
	// PartitionBytes are the partition's bytes when the move began;
	// BytesCopied what the target copied in so far.
	PartitionBytes int64 `bson:"partitionBytes" json:"partitionBytes"`
	BytesCopied    int64 `bson:"bytesCopied" json:"bytesCopied"`
}

// replicaStat is one copy of a partition on a cluster node.
type replicaStat struct {
	Node         int64  `bson:"node" json:"node"`
	Host         string `bson:"host" json:"host"`
	Leader       bool   `bson:"leader" json:"leader"`
	Healthy      bool   `bson:"healthy" json:"healthy"`
	AppliedIndex int64  `bson:"appliedIndex" json:"appliedIndex"`
}

// nodeColumn is the partition's node column on a cluster: the leader's
// node, then how many replicas answer ("node 2, 3/3 replicas").
func (p partStat) nodeColumn() string {
	leader, up := "?", 0
	for _, r := range p.Replicas {
		if r.Leader {
			leader = fmt.Sprint(r.Node)
		}
		if r.Healthy {
			up++
		}
	}
	col := fmt.Sprintf("node %s, %d/%d replicas", leader, up, len(p.Replicas))
	if m := p.Moving; m != nil {
		from := m.From
		if from == "" {
			from = "(added)"
		}
		col += fmt.Sprintf(", moving %s -> %s (%s, %s of %s copied)", from, m.To, m.Phase, sizeString(m.BytesCopied), sizeString(m.PartitionBytes))
	}
	return col
}

// hotStat is one of a partition's hottest logical partitions.
type hotStat struct {
	ShardKey bson.RawValue `bson:"shardKey" json:"-"`
	Key      string        `bson:"-" json:"shardKey"`
	// RU is an upper bound of what the value consumed, MaxError how much
	// it may overstate: the true figure is in [RU-MaxError, RU].
	RU       float64 `bson:"ru" json:"ru"`
	MaxError float64 `bson:"maxError" json:"maxError"`
}

type lpStat struct {
	ShardKey      bson.RawValue `bson:"shardKey" json:"-"`
	Key           string        `bson:"-" json:"shardKey"`
	DocumentCount int64         `bson:"documentCount" json:"documentCount"`
	DataBytes     int64         `bson:"dataBytes" json:"dataBytes"`
	IndexBytes    int64         `bson:"indexBytes" json:"indexBytes"`
}

// statsSource answers GetPartitionStats on db (for one collection when
// collection is not "").
type statsSource func(ctx context.Context, db, collection string, top int) (bson.Raw, error)

// source is where the statistics come from: the wire protocol (--uri)
// or the HTTP console (--http); close releases it.
func (o *statsOptions) source() (statsSource, func(), error) {
	if o.http != "" {
		src, err := httpStatsSource(o.http)
		return src, func() {}, err
	}
	client, err := mongo.Connect(options.Client().ApplyURI(o.uri).SetAppName("parsec stats").SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", o.uri, err)
	}
	closeClient := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Disconnect(dctx)
	}
	return func(ctx context.Context, db, collection string, top int) (bson.Raw, error) {
		cmd := bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "top", Value: top}}
		if collection != "" {
			cmd = append(cmd, bson.E{Key: "collection", Value: collection})
		}
		raw, err := client.Database(db).RunCommand(ctx, cmd).Raw()
		if err != nil {
			return nil, fmt.Errorf("GetPartitionStats: %w", err)
		}
		return raw, nil
	}, closeClient, nil
}

func fetchStats(ctx context.Context, src statsSource, o *statsOptions) ([]collStats, error) {
	db := o.db
	if db == "" {
		db = "admin"
	}
	raw, err := src(ctx, db, o.collection, o.top)
	if err != nil {
		return nil, err
	}
	var colls []collStats
	if o.collection != "" {
		var one collStats
		if err := bson.Unmarshal(raw, &one); err != nil {
			return nil, err
		}
		colls = []collStats{one}
	} else {
		var all struct {
			Collections []collStats `bson:"collections"`
		}
		if err := bson.Unmarshal(raw, &all); err != nil {
			return nil, err
		}
		colls = all.Collections
	}
	for i := range colls {
		for j := range colls[i].Partitions {
			p := &colls[i].Partitions[j]
			for k := range p.Largest {
				p.Largest[k].Key = shortValue(p.Largest[k].ShardKey)
			}
			for k := range p.Hot {
				p.Hot[k].Key = shortValue(p.Hot[k].ShardKey)
			}
		}
	}
	return colls, nil
}

// hotOnly keeps the partitions whose normalized RU consumption reached
// pct, and the collections that have one.
func hotOnly(colls []collStats, pct float64) []collStats {
	var out []collStats
	for _, c := range colls {
		var parts []partStat
		for _, p := range c.Partitions {
			if p.peak() >= pct {
				parts = append(parts, p)
			}
		}
		if len(parts) > 0 {
			c.Partitions = parts
			out = append(out, c)
		}
	}
	return out
}

// shortValue renders a shard-key value for a table: JSON-like, at most
// 40 characters.
func shortValue(v bson.RawValue) string {
	if v.Type == 0 {
		return "(unsharded)"
	}
	s := v.String()
	if str, ok := v.StringValueOK(); ok {
		s = fmt.Sprintf("%q", str)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

func writeStatsJSON(w io.Writer, colls []collStats) error {
	if colls == nil {
		colls = []collStats{}
	}
	b, err := json.MarshalIndent(colls, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// barWidth is the width of the widest partition's bar.
const barWidth = 30

func writeStatsTable(w io.Writer, colls []collStats) {
	if len(colls) == 0 {
		fmt.Fprintln(w, "no collections")
		return
	}
	for i, c := range colls {
		if i > 0 {
			fmt.Fprintln(w)
		}
		key := "unsharded"
		if len(c.ShardKey) > 0 {
			fields := make([]string, len(c.ShardKey))
			for i, f := range c.ShardKey {
				fields[i] = fmt.Sprintf("%s: %v", f.Key, f.Value)
			}
			key = "shard key {" + strings.Join(fields, ", ") + "}"
		}
		tp := "shared throughput"
		switch {
		case c.AutoScale != nil:
			tp = fmt.Sprintf("autoscale max %d RU/s", c.AutoScale.MaxThroughput)
		case c.Provisioned > 0:
			tp = fmt.Sprintf("%d RU/s", c.Provisioned)
		}
		fmt.Fprintf(w, "%s.%s  %s, %s\n", c.Database, c.Collection, key, tp)
		fmt.Fprintf(w, "  %s, %d documents, %s data, %s index, %s\n",
			plural(c.PartitionCount, "partition"), c.DocumentCount, sizeString(c.DataBytes), sizeString(c.IndexBytes), plural(c.LogicalCount, "logical partition"))
		peak := fmt.Sprintf("normalized RU consumption %.0f%%", c.Normalized)
		if c.peak() > c.Normalized {
			peak += fmt.Sprintf(" (busiest second: %.0f%% of a partition's RU/s)", c.peak())
		}
		fmt.Fprintf(w, "  request units: %s RU in total, %s in the last minute, %s this second, %s, %s\n",
			ruString(c.RUTotal), ruString(c.RULastMinute), ruString(c.RULastSecond), peak, c.overBudget(c.RateLimiting))
		if c.ScaledThroughput > 0 {
			fmt.Fprintf(w, "  autoscale: scaled to %.0f RU/s in the busiest second of the last minute\n", c.ScaledThroughput)
		}

		var maxStorage, total int64
		for _, p := range c.Partitions {
			maxStorage = max(maxStorage, p.StorageBytes)
			total += p.StorageBytes
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		over := "throttled"
		if !c.RateLimiting {
			over = "would be throttled"
		}
		clustered := len(c.Partitions) > 0 && len(c.Partitions[0].Replicas) > 0
		nodeHead := ""
		if clustered {
			nodeHead = "leader\t"
		}
		fmt.Fprintln(tw, "  partition\trange\tdocuments\tstorage\tlogical\t\tRU/s\tRU last min\tnormalized\t"+over+"\t"+nodeHead)
		for _, p := range c.Partitions {
			bar := ""
			if maxStorage > 0 {
				n := int(math.Round(float64(p.StorageBytes) / float64(maxStorage) * barWidth))
				bar = strings.Repeat("█", n) + strings.Repeat("·", barWidth-n)
			}
			share := 0.0
			if total > 0 {
				share = float64(p.StorageBytes) / float64(total) * 100
			}
			lo := p.MinInclusive
			if lo == "" {
				lo = "start"
			}
			hi := p.MaxExclusive
			if hi == "FF" {
				hi = "end"
			}
			if rangedKey(c.ShardKey) {
				lo, hi = boundString(p.Min, "start"), boundString(p.Max, "end")
			}
			node := ""
			if clustered {
				node = p.nodeColumn() + "\t"
			}
			fmt.Fprintf(tw, "  %s\t%s..%s\t%d\t%s\t%d\t%s %4.1f%%\t%s/%.0f\t%s\t%.0f%%\t%d\t%s\n", p.ID, lo, hi, p.DocumentCount, sizeString(p.StorageBytes), p.LogicalCount, bar, share,
				ruString(p.RULastSecond), p.ThroughputShare, ruString(p.RULastMinute), p.Normalized, p.overBudgetCount(c.RateLimiting), node)
		}
		_ = tw.Flush()

		var largest []string
		for _, p := range c.Partitions {
			for _, lp := range p.Largest {
				largest = append(largest, fmt.Sprintf("%s: %d docs, %s (partition %s)", lp.Key, lp.DocumentCount, sizeString(lp.DataBytes+lp.IndexBytes), p.ID))
			}
		}
		if len(largest) > 0 {
			fmt.Fprintln(w, "  largest logical partitions:")
			for _, l := range largest {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		var hottest []string
		estimated := false
		for _, p := range c.Partitions {
			for _, h := range p.Hot {
				if h.MaxError > 0 {
					estimated = true
					hottest = append(hottest, fmt.Sprintf("%s: %s–%s RU (partition %s)", h.Key, ruString(max(h.RU-h.MaxError, 0)), ruString(h.RU), p.ID))
				} else {
					hottest = append(hottest, fmt.Sprintf("%s: %s RU (partition %s)", h.Key, ruString(h.RU), p.ID))
				}
			}
		}
		if len(hottest) > 0 {
			fmt.Fprintln(w, "  hottest logical partitions (by RU):")
			if estimated {
				fmt.Fprintln(w, "    (a range where more shard-key values consumed RU than a partition tracks: the true figure lies in it)")
			}
			for _, h := range hottest {
				fmt.Fprintf(w, "    %s\n", h)
			}
		}
		for _, warn := range skewWarnings(c) {
			fmt.Fprintf(w, "  WARNING: %s\n", warn)
		}
	}
}

// skewWarnings explain what is uneven: a partition holding far more than
// its share, a logical partition holding a third of the collection or
// more, or one close to its limit.
func skewWarnings(c collStats) []string {
	var out []string
	n := len(c.Partitions)
	var total int64
	for _, p := range c.Partitions {
		total += p.StorageBytes
	}
	if n > 1 && total > 0 {
		mean := float64(total) / float64(n)
		for _, p := range c.Partitions {
			if ratio := float64(p.StorageBytes) / mean; ratio >= 1.5 {
				out = append(out, fmt.Sprintf("skewed: partition %s holds %.0f%% of the storage, %.1fx the mean of %d partitions", p.ID, float64(p.StorageBytes)/float64(total)*100, ratio, n))
			}
		}
	}
	if total > 0 && c.LogicalCount > 1 {
		for _, p := range c.Partitions {
			for _, lp := range p.Largest {
				if share := float64(lp.DataBytes+lp.IndexBytes) / float64(total); share >= 1.0/3 {
					out = append(out, fmt.Sprintf("skewed: shard-key value %s holds %.0f%% of the collection's storage (one of %d logical partitions)", lp.Key, share*100, c.LogicalCount))
				}
			}
		}
	}
	for _, p := range c.Partitions {
		if p.Normalized >= 100 {
			out = append(out, fmt.Sprintf("hot: partition %s reached 100%% normalized RU consumption: its busiest second of the last minute used %.0f%% of its %.0f RU/s; %s",
				p.ID, p.peak(), p.ThroughputShare, p.overBudget(c.RateLimiting)))
		}
	}
	if lim := c.Limits.LogicalPartitionMaxBytes; lim > 0 {
		for _, p := range c.Partitions {
			for _, lp := range p.Largest {
				if size := lp.DataBytes + lp.IndexBytes; float64(size) >= 0.8*float64(lim) {
					out = append(out, fmt.Sprintf("logical partition %s holds %s, %.0f%% of the %s a shard-key value may hold", lp.Key, sizeString(size), float64(size)/float64(lim)*100, sizeString(lim)))
				}
			}
		}
	}
	return out
}

// plural is n and noun, with an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ruString writes request units: two decimals below 10, whole above.
func ruString(ru float64) string {
	if ru < 10 {
		return fmt.Sprintf("%.2f", ru)
	}
	return fmt.Sprintf("%.0f", ru)
}

func sizeString(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if f < 1024 || u == "TiB" {
			if u == "B" {
				return fmt.Sprintf("%d B", n)
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
		f /= 1024
	}
	return ""
}

// rangedKey reports whether a shard key places by value: its leading
// field is 1, not "hashed".
func rangedKey(key keyPattern) bool {
	if len(key) == 0 {
		return false
	}
	_, hashed := key[0].Value.(string)
	return !hashed
}

// boundString is a partition bound's leading value, or at (start, end)
// for MinKey and MaxKey.
func boundString(b bson.Raw, at string) string {
	elems, err := b.Elements()
	if err != nil || len(elems) == 0 {
		return at
	}
	v := elems[0].Value()
	switch v.Type {
	case bson.TypeMinKey, bson.TypeMaxKey:
		return at
	case bson.TypeString:
		return strconv.Quote(v.StringValue())
	}
	return v.String()
}

// keyPattern is a shard key's pattern, in its fields' order, which JSON
// writes as an object ({"a": 1, "b": "hashed"}).
type keyPattern bson.D

// MarshalJSON writes the pattern as an object, fields in order.
func (k keyPattern) MarshalJSON() ([]byte, error) {
	if k == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range k {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes, fields in order.
func (k *keyPattern) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*k = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("shard key: want an object, got %v", tok)
	}
	out := keyPattern{}
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		out = append(out, bson.E{Key: fmt.Sprint(name), Value: v})
	}
	*k = out
	return nil
}
