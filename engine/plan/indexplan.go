package plan

import (
	"bytes"
	"math"
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Index selection. A find, count or distinct whose filter constrains the
// leading fields of a secondary index (equality, $in, ranges), or whose
// sort an index's order provides, reads that index's key ranges and
// fetches the documents they point to; the whole filter is applied to
// every fetched document, so the ranges only need to hold every match
// (a superset), never exactly the matches.

// keyRange is a range [start, end) of index keys relative to the index's
// prefix; nil start is the first key, nil end past the last.
type keyRange struct{ start, end []byte }

// IndexPlan is how a read uses secondary indexes: one index's ranges, or,
// for a $or whose every branch has an index, one plan per branch.
type IndexPlan struct {
	Ix      *store.Index // the index read (nil for a $or)
	ranges  []keyRange   // ascending, disjoint
	Reverse bool         // read the ranges from the end
	Sorted  bool         // the read order is the query's sort order
	// Bounds are, per field of the index, the predicates that bound it,
	// for explain.
	Bounds   []FieldBounds
	eqFields int // leading fields with a single equality
	inFields int // leading fields with several ($in)
	hasRange bool
	points   bool         // every field has equalities: each range is one full key
	Branches []*IndexPlan // $or: one plan per branch (Ix nil)
	// KeysExamined counts the entries read through this plan (a branch's
	// own, for explain; the read's total is in Stats).
	KeysExamined int64
}

// FieldBounds are the bounds of one index field, as explain shows them:
// Interval when set (a literal interval such as "[MinKey, MaxKey]"),
// else the interval strings of Preds (of only the first, with
// FirstOnly: a multikey index is bounded by one condition).
type FieldBounds struct {
	Path      string
	Interval  string
	Preds     []Predicate
	FirstOnly bool
}

// Seeks is how many key ranges the plan reads (explain's seeks).
func (ip *IndexPlan) Seeks() int { return len(ip.ranges) }

// Clone copies the plan (its ranges and branches), so that each partition
// of a read may narrow its own.
func (ip *IndexPlan) Clone() *IndexPlan {
	cp := *ip
	cp.ranges = slices.Clone(ip.ranges)
	cp.KeysExamined = 0
	if ip.Branches != nil {
		cp.Branches = make([]*IndexPlan, len(ip.Branches))
		for i, b := range ip.Branches {
			cp.Branches[i] = b.Clone()
		}
	}
	return &cp
}

// dedupe reports whether a document may be met more than once.
func (ip *IndexPlan) dedupe() bool { return ip.Branches != nil || ip.Ix.Multikey || ip.Ix.Wildcard }

// indexName is the index for explain's IXSCAN.
func (ip *IndexPlan) names() []string {
	if ip.Branches == nil {
		return []string{ip.Ix.Name}
	}
	var out []string
	for _, b := range ip.Branches {
		out = append(out, b.Ix.Name)
	}
	return out
}

// Predicate is one condition on a path that can bound an index: Op is
// "$eq", "$in", "$gt", "$gte", "$lt" or "$lte".
type Predicate struct {
	Op   string
	V    bsoncore.Value
	Vals []bsoncore.Value // $in
}

// conditions collects the predicates of a filter's conjunction (top level
// and $and), by path; opaque conditions are left out (the filter still
// applies them). ors are the filter's $or branches, if any.
func conditions(filter bsoncore.Document, out map[string][]Predicate, ors *[]bsoncore.Document) {
	elems, _ := filter.Elements()
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch {
		case k == "$and":
			arr, ok := v.ArrayOK()
			if !ok {
				continue
			}
			vals, _ := arr.Values()
			for _, b := range vals {
				if d, ok := b.DocumentOK(); ok {
					conditions(d, out, nil)
				}
			}
		case k == "$or":
			if ors == nil {
				continue
			}
			arr, ok := v.ArrayOK()
			if !ok {
				continue
			}
			vals, _ := arr.Values()
			for _, b := range vals {
				if d, ok := b.DocumentOK(); ok {
					*ors = append(*ors, d)
				}
			}
		case strings.HasPrefix(k, "$"):
		default:
			out[k] = append(out[k], predicatesOf(v)...)
		}
	}
}

