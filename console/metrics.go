package console

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/parsecdb/parsec/engine"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names follow Prometheus' conventions: parsec_ prefix, base units
// (seconds, bytes), _total on counters. Request units are their own unit
// (_request_units); normalized RU consumption is a percentage as Cosmos
// DB reports it.

var (
	partLabels = []string{"database", "collection", "partition"}
	collLabels = []string{"database", "collection"}
	keyLabels  = []string{"database", "collection", "partition", "shard_key"}
)

func desc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descPartRU         = desc("parsec_partition_request_units_total", "Request units charged to the physical partition since it was created or the server started.", partLabels)
	descPartRequests   = desc("parsec_partition_requests_total", "Requests charged more than 0 RU on the physical partition.", partLabels)
	descPartNormalized = desc("parsec_partition_normalized_ru_consumption_percent", "Normalized RU consumption (Cosmos DB's metric): the largest share of the partition's RU/s consumed in one second of the last minute, capped at 100.", partLabels)
	descPartUncapped   = desc("parsec_partition_ru_consumption_peak_percent", "The busiest second of the last minute as a percentage of the partition's RU/s, not capped at 100.", partLabels)
	descPartThrottled  = desc("parsec_partition_throttled_requests_total", "Requests the partition refused with 16500 TooManyRequests (or made wait, with server-side retry).", partLabels)
	descPartWould      = desc("parsec_partition_would_throttle_requests_total", "With rate limiting off: requests over the partition's budget that Cosmos DB would have refused with 16500.", partLabels)
	descPartRate       = desc("parsec_partition_provisioned_request_units_per_second", "The partition's share of its collection's (or database's) throughput, in RU/s.", partLabels)
	descPartDocs       = desc("parsec_partition_documents", "Documents in the physical partition.", partLabels)
	descPartData       = desc("parsec_partition_data_bytes", "Bytes of documents in the physical partition.", partLabels)
	descPartIndex      = desc("parsec_partition_index_bytes", "Bytes of index entries (and keys) in the physical partition.", partLabels)
	descPartLogical    = desc("parsec_partition_logical_partitions", "Logical partitions (distinct shard-key values) in the physical partition.", partLabels)

	descCollPartitions  = desc("parsec_collection_partitions", "Physical partitions of the collection.", collLabels)
	descCollSplits      = desc("parsec_collection_partition_splits_total", "Physical partitions of the collection that split since the server started.", collLabels)
	descCollThroughput  = desc("parsec_collection_provisioned_request_units_per_second", "The collection's provisioned throughput in RU/s (autoscale: its maximum); 0 when it shares its database's.", collLabels)
	descCollNormalized  = desc("parsec_collection_normalized_ru_consumption_percent", "The largest normalized RU consumption of the collection's physical partitions.", collLabels)
	descTopStorageBytes = desc("parsec_logical_partition_storage_bytes", "Data and index bytes of the largest logical partitions (top k per physical partition).", keyLabels)
	descTopRU           = desc("parsec_logical_partition_request_units", "Request units consumed by the hottest logical partitions (top k per physical partition, an upper bound).", keyLabels)

	descCommand = desc("parsec_command_duration_seconds", "Commands run, by name, and how long they took.", []string{"command"})

	descConns        = desc("parsec_connections", "Client connections open.", nil)
	descConnsCreated = desc("parsec_connections_created_total", "Client connections accepted since start.", nil)
	descConnsRefused = desc("parsec_connections_rejected_total", "Client connections refused at the connection limit.", nil)
	descCursors      = desc("parsec_cursors_open", "Cursors open.", nil)
	descSessions     = desc("parsec_sessions", "Logical sessions the server holds.", nil)
	descTxns         = desc("parsec_transactions_open", "Multi-document transactions in progress.", nil)
	descCommandRU    = desc("parsec_command_request_units_total", "Request units charged to no partition (metadata commands).", nil)
	descUp           = desc("parsec_uptime_seconds", "Seconds since the server started.", nil)
	descInfo         = desc("parsec_build_info", "Always 1: the server's version and the MongoDB version it answers as.", []string{"version", "mongodb_version"})
	descScrapeErr    = desc("parsec_metrics_partition_stats_errors", "1 when the last computation of partition statistics failed (partition metrics are then missing).", nil)

	descLSM         = desc("parsec_badger_lsm_size_bytes", "Bytes of Badger's LSM tree (all levels).", nil)
	descVlog        = desc("parsec_badger_vlog_size_bytes", "Bytes of Badger's value-log files.", nil)
	descLevelTables = desc("parsec_badger_level_tables", "Tables on each level of Badger's LSM tree.", []string{"level"})
	descLevelBytes  = desc("parsec_badger_level_size_bytes", "Bytes on each level of Badger's LSM tree.", []string{"level"})
	descFlushes     = desc("parsec_badger_memtable_flushes_total", "Memtable flushes: new level-0 tables seen since start.", nil)
	descCompactions = desc("parsec_badger_compaction_tables_written_total", "Tables written by compactions (new tables on levels below 0) seen since start.", nil)
)

