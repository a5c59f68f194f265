package integration

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// analyzeShardKey, configureQueryAnalyzer, $listSampledQueries and the
// AnalyzePartitionKey what-if, checked against figures computed from the
// generated data and workload.

// insertAll inserts docs in batches.
func insertAll(t *testing.T, coll *mongo.Collection, docs []any) {
	t.Helper()
	for i := 0; i < len(docs); i += 1000 {
		if _, err := coll.InsertMany(testCtx(t), docs[i:min(i+1000, len(docs))]); err != nil {
			t.Fatal(err)
		}
	}
}

// analyze runs analyzeShardKey with extra options.
func analyze(t *testing.T, client *mongo.Client, ns string, key bson.D, extra ...bson.E) bson.Raw {
	t.Helper()
	cmd := append(bson.D{{Key: "analyzeShardKey", Value: ns}, {Key: "key", Value: key}}, extra...)
	return runOK(t, client.Database("admin"), cmd)
}

// TestAnalyzeShardKeyCharacteristics: uniform, Zipf-skewed and monotonic
// fields of one collection, every document sampled, against their counts.
func TestAnalyzeShardKeyCharacteristics(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	coll := db.Collection("c")
	const n = 6000
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.5, 1, 199)
	uniform := map[int]int{}
	skewed := map[uint64]int{}
	missing := 0
	var docs []any
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		u := rng.IntN(100)
		z := zipf.Uint64()
		uniform[u]++
		skewed[z]++
		d := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "u", Value: int32(u)}, {Key: "z", Value: int64(z)},
			{Key: "ts", Value: base.Add(time.Duration(i) * time.Second)},
			{Key: "rnd", Value: base.Add(time.Duration(rng.IntN(1e6)) * time.Second)}}
		if i%4 != 0 {
			d = append(d, bson.E{Key: "sparse", Value: int32(i)})
		} else {
			missing++
		}
		docs = append(docs, d)
	}
	insertAll(t, coll, docs)
	ns := db.Name() + ".c"
	all := bson.E{Key: "sampleSize", Value: n}

	res := analyze(t, client, ns, bson.D{{Key: "u", Value: 1}}, all, bson.E{Key: "readWriteDistribution", Value: false})
	kc := mustLookup(t, res, "keyCharacteristics").Document()
	if got := intOf(t, kc.Lookup("numDocsTotal")); got != n {
		t.Fatalf("numDocsTotal %d, want %d", got, n)
	}
	if got := intOf(t, kc.Lookup("numDocsSampled")); got != n {
		t.Fatalf("numDocsSampled %d, want %d", got, n)
	}
	if got := intOf(t, kc.Lookup("numDistinctValues")); got != int64(len(uniform)) {
		t.Fatalf("numDistinctValues %d, want %d", got, len(uniform))
	}
	if kc.Lookup("isUnique").Boolean() {
		t.Fatal("u is not unique")
	}
	mcv, _ := kc.Lookup("mostCommonValues").Array().Values()
	if len(mcv) != 5 {
		t.Fatalf("mostCommonValues: %v", mcv)
	}
	for _, v := range mcv {
		d := v.Document()
		val := d.Lookup("value", "u").Int32()
		if got := intOf(t, d.Lookup("frequency")); got != int64(uniform[int(val)]) {
			t.Fatalf("frequency of %d: %d, want %d", val, got, uniform[int(val)])
		}
	}
	if typ := kc.Lookup("monotonicity", "type").StringValue(); typ != "not monotonic" {
		t.Fatalf("u monotonicity %q", typ)
	}
	if avg := intOf(t, kc.Lookup("avgDocSizeBytes")); avg < 50 || avg > 200 {
		t.Fatalf("avgDocSizeBytes %d", avg)
	}

	// Zipf: the most common value and its frequency are the computed ones.
	res = analyze(t, client, ns, bson.D{{Key: "z", Value: "hashed"}}, all, bson.E{Key: "readWriteDistribution", Value: false})
	kc = mustLookup(t, res, "keyCharacteristics").Document()
	top, topN := uint64(0), 0
	for v, c := range skewed {
		if c > topN {
			top, topN = v, c
		}
	}
	first := kc.Lookup("mostCommonValues").Array().Index(0).Document()
	if got := first.Lookup("value", "z").Int64(); uint64(got) != top {
		t.Fatalf("most common z %d, want %d", got, top)
	}
	if got := intOf(t, first.Lookup("frequency")); got != int64(topN) {
		t.Fatalf("frequency of z=%d: %d, want %d", top, got, topN)
	}
	if got := intOf(t, kc.Lookup("numDistinctValues")); got != int64(len(skewed)) {
		t.Fatalf("z distinct %d, want %d", got, len(skewed))
	}
	if typ := kc.Lookup("monotonicity", "type").StringValue(); typ != "not monotonic" {
		t.Fatalf("hashed key monotonicity %q", typ)
	}

	// Timestamps growing with insertion are monotonic; random ones not.
	res = analyze(t, client, ns, bson.D{{Key: "ts", Value: 1}}, all, bson.E{Key: "readWriteDistribution", Value: false})
	mono := mustLookup(t, res, "keyCharacteristics", "monotonicity").Document()
	if typ := mono.Lookup("type").StringValue(); typ != "monotonic" {
		t.Fatalf("ts monotonicity %v", mono)
	}
	if c := floatOf(t, mono.Lookup("recordIdCorrelationCoefficient")); c < 0.99 {
		t.Fatalf("ts correlation %v", c)
	}
	res = analyze(t, client, ns, bson.D{{Key: "rnd", Value: 1}}, all, bson.E{Key: "readWriteDistribution", Value: false})
	mono = mustLookup(t, res, "keyCharacteristics", "monotonicity").Document()
	if typ := mono.Lookup("type").StringValue(); typ != "not monotonic" {
		t.Fatalf("rnd monotonicity %v", mono)
	}

	// _id is unique; a field missing from a quarter of the documents is
	// counted; a compound key counts its pairs.
	res = analyze(t, client, ns, bson.D{{Key: "_id", Value: 1}}, all, bson.E{Key: "readWriteDistribution", Value: false})
	if !mustLookup(t, res, "keyCharacteristics", "isUnique").Boolean() {
		t.Fatal("_id should be unique")
	}
	res = analyze(t, client, ns, bson.D{{Key: "sparse", Value: 1}}, all, bson.E{Key: "readWriteDistribution", Value: false})
	if got := intOf(t, mustLookup(t, res, "keyCharacteristics", "numDocsMissingShardKey")); got != int64(missing) {
		t.Fatalf("numDocsMissingShardKey %d, want %d", got, missing)
	}
	pairs := map[[2]int64]bool{}
	for _, d := range docs {
		dd := d.(bson.D)
		pairs[[2]int64{int64(dd[1].Value.(int32)), dd[2].Value.(int64)}] = true
	}
	res = analyze(t, client, ns, bson.D{{Key: "u", Value: 1}, {Key: "z", Value: 1}}, all, bson.E{Key: "readWriteDistribution", Value: false})
	if got := intOf(t, mustLookup(t, res, "keyCharacteristics", "numDistinctValues")); got != int64(len(pairs)) {
		t.Fatalf("compound distinct %d, want %d", got, len(pairs))
	}

	// A sample of a tenth: frequencies scaled to the whole, close to the truth.
	res = analyze(t, client, ns, bson.D{{Key: "u", Value: 1}}, bson.E{Key: "sampleRate", Value: 0.1}, bson.E{Key: "readWriteDistribution", Value: false})
	kc = mustLookup(t, res, "keyCharacteristics").Document()
	if got := intOf(t, kc.Lookup("numDocsSampled")); got != n/10 {
		t.Fatalf("sampled %d, want %d", got, n/10)
	}
	if got := intOf(t, kc.Lookup("numDistinctValues")); got < 90 || got > 100 {
		t.Fatalf("distinct values in a tenth: %d of 100", got)
	}
	mcv, _ = kc.Lookup("mostCommonValues").Array().Values()
	for _, v := range mcv {
		if f := intOf(t, v.Document().Lookup("frequency")); f%10 != 0 || f == 0 {
			t.Fatalf("frequency %d is not a sampled count scaled by 10", f)
		}
	}
}

