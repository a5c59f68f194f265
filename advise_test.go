package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestAdviseCommand runs `parsec advise` with two keys side by side: one
// of many values, one that a tenth of the documents lack.
func TestAdviseCommand(t *testing.T) {
	s := integration.StartServer(t, integration.ServerOptions{Dir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(s.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	var docs []any
	for i := range 1000 {
		d := bson.D{{Key: "_id", Value: i}, {Key: "customer", Value: fmt.Sprintf("c%d", i)}}
		if i%10 != 0 {
			d = append(d, bson.E{Key: "region", Value: fmt.Sprintf("r%d", i%3)})
		}
		docs = append(docs, d)
	}
	if _, err := client.Database("shop").Collection("orders").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"advise", "--uri", s.URI(), "--db", "shop", "--collection", "orders",
		"--key", "customer", "--key", "region", "--throughput", "20000"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	header := strings.Fields(strings.SplitN(text, "\n", 2)[0])
	if len(header) != 3 || header[1] != "customer" || header[2] != "region" {
		t.Fatalf("header %q in\n%s", header, text)
	}
	for _, want := range []string{"physical partitions  4", "documents missing the key", "customer is a good partition key", "region is a poor partition key", "100 of 1000 documents"} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(want), " ")) {
			t.Fatalf("missing %q in\n%s", want, text)
		}
	}

	cmd = newRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"advise", "--uri", s.URI(), "--db", "shop", "--collection", "orders"})
	if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "--key") {
		t.Fatalf("no key: %v", err)
	}

	// A key pattern is placed by range: _id grows with insertion.
	out.Reset()
	cmd = newRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"advise", "--uri", s.URI(), "--db", "shop", "--collection", "orders",
		"--key", `{"_id": 1}`, "--throughput", "20000", "--json"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	text = strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{`"placement": "range"`, `"type": "monotonic"`, `"verdict": "poor"`, "every new document lands in the last partition"} {
		if !strings.Contains(text, want) {
			t.Fatalf("missing %q in\n%s", want, out.String())
		}
	}
}
