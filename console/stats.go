package console

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// collectionStats is one collection of GetPartitionStats' reply, the
// fields the console uses.
type collectionStats struct {
	Database       string           `bson:"database"`
	Collection     string           `bson:"collection"`
	ShardKey       bson.RawValue    `bson:"shardKey"`
	Provisioned    float64          `bson:"provisionedThroughput"`
	AutoScale      *autoScale       `bson:"autoScaleSettings"`
	Shared         bool             `bson:"sharedThroughput"`
	PartitionCount int64            `bson:"partitionCount"`
	DocumentCount  int64            `bson:"documentCount"`
	DataBytes      int64            `bson:"dataBytes"`
	IndexBytes     int64            `bson:"indexBytes"`
	LogicalCount   int64            `bson:"logicalPartitionCount"`
	Limits         limits           `bson:"limits"`
	Partitions     []partitionStats `bson:"partitions"`
	RU             ruFigures        `bson:",inline"`
	RateLimiting   bool             `bson:"rateLimiting"`
}

type autoScale struct {
	MaxThroughput float64 `bson:"maxThroughput"`
}

type limits struct {
	PartitionMaxBytes        int64 `bson:"partitionMaxBytes"`
	LogicalPartitionMaxBytes int64 `bson:"logicalPartitionMaxBytes"`
	PartitionMaxRUs          int64 `bson:"partitionMaxRUs"`
}

type ruFigures struct {
	RUTotal       float64 `bson:"ruTotal"`
	RULastSecond  float64 `bson:"ruLastSecond"`
	RULastMinute  float64 `bson:"ruLastMinute"`
	Normalized    float64 `bson:"normalizedRUConsumption"`
	Uncapped      float64 `bson:"normalizedRUConsumptionUncapped"`
	Requests      int64   `bson:"requestCount"`
	Throttled     int64   `bson:"throttledRequests"`
	WouldThrottle int64   `bson:"wouldHaveBeenThrottledRequests"`
}

type partitionStats struct {
	ID              string         `bson:"partitionKeyRangeId"`
	MinInclusive    string         `bson:"minInclusive"`
	MaxExclusive    string         `bson:"maxExclusive"`
	Parents         []string       `bson:"parents"`
	DocumentCount   int64          `bson:"documentCount"`
	DataBytes       int64          `bson:"dataBytes"`
	IndexBytes      int64          `bson:"indexBytes"`
	StorageBytes    int64          `bson:"storageBytes"`
	LogicalCount    int64          `bson:"logicalPartitionCount"`
	ThroughputShare float64        `bson:"throughputShare"`
	Largest         []logicalStats `bson:"largestLogicalPartitions"`
	Hot             []hotStats     `bson:"hotLogicalPartitions"`
	RU              ruFigures      `bson:",inline"`
}

type logicalStats struct {
	ShardKey      bson.RawValue `bson:"shardKey"`
	DocumentCount int64         `bson:"documentCount"`
	DataBytes     int64         `bson:"dataBytes"`
	IndexBytes    int64         `bson:"indexBytes"`
}

type hotStats struct {
	ShardKey bson.RawValue `bson:"shardKey"`
	RU       float64       `bson:"ru"`
	MaxError float64       `bson:"maxError"`
}

// parseServerStats reads the collections of the whole server's reply.
func parseServerStats(raw bson.Raw) ([]collectionStats, error) {
	var all struct {
		Collections []collectionStats `bson:"collections"`
	}
	if err := bson.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("partition statistics: %w", err)
	}
	return all.Collections, nil
}

// shardKeyPattern is the collection's shard key as the shell writes
// it ({k: "hashed"}, {a: 1, b: 1}); "" when unsharded.
func (c *collectionStats) shardKeyPattern() string {
	doc, ok := c.ShardKey.DocumentOK()
	if !ok {
		return ""
	}
	elems, _ := doc.Elements()
	if len(elems) == 0 {
		return ""
	}
	parts := make([]string, len(elems))
	for i, el := range elems {
		v := el.Value()
		switch s, isString := v.StringValueOK(); {
		case isString:
			parts[i] = fmt.Sprintf("%s: %q", el.Key(), s)
		default:
			f, _ := v.AsFloat64OK()
			parts[i] = el.Key() + ": " + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// valueString renders a shard-key value for a label or a table: the
// string itself for strings, else its extended JSON; at most 64 bytes.
func valueString(v bson.RawValue) string {
	if v.Type == 0 {
		return "(unsharded)"
	}
	s, ok := v.StringValueOK()
	if !ok {
		s = v.String()
	}
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:61], "") + "..."
	}
	return s
}