// TestAnalyzeShardKeyReadWriteDistribution replays a known mix of
// targeted and scatter queries.
func TestAnalyzeShardKeyReadWriteDistribution(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	ctx := testCtx(t)
	db := client.Database(dbName(t))
	ns := db.Name() + ".c"
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"}, {Key: "offerThroughput", Value: 10000}})
	coll := db.Collection("c")
	var docs []any
	for i := range 500 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "user", Value: fmt.Sprintf("u%03d", i%50)}, {Key: "n", Value: i}})
	}
	insertAll(t, coll, docs)
	admin := client.Database("admin")
	raw := runOK(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: 50}})
	if got := floatOf(t, mustLookup(t, raw, "newConfiguration", "samplesPerSecond")); got != 50 {
		t.Fatalf("newConfiguration: %v", raw)
	}
	wantAbsent(t, raw, "oldConfiguration")

	// 10 reads by user, 5 by two users, 5 by n: 20 reads. 4 updates by
	// user (one of them changing it), 2 multi deletes by n.
	for i := range 10 {
		if err := coll.FindOne(ctx, bson.D{{Key: "user", Value: fmt.Sprintf("u%03d", i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if _, err := coll.CountDocuments(ctx, bson.D{{Key: "user", Value: bson.D{{Key: "$in", Value: bson.A{"u001", "u002"}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if _, err := coll.Distinct(ctx, "user", bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: i}}}}).Raw(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "user", Value: fmt.Sprintf("u%03d", i)}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "user", Value: "u010"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "user", Value: "u011"}}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := coll.DeleteMany(ctx, bson.D{{Key: "n", Value: 1000 + i}}); err != nil {
			t.Fatal(err)
		}
	}

	sampled := runCursor(t, admin, bson.D{{Key: "aggregate", Value: 1},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$listSampledQueries", Value: bson.D{{Key: "namespace", Value: ns}}}}}},
		{Key: "cursor", Value: bson.D{}}}).batch()
	if len(sampled) != 26 {
		t.Fatalf("$listSampledQueries: %d samples, want 26", len(sampled))
	}
	kinds := map[string]int{}
	for _, d := range sampled {
		kinds[d.Lookup("cmdName").StringValue()]++
		if d.Lookup("ns").StringValue() != ns {
			t.Fatalf("sample of another namespace: %v", d)
		}
		for _, f := range []string{"_id", "collectionUuid", "cmd", "expireAt"} {
			mustLookup(t, d, f)
		}
	}
	if kinds["find"] != 10 || kinds["aggregate"] != 5 || kinds["distinct"] != 5 || kinds["update"] != 4 || kinds["delete"] != 2 {
		t.Fatalf("sampled commands %v", kinds) // CountDocuments is an aggregate
	}

	res := analyze(t, client, ns, bson.D{{Key: "user", Value: "hashed"}}, bson.E{Key: "keyCharacteristics", Value: false})
	wantAbsent(t, res, "keyCharacteristics")
	rd := mustLookup(t, res, "readDistribution").Document()
	if got := intOf(t, rd.Lookup("sampleSize", "total")); got != 20 {
		t.Fatalf("read sample size %d: %v", got, rd)
	}
	// 10,000 RU/s start with 2 partitions: "u001" and "u002" may share one.
	single, multi, scatter := floatOf(t, rd.Lookup("percentageOfSingleShardReads")), floatOf(t, rd.Lookup("percentageOfMultiShardReads")), floatOf(t, rd.Lookup("percentageOfScatterGatherReads"))
	if scatter != 25 || math.Abs(single+multi-75) > 1e-9 || single < 50 {
		t.Fatalf("reads single %v multi %v scatter %v", single, multi, scatter)
	}
	byRange, _ := rd.Lookup("numReadsByRange").Array().Values()
	if len(byRange) != 2 {
		t.Fatalf("numReadsByRange %v", byRange)
	}
	wd := mustLookup(t, res, "writeDistribution").Document()
	if got := intOf(t, wd.Lookup("sampleSize", "total")); got != 6 {
		t.Fatalf("write sample size %d", got)
	}
	if got := floatOf(t, wd.Lookup("percentageOfShardKeyUpdates")); math.Abs(got-100.0/6) > 1e-9 {
		t.Fatalf("shard key updates %v", got)
	}
	if got := floatOf(t, wd.Lookup("percentageOfSingleShardWrites")); math.Abs(got-400.0/6) > 1e-9 {
		t.Fatalf("single-shard writes %v", got)
	}
	if got := floatOf(t, wd.Lookup("percentageOfMultiWritesWithoutShardKey")); math.Abs(got-200.0/6) > 1e-9 {
		t.Fatalf("multi writes without shard key %v", got)
	}

	// Under {n: 1}, the ranges on n are targeted multi-shard reads and the
	// rest scatter-gather.
	res = analyze(t, client, ns, bson.D{{Key: "n", Value: 1}}, bson.E{Key: "keyCharacteristics", Value: false})
	if got := floatOf(t, mustLookup(t, res, "readDistribution", "percentageOfMultiShardReads")); got != 25 {
		t.Fatalf("ranged key: multi-shard reads %v", got)
	}

	raw = runOK(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "off"}})
	if mustLookup(t, raw, "newConfiguration", "mode").StringValue() != "off" || mustLookup(t, raw, "oldConfiguration", "mode").StringValue() != "full" {
		t.Fatalf("off: %v", raw)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "user", Value: "u001"}}).Err(); err != nil {
		t.Fatal(err)
	}
	res = analyze(t, client, ns, bson.D{{Key: "user", Value: "hashed"}}, bson.E{Key: "keyCharacteristics", Value: false})
	if got := intOf(t, mustLookup(t, res, "readDistribution", "sampleSize", "total")); got != 20 {
		t.Fatalf("sampling went on after mode off: %d", got)
	}
}

