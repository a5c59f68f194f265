package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// docsSource is a cursor over documents already in memory: a listing
// (listCollections, listIndexes) whose first batch was smaller than it.
type docsSource struct{ docs [][]byte }

func (s *docsSource) nextBatch(_ context.Context, max, maxBytes int) ([][]byte, bool, error) {
	n, size := 0, 0
	for n < len(s.docs) && (max <= 0 || n < max) {
		if n > 0 && size+len(s.docs[n]) > maxBytes {
			break
		}
		size += len(s.docs[n])
		n++
	}
	out := s.docs[:n]
	s.docs = s.docs[n:]
	return out, len(s.docs) == 0, nil
}

// cursorBatchSize reads a listing's cursor option {batchSize: n} (the
// IDL's SimpleCursorOptions); -1 when batchSize is not given.
func cursorBatchSize(cmd string, v bsoncore.Value) (int64, error) {
	d, err := docArg(cmd, "cursor", v)
	if err != nil {
		return -1, err
	}
	size := int64(-1)
	elems, _ := d.Elements()
	for _, el := range elems {
		if el.Key() != "batchSize" {
			return -1, unknownField(cmd, "cursor."+el.Key())
		}
		if size, err = int64Arg(cmd, "cursor.batchSize", el.Value()); err != nil {
			return -1, err
		}
		if size < 0 {
			return -1, negativeValue("batchSize", size)
		}
	}
	return size, nil
}

// listingReply answers a listing with docs: all of them in the first
// batch when batchSize is -1 (as MongoDB does, up to the reply's size
// limit), else the first batchSize, the rest left to getMore on a cursor
// named ns.
func (e *Engine) listingReply(req *request, ns string, docs [][]byte, batchSize int64) []byte {
	src := &docsSource{docs: docs}
	var first [][]byte
	done := len(docs) == 0
	if batchSize != 0 {
		first, done, _ = src.nextBatch(context.Background(), int(batchSize), maxBatchBytes)
	}
	var id int64
	if !done {
		id = e.cursors.open(ns, req.c.wc.ID(), requestSession(req.body), src, cursorOptions{owner: req.c.cursorOwner()})
	}
	return cursorReply(id, ns, "firstBatch", batchArray(first))
}
