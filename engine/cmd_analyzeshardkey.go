package engine

import (
	"bytes"
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdAnalyzeShardKey answers MongoDB 7.0's analyzeShardKey for any
// candidate key of a sharded or unsharded collection:
//
//	{analyzeShardKey: "db.coll", key: {...}, keyCharacteristics: true,
//	 readWriteDistribution: true, sampleRate: r | sampleSize: n}
//
// keyCharacteristics come from a sample of the documents (sampleKeys):
// numDocsTotal and avgDocSizeBytes are the collection's exact counters,
// the rest is measured on the sample (frequencies scaled to the whole);
// numDocsMissingShardKey, Parsec's addition, counts the documents without
// a field of the key (MongoDB counts them as null values; a collection
// sharded by the key would refuse them). Monotonicity correlates the
// order of the key's values with the order documents were inserted in,
// which Parsec, having no record ids, reads from their _id (ObjectIds
// grow with time): recordIdCorrelationCoefficient is Spearman's rank
// correlation, "monotonic" from 0.7 on (MongoDB's threshold); a key whose
// first field is hashed is "not monotonic", as in MongoDB.
//
// readWriteDistribution replays the queries configureQueryAnalyzer
// sampled against the key (candidateKey.route), with "shard" read as a
// physical partition of the key's layout at the collection's throughput
// (for a ranged key, key ranges split where the sampled documents are,
// as shardCollection would split them); numReadsByRange and
// numWritesByRange count per physical partition.
// Without sampled reads (writes) readDistribution (writeDistribution) is
// only its zero sampleSize.
func (e *Engine) cmdAnalyzeShardKey(ctx context.Context, req *request) ([]byte, error) {
	v := req.body.Index(0).Value()
	ns, err := stringArg(req.name, req.name, v)
	if err != nil {
		return nil, err
	}
	var keyDoc bsoncore.Document
	characteristics, distribution := true, true
	var size int64
	var rate float64
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "key":
			keyDoc, err = docArg(req.name, k, v)
		case "keyCharacteristics":
			characteristics, err = boolArg(req.name, k, v)
		case "readWriteDistribution":
			distribution, err = boolArg(req.name, k, v)
		case "sampleRate":
			f, ok := numberFloat(v)
			switch {
			case !ok:
				err = wrongType(req.name, k, v, "double")
			case f <= 0 || f > 1:
				err = errorf(ErrBadValue, "'sampleRate' must be greater than 0 and at most 1, got %v", f)
			}
			rate = f
		case "sampleSize":
			if size, err = int64Arg(req.name, k, v); err == nil && size <= 0 {
				err = errorf(ErrBadValue, "'sampleSize' must be greater than 0, got %d", size)
			}
		default:
			if !genericFields[k] {
				err = unknownField(req.name, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if keyDoc == nil {
		return nil, missingField(req.name, "key")
	}
	if rate > 0 && size > 0 {
		return nil, errorf(ErrInvalidOptions, "Cannot specify both 'sampleRate' and 'sampleSize'")
	}
	if !characteristics && !distribution {
		return nil, errorf(ErrInvalidOptions, "Cannot skip analyzing all metrics: keyCharacteristics and readWriteDistribution are both false")
	}
	key, ce := parseCandidateKey(keyDoc)
	if ce != nil {
		return nil, ce
	}
	c, ce := e.analyzableCollection(ns)
	if ce != nil {
		return nil, ce
	}
	if size == 0 && rate == 0 {
		size = defaultKeySampleSize
	}
	var fields []bson.E
	var set *keySampleSet
	if characteristics {
		if set, err = e.sampleKeys(ctx, c, key, size, rate); err != nil {
			return nil, err
		}
		fields = append(fields, bson.E{Key: "keyCharacteristics", Value: e.keyCharacteristics(c, key, set)})
	}
	if distribution {
		if set == nil && key.ranged() {
			// a ranged key's partitions split where the data is
			if set, err = e.sampleKeys(ctx, c, key, size, rate); err != nil {
				return nil, err
			}
		}
		if set == nil {
			counts, err := e.store.Counts(c)
			if err != nil {
				return nil, err
			}
			set = &keySampleSet{docs: counts.Docs, bytes: counts.Bytes, step: 1}
		}
		t, _ := e.effectiveThroughput(c)
		m := e.layout(c, key, t, set)
		samples, _ := e.analyzer.samplesOf(c.Namespace(), c.UUID, e.now())
		rw := replay(key, m, samples)
		fields = append(fields, bson.E{Key: "readDistribution", Value: rw.readDistribution()},
			bson.E{Key: "writeDistribution", Value: rw.writeDistribution()})
	}
	return okReply(fields...)
}

// analyzableCollection is the collection of namespace ns that
// analyzeShardKey and configureQueryAnalyzer may look at: not in admin,
// local or config, not a system collection (IllegalOperation), existing
// (NamespaceNotFound).
func (e *Engine) analyzableCollection(ns string) (*store.Collection, *CommandError) {
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || coll == "" {
		return nil, errorf(ErrInvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	if err := validateCollName(db, coll); err != nil && !strings.HasPrefix(coll, "system.") {
		return nil, toCommandError(err)
	}
	switch {
	case db == "admin" || db == "local" || db == "config":
		return nil, errorf(ErrIllegalOperation, "Cannot run against a collection in the %s database: %s", db, ns)
	case strings.HasPrefix(coll, "system."):
		return nil, errorf(ErrIllegalOperation, "Cannot run against an internal collection: %s", ns)
	}
	c := e.store.Collection(db, coll)
	if c == nil {
		return nil, errorf(ErrNamespaceNotFound, "Cannot analyze a shard key for a non-existing collection %s", ns)
	}
	return c, nil
}

// mostCommonCount is how many most common values keyCharacteristics
// lists (analyzeShardKeyNumMostCommonValues).
const mostCommonCount = 5

// monotonicThreshold is the rank correlation from which a key is
// monotonic (analyzeShardKeyMonotonicityCorrelationCoefficientThreshold).
const monotonicThreshold = 0.7

// valueCount is one key value of a sample with its documents.
type valueCount struct {
	enc              []byte
	val              bsoncore.Document
	docs             int64
	bytes            int64
	missing          bool
	earliest, latest int64 // creation times (Unix ms) of its ObjectId _ids; 0: none
}

// countValues groups a sample by key value, largest first (by
// documents, then bytes, then value).
func countValues(set *keySampleSet) []*valueCount {
	by := map[string]*valueCount{}
	for i := range set.samples {
		s := &set.samples[i]
		vc := by[string(s.enc)]
		if vc == nil {
			vc = &valueCount{enc: s.enc, val: s.val, missing: s.missing}
			by[string(s.enc)] = vc
		}
		vc.docs++
		vc.bytes += int64(s.size)
		if !s.created.IsZero() {
			ms := s.created.UnixMilli()
			if vc.earliest == 0 || ms < vc.earliest {
				vc.earliest = ms
			}
			vc.latest = max(vc.latest, ms)
		}
	}
	out := make([]*valueCount, 0, len(by))
	for _, vc := range by {
		out = append(out, vc)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.docs != b.docs {
			return a.docs > b.docs
		}
		if a.bytes != b.bytes {
			return a.bytes > b.bytes
		}
		return bytes.Compare(a.enc, b.enc) < 0
	})
	return out
}

// keyCharacteristics is the keyCharacteristics document.
func (e *Engine) keyCharacteristics(c *store.Collection, k candidateKey, set *keySampleSet) bson.D {
	values := countValues(set)
	scale := set.scale()
	var missing int64
	for _, s := range set.samples {
		if s.missing {
			missing++
		}
	}
	common := bson.A{}
	for _, vc := range values[:min(len(values), mostCommonCount)] {
		common = append(common, bson.D{{Key: "value", Value: bson.Raw(vc.val)}, {Key: "frequency", Value: number(int64(math.Round(float64(vc.docs) * scale)))}})
	}
	avg := int64(0)
	if set.docs > 0 {
		avg = set.bytes / set.docs
	}
	return bson.D{
		{Key: "numDocsTotal", Value: number(set.docs)},
		{Key: "numOrphanDocs", Value: int32(0)},
		{Key: "avgDocSizeBytes", Value: number(avg)},
		{Key: "numDocsSampled", Value: number(int64(len(set.samples)))},
		{Key: "isUnique", Value: e.uniqueKey(c, k)},
		{Key: "numDistinctValues", Value: number(int64(len(values)))},
		{Key: "mostCommonValues", Value: common},
		{Key: "monotonicity", Value: monotonicity(k, set)},
		{Key: "numDocsMissingShardKey", Value: number(int64(math.Round(float64(missing) * scale)))},
	}
}

// uniqueKey reports whether a unique index has exactly the key's fields
// (the _id index for {_id: 1}), as MongoDB's isUnique does.
func (e *Engine) uniqueKey(c *store.Collection, k candidateKey) bool {
	if path, ok := k.single(); ok && path == "_id" && !k.fields[0].hashed {
		return true
	}
	for _, ix := range c.Indexes {
		if !ix.Unique || len(ix.Fields) != len(k.fields) || len(ix.Partial) > 0 {
			continue
		}
		same := true
		for i, f := range ix.Fields {
			same = same && f.Path == k.fields[i].path && !k.fields[i].hashed
		}
		if same {
			return true
		}
	}
	return false
}

// monotonicity is Spearman's rank correlation between the documents'
// insertion order (their _id order) and their key values' order.
func monotonicity(k candidateKey, set *keySampleSet) bson.D {
	if k.fields[0].hashed {
		return bson.D{{Key: "type", Value: "not monotonic"}}
	}
	coef, ok := rankCorrelation(set)
	if !ok {
		return bson.D{{Key: "type", Value: "unknown"}}
	}
	kind := "not monotonic"
	if math.Abs(coef) >= monotonicThreshold {
		kind = "monotonic"
	}
	return bson.D{{Key: "recordIdCorrelationCoefficient", Value: coef}, {Key: "type", Value: kind}}
}

// rankCorrelation is Spearman's rank correlation between the sampled
// documents' _id order and their key values' order; ok is false with
// fewer than two samples.
func rankCorrelation(set *keySampleSet) (float64, bool) {
	n := len(set.samples)
	if n < 2 {
		return 0, false
	}
	byID := make([]int, n)
	for i := range byID {
		byID[i] = i
	}
	sort.SliceStable(byID, func(a, b int) bool {
		return bytes.Compare(set.samples[byID[a]].id, set.samples[byID[b]].id) < 0
	})
	idRank := make([]float64, n)
	for r, i := range byID {
		idRank[i] = float64(r)
	}
	keyRank := averageRanks(n, func(a, b int) int { return bytes.Compare(set.samples[a].enc, set.samples[b].enc) })
	return pearson(idRank, keyRank), true
}

// averageRanks ranks n items by cmp, ties sharing their average rank.
func averageRanks(n int, cmp func(a, b int) int) []float64 {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, cmp)
	ranks := make([]float64, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && cmp(order[i], order[j]) == 0 {
			j++
		}
		avg := float64(i+j-1) / 2
		for _, o := range order[i:j] {
			ranks[o] = avg
		}
		i = j
	}
	return ranks
}

// pearson is the correlation of x and y; 0 when either is constant.
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// rwReplay is the sampled queries replayed against a candidate key.
type rwReplay struct {
	partitions int
	// reads by command and route
	reads       map[string]int64
	readRoutes  [3]int64
	readsBy     []int64
	writes      map[string]int64
	writeRoutes [3]int64
	writesBy    []int64
	keyUpdates  int64
	singleNoKey int64 // non-multi writes without the full key
	multiNoKey  int64 // multi writes without the full key
	// request units per partition (the samples' charges, a fanned-out
	// statement's split evenly over its partitions) and fan-out counts
	ruBy            []float64
	ruTotal         float64
	fanOut, targets int64
	recent          float64 // request units of the samples of the last minute
}

// replay classifies every sample under key k with layout m.
func replay(k candidateKey, m *shard.Map, samples []sampledQuery) *rwReplay {
	n := m.Len()
	rw := &rwReplay{partitions: n, reads: map[string]int64{}, writes: map[string]int64{},
		readsBy: make([]int64, n), writesBy: make([]int64, n), ruBy: make([]float64, n)}
	for _, s := range samples {
		kind, parts := k.route(s.filter, m)
		write := s.cmdName == "update" || s.cmdName == "delete" || s.cmdName == "findAndModify"
		by := rw.readsBy
		if write {
			by = rw.writesBy
			rw.writes[s.cmdName]++
			rw.writeRoutes[kind]++
			if k.updatesKey(s) {
				rw.keyUpdates++
			}
			if kind != routeSingle || len(k.fields) == 0 {
				if s.multi {
					rw.multiNoKey++
				} else if kind == routeScatter || kind == routeMulti {
					rw.singleNoKey++
				}
			}
		} else {
			rw.reads[s.cmdName]++
			rw.readRoutes[kind]++
		}
		for _, p := range parts {
			by[p]++
			rw.ruBy[p] += s.ru / float64(len(parts))
		}
		rw.ruTotal += s.ru
		rw.targets++
		if len(parts) > 1 {
			rw.fanOut++
		}
	}
	return rw
}

func percent(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

func counts(by []int64) bson.A {
	out := make(bson.A, len(by))
	for i, n := range by {
		out[i] = number(n)
	}
	return out
}

func (rw *rwReplay) readDistribution() bson.D {
	total := rw.readRoutes[0] + rw.readRoutes[1] + rw.readRoutes[2]
	d := bson.D{{Key: "sampleSize", Value: bson.D{
		{Key: "total", Value: number(total)},
		{Key: "find", Value: number(rw.reads["find"])},
		{Key: "aggregate", Value: number(rw.reads["aggregate"])},
		{Key: "count", Value: number(rw.reads["count"])},
		{Key: "distinct", Value: number(rw.reads["distinct"])},
	}}}
	if total == 0 {
		return d
	}
	return append(d,
		bson.E{Key: "percentageOfSingleShardReads", Value: percent(rw.readRoutes[routeSingle], total)},
		bson.E{Key: "percentageOfMultiShardReads", Value: percent(rw.readRoutes[routeMulti], total)},
		bson.E{Key: "percentageOfScatterGatherReads", Value: percent(rw.readRoutes[routeScatter], total)},
		bson.E{Key: "numReadsByRange", Value: counts(rw.readsBy)},
	)
}

func (rw *rwReplay) writeDistribution() bson.D {
	total := rw.writeRoutes[0] + rw.writeRoutes[1] + rw.writeRoutes[2]
	d := bson.D{{Key: "sampleSize", Value: bson.D{
		{Key: "total", Value: number(total)},
		{Key: "update", Value: number(rw.writes["update"])},
		{Key: "delete", Value: number(rw.writes["delete"])},
		{Key: "findAndModify", Value: number(rw.writes["findAndModify"])},
	}}}
	if total == 0 {
		return d
	}
	return append(d,
		bson.E{Key: "percentageOfSingleShardWrites", Value: percent(rw.writeRoutes[routeSingle], total)},
		bson.E{Key: "percentageOfMultiShardWrites", Value: percent(rw.writeRoutes[routeMulti], total)},
		bson.E{Key: "percentageOfScatterGatherWrites", Value: percent(rw.writeRoutes[routeScatter], total)},
		bson.E{Key: "numWritesByRange", Value: counts(rw.writesBy)},
		bson.E{Key: "percentageOfShardKeyUpdates", Value: percent(rw.keyUpdates, total)},
		bson.E{Key: "percentageOfSingleWritesWithoutShardKey", Value: percent(rw.singleNoKey, total)},
		bson.E{Key: "percentageOfMultiWritesWithoutShardKey", Value: percent(rw.multiNoKey, total)},
	)
}
