package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/sessions"
	"github.com/parsecdb/parsec/engine/store"
)

// cmdCommitTransaction commits the session's transaction, or answers ok
// again for one already committed.
func (e *Engine) cmdCommitTransaction(ctx context.Context, req *request) ([]byte, error) {
	s := statementOf(ctx)
	if s == nil {
		return nil, errorf(ErrInvalidOptions, "commitTransaction must be run within a transaction")
	}
	wc, err := parseWriteConcern(req)
	if err != nil {
		return nil, err
	}
	switch state, why := s.txn.State(); state {
	case sessions.Committed:
		return okReply()
	case sessions.Aborted:
		return nil, s.noSuchTransaction(why)
	}
	if err := s.txn.Commit(); err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			return nil, errorf(ErrTransactionTooLarge, "Transaction is too large to commit: %v", err)
		}
		return nil, err
	}
	if err := e.journal(wc, true); err != nil {
		return nil, err
	}
	return okReply()
}
