package plan

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"sort"

	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Routing: which physical partitions, and which logical partitions in
// them, a read or write of a filter reads.
//
// Documents are keyed d/<coll><point><shard key><_id> (store/doc.go), so a
// physical partition is one key range and each logical partition (one
// shard-key value) a sub-range of it, in _id order. A filter that pins the
// shard key (equality or $in on every field of the key) reads just the
// ranges of those logical partitions: this is the shard-key index
// ({<key>: "hashed"}, {<a>: 1, <b>: 1}, ...: shardkeyindex.go), read
// without any entries of its own. A filter that narrows the points of the
// key's leading field (equality on it, or a range when it is ranged, whose
// points keep the values' order) reads the runs of those points, in the
// partitions that hold them.

// Span is one physical partition as a read sees it: its
// partitionKeyRangeId, the key range [Start, End) of its documents (End
// nil: to the end of the collection) and, when the read is routed by the
// shard key, the logical partitions it reads there.
type Span struct {
	ID         string
	Start, End []byte
	// LPs are the key ranges of the logical partitions the read is routed
	// to in this partition, ascending and disjoint; nil: all of it.
	LPs []store.KeyRange
	// IDs, when set, are the encoded _id values a write's filter pins in
	// a sharded collection without pinning the shard key: the write
	// finds its documents in the _id index instead of reading the
	// partition (ScanSpans).
	IDs [][]byte
}

// RangesFrom is what sp reads from resume on (nil: from its start): the
// rest of its logical partitions, or of its whole range.
func (sp Span) RangesFrom(resume []byte) []store.KeyRange {
	if sp.LPs == nil {
		start := sp.Start
		if bytes.Compare(resume, start) > 0 {
			start = resume
		}
		if sp.End != nil && bytes.Compare(start, sp.End) >= 0 {
			return nil
		}
		return []store.KeyRange{{Start: start, End: sp.End}}
	}
	if resume == nil {
		return sp.LPs
	}
	i := sort.Search(len(sp.LPs), func(i int) bool { return bytes.Compare(sp.LPs[i].End, resume) > 0 })
	out := sp.LPs[i:]
	if len(out) > 0 && bytes.Compare(resume, out[0].Start) > 0 {
		out = append([]store.KeyRange{{Start: resume, End: out[0].End}}, out[1:]...)
	}
	return out
}

// Contains reports whether the document key is in what sp reads.
func (sp Span) Contains(docKey []byte) bool {
	if bytes.Compare(docKey, sp.Start) < 0 || (sp.End != nil && bytes.Compare(docKey, sp.End) >= 0) {
		return false
	}
	if sp.LPs == nil {
		return true
	}
	i := sort.Search(len(sp.LPs), func(i int) bool { return bytes.Compare(sp.LPs[i].End, docKey) > 0 })
	return i < len(sp.LPs) && bytes.Compare(docKey, sp.LPs[i].Start) >= 0
}

// ByShardKey reports whether spans read logical partitions only (the
// read is routed by the shard key).
func ByShardKey(spans []Span) bool {
	for _, sp := range spans {
		if sp.LPs == nil {
			return false
		}
	}
	return len(spans) > 0
}

// incremented turns key, in place, into the first key after every key that
// starts with it (prefixEnd without a copy); keys here start with 'd', so
// the carry stops there.
func incremented(key []byte) []byte {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] != 0xff {
			key[i]++
			return key[:i+1]
		}
	}
	return nil
}

// RoutedSpans reports whether spans are less than all of c: some
// partitions, or some logical partitions.
func RoutedSpans(c *store.Collection, spans []Span) bool {
	return c.Sharded() && len(spans) > 0 && (len(spans) < c.Map().Len() || ByShardKey(spans))
}

// LogicalPartitionCount is how many logical partitions spans read.
func LogicalPartitionCount(spans []Span) int {
	n := 0
	for _, sp := range spans {
		n += len(sp.LPs)
	}
	return n
}

