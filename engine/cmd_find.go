package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Batch limits: MongoDB's default first batch, and the byte budget of one
// batch (a reply must fit in a BSON document).
const (
	defaultFirstBatch = 101
	maxBatchBytes     = wire.MaxBSONObjectSize
)

// findArgs are the parsed options of find.
type findArgs struct {
	filter      *query.Filter
	skip, limit int64
	batchSize   int64 // -1: not given
	singleBatch bool
}

func (e *Engine) cmdFind(ctx context.Context, req *request) ([]byte, error) {
	name, err := collectionArg(req)
	if err != nil {
		return nil, err
	}
	if err := validateCollName(req.db, name); err != nil {
		return nil, err
	}
	args, err := parseFind(req)
	if err != nil {
		return nil, err
	}
	ns := namespaceOf(req.db, name)
	coll := e.store.Collection(req.db, name)
	if coll == nil {
		return cursorReply(0, ns, "firstBatch", emptyArray), nil
	}
	src := &scanSource{store: e.store, coll: coll, filter: args.filter, skip: args.skip, limit: args.limit}
	if id, ok := args.filter.IDEquality(); ok {
		src.point = idKey(coll, id)
	}
	first := int64(defaultFirstBatch)
	if args.batchSize >= 0 {
		first = args.batchSize
	}
	if args.limit > 0 && args.limit < first {
		first = args.limit
	}
	var docs [][]byte
	done := false
	if first > 0 {
		if docs, done, err = src.nextBatch(ctx, int(first), maxBatchBytes); err != nil {
			return nil, err
		}
	}
	var id int64
	if !done && !args.singleBatch {
		id = e.cursors.open(ns, req.c.wc.ID(), requestSession(req.body), src)
	}
	return cursorReply(id, ns, "firstBatch", batchArray(docs)), nil
}

func parseFind(req *request) (*findArgs, error) {
	a := &findArgs{batchSize: -1}
	var filter bsoncore.Document
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "filter":
			if v.Type != bsoncore.TypeNull {
				filter, err = docArg(req.name, k, v)
			}
		case "skip":
			if a.skip, err = int64Arg(req.name, k, v); err == nil && a.skip < 0 {
				err = negativeValue(k, a.skip)
			}
		case "limit":
			// Drivers turn a negative limit into {limit: n, singleBatch:
			// true}; the command itself refuses one, as MongoDB does.
			if a.limit, err = int64Arg(req.name, k, v); err == nil && a.limit < 0 {
				err = negativeValue(k, a.limit)
			}
		case "batchSize":
			if a.batchSize, err = int64Arg(req.name, k, v); err == nil && a.batchSize < 0 {
				err = negativeValue(k, a.batchSize)
			}
		case "singleBatch":
			var b bool
			b, err = boolArg(req.name, k, v)
			a.singleBatch = a.singleBatch || b
		case "sort", "projection", "hint", "min", "max", "let":
			var d bsoncore.Document
			if d, err = docArg(req.name, k, v); err == nil && len(d) > 5 {
				err = errorf(ErrCommandNotSupported, "find.%s is not supported by this Parsec version yet", k)
			}
		case "collation":
			if _, err = docArg(req.name, k, v); err == nil {
				err = errorf(ErrCommandNotSupported, "collation is not supported by Parsec")
			}
		case "tailable", "awaitData", "oplogReplay":
			var b bool
			if b, err = boolArg(req.name, k, v); err == nil && b {
				err = errorf(ErrBadValue, "error processing query: tailable cursor requested on non capped collection")
			}
		case "returnKey", "showRecordId":
			var b bool
			if b, err = boolArg(req.name, k, v); err == nil && b {
				err = errorf(ErrCommandNotSupported, "find.%s is not supported by Parsec", k)
			}
		case "noCursorTimeout", "allowPartialResults", "allowDiskUse":
			_, err = boolArg(req.name, k, v)
		default:
			if !genericFields[k] {
				err = unknownField(req.name, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	f, err := compileFilter(filter)
	if err != nil {
		return nil, err
	}
	a.filter = f
	return a, nil
}

// negativeValue is the IDL's error for a negative count.
func negativeValue(field string, n int64) *CommandError {
	return errorf(ErrValueNegative, "BSON field '%s' value must be >= 0, actual value '%d'", field, n)
}

var emptyArray = bsoncore.NewArrayBuilder().Build()

// batchArray encodes documents as a BSON array.
func batchArray(docs [][]byte) []byte {
	b := bsoncore.NewArrayBuilder()
	for _, d := range docs {
		b.AppendDocument(d)
	}
	return b.Build()
}

// scanSource reads a collection in key order (or one key), filtering,
// skipping and limiting. It resumes after the last key it returned, each
// batch in its own read transaction.
type scanSource struct {
	store  *store.Store
	coll   *store.Collection
	filter *query.Filter
	point  []byte // when set, the only key to read
	next   []byte // resume key; nil at the start
	skip   int64
	limit  int64 // 0: none
	sent   int64
}

// ctxCheckEvery is how many documents a scan examines between checks of
// its context (deadline, client gone).
const ctxCheckEvery = 256

func (s *scanSource) nextBatch(ctx context.Context, max, maxBytes int) ([][]byte, bool, error) {
	var docs [][]byte
	bytes := 0
	full := func() bool {
		return (max > 0 && len(docs) >= max) || (s.limit > 0 && s.sent >= s.limit)
	}
	if s.point != nil {
		err := s.store.View(func(tx *store.Txn) error {
			doc, err := tx.Get(s.point)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			if s.filter.Match(doc) && s.skip == 0 {
				docs = append(docs, doc)
			}
			return nil
		})
		return docs, true, err
	}
	exhausted := true
	examined := 0
	err := s.store.View(func(tx *store.Txn) error {
		return tx.Scan(s.coll, s.next, func(key, doc []byte) (bool, error) {
			if examined++; examined%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			if full() {
				exhausted = s.limit > 0 && s.sent >= s.limit
				s.next = append(s.next[:0], key...)
				return false, nil
			}
			if s.filter.Match(doc) {
				if s.skip > 0 {
					s.skip--
				} else {
					if len(docs) > 0 && bytes+len(doc) > maxBytes {
						exhausted = false
						s.next = append(s.next[:0], key...)
						return false, nil
					}
					docs = append(docs, append([]byte(nil), doc...))
					bytes += len(doc)
					s.sent++
				}
			}
			s.next = append(append(s.next[:0], key...), 0) // successor of key
			return true, nil
		})
	})
	if err != nil {
		return nil, false, err
	}
	if s.limit > 0 && s.sent >= s.limit {
		exhausted = true
	}
	return docs, exhausted, nil
}