// predicatesOf reads the index-usable predicates of one path's condition.
func predicatesOf(v bsoncore.Value) []Predicate {
	d, isDoc := v.DocumentOK()
	if !isDoc || !isOperatorDoc(d) {
		if !boundable(v) {
			return nil
		}
		return []Predicate{{Op: "$eq", V: v}}
	}
	var out []Predicate
	elems, _ := d.Elements()
	for _, el := range elems {
		op, ov := el.Key(), el.Value()
		switch op {
		case "$eq", "$gt", "$gte", "$lt", "$lte":
			if boundable(ov) {
				out = append(out, Predicate{Op: op, V: ov})
			}
		case "$in":
			arr, ok := ov.ArrayOK()
			if !ok {
				continue
			}
			vals, _ := arr.Values()
			usable := true
			for _, x := range vals {
				usable = usable && boundable(x)
			}
			if usable && len(vals) > 0 {
				out = append(out, Predicate{Op: "$in", Vals: vals})
			}
		}
	}
	return out
}

func isOperatorDoc(d bsoncore.Document) bool {
	el, err := d.IndexErr(0)
	return err == nil && strings.HasPrefix(el.Key(), "$")
}

// boundable: values whose matches an index range can hold. Arrays match
// themselves or an element, regular expressions match strings, and an
// index holds elements of arrays, not arrays: those are left to the
// filter.
func boundable(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
		return false
	}
	return true
}

// prefixEnd is the first key after every key that starts with p (nil:
// none, the end).
func prefixEnd(p []byte) []byte {
	out := bytes.Clone(p)
	for len(out) > 0 {
		if out[len(out)-1] != 0xff {
			out[len(out)-1]++
			return out
		}
		out = out[:len(out)-1]
	}
	return nil
}

