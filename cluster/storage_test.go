package cluster

import (
	"testing"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/storage/storagetest"
	"github.com/parsecdb/parsec/engine/store"
)

// TestStorageOnAGroup: engine/store's document layer, run on a group
// through Replicated instead of a Badger of its own, keeps every
// invariant the engine relies on (engine/storage's storagetest):
// atomic updates, read-your-writes, one writer per document, consistent
// views, snapshots, transactions, durability across a restart.
func TestStorageOnAGroup(t *testing.T) {
	addrs := map[string]string{}
	storagetest.Run(t, func(t *testing.T, dir string) (storage.Storage, func() error) {
		tn, r := oneReplica(t, addrs, dir)
		s, err := store.Open(store.Options{KV: r, SyncInterval: -1})
		if err != nil {
			tn.stop()
			t.Fatal(err)
		}
		return storage.Local(s), func() error {
			err := s.Close()
			tn.stop()
			return err
		}
	})
}
