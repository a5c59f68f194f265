package engine

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Candidate shard keys, as analyzeShardKey and the AnalyzePartitionKey
// what-if take them: any key, existing or not, of one or more fields,
// each ranged (1) or hashed (at most one). A candidate is evaluated as
// Parsec would place it:
//
//   - a key whose first field is ranged ({a: 1}, {a: 1, b: 1}) by value:
//     each document at the RangePoint of its first field's value, the
//     partitions key ranges split where the data is, as shardCollection
//     splits a collection that holds data (shard.Map.SplitToData over the
//     sampled documents' points and bytes); so a key that grows with
//     insertion puts every new document in the last partition;
//   - a key whose first field is hashed by the hash of its value (the
//     field's value, or for a compound key the document of its fields'
//     values) over the physical partitions its throughput gives, dividing
//     the hash space evenly.

// candidateKey is a parsed key pattern.
type candidateKey struct {
	fields  []candidateField
	pattern bsoncore.Document
}

type candidateField struct {
	path   string
	hashed bool
}

// parseCandidateKey reads a key pattern such as {a: 1, "b.c": "hashed"}.
// Anything else is MongoDB's BadValue.
func parseCandidateKey(key bsoncore.Document) (candidateKey, *CommandError) {
	k := candidateKey{pattern: key}
	hashed := 0
	for el := range value.All(key) {
		path, v := el.Key(), el.Value()
		if err := checkCandidatePath(path); err != nil {
			return k, err
		}
		f := candidateField{path: path}
		if s, ok := v.StringValueOK(); ok && s == "hashed" {
			f.hashed = true
			hashed++
		} else if n, ok := numberFloat(v); !ok || n != 1 {
			return k, errorf(ErrBadValue, "Shard key %s is not valid: the value of '%s' must be 1 or \"hashed\", not %s", shellString(docValue(key)), path, shellString(v))
		}
		k.fields = append(k.fields, f)
	}
	switch {
	case len(k.fields) == 0:
		return k, errorf(ErrBadValue, "Shard key cannot be empty")
	case hashed > 1:
		return k, errorf(ErrBadValue, "Shard key %s is not valid: a shard key can have at most one hashed field", shellString(docValue(key)))
	}
	return k, nil
}

func checkCandidatePath(path string) *CommandError {
	if path == "" {
		return errorf(ErrBadValue, "Shard key field names cannot be empty")
	}
	for _, part := range strings.Split(path, ".") {
		switch {
		case part == "":
			return errorf(ErrBadValue, "Shard key field '%s' has an empty field name", path)
		case part[0] == '$':
			return errorf(ErrBadValue, "Shard key field '%s' has a field name starting with '$'", path)
		case strings.IndexByte(part, 0) >= 0:
			return errorf(ErrBadValue, "Shard key field '%s' contains a NUL byte", path)
		}
	}
	return nil
}

// ranged reports whether the key places documents by value: its first
// field is ranged.
func (k candidateKey) ranged() bool { return !k.fields[0].hashed }

// spec is the key as shard describes it (the leading field and the rest).
func (k candidateKey) spec() shard.Spec {
	s := shard.Spec{Path: k.fields[0].path, Ranged: !k.fields[0].hashed}
	for _, f := range k.fields[1:] {
		s.Rest = append(s.Rest, shard.Field{Path: f.path, Hashed: f.hashed})
	}
	return s
}

// single is the key's one field when it has one.
func (k candidateKey) single() (string, bool) {
	if len(k.fields) == 1 {
		return k.fields[0].path, true
	}
	return "", false
}

// keyValue is a document's value of the key: {path: value, ...}, null for
// a missing field (as MongoDB indexes it). arrayAt names the field whose
// path holds an array, which no shard key may.
type keyValue struct {
	doc     bsoncore.Document
	missing bool
	arrayAt string
}

func (k candidateKey) extract(doc bsoncore.Document) keyValue {
	b := bsoncore.NewDocumentBuilder()
	var kv keyValue
	for _, f := range k.fields {
		v, state := valueAtPath(doc, f.path)
		switch state {
		case pathArray:
			kv.arrayAt = f.path
			return kv
		case pathMissing:
			kv.missing = true
			b.AppendNull(f.path)
		default:
			b.AppendValue(f.path, v)
		}
	}
	kv.doc = b.Build()
	return kv
}

