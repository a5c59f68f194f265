package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// analyzePartitionKey answers {customAction: "AnalyzePartitionKey",
// collection, key: k | keys: [k, ...], offerThroughput |
// autoScaleSettings, sampleSize}, where a candidate k is a path (Cosmos
// DB's partition key: hashed) or a key pattern as shardCollection takes
// it ({a: 1}, {a: 1, b: 1}, {a: "hashed", b: 1}): for each, what the
// collection would look like partitioned by it at that throughput
// (default: its own), placed as Parsec would place it (candidatekey.go):
//
//   - physicalPartitions: how many Cosmos DB would start with
//     (shard.InitialPartitions), or more if the data needs them;
//   - partitions: each one's documents and bytes (from the document
//     sample, scaled), its RU/s and their share of its budget (T / N); a
//     ranged key's partitions are key ranges split where the data is,
//     with their bounds as values (min, max);
//   - largestLogicalPartitions: against the logical-partition limit
//     (--logical-partition-max-bytes, 20 GB), with the growth seen (from
//     the ObjectId times of their documents, over at least an hour) and
//     the days left at it;
//   - workload: the collection's RU/s over the last minute, spread as the
//     sampled queries (configureQueryAnalyzer) would route under the key,
//     their charges scaled by the share of statements sampled; the RU/s
//     no sample explains (inserts, unsampled commands) spread like the
//     data, or for a ranged key whose values follow insertion order
//     (monotonicity, as analyzeShardKey measures it) all in the partition
//     new documents land in (the last one; the first for values that
//     shrink); fanOutPercent, the sampled statements that would reach
//     more than one partition;
//   - predictedThrottledPercent: the share of the RU/s above their
//     partition's budget, which Cosmos DB would refuse with 16500;
//   - verdict ("good", "fair", "poor") and advice in plain words.
func (e *Engine) analyzePartitionKey(ctx context.Context, req *request, a *customActionArgs) ([]byte, error) {
	if !a.hasCollection {
		return nil, missingField("customAction", "collection")
	}
	var names []string
	var keys []candidateKey
	// candidate adds one key: a path (Cosmos DB's partition key, hashed)
	// or a key pattern as shardCollection takes it ({a: 1}, {a: 1, b: 1},
	// {a: "hashed", b: 1}).
	candidate := func(field string, v bsoncore.Value) error {
		if doc, ok := v.DocumentOK(); ok {
			k, ce := parseCandidateKey(doc)
			if ce != nil {
				return ce
			}
			names = append(names, shellString(v))
			keys = append(keys, k)
			return nil
		}
		p, err := stringArg("AnalyzePartitionKey", field, v)
		if err != nil {
			return err
		}
		if _, err := shard.ParsePath(p); err != nil {
			return errorf(ErrBadValue, "%v", err)
		}
		names = append(names, p)
		keys = append(keys, candidateKey{fields: []candidateField{{path: p, hashed: true}},
			pattern: bsoncore.NewDocumentBuilder().AppendString(p, "hashed").Build()})
		return nil
	}
	size := int64(defaultKeySampleSize)
	for el := range value.All(req.body) {
		k, v := el.Key(), el.Value()
		switch k {
		case "key":
			if err := candidate(k, v); err != nil {
				return nil, err
			}
		case "keys":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, wrongType("AnalyzePartitionKey", k, v, "array")
			}
			for p := range value.All(arr) {
				if err := candidate("keys."+p.Key(), p.Value()); err != nil {
					return nil, err
				}
			}
		case "sampleSize":
			n, err := int64Arg("AnalyzePartitionKey", k, v)
			if err != nil {
				return nil, err
			}
			if n <= 0 {
				return nil, errorf(ErrBadValue, "'sampleSize' must be greater than 0, got %d", n)
			}
			size = n
		}
	}
	if len(keys) == 0 {
		return nil, errorf(ErrFailedToParse, "AnalyzePartitionKey needs key (a path or a key pattern) or keys (an array of them)")
	}
	c, ce := e.analyzableCollection(namespaceOf(req.db, a.collection))
	if ce != nil {
		return nil, ce
	}
	t := a.throughput
	if t.IsZero() {
		t, _ = e.effectiveThroughput(c)
	}
	w := e.recordedWorkload(c)
	candidates := bson.A{}
	for i, k := range keys {
		set, err := e.sampleKeys(ctx, c, k, size, 0)
		if err != nil {
			return nil, err
		}
		candidates = append(candidates, e.whatIf(c, names[i], k, t, set, w))
	}
	return okReply(
		bson.E{Key: "database", Value: c.DB},
		bson.E{Key: "collection", Value: c.Name},
		bson.E{Key: "candidates", Value: candidates},
	)
}

