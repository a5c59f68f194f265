package engine

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestOpNamespace checks $currentOp's ns and op fields for the command shapes.
func TestOpNamespace(t *testing.T) {
	for _, tc := range []struct {
		cmd  bson.D
		want string
	}{
		{bson.D{{Key: "find", Value: "c"}}, "d.c"},
		{bson.D{{Key: "getMore", Value: int64(5)}, {Key: "collection", Value: "g"}}, "d.g"},
		{bson.D{{Key: "aggregate", Value: 1}}, "d.$cmd"},
		{bson.D{{Key: "ping", Value: 1}}, "d.$cmd"},
	} {
		body, _ := bson.Marshal(tc.cmd)
		if got := opNamespace("d", body); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.cmd, got, tc.want)
		}
	}
	for name, want := range map[string]string{"find": "query", "getMore": "getmore", "insert": "insert", "delete": "remove", "aggregate": "command"} {
		if got := opKind(name); got != want {
			t.Errorf("opKind(%s) = %q, want %q", name, got, want)
		}
	}
}
