package storage_test

import (
	"testing"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/storage/storagetest"
	"github.com/parsecdb/parsec/engine/store"
)

// Today's store keeps every invariant the engine relies on.
func TestLocal(t *testing.T) {
	storagetest.Run(t, func(t *testing.T, dir string) (storage.Storage, func() error) {
		s, err := store.Open(store.Options{Dir: dir})
		if err != nil {
			t.Fatalf("open %s: %v", dir, err)
		}
		return storage.Local(s), s.Close
	})
}
