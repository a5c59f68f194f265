package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Every view of a sharded collection's size — collStats, $collStats,
// dbStats, config.chunks and GetPartitionStats — reads the same exact
// counters, so they agree to the document and the byte; and the
// shard-key index is in the catalog as MongoDB lists it.

// shardID is the one shard listShards names.
func shardID(t *testing.T, client *mongo.Client) string {
	t.Helper()
	raw := runOK(t, client.Database("admin"), bson.D{{Key: "listShards", Value: 1}})
	shards, _ := mustLookup(t, raw, "shards").Array().Values()
	if len(shards) != 1 {
		t.Fatalf("listShards: %v", raw)
	}
	return shards[0].Document().Lookup("_id").StringValue()
}

// TestPartitionViewsAgree fills a collection of 7 physical partitions
// (40,000 RU/s) with 5,000 documents of 1,000 shard-key values and
// checks each view against the documents written and against the
// others, partition by partition.
func TestPartitionViewsAgree(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	ctx := testCtx(t)
	db := client.Database(dbName(t))
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "shardKey", Value: "region"}, {Key: "offerThroughput", Value: 40000}})
	coll := db.Collection("c")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	const docs, regions = 5000, 1000
	var batch []any
	var dataBytes int64
	for i := range docs {
		d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "region", Value: fmt.Sprintf("r%04d", i%regions)},
			{Key: "n", Value: int32(i % 37)}, {Key: "pad", Value: strings.Repeat("p", i%200)}}
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		dataBytes += int64(len(raw))
		batch = append(batch, d)
	}
	if _, err := coll.InsertMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	shard := shardID(t, client)

	ps := getPartitionStats(t, db, "c")
	if ps.PartitionCount < 4 || len(ps.Partitions) != int(ps.PartitionCount) {
		t.Fatalf("%d partitions listed of %d, want at least 4", len(ps.Partitions), ps.PartitionCount)
	}
	if ps.DocumentCount != docs || ps.DataBytes != dataBytes || ps.LogicalCount != regions {
		t.Errorf("GetPartitionStats: %d documents, %d bytes, %d logical partitions; want %d, %d, %d",
			ps.DocumentCount, ps.DataBytes, ps.LogicalCount, docs, dataBytes, regions)
	}
	var sumDocs, sumData, sumIndex int64
	for _, p := range ps.Partitions {
		if p.DocumentCount == 0 {
			t.Errorf("partition %s holds no documents of 1,000 shard-key values", p.ID)
		}
		sumDocs += p.DocumentCount
		sumData += p.DataBytes
		sumIndex += p.IndexBytes
	}
	if sumDocs != docs || sumData != dataBytes || sumIndex != ps.IndexBytes {
		t.Errorf("partitions add up to %d documents, %d data bytes, %d index bytes; collection %d, %d, %d",
			sumDocs, sumData, sumIndex, ps.DocumentCount, ps.DataBytes, ps.IndexBytes)
	}

	// collStats: the whole collection, its indexes' sizes adding up.
	cs := runOK(t, db, bson.D{{Key: "collStats", Value: "c"}})
	num := func(r bson.Raw, path ...string) int64 { return intOf(t, mustLookup(t, r, path...)) }
	if num(cs, "count") != docs || num(cs, "size") != dataBytes || num(cs, "totalIndexSize") != ps.IndexBytes ||
		num(cs, "nchunks") != int64(ps.PartitionCount) || !mustLookup(t, cs, "sharded").Boolean() {
		t.Errorf("collStats disagrees with GetPartitionStats (%d docs, %d bytes, %d index bytes, %d partitions): %v",
			ps.DocumentCount, ps.DataBytes, ps.IndexBytes, ps.PartitionCount, cs)
	}
	sizes := mustLookup(t, cs, "indexSizes").Document()
	if got := keysOf(t, bson.Raw(sizes)); !slices.Equal(got, []string{"_id_", "region_hashed", "n_1"}) || num(cs, "nindexes") != 3 {
		t.Errorf("collStats indexSizes %v, nindexes %d", sizes, num(cs, "nindexes"))
	}
	var idxSum int64
	for _, name := range []string{"_id_", "region_hashed", "n_1"} {
		n := num(bson.Raw(sizes), name)
		if n <= 0 {
			t.Errorf("indexSizes.%s = %d", name, n)
		}
		idxSum += n
	}
	if idxSum != num(cs, "totalIndexSize") {
		t.Errorf("indexSizes add up to %d, totalIndexSize %d", idxSum, num(cs, "totalIndexSize"))
	}

	// $collStats: one document, for the one shard, with the same figures.
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{}}, {Key: "count", Value: bson.D{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var entries []bson.Raw
	if err := cur.All(ctx, &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("$collStats returned %d documents, want one for the one shard: %v", len(entries), entries)
	}
	e := entries[0]
	if got := mustLookup(t, e, "shard").StringValue(); got != shard {
		t.Errorf("$collStats shard %q, listShards %q", got, shard)
	}
	if num(e, "count") != docs || num(e, "storageStats", "count") != docs || num(e, "storageStats", "size") != dataBytes ||
		num(e, "storageStats", "totalIndexSize") != ps.IndexBytes || num(e, "storageStats", "nindexes") != 3 {
		t.Errorf("$collStats disagrees with collStats: %v", e)
	}
	if !sameNumbers(mustLookup(t, e, "storageStats", "indexSizes").Document(), sizes) {
		t.Errorf("$collStats indexSizes %v, collStats %v", mustLookup(t, e, "storageStats", "indexSizes"), sizes)
	}

	// dbStats: the database holds only this collection.
	ds := runOK(t, db, bson.D{{Key: "dbStats", Value: 1}})
	if num(ds, "objects") != docs || num(ds, "dataSize") != dataBytes || num(ds, "indexSize") != ps.IndexBytes || num(ds, "indexes") != 3 {
		t.Errorf("dbStats disagrees: %v", ds)
	}

	// config.chunks: one chunk per partition on the one shard, with the
	// partition's exact figures.
	ns := db.Name() + ".c"
	chunks := findAll(t, client.Database("config").Collection("chunks"), bson.D{{Key: "ns", Value: ns}}, options.Find())
	if len(chunks) != len(ps.Partitions) {
		t.Fatalf("config.chunks has %d chunks of %s, GetPartitionStats %d partitions", len(chunks), ns, len(ps.Partitions))
	}
	byID := map[string]partitionDoc{}
	for _, p := range ps.Partitions {
		byID[p.ID] = p
	}
	for _, ch := range chunks {
		p, ok := byID[mustLookup(t, ch, "partitionKeyRangeId").StringValue()]
		if !ok {
			t.Errorf("chunk of no partition: %v", ch)
			continue
		}
		if mustLookup(t, ch, "shard").StringValue() != shard || num(ch, "documentCount") != p.DocumentCount ||
			num(ch, "dataBytes") != p.DataBytes || num(ch, "indexBytes") != p.IndexBytes {
			t.Errorf("chunk %v, partition %+v", ch, p)
		}
	}
	n, err := client.Database("config").Collection("chunks").CountDocuments(ctx, bson.D{{Key: "ns", Value: ns}, {Key: "shard", Value: shard}})
	if err != nil || n != int64(ps.PartitionCount) {
		t.Errorf("config.chunks counts %d chunks on %s (%v), want %d", n, shard, err, ps.PartitionCount)
	}
}

// sameNumbers compares two documents field by field as numbers or bytes.
func sameNumbers(a, b bson.Raw) bool {
	ea, _ := a.Elements()
	eb, _ := b.Elements()
	if len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if ea[i].Key() != eb[i].Key() {
			return false
		}
		x, okx := ea[i].Value().AsInt64OK()
		y, oky := eb[i].Value().AsInt64OK()
		if okx != oky || x != y || (!okx && !ea[i].Value().Equal(eb[i].Value())) {
			return false
		}
	}
	return true
}