// workload is what the collection did recently.
type workload struct {
	ruPerSecond float64 // over the last minute, every partition's
	samples     []sampledQuery
	fraction    float64 // statements sampled / seen
	now         time.Time
}

func (e *Engine) recordedWorkload(c *store.Collection) workload {
	now := e.now()
	w := workload{now: now}
	if !e.ruOpts.Bypass {
		if u := e.units.Of(c); u != nil {
			var sum billing.Sum
			sum.AddPartitions(u, now)
			w.ruPerSecond = sum.Minute / 60
		}
	}
	w.samples, w.fraction = e.analyzer.samplesOf(c.Namespace(), c.UUID, now)
	return w
}

// whatIf is one candidate's answer.
func (e *Engine) whatIf(c *store.Collection, path string, k candidateKey, t ru.Throughput, set *keySampleSet, w workload) bson.D {
	m := e.layout(c, k, t, set)
	n := m.Len()
	budget := t.PartitionRate(n)
	spec := k.spec()
	scale := set.scale()

	// storage per partition, from the sample
	docs := make([]float64, n)
	bytesBy := make([]float64, n)
	var missing, sampledBytes float64
	for _, s := range set.samples {
		if s.missing {
			missing++
		}
		i := m.Lookup(s.point)
		docs[i]++
		bytesBy[i] += float64(s.size)
		sampledBytes += float64(s.size)
	}
	// Bytes scale by the collection's exact total, documents by its count.
	byteScale := 0.0
	if sampledBytes > 0 {
		byteScale = float64(set.bytes) / sampledBytes
	}

	// request units per partition: the sampled statements routed, the
	// rest like the data
	rw := replay(k, m, w.samples)
	ruBy := make([]float64, n)
	sampledRate := 0.0
	if w.fraction > 0 {
		var recent float64
		recentBy := make([]float64, n)
		for _, s := range w.samples {
			if w.now.Sub(s.at) > time.Minute {
				continue
			}
			recent += s.ru
			_, parts := k.route(s.filter, m)
			for _, p := range parts {
				recentBy[p] += s.ru / float64(len(parts))
			}
		}
		sampledRate = min(recent/w.fraction/60, w.ruPerSecond)
		if recent > 0 {
			for i := range ruBy {
				ruBy[i] = sampledRate * recentBy[i] / recent
			}
		}
	}
	// A ranged key whose values grow (or shrink) with insertion puts every
	// new document past the others: in the last (first) partition.
	coef, known := 0.0, false
	if k.ranged() {
		coef, known = rankCorrelation(set)
	}
	monotonic := known && math.Abs(coef) >= monotonicThreshold
	insertsAt := n - 1
	if coef < 0 {
		insertsAt = 0
	}
	rest := w.ruPerSecond - sampledRate
	for i := range ruBy {
		if monotonic {
			if i == insertsAt {
				ruBy[i] += rest
			}
			continue
		}
		if sampledBytes > 0 {
			ruBy[i] += rest * bytesBy[i] / sampledBytes
		} else {
			ruBy[i] += rest / float64(n)
		}
	}

	var over, maxShare float64
	parts := bson.A{}
	lpBy := make([]int64, n)
	values := countValues(set)
	for _, vc := range values {
		lpBy[m.Lookup(k.point(vc.val))]++
	}
	for i, p := range m.Partitions() {
		minIncl, maxExcl := "", "FF"
		if p.Min != 0 {
			minIncl = fmt.Sprintf("%016X", p.Min)
		}
		if next, ok := p.End(); ok {
			maxExcl = fmt.Sprintf("%016X", next)
		}
		share := 0.0
		if budget > 0 {
			share = 100 * ruBy[i] / budget
		}
		maxShare = max(maxShare, share)
		over += max(0, ruBy[i]-budget)
		dataShare := 0.0
		if sampledBytes > 0 {
			dataShare = 100 * bytesBy[i] / sampledBytes
		}
		bounds := bson.D{
			{Key: "partitionKeyRangeId", Value: p.IDString()},
			{Key: "minInclusive", Value: minIncl},
			{Key: "maxExclusive", Value: maxExcl},
		}
		if k.ranged() { // its chunk bounds, as values of the key
			maxDoc := spec.BoundDoc(0, true)
			if next, ok := p.End(); ok {
				maxDoc = spec.BoundDoc(next, false)
			}
			bounds = append(bounds, bson.E{Key: "min", Value: spec.BoundDoc(p.Min, false)}, bson.E{Key: "max", Value: maxDoc})
		}
		parts = append(parts, append(bounds, bson.D{
			{Key: "documentCount", Value: number(int64(math.Round(docs[i] * scale)))},
			{Key: "dataBytes", Value: number(int64(math.Round(bytesBy[i] * byteScale)))},
			{Key: "dataShare", Value: round2(dataShare)},
			{Key: "logicalPartitionCount", Value: number(lpBy[i])},
			{Key: "ruPerSecond", Value: round2(ruBy[i])},
			{Key: "budgetRUs", Value: round2(budget)},
			{Key: "budgetShare", Value: round2(share)},
		}...))
	}
	throttled := 0.0
	if w.ruPerSecond > 0 {
		throttled = 100 * over / w.ruPerSecond
	}

	// the largest logical partitions against the limit
	limit := e.limits.LogicalMaxBytes
	largest := bson.A{}
	var soonest float64 = -1
	var biggest float64
	for _, vc := range values[:min(len(values), mostCommonCount)] {
		b := float64(vc.bytes) * byteScale
		biggest = max(biggest, b)
		entry := bson.D{
			{Key: "shardKey", Value: lpKey(k, vc.val)},
			{Key: "documentCount", Value: number(int64(math.Round(float64(vc.docs) * scale)))},
			{Key: "dataBytes", Value: number(int64(math.Round(b)))},
		}
		if limit > 0 {
			entry = append(entry, bson.E{Key: "limitShare", Value: round2(100 * b / float64(limit))})
		}
		// Growth: the bytes written over the span its documents' ObjectIds
		// cover, when that is at least an hour (shorter says nothing).
		if span := vc.latest - vc.earliest; vc.earliest > 0 && span >= time.Hour.Milliseconds() {
			perDay := b / (float64(span) / float64(24*time.Hour/time.Millisecond))
			entry = append(entry, bson.E{Key: "growthBytesPerDay", Value: math.Round(perDay)})
			if limit > 0 && perDay > 0 {
				days := math.Max(0, (float64(limit)-b)/perDay)
				entry = append(entry, bson.E{Key: "daysToLimit", Value: round2(days)})
				if soonest < 0 || days < soonest {
					soonest = days
				}
			}
		}
		largest = append(largest, entry)
	}

	fanOut := percent(rw.fanOut, rw.targets)
	distinct := int64(len(values))
	topShare := 0.0
	if len(values) > 0 && len(set.samples) > 0 {
		topShare = 100 * float64(values[0].docs) / float64(len(set.samples))
	}
	missingDocs := int64(math.Round(missing * scale))

	// the verdict
	var severe, moderate []string
	if missing > 0 {
		severe = append(severe, fmt.Sprintf("%d of %d documents (%.1f%%) have no %s: a collection partitioned by it refuses them (ShardKeyNotFound)",
			missingDocs, set.docs, 100*missing/float64(max(len(set.samples), 1)), path))
	}
	if limit > 0 && biggest >= float64(limit) {
		severe = append(severe, fmt.Sprintf("the largest logical partition already holds %s, over the %s logical-partition limit", humanSize(biggest), humanBytes(limit)))
	} else if soonest >= 0 && soonest < 365 {
		severe = append(severe, fmt.Sprintf("at the growth seen, the largest logical partition reaches the %s limit in %.0f days", humanBytes(limit), soonest))
	}
	if monotonic {
		where, when := "last", "grow"
		if coef < 0 {
			where, when = "first", "shrink"
		}
		severe = append(severe, fmt.Sprintf("its values %s as documents are inserted (monotonic, correlation %.2f): placed by range, every new document lands in the %s partition, which takes all the inserts while the others take none; hash the key or lead it with a field that does not follow insertion order",
			when, coef, where))
	}
	if throttled >= 1 {
		severe = append(severe, fmt.Sprintf("the busiest partition would need %.0f%% of its %.0f RU/s: expect 16500 (TooManyRequests) for about %.0f%% of the request units", maxShare, budget, throttled))
	}
	if set.docs > 0 && distinct < int64(max(10*n, 100)) && len(set.samples) > 0 {
		moderate = append(moderate, fmt.Sprintf("only %d distinct values: few logical partitions to spread over", distinct))
	}
	if topShare >= 20 && distinct > 1 {
		moderate = append(moderate, fmt.Sprintf("one value holds %.0f%% of the documents: a hot logical partition", topShare))
	}
	if n > 1 && sampledBytes > 0 {
		mean := sampledBytes / float64(n)
		hi := 0.0
		for _, b := range bytesBy {
			hi = max(hi, b)
		}
		if hi > 1.5*mean {
			moderate = append(moderate, fmt.Sprintf("storage is skewed: the largest partition holds %.0f%% more than the mean", 100*(hi/mean-1)))
		}
	}
	if rw.targets > 0 && fanOut > 50 {
		moderate = append(moderate, fmt.Sprintf("%.0f%% of the sampled queries would fan out to several partitions", fanOut))
	}
	verdict, advice := "good", fmt.Sprintf("%s is a good partition key at %s: data and request units spread evenly", path, throughputString(t))
	reasons := append(append([]string{}, severe...), moderate...)
	switch {
	case len(severe) > 0:
		verdict, advice = "poor", fmt.Sprintf("%s is a poor partition key at %s: %s", path, throughputString(t), strings.Join(reasons, "; "))
	case len(moderate) > 0:
		verdict, advice = "fair", fmt.Sprintf("%s is a fair partition key at %s: %s", path, throughputString(t), strings.Join(reasons, "; "))
	}
	if rw.targets == 0 {
		reasons = append(reasons, "no sampled queries: run configureQueryAnalyzer to judge the routing of reads and writes")
	}
	reasonsA := bson.A{}
	for _, r := range reasons {
		reasonsA = append(reasonsA, r)
	}
	source := "storage"
	if rw.targets > 0 {
		source = "sampledQueries"
	}
	out := bson.D{
		{Key: "key", Value: path},
		{Key: "shardKey", Value: bson.Raw(k.pattern)},
		{Key: "placement", Value: placement(k)},
		{Key: "monotonicity", Value: monotonicity(k, set)},
	}
	out = append(out, throughputFields(t)...)
	return append(out,
		bson.E{Key: "physicalPartitions", Value: int32(n)},
		bson.E{Key: "partitionBudgetRUs", Value: round2(budget)},
		bson.E{Key: "documentCount", Value: number(set.docs)},
		bson.E{Key: "dataBytes", Value: number(set.bytes)},
		bson.E{Key: "numDocsSampled", Value: number(int64(len(set.samples)))},
		bson.E{Key: "numDocsMissingShardKey", Value: number(missingDocs)},
		bson.E{Key: "numDistinctValues", Value: number(distinct)},
		bson.E{Key: "partitions", Value: parts},
		bson.E{Key: "logicalPartitionMaxBytes", Value: number(limit)},
		bson.E{Key: "largestLogicalPartitions", Value: largest},
		bson.E{Key: "workload", Value: bson.D{
			{Key: "source", Value: source},
			{Key: "ruPerSecond", Value: round2(w.ruPerSecond)},
			{Key: "sampledQueries", Value: number(rw.targets)},
			{Key: "singlePartitionPercent", Value: round2(100 - fanOut*boolFloat(rw.targets > 0) - 100*boolFloat(rw.targets == 0))},
			{Key: "fanOutPercent", Value: round2(fanOut)},
		}},
		bson.E{Key: "maxBudgetShare", Value: round2(maxShare)},
		bson.E{Key: "predictedThrottledPercent", Value: round2(throttled)},
		bson.E{Key: "verdict", Value: verdict},
		bson.E{Key: "advice", Value: advice},
		bson.E{Key: "reasons", Value: reasonsA},
	)
}

// placement names how the key places documents.
func placement(k candidateKey) string {
	if k.ranged() {
		return "range"
	}
	return "hash"
}

// lpKey is a logical partition's key value as the reply shows it: the
// value of a one-field key, the document of a compound key's values.
func lpKey(k candidateKey, kv bsoncore.Document) any {
	if len(k.fields) == 1 {
		return rawValue(kv.Index(0).Value())
	}
	return bson.Raw(kv)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// humanSize writes an estimated size in a round unit.
func humanSize(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f bytes", b)
}
