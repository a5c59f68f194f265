package sessions

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TooOldError refuses a txnNumber lower than one the session has seen
// (MongoDB's TransactionTooOld).
type TooOldError struct {
	Number int64 // the txnNumber asked for
	Newer  int64 // the session's highest txnNumber
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("txnNumber %d is older than the session's %d", e.Number, e.Newer)
}

// ErrTransactionStarted refuses startTransaction at a txnNumber that has
// already been used (MongoDB's ConflictingOperationInProgress).
var ErrTransactionStarted = errors.New("a transaction with this number is in progress or has run")

// NotInProgressError: the transaction a statement names is not in
// progress (MongoDB's NoSuchTransaction). Why says why it was aborted;
// empty when it never started here, or was aborted by abortTransaction.
type NotInProgressError struct{ Why string }

func (e *NotInProgressError) Error() string {
	if e.Why == "" {
		return "transaction is not in progress"
	}
	return "transaction was aborted because " + e.Why
}

// ErrCommitted: the transaction has committed (MongoDB's
// TransactionCommitted for any statement but commitTransaction).
var ErrCommitted = errors.New("transaction has been committed")

// SnapshotTooOldError: no snapshot is held at At, a time at or before
// the latest snapshot's (MongoDB's SnapshotTooOld).
type SnapshotTooOldError struct{ At bson.Timestamp }

func (e *SnapshotTooOldError) Error() string {
	return fmt.Sprintf("no snapshot is held at (%d, %d)", e.At.T, e.At.I)
}

// SnapshotUnavailableError: At is later than the latest snapshot taken
// (MongoDB's SnapshotUnavailable).
type SnapshotUnavailableError struct{ At, Latest bson.Timestamp }

func (e *SnapshotUnavailableError) Error() string {
	return fmt.Sprintf("(%d, %d) is later than the latest snapshot, (%d, %d)", e.At.T, e.At.I, e.Latest.T, e.Latest.I)
}

// ErrTooManySnapshots: MaxSnapshots are held; no new one is taken
// (MongoDB's SnapshotUnavailable).
var ErrTooManySnapshots = errors.New("too many snapshots held")

// CursorRefusal is why a cursor cannot serve a request.
type CursorRefusal int

const (
	// CursorNotFound: no open cursor has the id.
	CursorNotFound CursorRefusal = iota
	// CursorOtherNamespace: the cursor reads another namespace.
	CursorOtherNamespace
	// CursorOtherOwner: another user opened the cursor.
	CursorOtherOwner
	// CursorInUse: another request holds the cursor.
	CursorInUse
)

// CursorError refuses a cursor's checkout.
type CursorError struct {
	Refusal CursorRefusal
	ID      int64
	NS      string // the namespace the request named
	OwnNS   string // the cursor's namespace (CursorOtherNamespace)
}

func (e *CursorError) Error() string {
	switch e.Refusal {
	case CursorOtherNamespace:
		return fmt.Sprintf("cursor %d reads %s, not %s", e.ID, e.OwnNS, e.NS)
	case CursorOtherOwner:
		return fmt.Sprintf("cursor %d was opened by another user", e.ID)
	case CursorInUse:
		return fmt.Sprintf("cursor %d is in use", e.ID)
	}
	return fmt.Sprintf("cursor %d not found", e.ID)
}