// PartitionsOf lists the physical partitions of a collection: documents
// are keyed by the point of their shard key, so each partition's
// documents are one contiguous key range.
func PartitionsOf(c *store.Collection) []Span {
	prefix := store.DocPrefix(c.ID)
	parts := c.Map().Partitions()
	out := make([]Span, len(parts))
	for i, p := range parts {
		s := Span{ID: p.IDString(), Start: binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), p.Min)}
		if next, ok := p.End(); ok {
			s.End = binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), next)
		}
		out[i] = s
	}
	return out
}

// RoutePartitions narrows a collection's partitions to those a filter
// can match: equality (or $in) on the whole shard key targets the
// logical partitions of those values, in the partitions that own them;
// a filter that narrows the leading field's points (equality on a
// compound key's leading field, a range on a ranged key:
// shard.Spec.PointRanges) reads the runs of those points in the
// partitions that overlap them; anything else reads every partition
// whole.
func RoutePartitions(c *store.Collection, filter bsoncore.Document) []Span {
	if len(filter) <= 5 || !c.Sharded() {
		return PartitionsOf(c)
	}
	spec := c.Spec()
	if vals, ok := spec.Values(filter); ok {
		return logicalSpans(c, vals)
	}
	if rs, ok := spec.PointRanges(filter); ok {
		return pointSpans(c, rs)
	}
	return PartitionsOf(c)
}

// pointSpans are the partitions of c that overlap the point ranges rs
// (ascending and disjoint), each narrowed to the points from the first
// range's start in it to the last range's end in it: one key range per
// partition, whose documents include every one at those points.
func pointSpans(c *store.Collection, rs []shard.PointRange) []Span {
	m := c.Map()
	prefix := store.DocPrefix(c.ID)
	var out []Span
	for _, r := range rs {
		for i := m.Lookup(r.Lo); i < m.Len(); i++ {
			p := m.At(i)
			if p.Min > r.Hi {
				break
			}
			lo, hi := max(p.Min, r.Lo), min(p.Max, r.Hi)
			if n := len(out); n > 0 && out[n-1].ID == p.IDString() {
				out[n-1].End = pointEnd(prefix, hi)
				continue
			}
			out = append(out, Span{ID: p.IDString(),
				Start: binary.BigEndian.AppendUint64(bytes.Clone(prefix), lo),
				End:   pointEnd(prefix, hi)})
		}
	}
	return out
}

// pointEnd is the first document key after point hi (nil: the end of
// the collection).
func pointEnd(prefix []byte, hi uint64) []byte {
	if hi == ^uint64(0) {
		return nil
	}
	return binary.BigEndian.AppendUint64(bytes.Clone(prefix), hi+1)
}

// maxIDLookups is the most _id values a write looks up in the _id index;
// past it the write reads its partitions.
const maxIDLookups = 1000

// RouteWrites is RoutePartitions for a write statement: when the filter
// pins _id but not the shard key of a sharded collection, each partition
// finds its documents through the _id index.
func RouteWrites(c *store.Collection, filter bsoncore.Document) []Span {
	spans := RoutePartitions(c, filter)
	if ByShardKey(spans) || BuiltIDIndex(c) == nil || len(filter) <= 5 {
		return spans
	}
	vals, ok := idSpec.Values(filter)
	if !ok || len(vals) > maxIDLookups {
		return spans
	}
	ids := make([][]byte, 0, len(vals))
	for _, v := range vals {
		ids = append(ids, value.EncodeKey(nil, v))
	}
	slices.SortFunc(ids, bytes.Compare)
	ids = slices.CompactFunc(ids, bytes.Equal)
	for i := range spans {
		spans[i].IDs = ids
	}
	return spans
}

