package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/lni/dragonboat/v4"
)

// Moving a replica of a group from one node to another (doc.go, "Moving
// a replica"): AddNonVoting, CommitIndex and WaitApplied, AddReplica
// (promotion), RemoveReplica, DropGroup.

// ErrReplicaIDUsed is a membership change naming a replica ID the group
// has removed (dragonboat never lets one back) or gives another address.
var ErrReplicaIDUsed = errors.New("cluster: replica ID already used in the group")

// Membership is a group's membership: voters, non-voting members (replica
// ID to Raft address) and every replica ID it ever removed.
type Membership struct {
	Voters    map[uint64]string
	NonVoting map[uint64]string
	Removed   map[uint64]bool
}

// NewReplicaID is a replica ID the group has never used: one more than
// the largest it names, members and removed ones alike. A replica moved
// to a node that held one of the group before needs such a new ID.
func (m Membership) NewReplicaID() uint64 {
	var max uint64
	for _, ids := range []map[uint64]string{m.Voters, m.NonVoting} {
		for id := range ids {
			max = maxUint64(max, id)
		}
	}
	for id := range m.Removed {
		max = maxUint64(max, id)
	}
	return max + 1
}

func maxUint64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// Membership reads the group's membership linearizably through this
// node's replica (a member's: a removed replica cannot read it).
func (n *Node) Membership(ctx context.Context, shardID uint64) (Membership, error) {
	if _, err := n.group(shardID); err != nil {
		return Membership{}, err
	}
	m, err := n.readMembership(ctx, shardID)
	if err != nil {
		return Membership{}, fmt.Errorf("cluster: membership of group %d: %w", shardID, err)
	}
	out := Membership{Voters: map[uint64]string{}, NonVoting: map[uint64]string{}, Removed: map[uint64]bool{}}
	for id, addr := range m.Nodes {
		out.Voters[id] = addr
	}
	for id, addr := range m.NonVotings {
		out.NonVoting[id] = addr
	}
	for id := range m.Removed {
		out.Removed[id] = true
	}
	return out, nil
}

// readMembership is SyncGetShardMembership tried again while a request
// is lost, until ctx (or the default timeout) ends.
func (n *Node) readMembership(ctx context.Context, shardID uint64) (*dragonboat.Membership, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, membershipAttempt)
		m, err := n.nh.SyncGetShardMembership(attempt, shardID)
		cancelAttempt()
		if err == nil {
			return m, nil
		}
		if !retryable(err) && !errors.Is(err, dragonboat.ErrTimeout) {
			return nil, err
		}
		if werr := pause(ctx); werr != nil {
			return nil, fmt.Errorf("%w (last: %v)", werr, err)
		}
	}
}

// AddNonVoting adds a non-voting member to a group: it receives the log
// (or a snapshot) like a voter but neither votes nor counts toward a
// quorum, so a group can take it in while it catches up without its
// quorum growing. The new replica then starts on its node with
// GroupConfig.Join and NonVoting; AddReplica with the same ID and address
// promotes it. Like AddReplica it returns once the membership shows it.
func (n *Node) AddNonVoting(ctx context.Context, shardID, replicaID uint64, addr string) error {
	return n.changeMembership(ctx, shardID, fmt.Sprintf("add non-voting replica %d to group %d", replicaID, shardID),
		func(m *dragonboat.Membership) (bool, error) {
			if err := usable(m, replicaID, addr); err != nil {
				return false, err
			}
			if _, ok := m.Nodes[replicaID]; ok {
				return false, fmt.Errorf("%w: replica %d is a voter", ErrReplicaIDUsed, replicaID)
			}
			return m.NonVotings[replicaID] == addr, nil
		},
		func(ctx context.Context) error {
			return n.nh.SyncRequestAddNonVoting(ctx, shardID, replicaID, addr, 0)
		})
}

// usable refuses a replica ID the group removed or knows at another
// address: dragonboat would reject the change every time.
func usable(m *dragonboat.Membership, replicaID uint64, addr string) error {
	if _, ok := m.Removed[replicaID]; ok {
		return fmt.Errorf("%w: replica %d was removed from the group", ErrReplicaIDUsed, replicaID)
	}
	for _, ids := range []map[uint64]string{m.Nodes, m.NonVotings, m.Witnesses} {
		if a, ok := ids[replicaID]; ok && a != addr {
			return fmt.Errorf("%w: replica %d is at %s", ErrReplicaIDUsed, replicaID, a)
		}
	}
	return nil
}

