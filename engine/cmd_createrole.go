package engine

import (
	"context"
)

// cmdUserDefinedRoles refuses the commands that manage user-defined roles.
func (e *Engine) cmdUserDefinedRoles(_ context.Context, req *request) ([]byte, error) {
	return nil, errorf(ErrCommandNotSupported, "%s: user-defined roles are not supported by Parsec; grant MongoDB's built-in roles", req.name)
}
