package console

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

func statsWith(db, coll string, normalized map[string]float64) collectionStats {
	c := collectionStats{Database: db, Collection: coll}
	for _, id := range sortedIDs(normalized) {
		p := partitionStats{ID: id}
		p.RU.Normalized = normalized[id]
		p.RU.RULastMinute = normalized[id] * 60
		p.RU.WouldThrottle = 1
		c.Partitions = append(c.Partitions, p)
	}
	return c
}

func TestHistoryHeatmap(t *testing.T) {
	h := newHistory(time.Minute)
	t0 := time.Unix(1_000_000, 0)
	// two partitions, then a split of "0" into "2" and "3"
	h.add(t0, []collectionStats{statsWith("d", "c", map[string]float64{"0": 10, "1": 20}), statsWith("d", "gone", map[string]float64{"0": 1})})
	h.add(t0.Add(10*time.Second), []collectionStats{statsWith("d", "c", map[string]float64{"2": 30, "3": 40, "1": 50})})
	hm := h.heatmap("d.c", 64)
	if !slices.Equal(hm.Partitions, []string{"0", "1", "2", "3"}) || len(hm.Times) != 2 || hm.Hidden != 0 {
		t.Fatalf("heat map: %+v", hm)
	}
	if hm.Normalized[0][0] == nil || *hm.Normalized[0][0] != 10 || hm.Normalized[0][1] != nil || *hm.Normalized[3][1] != 40 || *hm.RUPerSec[1][1] != 50 {
		t.Errorf("cells: %v", hm.Normalized)
	}
	if !slices.Equal(hm.Throttled, []int64{2, 3}) {
		t.Errorf("throttled: %v", hm.Throttled)
	}
	if got := h.heatmap("d.gone", 64); len(got.Times) != 0 {
		t.Errorf("a dropped collection keeps its history: %+v", got)
	}
	// past the window, the first sample goes
	h.add(t0.Add(65*time.Second), []collectionStats{statsWith("d", "c", map[string]float64{"2": 0, "3": 0, "1": 0})})
	if hm := h.heatmap("d.c", 64); len(hm.Times) != 2 || hm.Times[0] != t0.Add(10*time.Second).Unix() || hm.Partitions[0] != "1" {
		t.Errorf("after the window: %+v", hm)
	}

	// many partitions: the hottest maxRows stay, in their order
	many := map[string]float64{}
	for i := range 70 {
		many[strconv.Itoa(i)] = float64(i % 7)
	}
	many["5"] = 100
	h.add(t0.Add(70*time.Second), []collectionStats{statsWith("d", "wide", many)})
	hm = h.heatmap("d.wide", 10)
	if len(hm.Partitions) != 10 || hm.Hidden != 60 || !slices.Contains(hm.Partitions, "5") || len(hm.Normalized) != 10 {
		t.Fatalf("wide heat map: %d rows, %d hidden, %v", len(hm.Partitions), hm.Hidden, hm.Partitions)
	}
	for _, id := range hm.Partitions {
		if n, _ := strconv.Atoi(id); id != "5" && n%7 != 6 {
			t.Errorf("partition %s (%.0f%%) kept over hotter ones", id, many[id])
		}
	}
	if !slices.IsSortedFunc(hm.Partitions, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y }) {
		t.Errorf("rows out of order: %v", hm.Partitions)
	}
}