// fieldRanges are the ranges of one index field's encoded values that hold
// pred's matches; ok false when pred cannot bound it. point says each
// range is a single value.
func fieldRanges(ix *store.Index, i int, pred Predicate) (rs []keyRange, point bool, ok bool) {
	desc := i < len(ix.Fields) && ix.Fields[i].Desc
	enc := func(v bsoncore.Value) []byte { return ix.EncodeField(nil, i, v) }
	switch pred.Op {
	case "$eq":
		p := enc(pred.V)
		return []keyRange{{p, prefixEnd(p)}}, true, true
	case "$in":
		for _, v := range pred.Vals {
			p := enc(v)
			rs = append(rs, keyRange{p, prefixEnd(p)})
		}
		slices.SortFunc(rs, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
		rs = slices.CompactFunc(rs, func(a, b keyRange) bool { return bytes.Equal(a.start, b.start) })
		return rs, true, true
	}
	v := pred.V
	if v.Type == bsoncore.TypeMinKey || v.Type == bsoncore.TypeMaxKey {
		return []keyRange{{}}, false, true
	}
	rank := value.TypeRank(v.Type)
	e := value.EncodeKeyWith(nil, v, ix.Collator())
	// v's own keys are [at, past). A cut key (value.CutPrefix) orders by
	// hash among the keys that share its prefix, values above and below
	// v alike: a bound at v then takes in all of them, inclusive or not
	// (the filter sorts them out).
	at, past := e, prefixEnd(e)
	p, cut := value.CutPrefix(e)
	if cut {
		at, past = p, prefixEnd(p)
	}
	// Ascending: keys of values in the type bracket are [rank, rank+1).
	var lo, hi []byte
	switch pred.Op {
	case "$gt":
		lo, hi = past, []byte{rank + 1}
		if cut {
			lo = at
		}
	case "$gte":
		lo, hi = at, []byte{rank + 1}
	case "$lt":
		lo, hi = []byte{rank}, at
		if cut {
			hi = past
		}
	case "$lte":
		lo, hi = []byte{rank}, past
	}
	if !desc {
		return []keyRange{{lo, hi}}, false, true
	}
	// Descending fields store inverted bytes (enc inverts them), which
	// reverses the order of complete encodings and keeps prefixes
	// (inverted) in front.
	ie := enc(v)
	at, past = ie, prefixEnd(ie)
	if cut {
		ip := ie[:len(p)]
		at, past = ip, prefixEnd(ip)
	}
	switch pred.Op {
	case "$gt":
		lo, hi = []byte{^rank}, at
		if cut {
			hi = past
		}
	case "$gte":
		lo, hi = []byte{^rank}, past
	case "$lt":
		lo, hi = past, []byte{^rank + 1}
		if cut {
			lo = at
		}
	case "$lte":
		lo, hi = at, []byte{^rank + 1}
	}
	return []keyRange{{lo, hi}}, false, true
}

// intersect keeps what is in both range lists.
func intersect(a, b []keyRange) []keyRange {
	var out []keyRange
	for _, x := range a {
		for _, y := range b {
			r := keyRange{start: maxStart(x.start, y.start), end: minEnd(x.end, y.end)}
			if r.end == nil || bytes.Compare(r.start, r.end) < 0 {
				out = append(out, r)
			}
		}
	}
	return out
}

func maxStart(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

func minEnd(a, b []byte) []byte {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case bytes.Compare(a, b) <= 0:
		return a
	}
	return b
}

// maxPrefixes caps the combinations of $in values over compound fields.
const maxPrefixes = 4096

// planIndex works out how ix serves a filter's predicates and a sort;
// nil when it cannot bound the read (and does not provide the sort).
func planIndex(ix *store.Index, preds map[string][]Predicate, sort []sortField) *IndexPlan {
	if ix.Wildcard {
		return planWildcard(ix, preds)
	}
	ip := &IndexPlan{Ix: ix}
	prefixes := [][]byte{nil}
	single := make([]bool, len(ix.Fields)) // a single equality bounds the field
	var ranges []keyRange
	ranged := false
	for i, f := range ix.Fields {
		ps := preds[f.Path]
		if len(ps) == 0 {
			break
		}
		var rs []keyRange
		points := true
		used := false
		for _, pr := range ps {
			r, point, ok := fieldRanges(ix, i, pr)
			if !ok {
				continue
			}
			if !used {
				rs, points, used = r, point, true
				if ix.Multikey {
					break // an array can meet each condition with another element
				}
				continue
			}
			rs = intersect(rs, r)
			points = points && point
		}
		if !used {
			break
		}
		if ix.Sparse && admitsNull(ps) {
			return nil // the documents without the field are not in the index
		}
		ip.Bounds = append(ip.Bounds, FieldBounds{Path: f.Path, Preds: ps, FirstOnly: ix.Multikey})
		if points && len(prefixes)*len(rs) <= maxPrefixes {
			next := make([][]byte, 0, len(prefixes)*len(rs))
			for _, p := range prefixes {
				for _, r := range rs {
					next = append(next, append(bytes.Clone(p), r.start...))
				}
			}
			prefixes = next
			single[i] = len(rs) == 1
			if len(rs) == 1 {
				ip.eqFields++
			} else {
				ip.inFields++
			}
			continue
		}
		for _, p := range prefixes {
			for _, r := range rs {
				rr := keyRange{start: append(bytes.Clone(p), r.start...)}
				if r.end != nil {
					rr.end = append(bytes.Clone(p), r.end...)
				} else {
					rr.end = prefixEnd(p)
				}
				ranges = append(ranges, rr)
			}
		}
		ranged = true
		ip.hasRange = true
		break
	}
	if !ranged {
		ip.points = len(ip.Bounds) == len(ix.Fields)
		for _, p := range prefixes {
			ranges = append(ranges, keyRange{start: p, end: prefixEnd(p)})
		}
	}
	bounded := len(ip.Bounds) > 0
	for _, f := range ix.Fields[len(ip.Bounds):] {
		ip.Bounds = append(ip.Bounds, FieldBounds{Path: f.Path, Interval: "[MinKey, MaxKey]"})
	}
	slices.SortFunc(ranges, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
	ip.ranges = ranges
	if len(sort) > 0 && !ix.Multikey && len(prefixes) <= 1 {
		ip.Sorted, ip.Reverse = providesSort(ix, single, sort)
	}
	if !bounded && !ip.Sorted {
		return nil
	}
	if ix.Sparse && !bounded {
		return nil // a sort alone would lose the documents without the field
	}
	return ip
}

// NarrowToSpans limits a plan whose ranges are whole index keys to the
// entries of documents in the given partitions: after the index key comes
// the document's point, so the entries of one key are in hash order, and
// a read routed by the shard key reads only its partitions' entries.
func (ip *IndexPlan) NarrowToSpans(spans []Span) {
	if !ip.points || ip.Ix.Unique || ip.Ix.Wildcard {
		return
	}
	if ByShardKey(spans) && len(ip.ranges)*LogicalPartitionCount(spans) <= maxNarrowedRanges {
		ip.narrowToLogicalPartitions(spans)
		return
	}
	var out []keyRange
	for _, r := range ip.ranges {
		for _, sp := range spans {
			nr := keyRange{start: append(bytes.Clone(r.start), sp.Start[6:14]...)}
			if sp.End != nil {
				nr.end = append(bytes.Clone(r.start), sp.End[6:14]...)
			} else {
				nr.end = r.end
			}
			out = append(out, nr)
		}
	}
	ip.ranges = out
}

// maxNarrowedRanges bounds the ranges narrowing to logical partitions
// makes (index keys times logical partitions); past it a read narrows to
// physical partitions only and filters the rest.
const maxNarrowedRanges = 1 << 17

// narrowToLogicalPartitions limits a plan of whole index keys to the
// entries of documents in the logical partitions spans read: after the
// index key comes the document's <point><shard key>, so the entries of
// one key and one logical partition are one range.
func (ip *IndexPlan) narrowToLogicalPartitions(spans []Span) {
	out := make([]keyRange, 0, len(ip.ranges)*LogicalPartitionCount(spans))
	for _, r := range ip.ranges {
		for _, sp := range spans {
			for _, lp := range sp.LPs {
				out = append(out, keyRange{
					start: append(bytes.Clone(r.start), lp.Start[DocPrefixLen:]...),
					end:   append(bytes.Clone(r.start), lp.End[DocPrefixLen:]...),
				})
			}
		}
	}
	ip.ranges = out
}

// DocPrefixLen is the length of d/<coll:4>, before a document key's point.
const DocPrefixLen = 6

// admitsNull reports whether the predicates can match a missing field.
func admitsNull(ps []Predicate) bool {
	for _, p := range ps {
		switch p.Op {
		case "$in":
			for _, v := range p.Vals {
				if v.Type == bsoncore.TypeNull {
					return true
				}
			}
		default:
			if p.V.Type == bsoncore.TypeNull || p.V.Type == bsoncore.TypeMinKey || p.V.Type == bsoncore.TypeMaxKey {
				return true
			}
		}
	}
	return false
}

// planWildcard bounds a wildcard index by one constrained path under its
// root: keys are <path><value>.
func planWildcard(ix *store.Index, preds map[string][]Predicate) *IndexPlan {
	paths := make([]string, 0, len(preds))
	for p := range preds {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, path := range paths {
		if path == "_id" && ix.WildcardRoot == "" {
			continue
		}
		if ix.WildcardRoot != "" && path != ix.WildcardRoot && !strings.HasPrefix(path, ix.WildcardRoot+".") {
			continue
		}
		ps := preds[path]
		if admitsNull(ps) {
			continue // documents without the path have no key
		}
		pfx := value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, path)})
		// Field values are encoded ascending; index 0 of a wildcard index
		// has no direction.
		tmp := &store.Index{}
		for _, pr := range ps {
			if !wildcardBoundable(pr) {
				continue
			}
			rs, _, ok := fieldRanges(tmp, 0, pr)
			if !ok {
				continue
			}
			ip := &IndexPlan{Ix: ix, hasRange: true}
			for _, r := range rs {
				rr := keyRange{start: append(bytes.Clone(pfx), r.start...)}
				if r.end != nil {
					rr.end = append(bytes.Clone(pfx), r.end...)
				} else {
					rr.end = prefixEnd(pfx)
				}
				ip.ranges = append(ip.ranges, rr)
			}
			ip.Bounds = []FieldBounds{{Path: "$_path", Interval: "[\"" + path + "\", \"" + path + "\"]"}, {Path: path, Preds: []Predicate{pr}, FirstOnly: true}}
			return ip
		}
	}
	return nil
}

