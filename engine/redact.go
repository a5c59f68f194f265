package engine

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Secrets in commands: wherever Parsec shows a command back ($currentOp
// today; any log or message that would echo a body), the values that carry
// a password or a SCRAM message are shown as "xxx", as MongoDB redacts
// them for logging and currentOp.

// redactedValue replaces every secret value.
const redactedValue = "xxx"

// secretFields are, per canonical command name, the dotted paths of the
// fields that hold secrets.
var secretFields = map[string][]string{
	"createUser":   {"pwd"},
	"updateUser":   {"pwd"},
	"saslStart":    {"payload"},
	"saslContinue": {"payload"},
	"authenticate": {"key", "nonce"},
	"hello":        {"speculativeAuthenticate.payload"},
	"isMaster":     {"speculativeAuthenticate.payload"},
}

// redactCommand returns body with the secrets of command name replaced by
// "xxx": body itself when it holds none, else a new document.
func redactCommand(name string, body bsoncore.Document) bsoncore.Document {
	paths := secretFields[name]
	if len(paths) == 0 {
		return body
	}
	out, changed := redactPaths(body, paths)
	if !changed {
		return body
	}
	return out
}

// redactPaths rebuilds doc with the values at paths (dotted, through
// embedded documents) replaced; changed reports whether any was found.
func redactPaths(doc bsoncore.Document, paths []string) (out bsoncore.Document, changed bool) {
	elems, err := doc.Elements()
	if err != nil {
		// Not a well-formed document: show nothing of it rather than
		// risk a secret.
		return bsoncore.NewDocumentBuilder().Build(), true
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	for _, el := range elems {
		k := el.Key()
		v := el.Value()
		var sub []string
		hit := false
		for _, p := range paths {
			head, rest, nested := strings.Cut(p, ".")
			switch {
			case head != k:
			case !nested:
				hit = true
			default:
				sub = append(sub, rest)
			}
		}
		switch {
		case hit:
			b = bsoncore.AppendStringElement(b, k, redactedValue)
			changed = true
		case len(sub) > 0 && v.Type == bsoncore.TypeEmbeddedDocument:
			inner, ch := redactPaths(v.Document(), sub)
			b = bsoncore.AppendDocumentElement(b, k, inner)
			changed = changed || ch
		default:
			b = append(b, el...)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b, changed
}
