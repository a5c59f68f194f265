package billing

import (
	"log/slog"
	"time"

	"github.com/parsecdb/parsec/ru"
)

// ThrottleLogInterval is how often the log reports partitions that
// refused requests (or, with rate limiting off, would have): one line
// per partition and interval at most, with the count.
const ThrottleLogInterval = 10 * time.Second

// ThrottleLog remembers each partition's throttled count at the last
// report. Only Log touches it; the zero value is ready.
type ThrottleLog struct {
	seen map[*ru.Partition]int64
}

// Log logs one line per partition of a whose throttled count grew
// since the last pass.
func (l *ThrottleLog) Log(logger *slog.Logger, a *Accounts) {
	if a.opts.Bypass || a.store == nil {
		return
	}
	if l.seen == nil {
		l.seen = map[*ru.Partition]int64{}
	}
	now := a.now()
	live := map[*ru.Partition]int64{}
	limiting := a.opts.Limiting()
	for _, u := range a.All() {
		for id, p := range u.byID {
			st := p.Stats(now)
			live[p] = st.Throttled
			n := st.Throttled - l.seen[p]
			if n <= 0 {
				continue
			}
			msg := "partition throttled requests"
			if !limiting {
				msg = "partition would have throttled requests (rate limiting is off)"
			}
			logger.Warn(msg, "collection", u.entry.Namespace(), "partition", id, "count", n,
				"interval", ThrottleLogInterval, "total", st.Throttled,
				"normalized_ru", normalizedRU(st.NormalizedRU), "rus", st.Rate)
		}
	}
	l.seen = live
}