// wildcardBoundable: a wildcard index holds leaves, not documents, so
// conditions that documents can meet are left to a collection scan.
func wildcardBoundable(pr Predicate) bool {
	vals := pr.Vals
	if pr.Op != "$in" {
		vals = []bsoncore.Value{pr.V}
	}
	for _, v := range vals {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeNull:
			return false
		}
	}
	return true
}

// sortField is one field of a sort specification.
type sortField struct {
	path string
	desc bool
}

// sortFieldsOf reads a sort specification of plain directions; nil when
// it has none or has $meta or $natural.
func sortFieldsOf(spec bsoncore.Document) []sortField {
	if len(spec) <= 5 {
		return nil
	}
	elems, _ := spec.Elements()
	out := make([]sortField, 0, len(elems))
	for _, el := range elems {
		f, ok := numberFloat(el.Value())
		if !ok || el.Key() == "$natural" {
			return nil
		}
		out = append(out, sortField{path: el.Key(), desc: f < 0})
	}
	return out
}

// providesSort reports whether reading ix in order (reverse: backwards)
// yields the sort order, given the fields a single equality fixes.
func providesSort(ix *store.Index, fixed []bool, sort []sortField) (ok, reverse bool) {
	i := 0
	dir := 0 // 1: same as the index, -1: opposite
	for _, s := range sort {
		for i < len(ix.Fields) && ix.Fields[i].Path != s.path && fixed[i] {
			i++
		}
		if i == len(ix.Fields) || ix.Fields[i].Path != s.path {
			return false, false
		}
		d := 1
		if ix.Fields[i].Desc != s.desc {
			d = -1
		}
		if dir != 0 && d != dir {
			return false, false
		}
		dir = d
		i++
	}
	return true, dir < 0
}

