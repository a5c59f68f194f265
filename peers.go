package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parsecdb/parsec/cluster"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/wire"
)

// A node reaches the partition groups it holds no replica of through a
// node that holds one: the writer's routed store reads their keys and
// proposes their commits with peer requests (cluster.Far), sent on the
// other node's client port as the command _parsecPeer. A node answers
// them only from the hosts of the cluster's members (its Raft peers),
// as its Raft transport does.
//
//	{_parsecPeer: "get", group, key}            -> {ok: 1, found, value}
//	{_parsecPeer: "scan", group, start, end, limit, reverse}
//	                                            -> {ok: 1, pairs: [key, value, ...], more}
//	{_parsecPeer: "propose", group, batch}      -> {ok: 1}
//	{_parsecPeer: "member", group, kind, replica, addr} -> {ok: 1}
//	                                    (kind "add", "nonVoting" or "remove")
//	{_parsecPeer: "membership", group}   -> {ok: 1, voters, nonVoting, removed}
//	{_parsecPeer: "commitIndex", group}  -> {ok: 1, index}
//	{_parsecPeer: "waitApplied", group, index} -> {ok: 1}  (asked of one node)
//	{_parsecPeer: "compact", group}      -> {ok: 1}  (snapshot, compact the log)
//	{_parsecPeer: "leader", group}       -> {ok: 1, leader}  (a replica ID, 0: none)
//	{_parsecPeer: "transfer", group, replica} -> {ok: 1}
//	{_parsecPeer: "copyProgress", group} -> {ok: 1, restoring, restores,
//	                                    snapshotBytes, entryBytes}  (asked of one node)
//
// Reads are linearizable (ReadIndex on the holder). A failed request
// answers ok: 0 with peerError: "conflict", "rejected" (errmsg the
// reason), "unknown" (the proposal's fate is unknown), "notHeld" (the
// node runs no replica of the group: the requester tries another) or
// "failed".

const peerCommand = "_parsecPeer"

// isPeerRequest is whether body is a peer request.
func isPeerRequest(body []byte) bool {
	el, err := bson.Raw(body).IndexErr(0)
	return err == nil && el.Key() == peerCommand
}

