package sessions

import (
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ClusterClock hands out cluster times: Timestamp{seconds, counter},
// each later than the one before (invariant 7). Replies carry one as
// operationTime, the time a causally consistent session's next read
// (readConcern afterClusterTime) and next transaction must see; snapshots
// are named by one. The zero value is ready to use.
type ClusterClock struct{ last atomic.Uint64 }

// Next is a new cluster time: now's second, or one tick after the last
// time handed out when that is not earlier.
func (c *ClusterClock) Next(now time.Time) bson.Timestamp {
	for {
		last := c.last.Load()
		t := uint64(now.Unix()) << 32
		if t <= last {
			t = last + 1
		}
		if c.last.CompareAndSwap(last, t) {
			return bson.Timestamp{T: uint32(t >> 32), I: uint32(t)}
		}
	}
}

// Latest is the last cluster time handed out (a new one when none was).
func (c *ClusterClock) Latest(now time.Time) bson.Timestamp {
	if last := c.last.Load(); last != 0 {
		return bson.Timestamp{T: uint32(last >> 32), I: uint32(last)}
	}
	return c.Next(now)
}

// After is a new cluster time later than both now's second and after
// (a time on the same scale, as a uint64: seconds << 32 | counter).
func (c *ClusterClock) After(now time.Time, after uint64) uint64 {
	for {
		last := c.last.Load()
		t := uint64(now.Unix()) << 32
		if t <= last {
			t = last + 1
		}
		if t <= after {
			t = after + 1
		}
		if c.last.CompareAndSwap(last, t) {
			return t
		}
	}
}

func tsKey(ts bson.Timestamp) uint64 { return uint64(ts.T)<<32 | uint64(ts.I) }