const (
	pathFound = iota
	pathMissing
	pathArray
)

// valueAtPath walks a dotted path through embedded documents.
func valueAtPath(doc bsoncore.Document, path string) (bsoncore.Value, int) {
	cur := doc
	for {
		name, rest, more := strings.Cut(path, ".")
		v, err := cur.LookupErr(name)
		if err != nil {
			return bsoncore.Value{}, pathMissing
		}
		if v.Type == bsoncore.TypeArray {
			return bsoncore.Value{}, pathArray
		}
		if !more {
			return v, pathFound
		}
		sub, ok := v.DocumentOK()
		if !ok {
			return bsoncore.Value{}, pathMissing
		}
		cur, path = sub, rest
	}
}

// point places a key value in the point space: for a ranged key the
// order-preserving point of its first field's value (shard.RangePoint);
// for a hashed one the hash of the field's value for a one-field key, of
// the document of the values otherwise.
func (k candidateKey) point(kv bsoncore.Document) uint64 {
	if k.ranged() {
		return shard.RangePoint(kv.Index(0).Value())
	}
	if len(k.fields) == 1 {
		return shard.Point(kv.Index(0).Value())
	}
	return shard.Point(docValue(kv))
}

// layout is the partition map the key would have in c at throughput t:
// c's own map when the key is c's shard key at its throughput, else as
// many partitions as Cosmos DB starts a collection with at t
// (ceil(T/6000), ceil(Tmax/10000)), and at least as many as the data
// needs at the physical-partition size limit. A hashed key divides the
// hash space evenly; a ranged key starts with one partition and splits
// where the sampled documents are, as shardCollection splits a
// collection that holds data (set's points and bytes; nil set: one
// partition split evenly).
func (e *Engine) layout(c *store.Collection, k candidateKey, t ru.Throughput, set *keySampleSet) *shard.Map {
	var dataBytes int64
	if set != nil {
		dataBytes = set.bytes
	}
	// A compound hashed candidate hashes all its values, where Parsec
	// hashes the first: only the others are placed as c is.
	if c.Sharded() && c.Spec().Equal(k.spec()) && (k.ranged() || len(k.fields) == 1) {
		if cur, _ := e.effectiveThroughput(c); cur == t {
			return c.Map()
		}
	}
	n := e.initialPartitions(t)
	if e.limits.MaxBytes > 0 && dataBytes > e.limits.MaxBytes {
		n = max(n, int((dataBytes+e.limits.MaxBytes-1)/e.limits.MaxBytes))
	}
	if !k.ranged() {
		return shard.NewMap(n)
	}
	var points []uint64
	var sizes []int64
	if set != nil {
		points, sizes = set.pointBytes()
	}
	return shard.NewMap(1).SplitToData(k.spec(), n, points, sizes)
}

// Routing a sampled statement under a candidate key, as MongoDB's
// analyzeShardKey classifies it: equality on every field of the key
// (through $in, $and, $or) targets the partitions of its values (single
// when one, multi-shard otherwise); a range or an equality on the first
// field of a ranged key is a targeted multi-shard read, as MongoDB counts
// it, reaching the partitions whose key ranges it overlaps; anything else
// is scatter-gather.
type routeKind int

const (
	routeSingle routeKind = iota
	routeMulti
	routeScatter
)

// maxRoutedCombinations bounds the value combinations a compound key's
// equalities are expanded to; more count as every partition.
const maxRoutedCombinations = 1000

func (k candidateKey) route(filter bsoncore.Document, m *shard.Map) (routeKind, []int) {
	all := func() []int {
		out := make([]int, m.Len())
		for i := range out {
			out[i] = i
		}
		return out
	}
	sets := make([][]bsoncore.Value, len(k.fields))
	combos := 1
	pinned := true
	for i, f := range k.fields {
		vals, ok := shard.Spec{Path: f.path}.Values(filter)
		if !ok {
			pinned = false
			break
		}
		sets[i] = vals
		combos *= max(len(vals), 1)
		if combos > maxRoutedCombinations {
			return routeMulti, all()
		}
	}
	if pinned {
		var points []uint64
		k.combine(sets, nil, func(doc bsoncore.Document) { points = append(points, k.point(doc)) })
		parts := m.Route(points)
		if len(parts) <= 1 {
			return routeSingle, parts
		}
		return routeMulti, parts
	}
	if first := k.fields[0]; !first.hashed {
		if _, ok := (shard.Spec{Path: first.path}).Values(filter); ok || hasRangeOn(filter, first.path, 0) {
			if rs, ok := (shard.Spec{Path: first.path, Ranged: true}).PointRanges(filter); ok {
				return routeMulti, rangeParts(m, rs)
			}
			return routeMulti, all()
		}
	}
	return routeScatter, all()
}

