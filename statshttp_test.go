package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/console"
	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestStatsOverHTTP: `parsec stats --http` reads the console's API and
// shows what `parsec stats --uri` shows; `parsec top` lists the hottest
// partition first, from either source; with access control, the
// console's credentials go in the URL.
func TestStatsOverHTTP(t *testing.T) {
	s := integration.StartServer(t, integration.ServerOptions{Dir: t.TempDir(), Auth: true, RootUser: "root", RootPassword: "pw"})
	con := integration.StartConsole(t, s, console.Options{Auth: true, MinRefresh: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	uri := strings.Replace(s.URI(), "mongodb://", "mongodb://root:pw@", 1)
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	db := client.Database("shop")
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "orders"},
		{Key: "shardKey", Value: "customer"}, {Key: "offerThroughput", Value: 24000}}).Err(); err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := range 400 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "customer", Value: fmt.Sprintf("c%d", i%50)}})
	}
	if _, err := db.Collection("orders").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for range 200 { // one hot customer
		if err := db.Collection("orders").FindOne(ctx, bson.D{{Key: "customer", Value: "c7"}, {Key: "_id", Value: 7}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := newRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	withAuth := strings.Replace(con.URL, "http://", "http://root:pw@", 1)
	decode := func(out string) []collStats {
		t.Helper()
		var colls []collStats
		if err := json.Unmarshal([]byte(out), &colls); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		return colls
	}
	overWire, err := run("stats", "--uri", uri, "--db", "shop", "--json")
	if err != nil {
		t.Fatal(err)
	}
	overHTTP, err := run("stats", "--http", withAuth, "--db", "shop", "--json")
	if err != nil {
		t.Fatal(err)
	}
	w, h := decode(overWire), decode(overHTTP)
	if len(w) != 1 || len(h) != 1 || len(w[0].Partitions) != 4 || len(h[0].Partitions) != 4 {
		t.Fatalf("collections: wire %d, HTTP %d (want 1, 4 partitions each)", len(w), len(h))
	}
	for i := range w[0].Partitions {
		a, b := w[0].Partitions[i], h[0].Partitions[i]
		if a.ID != b.ID || a.DocumentCount != b.DocumentCount || a.DataBytes != b.DataBytes || a.LogicalCount != b.LogicalCount {
			t.Errorf("partition %d: wire %+v, HTTP %+v", i, a, b)
		}
	}
	if h[0].DocumentCount != 400 || h[0].Provisioned != 24000 {
		t.Errorf("HTTP: %d documents, %d RU/s", h[0].DocumentCount, h[0].Provisioned)
	}
	table, err := run("stats", "--http", withAuth, "--db", "shop", "--collection", "orders")
	if err != nil || !strings.Contains(table, "shop.orders  shard key {customer: hashed}, 24000 RU/s") {
		t.Errorf("stats --http table (%v):\n%s", err, table)
	}
	if out, err := run("stats", "--http", con.URL); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("stats --http without credentials: %v\n%s", err, out)
	}
	if out, err := run("stats", "--http", withAuth, "--db", "shop", "--collection", "none"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("stats --http of a missing collection: %v\n%s", err, out)
	}

	for _, src := range [][]string{{"--uri", uri}, {"--http", withAuth}} {
		out, err := run(append([]string{"top", "--count", "1", "--limit", "2"}, src...)...)
		if err != nil {
			t.Fatalf("top %v: %v", src, err)
		}
		t.Logf("top %v:\n%s", src[0], out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		// title, blank, header, 2 rows, blank, "(2 more partitions)"
		if len(lines) != 7 || !strings.Contains(lines[3], `"c7"`) || !strings.Contains(lines[6], "2 more partitions") {
			t.Errorf("top %v: the hottest partition (holding \"c7\") is not first:\n%s", src, out)
		}
	}
}
