package badgerkv

import (
	"errors"
	"testing"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/kv/kvtest"
)

// TestInvariants runs kv's invariants against Badger on disk.
func TestInvariants(t *testing.T) {
	kvtest.Run(t, func(t *testing.T, dir string) kv.DB {
		db, err := Open(Options{Dir: dir, MemoryLimit: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// TestLocked: a second open of a directory in use fails with ErrLocked.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, MemoryLimit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Open(Options{Dir: dir, MemoryLimit: 64 << 20}); !errors.Is(err, ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
}
