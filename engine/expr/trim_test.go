package expr

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestTrimCharsNotUTF8 feeds $trim chars that are not UTF-8, which
// extended JSON (and so the datadriven files) cannot carry.
func TestTrimCharsNotUTF8(t *testing.T) {
	for _, c := range []struct {
		chars string
		want  error
	}{
		{"a\x80", ErrTrimCharsContinuation},
		{"\xbf", ErrTrimCharsContinuation},
		{"a\xe2\x80", ErrTrimCharsTruncated},
		{"\xf0", ErrTrimCharsTruncated},
		{"é\u200a", nil},
	} {
		spec := bsoncore.NewDocumentBuilder().
			AppendString("input", "éabcé").
			AppendString("chars", c.chars).
			Build()
		op := bsoncore.NewDocumentBuilder().AppendDocument("$trim", spec).Build()
		scope := NewScope()
		e, err := Compile(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: op}, scope)
		if err != nil {
			t.Fatalf("%q: %v", c.chars, err)
		}
		r, err := e.Eval(NewContext(scope, nil, time.Unix(0, 0)))
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("chars %q: %v, want %v", c.chars, err, c.want)
		}
		if c.want == nil && stringOf(r) != "abc" {
			t.Errorf("chars %q: %s, want abc", c.chars, r)
		}
	}
}
