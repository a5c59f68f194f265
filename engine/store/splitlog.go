package store

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parsecdb/parsec/shard"
)

// SplitEvent is one physical partition that split: its children (more
// than two when throughput split it several times in one change), why,
// the bytes it held, and how long the split took from the decision to
// the new map's publication.
type SplitEvent struct {
	Time       time.Time
	DB         string
	Collection string
	Parent     int
	Children   []int
	// Reason is SplitReasonSize or SplitReasonThroughput.
	Reason   string
	Bytes    int64 // the parent's data and key bytes (-1: not known)
	Duration time.Duration
}

// Why a partition split.
const (
	SplitReasonSize       = "size"       // it grew past the partition size limit
	SplitReasonThroughput = "throughput" // its collection's RU/s needed more partitions
)

// splitHistoryMax bounds the split events kept in memory.
const splitHistoryMax = 1024

// splitHistory keeps the most recent splits since the store opened, and
// how many each collection had, for the log, metrics and the console.
type splitHistory struct {
	mu     sync.Mutex
	events []SplitEvent
	counts map[string]int64 // by namespace
}

func (h *splitHistory) add(ev SplitEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = map[string]int64{}
	}
	h.counts[ev.DB+"."+ev.Collection]++
	h.events = append(h.events, ev)
	if len(h.events) > splitHistoryMax {
		h.events = slices.Delete(h.events, 0, len(h.events)-splitHistoryMax)
	}
}

// Splits returns the splits published since the store opened (the most
// recent splitHistoryMax), oldest first, that happened at or after since.
func (s *Store) Splits(since time.Time) []SplitEvent {
	s.splits.mu.Lock()
	defer s.splits.mu.Unlock()
	i, _ := slices.BinarySearchFunc(s.splits.events, since, func(ev SplitEvent, t time.Time) int { return ev.Time.Compare(t) })
	return slices.Clone(s.splits.events[i:])
}

// SplitCount is how many partitions of namespace db.coll split since the
// store opened.
func (s *Store) SplitCount(db, coll string) int64 {
	s.splits.mu.Lock()
	defer s.splits.mu.Unlock()
	return s.splits.counts[db+"."+coll]
}

// publishSplits records and logs, once the catalog entry next replaced
// prev, every partition of prev that next no longer has: one line per
// split parent, with its children.
func (s *Store) publishSplits(prev, next *Collection, reason string, sizes map[int]int64, started time.Time) {
	now := time.Now()
	old := map[int]bool{}
	for _, p := range prev.Map().Partitions() {
		old[p.ID] = true
	}
	kept := map[int]bool{}
	var born []shard.Partition
	for _, p := range next.Map().Partitions() {
		if old[p.ID] {
			kept[p.ID] = true
		} else {
			born = append(born, p)
		}
	}
	for _, p := range prev.Map().Partitions() {
		if kept[p.ID] {
			continue
		}
		ev := SplitEvent{Time: now, DB: next.DB, Collection: next.Name, Parent: p.ID, Reason: reason, Bytes: -1, Duration: now.Sub(started)}
		if b, ok := sizes[p.ID]; ok {
			ev.Bytes = b
		}
		for _, c := range born {
			if slices.Contains(c.Parents, p.ID) {
				ev.Children = append(ev.Children, c.ID)
			}
		}
		s.splits.add(ev)
		s.logger.Info("partition split", "collection", next.Namespace(), "parent", p.ID,
			"children", idList(ev.Children), "reason", reason, "bytes", ev.Bytes,
			"duration", ev.Duration.Round(time.Microsecond), "partitions", next.Map().Len())
	}
}

// idList writes partition ids as "1,2".
func idList(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

// trackedSizes are the tracked sizes of c's partitions by id (empty when
// c is not tracked).
func (s *Store) trackedSizes(c *Collection) map[int]int64 {
	out := map[int]int64{}
	tr := s.trackerOf(c.ID)
	if tr == nil {
		return out
	}
	for i, p := range tr.m.Partitions() {
		out[p.ID] = tr.sizes[i].Load()
	}
	return out
}