// usableIndexes are the indexes a planner may choose: built, not hidden,
// and, for partial indexes, implied by the filter.
func usableIndexes(c *store.Collection, filter bsoncore.Document) []*store.Index {
	var out []*store.Index
	if ix := BuiltIDIndex(c); ix != nil {
		out = append(out, ix)
	}
	for _, ix := range c.Indexes {
		if ix.Building || ix.Hidden {
			continue
		}
		if len(ix.Partial) > 0 && !impliesPartial(filter, bsoncore.Document(ix.Partial)) {
			continue
		}
		out = append(out, ix)
	}
	return out
}

// BuiltIDIndex is the _id index of a sharded collection once it is built
// (store/idindex.go), or nil: an unsharded collection's document keys are
// its _id index.
func BuiltIDIndex(c *store.Collection) *store.Index {
	if c == nil || c.IDIndex == nil || c.IDIndex.Building {
		return nil
	}
	return c.IDIndex
}

// impliesPartial reports whether every top-level condition of a partial
// filter expression appears, as is, in the filter (a conservative test of
// implication: the index then holds every match).
func impliesPartial(filter, partial bsoncore.Document) bool {
	want, _ := partial.Elements()
	have, _ := filter.Elements()
	for _, w := range want {
		found := false
		for _, h := range have {
			if h.Key() == w.Key() && h.Value().Equal(w.Value()) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// IndexFor picks the index plan for a filter and sort, or nil for a
// collection scan: the plan with the most leading equalities, then a
// range, then the sort, then a unique index, then the fewest fields.
func IndexFor(c *store.Collection, filter bsoncore.Document, sortSpec bsoncore.Document) *IndexPlan {
	return IndexForCollation(c, filter, sortSpec, nil)
}

// collated are a filter's predicates for indexes of the read's collation
// (all of them) and for the others (those that compare no strings).
type collated struct {
	coll   *value.Collator
	filter bsoncore.Document
	plain  map[string][]Predicate // made at first use
}

// forIndex are the predicates and sort ix may serve.
func (cp *collated) forIndex(ix *store.Index, preds map[string][]Predicate, sort []sortField) (map[string][]Predicate, []sortField) {
	if ix.Collator().Equal(cp.coll) {
		return preds, sort
	}
	if cp.plain == nil {
		cp.plain = map[string][]Predicate{}
		conditions(stripCollatable(cp.filter), cp.plain, nil)
	}
	return cp.plain, nil
}

// IndexForCollation is IndexFor for a read under the collation coll: an
// index of another collation is bounded only by conditions that compare no
// strings and provides no sort, as in MongoDB.
func IndexForCollation(c *store.Collection, filter bsoncore.Document, sortSpec bsoncore.Document, coll *value.Collator) *IndexPlan {
	if c == nil || (len(c.Indexes) == 0 && BuiltIDIndex(c) == nil) {
		return nil
	}
	preds := map[string][]Predicate{}
	var ors []bsoncore.Document
	conditions(filter, preds, &ors)
	sort := sortFieldsOf(sortSpec)
	cands := usableIndexes(c, filter)
	best := bestOf(cands, preds, sort, &collated{coll: coll, filter: filter})
	if best == nil && len(ors) > 0 && len(preds) == 0 {
		or := &IndexPlan{}
		for _, b := range ors {
			bp := map[string][]Predicate{}
			var nested []bsoncore.Document
			conditions(b, bp, &nested)
			branch := bestOf(usableIndexes(c, b), bp, nil, &collated{coll: coll, filter: b})
			if branch == nil || len(nested) > 0 {
				return nil // a branch without an index: a collection scan reads everything anyway
			}
			or.Branches = append(or.Branches, branch)
		}
		return or
	}
	return best
}

func bestOf(cands []*store.Index, preds map[string][]Predicate, sort []sortField, cp *collated) *IndexPlan {
	var best *IndexPlan
	bestScore := math.MinInt
	for _, ix := range cands {
		p, s := cp.forIndex(ix, preds, sort)
		ip := planIndex(ix, p, s)
		if ip == nil {
			continue
		}
		score := ip.eqFields*100 + ip.inFields*60
		if ip.hasRange {
			score += 40
		}
		if ip.Sorted {
			score += 20
		}
		if ix.Unique && ip.eqFields == len(ix.Fields) {
			score += 10
		}
		score -= len(ix.Fields)
		if score > bestScore {
			best, bestScore = ip, score
		}
	}
	return best
}

// HintedIndex plans a read on the index a hint names.
func HintedIndex(ix *store.Index, filter, sortSpec bsoncore.Document) *IndexPlan {
	return HintedIndexCollation(ix, filter, sortSpec, nil)
}

// HintedIndexCollation is HintedIndex for a read under the collation coll
// (IndexForCollation).
func HintedIndexCollation(ix *store.Index, filter, sortSpec bsoncore.Document, coll *value.Collator) *IndexPlan {
	preds := map[string][]Predicate{}
	conditions(filter, preds, nil)
	cp := &collated{coll: coll, filter: filter}
	p, s := cp.forIndex(ix, preds, sortFieldsOf(sortSpec))
	if ip := planIndex(ix, p, s); ip != nil {
		return ip
	}
	ip := &IndexPlan{Ix: ix, ranges: []keyRange{{}}}
	for _, f := range ix.Fields {
		ip.Bounds = append(ip.Bounds, FieldBounds{Path: f.Path, Interval: "[MinKey, MaxKey]"})
	}
	return ip
}

// IndexOfHint finds the index a hint names, by name or key pattern.
func IndexOfHint(c *store.Collection, name string, key bsoncore.Document) *store.Index {
	for _, ix := range c.Indexes {
		if ix.Building {
			continue
		}
		if (name != "" && ix.Name == name) || (name == "" && SameKey(ix.Key, bson.Raw(key))) {
			return ix
		}
	}
	return nil
}
