package store

import (
	"errors"
	"testing"
)

// TestOwnerOf: every key family keys.go builds has an owner, and the
// keys of one logical partition (its documents and its counters) name
// the same collection and point.
func TestOwnerOf(t *testing.T) {
	s := &Store{boot: 3}
	const coll, point = 7, 0x3f1a000000000009
	lp := append([]byte{0x3f, 0x1a, 0, 0, 0, 0, 0, 0x09}, 0x0f, 'E', 'U', 0)
	doc := DocKey(coll, point, lp[8:], []byte{0x0a, 0x05, 0x80, 0x01, 0x0b, 0})
	part := Owner{Scope: ScopePartition, Coll: coll, Point: point}
	for _, c := range []struct {
		name string
		key  []byte
		want Owner
	}{
		{"document", doc, part},
		{"logical-partition base", lpBaseKey(coll, lp), part},
		{"logical-partition delta", s.lpDeltaKey(coll, lp), part},
		{"collection base", counterBaseKey(coll), Owner{Scope: ScopeFollows}},
		{"collection delta", s.deltaKey(coll), Owner{Scope: ScopeFollows}},
		{"index entry", append(IndexPrefix(coll, 2), 0x10, 1), Owner{Scope: ScopeFollows}},
		{"unique guard", uniqueGuardKey(append(IndexPrefix(coll, 2), 0x10, 1)), Owner{Scope: ScopeFollows}},
		{"session head", sessionHeadKey(make([]byte, SessionIDLen)), Owner{Scope: ScopeFollows}},
		{"session statement", sessionStmtKey(make([]byte, SessionIDLen), 4), Owner{Scope: ScopeFollows}},
		{"database", dbKey("db"), Owner{Scope: ScopeCatalog}},
		{"collection", collKey("db", "c"), Owner{Scope: ScopeCatalog}},
		{"view", viewKey("db", "v"), Owner{Scope: ScopeCatalog}},
		{"user", userKey("db", "u"), Owner{Scope: ScopeCatalog}},
		{"pending", pendingKey(coll), Owner{Scope: ScopeCatalog}},
		{"sequence", seqKey, Owner{Scope: ScopeCatalog}},
		{"boot", bootKey, Owner{Scope: ScopeCatalog}},
		{"applied index", []byte("r/a\x00\x00\x00\x00\x00\x00\x00\x01"), Owner{Scope: ScopeReplica}},
	} {
		got, err := OwnerOf(c.key)
		if err != nil || got != c.want {
			t.Errorf("%s %x: %+v, %v; want %+v", c.name, c.key, got, err, c.want)
		}
	}
	for _, bad := range [][]byte{nil, []byte("d"), []byte("dx"), []byte("d/\x00\x00\x00\x07\x01"), []byte("z/1")} {
		if _, err := OwnerOf(bad); !errors.Is(err, ErrCorrupted) {
			t.Errorf("OwnerOf(%x): %v, want ErrCorrupted", bad, err)
		}
	}
}
