package agg

import "github.com/parsecdb/parsec/engine/langerr"

// memory accounts the bytes one run of a blocking stage holds.
type memory struct {
	stage string
	limit int64
	disk  bool
	used  int64
}

func newMemory(e *env, stage string) *memory {
	return &memory{stage: stage, limit: e.opts.MemoryLimit, disk: e.opts.AllowDiskUse}
}

// perDocOverhead approximates what holding one document costs besides
// its bytes (slice headers, keys, allocator rounding).
const perDocOverhead = 64

// add accounts n more bytes; past the limit it fails with MongoDB's
// error for stages that cannot spill.
func (m *memory) add(n int) error {
	m.used += int64(n) + perDocOverhead
	if m.used > m.limit {
		return m.exceeded()
	}
	return nil
}

// over reports whether the stage is past its limit (stages that spill
// check it after each addition).
func (m *memory) over() bool { return m.used > m.limit }

func (m *memory) reset() { m.used = 0 }

func (m *memory) exceeded() error {
	switch m.stage {
	case "$sort", "$bucketAuto":
		return langerr.New(ErrMemoryLimit, "Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", m.limit)
	case "$group":
		return langerr.New(ErrMemoryLimit, "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in.")
	case "$facet":
		return langerr.New(ErrMemoryLimit, "$facet exceeded memory limit of %d bytes, but did not opt in to external storage. Pass allowDiskUse:true to opt in.", m.limit)
	case "$setWindowFields":
		return langerr.New(ErrMemoryLimit, "Exceeded memory limit in DocumentSourceSetWindowFields, used %d bytes but max allowed is %d bytes", m.used, m.limit)
	}
	return langerr.New(ErrMemoryLimit, "%s exceeded memory limit of %d bytes", m.stage, m.limit)
}
