package engine

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestDuplicateField: a key given twice is found among few keys and past
// the 32 compared pairwise; maxTimeMS twice is let through.
func TestDuplicateField(t *testing.T) {
	build := func(keys ...string) bsoncore.Document {
		b := bsoncore.NewDocumentBuilder()
		for _, k := range keys {
			b.AppendInt32(k, 1)
		}
		return b.Build()
	}
	many := make([]string, 0, 50)
	for i := 0; i < 50; i++ {
		many = append(many, fmt.Sprintf("k%d", i))
	}
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"find", "filter", "sort"}, ""},
		{[]string{"find", "filter", "filter"}, "filter"},
		{[]string{"find", "maxTimeMS", "maxTimeMS"}, ""},
		{many, ""},
		{append(append([]string{}, many...), "k3"), "k3"},
		{append(append([]string{}, many...), "k40"), "k40"},
		{nil, ""},
	} {
		if got := duplicateField(build(tc.keys...)); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.keys, got, tc.want)
		}
	}
	if got := duplicateField(bsoncore.Document{1, 2}); got != "" {
		t.Errorf("malformed: %q", got)
	}
}
