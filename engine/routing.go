package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
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
// shard key (equality or $in on the whole key) reads just the ranges of
// those logical partitions: this is the shard-key index, {<key>:
// "hashed"} (shardkeyindex.go), read without any entries of its own.

// partitionSpan is one physical partition as a read sees it: its
// partitionKeyRangeId, the key range [start, end) of its documents (end
// nil: to the end of the collection) and, when the read is routed by the
// shard key, the logical partitions it reads there.
type partitionSpan struct {
	id         string
	start, end []byte
	// lps are the key ranges of the logical partitions the read is routed
	// to in this partition, ascending and disjoint; nil: all of it.
	lps []store.KeyRange
	// ids, when set, are the encoded _id values a write's filter pins in
	// a sharded collection without pinning the shard key: the write
	// finds its documents in the _id index instead of reading the
	// partition (scanSpans).
	ids [][]byte
}

// rangesFrom is what sp reads from resume on (nil: from its start): the
// rest of its logical partitions, or of its whole range.
func (sp partitionSpan) rangesFrom(resume []byte) []store.KeyRange {
	if sp.lps == nil {
		start := sp.start
		if bytes.Compare(resume, start) > 0 {
			start = resume
		}
		if sp.end != nil && bytes.Compare(start, sp.end) >= 0 {
			return nil
		}
		return []store.KeyRange{{Start: start, End: sp.end}}
	}
	if resume == nil {
		return sp.lps
	}
	i := sort.Search(len(sp.lps), func(i int) bool { return bytes.Compare(sp.lps[i].End, resume) > 0 })
	out := sp.lps[i:]
	if len(out) > 0 && bytes.Compare(resume, out[0].Start) > 0 {
		out = append([]store.KeyRange{{Start: resume, End: out[0].End}}, out[1:]...)
	}
	return out
}

// contains reports whether the document key is in what sp reads.
func (sp partitionSpan) contains(docKey []byte) bool {
	if bytes.Compare(docKey, sp.start) < 0 || (sp.end != nil && bytes.Compare(docKey, sp.end) >= 0) {
		return false
	}
	if sp.lps == nil {
		return true
	}
	i := sort.Search(len(sp.lps), func(i int) bool { return bytes.Compare(sp.lps[i].End, docKey) > 0 })
	return i < len(sp.lps) && bytes.Compare(docKey, sp.lps[i].Start) >= 0
}

// byShardKey reports whether spans read logical partitions only (the
// read is routed by the shard key).
func byShardKey(spans []partitionSpan) bool {
	for _, sp := range spans {
		if sp.lps == nil {
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

// routedSpans reports whether spans are less than all of c: some
// partitions, or some logical partitions.
func routedSpans(c *store.Collection, spans []partitionSpan) bool {
	return c.Sharded() && len(spans) > 0 && (len(spans) < c.Map().Len() || byShardKey(spans))
}

// logicalPartitionCount is how many logical partitions spans read.
func logicalPartitionCount(spans []partitionSpan) int {
	n := 0
	for _, sp := range spans {
		n += len(sp.lps)
	}
	return n
}

// partitionsOf lists the physical partitions of a collection: documents
// are keyed by the hash of their shard key, so each partition's
// documents are one contiguous key range.
func partitionsOf(c *store.Collection) []partitionSpan {
	prefix := store.DocPrefix(c.ID)
	parts := c.Map().Partitions()
	out := make([]partitionSpan, len(parts))
	for i, p := range parts {
		s := partitionSpan{id: p.IDString(), start: binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), p.Min)}
		if next, ok := p.End(); ok {
			s.end = binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), next)
		}
		out[i] = s
	}
	return out
}

// routePartitions narrows a collection's partitions to those a filter
// can match: equality (or $in) on the whole shard key targets the
// logical partitions of those values, in the partitions that own them;
// anything else reads every partition whole.
func routePartitions(c *store.Collection, filter bsoncore.Document) []partitionSpan {
	if len(filter) <= 5 || !c.Sharded() {
		return partitionsOf(c)
	}
	vals, ok := c.Spec().Values(filter)
	if !ok {
		return partitionsOf(c)
	}
	return logicalSpans(c, vals)
}

// maxIDLookups is the most _id values a write looks up in the _id index;
// past it the write reads its partitions.
const maxIDLookups = 1000

// routeWrites is routePartitions for a write statement: when the filter
// pins _id but not the shard key of a sharded collection, each partition
// finds its documents through the _id index.
func routeWrites(c *store.Collection, filter bsoncore.Document) []partitionSpan {
	spans := routePartitions(c, filter)
	if byShardKey(spans) || builtIDIndex(c) == nil || len(filter) <= 5 {
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
		spans[i].ids = ids
	}
	return spans
}

// idLookups are the keys of the documents of sp whose _id is one of sp.ids,
// from resume on, ascending: read from the _id index in tx.
func idLookups(tx storage.Txn, c *store.Collection, sp partitionSpan, resume []byte) ([][]byte, error) {
	var keys [][]byte
	r := tx.IndexReader(c, c.IDIndex, false)
	defer r.Close()
	for _, id := range sp.ids {
		// entries x/<coll><0><id><point><shard key><id>: those of sp's
		// points are one range
		start := append(bytes.Clone(id), sp.start[docPrefixLen:]...)
		end := prefixEnd(id)
		if sp.end != nil {
			end = append(bytes.Clone(id), sp.end[docPrefixLen:]...)
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
func logicalSpans(c *store.Collection, vals []bsoncore.Value) []partitionSpan {
	m := c.Map()
	type lp struct {
		pt   uint64 // the key's order is the point's, then the shard key's
		part int
		r    store.KeyRange
	}
	lps := make([]lp, 0, len(vals))
	head := store.DocPrefix(c.ID)
	var arena []byte // every range's bounds, in a few allocations
	for _, v := range vals {
		pt := shard.Point(v)
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
	var out []partitionSpan
	last := -1
	for _, l := range lps {
		if l.part != last {
			out = append(out, spanOf(c, m.At(l.part)))
			last = l.part
		}
		last := &out[len(out)-1]
		last.lps = append(last.lps, l.r)
	}
	return out
}
