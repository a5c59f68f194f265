package engine

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// CommandLatencyBuckets are the upper bounds, in seconds, of the latency
// histogram kept per command: 100 µs to 10 s.
var CommandLatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// CommandTiming is one command's count and latency histogram since start.
// Buckets are cumulative, one per CommandLatencyBuckets bound.
type CommandTiming struct {
	Name    string
	Count   uint64
	Seconds float64
	Buckets []uint64
}

// commandTimings are the histograms of every command the table knows, and
// one for the names it does not ("unknown"), so that the label set stays
// bounded whatever clients send. Observing is a few atomic adds.
type commandTimings struct {
	once sync.Once
	by   map[string]*commandHistogram // read-only once built
}

type commandHistogram struct {
	count   atomic.Uint64
	nanos   atomic.Int64
	buckets [16 + 1]atomic.Uint64 // per bound, and past the last
}

// unknownCommand labels the commands the table does not have.
const unknownCommand = "unknown"

func (t *commandTimings) init(commands map[string]command) {
	t.once.Do(func() {
		t.by = map[string]*commandHistogram{unknownCommand: {}}
		for name := range commands {
			t.by[name] = &commandHistogram{}
		}
	})
}

// observe counts one command that took d.
func (e *Engine) observeCommand(name string, d time.Duration) {
	e.timings.init(e.commands)
	h := e.timings.by[name]
	if h == nil {
		h = e.timings.by[unknownCommand]
	}
	h.count.Add(1)
	h.nanos.Add(int64(d))
	s := d.Seconds()
	i := 0
	for i < len(CommandLatencyBuckets) && s > CommandLatencyBuckets[i] {
		i++
	}
	h.buckets[i].Add(1)
}

// CommandTimings are the commands run at least once since start, by name.
func (e *Engine) CommandTimings() []CommandTiming {
	e.timings.init(e.commands)
	var out []CommandTiming
	for name, h := range e.timings.by {
		n := h.count.Load()
		if n == 0 {
			continue
		}
		ct := CommandTiming{Name: name, Seconds: time.Duration(h.nanos.Load()).Seconds(), Buckets: make([]uint64, len(CommandLatencyBuckets))}
		var cum uint64
		for i := range CommandLatencyBuckets {
			cum += h.buckets[i].Load()
			ct.Buckets[i] = cum
		}
		// Count is at least every bucket: an observation between the
		// loads above shows in the count, never fewer.
		ct.Count = max(n, cum+h.buckets[len(CommandLatencyBuckets)].Load())
		out = append(out, ct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
