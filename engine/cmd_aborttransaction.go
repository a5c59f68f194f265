package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/sessions"
)

// cmdAbortTransaction aborts the session's transaction.
func (e *Engine) cmdAbortTransaction(ctx context.Context, req *request) ([]byte, error) {
	s := statementOf(ctx)
	if s == nil {
		return nil, errorf(ErrInvalidOptions, "abortTransaction must be run within a transaction")
	}
	if _, err := parseWriteConcern(req); err != nil {
		return nil, err
	}
	switch state, why := s.txn.State(); state {
	case sessions.Committed:
		return nil, errorf(ErrTransactionCommitted, "Transaction %d has been committed.", s.n)
	case sessions.Aborted:
		return nil, s.noSuchTransaction(why)
	}
	s.txn.Abort("")
	return okReply()
}
