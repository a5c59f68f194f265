package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/cluster"
	"github.com/parsecdb/parsec/console"
	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/kv/badgerkv"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A cluster of Parsec nodes. Every node holds a replica of the catalog's
// group (dataGroup) and of every physical partition's (groups.go; a
// cluster made with --partition-groups=false keeps everything in
// dataGroup). The catalog group's Raft leader is the cluster's one writer
// and runs the engine; the other nodes are standbys
// that answer as secondaries of the replica set the cluster presents,
// naming the primary, so drivers given every node find the writer and
// follow it through a failover. A standby forwards what it receives to
// the writer, except reads that allow a secondary, which it answers from
// its own replica (followerreads.go). A node that becomes leader first makes
// sure it applied everything committed (a ReadIndex round), then claims
// the group (fenceKey: from that entry on, the previous writer commits
// nothing more), opens the store on the group and starts its engine.

// dataGroup is the catalog's group (with --partition-groups=false, the
// group that holds the whole key space).
const dataGroup = 1

// fenceKey holds the claim of the group's current writer (a catalog
// key: the catalog never uses m/writer).
var fenceKey = []byte("m/writer")

// clusterOptions are serve's cluster flags.
type clusterOptions struct {
	nodeID         uint64
	raftAddress    string
	initialMembers string
	join           string // a node's client address: join its running cluster
	// partitionGroups makes each physical partition a group of its own
	// (groups.go); groupsExplicit says the flag was given (else a data
	// directory keeps the layout it was made with).
	partitionGroups, groupsExplicit bool
	// raftSyncInterval is cluster.NodeConfig.LogSyncInterval.
	raftSyncInterval time.Duration
}

// clustered is whether serve runs as a node of a cluster.
func (o *serveOptions) clustered() bool {
	return o.cluster.initialMembers != "" || o.cluster.join != ""
}

// parseMembers reads "1=host:port,2=host:port,...".
func parseMembers(s string) (map[uint64]string, error) {
	members := map[uint64]string{}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		id, addr, ok := strings.Cut(part, "=")
		n, err := strconv.ParseUint(strings.TrimSpace(id), 10, 64)
		if !ok || err != nil || n == 0 {
			return nil, fmt.Errorf("--initial-members: %q is not <node id>=<host:port> with a node id of at least 1", part)
		}
		addr = strings.TrimSpace(addr)
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("--initial-members: node %d: %q is not host:port", n, addr)
		}
		if _, dup := members[n]; dup {
			return nil, fmt.Errorf("--initial-members: node %d is given twice", n)
		}
		if seen[addr] {
			return nil, fmt.Errorf("--initial-members: address %s is given twice", addr)
		}
		members[n], seen[addr] = addr, true
	}
	return members, nil
}

// validateCluster checks the cluster flags against each other and the
// rest of serve's; it returns the members.
func (o *serveOptions) validateCluster() (map[uint64]string, error) {
	if o.cluster.join != "" {
		switch {
		case o.cluster.initialMembers != "":
			return nil, errors.New("--join and --initial-members exclude each other: a new cluster's nodes get --initial-members, a node added to a running one --join")
		case o.cluster.nodeID == 0 || o.cluster.raftAddress == "":
			return nil, errors.New("--join needs --node-id (an id no member has) and --raft-address (where the others reach this node)")
		case o.inMemory:
			return nil, errors.New("--in-memory cannot be used with --join: a cluster node keeps its replicas on disk")
		case o.tlsCertFile != "" || o.tlsSelfSigned:
			return nil, errors.New("TLS (--tls-cert-file, --tls-self-signed) is not yet available on cluster nodes")
		}
		if _, _, err := net.SplitHostPort(o.cluster.join); err != nil {
			return nil, fmt.Errorf("--join: %q is not host:port", o.cluster.join)
		}
		if _, _, err := net.SplitHostPort(o.cluster.raftAddress); err != nil {
			return nil, fmt.Errorf("--raft-address: %q is not host:port", o.cluster.raftAddress)
		}
		return map[uint64]string{o.cluster.nodeID: o.cluster.raftAddress}, nil
	}
	members, err := parseMembers(o.cluster.initialMembers)
	if err != nil {
		return nil, err
	}
	own, ok := members[o.cluster.nodeID]
	switch {
	case o.cluster.nodeID == 0:
		return nil, errors.New("--initial-members needs --node-id: this node's id among them")
	case !ok:
		return nil, fmt.Errorf("--node-id %d is not among --initial-members (%s)", o.cluster.nodeID, o.cluster.initialMembers)
	case o.cluster.raftAddress != "" && o.cluster.raftAddress != own:
		return nil, fmt.Errorf("--raft-address %s, but --initial-members gives node %d the address %s", o.cluster.raftAddress, o.cluster.nodeID, own)
	case o.inMemory:
		return nil, errors.New("--in-memory cannot be used with --initial-members: a cluster node keeps its replicas on disk")
	case o.tlsCertFile != "" || o.tlsSelfSigned:
		return nil, errors.New("TLS (--tls-cert-file, --tls-self-signed) is not yet available with --initial-members")
	}
	return members, nil
}

