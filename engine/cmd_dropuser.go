package engine

import (
	"context"
)

func (e *Engine) cmdDropUser(_ context.Context, req *request) ([]byte, error) {
	name, err := firstString(req)
	if err != nil {
		return nil, err
	}
	n, err := e.store.DeleteUsers(req.db, name)
	e.usersVersion.Add(1)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errorf(ErrUserNotFound, "User '%s@%s' not found", name, req.db)
	}
	return okReply()
}