// idLookups are the keys of the documents of sp whose _id is one of sp.IDs,
// from resume on, ascending: read from the _id index in tx.
func idLookups(tx storage.Txn, c *store.Collection, sp Span, resume []byte) ([][]byte, error) {
	var keys [][]byte
	r := tx.IndexReader(c, c.IDIndex, false)
	defer r.Close()
	for _, id := range sp.IDs {
		// entries x/<coll><0><id><point><shard key><id>: those of sp's
		// points are one range
		start := append(bytes.Clone(id), sp.Start[DocPrefixLen:]...)
		end := prefixEnd(id)
		if sp.End != nil {
			end = append(bytes.Clone(id), sp.End[DocPrefixLen:]...)
		}
		err := r.Scan(start, end, func(e store.IndexEntry) (bool, error) {
			if bytes.Compare(e.DocKey, resume) >= 0 {
				keys = append(keys, bytes.Clone(e.DocKey))
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys, nil
}

// logicalSpans are the partitions of c that own the shard-key values vals,
// each with the key ranges of those values' logical partitions: n values
// cost O(n log n), and O(n log P) in the number P of partitions.
func logicalSpans(c *store.Collection, vals []bsoncore.Value) []Span {
	m := c.Map()
	type lp struct {
		pt   uint64 // the key's order is the point's, then the shard key's
		part int
		r    store.KeyRange
	}
	lps := make([]lp, 0, len(vals))
	head := store.DocPrefix(c.ID)
	spec := c.Spec()
	var arena []byte // every range's bounds, in a few allocations
	for _, v := range vals {
		pt := spec.Point(v)
		if cap(arena)-len(arena) < 256 {
			arena = make([]byte, 0, 64<<10)
		}
		from := len(arena)
		arena = append(arena, head...)
		arena = binary.BigEndian.AppendUint64(arena, pt)
		arena = value.EncodeKey(arena, v)
		start := arena[from:len(arena):len(arena)]
		arena = append(arena, start...)
		end := incremented(arena[from+len(start) : len(arena) : len(arena)])
		lps = append(lps, lp{pt: pt, part: m.Lookup(pt), r: store.KeyRange{Start: start, End: end}})
	}
	slices.SortFunc(lps, func(a, b lp) int {
		if a.pt != b.pt {
			return cmp.Compare(a.pt, b.pt)
		}
		return bytes.Compare(a.r.Start, b.r.Start)
	})
	lps = slices.CompactFunc(lps, func(a, b lp) bool { return bytes.Equal(a.r.Start, b.r.Start) })
	var out []Span
	last := -1
	for _, l := range lps {
		if l.part != last {
			out = append(out, SpanOf(c, m.At(l.part)))
			last = l.part
		}
		last := &out[len(out)-1]
		last.LPs = append(last.LPs, l.r)
	}
	return out
}

// idSpec reads _id equalities the way shard keys are read.
var idSpec = shard.Spec{Path: "_id"}

// ScanSpans visits the documents of c in spans (ascending and disjoint,
// as RoutePartitions gives them; none: all of c) from resume on (nil:
// from the start), in key order, until fn returns false or an error: a
// fan-out over the partitions a read or write was routed to.
func ScanSpans(tx storage.Txn, c *store.Collection, spans []Span, resume []byte, fn func(key, doc []byte) (bool, error)) error {
	if len(spans) == 0 { // not routed: the whole collection
		return tx.Scan(c, resume, fn)
	}
	stopped := false
	visit := func(key, doc []byte) (bool, error) {
		more, err := fn(key, doc)
		stopped = !more
		return more, err
	}
	for _, sp := range spans {
		if sp.IDs != nil {
			keys, err := idLookups(tx, c, sp, resume)
			if err != nil {
				return err
			}
			for _, k := range keys {
				doc, err := tx.Get(k)
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if _, err := visit(k, doc); err != nil || stopped {
					return err
				}
			}
			continue
		}
		rs := sp.RangesFrom(resume)
		if len(rs) == 0 {
			continue
		}
		if err := tx.ScanRanges(c, rs, visit); err != nil || stopped {
			return err
		}
	}
	return nil
}

// SpanOf is partition p of c as a key range.
func SpanOf(c *store.Collection, p shard.Partition) Span {
	start, end := store.PartitionRange(c.ID, p)
	return Span{ID: p.IDString(), Start: start, End: end}
}
