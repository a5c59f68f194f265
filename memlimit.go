package main

import "github.com/parsecdb/parsec/engine/store"

// defaultMemoryLimit is --memory-limit's default: 1 GiB or a quarter of
// the machine's memory, whichever is smaller.
func defaultMemoryLimit() byteSize {
	limit := int64(store.DefaultMemoryLimit)
	if total := physicalMemory(); total > 0 {
		limit = min(limit, total/4)
	}
	return byteSize(limit)
}
