package engine

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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
	return errorf(ErrIllegalOperation, "multi-document transactions are not supported by Parsec (command %s was sent inside a transaction); run the statements without a transaction", cmd)
}
