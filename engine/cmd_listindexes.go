package engine

import (
	"context"
)

// cmdListIndexes lists a collection's indexes, the _id index first.
func (e *Engine) cmdListIndexes(_ context.Context, req *request) ([]byte, error) {
	name, err := collectionArg(req)
	if err != nil {
		return nil, err
	}
	batchSize := int64(-1)
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "cursor":
			if batchSize, err = cursorBatchSize(req.name, v); err != nil {
				return nil, err
			}
		case "includeBuildUUIDs", "includeIndexBuildInfo":
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	if e.isView(req.db, name) {
		return nil, notOnView(req.db, name)
	}
	c := e.store.Collection(req.db, name)
	if c == nil || e.store.Pending(c.ID) {
		return nil, errorf(ErrNamespaceNotFound, "ns does not exist: %s", namespaceOf(req.db, name))
	}
	specs := listedIndexes(c)
	docs := make([][]byte, len(specs))
	for i, spec := range specs {
		docs[i] = spec
	}
	return e.listingReply(req, namespaceOf(req.db, name), docs, batchSize), nil
}
