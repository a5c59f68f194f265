package integration

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// partitionGroups is what GetPartitionStats says of a collection's
// partitions' Raft groups: for each partition (in hash order) its group,
// its leader's node and its replicas' nodes with what each applied.
type partitionGroupsView struct {
	groups   []int64
	leaders  []int64
	replicas [][]int64 // nodes with an applied index, per partition
	applied  []map[int64]int64
}

func readPartitionGroups(t *testing.T, db *mongo.Database, coll string) partitionGroupsView {
	t.Helper()
	raw := runOK(t, db, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: coll}})
	var v partitionGroupsView
	parts, err := raw.LookupErr("partitions")
	if err != nil {
		t.Fatalf("GetPartitionStats without partitions: %v", raw)
	}
	vals, _ := parts.Array().Values()
	for _, p := range vals {
		doc := p.Document()
		g, ok := doc.Lookup("raftGroup").AsInt64OK()
		if !ok {
			g = -1 // null: no group yet
		}
		v.groups = append(v.groups, g)
		var leader int64
		var nodes []int64
		applied := map[int64]int64{}
		reps, _ := doc.Lookup("replicas").Array().Values()
		for _, r := range reps {
			rd := r.Document()
			node, _ := rd.Lookup("node").AsInt64OK()
			if rd.Lookup("leader").Boolean() {
				leader = node
			}
			if a, ok := rd.Lookup("appliedIndex").AsInt64OK(); ok && rd.Lookup("healthy").Boolean() {
				nodes = append(nodes, node)
				applied[node] = a
			}
		}
		v.leaders = append(v.leaders, leader)
		v.replicas = append(v.replicas, nodes)
		v.applied = append(v.applied, applied)
	}
	return v
}

// TestClusterPartitionGroups: with --partition-groups every physical
// partition is a Raft group of its own. Three writers insert while
// partitions split by size and the writer is killed (SIGKILL); then
// every acknowledged document is there exactly once, the statistics
// match a scan, and GetPartitionStats shows each partition in a group of
// its own with three replicas and a leader; writes that span partitions
// (updateMany, deleteMany, an index build) commit in each partition's
// group; serverStatus lists the catalog group and every partition's.
func TestClusterPartitionGroups(t *testing.T) {
	c := startTestCluster(t, "--partition-groups", "--partition-max-bytes", "64KiB")
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.nodes {
				t.Logf("--- node %d:\n%s", n.id, n.logText())
			}
		}
	})
	cl := c.connect()
	ctx := testCtx(t)
	db := cl.Database("groups")
	runOK(t, cl.Database("admin"), bson.D{{Key: "shardCollection", Value: "groups.c"}, {Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}})
	coll := db.Collection("c")

	acked := insertKillingWriter(t, c, cl, coll, 500, 1200)
	for _, n := range c.nodes {
		if n.cmd == nil {
			c.start(n)
		}
	}

	// Every partition gets a group of its own (the writer splits groups
	// after the map splits), each with three healthy replicas and one
	// leader among them.
	var v partitionGroupsView
	deadline := time.Now().Add(30 * time.Second)
	for {
		v = readPartitionGroups(t, db, "c")
		seen := map[int64]bool{}
		ok := len(v.groups) >= 2
		for i, g := range v.groups {
			ok = ok && g > 1 && !seen[g] && len(v.replicas[i]) == 3 && v.leaders[i] != 0
			seen[g] = true
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions' groups %v, leaders %v, replicas %v: want a group of its own for each of the %d partitions, three replicas and a leader", v.groups, v.leaders, v.replicas, len(v.groups))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d partitions, groups %v, leaders %v", len(v.groups), v.groups, v.leaders)

	checkStatsAgainstScan(t, coll, "tenant")
	seen := countIDs(t, coll)
	missing := 0
	for id := range acked {
		if seen[id] != 1 {
			missing++
		}
	}
	total := len(seen)
	t.Logf("%d inserts acknowledged, %d documents", len(acked), total)
	if missing > 0 {
		t.Fatalf("%d acknowledged documents missing or stored twice", missing)
	}

	// Writes over every partition commit group by group.
	up, err := coll.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	if err != nil || int(up.ModifiedCount) != total {
		t.Fatalf("updateMany: %+v, %v; want %d modified", up, err, total)
	}
	del, err := coll.DeleteMany(ctx, bson.D{{Key: "tenant", Value: bson.D{{Key: "$in", Value: bson.A{"t001", "t002", "t003"}}}}})
	if err != nil || del.DeletedCount == 0 {
		t.Fatalf("deleteMany: %+v, %v", del, err)
	}
	checkStatsAgainstScan(t, coll, "tenant")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "n", Value: 1}}, options.Count().SetHint("n_1")); err != nil || int(n) != total-int(del.DeletedCount) {
		t.Errorf("count by the new index: %d, %v; want %d", n, err, total-int(del.DeletedCount))
	}

	// Sharding a collection that has documents copies them into the new
	// layout (one group first, split along the new map once published).
	plain := db.Collection("plain")
	var docs []any
	for i := 0; i < 400; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: fmt.Sprintf("k%03d", i%50)}})
	}
	if _, err := plain.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	runOK(t, cl.Database("admin"), bson.D{{Key: "shardCollection", Value: "groups.plain"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}})
	if n, err := plain.CountDocuments(ctx, bson.D{}); err != nil || n != 400 {
		t.Fatalf("after sharding: %d documents, %v", n, err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		pv := readPartitionGroups(t, db, "plain")
		seen := map[int64]bool{}
		ok := len(pv.groups) >= 2
		for _, g := range pv.groups {
			ok = ok && g > 1 && !seen[g]
			seen[g] = true
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sharded collection's partitions' groups: %v", pv.groups)
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkStatsAgainstScan(t, plain, "k")

	// Resharding copies into a new collection's groups and switches.
	runOK(t, cl.Database("admin"), bson.D{{Key: "reshardCollection", Value: "groups.plain"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	if n, err := plain.CountDocuments(ctx, bson.D{}); err != nil || n != 400 {
		t.Fatalf("after resharding: %d documents, %v", n, err)
	}
	checkStatsAgainstScan(t, plain, "_id")
	if pv := readPartitionGroups(t, db, "plain"); len(pv.groups) == 0 || pv.groups[0] <= 1 {
		t.Errorf("the resharded collection's partitions' groups: %v", pv.groups)
	}

	// serverStatus: the catalog group and one per partition.
	ss := runOK(t, cl.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	groups, err := ss.LookupErr("parsec", "cluster", "groups")
	if err != nil {
		t.Fatalf("serverStatus has no parsec.cluster.groups: %v", err)
	}
	vals, _ := groups.Array().Values()
	if len(vals) < 1+len(v.groups) {
		t.Errorf("serverStatus lists %d groups, want the catalog's and at least the %d partitions'", len(vals), len(v.groups))
	}
	if holds := vals[0].Document().Lookup("holds").StringValue(); holds != "catalog" {
		t.Errorf("the first group holds %q, want the catalog", holds)
	}
}