// rangeParts is the indexes of the partitions of m that overlap the point
// ranges rs (ascending, disjoint).
func rangeParts(m *shard.Map, rs []shard.PointRange) []int {
	var out []int
	for _, r := range rs {
		for i := m.Lookup(r.Lo); i < m.Len() && m.At(i).Min <= r.Hi; i++ {
			if n := len(out); n == 0 || out[n-1] != i {
				out = append(out, i)
			}
		}
	}
	return out
}

// combine calls fn with every document of one value per field.
func (k candidateKey) combine(sets [][]bsoncore.Value, prefix []bsoncore.Value, fn func(bsoncore.Document)) {
	if len(prefix) == len(k.fields) {
		b := bsoncore.NewDocumentBuilder()
		for i, v := range prefix {
			b.AppendValue(k.fields[i].path, v)
		}
		fn(b.Build())
		return
	}
	for _, v := range sets[len(prefix)] {
		k.combine(sets, append(prefix, v), fn)
	}
}

// hasRangeOn reports whether filter bounds path with $gt, $gte, $lt or
// $lte (at its top level or inside $and).
func hasRangeOn(filter bsoncore.Document, path string, depth int) bool {
	if depth > 32 {
		return false
	}
	for el := range value.All(filter) {
		switch key, v := el.Key(), el.Value(); {
		case key == path:
			if ops, ok := v.DocumentOK(); ok {
				for op := range value.All(ops) {
					switch op.Key() {
					case "$gt", "$gte", "$lt", "$lte":
						return true
					}
				}
			}
		case key == "$and":
			if arr, ok := v.ArrayOK(); ok {
				for sub := range value.All(arr) {
					if d, ok := sub.Value().DocumentOK(); ok && hasRangeOn(d, path, depth+1) {
						return true
					}
				}
			}
		}
	}
	return false
}

// updatesKey reports whether a sampled update changes a field of the key:
// an operator that names a field of the key (or a parent or child of
// one), a pipeline stage that sets or removes one, or a replacement that
// drops a field of the key or gives it another value than the filter
// pins.
func (k candidateKey) updatesKey(s sampledQuery) bool {
	u := s.update
	switch u.Type {
	case bsoncore.TypeArray:
		arr, _ := u.ArrayOK()
		for st := range value.All(arr) {
			stage, ok := st.Value().DocumentOK()
			if !ok {
				continue
			}
			for el := range value.All(stage) {
				switch el.Key() {
				case "$replaceRoot", "$replaceWith":
					return true
				case "$unset":
					if name, ok := el.Value().StringValueOK(); ok && k.touches(name) {
						return true
					}
					if names, ok := el.Value().ArrayOK(); ok {
						for n := range value.All(names) {
							if name, ok := n.Value().StringValueOK(); ok && k.touches(name) {
								return true
							}
						}
					}
				default:
					if d, ok := el.Value().DocumentOK(); ok {
						for f := range value.All(d) {
							if k.touches(f.Key()) {
								return true
							}
						}
					}
				}
			}
		}
		return false
	case bsoncore.TypeEmbeddedDocument:
	default:
		return false
	}
	doc, _ := u.DocumentOK()
	first, err := doc.IndexErr(0)
	if err != nil {
		return false
	}
	if strings.HasPrefix(first.Key(), "$") {
		for op := range value.All(doc) {
			fields, ok := op.Value().DocumentOK()
			if !ok {
				continue
			}
			for f := range value.All(fields) {
				if k.touches(f.Key()) {
					return true
				}
				if op.Key() == "$rename" {
					if to, ok := f.Value().StringValueOK(); ok && k.touches(to) {
						return true
					}
				}
			}
		}
		return false
	}
	for _, f := range k.fields {
		v, state := valueAtPath(doc, f.path)
		if state != pathFound {
			return true
		}
		vals, ok := shard.Spec{Path: f.path}.Values(s.filter)
		if ok && len(vals) == 1 && !value.Equal(vals[0], v) {
			return true
		}
	}
	return false
}

