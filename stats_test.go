package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestStatsCommand runs `parsec stats` against a server holding a sharded
// collection whose documents sit mostly in one logical partition.
func TestStatsCommand(t *testing.T) {
	s := integration.StartServer(t, integration.ServerOptions{Dir: t.TempDir(),
		Partitions: engine.PartitionLimits{MaxBytes: 64 << 10, LogicalMaxBytes: 40 << 10}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(s.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "shop.orders"}, {Key: "key", Value: bson.D{{Key: "customer", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	orders := client.Database("shop").Collection("orders")
	var docs []any
	for i := range 600 {
		customer := fmt.Sprintf("c%d", i%40)
		if i%2 == 0 {
			customer = "whale"
		}
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "customer", Value: customer}, {Key: "pad", Value: strings.Repeat("x", 100)}})
	}
	if _, err := orders.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
		// the whale's logical partition fills up: expected
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) {
			t.Fatal(err)
		}
	}
	// Load after the splits the inserts caused: a scan of every partition
	// and point reads of the whale.
	cur, err := orders.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.Raw
	if err := cur.All(ctx, &all); err != nil {
		t.Fatal(err)
	}
	// 300 reads of 1 RU: over 70% of a partition's 200 RU/s even when
	// they land after a split that started the partition's per-second
	// history afresh (the split loop runs in the background).
	for range 300 {
		if err := orders.FindOne(ctx, bson.D{{Key: "_id", Value: 0}, {Key: "customer", Value: "whale"}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		cmd := newRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"stats", "--uri", s.URI()}, args...))
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("parsec stats %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	table := run("--db", "shop", "--collection", "orders")
	for _, want := range []string{"shop.orders", "shard key {customer: hashed}", "partition", "█", `"whale"`, "WARNING: skewed", "WARNING: logical partition \"whale\""} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	t.Logf("\n%s", table)

	// Request units: the inserts consumed far more than the collection's
	// 400 RU/s in a second (rate limiting is off), so its partitions are
	// hot, and the hottest logical partition is the whale.
	for _, want := range []string{"request units:", "RU/s", "normalized", "hottest logical partitions (by RU):", `"whale": `, "WARNING: hot: partition"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if hot := run("--db", "shop", "--hot"); !strings.Contains(hot, "shop.orders") {
		t.Errorf("--hot lists no partition of shop.orders:\n%s", hot)
	}
	if none := run("--db", "shop", "--hot=1000000"); !strings.Contains(none, "no hot partitions") {
		t.Errorf("--hot=1000000:\n%s", none)
	}

	var colls []collStats
	if err := json.Unmarshal([]byte(run("--json")), &colls); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range colls {
		if c.Database == "shop" && c.Collection == "orders" {
			found = true
			var sum int64
			for _, p := range c.Partitions {
				sum += p.DocumentCount
			}
			if sum != c.DocumentCount || c.PartitionCount < 2 || int(c.PartitionCount) != len(c.Partitions) {
				t.Errorf("JSON: %d partitions listing %d documents, collection %d", c.PartitionCount, sum, c.DocumentCount)
			}
			var ru float64
			for _, p := range c.Partitions {
				ru += p.RUTotal
			}
			// The collection's total counts the partitions that split.
			if c.RUTotal < 600*5 || ru > c.RUTotal || ru < 100 {
				t.Errorf("JSON: collection ruTotal %.2f, partitions %.2f, after 600 inserts and reads", c.RUTotal, ru)
			}
		}
	}
	if !found {
		t.Fatalf("JSON has no shop.orders: %+v", colls)
	}
	watched := run("--db", "shop", "--watch", "10ms", "--count", "2")
	if strings.Count(watched, "shop.orders") != 2 {
		t.Errorf("--watch --count 2 printed the table %d times", strings.Count(watched, "shop.orders"))
	}
}
