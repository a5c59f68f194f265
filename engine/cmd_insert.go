package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Documents per transaction, and bytes: large batches commit in chunks so
// one transaction stays well inside Badger's batch limit.
const (
	chunkDocs  = 1000
	chunkBytes = 4 << 20
)

// cmdInsert runs the insert command: documents from the body or a kind-1
// sequence, each given an ObjectId _id when it has none, ordered or not.
// The reply counts the documents inserted (n) and reports per-document
// errors (duplicate keys, bad _id, size) as writeErrors.
func (e *Engine) cmdInsert(ctx context.Context, req *request) ([]byte, error) {
	w, err := parseWriteCommand(req, "documents", false)
	if err != nil {
		return nil, err
	}
	name, ordered, raw := w.coll, w.ordered, w.stmts
	rw, err := e.retryableWrite(ctx, req, w.wc, len(raw))
	if err != nil {
		return nil, err
	}
	defer rw.release()
	e.ops.insert.Add(int64(len(raw)))
	docs := make([]insertDoc, len(raw))
	for i, d := range raw {
		if _, done := rw.executed(i); done {
			docs[i] = insertDoc{retried: true}
			continue
		}
		if !w.keepEmptyTs {
			d = e.replaceEmptyTimestamps(d)
		}
		docs[i] = prepareInsert(d)
	}
	coll, _, err := e.ensureCollection(ctx, req.db, name)
	if err != nil {
		return nil, err
	}
	n, errs, err := e.insertRetryable(ctx, &req.units, coll, docs, ordered, rw)
	if err != nil {
		return nil, err
	}
	if ce := throttledOnly(n, errs, ordered, len(docs)); ce != nil {
		return nil, ce
	}
	if err := e.journal(w.wc, n > 0); err != nil {
		return nil, err
	}
	return writeReply(n, errs, rw.replyFields()...)
}

// insertDoc is a document ready to store, or the reason it cannot be.
type insertDoc struct {
	doc []byte
	id  bsoncore.Value
	err *CommandError
	// retried: an earlier attempt of this retryable write inserted it.
	retried bool
}

// prepareInsert gives a document an ObjectId _id when it has none, moves
// _id to the front, and checks _id's type and the document's size.
func prepareInsert(doc bsoncore.Document) insertDoc {
	elems, err := doc.Elements()
	if err != nil {
		return insertDoc{err: errorf(ErrBadValue, "invalid document: %v", err)}
	}
	idAt := -1
	for i, el := range elems {
		if el.Key() == "_id" {
			if idAt >= 0 {
				return insertDoc{err: errorf(ErrBadValue, "can't have multiple _id fields in one document")}
			}
			idAt = i
		}
	}
	out := []byte(doc)
	var id bsoncore.Value
	switch {
	case idAt < 0:
		oid := bson.NewObjectID()
		start, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+17))
		b = bsoncore.AppendObjectIDElement(b, "_id", oid)
		for _, el := range elems {
			b = append(b, el...)
		}
		out, _ = bsoncore.AppendDocumentEnd(b, start)
		id = bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}
	case idAt > 0:
		start, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)))
		b = append(b, elems[idAt]...)
		for i, el := range elems {
			if i != idAt {
				b = append(b, el...)
			}
		}
		out, _ = bsoncore.AppendDocumentEnd(b, start)
		id = bsoncore.Element(out[4:]).Value()
	default:
		id = elems[0].Value()
	}
	switch id.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
		return insertDoc{err: errorf(ErrInvalidIDField, "The '_id' value cannot be of type %s", TypeName(id.Type))}
	case bsoncore.TypeEmbeddedDocument:
		idElems, _ := id.Document().Elements()
		for _, el := range idElems {
			if strings.HasPrefix(el.Key(), "$") {
				return insertDoc{err: errorf(ErrDollarPrefixedFieldName, "_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", el.Key())}
			}
		}
	}
	if len(out) > wire.MaxBSONObjectSize {
		return insertDoc{err: errorf(ErrBSONObjectTooLarge, "object to insert too large. size in bytes: %d, max size: %d", len(out), wire.MaxBSONObjectSize)}
	}
	return insertDoc{doc: out, id: id}
}

// idKey is the storage key of a document in an unsharded collection
// (docKeyOf in partitions.go keys documents of sharded ones).
func idKey(c *store.Collection, id bsoncore.Value) []byte {
	return store.DocKey(c.ID, 0, nil, value.EncodeKey(nil, id))
}

// insertDocs stores docs in chunked transactions. Ordered inserts stop at
// the first failing document; unordered ones go on. It returns how many
// were inserted and the per-document errors.
//
// Each document pays its request charge on its partition just before it
// is written (m nil: an internal write, charged but never refused): a
// refused document is a TooManyRequests write error and nothing of it is
// written. With server-side retry, the transaction commits what it wrote
// before the refusal, the request waits outside any transaction, and the
// insert goes on from the refused document.
func (e *Engine) insertDocs(ctx context.Context, m *meter, coll *store.Collection, docs []insertDoc, ordered bool) (int64, []writeError, error) {
	return e.insertRetryable(ctx, m, coll, docs, ordered, nil)
}

