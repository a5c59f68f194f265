package engine

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ClusterStatus is a cluster as its writer sees it (Config.Cluster).
type ClusterStatus struct {
	NodeID uint64
	Term   uint64
	// Group is the Raft group that holds the catalog (and, without
	// partition groups, all the data); every node has a replica of it.
	Group   uint64
	Members []MemberStatus
	// Groups are the partition groups (a cluster started with
	// --partition-groups): each physical partition's own Raft group.
	Groups []GroupStatus
	// LogSyncInterval is how long this node's Raft log entries may wait
	// for their fsync (0: every append is fsynced before it counts);
	// LogFsyncs counts the fsyncs of the deferred log files so far.
	LogSyncInterval time.Duration
	LogFsyncs       uint64
}

// GroupStatus is one partition group: collection Coll's points
// [Min, Max], led by node Leader (0: none known).
type GroupStatus struct {
	ID       uint64
	Coll     uint32
	Min, Max uint64
	Leader   uint64
	// Replicas are the nodes holding a replica (nil: every member).
	Replicas []uint64
	// Moving is a replica moving between nodes (nil: none).
	Moving *MoveStatus
}

// groupOf is the partition group holding point of collection coll.
func (st ClusterStatus) groupOf(coll uint32, point uint64) (GroupStatus, bool) {
	for _, g := range st.Groups {
		if g.Coll == coll && g.Min <= point && point <= g.Max {
			return g, true
		}
	}
	return GroupStatus{}, false
}

// MemberStatus is one node of a cluster.
type MemberStatus struct {
	ID          uint64
	Host        string // client address
	RaftAddress string
	Self        bool
	Writer      bool   // the group's leader, which runs the engine
	Healthy     bool   // answered (itself, or a hello over its client port)
	Applied     uint64 // the Raft index its replica has applied
	Err         string // why it did not answer
	// Groups are the indexes its replicas of partition groups have
	// applied, by group.
	Groups map[uint64]uint64
}

// clusterStatus asks Config.Cluster, within a second.
func (e *Engine) clusterStatus(ctx context.Context) (ClusterStatus, bool) {
	if e.cfg.Cluster == nil {
		return ClusterStatus{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return e.cfg.Cluster(ctx), true
}

// memberState is MongoDB's replica-set state of a member: 1 PRIMARY,
// 2 SECONDARY, 8 DOWN.
func memberState(m MemberStatus) (int32, string) {
	switch {
	case !m.Healthy:
		return 8, "(not reachable/healthy)"
	case m.Writer:
		return 1, "PRIMARY"
	}
	return 2, "SECONDARY"
}

// replSetMembers are replSetGetStatus's members of a cluster.
func (e *Engine) replSetMembers(st ClusterStatus, now time.Time) bson.A {
	members := bson.A{}
	for _, m := range st.Members {
		state, str := memberState(m)
		health := 0.0
		if m.Healthy {
			health = 1
		}
		d := bson.D{
			{Key: "_id", Value: int32(m.ID)},
			{Key: "name", Value: m.Host},
			{Key: "health", Value: health},
			{Key: "state", Value: int32(state)},
			{Key: "stateStr", Value: str},
			{Key: "raftAddress", Value: m.RaftAddress},
			{Key: "raftAppliedIndex", Value: int64(m.Applied)},
		}
		if m.Err != "" {
			d = append(d, bson.E{Key: "lastHeartbeatMessage", Value: m.Err})
		}
		if m.Self {
			d = append(d,
				bson.E{Key: "uptime", Value: int64(now.Sub(e.started).Seconds())},
				bson.E{Key: "electionDate", Value: bson.NewDateTimeFromTime(e.started)},
				bson.E{Key: "self", Value: true})
		}
		members = append(members, d)
	}
	return members
}

// groupReplicaDocs are a partition group's replicas for
// GetPartitionStats and serverStatus.
func groupReplicaDocs(st ClusterStatus, g GroupStatus) bson.A {
	out := bson.A{}
	for _, m := range st.Members {
		applied, ok := m.Groups[g.ID]
		if g.Replicas != nil && !slices.Contains(g.Replicas, m.ID) && !ok {
			continue // not a member of the group
		}
		d := bson.D{
			{Key: "node", Value: int64(m.ID)},
			{Key: "host", Value: m.Host},
			{Key: "leader", Value: m.ID == g.Leader},
			{Key: "healthy", Value: m.Healthy && ok},
		}
		if ok {
			d = append(d, bson.E{Key: "appliedIndex", Value: int64(applied)})
		}
		out = append(out, d)
	}
	return out
}

// replicaDocs are a partition's replicas for GetPartitionStats: every
// node holds one (the cluster's one group keeps all the data).
func replicaDocs(st ClusterStatus) bson.A {
	out := bson.A{}
	for _, m := range st.Members {
		out = append(out, bson.D{
			{Key: "node", Value: int64(m.ID)},
			{Key: "host", Value: m.Host},
			{Key: "leader", Value: m.Writer},
			{Key: "healthy", Value: m.Healthy},
			{Key: "appliedIndex", Value: int64(m.Applied)},
		})
	}
	return out
}