// collector turns the engine's figures into metrics at each scrape.
type collector struct{ s *Server }

func newCollector(s *Server) *collector { return &collector{s: s} }

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descPartRU, descPartRequests, descPartNormalized, descPartUncapped, descPartThrottled, descPartWould,
		descPartRate, descPartDocs, descPartData, descPartIndex, descPartLogical,
		descCollPartitions, descCollSplits, descCollThroughput, descCollNormalized, descTopStorageBytes, descTopRU,
		descCommand, descConns, descConnsCreated, descConnsRefused, descCursors, descSessions, descTxns, descCommandRU,
		descUp, descInfo, descScrapeErr, descLSM, descVlog, descLevelTables, descLevelBytes, descFlushes, descCompactions,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	snap := c.s.eng.Snapshot()
	gauge(descInfo, 1, snap.Version, snap.MongoVersion)
	gauge(descUp, snap.Uptime.Seconds())
	gauge(descConns, float64(snap.Connections))
	counter(descConnsCreated, float64(snap.ConnectionsCreated))
	counter(descConnsRefused, float64(snap.ConnectionsRejected))
	gauge(descCursors, float64(snap.Cursors))
	gauge(descSessions, float64(snap.Sessions))
	gauge(descTxns, float64(snap.Transactions))
	counter(descCommandRU, snap.RUCommands)
	gauge(descLSM, float64(snap.Storage.LSMBytes))
	gauge(descVlog, float64(snap.Storage.VlogBytes))
	for _, l := range snap.Storage.Levels {
		lv := strconv.Itoa(l.Level)
		gauge(descLevelTables, float64(l.Tables), lv)
		gauge(descLevelBytes, float64(l.Bytes), lv)
	}
	counter(descFlushes, float64(snap.Storage.Flushes))
	counter(descCompactions, float64(snap.Storage.CompactionTables))

	for _, t := range c.s.eng.CommandTimings() {
		buckets := make(map[float64]uint64, len(t.Buckets))
		for i, n := range t.Buckets {
			buckets[engine.CommandLatencyBuckets[i]] = n
		}
		ch <- prometheus.MustNewConstHistogram(descCommand, t.Count, t.Seconds, buckets, t.Name)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	colls, err := c.s.cache.get(ctx)
	if err != nil {
		gauge(descScrapeErr, 1)
		return
	}
	gauge(descScrapeErr, 0)
	topK := c.s.opts.TopK
	for i := range colls {
		cs := &colls[i]
		db, coll := cs.Database, cs.Collection
		gauge(descCollPartitions, float64(len(cs.Partitions)), db, coll)
		counter(descCollSplits, float64(c.s.eng.SplitCount(db, coll)), db, coll)
		tp := cs.Provisioned
		if cs.AutoScale != nil {
			tp = cs.AutoScale.MaxThroughput
		}
		if cs.Shared {
			tp = 0
		}
		gauge(descCollThroughput, tp, db, coll)
		gauge(descCollNormalized, cs.RU.Normalized, db, coll)
		seenKey := map[[2]string]bool{} // a label set may be given once
		for _, p := range cs.Partitions {
			l := []string{db, coll, p.ID}
			counter(descPartRU, p.RU.RUTotal, l...)
			counter(descPartRequests, float64(p.RU.Requests), l...)
			gauge(descPartNormalized, p.RU.Normalized, l...)
			gauge(descPartUncapped, max(p.RU.Uncapped, p.RU.Normalized), l...)
			counter(descPartThrottled, float64(p.RU.Throttled), l...)
			counter(descPartWould, float64(p.RU.WouldThrottle), l...)
			gauge(descPartRate, p.ThroughputShare, l...)
			gauge(descPartDocs, float64(p.DocumentCount), l...)
			gauge(descPartData, float64(p.DataBytes), l...)
			gauge(descPartIndex, float64(p.IndexBytes), l...)
			gauge(descPartLogical, float64(p.LogicalCount), l...)
			largest := append([]logicalStats(nil), p.Largest...)
			sort.SliceStable(largest, func(i, j int) bool {
				return largest[i].DataBytes+largest[i].IndexBytes > largest[j].DataBytes+largest[j].IndexBytes
			})
			for k, lp := range largest {
				if k >= topK {
					break
				}
				key := valueString(lp.ShardKey)
				if seenKey[[2]string{"s" + p.ID, key}] {
					continue
				}
				seenKey[[2]string{"s" + p.ID, key}] = true
				gauge(descTopStorageBytes, float64(lp.DataBytes+lp.IndexBytes), db, coll, p.ID, key)
			}
			for k, h := range p.Hot {
				if k >= topK {
					break
				}
				key := valueString(h.ShardKey)
				if seenKey[[2]string{"r" + p.ID, key}] {
					continue
				}
				seenKey[[2]string{"r" + p.ID, key}] = true
				gauge(descTopRU, h.RU, db, coll, p.ID, key)
			}
		}
	}
}
