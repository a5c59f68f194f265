package engine

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The config database, as a mongos shows it: read-only views of the
// catalog that make mongosh's sh.status() and tools that read the
// sharding metadata work. Parsec is one shard (explainShardName); each
// sharded collection is in config.collections and each of its physical
// partitions is a chunk in config.chunks, bounded by hashed shard-key
// values (NumberLong, MinKey and MaxKey at the ends of the hash space) as
// MongoDB's hashed sharding writes them, with Parsec's additions: the
// partition's partitionKeyRangeId and parents, and its exact
// documentCount, dataBytes and indexBytes (the figures GetPartitionStats
// reports for it). On a cluster of partition groups, config.locks holds
// one document (state 2) for each collection a replica of which is
// moving between nodes, and config.changelog a moveChunk.from document
// for each finished move and failed attempt the catalog keeps (the
// newest 1000): what sh.status() prints as "Collections with active
// migrations" and "Migration Results for the last 24 hours". Collections
// mongosh reads and Parsec has nothing for (tags, actionlog) are empty.

// virtualConfigCollections are the config collections answered from the
// catalog.
var virtualConfigCollections = map[string]bool{
	"version": true, "shards": true, "databases": true, "collections": true, "chunks": true, "mongos": true,
	"settings": true, "tags": true, "locks": true, "changelog": true, "actionlog": true,
}

// shardDocs describe Parsec's shards, as config.shards and listShards
// show them: the one server, or in a cluster each node (node<id>, at
// its client address), the writer's holding the chunks.
func (e *Engine) shardDocs(ctx context.Context) []bson.D {
	doc := func(id, host string) bson.D {
		return bson.D{
			{Key: "_id", Value: id},
			{Key: "host", Value: host},
			{Key: "state", Value: int32(1)},
			{Key: "topologyTime", Value: bson.Timestamp{T: uint32(e.started.Unix()), I: 1}},
		}
	}
	if st, ok := e.clusterStatus(ctx); ok && e.cfg.NodeID != 0 && len(st.Members) > 0 {
		var draining []uint64
		if e.cfg.Balancer != nil {
			draining = e.cfg.Balancer.Status().Draining
		}
		out := make([]bson.D, 0, len(st.Members))
		for _, m := range st.Members {
			d := doc(nodeName(m.ID), m.Host)
			if slices.Contains(draining, m.ID) {
				d = append(d, bson.E{Key: "draining", Value: true})
			}
			out = append(out, d)
		}
		return out
	}
	return []bson.D{doc(e.shardName(), e.hostPort())}
}

// virtualDocs returns the documents of db.coll when it is one of the
// config views, in _id order.
func (e *Engine) virtualDocs(db, coll string) ([][]byte, bool) {
	if db != "config" || !virtualConfigCollections[coll] {
		return nil, false
	}
	var docs []bson.D
	switch coll {
	case "version":
		docs = []bson.D{{{Key: "_id", Value: int32(1)}, {Key: "clusterId", Value: e.clusterID()}}}
	case "shards":
		docs = e.shardDocs(context.Background())
	case "mongos":
		docs = []bson.D{{
			{Key: "_id", Value: e.hostPort()},
			{Key: "advisoryHostFQDNs", Value: bson.A{}},
			{Key: "created", Value: bson.NewDateTimeFromTime(e.started)},
			{Key: "mongoVersion", Value: MongoVersion},
			{Key: "ping", Value: bson.NewDateTimeFromTime(e.now())},
			{Key: "up", Value: int64(e.now().Sub(e.started).Seconds())},
			{Key: "waiting", Value: true},
		}}
	case "databases":
		for _, name := range e.store.Databases() {
			if name == "admin" || name == "config" || name == "local" {
				continue
			}
			docs = append(docs, bson.D{
				{Key: "_id", Value: name},
				{Key: "primary", Value: e.shardName()},
				{Key: "partitioned", Value: true},
				{Key: "version", Value: bson.D{
					{Key: "uuid", Value: bson.Binary{Subtype: 4, Data: nameUUID("db:" + name)}},
					{Key: "timestamp", Value: bson.Timestamp{T: uint32(e.started.Unix()), I: 1}},
					{Key: "lastMod", Value: int32(1)},
				}},
			})
		}
	case "collections":
		for _, c := range e.shardedCollections() {
			docs = append(docs, bson.D{
				{Key: "_id", Value: c.Namespace()},
				{Key: "lastmodEpoch", Value: epochOID(c)},
				{Key: "lastmod", Value: bson.NewDateTimeFromTime(c.ShardedAt)},
				{Key: "timestamp", Value: collTimestamp(c)},
				{Key: "uuid", Value: bson.Binary{Subtype: 4, Data: c.UUID}},
				{Key: "key", Value: plan.ShardKeyIndexKey(c)},
				{Key: "unique", Value: c.Index(plan.ShardKeyIndexName(c)+"_unique") != nil}, // ensureUniqueShardKeyIndex
				{Key: "noBalance", Value: e.cfg.Balancer == nil},
			})
		}
	case "settings":
		docs = e.balancerSettings()
	case "locks":
		docs = e.lockDocs()
	case "changelog":
		docs = e.changelogDocs()
	case "chunks":
		for _, c := range e.shardedCollections() {
			ts := collTimestamp(c)
			counts := e.chunkCounts(c)
			for i, p := range c.Map().Partitions() {
				spec := c.Spec()
				lo, hi := spec.BoundDoc(p.Min, false), spec.BoundDoc(0, true)
				if next, ok := p.End(); ok {
					hi = spec.BoundDoc(next, false)
				}
				version := bson.Timestamp{T: uint32(c.MapVersion) + 1, I: uint32(i)}
				shardName := e.shardName()
				if e.cfg.PartitionLeader != nil {
					if node, ok := e.cfg.PartitionLeader(c.ID, p.Min); ok {
						shardName = fmt.Sprintf("node%d", node) // its group's leader
					}
				}
				chunk := bson.D{
					{Key: "_id", Value: chunkOID(c, p.ID)},
					{Key: "uuid", Value: bson.Binary{Subtype: 4, Data: c.UUID}},
					{Key: "ns", Value: c.Namespace()},
					{Key: "min", Value: lo},
					{Key: "max", Value: hi},
					{Key: "shard", Value: shardName},
					{Key: "lastmod", Value: version},
					{Key: "onCurrentShardSince", Value: ts},
					{Key: "history", Value: bson.A{bson.D{{Key: "validAfter", Value: ts}, {Key: "shard", Value: shardName}}}},
					{Key: "partitionKeyRangeId", Value: p.IDString()},
					{Key: "parents", Value: idStrings(p.Parents)},
				}
				if n, ok := counts[p.ID]; ok {
					chunk = append(chunk,
						bson.E{Key: "documentCount", Value: number(n.Docs)},
						bson.E{Key: "dataBytes", Value: number(n.Bytes)},
						bson.E{Key: "indexBytes", Value: number(n.IndexTotal())},
					)
				}
				docs = append(docs, chunk)
			}
		}
	}
	out := make([][]byte, 0, len(docs))
	for _, d := range docs {
		b, err := bson.Marshal(d)
		if err != nil {
			continue
		}
		out = append(out, b)
	}
	return out, true
}

