package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/sessions"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
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
	if e.isView(req.db, name) {
		return writeReply(0, viewWriteErrors(req.db, name, len(raw), ordered))
	}
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
	ctx = withValidationBypass(ctx, req)
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
	ins := e.newInserter(ctx, m, coll, docs, ordered, rw)
	err := ins.run()
	return ins.inserted, ins.errs, err
}

// inserter is one run of insertDocs: the documents, where it stands in
// them, and the chunk whose transaction is under way.
type inserter struct {
	e       *Engine
	ctx     context.Context
	m       *meter
	coll    *store.Collection
	docs    []insertDoc
	ordered bool
	rw      *retryableWrite

	next     int // the first document no committed chunk handled
	maxDocs  int // documents per chunk after a commit too large for one transaction (0: chunkDocs)
	inserted int64
	errs     []writeError
	// paid holds each document's admission (nil: request units are
	// bypassed). Admissions outlive the transactions, which may rerun: no
	// document is charged or refused twice.
	paid  []itemAdmission
	small [8]itemAdmission
	// gaveUp: server-side retry hit its limit, so the documents left are
	// refused at once instead of waited for.
	gaveUp bool

	units *collUnits // the collection's partitions (nil: not charged)
	chunk insertChunk
}

// insertChunk is what one attempt of a chunk's transaction did; a rerun
// starts it over.
type insertChunk struct {
	end    int // one past the last document it handled
	n      int64
	errs   []writeError
	bytes  int
	logged []sessions.Record // the statements it inserted, to record
	stop   bool              // an ordered insert failed: nothing after it runs
	// wait: server-side retry, document end waits this long for
	// throughput before the next chunk goes on from it.
	wait time.Duration
	// extra is the secondary index entries its documents wrote, priced
	// once known (a document's admission covers the rest).
	extra writeTally
}

// chunkStep is how handling one document leaves its chunk.
type chunkStep uint8

const (
	goOn      chunkStep = iota // on to the next document
	stopAfter                  // an ordered insert failed here: the chunk ends with it, and the insert
	endBefore                  // the chunk ends without it: commit, then the next chunk starts with it
)

func (e *Engine) newInserter(ctx context.Context, m *meter, coll *store.Collection, docs []insertDoc, ordered bool, rw *retryableWrite) *inserter {
	ins := &inserter{e: e, ctx: ctx, m: m, coll: coll, docs: docs, ordered: ordered, rw: rw}
	switch {
	case e.ruOpts.Bypass:
	case len(docs) <= len(ins.small):
		ins.paid = ins.small[:len(docs)]
	default:
		ins.paid = make([]itemAdmission, len(docs))
	}
	return ins
}

// run inserts the documents chunk by chunk.
func (ins *inserter) run() error {
	for ins.next < len(ins.docs) {
		if err := ins.ctx.Err(); err != nil {
			return err
		}
		err := ins.commitChunk()
		if tried := ins.chunk.end - ins.next; errors.Is(err, store.ErrTooLarge) && tried > 1 {
			// The commit did not fit one storage transaction (what it
			// writes beside the documents, the change log's copies,
			// counted too): the chunk is tried again with half as many.
			ins.maxDocs = tried / 2
			continue
		}
		if errors.Is(err, store.ErrCollectionChanged) {
			// dropped or renamed under us: insert into the collection now under this name
			if ins.coll, _, err = ins.e.ensureCollection(ins.ctx, ins.coll.DB, ins.coll.Name); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("insert into %s: %w", ins.coll.Namespace(), err)
		}
		if err := ins.takeChunk(); err != nil || ins.chunk.stop {
			return err
		}
		if err := ins.waitForNext(); err != nil {
			return err
		}
	}
	return nil
}

// commitChunk writes the next chunk of documents in one transaction.
func (ins *inserter) commitChunk() error {
	ins.units = nil
	if ins.paid != nil {
		ins.units = ins.e.units.Of(ins.coll)
	}
	return ins.e.writerOf(ins.ctx).Update(ins.fillChunk)
}

// fillChunk is one attempt of a chunk's transaction: it handles
// documents from next on until the chunk is full or a document ends it,
// then records the statements it inserted.
func (ins *inserter) fillChunk(tx storage.Txn) error {
	c := &ins.chunk
	c.n, c.errs, c.bytes, c.logged, c.stop, c.wait = 0, nil, 0, nil, false, 0
	c.extra.Reset()
	j := ins.next
	limit := chunkDocs
	if ins.maxDocs > 0 {
		limit = ins.maxDocs
	}
	for ; j < len(ins.docs) && j-ins.next < limit && c.bytes < chunkBytes; j++ {
		step, err := ins.writeDoc(tx, j)
		if err != nil {
			return err
		}
		if step == stopAfter {
			c.stop = true
			j++
		}
		if step != goOn {
			break
		}
	}
	c.end = j
	return ins.rw.record(tx, c.logged...)
}

