package cluster

import (
	"sync/atomic"
	"testing"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"
)

// syncCountingFS counts the fsyncs of the files it opens.
type syncCountingFS struct {
	config.IFS
	syncs *atomic.Int64
}

func (f syncCountingFS) Create(name string) (vfs.File, error) {
	file, err := f.IFS.Create(name)
	return countingFile{file, f.syncs}, err
}

func (f syncCountingFS) OpenForAppend(name string) (vfs.File, error) {
	file, err := f.IFS.OpenForAppend(name)
	return countingFile{file, f.syncs}, err
}

func (f syncCountingFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	file, err := f.IFS.ReuseForWrite(oldname, newname)
	return countingFile{file, f.syncs}, err
}

type countingFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f countingFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

// followerUpdates are what dragonboat hands a follower's log store for
// n entries arriving one by one: the entry (its State empty: unchanged),
// then the commit index moving, then an update carrying only messages.
func followerUpdates(n int) [][]pb.Update {
	var out [][]pb.Update
	for i := 1; i <= n; i++ {
		e := pb.Entry{Index: uint64(i), Term: 2, Cmd: []byte("an entry's bytes")}
		out = append(out,
			[]pb.Update{{ShardID: 2, ReplicaID: 2, EntriesToSave: []pb.Entry{e}}},
			[]pb.Update{{ShardID: 2, ReplicaID: 2, State: pb.State{Term: 2, Vote: 1, Commit: uint64(i)}}},
			[]pb.Update{{ShardID: 2, ReplicaID: 2}})
	}
	return out
}

// A follower's log store fsyncs once per update that saves entries, and
// reads back the last state after a restart.
func TestLogStoreSyncsEntriesOnly(t *testing.T) {
	run := func(t *testing.T, factory config.LogDBFactory) int64 {
		var syncs atomic.Int64
		dir := t.TempDir()
		cfg := config.NodeHostConfig{NodeHostDir: dir, WALDir: dir, RTTMillisecond: 10, RaftAddress: "127.0.0.1:1",
			Expert: config.GetDefaultExpertConfig()}
		cfg.Expert.LogDB = config.GetTinyMemLogDBConfig()
		cfg.Expert.LogDB.KVWriteBufferSize = 1 << 16
		cfg.Expert.FS = syncCountingFS{vfs.Default, &syncs}
		open := func() raftio.ILogDB {
			db, err := factory.Create(cfg, nil, []string{dir}, []string{dir})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
		db := open()
		// The replica's state before the entries: term 2, voted for 1.
		if err := db.SaveRaftState([]pb.Update{{ShardID: 2, ReplicaID: 2, State: pb.State{Term: 2, Vote: 1}}}, 2); err != nil {
			t.Fatal(err)
		}
		before := syncs.Load()
		for _, ud := range followerUpdates(50) {
			if err := db.SaveRaftState(ud, 2); err != nil {
				t.Fatal(err)
			}
		}
		n := syncs.Load() - before
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = open()
		defer db.Close()
		rs, err := db.ReadRaftState(2, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := (pb.State{Term: 2, Vote: 1, Commit: 50}); rs.State != want || rs.EntryCount != 50 {
			t.Errorf("after a restart: state %+v with %d entries, want %+v with 50", rs.State, rs.EntryCount, want)
		}
		return n
	}
	got := run(t, tanFactory{})
	if got != 50 {
		t.Errorf("50 entries saved with %d fsyncs, want 50", got)
	}
	t.Logf("fsyncs for 50 entries: %d; tan alone: %d", got, run(t, tan.Factory))
}
