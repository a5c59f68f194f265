package integration

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestMongoshShardDistribution prints db.c.getShardDistribution() as a
// person sees it in mongosh, for a collection of 7 physical partitions
// (40,000 RU/s) holding 5,000 documents of 1,000 shard-key values, and
// checks what is printed: one shard, the exact document count, 7 chunks,
// 100 % of the data and documents on the shard.
func TestMongoshShardDistribution(t *testing.T) {
	requireMongosh(t)
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "shardKey", Value: "region"}, {Key: "offerThroughput", Value: 40000}})
	var docs []any
	for i := range 5000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "region", Value: fmt.Sprintf("r%d", i%1000)}, {Key: "pad", Value: strings.Repeat("x", i%50)}})
	}
	if _, err := db.Collection("c").InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	shard := shardID(t, client)
	out := mongoshPiped(t, s.URI(), "use "+db.Name()+"\ndb.c.getShardDistribution()\n")
	t.Logf("mongosh:\n%s", out)
	_, printed, found := strings.Cut(out, "db.c.getShardDistribution()")
	if !found {
		printed = out
	}
	if n := strings.Count(printed, "Shard "+shard+" at "); n != 1 {
		t.Errorf("the shard is printed %d times, want once", n)
	}
	totals := printed[strings.Index(printed, "Totals"):]
	for _, want := range []string{"docs: 5000,", "chunks: 7,", "'100 % data'", "'100 % docs in cluster'"} {
		if !strings.Contains(totals, want) {
			t.Errorf("the totals lack %q", want)
		}
	}
	perShard := regexp.MustCompile(`Shard ` + regexp.QuoteMeta(shard) + ` at \S+\n\{\n  data: '[^']+',\n  docs: 5000,\n  chunks: 7,\n`)
	if !perShard.MatchString(printed) {
		t.Errorf("the shard's figures are not 5000 documents in 7 chunks")
	}
	if strings.Contains(printed, "Long(") {
		t.Errorf("counts are printed as Long")
	}
}
