package engine

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdSaslContinue takes the next step of the connection's SCRAM exchange.
func (e *Engine) cmdSaslContinue(_ context.Context, req *request) ([]byte, error) {
	var id int64
	var payload []byte
	var haveID, havePayload bool
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		v := el.Value()
		switch k := el.Key(); k {
		case "conversationId":
			n, err := int64Arg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			id, haveID = n, true
		case "payload":
			p, err := payloadArg(req.name, v)
			if err != nil {
				return nil, err
			}
			payload, havePayload = p, true
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	if !haveID {
		return nil, missingField(req.name, "conversationId")
	}
	if !havePayload {
		return nil, missingField(req.name, "payload")
	}
	c := req.c
	c.auth.mu.Lock()
	conv, db, skip := c.auth.conv, c.auth.convDB, c.auth.skipEmpty
	current := int64(c.auth.convID)
	c.auth.mu.Unlock()
	if conv == nil || id != current || db != req.db {
		return nil, errorf(ErrProtocolError, "No SASL session state found")
	}
	reply := func(done bool, out []byte) ([]byte, error) {
		return okReply(bson.E{Key: "conversationId", Value: int32(id)}, bson.E{Key: "done", Value: done}, bson.E{Key: "payload", Value: bson.Binary{Data: out}})
	}
	if conv.Done() {
		// The client's empty message after the server's signature.
		if !conv.Valid() || len(payload) != 0 {
			return nil, e.authFailed(c, db, conv, errors.New("unexpected message after the exchange"))
		}
		c.auth.mu.Lock()
		c.auth.conv = nil
		c.auth.mu.Unlock()
		return reply(true, nil)
	}
	out, err := conv.Step(payload)
	if err != nil || !conv.Valid() {
		if err == nil {
			err = errors.New("the exchange did not complete")
		}
		return nil, e.authFailed(c, db, conv, err)
	}
	u, ok, err := e.lookupUser(db, conv.Username())
	if err != nil || !ok {
		return nil, e.authFailed(c, db, conv, errors.New("user dropped during the exchange"))
	}
	c.auth.mu.Lock()
	c.auth.user = &authUser{name: u.User, db: u.DB, roles: u.Roles, version: e.usersVersion.Load()}
	if skip {
		c.auth.conv = nil
	}
	c.auth.mu.Unlock()
	e.logger.Info("authentication succeeded", "user", u.User, "db", db, "mechanism", conv.Mechanism, "remote", c.wc.RemoteAddr().String())
	return reply(skip, out)
}
