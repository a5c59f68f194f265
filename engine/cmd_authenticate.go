package engine

import (
	"context"
	"strings"

	"github.com/parsecdb/parsec/engine/auth"
)

// cmdAuthenticate is the legacy authenticate command (MONGODB-X509,
// MONGODB-CR): Parsec speaks SCRAM only.
func (e *Engine) cmdAuthenticate(_ context.Context, req *request) ([]byte, error) {
	mech := ""
	if v, err := req.body.LookupErr("mechanism"); err == nil {
		mech, _ = v.StringValueOK()
	}
	return nil, errorf(ErrMechanismUnavailable, "Received authentication for mechanism %s which is not enabled (Parsec supports %s through saslStart)", mech, strings.Join(auth.Mechanisms, " and "))
}
