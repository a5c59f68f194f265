package store

import (
	"sort"
	"sync"
)

// recentChanges keeps the newest events of the change log in memory, as
// their commits wrote them, so that a stream following the log's head
// (the common case: a consumer waiting for what comes next) reads them
// without touching the storage engine: no iteration, no decoding, no
// lookups of documents that events name by reference.
//
// It holds every event after floor, in log order, up to about limit
// bytes; the oldest go first. Events enter after their commit succeeded
// and before its time is released, so every event at or below the
// visible time is either here or at or below floor (then in storage).
// An event whose commit finished after newer ones were evicted past it
// is not added: storage has it, and floor already covers it.
//
// Events here are shared by every reader: they are never modified.
type recentChanges struct {
	mu    sync.Mutex
	evs   []*ChangeEvent // evs[head:] sorted by Pos
	head  int
	floor ChangePos // every event after floor is in evs[head:]
	bytes int64
	limit int64
}

// recentChangesLimit bounds the memory the cache holds.
const recentChangesLimit = 16 << 20

func (r *recentChanges) init(last uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs, r.head, r.bytes = nil, 0, 0
	r.floor = ChangePos{TS: last, Index: ^uint32(0)}
	if r.limit == 0 {
		r.limit = recentChangesLimit
	}
}

func eventBytes(ev *ChangeEvent) int64 {
	return int64(len(ev.FullDocument)+len(ev.PreImage)+len(ev.UpdateDescription)+len(ev.DocumentKey)+len(ev.Description)+len(ev.LSID)) + 160
}

// add records the events of a commit that succeeded, in their order.
func (r *recentChanges) add(evs []*ChangeEvent) {
	if len(evs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.floor.Less(evs[0].Pos) {
		return // older than what was evicted: storage has it
	}
	if n := len(r.evs); n == r.head || r.evs[n-1].Pos.Less(evs[0].Pos) {
		r.evs = append(r.evs, evs...)
	} else { // a commit finishing after a newer one
		i := r.head + sort.Search(n-r.head, func(j int) bool { return evs[0].Pos.Less(r.evs[r.head+j].Pos) })
		r.evs = append(r.evs[:i], append(append([]*ChangeEvent(nil), evs...), r.evs[i:]...)...)
	}
	for _, ev := range evs {
		r.bytes += eventBytes(ev)
	}
	// Evict whole commits, oldest first; never the last one.
	for r.bytes > r.limit && r.head < len(r.evs) && r.evs[r.head].Pos.TS != r.evs[len(r.evs)-1].Pos.TS {
		ts := r.evs[r.head].Pos.TS
		for r.head < len(r.evs) && r.evs[r.head].Pos.TS == ts {
			r.bytes -= eventBytes(r.evs[r.head])
			r.floor = r.evs[r.head].Pos
			r.evs[r.head] = nil
			r.head++
		}
	}
	if r.head > 1024 && r.head > len(r.evs)/2 {
		r.evs = append(r.evs[:0:0], r.evs[r.head:]...)
		r.head = 0
	}
}

// since returns the events at or after from with times at most upTo, if
// the cache holds all of them (false: read storage).
func (r *recentChanges) since(from ChangePos, upTo uint64) ([]*ChangeEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.floor.Less(from) {
		return nil, false
	}
	live := r.evs[r.head:]
	i := sort.Search(len(live), func(j int) bool { return !live[j].Pos.Less(from) })
	j := sort.Search(len(live), func(j int) bool { return live[j].Pos.TS > upTo })
	if j <= i {
		return nil, true
	}
	return append([]*ChangeEvent(nil), live[i:j]...), true
}