// touches reports whether path is a field of the key, or a parent or a
// child of one.
func (k candidateKey) touches(path string) bool {
	for _, f := range k.fields {
		if path == f.path || strings.HasPrefix(f.path, path+".") || strings.HasPrefix(path, f.path+".") {
			return true
		}
	}
	return false
}

// keySample is one sampled document as the analysis sees it.
type keySample struct {
	enc     []byte            // the key value, order-preserving encoded
	val     bsoncore.Document // the key value
	point   uint64            // where the key would place it
	id      []byte            // its _id, order-preserving encoded
	created time.Time         // its ObjectId _id's time; zero otherwise
	size    int
	missing bool
}

// keySampleSet is a sample of a collection's documents under a key.
type keySampleSet struct {
	docs, bytes int64 // the collection's exact counts
	step        int64 // every step-th document was sampled
	samples     []keySample
}

// scale is how many documents one sampled document stands for.
func (s *keySampleSet) scale() float64 {
	if len(s.samples) == 0 {
		return 0
	}
	return float64(s.docs) / float64(len(s.samples))
}

// pointBytes are the points the sample holds documents at, ascending,
// with the sampled bytes at each (shard.Map.SplitToData's input).
func (s *keySampleSet) pointBytes() ([]uint64, []int64) {
	idx := make([]int, len(s.samples))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(s.samples[a].point, s.samples[b].point) })
	var points []uint64
	var sizes []int64
	for _, i := range idx {
		p := s.samples[i].point
		if n := len(points); n > 0 && points[n-1] == p {
			sizes[n-1] += int64(s.samples[i].size)
			continue
		}
		points, sizes = append(points, p), append(sizes, int64(s.samples[i].size))
	}
	return points, sizes
}

// defaultKeySampleSize bounds the documents an analysis holds (MongoDB
// samples up to 10 million; Parsec keeps the sample in memory).
const defaultKeySampleSize = 100_000

// sampleKeys samples c's documents under key k: every step-th document
// of one scan of the collection (a systematic sample in storage order:
// _id order for an unsharded collection, hash order for a sharded one),
// step = ceil(documents / size), or round(1 / rate) when a rate is
// given. Only the sampled documents are decoded and kept; the scan reads
// one committed state. A document whose key path holds an array fails
// with BadValue, as in MongoDB.
func (e *Engine) sampleKeys(ctx context.Context, c *store.Collection, k candidateKey, size int64, rate float64) (*keySampleSet, error) {
	counts, err := e.store.Counts(c)
	if err != nil {
		return nil, err
	}
	set := &keySampleSet{docs: counts.Docs, bytes: counts.Bytes, step: 1}
	switch {
	case rate > 0:
		set.step = max(1, int64(math.Round(1/rate)))
	case size > 0:
		set.step = max(1, (counts.Docs+size-1)/size)
	}
	var i int64
	var bad error
	err = e.store.View(func(tx storage.Txn) error {
		return tx.Scan(c, nil, func(_, raw []byte) (bool, error) {
			i++
			if i%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			if (i-1)%set.step != 0 {
				return true, nil
			}
			doc := bsoncore.Document(raw)
			kv := k.extract(doc)
			if kv.arrayAt != "" {
				id, _ := doc.LookupErr("_id")
				bad = errorf(ErrBadValue, "Cannot analyze a shard key whose field '%s' holds an array: the document with _id %s has one", kv.arrayAt, shellString(id))
				return false, nil
			}
			s := keySample{val: kv.doc, size: len(raw), missing: kv.missing, point: k.point(kv.doc)}
			s.enc = value.EncodeKey(nil, docValue(kv.doc))
			if id, err := doc.LookupErr("_id"); err == nil {
				s.id = value.EncodeKey(nil, id)
				if oid, ok := id.ObjectIDOK(); ok {
					s.created = bson.ObjectID(oid).Timestamp()
				}
			}
			set.samples = append(set.samples, s)
			return true, nil
		})
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	return set, nil
}
