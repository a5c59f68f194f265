package engine

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/store"
)

// authState is a connection's authentication: the user it authenticated
// as, and the SCRAM exchange in progress.
type authState struct {
	mu   sync.Mutex
	user *authUser

	conv      *auth.Conversation
	convDB    string
	convID    int32
	skipEmpty bool // the client asked to skip SCRAM's final empty exchange
}

// authUser is an authenticated user and its roles as of version (the
// engine's users version): any change to users re-reads them.
type authUser struct {
	name, db string
	roles    []auth.RoleRef
	version  uint64
}

// user returns the connection's user with up-to-date roles, or nil when it
// is not authenticated (or its user was dropped since).
func (c *conn) user() *authUser {
	c.auth.mu.Lock()
	defer c.auth.mu.Unlock()
	u := c.auth.user
	if u == nil {
		return nil
	}
	if v := c.e.usersVersion.Load(); v != u.version {
		fresh, ok, err := c.e.lookupUser(u.db, u.name)
		switch {
		case err != nil:
			return u // keep what was known; the store error shows elsewhere
		case !ok:
			c.auth.user = nil
			return nil
		}
		u = &authUser{name: u.name, db: u.db, roles: fresh.Roles, version: v}
		c.auth.user = u
	}
	return u
}

// cursorOwner names the connection's user for the cursors it opens: ""
// without access control or before authentication.
func (c *conn) cursorOwner() string {
	if !c.e.cfg.Auth {
		return ""
	}
	u := c.user()
	if u == nil {
		return ""
	}
	return u.db + "\x00" + u.name
}

// lookupUser reads user name of db from the store.
func (e *Engine) lookupUser(db, name string) (auth.User, bool, error) {
	raw, err := e.store.User(db, name)
	if errors.Is(err, store.ErrNotFound) {
		return auth.User{}, false, nil
	}
	if err != nil {
		return auth.User{}, false, err
	}
	var u auth.User
	if err := bson.Unmarshal(raw, &u); err != nil {
		return auth.User{}, false, errorf(ErrInternalError, "stored user %s@%s: %v", name, db, err)
	}
	return u, true, nil
}

// saslStart runs the first step of a SCRAM exchange for saslStart and for
// hello's speculativeAuthenticate, and returns the reply's fields. An
// address that keeps failing waits its turn first (auth.LoginBackoff).
func (e *Engine) saslStart(ctx context.Context, c *conn, cmd, db string, body bsoncore.Document) (bson.D, error) {
	var mech string
	var payload []byte
	var havePayload, skip bool
	elems, _ := body.Elements()
	for _, el := range elems[1:] {
		v := el.Value()
		switch k := el.Key(); k {
		case "mechanism":
			s, err := stringArg(cmd, k, v)
			if err != nil {
				return nil, err
			}
			mech = s
		case "payload":
			p, err := payloadArg(cmd, v)
			if err != nil {
				return nil, err
			}
			payload, havePayload = p, true
		case "options":
			d, err := docArg(cmd, k, v)
			if err != nil {
				return nil, err
			}
			if sv, err := d.LookupErr("skipEmptyExchange"); err == nil {
				if skip, err = boolArg(cmd, "options.skipEmptyExchange", sv); err != nil {
					return nil, err
				}
			}
		case "autoAuthorize", "db":
		default:
			if !genericFields[k] {
				return nil, unknownField(cmd, k)
			}
		}
	}
	if mech == "" {
		return nil, missingField(cmd, "mechanism")
	}
	if !havePayload {
		return nil, missingField(cmd, "payload")
	}
	conv, err := auth.NewConversation(mech, func(name string) (auth.User, bool, error) { return e.lookupUser(db, name) }, e.decoys)
	if errors.Is(err, auth.ErrUnknownMechanism) {
		return nil, errorf(ErrMechanismUnavailable, "Received authentication for mechanism %s which is not enabled (Parsec supports %s)", mech, strings.Join(auth.Mechanisms, " and "))
	}
	if err != nil {
		return nil, err
	}
	if err := e.awaitLoginTurn(ctx, c); err != nil {
		return nil, err
	}
	out, err := conv.Step(payload)
	if err != nil {
		return nil, e.authFailed(c, db, conv, err)
	}
	c.auth.mu.Lock()
	c.auth.convID++
	c.auth.conv, c.auth.convDB, c.auth.skipEmpty = conv, db, skip
	id := c.auth.convID
	c.auth.mu.Unlock()
	return bson.D{
		{Key: "conversationId", Value: id},
		{Key: "done", Value: false},
		{Key: "payload", Value: bson.Binary{Data: out}},
	}, nil
}

// payloadArg reads a SASL payload: binary, or a string from older clients.
func payloadArg(cmd string, v bsoncore.Value) ([]byte, error) {
	if _, data, ok := v.BinaryOK(); ok {
		return data, nil
	}
	if s, ok := v.StringValueOK(); ok {
		return []byte(s), nil
	}
	return nil, wrongTypes(cmd, "payload", v, "string, binData")
}

