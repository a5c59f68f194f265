package billing

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// field is the value of key among fields (nil: absent).
func field(fields []bson.E, key string) any {
	for _, f := range fields {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

func TestServerStats(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	a := testAccounts(cat, clk, Options{}, nil)
	p := onePartition(t, a, cat, 400)
	a.ChargeTo(nil, p, nil, 100)
	clk.advance(time.Second)
	a.ChargeTo(nil, p, nil, 50)
	want := map[string]any{
		"accounting": true, "rateLimiting": false, "serverSideRetry": false,
		"ruTotal": 153.0, "ruPartitions": 150.0, "ruCommands": 3.0,
		"ruLastSecond": 50.0, "ruLastMinute": 150.0, "requestCount": int64(2),
		"throttledRequests": int32(0), "wouldHaveBeenThrottledRequests": int32(0),
		"physicalPartitions": int64(1),
	}
	got := a.ServerStats(clk.now(), 3)
	for k, v := range want {
		if g := field(got, k); g != v {
			t.Errorf("%s = %v (%T), want %v (%T)", k, g, g, v, v)
		}
	}
	// A minute later the window is empty; totals stay.
	clk.advance(time.Minute)
	got = a.ServerStats(clk.now(), 3)
	if field(got, "ruLastMinute") != 0.0 || field(got, "ruTotal") != 153.0 {
		t.Errorf("a minute later: %v", got)
	}
	bypassed := testAccounts(cat, clk, Options{Bypass: true}, nil)
	if got := bypassed.ServerStats(clk.now(), 0); field(got, "accounting") != false || field(got, "physicalPartitions") != int64(0) {
		t.Errorf("accounting bypassed: %v", got)
	}
}

// Normalized RU consumption is the busiest second's share of the
// partition's RU/s, capped at 100; the uncapped ratio shows by how much
// a second went over.
func TestCollectionFieldsNormalizedRU(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	a := testAccounts(cat, clk, Options{}, nil)
	p := onePartition(t, a, cat, 400)
	u := a.Of(cat.Collection("d", "c"))
	a.ChargeTo(nil, p, nil, 200)
	f := a.CollectionFields(u, clk.now())
	if field(f, "normalizedRUConsumption") != 50.0 || field(f, "normalizedRUConsumptionUncapped") != 50.0 {
		t.Fatalf("200 of 400 RU/s: %v", f)
	}
	a.ChargeTo(nil, p, nil, 800)
	f = a.CollectionFields(u, clk.now())
	if field(f, "normalizedRUConsumption") != 100.0 || field(f, "normalizedRUConsumptionUncapped") != 250.0 {
		t.Fatalf("1000 of 400 RU/s: %v", f)
	}
	if field(f, "scaledThroughput") != nil {
		t.Fatalf("manual throughput reports scaledThroughput: %v", f)
	}
}

// shardKeys is a catalog whose logical partitions' shard-key values are
// the strings their keys end with.
type shardKeys struct{ *catalog }

func (s shardKeys) ShardKeyOf(c *store.Collection, lp store.LogicalPartition) (bsoncore.Value, bool, error) {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, string(lp.Key))}, true, nil
}

// The hot logical partitions are the shard-key values that consumed the
// most RU, with the hashed key they live at.
func TestPartitionFieldsHotKeys(t *testing.T) {
	clk, cat := newClock(), newCatalog()
	c := cat.create("d", "c", 400)
	c.ShardKey = "k"
	a := New(Config{Store: shardKeys{cat}, Now: clk.now, Effective: cat.effective})
	p := a.Of(c).Parts()[0]
	lp := func(point uint64, v string) []byte { return append(binary.BigEndian.AppendUint64(nil, point), v...) }
	a.ChargeTo(nil, p, lp(7, "a"), 30)
	a.ChargeTo(nil, p, lp(9, "b"), 10)
	a.ChargeTo(nil, p, lp(7, "a"), 5)
	f, err := a.PartitionFields(c, p, clk.now(), 1)
	if err != nil {
		t.Fatal(err)
	}
	hot, _ := field(f, "hotLogicalPartitions").(bson.A)
	if len(hot) != 1 {
		t.Fatalf("top 1: %v", hot)
	}
	want := bson.D{{Key: "shardKey", Value: bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, "a")}},
		{Key: "hashedKey", Value: shard.HashOf(7)}, {Key: "ru", Value: 35.0}, {Key: "maxError", Value: 0.0}}
	gotBytes, _ := bson.Marshal(hot[0])
	wantBytes, _ := bson.Marshal(want)
	if !bytes.Equal(gotBytes, wantBytes) {
		t.Fatalf("hottest: %v, want %v", hot[0], want)
	}
	if field(f, "ruTotal") != 45.0 || field(f, "requestCount") != int64(3) {
		t.Fatalf("fields %v", f)
	}
	if f, err := a.PartitionFields(c, nil, clk.now(), 1); f != nil || err != nil {
		t.Fatalf("no partition: %v, %v", f, err)
	}
}

// The throttle log reports each partition's new throttles once per pass.
func TestThrottleLog(t *testing.T) {
	for _, limiting := range []bool{true, false} {
		clk, cat := newClock(), newCatalog()
		a := testAccounts(cat, clk, Options{RateLimiting: limiting}, nil)
		p := onePartition(t, a, cat, 400)
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		var log ThrottleLog
		var m Meter
		a.ChargeTo(nil, p, nil, 400) // the bucket is empty, and the clock stands still
		over := func() { _ = a.Admit(context.Background(), &m, p, nil, 100) }
		over()
		log.Log(logger, a)
		log.Log(logger, a)
		over()
		over()
		log.Log(logger, a)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "count=1") || !strings.Contains(lines[1], "count=2") || !strings.Contains(lines[1], "total=3") {
			t.Fatalf("limiting %v: log\n%s\nwant one line with count=1, then one with count=2", limiting, buf.String())
		}
		if would := strings.Contains(lines[0], "would have"); would == limiting {
			t.Fatalf("limiting %v: %q", limiting, lines[0])
		}
		if field(a.CollectionFields(a.Of(cat.Collection("d", "c")), clk.now()), "throttledRequests") != map[bool]any{true: int32(3), false: int32(0)}[limiting] {
			t.Fatalf("limiting %v: throttledRequests", limiting)
		}
	}
}