// servePeer answers a peer request from remote.
func (h *clusterHandler) servePeer(ctx context.Context, remote net.Addr, body []byte) []byte {
	fail := func(kind, msg string) []byte {
		b, _ := bson.Marshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: msg},
			{Key: "code", Value: int32(8000)}, {Key: "codeName", Value: "ParsecPeerError"}, {Key: "peerError", Value: kind}})
		return b
	}
	if !h.isMemberHost(remote) {
		return fail("failed", fmt.Sprintf("%s is not a member of this cluster: peer requests come only from its nodes' hosts", remote))
	}
	raw := bson.Raw(body)
	op, _ := raw.Lookup(peerCommand).StringValueOK()
	group, ok := raw.Lookup("group").Int64OK()
	if !ok {
		return fail("failed", "peer request without a group")
	}
	if !h.node.Started(uint64(group)) {
		return fail("notHeld", fmt.Sprintf("this node runs no replica of group %d", group))
	}
	if ms, ok := raw.Lookup("timeoutMS").Int64OK(); ok && ms > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	bin := func(k string) []byte {
		_, b, _ := raw.Lookup(k).BinaryOK()
		return b
	}
	var reply bson.D
	switch op {
	case "get":
		v, found, err := h.node.Get(ctx, uint64(group), bin("key"), cluster.Linearizable)
		if err != nil {
			return fail("failed", err.Error())
		}
		reply = bson.D{{Key: "found", Value: found}, {Key: "value", Value: bson.Binary{Data: v}}}
	case "scan":
		limit, _ := raw.Lookup("limit").Int32OK()
		reverse, _ := raw.Lookup("reverse").BooleanOK()
		q := cluster.ScanQuery{Start: bin("start"), End: bin("end"), Limit: int(limit), Reverse: reverse}
		if _, _, ok := raw.Lookup("end").BinaryOK(); !ok {
			q.End = nil
		}
		v, err := h.node.Read(ctx, uint64(group), q, cluster.Linearizable)
		if err != nil {
			return fail("failed", err.Error())
		}
		r := v.(cluster.ScanResult)
		pairs := make(bson.A, 0, 2*len(r.Pairs))
		for _, p := range r.Pairs {
			pairs = append(pairs, bson.Binary{Data: p.Key}, bson.Binary{Data: p.Value})
		}
		reply = bson.D{{Key: "pairs", Value: pairs}, {Key: "more", Value: r.More}}
	case "propose":
		b, err := cluster.BatchFrom(bin("batch"))
		if err != nil {
			return fail("failed", err.Error())
		}
		err = h.node.Propose(ctx, uint64(group), b)
		var rejected *cluster.RejectedError
		switch {
		case err == nil:
		case errors.Is(err, cluster.ErrConflict):
			return fail("conflict", err.Error())
		case errors.As(err, &rejected):
			return fail("rejected", rejected.Reason)
		case errors.Is(err, cluster.ErrUnknownOutcome):
			return fail("unknown", err.Error())
		default:
			return fail("failed", err.Error())
		}
	case "member":
		replica, _ := raw.Lookup("replica").Int64OK()
		addr, _ := raw.Lookup("addr").StringValueOK()
		kind, _ := raw.Lookup("kind").StringValueOK()
		if own, _ := h.node.ReplicaID(uint64(group)); kind == "remove" && own == uint64(replica) {
			// A replica removed learns no more of its group's
			// membership: another member makes the change.
			return fail("notHeld", fmt.Sprintf("this node's replica %d of group %d is the one to remove", replica, group))
		}
		if err := localMemberChange(ctx, h.node, uint64(group), kind, uint64(replica), addr); err != nil {
			return fail("failed", err.Error())
		}
	case "membership":
		m, err := h.node.Membership(ctx, uint64(group))
		if err != nil {
			return fail("failed", err.Error())
		}
		ids := func(set map[uint64]string) bson.A {
			out := bson.A{}
			for id, addr := range set {
				out = append(out, bson.D{{Key: "id", Value: int64(id)}, {Key: "addr", Value: addr}})
			}
			return out
		}
		removed := bson.A{}
		for id := range m.Removed {
			removed = append(removed, int64(id))
		}
		reply = bson.D{{Key: "voters", Value: ids(m.Voters)}, {Key: "nonVoting", Value: ids(m.NonVoting)}, {Key: "removed", Value: removed}}
	case "commitIndex":
		i, err := h.node.CommitIndex(ctx, uint64(group))
		if err != nil {
			return fail("failed", err.Error())
		}
		reply = bson.D{{Key: "index", Value: int64(i)}}
	case "waitApplied":
		index, _ := raw.Lookup("index").Int64OK()
		if err := h.node.WaitApplied(ctx, uint64(group), uint64(index)); err != nil {
			return fail("failed", err.Error())
		}
	case "compact":
		if err := h.node.CompactGroup(ctx, uint64(group)); err != nil {
			return fail("failed", err.Error())
		}
	case "leader":
		leader, _, ok := h.node.LeaderTerm(uint64(group))
		if !ok {
			leader = 0
		}
		reply = bson.D{{Key: "leader", Value: int64(leader)}}
	case "transfer":
		replica, _ := raw.Lookup("replica").Int64OK()
		if err := h.node.TransferLeader(uint64(group), uint64(replica)); err != nil {
			return fail("failed", err.Error())
		}
	case "copyProgress":
		p := h.node.CopyProgress(uint64(group))
		reply = bson.D{{Key: "restoring", Value: p.Restoring}, {Key: "restores", Value: p.Restores},
			{Key: "snapshotBytes", Value: p.SnapshotBytes}, {Key: "entryBytes", Value: p.EntryBytes}}
	default:
		return fail("failed", fmt.Sprintf("unknown peer request %q", op))
	}
	out, err := bson.Marshal(append(reply, bson.E{Key: "ok", Value: 1.0}))
	if err != nil {
		return fail("failed", err.Error())
	}
	return out
}

// isMemberHost is whether addr is the host of one of the members.
func (h *clusterHandler) isMemberHost(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	for _, raft := range h.view.Load().raft {
		host, _, err := net.SplitHostPort(raft)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(host); ip != nil && ip.Equal(tcp.IP) {
			return true
		}
		if ips, err := net.LookupIP(host); err == nil && slices.ContainsFunc(ips, tcp.IP.Equal) {
			return true
		}
	}
	return false
}