// TestAnalyzeShardKeyErrors: MongoDB's codes for bad input.
func TestAnalyzeShardKeyErrors(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database(dbName(t))
	admin := client.Database("admin")
	ns := db.Name() + ".c"
	if _, err := db.Collection("c").InsertOne(testCtx(t), bson.D{{Key: "a", Value: 1}, {Key: "b", Value: bson.A{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []bson.D{{}, {{Key: "", Value: 1}}, {{Key: "a", Value: "2d"}}, {{Key: "a", Value: 0}},
		{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}}, {{Key: "a.", Value: 1}}, {{Key: "$a", Value: 1}}} {
		runFail(t, admin, bson.D{{Key: "analyzeShardKey", Value: ns}, {Key: "key", Value: key}}, 2, "BadValue")
	}
	runFail(t, admin, bson.D{{Key: "analyzeShardKey", Value: ns}, {Key: "key", Value: bson.D{{Key: "b", Value: 1}}}}, 2, "BadValue")
	runFail(t, admin, bson.D{{Key: "analyzeShardKey", Value: db.Name() + ".none"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}}, 26, "NamespaceNotFound")
	runFail(t, admin, bson.D{{Key: "analyzeShardKey", Value: "admin.system.users"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}}, 20, "IllegalOperation")
	runFail(t, admin, bson.D{{Key: "analyzeShardKey", Value: ns}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}},
		{Key: "sampleRate", Value: 0.5}, {Key: "sampleSize", Value: 10}}, 72, "InvalidOptions")
	runFail(t, admin, bson.D{{Key: "analyzeShardKey", Value: ns}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "sampleRate", Value: 2}}, 2, "BadValue")
	runFail(t, db, bson.D{{Key: "analyzeShardKey", Value: ns}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}}, 13, "Unauthorized")

	runFail(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: db.Name() + ".none"}, {Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: 1}}, 26, "NamespaceNotFound")
	runFail(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: 0}}, 72, "InvalidOptions")
	runFail(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: 51}}, 72, "InvalidOptions")
	runFail(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "off"}, {Key: "samplesPerSecond", Value: 1}}, 72, "InvalidOptions")
	runFail(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "full"}}, 72, "InvalidOptions")
	runFail(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "sometimes"}, {Key: "samplesPerSecond", Value: 1}}, 2, "BadValue")
	runFail(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: "local.oplog.rs"}, {Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: 1}}, 20, "IllegalOperation")

	runFail(t, db, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listSampledQueries", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}, 73, "InvalidNamespace")
	runFail(t, db, bson.D{{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: "none"}, {Key: "key", Value: "a"}}, 26, "NamespaceNotFound")
	runFail(t, db, bson.D{{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: "c"}, {Key: "key", Value: "a..b"}}, 2, "BadValue")
	runFail(t, db, bson.D{{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: "c"}, {Key: "key", Value: "b"}}, 2, "BadValue")
}

