package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parsecdb/parsec/engine/store"
)

// Balancer is a cluster's balancer (Config.Balancer): it moves the
// replicas of partitions' Raft groups between nodes to spread them, and
// their leaders to spread the load, and drains a node being removed.
type Balancer interface {
	Status() BalancerStatus
	// SetEnabled starts or stops it (a move under way finishes), and
	// sets how many replica moves it makes at once (maxMoves, 1 to
	// MaxConcurrentMoves; 0 leaves it as it is).
	SetEnabled(ctx context.Context, on bool, maxMoves int) error
	// RemoveShard starts draining node, or says how far it is: "started"
	// (the first call), "ongoing" with the replicas it still holds, and
	// "completed" once it held none and left the cluster.
	RemoveShard(ctx context.Context, node uint64) (RemoveShardState, error)
}

// MaxConcurrentMoves bounds balancerStart's maxConcurrentMoves.
const MaxConcurrentMoves = 16

// BalancerStatus is what balancerStatus shows.
type BalancerStatus struct {
	Enabled  bool
	MaxMoves int // replica moves at once
	InRound  bool
	Rounds   int64
	Paused   string // why it waits ("": it does not)
	Moves    []MoveStatus
	Draining []uint64
}

// MoveStatus is one replica moving between nodes.
type MoveStatus struct {
	Group    uint64
	Coll     uint32 // the group's collection and points (0, 0, 0: unknown)
	Min, Max uint64
	From, To uint64
	Started  time.Time
	// PartitionBytes are the partition's bytes when the move began.
	PartitionBytes int64
	// Tracked says this node is the cluster's writer, which makes the
	// move: Phase and BytesCopied are known (a standby reads only the
	// catalog's record). Phase "recorded" is a move recorded that the
	// writer has not begun or resumed yet.
	Tracked bool
	Phase   string
	// BytesCopied are the bytes the target node's replica copied in so
	// far: the snapshot its restore took in plus the log entries it
	// applied (cluster.CopyProgress), as the writer last asked it.
	BytesCopied int64
}

// MoveRecord is a finished replica move, or a failed attempt at one, as
// the catalog keeps it (config.changelog shows it).
type MoveRecord struct {
	Time       time.Time `bson:"time"`   // when it ended or failed
	Server     int64     `bson:"server"` // the writer's node
	Group      int64     `bson:"group"`
	NS         string    `bson:"ns"`
	Partitions []string  `bson:"partitions"` // partitionKeyRangeIds
	Min        bson.D    `bson:"min"`        // the chunk bounds
	Max        bson.D    `bson:"max"`
	From       int64     `bson:"from"` // 0: a replica added
	To         int64     `bson:"to"`
	Started    time.Time `bson:"started"`
	// PartitionBytes and BytesCopied are MoveStatus's.
	PartitionBytes int64 `bson:"partitionBytes"`
	BytesCopied    int64 `bson:"bytesCopied"`
	// Phase is where a failed attempt stopped; Err its error ("": the
	// move succeeded).
	Phase string `bson:"phase,omitempty"`
	Err   string `bson:"errmsg,omitempty"`
}

// GroupChunk is what a partition group of collection c over points
// [min, max] covers: its chunk bounds, as config.chunks writes them, and
// its partitions' partitionKeyRangeIds.
func GroupChunk(c *store.Collection, min, max uint64) (lo, hi bson.D, partitions []string) {
	spec := c.Spec()
	lo, hi = spec.BoundDoc(min, false), spec.BoundDoc(0, true)
	if max < math.MaxUint64 {
		hi = spec.BoundDoc(max+1, false)
	}
	partitions = []string{}
	for _, p := range c.Map().Partitions() {
		if p.Min >= min && p.Min <= max {
			partitions = append(partitions, p.IDString())
		}
	}
	return lo, hi, partitions
}

// RemoveShardState is removeShard's answer.
type RemoveShardState struct {
	State     string // started, ongoing, completed
	Remaining int64  // replicas still on the node
}

func (m MoveStatus) doc(now time.Time) bson.D {
	var from any // a replica added to a group short of one comes from no node
	if m.From != 0 {
		from = nodeName(m.From)
	}
	return bson.D{
		{Key: "raftGroup", Value: int64(m.Group)},
		{Key: "from", Value: from},
		{Key: "to", Value: nodeName(m.To)},
		{Key: "phase", Value: m.Phase},
		{Key: "partitionBytes", Value: m.PartitionBytes},
		{Key: "bytesCopied", Value: m.BytesCopied},
		{Key: "startedAt", Value: bson.NewDateTimeFromTime(m.Started)},
		{Key: "elapsedMillis", Value: now.Sub(m.Started).Milliseconds()},
	}
}

// nodeName is a cluster node's shard name.
func nodeName(id uint64) string { return fmt.Sprintf("node%d", id) }

// parseNodeName reads a shard name ("node3", or the bare id).
func parseNodeName(s string) (uint64, bool) {
	id, err := strconv.ParseUint(strings.TrimPrefix(s, "node"), 10, 64)
	return id, err == nil && id > 0
}

// balancerSettings is config.settings' balancer document.
func (e *Engine) balancerSettings() []bson.D {
	if e.cfg.Balancer == nil {
		return nil
	}
	st := e.cfg.Balancer.Status()
	mode := "full"
	if !st.Enabled {
		mode = "off"
	}
	return []bson.D{{{Key: "_id", Value: "balancer"}, {Key: "mode", Value: mode}, {Key: "stopped", Value: !st.Enabled},
		{Key: "maxConcurrentMoves", Value: int32(st.MaxMoves)}}}
}

// PartitionLoad is the request units collection c's partitions within
// points [min, max] consumed in the last minute (0 when not metered).
func (e *Engine) PartitionLoad(c *store.Collection, min, max uint64) float64 {
	if e.ruOpts.Bypass || c == nil {
		return 0
	}
	units := e.units.Of(c)
	if units == nil {
		return 0
	}
	now := e.now()
	var total float64
	for _, p := range c.Map().Partitions() {
		if p.Min < min || p.Min > max {
			continue
		}
		if rp := units.Partition(p.ID); rp != nil {
			total += rp.Stats(now).LastMinuteRU
		}
	}
	return total
}
