package engine

import (
	"bytes"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestRedactCommand: the secrets of user and SASL commands read "xxx",
// everything else is kept as sent, and a command without secrets is
// returned as is.
func TestRedactCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  bson.D
		want string // the redacted command as extended JSON
	}{
		{"createUser", bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "s3cret"}, {Key: "roles", Value: bson.A{}}},
			`{"createUser": "u","pwd": "xxx","roles": []}`},
		{"updateUser", bson.D{{Key: "updateUser", Value: "u"}, {Key: "pwd", Value: bson.D{{Key: "pwd", Value: "nested"}}}},
			`{"updateUser": "u","pwd": "xxx"}`},
		{"saslContinue", bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: 1}, {Key: "payload", Value: bson.Binary{Data: []byte("c=biws,p=proof")}}},
			`{"saslContinue": {"$numberInt":"1"},"conversationId": {"$numberInt":"1"},"payload": "xxx"}`},
		{"hello", bson.D{{Key: "hello", Value: 1}, {Key: "speculativeAuthenticate", Value: bson.D{{Key: "saslStart", Value: 1}, {Key: "payload", Value: "n,,n=u"}, {Key: "db", Value: "admin"}}}},
			`{"hello": {"$numberInt":"1"},"speculativeAuthenticate": {"saslStart": {"$numberInt":"1"},"payload": "xxx","db": "admin"}}`},
		{"hello", bson.D{{Key: "hello", Value: 1}, {Key: "speculativeAuthenticate", Value: "odd"}},
			`{"hello": {"$numberInt":"1"},"speculativeAuthenticate": "odd"}`},
	} {
		body, err := bson.Marshal(tc.cmd)
		if err != nil {
			t.Fatal(err)
		}
		got := redactCommand(tc.name, body)
		if s := bson.Raw(got).String(); s != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, s, tc.want)
		}
		if strings.Contains(string(got), "s3cret") || strings.Contains(string(got), "proof") {
			t.Errorf("%s: a secret is left in %v", tc.name, bson.Raw(got))
		}
	}
	body, _ := bson.Marshal(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "pwd", Value: "data"}}}})
	if got := redactCommand("find", body); !bytes.Equal(got, body) || &got[0] != &body[0] {
		t.Errorf("find was rewritten: %v", bson.Raw(got))
	}
	if got := redactCommand("createUser", bsoncore.Document{1, 2, 3}); len(got) != 5 {
		t.Errorf("a malformed command is shown: %v, want an empty document", got)
	}
}