// authFailed counts and reports a failed authentication and returns what
// the client sees: the same error whatever went wrong, as MongoDB does.
// An address's failures are reported once per interval with their count
// (auth.LoginBackoff), in the server's log and getLog's.
func (e *Engine) authFailed(c *conn, db string, conv *auth.Conversation, cause error) *CommandError {
	var user, mech string
	reason := cause.Error()
	if !safeAuthReasons[reason] {
		// A parse error quotes the client's message, which may hold a
		// password sent by mistake (a PLAIN payload, say).
		reason = "malformed SCRAM message"
	}
	if conv != nil {
		user, mech = conv.Username(), conv.Mechanism
		if conv.Decoy() {
			reason = "UserNotFound: no such user"
		}
	}
	c.auth.mu.Lock()
	c.auth.conv = nil
	c.auth.mu.Unlock()
	src := sourceAddress(c.wc.RemoteAddr())
	if count, report := e.logins.Failure(src, e.now()); report {
		e.logAuthFailures("conn"+strconv.FormatInt(c.wc.ID(), 10), src, count, map[string]any{
			"mechanism": mech, "principalName": user, "authenticationDatabase": db,
			"remote": c.wc.RemoteAddr().String(), "error": "AuthenticationFailed: " + reason,
		})
	}
	return errorf(ErrAuthenticationFailed, "Authentication failed.")
}

// safeAuthReasons are the causes of failure the log may show as they are:
// they quote nothing the client sent.
var safeAuthReasons = map[string]bool{
	"challenge proof invalid":                    true,
	"nonce received did not match nonce sent":    true,
	"unexpected message after the exchange":      true,
	"the exchange did not complete":              true,
	"user dropped during the exchange":           true,
	auth.ErrAuthFailed.Error():                   true,
	"Conversation already completed":             true,
	"SCRAM message extensions are not supported": true,
}

// logAuthFailures reports count failed authentications from address src
// as MongoDB's "Authentication failed" line (id 20249), with the last
// attempt's attributes when known; ctxName is the line's ctx (the
// connection).
func (e *Engine) logAuthFailures(ctxName, src string, count int, attr map[string]any) {
	if attr == nil {
		attr = map[string]any{}
	}
	attr["source"] = src
	attr["failures"] = count
	e.logs.add(logLineAttr(e.now(), "I", "ACCESS", 20249, ctxName, "Authentication failed", attr))
	e.logger.Warn("authentication failed", "source", src, "failures", count, "user", attr["principalName"], "db", attr["authenticationDatabase"], "reason", attr["error"])
}

// reportAuthFailures reports the failures held back since an address's
// last report, once its interval is over.
func (e *Engine) reportAuthFailures() {
	for _, r := range e.logins.Sweep(e.now()) {
		e.logAuthFailures("AuthFailureReporter", r.Addr, r.Count, nil)
	}
}

// awaitLoginTurn holds an authentication attempt from an address that
// keeps failing until its turn comes (or the client goes away).
func (e *Engine) awaitLoginTurn(ctx context.Context, c *conn) error {
	wait := e.logins.Admit(sourceAddress(c.wc.RemoteAddr()), e.now())
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return toCommandError(ctx.Err())
	}
}

// sourceAddress is the address failures are counted by: the client's IP
// without its port.
func sourceAddress(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	return addr.String()
}

// speculativeAuth answers hello's speculativeAuthenticate: the first SCRAM
// step, or nothing when it fails (the driver then authenticates as usual
// and gets the error there).
func (e *Engine) speculativeAuth(ctx context.Context, req *request) (bson.D, bool) {
	v, err := req.body.LookupErr("speculativeAuthenticate")
	if err != nil {
		return nil, false
	}
	doc, ok := v.DocumentOK()
	if !ok {
		return nil, false
	}
	first, err := doc.IndexErr(0)
	if err != nil || first.Key() != "saslStart" {
		return nil, false
	}
	db := "admin"
	if dv, err := doc.LookupErr("db"); err == nil {
		if s, ok := dv.StringValueOK(); ok {
			db = s
		}
	}
	out, err := e.saslStart(ctx, req.c, "saslStart", db, doc)
	if err != nil {
		return nil, false
	}
	return out, true
}

// saslMechs answers hello's saslSupportedMechs: "<db>.<user>": the
// mechanisms that user has credentials for.
func (e *Engine) saslMechs(req *request) ([]string, bool) {
	v, err := req.body.LookupErr("saslSupportedMechs")
	if err != nil {
		return nil, false
	}
	s, ok := v.StringValueOK()
	if !ok {
		return nil, false
	}
	db, name, ok := strings.Cut(s, ".")
	if !ok {
		return nil, false
	}
	u, found, err := e.lookupUser(db, name)
	if err != nil || !found {
		return nil, false
	}
	return u.Credentials.Mechanisms(), true
}

// isLoopback reports whether addr is a loopback address (the localhost
// exception applies to such clients only).
func isLoopback(addr net.Addr) bool {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.IsLoopback()
	}
	return false
}