// CommitIndex is an index the group has committed, at least its commit
// index when the call began: a ReadIndex round through this node's
// replica, which answers once it has applied that far. Asked of a
// caught-up member (the mover's), it is the target a new replica must
// apply (WaitApplied) to have caught up.
func (n *Node) CommitIndex(ctx context.Context, shardID uint64) (uint64, error) {
	v, err := n.Read(ctx, shardID, AppliedQuery{}, Linearizable)
	if err != nil {
		return 0, err
	}
	return v.(uint64), nil
}

// WaitApplied returns once this node's replica of the group has applied
// index (into Badger: Applied), or fails when ctx ends. dragonboat does
// not tell a leader's node what a remote replica applied, so a mover
// learns that a new replica caught up from the replica's own node.
func (n *Node) WaitApplied(ctx context.Context, shardID, index uint64) error {
	if _, err := n.group(shardID); err != nil {
		return err
	}
	for n.Applied(shardID) < index {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: group %d applied %d, not %d: %w", shardID, n.Applied(shardID), index, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// dropTarget is what a drop deletes: the group's keys, judged as the
// group judges them.
type dropTarget struct {
	spans   []Span // sorted
	owns    func(key, value []byte) bool
	observe []byte
	onApply func(key, value []byte)
}

// DropGroup deletes this node's replica of a group that no longer has it
// as a member (RemoveReplica returned): it stops the replica, removes
// dragonboat's data of it, and deletes from the node's Badger every key
// of the group's spans that the group owns (by its Owns, so groups
// sharing spans keep theirs) and its metadata keys.
//
// It first makes r/d<shardID> durable; a crash after that leaves the
// mark, and the drop is finished by StartGroup of the group (which then
// starts a new replica, or refuses the dropped one as dragonboat does) or
// by FinishDrop (DroppingGroups lists them). Keys are deleted in bounded
// batches, the group's Observe keys (which its ownership depends on)
// last, with the metadata and the mark, in one commit.
func (n *Node) DropGroup(ctx context.Context, shardID uint64) error {
	rep, err := n.group(shardID)
	if err != nil {
		return err
	}
	if err := n.stillMember(ctx, shardID, rep.replicaID); err != nil {
		return err
	}
	if err := n.beginDrop(shardID, rep.replicaID); err != nil {
		return err
	}
	err = n.finishDrop(shardID, dropTarget{spans: rep.spans, owns: rep.owns, observe: rep.observe})
	if err != nil {
		return err
	}
	n.mu.Lock()
	delete(n.groups, shardID)
	n.mu.Unlock()
	return nil
}

// beginDrop makes the drop mark durable and stops the replica.
func (n *Node) beginDrop(shardID, replicaID uint64) error {
	if err := n.db.Update(func(txn *badger.Txn) error {
		return txn.Set(droppingKey(shardID), binary.BigEndian.AppendUint64(nil, replicaID))
	}); err != nil {
		return fmt.Errorf("cluster: drop group %d: %w", shardID, err)
	}
	if err := n.sync(); err != nil {
		return fmt.Errorf("cluster: drop group %d: %w", shardID, err)
	}
	// A replica that applied its own removal has stopped already.
	if err := n.nh.StopReplica(shardID, replicaID); err != nil && !errors.Is(err, dragonboat.ErrShardNotFound) {
		return fmt.Errorf("cluster: drop group %d: stop replica %d: %w", shardID, replicaID, err)
	}
	return nil
}

// stillMember refuses to drop a replica the group still counts, when
// this node's replica can tell: a removed replica often never learns it
// was removed and cannot read the membership, so when no answer comes
// within a short attempt the caller's word stands.
func (n *Node) stillMember(ctx context.Context, shardID, replicaID uint64) error {
	attempt, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m, err := n.nh.SyncGetShardMembership(attempt, shardID)
	if err != nil {
		return nil
	}
	_, voter := m.Nodes[replicaID]
	_, nonVoting := m.NonVotings[replicaID]
	if voter || nonVoting {
		return fmt.Errorf("cluster: drop group %d: replica %d is still a member (RemoveReplica first)", shardID, replicaID)
	}
	return nil
}

// DroppingGroups are the groups whose DropGroup a crash interrupted on
// this node (r/d marks): FinishDrop, or StartGroup of the group, ends
// each.
func (n *Node) DroppingGroups() ([]uint64, error) {
	var ids []uint64
	prefix := droppingKey(0)[:len(metaPrefix)+1]
	err := n.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); len(k) == len(prefix)+8 {
				ids = append(ids, binary.BigEndian.Uint64(k[len(prefix):]))
			}
		}
		return nil
	})
	return ids, err
}

