package engine

import (
	"context"
	"slices"

	"github.com/parsecdb/parsec/engine/auth"
)

func (e *Engine) cmdUpdateUser(_ context.Context, req *request) ([]byte, error) {
	s, err := parseUserSpec(req)
	if err != nil {
		return nil, err
	}
	if s.pwd == nil && !s.haveRoles && s.customData == nil && s.mechs == nil {
		return nil, errorf(ErrBadValue, "Must specify at least one field to update in updateUser")
	}
	u, err := e.existingUser(req.db, s.name)
	if err != nil {
		return nil, err
	}
	mechs := s.mechs
	switch {
	case s.pwd != nil:
		if mechs == nil {
			mechs = u.Credentials.Mechanisms()
		}
		if u.Credentials, err = auth.NewCredentials(s.name, *s.pwd, mechs); err != nil {
			return nil, errorf(ErrBadValue, "%v", err)
		}
	case mechs != nil:
		// Without a new password, mechanisms can only be dropped.
		have := u.Credentials.Mechanisms()
		for _, m := range mechs {
			if !slices.Contains(have, m) {
				return nil, errorf(ErrBadValue, "mechanisms field must be a subset of previously set mechanisms")
			}
		}
		if !slices.Contains(mechs, auth.SHA1) {
			u.Credentials.SHA1 = nil
		}
		if !slices.Contains(mechs, auth.SHA256) {
			u.Credentials.SHA256 = nil
		}
	}
	if s.haveRoles {
		u.Roles = s.roles
	}
	if s.customData != nil {
		u.CustomData = s.customData
	}
	if err := e.putUser(u, false); err != nil {
		return nil, err
	}
	return okReply()
}
