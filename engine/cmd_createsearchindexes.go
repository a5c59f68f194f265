package engine

import "context"

// cmdSearchIndexes answers createSearchIndexes, updateSearchIndex and
// dropSearchIndex as a MongoDB 7.0 server outside Atlas does: Atlas Search
// is not available.
func (e *Engine) cmdSearchIndexes(context.Context, *request) ([]byte, error) {
	return nil, errorf(ErrCommandNotSupported, "Search index commands are only supported with Atlas.")
}