// FinishDrop finishes the drop of a group this node does not run, which
// a crash interrupted, with g's Spans, Owns, Observe and OnApply (the
// configuration the replica would start with) judging its keys. It does
// nothing when no drop of the group is pending.
func (n *Node) FinishDrop(ctx context.Context, g GroupConfig) error {
	spans, err := checkSpans(g.Spans)
	if err != nil {
		return fmt.Errorf("cluster: group %d: %w", g.ShardID, err)
	}
	if n.Started(g.ShardID) {
		return fmt.Errorf("cluster: group %d runs on this node: DropGroup drops it", g.ShardID)
	}
	if found, _, err := metaUint64(n.db, droppingKey(g.ShardID)); err != nil || !found {
		return err
	}
	return n.finishDrop(g.ShardID, dropTarget{spans: spans, owns: g.Owns, observe: g.Observe, onApply: g.OnApply})
}

// finishDrop does what follows the durable r/d mark: dragonboat's data
// of the replica named in it, then the group's keys, then the metadata
// and the mark. Every step may be done again.
func (n *Node) finishDrop(shardID uint64, t dropTarget) error {
	_, replicaID, err := metaUint64(n.db, droppingKey(shardID))
	if err != nil {
		return fmt.Errorf("cluster: drop group %d: %w", shardID, err)
	}
	if err := n.removeRaftData(shardID, replicaID); err != nil {
		return fmt.Errorf("cluster: drop group %d: remove replica %d's Raft data: %w", shardID, replicaID, err)
	}
	if t.onApply != nil && len(t.observe) > 0 {
		// Ownership that depends on observed keys (a split's range) is
		// judged with them as Badger holds them: a restarted node's
		// configuration knows only what its replica was created with.
		m := &StateMachine{db: n.db, sync: n.sync, observe: t.observe, onApply: t.onApply}
		if err := m.loadObserved(); err != nil {
			return fmt.Errorf("cluster: drop group %d: %w", shardID, err)
		}
	}
	if err := deleteOwned(n.db, t); err != nil {
		return fmt.Errorf("cluster: drop group %d: %w", shardID, err)
	}
	if err := n.db.Update(func(txn *badger.Txn) error {
		if len(t.observe) > 0 {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: t.observe})
			var keys [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				k := it.Item().KeyCopy(nil)
				v, err := it.Item().ValueCopy(nil)
				if err != nil {
					it.Close()
					return err
				}
				if inSpans(t.spans, k) && (t.owns == nil || t.owns(k, v)) {
					keys = append(keys, k)
				}
			}
			it.Close()
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
		}
		for _, k := range [][]byte{appliedKey(shardID), restoringKey(shardID), nonVotingKey(shardID), droppingKey(shardID)} {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("cluster: drop group %d: %w", shardID, err)
	}
	return nil
}

// removeRaftData removes dragonboat's log, state and snapshots of a
// stopped replica, once dragonboat has unloaded it.
func (n *Node) removeRaftData(shardID, replicaID uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := n.nh.SyncRemoveData(ctx, shardID, replicaID)
		if !errors.Is(err, dragonboat.ErrShardNotStopped) {
			return err
		}
		if werr := pause(ctx); werr != nil {
			return fmt.Errorf("%w (last: %v)", werr, err)
		}
	}
}

// dropChunk bounds the keys one read transaction of a drop visits, and so
// the deletes one write batch holds.
const dropChunk = 4096

// deleteOwned deletes every key of t's spans that t owns, but those under
// its Observe prefix, in batches of at most dropChunk keys visited.
func deleteOwned(db *badger.DB, t dropTarget) error {
	for _, s := range t.spans {
		for from := s.Start; from != nil; {
			var keys [][]byte
			var next []byte
			err := db.View(func(txn *badger.Txn) error {
				it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
				defer it.Close()
				visited := 0
				for it.Seek(from); it.Valid() && bytes.Compare(it.Item().Key(), s.End) < 0; it.Next() {
					item := it.Item()
					if visited == dropChunk {
						next = item.KeyCopy(nil)
						return nil
					}
					visited++
					if len(t.observe) > 0 && bytes.HasPrefix(item.Key(), t.observe) {
						continue
					}
					if owned, err := ownedItem(t.owns, item); err != nil {
						return err
					} else if !owned {
						continue
					}
					keys = append(keys, item.KeyCopy(nil))
				}
				return nil
			})
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				wb := db.NewWriteBatch()
				for _, k := range keys {
					if err := wb.Delete(k); err != nil {
						wb.Cancel()
						return err
					}
				}
				if err := wb.Flush(); err != nil {
					return err
				}
			}
			from = next
		}
	}
	return nil
}
