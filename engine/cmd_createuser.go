package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/store"
)

func (e *Engine) cmdCreateUser(_ context.Context, req *request) ([]byte, error) {
	if err := checkUserDB(req.db); err != nil {
		return nil, err
	}
	s, err := parseUserSpec(req)
	if err != nil {
		return nil, err
	}
	if s.pwd == nil {
		return nil, errorf(ErrBadValue, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	}
	if !s.haveRoles {
		return nil, errorf(ErrBadValue, "\"createUser\" command requires a \"roles\" array")
	}
	creds, err := auth.NewCredentials(s.name, *s.pwd, s.mechs)
	if err != nil {
		return nil, errorf(ErrBadValue, "%v", err)
	}
	u := auth.User{ID: req.db + "." + s.name, UserID: newUUID(), User: s.name, DB: req.db, Credentials: creds, Roles: s.roles}
	if s.customData != nil {
		u.CustomData = s.customData
	}
	if err := e.putUser(u, true); err != nil {
		if errors.Is(err, store.ErrExists) {
			return nil, errorf(ErrUserExists, "User \"%s@%s\" already exists", s.name, req.db)
		}
		return nil, err
	}
	return okReply()
}
