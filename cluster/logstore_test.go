package cluster

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
)

// logStores lists the kinds of Raft log store under a node's directory:
// "tan" for tan's tandb, "pebble" for pebble's logdb-N shards.
func logStores(t *testing.T, dir string) map[string]bool {
	t.Helper()
	kinds := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(dir, "raft"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch name := d.Name(); {
		case d.IsDir() && name == "tandb":
			kinds["tan"] = true
		case d.IsDir() && len(name) > 6 && name[:6] == "logdb-":
			kinds["pebble"] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// TestLogStoreKind: a new node keeps its Raft logs in tan; a node whose
// directory has them in pebble (dragonboat's default, which earlier
// versions used) opens it as pebble, keeps working and its data, and
// never mixes the two.
func TestLogStoreKind(t *testing.T) {
	fresh := &testNode{t: t, addr: freeAddr(t, "127.0.0.1"), dir: t.TempDir()}
	fresh.start()
	fresh.stop()
	if got := logStores(t, fresh.dir); !got["tan"] || got["pebble"] {
		t.Fatalf("a new node's log stores: %v, want tan only", got)
	}

	old := &testNode{t: t, addr: freeAddr(t, "127.0.0.1"), dir: t.TempDir()}
	dir := filepath.Join(old.dir, "raft")
	expert := config.GetDefaultExpertConfig()
	expert.LogDB = config.GetTinyMemLogDBConfig()
	nh, err := dragonboat.NewNodeHost(config.NodeHostConfig{
		DeploymentID: 1, NodeHostDir: dir, WALDir: dir, RTTMillisecond: 10,
		RaftAddress: old.addr, Expert: expert,
	})
	if err != nil {
		t.Fatal(err)
	}
	nh.Close()
	if got := logStores(t, old.dir); !got["pebble"] || got["tan"] {
		t.Fatalf("dragonboat's default made %v, want pebble only", got)
	}

	// The node runs on the pebble logs, twice (its entries are replayed
	// from them at the restart).
	for round := range 2 {
		old.start()
		if err := old.node.StartGroup(GroupConfig{ShardID: 1, ReplicaID: 1, Members: map[uint64]string{1: old.addr}, Spans: allSpans}); err != nil {
			old.stop()
			t.Fatal(err)
		}
		if round == 0 {
			propose(t, old.node, 1, writeBatch("p/", 1))
		}
		if got := counter(t, old.node, 1, "p/count"); len(got) != 2 || got[0] != 1 || got[1] != 1 {
			old.stop()
			t.Fatalf("round %d: counter %v, want [1 1]", round, got)
		}
		if err := old.node.Barrier(context.Background(), 1); err != nil {
			old.stop()
			t.Fatal(err)
		}
		old.stop()
	}
	if got := logStores(t, old.dir); !got["pebble"] || got["tan"] {
		t.Fatalf("after running on pebble logs: %v, want pebble only", got)
	}
}