// TestAnalyzePartitionKeyWhatIf compares a good and a bad key side by
// side, then shards a copy of the collection by each and checks the
// predicted storage per partition against GetPartitionStats.
func TestAnalyzePartitionKeyWhatIf(t *testing.T) {
	s := startTestServer(t)
	client := newTestClient(t, s)
	ctx := testCtx(t)
	db := client.Database(dbName(t))
	ns := db.Name() + ".c"
	coll := db.Collection("c")
	rng := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rng, 2, 1, 9)
	var docs []any
	for i := range 4000 {
		d := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "user", Value: fmt.Sprintf("user%04d", rng.IntN(2000))},
			{Key: "tenant", Value: fmt.Sprintf("t%d", zipf.Uint64())}, {Key: "pad", Value: strings.Repeat("x", 50+rng.IntN(150))}}
		if i%10 == 0 {
			d = d[:len(d)-1] // some documents have no pad: an unsharded collection takes them
		}
		docs = append(docs, d)
	}
	insertAll(t, coll, docs)
	runOK(t, client.Database("admin"), bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: 50}})
	for i := range 30 {
		if err := coll.FindOne(ctx, bson.D{{Key: "user", Value: fmt.Sprintf("user%04d", i)}}).Err(); err != nil && err != mongo.ErrNoDocuments {
			t.Fatal(err)
		}
	}

	raw := runOK(t, db, bson.D{{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: "c"},
		{Key: "keys", Value: bson.A{"user", "tenant", "pad"}}, {Key: "offerThroughput", Value: 40000}})
	cands, _ := mustLookup(t, raw, "candidates").Array().Values()
	if len(cands) != 3 {
		t.Fatalf("candidates: %v", raw)
	}
	good, bad, sparse := cands[0].Document(), cands[1].Document(), cands[2].Document()
	if got := intOf(t, good.Lookup("physicalPartitions")); got != 7 {
		t.Fatalf("40,000 RU/s: %d partitions, want 7", got)
	}
	if v := good.Lookup("verdict").StringValue(); v != "good" {
		t.Fatalf("user: %s: %s", v, good.Lookup("advice"))
	}
	if v := bad.Lookup("verdict").StringValue(); v == "good" {
		t.Fatalf("tenant: %s: %s", v, bad.Lookup("advice"))
	}
	if v := sparse.Lookup("verdict").StringValue(); v != "poor" || intOf(t, sparse.Lookup("numDocsMissingShardKey")) != 400 {
		t.Fatalf("pad: %s, missing %v: %s", v, sparse.Lookup("numDocsMissingShardKey"), sparse.Lookup("advice"))
	}
	if got := floatOf(t, good.Lookup("workload", "fanOutPercent")); got != 0 {
		t.Fatalf("reads by user fan out under user: %v", got)
	}
	if got := floatOf(t, bad.Lookup("workload", "fanOutPercent")); got != 100 {
		t.Fatalf("reads by user under tenant: fan-out %v", got)
	}

	for _, cand := range []bson.Raw{good, bad} {
		key := cand.Lookup("key").StringValue()
		target := "by_" + key
		runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: target},
			{Key: "shardKey", Value: key}, {Key: "offerThroughput", Value: 40000}})
		insertAll(t, db.Collection(target), docs)
		stats := runOK(t, db, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: target}})
		actual, _ := mustLookup(t, stats, "partitions").Array().Values()
		predicted, _ := cand.Lookup("partitions").Array().Values()
		if len(actual) != len(predicted) {
			t.Fatalf("%s: %d partitions, predicted %d", key, len(actual), len(predicted))
		}
		for i := range actual {
			a, p := actual[i].Document(), predicted[i].Document()
			if a.Lookup("minInclusive").StringValue() != p.Lookup("minInclusive").StringValue() {
				t.Fatalf("%s partition %d: range %v, predicted %v", key, i, a.Lookup("minInclusive"), p.Lookup("minInclusive"))
			}
			ab, pb := float64(intOf(t, a.Lookup("dataBytes"))), float64(intOf(t, p.Lookup("dataBytes")))
			if math.Abs(ab-pb) > 0.1*math.Max(ab, 1) {
				t.Fatalf("%s partition %d: %v bytes, predicted %v", key, i, ab, pb)
			}
			if ad, pd := intOf(t, a.Lookup("documentCount")), intOf(t, p.Lookup("documentCount")); ad != pd {
				t.Fatalf("%s partition %d: %d documents, predicted %d", key, i, ad, pd)
			}
		}
	}
}

