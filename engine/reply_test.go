package engine

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestBatchArray checks the hand-sized batch array against the driver's
// builder, across the one- to three-digit index keys.
func TestBatchArray(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 100, 101} {
		var docs [][]byte
		want := bsoncore.NewArrayBuilder()
		for i := range n {
			d := bsoncore.NewDocumentBuilder().AppendInt32("i", int32(i)).AppendString("s", "x").Build()
			docs = append(docs, d)
			want.AppendDocument(d)
		}
		got := batchArray(docs)
		if !bytes.Equal(got, want.Build()) {
			t.Fatalf("%d documents: got %x", n, got)
		}
		if cap(got) != len(got) {
			t.Errorf("%d documents: %d bytes in a buffer of %d: the size estimate is off", n, len(got), cap(got))
		}
	}
}

// A code only a fail point injects still gets MongoDB's codeName, and one
// Parsec does not know is Location<code>, as MongoDB names unnamed codes.
func TestInjectedCodeNames(t *testing.T) {
	for code, want := range map[Code]string{91: "ShutdownInProgress", 11600: "InterruptedAtShutdown", 10107: "NotWritablePrimary", 2: "BadValue", 51024: "Location51024"} {
		if got := code.Name(); got != want {
			t.Errorf("Code(%d).Name() = %q, want %q", code, got, want)
		}
	}
}
