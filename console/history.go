package console

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// history keeps, per collection, samples of every physical partition's
// normalized RU consumption and RU/s, the heat map's and the RU chart's
// data, for a bounded window.
type history struct {
	window time.Duration

	mu    sync.Mutex
	colls map[string][]sample // by namespace, oldest first
}

// sample is one look at a collection's partitions.
type sample struct {
	at         time.Time
	normalized map[string]float64 // by partition id
	ruPerSec   map[string]float64
	throttled  int64 // refused or would-have-been, all partitions
}

func newHistory(window time.Duration) *history {
	return &history{window: window, colls: map[string][]sample{}}
}

// add records the collections' figures at now and forgets what is older
// than the window and collections that no longer exist.
func (h *history) add(now time.Time, colls []collectionStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	live := map[string]bool{}
	for i := range colls {
		c := &colls[i]
		ns := c.Database + "." + c.Collection
		live[ns] = true
		s := sample{at: now, normalized: map[string]float64{}, ruPerSec: map[string]float64{}}
		for _, p := range c.Partitions {
			s.normalized[p.ID] = p.RU.Normalized
			s.ruPerSec[p.ID] = p.RU.RULastMinute / 60
			s.throttled += p.RU.Throttled + p.RU.WouldThrottle
		}
		list := append(h.colls[ns], s)
		cut := 0
		for cut < len(list) && now.Sub(list[cut].at) > h.window {
			cut++
		}
		h.colls[ns] = slices.Delete(list, 0, cut)
	}
	for ns := range h.colls {
		if !live[ns] {
			delete(h.colls, ns)
		}
	}
}

// heatmap is a collection's samples as the page draws them: one row per
// partition that appears in them (in order of first appearance), one
// column per sample; a partition that did not exist at a sample is null.
type heatmap struct {
	Times      []int64      `json:"times"` // Unix seconds
	Partitions []string     `json:"partitions"`
	Normalized [][]*float64 `json:"normalized"` // [partition][time]
	RUPerSec   [][]*float64 `json:"ruPerSecond"`
	Throttled  []int64      `json:"throttled"` // cumulative, per time
	// Hidden is how many partitions were left out: past maxRows, only
	// the hottest (by their largest sample) are kept.
	Hidden int `json:"hiddenPartitions"`
}

// heatmapRows bounds the rows of a heat map, so that a collection of
// thousands of partitions stays a page a browser redraws every 2 s.
const heatmapRows = 64

func (h *history) heatmap(ns string, maxRows int) heatmap {
	h.mu.Lock()
	defer h.mu.Unlock()
	samples := h.colls[ns]
	out := heatmap{Times: []int64{}, Partitions: []string{}, Normalized: [][]*float64{}, RUPerSec: [][]*float64{}, Throttled: []int64{}}
	row := map[string]int{}
	for _, s := range samples {
		for _, id := range sortedIDs(s.normalized) {
			if _, ok := row[id]; !ok {
				row[id] = len(out.Partitions)
				out.Partitions = append(out.Partitions, id)
			}
		}
	}
	for range out.Partitions {
		out.Normalized = append(out.Normalized, make([]*float64, len(samples)))
		out.RUPerSec = append(out.RUPerSec, make([]*float64, len(samples)))
	}
	for j, s := range samples {
		out.Times = append(out.Times, s.at.Unix())
		out.Throttled = append(out.Throttled, s.throttled)
		for id, v := range s.normalized {
			v, r := v, s.ruPerSec[id]
			out.Normalized[row[id]][j] = &v
			out.RUPerSec[row[id]][j] = &r
		}
	}
	if n := len(out.Partitions); n > maxRows {
		peak := make([]float64, n)
		order := make([]int, n)
		for i, r := range out.Normalized {
			order[i] = i
			for _, v := range r {
				if v != nil {
					peak[i] = max(peak[i], *v)
				}
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(peak[b], peak[a]) })
		keep := order[:maxRows]
		slices.Sort(keep) // back to the order of first appearance
		var parts []string
		var norm, rus [][]*float64
		for _, i := range keep {
			parts, norm, rus = append(parts, out.Partitions[i]), append(norm, out.Normalized[i]), append(rus, out.RUPerSec[i])
		}
		out.Partitions, out.Normalized, out.RUPerSec, out.Hidden = parts, norm, rus, n-maxRows
	}
	return out
}

// sortedIDs are partition ids in numeric order.
func sortedIDs(m map[string]float64) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	return ids
}

// sample records the server's partitions every SampleEvery until Close.
func (s *Server) sample() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.SampleEvery)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		colls, err := s.cache.get(ctx)
		cancel()
		if err == nil {
			s.history.add(time.Now(), colls)
		} else {
			s.opts.Logger.Debug("console: sampling partition statistics", "err", err)
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}
