package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ErrOperationNotSupportedInTransaction is what a transaction statement
// gets. Not IllegalOperation (20): drivers turn a write's 20 into their own
// "this deployment does not support retryable writes" message, hiding
// Parsec's.
const ErrOperationNotSupportedInTransaction Code = 263

func init() { codeNames[ErrOperationNotSupportedInTransaction] = "OperationNotSupportedInTransaction" }

// checkTransaction refuses commands that belong to a multi-document
// transaction. Parsec does not run transactions yet; accepting their
// commands would apply each write at once and make abortTransaction a lie,
// so the first statement of a transaction fails instead and nothing is
// written.
func checkTransaction(cmd string, body bsoncore.Document) *CommandError {
	if _, err := body.LookupErr("autocommit"); err != nil {
		if _, err := body.LookupErr("startTransaction"); err != nil {
			return nil
		}
	}
	return transactionsRefused(cmd)
}

func transactionsRefused(cmd string) *CommandError {
	return errorf(ErrOperationNotSupportedInTransaction, "multi-document transactions are not supported by Parsec (command %s was sent inside a transaction); run the statements without a transaction", cmd)
}

// cmdEndTransaction answers commitTransaction and abortTransaction: there
// is no transaction to end, since its first statement was refused.
func (e *Engine) cmdEndTransaction(_ context.Context, req *request) ([]byte, error) {
	return nil, transactionsRefused(req.name)
}
