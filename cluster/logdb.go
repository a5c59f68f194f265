package cluster

import (
	"sync"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// tanFactory makes tan log stores that are told the Raft state of every
// update they save.
//
// dragonboat leaves an update's State empty when the replica's term, vote
// and commit index have not changed since its last update. tan compares
// each update's State with the last one it wrote to decide what to write
// and whether to fsync, and takes an empty State for a change to term 0:
// it writes a record, fsyncs, and remembers the zero state, so that the
// next update carrying the real state fsyncs again. Under inserts a
// follower fsynced its log about twice per entry where once is needed
// (an update with the entry, then one with the commit index, then one with
// only messages, each synced). tan reads the state back on restart from
// the last record whose State is not empty, so the extra records cost
// time, not safety.
//
// The store handed out fills an empty State with the replica's last one
// (the state dragonboat's empty State stands for) before tan sees it: an
// update then fsyncs only when it saves entries or a snapshot or changes
// the term or the vote, as tan means it to. (tan's SaveSnapshots writes
// an update of its own with an empty State: after a snapshot is saved the
// next update fsyncs once more.)
//
// With a lazy syncer (logsync.go) the store also fsyncs, before it
// returns, the updates that must be on disk then, and after every other
// change it makes (snapshots, compactions, removals) what they wrote.
type tanFactory struct{ syncer *logSyncer }

var _ config.LogDBFactory = tanFactory{}

func (f tanFactory) Create(cfg config.NodeHostConfig, cb config.LogDBCallback, dirs, lowLatencyDirs []string) (raftio.ILogDB, error) {
	db, err := tan.Factory.Create(cfg, cb, dirs, lowLatencyDirs)
	if err != nil {
		return nil, err
	}
	return &stateLogDB{ILogDB: db, syncer: f.syncer, states: map[raftio.NodeInfo]pb.State{}}, nil
}

// Name is tan's: dragonboat records the log store's kind in the node's
// directory and refuses to open it as another.
func (tanFactory) Name() string { return tan.Factory.Name() }

// stateLogDB is a log store that fills updates' empty States.
type stateLogDB struct {
	raftio.ILogDB
	syncer *logSyncer // nil or not lazy: tan's own fsyncs are real

	mu     sync.Mutex
	states map[raftio.NodeInfo]pb.State // each replica's last non-empty State
}

// withStates returns updates with every empty State replaced by the
// replica's last one, copying the slice only when one is; it records the
// non-empty ones. must is whether one of the updates has to be on disk
// before the store returns (mustSync).
func (l *stateLogDB) withStates(updates []pb.Update) (out []pb.Update, must bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out, copied := updates, false
	for i := range updates {
		ni := raftio.NodeInfo{ShardID: updates[i].ShardID, ReplicaID: updates[i].ReplicaID}
		st, ok := l.states[ni]
		must = must || mustSync(&updates[i], st, ok)
		if !pb.IsEmptyState(updates[i].State) {
			l.states[ni] = updates[i].State
			continue
		}
		if !ok {
			continue // nothing known yet: as tan would have it
		}
		if !copied {
			out, copied = append([]pb.Update(nil), updates...), true // dragonboat goes on using its own
		}
		out[i].State = st
	}
	return out, must
}

func (l *stateLogDB) SaveRaftState(updates []pb.Update, shardID uint64) error {
	out, must := l.withStates(updates)
	if err := l.ILogDB.SaveRaftState(out, shardID); err != nil {
		return err
	}
	if must {
		return l.synced(nil)
	}
	return nil
}

// synced is err, after an fsync of the log files a lazy syncer left
// dirty.
func (l *stateLogDB) synced(err error) error {
	if err != nil || !l.syncer.lazy() {
		return err
	}
	return l.syncer.syncDirty()
}

func (l *stateLogDB) SaveBootstrapInfo(shardID, replicaID uint64, bs pb.Bootstrap) error {
	return l.synced(l.ILogDB.SaveBootstrapInfo(shardID, replicaID, bs))
}

func (l *stateLogDB) SaveSnapshots(updates []pb.Update) error {
	return l.synced(l.ILogDB.SaveSnapshots(updates))
}

func (l *stateLogDB) RemoveEntriesTo(shardID, replicaID, index uint64) error {
	return l.synced(l.ILogDB.RemoveEntriesTo(shardID, replicaID, index))
}

func (l *stateLogDB) ImportSnapshot(snapshot pb.Snapshot, replicaID uint64) error {
	return l.synced(l.ILogDB.ImportSnapshot(snapshot, replicaID))
}

// ReadRaftState is where a restarted replica's state comes from: it is the
// one an empty State stands for until the replica saves another.
func (l *stateLogDB) ReadRaftState(shardID, replicaID, lastIndex uint64) (raftio.RaftState, error) {
	rs, err := l.ILogDB.ReadRaftState(shardID, replicaID, lastIndex)
	ni := raftio.NodeInfo{ShardID: shardID, ReplicaID: replicaID}
	l.mu.Lock()
	if err == nil && !pb.IsEmptyState(rs.State) {
		l.states[ni] = rs.State
	} else {
		delete(l.states, ni) // a replica starting afresh: no state of an earlier one
	}
	l.mu.Unlock()
	return rs, err
}

func (l *stateLogDB) RemoveNodeData(shardID, replicaID uint64) error {
	l.mu.Lock()
	delete(l.states, raftio.NodeInfo{ShardID: shardID, ReplicaID: replicaID})
	l.mu.Unlock()
	return l.synced(l.ILogDB.RemoveNodeData(shardID, replicaID))
}
