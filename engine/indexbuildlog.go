package engine

import (
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/store"
)

// indexBuild is one createIndexes build, for its start and end lines in
// the log.
type indexBuild struct {
	e       *Engine
	ns      string
	indexes string
	start   time.Time
}

// startIndexBuild logs that the indexes specs of c start building.
func (e *Engine) startIndexBuild(c *store.Collection, specs []indexSpec) *indexBuild {
	names := make([]string, len(specs))
	for i, is := range specs {
		names[i] = is.ix.Name
	}
	b := &indexBuild{e: e, ns: c.Namespace(), indexes: strings.Join(names, ","), start: time.Now()}
	e.logger.Info("index build started", "collection", b.ns, "indexes", b.indexes)
	return b
}

// end logs how the build ended: documents indexed, how long it took and
// the rate, or why it failed.
func (b *indexBuild) end(p *store.BuildProgress, err error) {
	d := time.Since(b.start)
	done := p.Done.Load()
	rate := 0.0
	if d > 0 {
		rate = float64(done) / d.Seconds()
	}
	attrs := []any{"collection", b.ns, "indexes", b.indexes, "documents", done,
		"duration", d.Round(time.Microsecond), "docs_per_second", int64(rate)}
	if err != nil {
		b.e.logger.Warn("index build failed", append(attrs, "err", err)...)
		return
	}
	b.e.logger.Info("index build done", attrs...)
}
