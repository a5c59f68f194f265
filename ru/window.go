package ru

// windowSeconds is how far back the per-second history reaches: the "last
// minute" of the statistics.
const windowSeconds = 60

// window is a ring of per-second consumption over the last minute, driven
// by the injected clock. Second s is the interval [s, s+1) of Unix time;
// "the last n seconds" at time now are the n seconds ending with the one
// now is in, so what was just charged is visible at once.
//
// Amounts are in centi-RU (hundredths), the precision of a charge, so sums
// are exact and independent of the order of charges.
type window struct {
	slots [windowSeconds]slot
}

type slot struct {
	sec    int64   // Unix second this slot holds; stale when older than the window
	centi  int64   // RU consumed during sec, in hundredths
	budget float64 // the partition's RU/s when it was last charged during sec
}

// add records centi hundredths of RU consumed at second sec under a budget
// of rate RU/s. A second older than the slot it maps to (time going back
// more than a minute) is dropped.
func (w *window) add(sec, centi int64, rate float64) {
	s := &w.slots[index(sec)]
	switch {
	case s.sec == sec:
		s.centi += centi
	case s.sec < sec:
		s.sec, s.centi = sec, centi
	default:
		return
	}
	s.budget = rate
}

// sum is the consumption in the n seconds ending with now (n ≤ 60), in
// centi-RU.
func (w *window) sum(now int64, n int64) int64 {
	var total int64
	for i := range w.slots {
		s := &w.slots[i]
		if s.sec <= now && s.sec > now-n {
			total += s.centi
		}
	}
	return total
}

// peak is the largest per-second consumption in the minute ending with now,
// in RU, and the largest fraction of its budget a second consumed.
func (w *window) peak(now int64) (ru, normalized float64) {
	for i := range w.slots {
		s := &w.slots[i]
		if s.sec > now || s.sec <= now-windowSeconds || s.centi == 0 {
			continue
		}
		r := float64(s.centi) / 100
		ru = max(ru, r)
		if s.budget > 0 { // a partition without a budget has no utilization
			normalized = max(normalized, r/s.budget)
		}
	}
	return ru, normalized
}

func index(sec int64) int {
	i := sec % windowSeconds
	if i < 0 {
		i += windowSeconds
	}
	return int(i)
}