// writeDoc handles document j in tx: counts it when an earlier attempt
// of the retryable write inserted it, reports it when it cannot be
// stored or the collection's validator refuses it, or admits and
// inserts it.
func (ins *inserter) writeDoc(tx storage.Txn, j int) (chunkStep, error) {
	d := ins.docs[j]
	switch {
	case d.retried:
		ins.chunk.n++
		return goOn, nil
	case d.err != nil:
		return ins.fail(writeError{index: j, code: d.err.Code, msg: d.err.Msg}), nil
	}
	key, err := docKeyOf(ins.coll, d.doc, d.id)
	if err == nil && !tx.Plan(ins.coll, key) {
		return endBefore, nil // another physical partition: the next chunk
	}
	if err == nil {
		err = ins.e.checkDocument(ins.ctx, ins.coll, nil, d.doc, false)
	}
	if err == nil {
		var wait time.Duration
		if wait, err = ins.admit(j, key); wait > 0 {
			ins.chunk.wait = wait // commit what is written, wait, go on from j
			return endBefore, nil
		}
	}
	if err == nil {
		err = ins.insert(tx, key, d)
	}
	return ins.settle(j, err)
}

// admit pays document j's request charge on its partition just before it
// is written. It returns the document's error when the partition refuses
// it, or, with server-side retry, how long to wait for it.
func (ins *inserter) admit(j int, key []byte) (time.Duration, error) {
	if ins.units == nil {
		return 0, nil
	}
	wait, refused := ins.e.payItem(ins.m, ins.units.At(key), billing.LogicalKey(ins.coll, key),
		insertPrice(key, len(ins.docs[j].doc)), &ins.paid[j], !ins.gaveUp)
	if refused != nil {
		return 0, refused
	}
	return wait, nil
}

// insert writes d at key in tx and prices the secondary index entries it
// wrote, known only now.
func (ins *inserter) insert(tx storage.Txn, key []byte, d insertDoc) error {
	ixEntries, ixBytes := billing.IndexWork(tx)
	err := tx.Insert(ins.coll, key, d.doc)
	if e1, b1 := billing.IndexWork(tx); err == nil && ins.units != nil && e1 > ixEntries {
		ins.chunk.extra.Add(billing.ItemCharge{Part: ins.units.At(key), Key: billing.LogicalKey(ins.coll, key),
			Amount: ru.Charge(billing.ItemUsage(ru.KindInsert, key, len(d.doc), e1-ixEntries, b1-ixBytes)) - insertPrice(key, len(d.doc))})
	}
	return err
}

// settle sorts out what writing document j did: inserted, a write error
// of its own, a full transaction, or an error that fails the transaction.
func (ins *inserter) settle(j int, err error) (chunkStep, error) {
	var dup *store.DuplicateKeyError
	var ce *CommandError
	switch {
	case errors.As(err, &dup):
		return ins.fail(dupWriteError(j, ins.coll.Namespace(), dup, ins.docs[j].id)), nil
	case errors.As(err, &ce), errors.Is(err, store.ErrLogicalPartitionFull), errors.Is(err, store.ErrParallelArrays),
		errors.Is(err, store.ErrKeyTooLarge), errors.Is(err, store.ErrValueTooLarge), errors.Is(err, store.ErrCappedDocTooLarge):
		// a shard-key error, a full logical partition, a throttled
		// document, or a key or document too large to store: nothing of
		// it was written
		ce = toCommandError(err)
		return ins.fail(writeError{index: j, code: ce.Code, msg: ce.Msg, errInfo: validationErrorInfo(err)}), nil
	case errors.Is(err, store.ErrTooLarge) && j > ins.next:
		return endBefore, nil // the transaction is full: commit it, go on in the next
	case err != nil:
		return goOn, err
	}
	c := &ins.chunk
	c.n++
	c.bytes += len(ins.docs[j].doc)
	if ins.rw != nil {
		c.logged = append(c.logged, sessions.Record{Index: j, Outcome: sessions.Outcome{Op: "i", N: 1}})
	}
	return goOn, nil
}

// fail reports a document's write error; an ordered insert stops there.
func (ins *inserter) fail(we writeError) chunkStep {
	ins.chunk.errs = append(ins.chunk.errs, we)
	if ins.ordered {
		return stopAfter
	}
	return goOn
}

// takeChunk takes in the chunk its transaction committed: its count, its
// write errors, its secondary index charges, its statement records.
func (ins *inserter) takeChunk() error {
	c := &ins.chunk
	ins.inserted += c.n
	ins.errs = append(ins.errs, c.errs...)
	ins.e.units.ChargeItems(ins.m, &c.extra)
	if err := ins.rw.committed(); err != nil {
		return err
	}
	ins.next = c.end
	return nil
}

// waitForNext is server-side retry for the document the chunk ended
// before for want of throughput: outside any transaction, it waits until
// the document's partition admits it. Past the retry limit the document
// is refused (its admission says so: the next chunk reports it), and
// those after it are refused without waiting.
func (ins *inserter) waitForNext() error {
	if ins.chunk.wait <= 0 {
		return nil
	}
	d := ins.docs[ins.next]
	key, _ := docKeyOf(ins.coll, d.doc, d.id)
	err := ins.e.units.WaitItem(ins.ctx, ins.m, ins.units.At(key), billing.LogicalKey(ins.coll, key),
		insertPrice(key, len(d.doc)), ins.chunk.wait, &ins.paid[ins.next])
	if errors.Is(err, billing.ErrRetryLimit) {
		ins.gaveUp = true
		return nil
	}
	return err
}

// insertPrice is the request charge of inserting a document of size
// bytes at key, before its secondary index entries.
func insertPrice(key []byte, size int) float64 {
	return ru.Charge(billing.ItemUsage(ru.KindInsert, key, size, 0, 0))
}