// peers is this node's side of the peer requests it sends: a few open
// connections per node, and which node last answered for each group.
type peers struct {
	gs   *groups
	mu   sync.Mutex
	idle map[string][]*upstream
	last map[uint64]uint64 // group -> the node that last answered for it
}

var _ cluster.Far = (*peers)(nil)

func newPeers(gs *groups) *peers {
	return &peers{gs: gs, idle: map[string][]*upstream{}, last: map[uint64]uint64{}}
}

// maxIdlePeerConns bounds the idle connections kept to one node.
const maxIdlePeerConns = 8

// Held is whether this node runs a replica of group as one of its
// registered members: a replica a move is adding (not caught up yet) is
// not read from, and one a move removed is not either.
func (p *peers) Held(group uint64) bool { return p.gs.routesHere(group) }

func (p *peers) Under(prefix []byte) []uint64 { return p.gs.farUnder(prefix) }

func (p *peers) GroupOf(key, value []byte) (uint64, bool) { return p.gs.groupOf(key, value) }

func (p *peers) Get(ctx context.Context, group uint64, key []byte) ([]byte, bool, error) {
	r, err := p.call(ctx, group, bson.D{{Key: peerCommand, Value: "get"}, {Key: "group", Value: int64(group)},
		{Key: "key", Value: bson.Binary{Data: key}}}, true)
	if err != nil {
		return nil, false, err
	}
	found, _ := r.Lookup("found").BooleanOK()
	_, v, _ := r.Lookup("value").BinaryOK()
	return bytes.Clone(v), found, nil
}

func (p *peers) Scan(ctx context.Context, group uint64, q cluster.ScanQuery) (cluster.ScanResult, error) {
	cmd := bson.D{{Key: peerCommand, Value: "scan"}, {Key: "group", Value: int64(group)},
		{Key: "start", Value: bson.Binary{Data: q.Start}}, {Key: "limit", Value: int32(q.Limit)}, {Key: "reverse", Value: q.Reverse}}
	if q.End != nil {
		cmd = append(cmd, bson.E{Key: "end", Value: bson.Binary{Data: q.End}})
	}
	r, err := p.call(ctx, group, cmd, true)
	if err != nil {
		return cluster.ScanResult{}, err
	}
	var out cluster.ScanResult
	out.More, _ = r.Lookup("more").BooleanOK()
	vals, _ := r.Lookup("pairs").Array().Values()
	for i := 0; i+1 < len(vals); i += 2 {
		_, k, _ := vals[i].BinaryOK()
		_, v, _ := vals[i+1].BinaryOK()
		out.Pairs = append(out.Pairs, cluster.KV{Key: bytes.Clone(k), Value: bytes.Clone(v)})
	}
	return out, nil
}

func (p *peers) Propose(ctx context.Context, group uint64, b *cluster.Batch) error {
	_, err := p.call(ctx, group, bson.D{{Key: peerCommand, Value: "propose"}, {Key: "group", Value: int64(group)},
		{Key: "batch", Value: bson.Binary{Data: b.Encoded()}}}, false)
	return err
}

// Member changes group's membership (kind "add", "nonVoting" or
// "remove" replica), through a node holding a replica of the group; like
// Node.AddReplica it may be asked again.
func (p *peers) Member(ctx context.Context, group uint64, kind string, replica uint64, addr string) error {
	_, err := p.call(ctx, group, bson.D{{Key: peerCommand, Value: "member"}, {Key: "group", Value: int64(group)},
		{Key: "kind", Value: kind}, {Key: "replica", Value: int64(replica)}, {Key: "addr", Value: addr}}, true)
	return err
}

