package badgerkv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
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

// TestLogFilesAreBadgers: the files writeBack flushes are where Badger
// puts a write before a flush: a small value's key lands in a listed
// write-ahead log, a large value in the listed value-log file. Should
// Badger name or place them otherwise, this fails (writeBack would then
// flush nothing, and Sync still be right but slower).
func TestLogFilesAreBadgers(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, MemoryLimit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	small := []byte("writeback-small-key-7f3a")
	large := bytes.Repeat([]byte("writeback-large-value-91c2"), int(db.Sizes().valueThreshold)/26+1)
	txn := db.NewTransaction(true)
	if err := txn.Set(small, []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := txn.Set([]byte("writeback-large-key"), large); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	var inWAL, inVlog bool
	for _, path := range logFiles(dir) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(path) {
		case ".mem":
			inWAL = inWAL || bytes.Contains(raw, small)
		case ".vlog":
			inVlog = inVlog || bytes.Contains(raw, large)
		default:
			t.Errorf("logFiles lists %s", path)
		}
	}
	if !inWAL || !inVlog {
		t.Fatalf("small key in a listed write-ahead log: %v; large value in the listed value log: %v (files %v)", inWAL, inVlog, logFiles(dir))
	}
}