// chunkCounts are the exact counters of each physical partition of c by
// id, as GetPartitionStats reports them; none when they cannot be read.
func (e *Engine) chunkCounts(c *store.Collection) map[int]store.Counts {
	stats, err := e.store.PartitionStats(c, 0)
	if err != nil {
		return nil
	}
	out := make(map[int]store.Counts, len(stats))
	for _, ps := range stats {
		out[ps.Partition.ID] = ps.Counts
	}
	return out
}

// shardedCollections are the sharded collections of every database,
// sorted by namespace.
func (e *Engine) shardedCollections() []*store.Collection {
	var out []*store.Collection
	for _, db := range e.store.Databases() {
		for _, c := range e.store.Collections(db) {
			if c.Sharded() {
				out = append(out, c)
			}
		}
	}
	return out
}

func idStrings(ids []int) bson.A {
	out := bson.A{}
	for _, id := range ids {
		out = append(out, shard.Partition{ID: id}.IDString())
	}
	return out
}

// clusterID is a stable ObjectId for this node.
func (e *Engine) clusterID() bson.ObjectID {
	var oid bson.ObjectID
	binary.BigEndian.PutUint32(oid[:4], uint32(e.started.Unix()))
	h := md5.Sum([]byte("cluster:" + e.host))
	copy(oid[4:], h[:8])
	return oid
}

func nameUUID(name string) []byte {
	h := md5.Sum([]byte(name))
	h[6] = h[6]&0x0f | 0x30 // version 3 (name-based, MD5)
	h[8] = h[8]&0x3f | 0x80
	return h[:]
}

func epochOID(c *store.Collection) bson.ObjectID {
	var oid bson.ObjectID
	binary.BigEndian.PutUint32(oid[:4], uint32(c.ShardedAt.Unix()))
	copy(oid[4:], c.UUID[:8])
	return oid
}

func chunkOID(c *store.Collection, id int) bson.ObjectID {
	var oid bson.ObjectID
	h := md5.Sum(binary.BigEndian.AppendUint64(append([]byte(nil), c.UUID...), uint64(id)))
	copy(oid[:], h[:12])
	return oid
}

func collTimestamp(c *store.Collection) bson.Timestamp {
	return bson.Timestamp{T: uint32(min(max(c.ShardedAt.Unix(), 0), math.MaxUint32)), I: 1}
}

// collectionByID is the live collection with id, or nil.
func (e *Engine) collectionByID(id uint32) *store.Collection {
	for _, db := range e.store.Databases() {
		for _, c := range e.store.Collections(db) {
			if c.ID == id {
				return c
			}
		}
	}
	return nil
}