// Membership is group's membership, read through a member.
func (p *peers) Membership(ctx context.Context, group uint64) (cluster.Membership, error) {
	r, err := p.call(ctx, group, bson.D{{Key: peerCommand, Value: "membership"}, {Key: "group", Value: int64(group)}}, true)
	if err != nil {
		return cluster.Membership{}, err
	}
	m := cluster.Membership{Voters: map[uint64]string{}, NonVoting: map[uint64]string{}, Removed: map[uint64]bool{}}
	for key, set := range map[string]map[uint64]string{"voters": m.Voters, "nonVoting": m.NonVoting} {
		vals, _ := r.Lookup(key).Array().Values()
		for _, v := range vals {
			id, _ := v.Document().Lookup("id").AsInt64OK()
			addr, _ := v.Document().Lookup("addr").StringValueOK()
			set[uint64(id)] = addr
		}
	}
	vals, _ := r.Lookup("removed").Array().Values()
	for _, v := range vals {
		id, _ := v.AsInt64OK()
		m.Removed[uint64(id)] = true
	}
	return m, nil
}

// CommitIndex is group's commit index, through a member.
func (p *peers) CommitIndex(ctx context.Context, group uint64) (uint64, error) {
	r, err := p.call(ctx, group, bson.D{{Key: peerCommand, Value: "commitIndex"}, {Key: "group", Value: int64(group)}}, true)
	if err != nil {
		return 0, err
	}
	i, _ := r.Lookup("index").AsInt64OK()
	return uint64(i), nil
}

// Leader is the replica leading group as a member sees it (0: none).
func (p *peers) Leader(ctx context.Context, group uint64) (uint64, error) {
	r, err := p.call(ctx, group, bson.D{{Key: peerCommand, Value: "leader"}, {Key: "group", Value: int64(group)}}, true)
	if err != nil {
		return 0, err
	}
	l, _ := r.Lookup("leader").AsInt64OK()
	return uint64(l), nil
}

// Transfer asks group's leader, through a member, to hand its place to
// replica.
func (p *peers) Transfer(ctx context.Context, group, replica uint64) error {
	_, err := p.call(ctx, group, bson.D{{Key: peerCommand, Value: "transfer"}, {Key: "group", Value: int64(group)},
		{Key: "replica", Value: int64(replica)}}, true)
	return err
}

// Compact asks node to snapshot its replica of group and compact the
// log before it (Node.CompactGroup).
func (p *peers) Compact(ctx context.Context, node, group uint64) error {
	return p.callNode(ctx, node, bson.D{{Key: peerCommand, Value: "compact"}, {Key: "group", Value: int64(group)}})
}

// WaitApplied returns once node's replica of group applied index (asked
// of that node: only it knows), trying again until ctx ends.
func (p *peers) WaitApplied(ctx context.Context, node, group, index uint64) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.callNode(attempt, node, bson.D{{Key: peerCommand, Value: "waitApplied"}, {Key: "group", Value: int64(group)}, {Key: "index", Value: int64(index)}})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d's replica of group %d did not apply index %d: %w (last: %v)", node, group, index, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CopyProgress is what node's replica of group copied in since it
// started (asked of that node: only it knows).
func (p *peers) CopyProgress(ctx context.Context, node, group uint64) (cluster.CopyProgress, error) {
	r, err := p.askNode(ctx, node, bson.D{{Key: peerCommand, Value: "copyProgress"}, {Key: "group", Value: int64(group)}})
	if err != nil {
		return cluster.CopyProgress{}, err
	}
	var out cluster.CopyProgress
	out.Restoring, _ = r.Lookup("restoring").BooleanOK()
	out.Restores, _ = r.Lookup("restores").AsInt64OK()
	out.SnapshotBytes, _ = r.Lookup("snapshotBytes").AsInt64OK()
	out.EntryBytes, _ = r.Lookup("entryBytes").AsInt64OK()
	return out, nil
}

// callNode sends cmd to node itself, once, bounded by ctx.
func (p *peers) callNode(ctx context.Context, node uint64, cmd bson.D) error {
	_, err := p.askNode(ctx, node, cmd)
	return err
}

// askNode sends cmd to node itself, once, bounded by ctx, and returns
// its answer.
func (p *peers) askNode(ctx context.Context, node uint64, cmd bson.D) (bson.Raw, error) {
	body, err := peerBody(ctx, cmd)
	if err != nil {
		return nil, err
	}
	r, _, err := p.send(ctx, node, body)
	if err != nil {
		return nil, err
	}
	if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
		msg, _ := r.Lookup("errmsg").StringValueOK()
		return nil, errors.New(msg)
	}
	return r, nil
}