// clusterIdentity is what a node's data directory was created as
// (<data-dir>/cluster.json), checked at every start.
type clusterIdentity struct {
	NodeID  uint64            `json:"nodeId"`
	Members map[uint64]string `json:"members"`
	// PartitionGroups: made with --partition-groups.
	PartitionGroups bool `json:"partitionGroups,omitempty"`
}

const identityFile = "cluster.json"

// checkIdentity refuses a data directory made for another node or
// another cluster, and records the identity of a new one. Nothing in the
// directory changes when it refuses.
// A directory made before partition groups existed, or with
// --partition-groups=false, keeps one group for everything: the layout
// it was made with is used unless the flag, given explicitly, disagrees
// (then it is refused); checkIdentity returns the layout.
func checkIdentity(dir string, nodeID uint64, members map[uint64]string, partitionGroups, explicit bool) (bool, error) {
	path := filepath.Join(dir, identityFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() != "tls-cert.pem" && e.Name() != "tls-key.pem" {
				return false, fmt.Errorf("data directory %s holds a single server's data (or another program's), not a cluster node's: give this node an empty --data-dir", dir)
			}
		}
		return partitionGroups, writeIdentity(dir, nodeID, members, partitionGroups)
	}
	if err != nil {
		return false, err
	}
	var id clusterIdentity
	if err := json.Unmarshal(raw, &id); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if id.NodeID != nodeID {
		return false, fmt.Errorf("data directory %s is node %d's of its cluster, not node %d's: start it with --node-id %d, or give node %d a --data-dir of its own", dir, id.NodeID, nodeID, id.NodeID, nodeID)
	}
	if explicit && id.PartitionGroups != partitionGroups {
		with := map[bool]string{true: "with", false: "without"}
		return false, fmt.Errorf("data directory %s was made %s --partition-groups: start the node %s it, or give it an empty --data-dir", dir, with[id.PartitionGroups], with[id.PartitionGroups])
	}
	if !maps.Equal(id.Members, members) {
		return false, fmt.Errorf("--initial-members %s disagrees with the members data directory %s was created with (%s): a node keeps the membership it was started with; start it with the same list, or give it an empty --data-dir to join a new cluster", formatMembers(members), dir, formatMembers(id.Members))
	}
	return id.PartitionGroups, nil
}

func writeIdentity(dir string, nodeID uint64, members map[uint64]string, partitionGroups bool) error {
	raw, err := json.MarshalIndent(clusterIdentity{NodeID: nodeID, Members: members, PartitionGroups: partitionGroups}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, identityFile), append(raw, '\n'), 0o600)
}

func formatMembers(m map[uint64]string) string {
	ids := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%d=%s", id, m[id])
	}
	return strings.Join(parts, ",")
}