// lockDocs are config.locks: for each collection with replicas moving
// between nodes, the moves under way (MongoDB holds a collection's lock
// while one of its chunks migrates). A standby reads the moves from its
// catalog replica: their phase and bytes copied are the writer's to
// know, and its documents say so.
func (e *Engine) lockDocs() []bson.D {
	if e.cfg.Moves == nil {
		return nil
	}
	current, _, err := e.cfg.Moves()
	if err != nil {
		return nil
	}
	now := e.now()
	type lock struct {
		when  time.Time
		why   []string
		moves bson.A
		first MoveStatus
	}
	locks := map[string]*lock{}
	for _, m := range current {
		c := e.collectionByID(m.Coll)
		if c == nil {
			continue // dropped: the move ends without moving anything
		}
		lo, hi, parts := GroupChunk(c, m.Min, m.Max)
		from := "no node (a replica added)"
		if m.From != 0 {
			from = nodeName(m.From)
		}
		d := m.doc(now)
		d = append(d[:1], append(bson.D{{Key: "partitions", Value: parts}, {Key: "min", Value: lo}, {Key: "max", Value: hi}}, d[1:]...)...)
		if !m.Tracked {
			d = slices.DeleteFunc(d, func(e bson.E) bool { return e.Key == "phase" || e.Key == "bytesCopied" })
			d = append(d, bson.E{Key: "progress", Value: "known to the writer, which makes the move: read this on the primary for its phase and bytesCopied"})
		}
		l := locks[c.Namespace()]
		if l == nil {
			l = &lock{when: m.Started, first: m}
			locks[c.Namespace()] = l
		}
		if m.Started.Before(l.when) {
			l.when, l.first = m.Started, m
		}
		l.why = append(l.why, fmt.Sprintf("moving a replica of partition %s (raft group %d) of %s from %s to %s",
			strings.Join(parts, ", "), m.Group, c.Namespace(), from, nodeName(m.To)))
		l.moves = append(l.moves, d)
	}
	var docs []bson.D
	for _, ns := range slices.Sorted(maps.Keys(locks)) {
		l := locks[ns]
		var ts bson.ObjectID
		binary.BigEndian.PutUint32(ts[:4], uint32(l.when.Unix()))
		h := md5.Sum(fmt.Appendf(nil, "lock:%s:%d", ns, l.first.Group))
		copy(ts[4:], h[:8])
		docs = append(docs, bson.D{
			{Key: "_id", Value: ns},
			{Key: "state", Value: int32(2)},
			{Key: "process", Value: "balancer"},
			{Key: "ts", Value: ts},
			{Key: "when", Value: bson.NewDateTimeFromTime(l.when)},
			{Key: "who", Value: "balancer"},
			{Key: "why", Value: strings.Join(l.why, "; ")},
			{Key: "moves", Value: l.moves},
		})
	}
	return docs
}

// changelogDocs are config.changelog: a moveChunk.from document for each
// replica move the catalog recorded, details.note "success" or, for a
// failed attempt, "aborted" with its errmsg and the phase it stopped in.
func (e *Engine) changelogDocs() []bson.D {
	if e.cfg.Moves == nil {
		return nil
	}
	_, done, err := e.cfg.Moves()
	if err != nil {
		return nil
	}
	docs := make([]bson.D, 0, len(done))
	for _, r := range done {
		var from any // a replica added to a group short of one comes from no node
		shard := nodeName(uint64(r.To))
		if r.From != 0 {
			from = nodeName(uint64(r.From))
			shard = from.(string)
		}
		details := bson.D{
			{Key: "min", Value: r.Min},
			{Key: "max", Value: r.Max},
			{Key: "from", Value: from},
			{Key: "to", Value: nodeName(uint64(r.To))},
		}
		if r.Err == "" {
			details = append(details, bson.E{Key: "note", Value: "success"})
		} else {
			details = append(details, bson.E{Key: "note", Value: "aborted"}, bson.E{Key: "errmsg", Value: r.Err}, bson.E{Key: "phase", Value: r.Phase})
		}
		details = append(details,
			bson.E{Key: "raftGroup", Value: r.Group},
			bson.E{Key: "partitions", Value: r.Partitions},
			bson.E{Key: "partitionBytes", Value: r.PartitionBytes},
			bson.E{Key: "bytesCopied", Value: r.BytesCopied},
			bson.E{Key: "startedAt", Value: bson.NewDateTimeFromTime(r.Started)},
			bson.E{Key: "durationMillis", Value: r.Time.Sub(r.Started).Milliseconds()},
		)
		docs = append(docs, bson.D{
			{Key: "_id", Value: fmt.Sprintf("%s-%s-group%d", r.Time.UTC().Format("2006-01-02T15:04:05.000000Z"), nodeName(uint64(r.Server)), r.Group)},
			{Key: "server", Value: nodeName(uint64(r.Server))},
			{Key: "shard", Value: shard},
			{Key: "clientAddr", Value: ""},
			{Key: "time", Value: bson.NewDateTimeFromTime(r.Time)},
			{Key: "what", Value: "moveChunk.from"},
			{Key: "ns", Value: r.NS},
			{Key: "details", Value: details},
		})
	}
	slices.SortFunc(docs, func(a, b bson.D) int { return strings.Compare(a[0].Value.(string), b[0].Value.(string)) })
	return docs
}
