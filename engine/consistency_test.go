package engine

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parsecdb/parsec/ru"
)

// TestReadConsistency: a read's readConcern decides how it is confirmed
// and charged; without one, the default consistency level does.
func TestReadConsistency(t *testing.T) {
	for _, c := range []struct {
		def, level string
		strong     bool
		charged    ru.Consistency
	}{
		{"", "", false, ru.ConsistencySession},
		{"", "local", false, ru.ConsistencySession},
		{"", "majority", true, ru.ConsistencyStrong},
		{"", "linearizable", true, ru.ConsistencyStrong},
		{"strong", "", true, ru.ConsistencyStrong},
		{"strong", "local", false, ru.ConsistencySession},
		{"bounded", "", false, ru.ConsistencyStrong},
		{"session", "", false, ru.ConsistencySession},
		{"prefix", "", false, ru.ConsistencySession},
		{"eventual", "linearizable", true, ru.ConsistencyStrong},
	} {
		e := &Engine{cfg: Config{DefaultConsistency: c.def}}
		cmd := bson.D{{Key: "find", Value: "c"}}
		if c.level != "" {
			cmd = append(cmd, bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: c.level}}})
		}
		body, _ := bson.Marshal(cmd)
		if got := e.strongRead(body); got != c.strong {
			t.Errorf("default %q, readConcern %q: strong %v, want %v", c.def, c.level, got, c.strong)
		}
		if got := e.readConsistency(body); got != c.charged {
			t.Errorf("default %q, readConcern %q: charged as %v, want %v", c.def, c.level, got, c.charged)
		}
	}
	for _, bad := range []string{"Strong", "linearizable", "x"} {
		if ValidConsistency(bad) == nil {
			t.Errorf("ValidConsistency(%q) accepted", bad)
		}
	}
}
