package sessions

import (
	"fmt"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Retryable writes' bookkeeping.
//
// Drivers send lsid and txnNumber with every retryable write and send the
// same command, same txnNumber, once more when the first attempt's reply
// was lost. Each statement then runs at most once: an Attempt knows which
// statements of its txnNumber an earlier attempt recorded (Executed), and
// records the outcomes of those it runs (Record) in the storage
// transaction that makes their writes, so that a change and its record
// exist both or neither, after any crash. MongoDB keeps the same in
// config.transactions, written with the oplog entry.
//
// A session's records are a head (txnNumber, span, last use) and one
// record per statement (or per run of inserts); the span bounds the
// statement ids recorded since the records were last deleted, so a new
// txnNumber need not delete records it would never read.

// StaleRecordsKept: a new txnNumber first deletes the session's records
// when they may be more than this many (statement ids past it were
// recorded since the last deletion); fewer stay, ignored as stale, until
// overwritten or the session is forgotten. So a session keeps at most
// this many records beyond its current write's, and a write after small
// ones deletes nothing.
const StaleRecordsKept = 64

// Outcome is what one statement of a retryable write did: what a retry
// of it answers. Op is the MongoDB oplog type of its write: "i" (an
// insert, or an upsert), "u" (an update) or "d" (a delete).
type Outcome struct {
	// Run is how many statements, of consecutive ids from the record's,
	// this outcome is that of (0 means 1): inserts that succeed in a row
	// share one record.
	Run       int32
	Op        string
	N         int32
	NModified int32
	Upserted  bsoncore.Value // _id of an upserted document
	// FindAndModify: the document returned (Value, nil: null), before or
	// after the update (PostImage), without the fields projection.
	FindAndModify bool
	Value         []byte
	PostImage     bool
}

// UpdateOutcome is the outcome of an update statement that matched n
// documents, changed modified of them, and upserted upserted.
func UpdateOutcome(n, modified int64, upserted bsoncore.Value) Outcome {
	if upserted.Type != 0 {
		return Outcome{Op: "i", N: 1, Upserted: upserted}
	}
	return Outcome{Op: "u", N: int32(n), NModified: int32(modified)}
}

// isPlain reports whether o is like (an outcome of op and n only, run
// aside): one that may stand for a run of statements.
func (o Outcome) isPlain(like Outcome) bool {
	return o.Op == like.Op && o.N == like.N && o.NModified == 0 && o.Upserted.Type == 0 && !o.FindAndModify
}

func (o Outcome) encode() []byte {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendStringElement(b, "op", o.Op)
	if o.Run > 1 {
		b = bsoncore.AppendInt32Element(b, "run", o.Run)
	}
	b = bsoncore.AppendInt32Element(b, "n", o.N)
	b = bsoncore.AppendInt32Element(b, "nModified", o.NModified)
	if o.Upserted.Type != 0 {
		b = bsoncore.AppendValueElement(b, "upserted", o.Upserted)
	}
	if o.FindAndModify {
		b = bsoncore.AppendBooleanElement(b, "new", o.PostImage)
		if o.Value != nil {
			b = bsoncore.AppendDocumentElement(b, "value", o.Value)
		} else {
			b = bsoncore.AppendNullElement(b, "value")
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

func decodeOutcome(b []byte) (Outcome, error) {
	var o Outcome
	elems, err := bsoncore.Document(b).Elements()
	if err != nil {
		return o, fmt.Errorf("retryable write record: %w", err)
	}
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "op":
			o.Op, _ = v.StringValueOK()
		case "run":
			o.Run, _ = v.Int32OK()
		case "n":
			o.N, _ = v.Int32OK()
		case "nModified":
			o.NModified, _ = v.Int32OK()
		case "upserted":
			o.Upserted = v
		case "new":
			o.FindAndModify, o.PostImage = true, v.Boolean()
		case "value":
			if d, ok := v.DocumentOK(); ok {
				o.Value = d
			}
		}
	}
	return o, nil
}

// Attempt is one attempt of a retryable write: its checked-out session,
// its txnNumber and statement ids, and the statements an earlier attempt
// ran.
type Attempt struct {
	sess    *Session
	txn     int64
	ids     []int32 // stmtIds, or nil: the ids are first, first+1, …
	first   int32
	done    map[int32]Outcome // statements an earlier attempt ran
	retried []int32           // ids of done statements this attempt met
	pending int32             // span once the transaction under way commits
}

// Attempt starts or continues the session's transaction number txn for
// a write whose statements have ids ids (nil: first, first+1, …), and
// reads what earlier attempts of it did. A txnNumber lower than the
// session's is a *TooOldError; a higher one aborts the session's
// transaction in progress.
func (s *Session) Attempt(txn int64, ids []int32, first int32, now time.Time) (*Attempt, error) {
	a := &Attempt{sess: s, txn: txn, ids: ids, first: first}
	s.Touch(now)
	if err := s.load(); err != nil {
		return nil, err
	}
	if txn > s.txnNumber {
		s.EndTransaction() // a newer txnNumber aborts the transaction in progress
	}
	switch {
	case txn < s.txnNumber:
		return nil, &TooOldError{Number: txn, Newer: s.txnNumber}
	case txn > s.txnNumber:
		if s.span > StaleRecordsKept {
			if err := s.t.store.ResetSession(s.id, store.SessionHead{TxnNumber: txn, LastUse: now}); err != nil {
				return nil, err
			}
			s.span = 0
		}
		s.txnNumber = txn
	case s.span > 0:
		recs, err := s.t.store.SessionStatements(s.id, txn)
		if err != nil {
			return nil, err
		}
		a.done = make(map[int32]Outcome, len(recs))
		for id, b := range recs {
			o, err := decodeOutcome(b)
			if err != nil {
				return nil, err
			}
			for i := range max(o.Run, 1) {
				a.done[id+i] = o
			}
		}
	}
	a.pending = s.span
	return a, nil
}

// Release gives the attempt's session back; now is its last use.
func (a *Attempt) Release(now time.Time) { a.sess.Release(now) }

// StmtID is the statement id of the statement at index i of the batch.
func (a *Attempt) StmtID(i int) int32 {
	if a.ids != nil {
		return a.ids[i]
	}
	return a.first + int32(i)
}

// Executed returns the outcome of statement i when an earlier attempt ran
// it, and notes it as retried.
func (a *Attempt) Executed(i int) (Outcome, bool) {
	if a.done == nil {
		return Outcome{}, false
	}
	id := a.StmtID(i)
	o, ok := a.done[id]
	if ok {
		a.retried = append(a.retried, id)
	}
	return o, ok
}

// Retried are the ids of the statements Executed found, in the order it
// found them.
func (a *Attempt) Retried() []int32 { return a.retried }

// Record is the outcome of the statement at Index of the batch.
type Record struct {
	Index   int
	Outcome Outcome
}

// Record writes, in tx, the outcomes of statements the transaction
// wrote, in index order; inserts of consecutive ids share a record.
// Committed must follow once tx commits.
func (a *Attempt) Record(tx storage.Txn, now time.Time, recs ...Record) error {
	var stmts []store.SessionStatement
	var runID int32
	var run Outcome
	span := a.sess.span
	flush := func() {
		if run.Op != "" {
			stmts = append(stmts, store.SessionStatement{ID: runID, Outcome: run.encode()})
			span = max(span, runID+max(run.Run, 1))
		}
	}
	inserted := Outcome{Op: "i", N: 1}
	for _, r := range recs {
		id := a.StmtID(r.Index)
		if r.Outcome.isPlain(inserted) && run.Op != "" && run.isPlain(inserted) && id == runID+max(run.Run, 1) {
			run.Run = max(run.Run, 1) + 1
			continue
		}
		flush()
		runID, run = id, r.Outcome
	}
	flush()
	a.pending = span
	return tx.PutSessionStatements(a.sess.id, store.SessionHead{TxnNumber: a.txn, LastUse: now, Span: span}, stmts)
}

// Committed notes that the storage transaction of the last Record
// committed.
func (a *Attempt) Committed() { a.sess.span = a.pending }
