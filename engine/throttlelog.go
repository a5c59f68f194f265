package engine

import (
	"time"

	"github.com/parsecdb/parsec/ru"
)

// throttleLogInterval is how often the log reports partitions that
// refused requests (or, with rate limiting off, would have): one line
// per partition and interval at most, with the count.
const throttleLogInterval = 10 * time.Second

// throttleLog remembers each partition's throttled count at the last
// report. Only logThrottles touches it.
type throttleLog struct {
	seen map[*ru.Partition]int64
}

// logThrottles logs one line per partition whose throttled count grew
// since the last pass.
func (e *Engine) logThrottles() {
	if e.ruOpts.Bypass || e.store == nil {
		return
	}
	if e.throttles.seen == nil {
		e.throttles.seen = map[*ru.Partition]int64{}
	}
	now := e.now()
	live := map[*ru.Partition]int64{}
	limiting := e.ruOpts.limiting()
	for _, u := range e.units.all() {
		for id, p := range u.byID {
			st := p.Stats(now)
			live[p] = st.Throttled
			n := st.Throttled - e.throttles.seen[p]
			if n <= 0 {
				continue
			}
			msg := "partition throttled requests"
			if !limiting {
				msg = "partition would have throttled requests (rate limiting is off)"
			}
			e.logger.Warn(msg, "collection", u.entry.Namespace(), "partition", id, "count", n,
				"interval", throttleLogInterval, "total", st.Throttled,
				"normalized_ru", normalizedRU(st.NormalizedRU), "rus", st.Rate)
		}
	}
	e.throttles.seen = live
}
