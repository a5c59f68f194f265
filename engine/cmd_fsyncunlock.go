package engine

import (
	"context"
)

// cmdFsyncUnlock answers db.fsyncUnlock(): nothing is ever locked.
func (e *Engine) cmdFsyncUnlock(_ context.Context, _ *request) ([]byte, error) {
	return nil, errorf(ErrIllegalOperation, "fsyncUnlock called when not locked")
}