// peerBody is cmd as a request, with what is left of ctx's time for the
// peer to work within.
func peerBody(ctx context.Context, cmd bson.D) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		cmd = append(cmd, bson.E{Key: "timeoutMS", Value: max(int64(time.Until(dl)/time.Millisecond)-100, 1)})
	}
	return bson.Marshal(append(cmd, bson.E{Key: "$db", Value: "admin"}))
}

// peerErr is a peer's failed answer.
type peerErr struct{ kind, msg string }

func (e *peerErr) Error() string { return e.msg }

// call sends cmd for group to a node holding a replica of it: the one
// that last answered first, then the others, again while none does
// (until ctx ends). A read may be sent again anywhere; a proposal only
// while it surely did not reach a group (the node said it holds none,
// or could not be reached): once sent, its outcome is the answer's.
func (p *peers) call(ctx context.Context, group uint64, cmd bson.D, read bool) (bson.Raw, error) {
	body, err := peerBody(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var last error
	for {
		for _, node := range p.holders(group) {
			r, sent, err := p.send(ctx, node, body)
			if err == nil {
				if ok, _ := r.Lookup("ok").AsFloat64OK(); ok == 1 {
					p.mu.Lock()
					p.last[group] = node
					p.mu.Unlock()
					return r, nil
				}
				kind, _ := r.Lookup("peerError").StringValueOK()
				msg, _ := r.Lookup("errmsg").StringValueOK()
				switch kind {
				case "conflict":
					return nil, fmt.Errorf("%w: %s", cluster.ErrConflict, msg)
				case "rejected":
					return nil, &cluster.RejectedError{Reason: msg}
				case "unknown":
					return nil, fmt.Errorf("%w: %s", cluster.ErrUnknownOutcome, msg)
				case "notHeld":
					last = &peerErr{kind, msg}
					continue
				}
				if !read {
					return nil, fmt.Errorf("group %d through node %d: %s", group, node, msg)
				}
				last = &peerErr{kind, msg}
				continue
			}
			if sent && !read {
				return nil, fmt.Errorf("%w: group %d through node %d: %v", cluster.ErrUnknownOutcome, group, node, err)
			}
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = fmt.Errorf("no node holds a replica of group %d", group)
			}
			if !read {
				return nil, fmt.Errorf("%w: group %d: %v", cluster.ErrUnknownOutcome, group, last)
			}
			return nil, fmt.Errorf("reading group %d: %w (last: %v)", group, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// holders are the nodes that may hold a replica of group, the one that
// last answered first.
func (p *peers) holders(group uint64) []uint64 {
	self := p.gs.h.self
	var nodes []uint64
	if g, ok := p.gs.registry().byID(group); ok {
		nodes = g.members()
	}
	for _, id := range slices.Sorted(maps.Keys(p.gs.h.view.Load().raft)) {
		if !slices.Contains(nodes, id) {
			nodes = append(nodes, id)
		}
	}
	// A replica moving away may be out of the group's membership before
	// the registry says so (its writer died part way) without knowing
	// it: asked first, it would hold a proposal until its time ran out,
	// every time. It is asked last.
	if m, ok := p.gs.moveOf(group); ok && m.from != 0 {
		nodes = slices.DeleteFunc(nodes, func(n uint64) bool { return n == m.from })
		nodes = append(nodes, m.from)
	}
	nodes = slices.DeleteFunc(nodes, func(n uint64) bool { return n == self })
	p.mu.Lock()
	last, ok := p.last[group]
	p.mu.Unlock()
	if i := slices.Index(nodes, last); ok && i > 0 {
		nodes[0], nodes[i] = nodes[i], nodes[0]
	}
	return nodes
}

// send sends body to node; sent says the request may have reached it.
func (p *peers) send(ctx context.Context, node uint64, body []byte) (bson.Raw, bool, error) {
	v := p.gs.h.view.Load()
	addr, ok := v.clients[node]
	if !ok {
		return nil, false, fmt.Errorf("node %d is not a member", node)
	}
	u, err := p.conn(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	reply, err := u.roundTrip(ctx, &wire.Request{OpCode: wire.OpMsg, Body: body})
	if err != nil {
		u.close()
		return nil, true, err
	}
	p.mu.Lock()
	if len(p.idle[addr]) < maxIdlePeerConns {
		p.idle[addr] = append(p.idle[addr], u)
		u = nil
	}
	p.mu.Unlock()
	if u != nil {
		u.close()
	}
	return bson.Raw(reply), true, nil
}

// conn is an idle connection to addr, or a new one from this node's
// host (peers accept requests only from members' hosts).
func (p *peers) conn(ctx context.Context, addr string) (*upstream, error) {
	p.mu.Lock()
	if l := p.idle[addr]; len(l) > 0 {
		u := l[len(l)-1]
		p.idle[addr] = l[:len(l)-1]
		p.mu.Unlock()
		return u, nil
	}
	p.mu.Unlock()
	var local net.Addr
	if host, _, err := net.SplitHostPort(p.gs.h.view.Load().raft[p.gs.h.self]); err == nil {
		if ip := net.ParseIP(host); ip != nil {
			local = &net.TCPAddr{IP: ip}
		}
	}
	return dialUpstreamFrom(ctx, addr, local)
}

// farUnder is the groups this node holds no replica of that may own keys
// under prefix (cluster.Far.Under).
func (gs *groups) farUnder(prefix []byte) []uint64 {
	fp := gs.far.Load()
	if fp == nil || len(*fp) == 0 {
		return nil
	}
	far := *fp
	all := func(keep func(partitionGroup) bool) []uint64 {
		var out []uint64
		for _, g := range far {
			if keep == nil || keep(g) {
				out = append(out, g.id)
			}
		}
		return out
	}
	if len(prefix) < 2 || prefix[1] != '/' {
		return all(nil)
	}
	switch prefix[0] {
	case 'r', 'u':
		return nil // a replica's own keys; unique guards are never stored
	case 'm':
		for _, p := range [][]byte{groupFencePrefix, groupRangePrefix} {
			switch {
			case bytes.HasPrefix(prefix, p) && len(prefix) >= len(p)+8:
				id := binary.BigEndian.Uint64(prefix[len(p):])
				return all(func(g partitionGroup) bool { return g.id == id })
			case bytes.HasPrefix(p, prefix) || bytes.HasPrefix(prefix, p):
				return all(nil)
			}
		}
		return nil // the catalog's
	case 'd', 'c', 'x':
		if len(prefix) < 6 {
			return all(nil)
		}
		coll := binary.BigEndian.Uint32(prefix[2:6])
		var pts []byte
		switch {
		case prefix[0] == 'd':
			pts = prefix[6:]
		case prefix[0] == 'c' && len(prefix) > 6 && (prefix[6] == 'k' || prefix[6] == 'l'):
			pts = prefix[7:]
		}
		lo, hi := pointBounds(pts)
		return all(func(g partitionGroup) bool { return g.coll == coll && g.min <= hi && g.max >= lo })
	}
	return all(nil)
}

// pointBounds are the least and greatest points whose 8 bytes begin
// with pts.
func pointBounds(pts []byte) (uint64, uint64) {
	var lo, hi [8]byte
	for i := range 8 {
		lo[i], hi[i] = 0, 0xff
		if i < len(pts) {
			lo[i], hi[i] = pts[i], pts[i]
		}
	}
	return binary.BigEndian.Uint64(lo[:]), binary.BigEndian.Uint64(hi[:])
}

// groupOf is the group that owns key holding value, from the registry as
// this node last read it (registering nothing).
func (gs *groups) groupOf(key, value []byte) (uint64, bool) {
	if len(key) > 0 && key[0] == 'x' && len(value) < 8 {
		return 0, false // an index entry is judged by its value
	}
	if id, ok := fencedGroupKey(key); ok {
		return id, true
	}
	o, err := store.OwnerOf(key, value)
	if err != nil {
		return 0, false
	}
	switch o.Scope {
	case store.ScopeCatalog:
		return dataGroup, true
	case store.ScopePartition:
		if g, ok := gs.registry().find(o.Coll, o.Point); ok {
			return g.id, true
		}
	}
	return 0, false
}

// refreshFar notes which registered groups this node runs no replica of.
func (gs *groups) refreshFar() {
	var far []partitionGroup
	for _, g := range gs.registry().all {
		if !gs.h.node.Started(g.id) || !slices.Contains(g.members(), gs.h.self) {
			far = append(far, g)
		}
	}
	gs.far.Store(&far)
}
