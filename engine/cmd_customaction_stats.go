package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// getPartitionStats answers {customAction: "GetPartitionStats"}: for one
// collection (collection given), the collections of the database, or,
// on admin without a collection, every collection of the server; for
// each, every physical partition with its range, ancestry, exact
// document, data and index counts, logical-partition count and largest
// logical partitions:
//
//	{database, collection, shardKey, throughput..., partitionCount,
//	 documentCount, dataBytes, indexBytes, partitions: [
//	   {partitionKeyRangeId: "1", minInclusive: "", maxExclusive: "8000000000000000",
//	    minHashedKey: MinKey, maxHashedKey: NumberLong(0), parents: ["0"],
//	    documentCount, dataBytes, indexBytes, storageBytes, logicalPartitionCount,
//	    throughputShare, largestLogicalPartitions: [{shardKey, documentCount, dataBytes, indexBytes}]}]}
//
// Each partition and each collection also has its request units (the
// fields engine/billing/stats.go lists: ruTotal, ruLastSecond, ruLastMinute,
// normalizedRUConsumption and its uncapped ratio, throttledRequests or
// wouldHaveBeenThrottledRequests, hotLogicalPartitions, …; the README's
// "Partition statistics" documents every field),
// and throughputShare is the partition's RU/s (of its database's shared
// throughput, when shared). On admin without a collection, requestUnits
// sums up the whole server.
//
// minInclusive and maxExclusive are the partition's bounds in the hash
// space as 16 hex digits, "" for its start and "FF" for its end, as Cosmos
// DB writes partition key ranges; minHashedKey and maxHashedKey the same
// bounds as MongoDB's hashed chunk bounds. The reply waits (briefly) for
// splits already due, so it shows the map they lead to.
func (e *Engine) getPartitionStats(ctx context.Context, db string, a *customActionArgs) ([]byte, error) {
	settle, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.store.SettleSplits(settle); err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		// The statistics still answer, from the map as it stands.
		e.logger.Warn("waiting for due splits before partition statistics", "err", err)
	}
	if a.hasCollection {
		c := e.store.Collection(db, a.collection)
		if c == nil {
			return nil, errorf(ErrNamespaceNotFound, "Collection %s does not exist", namespaceOf(db, a.collection))
		}
		d, err := e.collectionPartitionStats(c, a.top)
		if err != nil {
			return nil, err
		}
		e.addReplicas(ctx, c, d)
		return okReply(d...)
	}
	var colls []*store.Collection
	dbs := []string{db}
	if db == "admin" {
		dbs = e.store.Databases()
	}
	for _, name := range dbs {
		colls = append(colls, e.store.Collections(name)...)
	}
	all := bson.A{}
	for _, c := range colls {
		d, err := e.collectionPartitionStats(c, a.top)
		if err != nil {
			return nil, err
		}
		e.addReplicas(ctx, c, d)
		all = append(all, d)
	}
	if db == "admin" {
		// The whole server: its request units, every partition's.
		return okReply(bson.E{Key: "collections", Value: all}, bson.E{Key: "requestUnits", Value: e.serverRUStats(e.now())})
	}
	return okReply(bson.E{Key: "collections", Value: all})
}

// addReplicas gives each partition of a collection's statistics its
// replicas, on a cluster: the group, the nodes, which one leads, what
// each applied. With partition groups each partition names its own
// group (null until its first write creates it).
func (e *Engine) addReplicas(ctx context.Context, c *store.Collection, d bson.D) {
	st, ok := e.clusterStatus(ctx)
	if !ok {
		return
	}
	for i := range d {
		parts, isParts := d[i].Value.(bson.A)
		if d[i].Key != "partitions" || !isParts {
			continue
		}
		for j, p := range parts {
			pd, ok := p.(bson.D)
			if !ok {
				continue
			}
			if st.Groups == nil {
				parts[j] = append(pd, bson.E{Key: "replicas", Value: replicaDocs(st)}, bson.E{Key: "raftGroup", Value: int64(st.Group)})
				continue
			}
			var min uint64
			for _, f := range pd {
				if h, ok := f.Value.(string); ok && f.Key == "minInclusive" && h != "" {
					min, _ = strconv.ParseUint(h, 16, 64)
				}
			}
			if g, ok := st.groupOf(c.ID, min); ok {
				pd = append(pd, bson.E{Key: "replicas", Value: groupReplicaDocs(st, g)}, bson.E{Key: "raftGroup", Value: int64(g.ID)})
				if g.Moving != nil {
					pd = append(pd, bson.E{Key: "moving", Value: g.Moving.doc(e.now())})
				}
				parts[j] = pd
			} else {
				parts[j] = append(pd, bson.E{Key: "replicas", Value: bson.A{}}, bson.E{Key: "raftGroup", Value: nil})
			}
		}
	}
}