// TestAnalyzePartitionKeyMeasured checks the what-if's prediction against
// what Parsec measures: for a hashed candidate and a ranged one whose
// values grow with insertion, a copy of the collection is sharded by the
// candidate (shardCollection of the copied data, as a user would), the
// storage of each partition compared with the predicted one (within
// 10 %), then the workload the prediction saw (the sampled reads and
// updates, and inserts continuing the sequence) replayed against the
// copy, and each partition's share of the request units it charged
// (GetPartitionStats' ruTotal, before and after) compared with its
// predicted share of the RU/s (within 10 percentage points).
func TestAnalyzePartitionKeyMeasured(t *testing.T) {
	clock := NewClock()
	s := StartServer(t, ServerOptions{Dir: t.TempDir(), Clock: clock})
	client := newTestClient(t, s)
	ctx := testCtx(t)
	db := client.Database(dbName(t))
	admin := client.Database("admin")
	ns := db.Name() + ".c"
	const throughput = 40000
	runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"}, {Key: "offerThroughput", Value: 10000}})
	coll := db.Collection("c")
	rng := rand.New(rand.NewPCG(5, 6))
	seq := 0
	batch := func(n int) []any {
		var docs []any
		for range n {
			docs = append(docs, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "seq", Value: int64(seq)},
				{Key: "user", Value: fmt.Sprintf("user%04d", rng.IntN(2000))}, {Key: "n", Value: 0},
				{Key: "pad", Value: strings.Repeat("x", 50+rng.IntN(150))}})
			seq++
		}
		return docs
	}
	insertAll(t, coll, batch(4000))
	// The load leaves the last minute, whose request units the what-if
	// spreads: what it sees is the workload alone.
	clock.Advance(2 * time.Minute)

	// The workload: inserts, reads and updates by user, every statement
	// sampled (fewer than samplesPerSecond).
	runOK(t, admin, bson.D{{Key: "configureQueryAnalyzer", Value: ns}, {Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: 50}})
	var users []string
	for range 40 {
		users = append(users, fmt.Sprintf("user%04d", rng.IntN(2000)))
	}
	workload := func(c *mongo.Collection) {
		insertAll(t, c, batch(1000))
		for _, u := range users[:30] {
			if err := c.FindOne(ctx, bson.D{{Key: "user", Value: u}}).Err(); err != nil && err != mongo.ErrNoDocuments {
				t.Fatal(err)
			}
		}
		for _, u := range users[30:] {
			if _, err := c.UpdateOne(ctx, bson.D{{Key: "user", Value: u}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	workload(coll)

	// The hashed candidate as Cosmos DB would create the collection, at
	// 40,000 RU/s (7 partitions); the ranged ones as shardCollection
	// splits the unsharded collection that holds the data, at its 10,000
	// RU/s (2 partitions, split where the data is).
	whatIf := func(throughput int, keys ...any) []bson.Raw {
		raw := runOK(t, db, bson.D{{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: "c"},
			{Key: "keys", Value: bson.A(keys)}, {Key: "offerThroughput", Value: throughput}})
		vals, _ := mustLookup(t, raw, "candidates").Array().Values()
		if len(vals) != len(keys) {
			t.Fatalf("candidates: %v", raw)
		}
		var out []bson.Raw
		for _, v := range vals {
			out = append(out, v.Document())
		}
		return out
	}
	hashed := whatIf(throughput, "user")[0]
	rangedCands := whatIf(10000, bson.D{{Key: "seq", Value: 1}}, bson.D{{Key: "user", Value: 1}, {Key: "seq", Value: 1}})
	ranged := rangedCands[0]
	if got := intOf(t, hashed.Lookup("workload", "sampledQueries")); got != 40 {
		t.Fatalf("sampled queries %d, want 40", got)
	}
	if p := ranged.Lookup("placement").StringValue(); p != "range" {
		t.Fatalf("{seq: 1} placed by %q", p)
	}
	if typ := ranged.Lookup("monotonicity", "type").StringValue(); typ != "monotonic" {
		t.Fatalf("{seq: 1}: %v", ranged.Lookup("monotonicity"))
	}
	if v, advice := ranged.Lookup("verdict").StringValue(), ranged.Lookup("advice").StringValue(); v != "poor" || !strings.Contains(advice, "every new document lands in the last partition") {
		t.Fatalf("{seq: 1}: %s: %s", v, advice)
	}
	if typ := rangedCands[1].Lookup("monotonicity", "type").StringValue(); typ != "not monotonic" {
		t.Fatalf("{user: 1, seq: 1}: %v", rangedCands[1].Lookup("monotonicity"))
	}

	var all []any
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &all); err != nil {
		t.Fatal(err)
	}
	for i, cand := range []bson.Raw{hashed, ranged, rangedCands[1]} {
		name := cand.Lookup("key").String()
		target := fmt.Sprintf("copy%d", i)
		if i == 0 {
			// Cosmos DB's way: a new collection with its partition key.
			runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: target},
				{Key: "shardKey", Value: cand.Lookup("key").StringValue()}, {Key: "offerThroughput", Value: throughput}})
			insertAll(t, db.Collection(target), all)
		} else {
			// MongoDB's: shard the collection that holds the data.
			runOK(t, db, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: target}, {Key: "offerThroughput", Value: 10000}})
			insertAll(t, db.Collection(target), all)
			runOK(t, admin, bson.D{{Key: "shardCollection", Value: db.Name() + "." + target}, {Key: "key", Value: cand.Lookup("shardKey").Document()}})
		}
		stats := func() []bson.RawValue {
			raw := runOK(t, db, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: target}})
			parts, _ := mustLookup(t, raw, "partitions").Array().Values()
			return parts
		}
		before := stats()
		predicted, _ := cand.Lookup("partitions").Array().Values()
		if len(before) != len(predicted) {
			t.Fatalf("%s: %d partitions, predicted %d", name, len(before), len(predicted))
		}
		for j := range before {
			a, p := before[j].Document(), predicted[j].Document()
			ab, pb := float64(intOf(t, a.Lookup("dataBytes"))), float64(intOf(t, p.Lookup("dataBytes")))
			if math.Abs(ab-pb) > 0.1*math.Max(ab, 1) {
				t.Errorf("%s partition %d: %v bytes, predicted %v", name, j, ab, pb)
			}
		}

		workload(db.Collection(target))
		after := stats()
		if len(after) != len(before) {
			t.Fatalf("%s: the copy split during the workload", name)
		}
		measured := make([]float64, len(after))
		var measuredSum, predictedSum float64
		for j := range after {
			measured[j] = floatOf(t, after[j].Document().Lookup("ruTotal")) - floatOf(t, before[j].Document().Lookup("ruTotal"))
			measuredSum += measured[j]
			predictedSum += floatOf(t, predicted[j].Document().Lookup("ruPerSecond"))
		}
		if measuredSum <= 0 || predictedSum <= 0 {
			t.Fatalf("%s: measured %v RU, predicted %v RU/s", name, measuredSum, predictedSum)
		}
		for j := range after {
			m := 100 * measured[j] / measuredSum
			p := 100 * floatOf(t, predicted[j].Document().Lookup("ruPerSecond")) / predictedSum
			t.Logf("%s partition %d: %.1f%% of the RU measured, %.1f%% predicted", name, j, m, p)
			if math.Abs(m-p) > 10 {
				t.Errorf("%s partition %d: %.1f%% of the request units, predicted %.1f%%", name, j, m, p)
			}
		}
	}
}