// TestShardKeyIndex: a sharded collection — by shardCollection or by
// Cosmos DB's CreateCollection — lists its {<key>: "hashed"} index in
// every catalog view, keeps it through dropIndexes, and takes a request
// to create it as already done.
func TestShardKeyIndex(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	admin := client.Database("admin")

	cases := []struct {
		name, path string
		shard      func(t *testing.T, db *mongo.Database)
	}{
		{"shardCollection", "region", func(t *testing.T, db *mongo.Database) {
			runOK(t, admin, bson.D{{Key: "shardCollection", Value: db.Name() + ".c"}, {Key: "key", Value: bson.D{{Key: "region", Value: "hashed"}}}})
		}},
		{"CreateCollection", "device.id", func(t *testing.T, db *mongo.Database) {
			runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
				{Key: "shardKey", Value: "device.id"}, {Key: "offerThroughput", Value: 24000}})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			db := client.Database(dbName(t))
			tc.shard(t, db)
			coll := db.Collection("c")
			skName := tc.path + "_hashed"
			skKey := bson.D{{Key: tc.path, Value: "hashed"}}
			var docs []any
			for i := range 300 {
				key := fmt.Sprintf("k%d", i%30)
				var d bson.D
				if tc.path == "region" {
					d = bson.D{{Key: "_id", Value: i}, {Key: "region", Value: key}, {Key: "x", Value: i}}
				} else {
					d = bson.D{{Key: "_id", Value: i}, {Key: "device", Value: bson.D{{Key: "id", Value: key}}}, {Key: "x", Value: i}}
				}
				docs = append(docs, d)
			}
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
				t.Fatal(err)
			}
			names := func() []string {
				specs, err := coll.Indexes().ListSpecifications(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, s := range specs {
					out = append(out, s.Name)
				}
				return out
			}
			want := []string{"_id_", skName, "x_1"}
			if got := names(); !slices.Equal(got, want) {
				t.Fatalf("listIndexes %v, want %v", got, want)
			}
			cur, err := coll.Indexes().List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var raw []bson.Raw
			if err := cur.All(ctx, &raw); err != nil {
				t.Fatal(err)
			}
			wantSpec, _ := bson.Marshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: skKey}, {Key: "name", Value: skName}})
			if string(raw[1]) != string(wantSpec) {
				t.Errorf("shard-key index spec %v, want %v", raw[1], bson.Raw(wantSpec))
			}

			// $indexStats, collStats, dbStats and config.collections.
			cur, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$indexStats", Value: bson.D{}}}})
			if err != nil {
				t.Fatal(err)
			}
			var stats []bson.Raw
			if err := cur.All(ctx, &stats); err != nil {
				t.Fatal(err)
			}
			var statNames []string
			for _, st := range stats {
				statNames = append(statNames, mustLookup(t, st, "name").StringValue())
			}
			if !slices.Equal(statNames, want) {
				t.Errorf("$indexStats lists %v, want %v", statNames, want)
			}
			cs := runOK(t, db, bson.D{{Key: "collStats", Value: "c"}})
			if n := intOf(t, mustLookup(t, cs, "nindexes")); n != 3 || intOf(t, mustLookup(t, cs, "indexSizes", skName)) <= 0 {
				t.Errorf("collStats nindexes %d, indexSizes %v", n, mustLookup(t, cs, "indexSizes"))
			}
			if n := intOf(t, mustLookup(t, runOK(t, db, bson.D{{Key: "dbStats", Value: 1}}), "indexes")); n != 3 {
				t.Errorf("dbStats indexes %d, want 3", n)
			}
			var cfg bson.Raw
			if err := client.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: db.Name() + ".c"}}).Decode(&cfg); err != nil {
				t.Fatal(err)
			}
			if got := mustLookup(t, cfg, "key").Document(); string(got) != string(mustMarshal(t, skKey)) {
				t.Errorf("config.collections key %v", got)
			}

			// dropIndexes refuses it by name, by key and in a list, and
			// drops nothing; "*" leaves it.
			for _, index := range []any{skName, skKey, bson.A{"x_1", skName}} {
				runFail(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: index}}, 370, "CannotDropShardKeyIndex")
			}
			if got := names(); !slices.Equal(got, want) {
				t.Errorf("after refused drops: %v, want %v", got, want)
			}
			runOK(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "*"}})
			if got := names(); !slices.Equal(got, []string{"_id_", skName}) {
				t.Errorf(`after dropIndexes "*": %v`, got)
			}

			// createIndexes of its key: nothing to do; a clash is refused.
			r := runOK(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: skKey}, {Key: "name", Value: skName}}}}})
			if intOf(t, mustLookup(t, r, "numIndexesBefore")) != 2 || intOf(t, mustLookup(t, r, "numIndexesAfter")) != 2 || mustLookup(t, r, "note").StringValue() != "all indexes already exist" {
				t.Errorf("createIndexes of the shard-key index: %v", r)
			}
			if name, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: skKey}); err != nil || name != skName {
				t.Errorf("createIndex(%v) = %q, %v", skKey, name, err)
			}
			runFail(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: skKey}, {Key: "name", Value: "other"}}}}}, 85, "IndexOptionsConflict")
			runFail(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: skKey}, {Key: "sparse", Value: true}}}}}, 85, "IndexOptionsConflict")
			runFail(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: skName}}}}}, 86, "IndexKeySpecsConflict")
			// with another index in the same command: that one is built
			r = runOK(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
				bson.D{{Key: "key", Value: skKey}, {Key: "name", Value: skName}},
				bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: -1}}}, {Key: "name", Value: "x_-1"}},
			}}})
			if intOf(t, mustLookup(t, r, "numIndexesAfter")) != 3 {
				t.Errorf("createIndexes of both: %v", r)
			}
			if got := names(); !slices.Equal(got, []string{"_id_", skName, "x_-1"}) {
				t.Errorf("after createIndexes: %v", got)
			}
			if n := countDocs(t, coll); n != 300 {
				t.Errorf("%d documents", n)
			}
		})
	}

	t.Run("unsharded", func(t *testing.T) {
		t.Parallel()
		db := client.Database(dbName(t))
		if _, err := db.Collection("u").InsertOne(testCtx(t), bson.D{{Key: "region", Value: "a"}}); err != nil {
			t.Fatal(err)
		}
		specs, err := db.Collection("u").Indexes().ListSpecifications(testCtx(t))
		if err != nil || len(specs) != 1 || specs[0].Name != "_id_" {
			t.Errorf("an unsharded collection lists %+v (%v)", specs, err)
		}
		runFail(t, db, bson.D{{Key: "dropIndexes", Value: "u"}, {Key: "index", Value: ""}}, 27, "IndexNotFound")
		runFail(t, db, bson.D{{Key: "dropIndexes", Value: "u"}, {Key: "index", Value: "region_hashed"}}, 27, "IndexNotFound")
	})
}