// clientAddress is the address clients reach a member at: its Raft
// host and this node's client port (every node of a cluster listens for
// clients on the same port).
func clientAddress(raftAddr string, port int) string {
	host, _, _ := net.SplitHostPort(raftAddr)
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// serveCluster runs this node of a cluster until ctx is done.
func serveCluster(ctx context.Context, o *serveOptions, argv []string, logger *slog.Logger) error {
	members, err := o.validateCluster()
	if err != nil {
		return err
	}
	dataDir := o.dataDir
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	_, statErr := os.Stat(filepath.Join(dataDir, "raft"))
	restarted := statErr == nil
	groupsLayout, err := checkIdentity(dataDir, o.cluster.nodeID, members, o.cluster.partitionGroups, o.cluster.groupsExplicit)
	if err != nil {
		return err
	}
	o.cluster.partitionGroups = groupsLayout
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	db, err := badgerkv.Open(badgerkv.Options{Dir: filepath.Join(dataDir, "data"), Logger: logger, MemoryLimit: int64(o.memoryLimit)})
	if err != nil {
		_ = ln.Close()
		if errors.Is(err, badgerkv.ErrLocked) {
			return fmt.Errorf("data directory %s is already in use by another Parsec server; stop it or choose another --data-dir", dataDir)
		}
		return err
	}
	cluster.QuietLogs()

	node, err := cluster.NewNode(cluster.NodeConfig{RaftAddress: members[o.cluster.nodeID], Dir: dataDir, DB: db.Badger(), Sync: db.Sync, LogSyncInterval: o.cluster.raftSyncInterval, Logger: logger})
	if err != nil {
		_ = ln.Close()
		_ = db.Close()
		return err
	}
	group := cluster.GroupConfig{ShardID: dataGroup, ReplicaID: o.cluster.nodeID, Members: members, Spans: cluster.DataSpans, Watch: catalogPrefix}
	if o.cluster.join != "" {
		// A node that joined restarts from its own state; the first time
		// it asks the cluster to add it, then starts as a new member,
		// with the cluster's layout.
		group.Members = nil
		if !restarted {
			var layout bool
			if layout, err = askToJoin(ctx, o.cluster.join, o.cluster.nodeID, o.cluster.raftAddress); err == nil {
				group.Join = true
				if layout != o.cluster.partitionGroups {
					o.cluster.partitionGroups = layout
					err = writeIdentity(dataDir, o.cluster.nodeID, members, layout)
				}
			}
		}
	}
	if o.cluster.partitionGroups {
		group = catalogGroupConfig(group)
	}
	if err == nil {
		err = node.StartGroup(group)
	}
	if err != nil {
		node.Close()
		_ = db.Close()
		_ = ln.Close()
		return err
	}
	setName := o.replicaSet
	if setName == "" {
		setName = "parsec"
	}
	h := &clusterHandler{
		o: o, logger: logger, node: node, self: o.cluster.nodeID,
		argv: argv, port: port, setName: setName,
	}
	h.view.Store(newMemberView(members, port))
	if o.cluster.partitionGroups {
		h.groups = &groups{h: h}
		h.groups.peers = newPeers(h.groups)
		h.groups.bal = newBalancer(h.groups)
	}
	var web *http.Server
	if addr := clusterHTTPAddr(o, ln); addr != "" {
		hl, err := net.Listen("tcp", addr)
		if err != nil {
			node.Close()
			_ = db.Close()
			_ = ln.Close()
			return fmt.Errorf("--http: listen on %s: %w", addr, err)
		}
		h.web = true
		web = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = web.Serve(hl) }()
		logger.Info("console and metrics (served by the writer; a standby answers 503 naming it)", "url", "http://"+hl.Addr().String()+"/")
	}
	var srv *wire.Server
	h.conns = func() wire.Stats { return srv.Stats() }
	srv = wire.NewServer(h, logger, o.maxConnections)
	logger.Info("parsec cluster node started", "version", engine.Version, "node", o.cluster.nodeID, "address", ln.Addr().String(),
		"raft_address", members[o.cluster.nodeID], "members", formatMembers(members), "data_dir", dataDir, "replica_set", setName)

	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); h.watch(wctx) }()
	err = serveUntil(ctx, srv, ln, logger)
	stopWatch()
	<-watched
	sctx, cancel := shutdownWire(srv, o.shutdownGrace, logger)
	defer cancel()
	if web != nil {
		_ = web.Shutdown(sctx)
	}
	h.stepDown("shutting down")
	if f := h.reader.Load(); f != nil {
		f.close()
	}
	node.Close()
	if cerr := db.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, wire.ErrServerClosed) {
		err = nil
	}
	logger.Info("parsec stopped")
	return err
}

// writer is this node's engine while it is the group's writer.
type writer struct {
	kv      *cluster.Replicated
	eng     *engine.Engine
	st      *store.Store
	open    atomic.Pointer[store.Store] // st, once open (partition groups route by its catalog)
	claim   []byte                      // this writer's claim on every group
	console *console.Server             // the writer's metrics and console (nil without --http)
	term    uint64
}

// clusterHandler serves a node's clients: through the engine while the
// node is the writer, as a standby otherwise.
type clusterHandler struct {
	o      *serveOptions
	logger *slog.Logger
	node   *cluster.Node
	self   uint64
	view   atomic.Pointer[memberView] // the members, as this node last read them
	// membersRaw is the recorded members' bytes refreshMembers last
	// decoded (only the watch loop reads and sets it).
	membersRaw []byte
	argv       []string
	port       int
	setName    string
	conns      func() wire.Stats
	web        bool // --http: the writer serves metrics and the console

	cur     atomic.Pointer[writer]
	primary atomic.Pointer[string] // the writer's client address, as last seen

	mu      sync.Mutex // serializes takeOver and stepDown
	retired []*writer  // deposed writers still to close (by the watch loop)

	groups *groups // --partition-groups (groups.go); nil: one group holds everything

	reader   atomic.Pointer[follower] // the standby's view of its replica (followerreads.go)
	readerMu sync.Mutex               // serializes opening it
}