// collectionPartitionStats is one collection's part of GetPartitionStats.
func (e *Engine) collectionPartitionStats(c *store.Collection, top int) (bson.D, error) {
	stats, err := e.store.PartitionStats(c, top)
	if err != nil {
		return nil, err
	}
	t, shared := e.effectiveThroughput(c)
	d := bson.D{{Key: "database", Value: c.DB}, {Key: "collection", Value: c.Name}}
	if c.Sharded() {
		d = append(d, bson.E{Key: "shardKey", Value: bson.Raw(c.Spec().Doc())})
	} else {
		d = append(d, bson.E{Key: "shardKey", Value: nil})
	}
	d = append(d, throughputFields(t)...)
	d = append(d, bson.E{Key: "sharedThroughput", Value: shared})
	var total store.Counts
	var lps int64
	for _, ps := range stats {
		total.Docs += ps.Counts.Docs
		total.Bytes += ps.Counts.Bytes
		total.KeyBytes += ps.Counts.KeyBytes
		total.IndexBytes += ps.Counts.IndexBytes
		lps += ps.LogicalPartitions
	}
	share := 0.0
	if !shared {
		share = t.PartitionRate(len(stats))
	}
	// Request units: the partitions' buckets and usage (engine/billing/stats.go).
	var units *collUnits
	if !e.ruOpts.Bypass {
		units = e.units.Of(c)
	}
	now := e.now()
	parts := bson.A{}
	for _, ps := range stats {
		p := ps.Partition
		var ruFields []bson.E
		if units != nil {
			rp := units.Partition(p.ID)
			if rp != nil {
				share = rp.Stats(now).Rate
			}
			if ruFields, err = e.units.PartitionFields(c, rp, now, top); err != nil {
				return nil, err
			}
		}
		minHashed, maxHashed := any(bson.MinKey{}), any(bson.MaxKey{})
		minIncl, maxExcl := "", "FF"
		spec := c.Spec()
		minKey, maxKey := spec.BoundDoc(p.Min, false), spec.BoundDoc(0, true)
		if p.Min != 0 {
			minHashed, minIncl = shard.HashOf(p.Min), fmt.Sprintf("%016X", p.Min)
		}
		if next, ok := p.End(); ok {
			maxHashed, maxExcl = shard.HashOf(next), fmt.Sprintf("%016X", next)
			maxKey = spec.BoundDoc(next, false)
		}
		bounds := []bson.E{{Key: "minHashedKey", Value: minHashed}, {Key: "maxHashedKey", Value: maxHashed}}
		if spec.Ranged { // placed by value: no hash bounds
			bounds = nil
		}
		if c.Sharded() {
			bounds = append(bounds, bson.E{Key: "min", Value: minKey}, bson.E{Key: "max", Value: maxKey})
		}
		largest := bson.A{}
		for _, lp := range ps.Largest {
			entry := bson.D{}
			if c.Sharded() {
				v, ok, err := e.store.ShardKeyOf(c, lp)
				if err != nil {
					return nil, err
				}
				if ok {
					entry = append(entry, bson.E{Key: "shardKey", Value: rawValue(v)})
				}
				if !spec.Ranged {
					entry = append(entry, bson.E{Key: "hashedKey", Value: shard.HashOf(lp.Point)})
				}
			}
			entry = append(entry,
				bson.E{Key: "documentCount", Value: number(lp.Counts.Docs)},
				bson.E{Key: "dataBytes", Value: number(lp.Counts.Bytes)},
				bson.E{Key: "indexBytes", Value: number(lp.Counts.IndexTotal())},
			)
			largest = append(largest, entry)
		}
		entry := append(bson.D{
			{Key: "partitionKeyRangeId", Value: p.IDString()},
			{Key: "minInclusive", Value: minIncl},
			{Key: "maxExclusive", Value: maxExcl},
		}, bounds...)
		entry = append(entry, bson.D{
			{Key: "parents", Value: idStrings(p.Parents)},
			{Key: "documentCount", Value: number(ps.Counts.Docs)},
			{Key: "dataBytes", Value: number(ps.Counts.Bytes)},
			{Key: "indexBytes", Value: number(ps.Counts.IndexTotal())},
			{Key: "storageBytes", Value: number(ps.Counts.Size())},
			{Key: "logicalPartitionCount", Value: number(ps.LogicalPartitions)},
			{Key: "throughputShare", Value: share},
			{Key: "largestLogicalPartitions", Value: largest},
		}...)
		parts = append(parts, append(entry, ruFields...))
	}
	lim := e.store.Limits()
	d = append(d,
		bson.E{Key: "partitionCount", Value: int32(len(stats))},
		bson.E{Key: "documentCount", Value: number(total.Docs)},
		bson.E{Key: "dataBytes", Value: number(total.Bytes)},
		bson.E{Key: "indexBytes", Value: number(total.IndexTotal())},
		bson.E{Key: "logicalPartitionCount", Value: number(lps)},
	)
	if units != nil {
		d = append(d, e.units.CollectionFields(units, now)...)
		d = append(d, bson.E{Key: "rateLimiting", Value: e.ruOpts.Limiting()})
	}
	return append(d,
		bson.E{Key: "limits", Value: bson.D{
			{Key: "partitionMaxBytes", Value: number(lim.PartitionBytes)},
			{Key: "logicalPartitionMaxBytes", Value: number(lim.LogicalPartitionBytes)},
			{Key: "partitionMaxRUs", Value: int32(e.limits.MaxRUs)},
		}},
		bson.E{Key: "partitions", Value: parts},
	), nil
}

// number is n as an int32 when it fits, as MongoDB writes counts, so that
// the shell shows plain numbers.
func number(n int64) any {
	if n == int64(int32(n)) {
		return int32(n)
	}
	return n
}
