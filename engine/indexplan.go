package engine

import (
	"bytes"
	"fmt"
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

// indexPlan is how a read uses secondary indexes: one index's ranges, or,
// for a $or whose every branch has an index, one plan per branch.
type indexPlan struct {
	ix       *store.Index
	ranges   []keyRange // ascending, disjoint
	reverse  bool       // read the ranges from the end
	sorted   bool       // the read order is the query's sort order
	bounds   bson.D     // per field, MongoDB's interval strings, for explain
	eqFields int        // leading fields with a single equality
	inFields int        // leading fields with several ($in)
	hasRange bool
	points   bool         // every field has equalities: each range is one full key
	branches []*indexPlan // $or: one plan per branch (ix nil)
	// keysExamined counts the entries read through this plan (a branch's
	// own, for explain; the read's total is in planStats).
	keysExamined int64
}

// clone copies the plan (its ranges and branches), so that each partition
// of a read may narrow its own.
func (ip *indexPlan) clone() *indexPlan {
	cp := *ip
	cp.ranges = slices.Clone(ip.ranges)
	cp.keysExamined = 0
	if ip.branches != nil {
		cp.branches = make([]*indexPlan, len(ip.branches))
		for i, b := range ip.branches {
			cp.branches[i] = b.clone()
		}
	}
	return &cp
}

// dedupe reports whether a document may be met more than once.
func (ip *indexPlan) dedupe() bool { return ip.branches != nil || ip.ix.Multikey || ip.ix.Wildcard }

// indexName is the index for explain's IXSCAN.
func (ip *indexPlan) names() []string {
	if ip.branches == nil {
		return []string{ip.ix.Name}
	}
	var out []string
	for _, b := range ip.branches {
		out = append(out, b.ix.Name)
	}
	return out
}

// predicate is one condition on a path that can bound an index: op is
// "$eq", "$in", "$gt", "$gte", "$lt" or "$lte".
type predicate struct {
	op   string
	v    bsoncore.Value
	vals []bsoncore.Value // $in
}

// conditions collects the predicates of a filter's conjunction (top level
// and $and), by path; opaque conditions are left out (the filter still
// applies them). ors are the filter's $or branches, if any.
func conditions(filter bsoncore.Document, out map[string][]predicate, ors *[]bsoncore.Document) {
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
func predicatesOf(v bsoncore.Value) []predicate {
	d, isDoc := v.DocumentOK()
	if !isDoc || !isOperatorDoc(d) {
		if !boundable(v) {
			return nil
		}
		return []predicate{{op: "$eq", v: v}}
	}
	var out []predicate
	elems, _ := d.Elements()
	for _, el := range elems {
		op, ov := el.Key(), el.Value()
		switch op {
		case "$eq", "$gt", "$gte", "$lt", "$lte":
			if boundable(ov) {
				out = append(out, predicate{op: op, v: ov})
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
				out = append(out, predicate{op: "$in", vals: vals})
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
func fieldRanges(ix *store.Index, i int, pred predicate) (rs []keyRange, point bool, ok bool) {
	desc := i < len(ix.Fields) && ix.Fields[i].Desc
	enc := func(v bsoncore.Value) []byte { return ix.EncodeField(nil, i, v) }
	switch pred.op {
	case "$eq":
		p := enc(pred.v)
		return []keyRange{{p, prefixEnd(p)}}, true, true
	case "$in":
		for _, v := range pred.vals {
			p := enc(v)
			rs = append(rs, keyRange{p, prefixEnd(p)})
		}
		slices.SortFunc(rs, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
		rs = slices.CompactFunc(rs, func(a, b keyRange) bool { return bytes.Equal(a.start, b.start) })
		return rs, true, true
	}
	v := pred.v
	if v.Type == bsoncore.TypeMinKey || v.Type == bsoncore.TypeMaxKey {
		return []keyRange{{}}, false, true
	}
	rank := value.TypeRank(v.Type)
	e := value.EncodeKey(nil, v)
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
	switch pred.op {
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
	switch pred.op {
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
func planIndex(ix *store.Index, preds map[string][]predicate, sort []sortField) *indexPlan {
	if ix.Wildcard {
		return planWildcard(ix, preds)
	}
	ip := &indexPlan{ix: ix}
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
		ip.bounds = append(ip.bounds, bson.E{Key: f.Path, Value: describeBounds(ps, ix.Multikey)})
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
		ip.points = len(ip.bounds) == len(ix.Fields)
		for _, p := range prefixes {
			ranges = append(ranges, keyRange{start: p, end: prefixEnd(p)})
		}
	}
	bounded := len(ip.bounds) > 0
	for _, f := range ix.Fields[len(ip.bounds):] {
		ip.bounds = append(ip.bounds, bson.E{Key: f.Path, Value: bson.A{"[MinKey, MaxKey]"}})
	}
	slices.SortFunc(ranges, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
	ip.ranges = ranges
	if len(sort) > 0 && !ix.Multikey && len(prefixes) <= 1 {
		ip.sorted, ip.reverse = providesSort(ix, single, sort)
	}
	if !bounded && !ip.sorted {
		return nil
	}
	if ix.Sparse && !bounded {
		return nil // a sort alone would lose the documents without the field
	}
	return ip
}

// narrowToSpans limits a plan whose ranges are whole index keys to the
// entries of documents in the given partitions: after the index key comes
// the document's point, so the entries of one key are in hash order, and
// a read routed by the shard key reads only its partitions' entries.
func (ip *indexPlan) narrowToSpans(spans []partitionSpan) {
	if !ip.points || ip.ix.Unique || ip.ix.Wildcard {
		return
	}
	if byShardKey(spans) && len(ip.ranges)*logicalPartitionCount(spans) <= maxNarrowedRanges {
		ip.narrowToLogicalPartitions(spans)
		return
	}
	var out []keyRange
	for _, r := range ip.ranges {
		for _, sp := range spans {
			nr := keyRange{start: append(bytes.Clone(r.start), sp.start[6:14]...)}
			if sp.end != nil {
				nr.end = append(bytes.Clone(r.start), sp.end[6:14]...)
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
func (ip *indexPlan) narrowToLogicalPartitions(spans []partitionSpan) {
	out := make([]keyRange, 0, len(ip.ranges)*logicalPartitionCount(spans))
	for _, r := range ip.ranges {
		for _, sp := range spans {
			for _, lp := range sp.lps {
				out = append(out, keyRange{
					start: append(bytes.Clone(r.start), lp.Start[docPrefixLen:]...),
					end:   append(bytes.Clone(r.start), lp.End[docPrefixLen:]...),
				})
			}
		}
	}
	ip.ranges = out
}

// docPrefixLen is the length of d/<coll:4>, before a document key's point.
const docPrefixLen = 6

// admitsNull reports whether the predicates can match a missing field.
func admitsNull(ps []predicate) bool {
	for _, p := range ps {
		switch p.op {
		case "$in":
			for _, v := range p.vals {
				if v.Type == bsoncore.TypeNull {
					return true
				}
			}
		default:
			if p.v.Type == bsoncore.TypeNull || p.v.Type == bsoncore.TypeMinKey || p.v.Type == bsoncore.TypeMaxKey {
				return true
			}
		}
	}
	return false
}

// planWildcard bounds a wildcard index by one constrained path under its
// root: keys are <path><value>.
func planWildcard(ix *store.Index, preds map[string][]predicate) *indexPlan {
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
			ip := &indexPlan{ix: ix, hasRange: true}
			for _, r := range rs {
				rr := keyRange{start: append(bytes.Clone(pfx), r.start...)}
				if r.end != nil {
					rr.end = append(bytes.Clone(pfx), r.end...)
				} else {
					rr.end = prefixEnd(pfx)
				}
				ip.ranges = append(ip.ranges, rr)
			}
			ip.bounds = bson.D{{Key: "$_path", Value: bson.A{"[\"" + path + "\", \"" + path + "\"]"}}, {Key: path, Value: describeBounds([]predicate{pr}, true)}}
			return ip
		}
	}
	return nil
}

// wildcardBoundable: a wildcard index holds leaves, not documents, so
// conditions that documents can meet are left to a collection scan.
func wildcardBoundable(pr predicate) bool {
	vals := pr.vals
	if pr.op != "$in" {
		vals = []bsoncore.Value{pr.v}
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

// describeBounds renders predicates as explain's interval strings.
func describeBounds(ps []predicate, firstOnly bool) bson.A {
	var out bson.A
	var lo, hi string = "MinKey", "MaxKey"
	loIn, hiIn := true, true
	for _, p := range ps {
		switch p.op {
		case "$eq":
			s := shellString(p.v)
			return bson.A{"[" + s + ", " + s + "]"}
		case "$in":
			for i, v := range p.vals {
				if i == maxExplainedBounds {
					out = append(out, fmt.Sprintf("... %d more", len(p.vals)-i))
					break
				}
				s := shellString(v)
				out = append(out, "["+s+", "+s+"]")
			}
			return out
		case "$gt", "$gte":
			lo, loIn = shellString(p.v), p.op == "$gte"
			if hi == "MaxKey" {
				hi, hiIn = bracketEnd(p.v, true), true
			}
		case "$lt", "$lte":
			hi, hiIn = shellString(p.v), p.op == "$lte"
			if lo == "MinKey" {
				lo, loIn = bracketEnd(p.v, false), true
			}
		}
		if firstOnly {
			break
		}
	}
	l, r := "[", "]"
	if !loIn {
		l = "("
	}
	if !hiIn {
		r = ")"
	}
	return bson.A{l + lo + ", " + hi + r}
}

// bracketEnd names the end of a value's type bracket as MongoDB's bounds
// print it.
func bracketEnd(v bsoncore.Value, upper bool) string {
	switch value.TypeRank(v.Type) {
	case value.TypeRank(bsoncore.TypeDouble):
		if upper {
			return "inf.0"
		}
		return "-inf.0"
	case value.TypeRank(bsoncore.TypeString):
		if upper {
			return "{}"
		}
		return `""`
	}
	if upper {
		return "MaxKey"
	}
	return "MinKey"
}

// usableIndexes are the indexes a planner may choose: built, not hidden,
// and, for partial indexes, implied by the filter.
func usableIndexes(c *store.Collection, filter bsoncore.Document) []*store.Index {
	var out []*store.Index
	if ix := builtIDIndex(c); ix != nil {
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

// builtIDIndex is the _id index of a sharded collection once it is built
// (store/idindex.go), or nil: an unsharded collection's document keys are
// its _id index.
func builtIDIndex(c *store.Collection) *store.Index {
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

// chooseIndex picks the index plan for a filter and sort, or nil for a
// collection scan: the plan with the most leading equalities, then a
// range, then the sort, then a unique index, then the fewest fields.
func chooseIndex(c *store.Collection, filter bsoncore.Document, sortSpec bsoncore.Document) *indexPlan {
	if c == nil || (len(c.Indexes) == 0 && builtIDIndex(c) == nil) {
		return nil
	}
	preds := map[string][]predicate{}
	var ors []bsoncore.Document
	conditions(filter, preds, &ors)
	sort := sortFieldsOf(sortSpec)
	cands := usableIndexes(c, filter)
	best := bestOf(cands, preds, sort)
	if best == nil && len(ors) > 0 && len(preds) == 0 {
		or := &indexPlan{}
		for _, b := range ors {
			bp := map[string][]predicate{}
			var nested []bsoncore.Document
			conditions(b, bp, &nested)
			branch := bestOf(usableIndexes(c, b), bp, nil)
			if branch == nil || len(nested) > 0 {
				return nil // a branch without an index: a collection scan reads everything anyway
			}
			or.branches = append(or.branches, branch)
		}
		return or
	}
	return best
}

func bestOf(cands []*store.Index, preds map[string][]predicate, sort []sortField) *indexPlan {
	var best *indexPlan
	bestScore := math.MinInt
	for _, ix := range cands {
		ip := planIndex(ix, preds, sort)
		if ip == nil {
			continue
		}
		score := ip.eqFields*100 + ip.inFields*60
		if ip.hasRange {
			score += 40
		}
		if ip.sorted {
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

// hintedIndex plans a read on the index a hint names.
func hintedIndex(ix *store.Index, filter, sortSpec bsoncore.Document) *indexPlan {
	preds := map[string][]predicate{}
	conditions(filter, preds, nil)
	if ip := planIndex(ix, preds, sortFieldsOf(sortSpec)); ip != nil {
		return ip
	}
	ip := &indexPlan{ix: ix, ranges: []keyRange{{}}}
	for _, f := range ix.Fields {
		ip.bounds = append(ip.bounds, bson.E{Key: f.Path, Value: bson.A{"[MinKey, MaxKey]"}})
	}
	return ip
}

// indexOfHint finds the index a hint names, by name or key pattern.
func indexOfHint(c *store.Collection, name string, key bsoncore.Document) *store.Index {
	for _, ix := range c.Indexes {
		if ix.Building {
			continue
		}
		if (name != "" && ix.Name == name) || (name == "" && sameKey(ix.Key, bson.Raw(key))) {
			return ix
		}
	}
	return nil
}

// indexStages is explain's FETCH over IXSCAN (or over an OR of IXSCANs).
func indexStages(p *readPlan, filter bsoncore.Document, st planStats, withStats func(bson.D, int64, ...bson.E) bson.D) bson.D {
	ixscan := func(ip *indexPlan, keys int64) bson.D {
		ix := ip.ix
		dir := "forward"
		if ip.reverse {
			dir = "backward"
		}
		var multi bson.D
		for _, f := range ix.Fields {
			multi = append(multi, bson.E{Key: f.Path, Value: bson.A{}})
		}
		return withStats(bson.D{
			{Key: "stage", Value: "IXSCAN"},
			{Key: "keyPattern", Value: ix.Key},
			{Key: "indexName", Value: ix.Name},
			{Key: "isMultiKey", Value: ix.Multikey || ix.Wildcard},
			{Key: "multiKeyPaths", Value: multi},
			{Key: "isUnique", Value: ix.IsUnique()},
			{Key: "isSparse", Value: ix.Sparse},
			{Key: "isPartial", Value: len(ix.Partial) > 0},
			{Key: "indexVersion", Value: int32(2)},
			{Key: "direction", Value: dir},
			{Key: "indexBounds", Value: ip.bounds},
		}, keys, bson.E{Key: "keysExamined", Value: keys}, bson.E{Key: "seeks", Value: int64(len(ip.ranges))})
	}
	var input bson.D
	if p.index.branches == nil {
		input = ixscan(p.index, st.keysExamined)
	} else {
		var subs bson.A
		for _, b := range p.index.branches {
			subs = append(subs, ixscan(b, b.keysExamined))
		}
		input = withStats(bson.D{{Key: "stage", Value: "OR"}, {Key: "inputStages", Value: subs}}, st.docsExamined)
	}
	fetch := bson.D{{Key: "stage", Value: "FETCH"}}
	if len(filter) > 5 {
		fetch = append(fetch, bson.E{Key: "filter", Value: bson.Raw(filter)})
	}
	fetch = withStats(fetch, st.returned, bson.E{Key: "docsExamined", Value: st.docsExamined})
	return append(fetch, bson.E{Key: "inputStage", Value: input})
}