// insertRetryable is insertDocs for a retryable write (rw nil: not one):
// documents an earlier attempt inserted count as inserted, and each
// transaction records the documents it inserts.
func (e *Engine) insertRetryable(ctx context.Context, m *meter, coll *store.Collection, docs []insertDoc, ordered bool, rw *retryableWrite) (int64, []writeError, error) {
	var inserted int64
	var errs []writeError
	// Admissions outlive the transactions, which may rerun: no document
	// is charged or refused twice.
	var small [8]itemAdmission
	var paid []itemAdmission
	switch {
	case e.ruOpts.Bypass:
	case len(docs) <= len(small):
		paid = small[:len(docs)]
	default:
		paid = make([]itemAdmission, len(docs))
	}
	gaveUp := false // server-side retry hit its limit: refuse the rest at once
	for i := 0; i < len(docs); {
		if err := ctx.Err(); err != nil {
			return inserted, errs, err
		}
		var units *collUnits
		if paid != nil {
			units = e.units.of(coll)
		}
		var chunkErrs []writeError
		var chunkN int64
		var next int
		var stop bool
		var wait time.Duration // server-side retry: document next waits this long first
		var extra writeTally   // secondary index entries, priced once known
		err := e.writerOf(ctx).Update(func(tx storage.Txn) error {
			chunkErrs, chunkN, stop, wait = nil, 0, false, 0
			extra.reset()
			bytes := 0
			var logged []stmtRecord
			j := i
		docs:
			for ; j < len(docs) && j-i < chunkDocs && bytes < chunkBytes; j++ {
				d := docs[j]
				if d.retried {
					chunkN++
					continue
				}
				if d.err != nil {
					chunkErrs = append(chunkErrs, writeError{index: j, code: d.err.Code, msg: d.err.Msg})
					if ordered {
						stop = true
						j++
						break docs
					}
					continue
				}
				key, err := docKeyOf(coll, d.doc, d.id)
				if err == nil && units != nil {
					var refused *CommandError
					wait, refused = e.payItem(m, units.at(key), logicalKey(coll, key),
						ru.Charge(itemUsage(ru.KindInsert, key, len(d.doc), 0, 0)), &paid[j], !gaveUp)
					if wait > 0 {
						break docs // commit what is written, wait, go on from j
					}
					if refused != nil {
						err = refused
					}
				}
				if err == nil {
					ixEntries, ixBytes := secondaryIndexWork(tx)
					err = tx.Insert(coll, key, d.doc)
					if e1, b1 := secondaryIndexWork(tx); err == nil && units != nil && e1 > ixEntries {
						extra.add(itemCharge{part: units.at(key), key: logicalKey(coll, key),
							amount: ru.Charge(itemUsage(ru.KindInsert, key, len(d.doc), e1-ixEntries, b1-ixBytes)) -
								ru.Charge(itemUsage(ru.KindInsert, key, len(d.doc), 0, 0))})
					}
				}
				var dup *store.DuplicateKeyError
				var ce *CommandError
				switch {
				case errors.As(err, &dup):
					chunkErrs = append(chunkErrs, dupWriteError(j, coll.Namespace(), dup, d.id))
					if ordered {
						stop = true
						j++
						break docs
					}
				case errors.As(err, &ce), errors.Is(err, store.ErrLogicalPartitionFull), errors.Is(err, store.ErrParallelArrays),
					errors.Is(err, store.ErrKeyTooLarge), errors.Is(err, store.ErrValueTooLarge):
					// a shard-key error, a full logical partition, a
					// throttled document, or a key or document too large
					// to store: nothing of it was written
					ce = toCommandError(err)
					chunkErrs = append(chunkErrs, writeError{index: j, code: ce.Code, msg: ce.Msg})
					if ordered {
						stop = true
						j++
						break docs
					}
				case errors.Is(err, store.ErrTooLarge) && j > i:
					break docs // the transaction is full: commit it, go on in the next
				case err != nil:
					return err
				default:
					chunkN++
					bytes += len(d.doc)
					if rw != nil {
						logged = append(logged, stmtRecord{j, stmtOutcome{op: "i", n: 1}})
					}
				}
			}
			next = j
			return rw.record(tx, logged...)
		})
		if errors.Is(err, store.ErrCollectionChanged) {
			// dropped or renamed under us: insert into the collection now under this name
			if coll, _, err = e.ensureCollection(ctx, coll.DB, coll.Name); err != nil {
				return inserted, errs, err
			}
			continue
		}
		if err != nil {
			return inserted, errs, fmt.Errorf("insert into %s: %w", coll.Namespace(), err)
		}
		inserted += chunkN
		errs = append(errs, chunkErrs...)
		e.chargeItems(m, &extra)
		if err := rw.committed(); err != nil {
			return inserted, errs, err
		}
		if stop {
			break
		}
		i = next
		if wait > 0 {
			d := docs[next]
			key, _ := docKeyOf(coll, d.doc, d.id)
			price := ru.Charge(itemUsage(ru.KindInsert, key, len(d.doc), 0, 0))
			if err := e.waitItem(ctx, m, units.at(key), logicalKey(coll, key), price, wait, &paid[next]); err != nil {
				if !errors.Is(err, errRetryLimit) {
					return inserted, errs, err
				}
				gaveUp = true // paid[next] is refused now: the loop reports it
			}
		}
	}
	return inserted, errs, nil
}