// watch follows the group's leadership: this node takes over when it
// leads and steps down when it no longer does.
func (h *clusterHandler) watch(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		leader, term, ok := h.node.LeaderTerm(dataGroup)
		primary := ""
		if ok {
			primary = h.view.Load().clients[leader]
		}
		h.primary.Store(&primary)
		h.refreshMembers()
		if h.groups != nil {
			if err := h.groups.startGroups(); err != nil && ctx.Err() == nil {
				h.logger.Warn("starting this node's replicas of partition groups", "err", err)
			}
			if w := h.cur.Load(); w != nil {
				if err := h.groups.maybeReconcile(w); err != nil && ctx.Err() == nil {
					h.logger.Warn("splitting partition groups", "err", err)
				}
				h.groups.bal.maybeRound(w)
			}
		}
		w := h.cur.Load()
		switch mine := ok && leader == h.self; {
		case mine && (w == nil || w.term != term):
			if w != nil {
				h.stepDown("a new term")
			}
			if err := h.takeOver(ctx, term); err != nil && ctx.Err() == nil {
				h.logger.Warn("taking over as the cluster's writer failed; trying again", "term", term, "err", err)
			}
		case !mine && w != nil:
			h.stepDown("another node leads the group")
		}
		h.closeRetired()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// takeOver makes this node the writer for term.
func (h *clusterHandler) takeOver(ctx context.Context, term uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	start := time.Now()
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := h.node.Barrier(bctx, dataGroup); err != nil {
		return fmt.Errorf("catching up: %w", err)
	}
	kvs, err := h.node.KV(dataGroup)
	if err != nil {
		return err
	}
	claim := fmt.Appendf(nil, "node %d term %d", h.self, term)
	if err := kvs.Claim(bctx, fenceKey, claim); err != nil {
		return fmt.Errorf("claiming the group: %w", err)
	}
	kvs.Fence(fenceKey, claim)
	w := &writer{term: term, claim: claim}
	if h.groups != nil {
		// Every group is claimed too; the store then reads the node's
		// replicas of all of them and commits to each through the one
		// its writes belong to.
		if err := h.groups.startGroups(); err != nil {
			return err
		}
		kvs = h.groups.routed(w)
		kvs.Gate, kvs.Last = h.groups.gate, dataGroup
		kvs.FenceGroup(dataGroup, fenceKey, claim)
		w.kv = kvs
		if err := h.groups.claim(bctx, w, h.groups.registry().all); err != nil {
			return fmt.Errorf("claiming the partition groups: %w", err)
		}
	}
	kvs.OnFenced = func() { h.depose(w) }
	w.kv = kvs
	st, err := store.Open(store.Options{KV: kvs, Logger: h.logger, OnePartitionTransactions: true})
	if err != nil {
		return fmt.Errorf("opening the store: %w", err)
	}
	w.open.Store(st)
	cfg := h.o.engineConfig(storage.Local(st), h.logger, h.conns, h.argv, nil, h.port)
	if err := h.recordMembers(kvs); err != nil {
		return fmt.Errorf("recording the members: %w", err)
	}
	cfg.ReplicaSet, cfg.Advertise, cfg.ElectionTerm, cfg.NodeID = h.setName, h.view.Load().clients[h.self], term, h.self
	cfg.Members = func() []string { return h.view.Load().hosts }
	cfg.MajorityJournaled = h.o.cluster.raftSyncInterval == 0
	cfg.AddNode, cfg.RemoveNode = h.addNode, h.removeNode
	if h.groups != nil {
		cfg.Balancer = h.groups.bal
	}
	cfg.ReadBarrier = func(ctx context.Context) error { return h.node.Barrier(ctx, dataGroup) }
	cfg.Cluster = func(ctx context.Context) engine.ClusterStatus { return h.status(ctx, term) }
	if h.groups != nil {
		cfg.PartitionLeader = h.groups.leaderOf
		cfg.Moves = h.groups.moveHistory
	}
	w.eng, w.st = engine.New(cfg), st
	if h.web {
		w.console = console.New(w.eng, console.Options{Logger: h.logger, Auth: h.o.auth || h.o.rootUser != ""})
	}
	h.cur.Store(w)
	h.logger.Info("this node is the cluster's writer", "term", term, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// status is the cluster as this node, the writer, sees it: its own
// replica's applied index, and each other node's from a hello over its
// client port (a node that does not answer is reported unhealthy).
func (h *clusterHandler) status(ctx context.Context, term uint64) engine.ClusterStatus {
	st := engine.ClusterStatus{NodeID: h.self, Term: term, Group: dataGroup,
		LogSyncInterval: h.o.cluster.raftSyncInterval, LogFsyncs: h.node.LogFsyncs()}
	if h.groups != nil {
		st.Groups = h.groups.status(ctx)
	}
	v := h.view.Load()
	ids := slices.Sorted(maps.Keys(v.clients))
	st.Members = make([]engine.MemberStatus, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		m := &st.Members[i]
		*m = engine.MemberStatus{ID: id, Host: v.clients[id], RaftAddress: v.raft[id], Self: id == h.self, Writer: id == h.self}
		if m.Self {
			m.Healthy, m.Applied = true, h.node.Applied(dataGroup)
			if h.groups != nil {
				m.Groups = h.groups.applied()
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied, groups, err := helloApplied(ctx, m.Host)
			if err != nil {
				m.Err = err.Error()
				return
			}
			m.Healthy, m.Applied, m.Groups = true, applied, groups
		}()
	}
	wg.Wait()
	return st
}

// helloApplied asks a standby for its replicas' applied indexes: the
// catalog's (or the one group's), and each partition group's.
func helloApplied(ctx context.Context, addr string) (uint64, map[uint64]uint64, error) {
	up, err := dialUpstream(ctx, addr)
	if err != nil {
		return 0, nil, err
	}
	defer up.close()
	body, err := bson.Marshal(bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	if err != nil {
		return 0, nil, err
	}
	reply, err := up.roundTrip(ctx, &wire.Request{OpCode: wire.OpMsg, Body: body})
	if err != nil {
		return 0, nil, err
	}
	v, err := bsoncore.Document(reply).LookupErr("raftAppliedIndex")
	if err != nil {
		return 0, nil, fmt.Errorf("%s did not say what it applied", addr)
	}
	n, _ := v.AsInt64OK()
	groups := map[uint64]uint64{}
	if gv, err := bsoncore.Document(reply).LookupErr("raftGroups"); err == nil {
		if elems, err := gv.Document().Elements(); err == nil {
			for _, e := range elems {
				id, perr := strconv.ParseUint(e.Key(), 10, 64)
				a, ok := e.Value().AsInt64OK()
				if perr == nil && ok {
					groups[id] = uint64(a)
				}
			}
		}
	}
	return uint64(n), groups, nil
}

// depose stops serving through w at once (its commits are fenced off);
// the watch loop closes it.
func (h *clusterHandler) depose(w *writer) {
	if h.cur.CompareAndSwap(w, nil) {
		h.mu.Lock()
		h.retired = append(h.retired, w)
		h.mu.Unlock()
		h.logger.Warn("another node claimed the cluster's writes: this node is a standby", "term", w.term)
	}
}

// stepDown stops serving through the current writer and closes it.
func (h *clusterHandler) stepDown(why string) {
	w := h.cur.Swap(nil)
	h.mu.Lock()
	if w != nil {
		h.retired = append(h.retired, w)
		h.logger.Info("this node is a standby", "term", w.term, "why", why)
	}
	h.mu.Unlock()
	h.closeRetired()
}

func (h *clusterHandler) closeRetired() {
	h.mu.Lock()
	ws := h.retired
	h.retired = nil
	h.mu.Unlock()
	for _, w := range ws {
		if w.console != nil {
			if err := w.console.Close(context.Background()); err != nil {
				h.logger.Debug("closing a deposed writer's console", "err", err)
			}
		}
		w.eng.Close()
		if err := w.st.Close(); err != nil {
			h.logger.Debug("closing a deposed writer's store", "err", err)
		}
	}
}

func (h *clusterHandler) Connect(c *wire.Conn) wire.ConnHandler { return &clusterConn{h: h, c: c} }

// clusterHTTPAddr is the node's --http address: the one given, or port
// 8080 at the host this node listens on for clients (so that nodes
// sharing a machine on 127.0.0.N do not collide).
func clusterHTTPAddr(o *serveOptions, ln net.Listener) string {
	if o.httpExplicit {
		return o.httpAddr
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	return net.JoinHostPort(host, "8080")
}

// ServeHTTP serves metrics and the console of this node while it is the
// writer; a standby answers 503 naming the writer.
func (h *clusterHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if w := h.cur.Load(); w != nil && w.console != nil {
		w.console.Handler().ServeHTTP(rw, r)
		return
	}
	writer := "not known yet"
	if p := h.primary.Load(); p != nil && *p != "" {
		writer = *p
	}
	rw.Header().Set("Retry-After", "1")
	http.Error(rw, "this Parsec node is a standby of its cluster: metrics and the console are served by the writer (its clients' address: "+writer+")", http.StatusServiceUnavailable)
}

// clusterConn is one client connection. A connection is served by the
// writer current at its first request, or as a standby; when that
// changes, the connection is closed so that the client looks again and
// finds the writer (drivers retry a write or read a closed connection
// interrupted, and a retried write runs exactly once: its session's
// records are replicated with it).
type clusterConn struct {
	h    *clusterHandler
	c    *wire.Conn
	w    *writer
	ch   wire.ConnHandler
	up   *upstream        // to the writer, on a standby (proxy.go)
	rch  wire.ConnHandler // the standby's own reads (followerreads.go)
	used bool
}

func (cc *clusterConn) Handle(ctx context.Context, req *wire.Request) []byte {
	w := cc.h.cur.Load()
	if cc.used && w != cc.w {
		req.CloseConnection = true
		return nil
	}
	if req.OpCode == wire.OpMsg && req.Err == nil && isPeerRequest(req.Body) {
		return cc.h.servePeer(ctx, cc.c.RemoteAddr(), req.Body)
	}
	cc.used, cc.w = true, w
	if w == nil {
		return cc.standby(ctx, req)
	}
	if cc.ch == nil {
		cc.ch = w.eng.Connect(cc.c)
	}
	reply := cc.ch.Handle(ctx, req)
	if cc.h.cur.Load() != w {
		// The node stopped being the writer while the request ran: its
		// outcome is unknown here, and the client learns it by retrying
		// at the new writer.
		req.CloseConnection = true
		return nil
	}
	return reply
}

// standby answers the handshake as a secondary naming the writer, and
// forwards every other command to the writer; with no writer known, it
// answers MongoDB's not-primary errors.
func (cc *clusterConn) standby(ctx context.Context, req *wire.Request) []byte {
	if cc.h.followerReads() && req.OpCode == wire.OpMsg && req.Err == nil && engine.MayReadFromFollower(req.Body) {
		if f, err := cc.h.follower(); err != nil {
			cc.h.logger.Warn("serving a read from this node's replica; forwarding it to the writer", "err", err)
		} else if f.eng.FollowerRead(req.Body) {
			if cc.rch == nil {
				cc.rch = f.eng.Connect(cc.c)
			}
			return f.serve(ctx, cc.h, cc.rch, req)
		}
	}
	v := cc.h.view.Load()
	s := engine.Standby{SetName: cc.h.setName, Me: v.clients[cc.h.self], Members: v.hosts}
	if p := cc.h.primary.Load(); p != nil {
		s.Primary = *p
	}
	s.Applied = cc.h.node.Applied(dataGroup)
	if cc.h.groups != nil {
		s.Groups = cc.h.groups.applied()
	}
	if s.Primary == "" && req.OpCode == wire.OpMsg && req.Err == nil && !engine.StandbyAnswers(req.Body) {
		// No writer known yet (an election, or this node just started):
		// wait a little for one rather than fail the command at once.
		s.Primary = cc.h.awaitPrimary(ctx, 5*time.Second)
	}
	if s.Primary == "" || s.Primary == s.Me || req.OpCode != wire.OpMsg || req.Err != nil || engine.StandbyAnswers(req.Body) {
		return engine.StandbyReply(req.Body, s, cc.c.ID())
	}
	if cc.up != nil && cc.up.addr != s.Primary {
		// The writer changed: the client looks again.
		req.CloseConnection = true
		return nil
	}
	if cc.up == nil {
		up, err := dialUpstream(ctx, s.Primary)
		if err != nil {
			cc.h.logger.Debug("forwarding to the writer", "writer", s.Primary, "err", err)
			return engine.StandbyReply(req.Body, engine.Standby{SetName: s.SetName, Me: s.Me, Members: s.Members}, cc.c.ID())
		}
		cc.up = up
	}
	reply, err := cc.up.roundTrip(ctx, req)
	if err != nil {
		// The outcome is unknown here: the client retries what it may.
		cc.h.logger.Debug("forwarding to the writer", "writer", s.Primary, "err", err)
		req.CloseConnection = true
		return nil
	}
	return reply
}

// awaitPrimary waits up to d (and ctx) for a writer to be known and
// returns its client address ("" when none came).
func (h *clusterHandler) awaitPrimary(ctx context.Context, d time.Duration) string {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if p := h.primary.Load(); p != nil && *p != "" {
			return *p
		}
		select {
		case <-ctx.Done():
			return ""
		case <-deadline.C:
			return ""
		case <-tick.C:
		}
	}
}

func (cc *clusterConn) Close() {
	if cc.ch != nil {
		cc.ch.Close()
	}
	if cc.rch != nil {
		cc.rch.Close()
	}
	if cc.up != nil {
		cc.up.close()
	}
}

// membersKey holds the cluster's members in the group (a catalog key):
// JSON of node id -> Raft address. The first writer records the initial
// members; addNode adds to it; every node reads it from its replica.
var membersKey = []byte("m/members")

// memberView is the members as a node knows them, with their client
// addresses (each member's Raft host at the client port every node uses).
type memberView struct {
	raft    map[uint64]string
	clients map[uint64]string
	hosts   []string // client addresses, by node id
}

func newMemberView(raft map[uint64]string, port int) *memberView {
	v := &memberView{raft: raft, clients: map[uint64]string{}}
	for _, id := range slices.Sorted(maps.Keys(raft)) {
		v.clients[id] = clientAddress(raft[id], port)
		v.hosts = append(v.hosts, v.clients[id])
	}
	return v
}

// refreshMembers reads the members from this node's replica.
func (h *clusterHandler) refreshMembers() {
	kvs, err := h.node.KV(dataGroup)
	if err != nil {
		return
	}
	var raft map[uint64]string
	_ = kvs.View(func(t kv.Txn) error {
		item, err := t.Get(membersKey)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if bytes.Equal(v, h.membersRaw) {
				return nil // as last decoded: the view is up to date
			}
			if err := json.Unmarshal(v, &raft); err != nil {
				return err
			}
			h.membersRaw = bytes.Clone(v)
			return nil
		})
	})
	if len(raft) > 0 && !maps.Equal(raft, h.view.Load().raft) {
		h.view.Store(newMemberView(raft, h.port))
	}
}

// recordMembers writes the members this writer knows when the group has
// none recorded yet (the first writer of a new cluster).
func (h *clusterHandler) recordMembers(kvs *cluster.Replicated) error {
	tx := kvs.NewTransaction(true)
	defer tx.Discard()
	if _, err := tx.Get(membersKey); !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	raw, err := json.Marshal(h.view.Load().raft)
	if err != nil {
		return err
	}
	if err := tx.Set(membersKey, raw); err != nil {
		return err
	}
	return tx.Commit()
}

// addNode adds a node to the group (dragonboat's membership change) and
// to the recorded members; adding a member again with the same address
// is a no-op.
func (h *clusterHandler) addNode(ctx context.Context, id uint64, addr string) error {
	w := h.cur.Load()
	if w == nil {
		return fmt.Errorf("this node is no longer the cluster's writer")
	}
	v := h.view.Load()
	if have, ok := v.raft[id]; ok {
		if have == addr {
			return nil
		}
		return fmt.Errorf("node %d is already a member, at %s", id, have)
	}
	for other, a := range v.raft {
		if a == addr {
			return fmt.Errorf("%s is already node %d's Raft address", addr, other)
		}
	}
	if err := h.probeNewNode(ctx, addr); err != nil {
		return err
	}
	if err := h.node.AddReplica(ctx, dataGroup, id, addr); err != nil {
		return err
	}
	// With partition groups the node joins empty: the balancer moves
	// replicas onto it, and groups created from now on may be placed
	// on it.
	raft := maps.Clone(v.raft)
	raft[id] = addr
	if err := h.storeMembers(w, raft); err != nil {
		return err
	}
	h.logger.Info("node added to the cluster", "node", id, "raft_address", addr)
	return nil
}

// probeNewNode refuses to add a node whose client address (its Raft
// host, this cluster's client port) already answers as a member of
// another cluster or as a single server: its Raft replicas belong
// elsewhere. A node not serving yet (one that is joining, or not
// started) does not answer within a second, and is added.
func (h *clusterHandler) probeNewNode(ctx context.Context, raftAddr string) error {
	addr := clientAddress(raftAddr, h.port)
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	up, err := dialUpstream(pctx, addr)
	if err != nil {
		return nil
	}
	defer up.close()
	body, err := bson.Marshal(bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	if err != nil {
		return err
	}
	reply, err := up.roundTrip(pctx, &wire.Request{OpCode: wire.OpMsg, Body: body})
	if err != nil {
		return nil // not serving yet
	}
	doc := bsoncore.Document(reply)
	set, _ := doc.Lookup("setName").StringValueOK()
	if set == "" {
		return engine.IllegalOperation("the node at %s (client address %s) answers as a single Parsec server, not as a node waiting to join: stop it, and start it with --join and an empty --data-dir", raftAddr, addr)
	}
	hosts, _ := doc.Lookup("hosts").ArrayOK()
	vals, _ := hosts.Values()
	me := h.view.Load().clients[h.self]
	for _, v := range vals {
		if s, ok := v.StringValueOK(); ok && s == me {
			return nil // one of ours already (an addNode asked again)
		}
	}
	return engine.IllegalOperation("the node at %s (client address %s) is a member of another cluster (replica set %q, hosts %v): a node joins one cluster; start it with --join and an empty --data-dir", raftAddr, addr, set, vals)
}

// storeMembers records the members in the group (through the writer's
// store, so fenced like its other writes) and uses them from now on.
func (h *clusterHandler) storeMembers(w *writer, raft map[uint64]string) error {
	raw, err := json.Marshal(raft)
	if err != nil {
		return err
	}
	tx := w.kv.NewTransaction(true)
	defer tx.Discard()
	if err := tx.Set(membersKey, raw); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	h.view.Store(newMemberView(raft, h.port))
	return nil
}

// removeNode removes a member from the group and the recorded members.
func (h *clusterHandler) removeNode(ctx context.Context, id uint64) error {
	w := h.cur.Load()
	if w == nil {
		return fmt.Errorf("this node is no longer the cluster's writer")
	}
	if id == h.self {
		return engine.BadValue("node %d is the writer: it cannot remove itself (stop it, and remove it from the new writer)", id)
	}
	v := h.view.Load()
	if _, ok := v.raft[id]; !ok {
		return engine.BadValue("node %d is not a member (members: %s)", id, formatMembers(v.raft))
	}
	if len(v.raft) <= 2 {
		return engine.BadValue("removing node %d would leave %d member: a cluster keeps at least two (three to survive a failure)", id, len(v.raft)-1)
	}
	if h.groups != nil {
		if err := h.groups.removeMember(ctx, w, id); err != nil {
			return err
		}
	}
	if err := h.node.RemoveReplica(ctx, dataGroup, id); err != nil {
		return err
	}
	raft := maps.Clone(v.raft)
	delete(raft, id)
	if err := h.storeMembers(w, raft); err != nil {
		return err
	}
	h.logger.Info("node removed from the cluster", "node", id)
	return nil
}

// askToJoin asks the cluster, through any of its nodes' client address,
// to add this node (addNode; a standby forwards it to the writer).
func askToJoin(ctx context.Context, addr string, id uint64, raftAddr string) (partitionGroups bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := bson.Marshal(bson.D{{Key: "addNode", Value: raftAddr}, {Key: "nodeId", Value: int64(id)}, {Key: "$db", Value: "admin"}})
	if err != nil {
		return false, err
	}
	// A connection that breaks (the writer changed while the request
	// was on its way) is tried again: adding a member twice with the
	// same address is a no-op.
	var reply []byte
	for {
		reply, err = askOnce(ctx, addr, body)
		if err == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil {
		return false, fmt.Errorf("--join %s: %w", addr, err)
	}
	if ok, _ := bsoncore.Document(reply).Lookup("ok").AsFloat64OK(); ok != 1 {
		msg, _ := bsoncore.Document(reply).Lookup("errmsg").StringValueOK()
		return false, fmt.Errorf("--join %s: the cluster refused to add node %d at %s: %s", addr, id, raftAddr, msg)
	}
	groups, _ := bsoncore.Document(reply).Lookup("partitionGroups").BooleanOK()
	return groups, nil
}

// askOnce sends one command to addr over a connection of its own.
func askOnce(ctx context.Context, addr string, body []byte) ([]byte, error) {
	up, err := dialUpstream(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer up.close()
	return up.roundTrip(ctx, &wire.Request{OpCode: wire.OpMsg, Body: body})
}
