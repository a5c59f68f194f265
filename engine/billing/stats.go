package billing

import (
	"encoding/binary"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Request-unit statistics as GetPartitionStats and serverStatus report
// them (the README's table documents each field for users). Field names:
//
//	ruTotal                          RU charged since the partition was created (or the server started)
//	ruLastSecond                     RU charged in the current second
//	ruLastMinute                     RU charged in the 60 seconds ending with it
//	ruPeakSecond                     the most RU charged in one second of the last minute
//	normalizedRUConsumption          Cosmos DB's metric, a percentage from 0 to 100: the
//	                                 largest share of the partition's RU/s consumed in one
//	                                 second of the last minute, capped at 100
//	normalizedRUConsumptionUncapped  the same ratio without the cap: above 100 when a
//	                                 second consumed more than the partition's RU/s (rate
//	                                 limiting off, a burst bucket, an oversized operation)
//	requestCount                     charges of more than 0 RU
//	throttledRequests                requests refused with 16500 (or made to wait, with
//	                                 server-side retry); 0 without rate limiting
//	wouldHaveBeenThrottledRequests   without rate limiting, the requests over budget that
//	                                 Cosmos DB would have refused; 0 with it
//	hotLogicalPartitions             the shard-key values that consumed the most RU:
//	                                 ru is an upper bound, maxError how much it may
//	                                 overstate (ru/hotkeys.go: Space-Saving, 32 values
//	                                 tracked per partition)

// normalizedRU is Cosmos DB's normalized RU consumption, a percentage
// capped at 100, from ru's uncapped ratio.
func normalizedRU(uncapped float64) float64 { return min(uncapped, 100) }

// throttleFields split the requests a partition's bucket refused into
// those refused (rate limiting on) and those that would have been (off).
func (a *Accounts) throttleFields(refused int64) []bson.E {
	var throttled, would int64
	if a.opts.Limiting() {
		throttled = refused
	} else {
		would = refused
	}
	return []bson.E{
		{Key: "throttledRequests", Value: number(throttled)},
		{Key: "wouldHaveBeenThrottledRequests", Value: number(would)},
	}
}

// PartitionFields are one physical partition p of c's request-unit
// figures, with its top hot logical partitions (nil p: none).
func (a *Accounts) PartitionFields(c *store.Collection, p *ru.Partition, now time.Time, top int) ([]bson.E, error) {
	if p == nil {
		return nil, nil
	}
	st := p.Stats(now)
	hot := bson.A{}
	for _, k := range st.HotKeys {
		if len(hot) >= top {
			break
		}
		entry := bson.D{}
		if c.Sharded() && len(k.Key) >= 8 {
			point := binary.BigEndian.Uint64(k.Key[:8])
			v, ok, err := a.store.ShardKeyOf(c, store.LogicalPartition{Point: point, Key: k.Key[8:]})
			if err != nil {
				return nil, err
			}
			if ok {
				entry = append(entry, bson.E{Key: "shardKey", Value: rawValue(v)})
			}
			if !c.ShardKeyRanged { // a ranged key's point is no hash
				entry = append(entry, bson.E{Key: "hashedKey", Value: shard.HashOf(point)})
			}
		}
		entry = append(entry, bson.E{Key: "ru", Value: k.RU}, bson.E{Key: "maxError", Value: k.MaxError})
		hot = append(hot, entry)
	}
	out := []bson.E{
		{Key: "ruTotal", Value: st.RU},
		{Key: "ruLastSecond", Value: st.LastSecondRU},
		{Key: "ruLastMinute", Value: st.LastMinuteRU},
		{Key: "ruPeakSecond", Value: st.PeakSecondRU},
		{Key: "normalizedRUConsumption", Value: normalizedRU(st.NormalizedRU)},
		{Key: "normalizedRUConsumptionUncapped", Value: st.NormalizedRU},
		{Key: "requestCount", Value: st.Requests},
	}
	out = append(out, a.throttleFields(st.Throttled)...)
	return append(out, bson.E{Key: "hotLogicalPartitions", Value: hot}), nil
}

// CollectionFields sum up a collection's partitions, those that split
// included (a split's children start with no history), but for the
// normalized RU consumption, the largest of its partitions now (as Cosmos
// DB reports the maximum over partition key ranges). Autoscale
// adds scaledThroughput: the RU/s its pool scaled to in the busiest
// second of the last minute (for shared throughput, the database's).
func (a *Accounts) CollectionFields(u *Units, now time.Time) []bson.E {
	var sum Sum
	sum.AddPartitions(u, now)
	var norm float64
	for _, p := range u.parts {
		norm = max(norm, p.Stats(now).NormalizedRU)
	}
	out := []bson.E{
		{Key: "ruTotal", Value: ru.Round(sum.Total)},
		{Key: "ruLastSecond", Value: ru.Round(sum.Second)},
		{Key: "ruLastMinute", Value: ru.Round(sum.Minute)},
		{Key: "normalizedRUConsumption", Value: normalizedRU(norm)},
		{Key: "normalizedRUConsumptionUncapped", Value: norm},
		{Key: "requestCount", Value: sum.Requests},
	}
	out = append(out, a.throttleFields(sum.Throttled)...)
	if ps := u.pool.Stats(now); ps.Throughput.IsAutoscale() {
		out = append(out, bson.E{Key: "scaledThroughput", Value: ps.ScaledRUs})
	}
	return out
}

// Sum adds up the request-unit statistics of partitions.
type Sum struct {
	Total, Second, Minute float64 // RU: since creation, this second, the last minute
	Requests, Throttled   int64   // charges of more than 0 RU; refusals (or would-be ones)
}

// AddPartitions adds every partition of u, those that split included.
func (s *Sum) AddPartitions(u *Units, now time.Time) {
	for _, p := range u.byID {
		st := p.Stats(now)
		s.Total += st.RU
		s.Second += st.LastSecondRU
		s.Minute += st.LastMinuteRU
		s.Requests += st.Requests
		s.Throttled += st.Throttled
	}
}

// requestUnitSettings are the server's throttling settings.
func (a *Accounts) requestUnitSettings() []bson.E {
	return []bson.E{
		{Key: "accounting", Value: !a.opts.Bypass},
		{Key: "rateLimiting", Value: a.opts.Limiting()},
		{Key: "serverSideRetry", Value: a.opts.ServerSideRetry},
	}
}

// ServerStats sum up every partition of the server, split ones
// included, and commands, the RU charged to no partition.
func (a *Accounts) ServerStats(now time.Time, commands float64) bson.D {
	var sum Sum
	partitions := 0
	if !a.opts.Bypass {
		for _, u := range a.All() {
			partitions += len(u.parts)
			sum.AddPartitions(u, now)
		}
	}
	out := append(bson.D(a.requestUnitSettings()),
		bson.E{Key: "ruTotal", Value: ru.Round(sum.Total + commands)},
		bson.E{Key: "ruPartitions", Value: ru.Round(sum.Total)},
		bson.E{Key: "ruCommands", Value: ru.Round(commands)},
		bson.E{Key: "ruLastSecond", Value: ru.Round(sum.Second)},
		bson.E{Key: "ruLastMinute", Value: ru.Round(sum.Minute)},
		bson.E{Key: "requestCount", Value: sum.Requests},
	)
	out = append(out, a.throttleFields(sum.Throttled)...)
	return append(out, bson.E{Key: "physicalPartitions", Value: int64(partitions)})
}

// number is n as int32 when it fits, as the command layer's statistics
// write counts.
func number(n int64) any {
	if n == int64(int32(n)) {
		return int32(n)
	}
	return n
}

// rawValue is v as the driver's bson package holds a value.
func rawValue(v bsoncore.Value) bson.RawValue {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}
