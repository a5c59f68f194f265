package engine

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func (e *Engine) cmdServerStatus(ctx context.Context, _ *request) ([]byte, error) {
	now := e.now()
	up := now.Sub(e.started)
	var conns bson.D
	if e.cfg.ConnStats != nil {
		st := e.cfg.ConnStats()
		available := int64(1_000_000) - st.Current
		if e.cfg.MaxConnections > 0 {
			available = int64(e.cfg.MaxConnections) - st.Current
		}
		conns = bson.D{
			{Key: "current", Value: int32(st.Current)},
			{Key: "available", Value: int32(available)},
			{Key: "totalCreated", Value: int32(st.TotalCreated)},
			{Key: "rejected", Value: int32(st.Rejected)},
			{Key: "active", Value: int32(st.Current)},
		}
	}
	return okReply(
		bson.E{Key: "host", Value: e.host},
		bson.E{Key: "version", Value: MongoVersion},
		bson.E{Key: "process", Value: "mongos"},
		bson.E{Key: "pid", Value: int64(os.Getpid())},
		bson.E{Key: "uptime", Value: up.Seconds()},
		bson.E{Key: "uptimeMillis", Value: up.Milliseconds()},
		bson.E{Key: "uptimeEstimate", Value: int64(up.Seconds())},
		bson.E{Key: "localTime", Value: bson.NewDateTimeFromTime(now)},
		bson.E{Key: "catalogStats", Value: e.catalogStats()},
		bson.E{Key: "connections", Value: conns},
		bson.E{Key: "opcounters", Value: bson.D{
			{Key: "insert", Value: e.ops.insert.Load()},
			{Key: "query", Value: e.ops.query.Load()},
			{Key: "update", Value: e.ops.update.Load()},
			{Key: "delete", Value: e.ops.delete.Load()},
			{Key: "getmore", Value: e.ops.getmore.Load()},
			{Key: "command", Value: e.ops.command.Load()},
		}},
		// resident and virtual are the kernel's (memstats.go): mapped
		// data files count in resident, as top shows them.
		bson.E{Key: "mem", Value: memSection()},
		bson.E{Key: "metrics", Value: bson.D{
			{Key: "cursor", Value: bson.D{{Key: "open", Value: bson.D{{Key: "total", Value: int64(e.cursors.Count())}}}}},
			{Key: "ttl", Value: bson.D{{Key: "deletedDocuments", Value: e.ttl.deleted.Load()}, {Key: "passes", Value: e.ttl.passes.Load()}}},
		}},
		bson.E{Key: "storageEngine", Value: bson.D{
			{Key: "name", Value: "badger"},
			{Key: "persistent", Value: !e.store.InMemory()},
		}},
		// Parsec's own section: request units of the whole server
		// (engine/billing/stats.go).
		bson.E{Key: "parsec", Value: e.parsecSection(ctx, now)},
	)
}

// groupHolds says what a partition group holds: its collection's
// namespace (from names, by collection id) and its points.
func groupHolds(g GroupStatus, names map[uint32]string) string {
	ns, ok := names[g.Coll]
	if !ok {
		ns = fmt.Sprintf("collection %d", g.Coll)
	}
	return fmt.Sprintf("%s [%016X, %016X]", ns, g.Min, g.Max)
}

// parsecSection is serverStatus' Parsec section: request units of the
// whole server (engine/billing/stats.go), the disk, and on a cluster the
// node's role and its Raft group.
func (e *Engine) parsecSection(ctx context.Context, now time.Time) bson.D {
	d := bson.D{
		{Key: "requestUnits", Value: e.serverRUStats(now)},
		{Key: "disk", Value: diskSection(e.store.DiskStatus())},
	}
	if st, ok := e.clusterStatus(ctx); ok {
		var applied uint64
		for _, m := range st.Members {
			if m.Self {
				applied = m.Applied
			}
		}
		holds := "everything"
		if st.Groups != nil {
			holds = "catalog"
		}
		groups := bson.A{bson.D{
			{Key: "group", Value: int64(st.Group)},
			{Key: "holds", Value: holds},
			{Key: "leader", Value: true},
			{Key: "appliedIndex", Value: int64(applied)},
			{Key: "replicas", Value: replicaDocs(st)},
		}}
		names := map[uint32]string{}
		if len(st.Groups) > 0 {
			for _, db := range e.store.Databases() {
				for _, c := range e.store.Collections(db) {
					names[c.ID] = c.Namespace()
				}
			}
		}
		for _, g := range st.Groups {
			gd := bson.D{
				{Key: "group", Value: int64(g.ID)},
				{Key: "holds", Value: groupHolds(g, names)},
				{Key: "leader", Value: g.Leader == st.NodeID},
			}
			for _, m := range st.Members {
				if a, ok := m.Groups[g.ID]; ok && m.Self {
					gd = append(gd, bson.E{Key: "appliedIndex", Value: int64(a)})
				}
			}
			if g.Replicas != nil {
				nodes := bson.A{}
				for _, n := range g.Replicas {
					nodes = append(nodes, int64(n))
				}
				gd = append(gd, bson.E{Key: "nodes", Value: nodes})
			}
			if g.Moving != nil {
				gd = append(gd, bson.E{Key: "moving", Value: g.Moving.doc(e.now())})
			}
			groups = append(groups, append(gd, bson.E{Key: "replicas", Value: groupReplicaDocs(st, g)}))
		}
		d = append(d, bson.E{Key: "cluster", Value: bson.D{
			{Key: "nodeId", Value: int64(st.NodeID)},
			{Key: "role", Value: "writer"},
			{Key: "term", Value: int64(st.Term)},
			{Key: "groups", Value: groups},
			{Key: "raftLog", Value: bson.D{
				{Key: "syncIntervalMillis", Value: st.LogSyncInterval.Milliseconds()},
				{Key: "deferredFsyncs", Value: int64(st.LogFsyncs)},
			}},
		}})
	}
	return d
}
