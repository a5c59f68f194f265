package cluster

import (
	"sync/atomic"
	"testing"
	"time"

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

// logStoreOpener opens factory's log store on a directory of the test's,
// through fs, each time it is called.
func logStoreOpener(t *testing.T, factory config.LogDBFactory, fs config.IFS) func() raftio.ILogDB {
	dir := t.TempDir()
	cfg := config.NodeHostConfig{NodeHostDir: dir, WALDir: dir, RTTMillisecond: 10, RaftAddress: "127.0.0.1:1",
		Expert: config.GetDefaultExpertConfig()}
	cfg.Expert.LogDB = config.GetTinyMemLogDBConfig()
	cfg.Expert.LogDB.KVWriteBufferSize = 1 << 16
	cfg.Expert.FS = fs
	return func() raftio.ILogDB {
		db, err := factory.Create(cfg, nil, []string{dir}, []string{dir})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
}

// checkReopened opens the log store again and checks the state and the
// number of entries it reads back for replica 2 of group 2.
func checkReopened(t *testing.T, open func() raftio.ILogDB, want pb.State, entries uint64) {
	t.Helper()
	db := open()
	defer db.Close()
	rs, err := db.ReadRaftState(2, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rs.State != want || rs.EntryCount != entries {
		t.Errorf("after a restart: state %+v with %d entries, want %+v with %d", rs.State, rs.EntryCount, want, entries)
	}
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
		open := logStoreOpener(t, factory, syncCountingFS{vfs.Default, &syncs})
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
		checkReopened(t, open, pb.State{Term: 2, Vote: 1, Commit: 50}, 50)
		return n
	}
	got := run(t, tanFactory{})
	if got != 50 {
		t.Errorf("50 entries saved with %d fsyncs, want 50", got)
	}
	t.Logf("fsyncs for 50 entries: %d; tan alone: %d", got, run(t, tan.Factory))
}

// recordingLogDB keeps what it is asked to save; ReadRaftState answers
// read, readErr.
type recordingLogDB struct {
	raftio.ILogDB
	saved   []pb.Update
	read    raftio.RaftState
	readErr error
}

func (r *recordingLogDB) SaveRaftState(updates []pb.Update, _ uint64) error {
	r.saved = append(r.saved, updates...)
	return nil
}

func (r *recordingLogDB) ReadRaftState(uint64, uint64, uint64) (raftio.RaftState, error) {
	return r.read, r.readErr
}

func (r *recordingLogDB) RemoveNodeData(uint64, uint64) error { return nil }

// The state an empty State is given is the replica's own, and never one
// of a replica whose data was removed or that starts afresh; dragonboat's
// own updates are left as they were.
func TestLogStoreFillsOnlyItsReplicasState(t *testing.T) {
	inner := &recordingLogDB{}
	l := &stateLogDB{ILogDB: inner, states: map[raftio.NodeInfo]pb.State{}}
	st := pb.State{Term: 3, Vote: 1, Commit: 7}
	save := func(u pb.Update) pb.State {
		t.Helper()
		ud := []pb.Update{u}
		if err := l.SaveRaftState(ud, u.ShardID); err != nil {
			t.Fatal(err)
		}
		return inner.saved[len(inner.saved)-1].State
	}
	entries := []pb.Entry{{Index: 8, Term: 3}}
	if got := save(pb.Update{ShardID: 2, ReplicaID: 2, State: st}); got != st {
		t.Fatalf("a state saved as %+v", got)
	}
	ud := []pb.Update{{ShardID: 2, ReplicaID: 2, EntriesToSave: entries}}
	if err := l.SaveRaftState(ud, 2); err != nil {
		t.Fatal(err)
	}
	if got := inner.saved[len(inner.saved)-1].State; got != st {
		t.Errorf("an empty State saved as %+v, want the replica's %+v", got, st)
	}
	if !pb.IsEmptyState(ud[0].State) {
		t.Errorf("dragonboat's update was changed: %+v", ud[0].State)
	}
	if got := save(pb.Update{ShardID: 3, ReplicaID: 2, EntriesToSave: entries}); !pb.IsEmptyState(got) {
		t.Errorf("another group's empty State saved as %+v", got)
	}
	if err := l.RemoveNodeData(2, 2); err != nil {
		t.Fatal(err)
	}
	if got := save(pb.Update{ShardID: 2, ReplicaID: 2, EntriesToSave: entries}); !pb.IsEmptyState(got) {
		t.Errorf("after its data was removed, an empty State saved as %+v", got)
	}
	// A restart reads the state back; a replica with no saved log starts
	// with none.
	inner.read = raftio.RaftState{State: st}
	if _, err := l.ReadRaftState(2, 2, 0); err != nil {
		t.Fatal(err)
	}
	if got := save(pb.Update{ShardID: 2, ReplicaID: 2}); got != st {
		t.Errorf("after a restart, an empty State saved as %+v, want %+v", got, st)
	}
	inner.read, inner.readErr = raftio.RaftState{}, raftio.ErrNoSavedLog
	if _, err := l.ReadRaftState(2, 2, 0); err != raftio.ErrNoSavedLog {
		t.Fatal(err)
	}
	if got := save(pb.Update{ShardID: 2, ReplicaID: 2}); !pb.IsEmptyState(got) {
		t.Errorf("a replica starting afresh: an empty State saved as %+v", got)
	}
}

// With deferred fsyncs the log store fsyncs no update of plain entries
// itself, but does before it returns for a durable entry, a membership
// change or a new term; what it deferred is on disk after the syncer's
// pass and after a restart.
func TestLazyLogStoreSyncsWhatMustBeDurable(t *testing.T) {
	var syncs atomic.Int64
	logs := newLogSyncer(time.Hour, nil) // the loop never runs: every fsync below is forced
	defer logs.close()
	open := logStoreOpener(t, tanFactory{syncer: logs}, logFS{IFS: syncCountingFS{vfs.Default, &syncs}, s: logs})
	db := open()
	save := func(what string, u pb.Update, wantSync bool) {
		t.Helper()
		before := syncs.Load()
		if err := db.SaveRaftState([]pb.Update{u}, 2); err != nil {
			t.Fatal(err)
		}
		if synced := syncs.Load() > before; synced != wantSync {
			t.Errorf("%s: fsynced %v, want %v", what, synced, wantSync)
		}
	}
	save("the first state", pb.Update{ShardID: 2, ReplicaID: 2, State: pb.State{Term: 2, Vote: 1}}, true)
	for _, ud := range followerUpdates(50) {
		save("an entry or commit index", ud[0], false)
	}
	before := syncs.Load()
	if err := logs.syncDirty(); err != nil || syncs.Load() != before+1 {
		t.Fatalf("the syncer's pass: %d fsyncs, %v; want 1", syncs.Load()-before, err)
	}
	if err := logs.syncDirty(); err != nil || syncs.Load() != before+1 {
		t.Fatalf("a pass over clean files fsynced (%d), %v", syncs.Load()-before-1, err)
	}
	entry := func(i uint64, typ pb.EntryType, cmd []byte) pb.Update {
		return pb.Update{ShardID: 2, ReplicaID: 2, EntriesToSave: []pb.Entry{{Index: i, Term: 2, Type: typ, Cmd: cmd}}}
	}
	// As dragonboat encodes a proposal: a header byte, then the command.
	encoded := func(b *Batch) []byte { return append([]byte{0}, b.Encoded()...) }
	save("an entry", entry(51, pb.EncodedEntry, encoded(NewBatch())), false)
	save("a durable barrier", entry(52, pb.EncodedEntry, encoded(DurableBarrier())), true)
	save("a leader's empty entry", entry(53, pb.ApplicationEntry, nil), false)
	save("a compressed entry", entry(54, pb.EncodedEntry, []byte{1 << 1, 7, 7}), true)
	save("a membership change", entry(55, pb.ConfigChangeEntry, nil), true)
	save("a commit index", pb.Update{ShardID: 2, ReplicaID: 2, State: pb.State{Term: 2, Vote: 1, Commit: 54}}, false)
	save("an entry", entry(56, pb.EncodedEntry, encoded(NewBatch())), false)
	save("a new term", pb.Update{ShardID: 2, ReplicaID: 2, State: pb.State{Term: 3, Vote: 2, Commit: 54}}, true)
	save("an entry", entry(57, pb.EncodedEntry, encoded(NewBatch())), false)
	save("a vote", pb.Update{ShardID: 2, ReplicaID: 2, State: pb.State{Term: 3, Vote: 3, Commit: 54}}, true)
	save("an entry", entry(58, pb.EncodedEntry, encoded(NewBatch())), false)
	before = syncs.Load()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if syncs.Load() == before {
		t.Error("closing the log store left an entry unsynced")
	}
	checkReopened(t, open, pb.State{Term: 3, Vote: 3, Commit: 54}, 58)
}
