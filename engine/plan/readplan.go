package plan

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Read is how a read (find, count, distinct, and explain of them)
// goes through one collection: which physical partitions and keys it
// reads, in what order, what it keeps and how it shapes the result. The
// command layer fills in what the command asked for (filter, sort,
// projection, skip, limit, hint); Route, ChooseIndex and
// Planner.WeighShardKeyScan fill in the access path.
type Read struct {
	// Snapshot: the read reads a snapshot, whose index entries may
	// predate an index; it uses no secondary index.
	Snapshot bool
	NS       string
	Coll     *store.Collection // nil: the collection does not exist
	Spans    []Span            // the partitions routed to, in hash order
	Virtual  [][]byte          // documents of a virtual collection (config.*), read instead of Coll
	Filter   *query.Filter
	Sort     *query.Sort // nil: none
	Proj     *query.Projection
	Skip     int64
	Limit    int64  // 0: none
	Point    []byte // IDHACK: the only key to read
	IDBounds *IDRange
	Natural  int // $natural direction asked for (hint or sort); 0: none
	// UseIDIndex: a hint on _id_ (or min/max): explain reports an IXSCAN
	// on _id.
	UseIDIndex bool
	// ShardKeyScan: the read reads logical partitions only (routed by
	// the shard key): explain reports an IXSCAN of the shard-key index.
	ShardKeyScan bool
	// HintedShardKey: a hint names the shard-key index; no secondary
	// index is used.
	HintedShardKey bool
	StreamByID     bool // sort {_id: 1} answered by key order
	ReturnKey      bool
	NoDiskUse      bool         // allowDiskUse: false given explicitly
	Index          *IndexPlan   // secondary indexes read (indexplan.go); nil: none
	Hinted         *store.Index // the secondary index a hint names
	NaturalHint    bool         // hint {$natural: ±1}: a collection scan, whatever the sort
	// RecordIDFields are the fields each result gets its document's
	// record id (store.RecordID) in, after the projection: "$recordId"
	// for showRecordId, and those of {$meta: "recordId"} projections.
	RecordIDFields []string
	// IndexKeyFields are the fields each result gets the key of the
	// index the read used in ({$meta: "indexKey"} projections), after
	// the projection; a read of no index leaves them out.
	IndexKeyFields []string
	// Collation is the read's collation (nil: simple): routing uses only
	// conditions that compare no strings, and indexes of another collation
	// are bounded without them and provide no sort (collation.go).
	Collation *value.Collator
}

// IDRange is min/max on the _id index: [Min, Max).
type IDRange struct{ Min, Max bsoncore.Value }

// Partitions are the partitionKeyRangeIds of the physical partitions the
// plan reads.
func (p *Read) Partitions() []string {
	if p.Coll == nil || len(p.Spans) == 0 {
		return []string{"0"}
	}
	ids := make([]string, len(p.Spans))
	for i, s := range p.Spans {
		ids[i] = s.ID
	}
	return ids
}

// Route sets the partitions the plan reads: those filter can match, or
// the one holding the point key.
func (p *Read) Route(filter bsoncore.Document) {
	if p.Coll == nil || !p.Coll.Sharded() {
		return // one partition, "0": the whole collection
	}
	filter = Uncollated(filter, p.Collation)
	if p.Point != nil {
		// the partition that owns the key's point: d/<coll:4><point:8>...
		m := p.Coll.Map()
		p.Spans = []Span{SpanOf(p.Coll, m.At(m.Lookup(binary.BigEndian.Uint64(p.Point[6:14]))))}
		return
	}
	p.Spans = RoutePartitions(p.Coll, filter)
	if p.NaturalHint || p.Natural != 0 {
		// a collection scan, as asked: whole partitions, in key order
		for i := range p.Spans {
			p.Spans[i].LPs = nil
		}
	}
	p.ShardKeyScan = ByShardKey(p.Spans) || p.HintedShardKey
}

// ChooseIndex sets the secondary index plan of a read, if one serves it.
func (p *Read) ChooseIndex(filter, sort bsoncore.Document) {
	switch {
	case p.Coll == nil || p.Virtual != nil || p.Point != nil || p.Natural != 0 || p.NaturalHint || p.UseIDIndex || p.Snapshot || p.HintedShardKey:
	case p.Hinted != nil:
		p.Index = HintedIndexCollation(p.Hinted, filter, sort, p.Collation)
	case p.StreamByID && len(filter) <= 5:
		// {_id: 1} order with no filter: the documents are in that order
	default:
		p.Index = IndexForCollation(p.Coll, filter, sort, p.Collation)
	}
	if p.Index != nil && p.Index.Sorted {
		p.StreamByID = false
	}
	if p.Index != nil && p.Index.Branches == nil && RoutedSpans(p.Coll, p.Spans) {
		p.Index.NarrowToSpans(p.Spans)
	}
}

// fanOut reports whether the plan reads more than one partition.
func (p *Read) fanOut() bool { return p.Point == nil && len(p.Spans) > 1 }

// Stats count what a plan's execution did, for explain and for the read's
// request units: per partition, they are the read bill's tallies.
type Stats struct {
	DocsExamined int64
	KeysExamined int64
	Returned     int64
	BytesRead    int64 // of the documents examined, for request units
}

// blockingSort reports whether the plan must read everything before its
// first result.
func (p *Read) blockingSort() bool {
	// Key order is value order until a key is cut (value.MaxKeyLen):
	// an index or a collection that has held one is marked, and sorts
	// in memory from then on.
	byID := p.StreamByID && (p.Coll == nil || !p.Coll.CutIDs)
	byIndex := p.Index != nil && p.Index.Sorted && !p.Index.Ix.CutKeys
	if byID || byIndex {
		return false
	}
	return (p.Sort != nil && !p.Sort.IsEmpty()) || p.Natural < 0
}

// Source is a read plan running: a cursor's documents, batch by batch,
// and what it has examined so far.
type Source interface {
	// NextBatch returns up to max documents (no count limit when max <= 0)
	// whose sizes add up to at most maxBytes (at least one document is
	// always returned when any remain), and whether the source is done.
	NextBatch(ctx context.Context, max, maxBytes int) (docs [][]byte, done bool, err error)
	// Tally is what the plan's i-th partition (in routing order) has
	// read so far: what a read is charged for.
	Tally(i int) Stats
	// Stats are the read's totals; PartitionStats each partition's, by
	// partitionKeyRangeId, when it read several (nil otherwise).
	Stats() Stats
	PartitionStats() map[string]Stats
}

// Source makes the batch source that runs the plan.
func (pl *Planner) Source(p *Read) Source {
	scan := pl.Scan(p)
	if p.blockingSort() {
		return &sortedSource{scan: scan}
	}
	return scan
}

// Scan makes the plan's scan, which reads in key (or index) order; a
// blocking sort runs over it (Source).
func (pl *Planner) Scan(p *Read) *Scan {
	return &Scan{pl: pl, plan: p}
}

// view is what the scan reads under ctx: a transaction's or a
// snapshot's state, else the latest.
func (s *Scan) view(ctx context.Context) Reader {
	if s.pl.ViewOf != nil {
		return s.pl.ViewOf(ctx)
	}
	return s.pl.Storage
}

// Scan reads a collection in key order (or one key), filtering,
// skipping and limiting. It resumes after the last key it returned, each
// batch in its own read transaction. A plan over several partitions reads
// them in parallel (fanout.go).
type Scan struct {
	pl      *Planner
	plan    *Read
	next    []byte // resume key; nil at the start
	done    bool
	skip    int64 // still to skip
	sent    int64
	stats   Stats
	init    bool
	fan     *fanOut          // a plan over several partitions
	vpos    int              // next virtual document
	perPart map[string]Stats // per partition, when collectAll read several
	ix      indexCursor      // where an index read stands (indexscan.go)
	pending []byte           // a document that did not fit the last batch of an index read
	last    []byte           // key of the last document returned (single-partition scans)
}

// Tail makes a scan that reached the end of its collection read on from
// where it stopped at its next batch: a tailable cursor over a capped
// collection, whose new documents have greater keys.
func (s *Scan) Tail() {
	if !s.LimitReached() {
		s.done = false
	}
}

// LimitReached reports whether the scan returned its limit.
func (s *Scan) LimitReached() bool { return s.plan.Limit > 0 && s.sent >= s.plan.Limit }

// LastKey is the key of the last document the scan returned (nil:
// none yet).
func (s *Scan) LastKey() []byte { return s.last }

// ranges are the key ranges a single-partition plan reads from resume on
// (nil: from the start): its partition's, or its logical partitions'; the
// whole collection when it was not routed.
func (s *Scan) ranges(resume []byte) []store.KeyRange {
	if len(s.plan.Spans) == 1 {
		return s.plan.Spans[0].RangesFrom(resume)
	}
	return []store.KeyRange{{Start: resume}}
}

// ContextCheckEvery is how many documents a scan examines between checks of
// its context (deadline, client gone).
const ContextCheckEvery = 32

// shape applies the projection (or returnKey) to a matched document,
// stored at key (nil: not known, as in a blocking sort's documents, which
// carry their record id in a trailing $recordId: tagRecordID).
func (s *Scan) shape(key, doc []byte) ([]byte, error) {
	p := s.plan
	if len(p.RecordIDFields) == 0 && len(p.IndexKeyFields) == 0 {
		return s.shapeDoc(doc)
	}
	var rid int64
	if key != nil {
		rid = store.RecordID(p.Coll, key)
	} else if rest, id, ok := untagRecordID(doc); ok {
		doc, rid = rest, id
	}
	out, err := s.shapeDoc(doc)
	if err != nil {
		return nil, err
	}
	for _, f := range p.RecordIDFields {
		out = appendInt64Field(out, f, rid)
	}
	if len(p.IndexKeyFields) > 0 {
		if kd, ok := s.indexKey(doc); ok {
			for _, f := range p.IndexKeyFields {
				out = appendDocField(out, f, kd)
			}
		}
	}
	return out, nil
}

// indexKey is the key of doc in the index the read uses (returnKey's
// answer); ok is false for a read of no index.
func (s *Scan) indexKey(doc []byte) ([]byte, bool) {
	p := s.plan
	if p.Index != nil && p.Index.Branches == nil && !p.Index.Ix.Wildcard {
		return p.Index.Ix.KeyDocument(doc), true
	}
	if p.Point == nil && !p.UseIDIndex {
		return nil, false
	}
	id, _ := bsoncore.Document(doc).LookupErr("_id")
	return bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build(), true
}

// appendDocField appends {name: sub} to the document doc.
func appendDocField(doc []byte, name string, sub []byte) []byte {
	out := append(make([]byte, 0, len(doc)+len(name)+2+len(sub)), doc[:len(doc)-1]...)
	out = bsoncore.AppendDocumentElement(out, name, sub)
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}

// recordIDTag is the field a blocking sort's documents carry their record
// id in until they are shaped.
const recordIDTag = "$recordId"

// tagRecordID appends {$recordId: the record id of key} to doc (a copy
// the caller owns), when the plan shows record ids.
func (s *Scan) tagRecordID(key, doc []byte) []byte {
	if len(s.plan.RecordIDFields) == 0 || key == nil {
		return doc
	}
	return appendInt64Field(doc, recordIDTag, store.RecordID(s.plan.Coll, key))
}

// appendInt64Field appends field name: n to doc.
func appendInt64Field(doc []byte, name string, n int64) []byte {
	out := make([]byte, 0, len(doc)+len(name)+10)
	out = append(out, doc[:len(doc)-1]...)
	out = bsoncore.AppendInt64Element(out, name, n)
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}

// untagRecordID takes a trailing $recordId (tagRecordID) off doc.
func untagRecordID(doc []byte) (rest []byte, rid int64, ok bool) {
	const elemLen = 1 + len(recordIDTag) + 1 + 8 // type, name, NUL, int64
	if len(doc) < 5+elemLen {
		return doc, 0, false
	}
	el := doc[len(doc)-1-elemLen : len(doc)-1]
	if el[0] != byte(bsoncore.TypeInt64) || string(el[1:1+len(recordIDTag)]) != recordIDTag || el[1+len(recordIDTag)] != 0 {
		return doc, 0, false
	}
	rid = int64(binary.LittleEndian.Uint64(el[len(el)-8:]))
	rest = append(append(make([]byte, 0, len(doc)-elemLen), doc[:len(doc)-1-elemLen]...), 0)
	binary.LittleEndian.PutUint32(rest, uint32(len(rest)))
	return rest, rid, true
}

// shapeDoc applies the projection (or returnKey) to a matched document.
func (s *Scan) shapeDoc(doc []byte) ([]byte, error) {
	p := s.plan
	if p.ReturnKey {
		if kd, ok := s.indexKey(doc); ok {
			return kd, nil
		}
		return emptyDocument, nil
	}
	if p.Proj.IsEmpty() {
		return append([]byte(nil), doc...), nil
	}
	out, err := p.Proj.Apply(doc)
	if err != nil {
		return nil, s.pl.projectionError(err)
	}
	return out, nil
}

var emptyDocument = bsoncore.NewDocumentBuilder().Build()

// errSortMemory is a blocking sort past SortMemoryLimit when no Errors
// map it.
var errSortMemory = errors.New("sort exceeded the memory limit, but did not opt in to external sorting")

// shapeOwned is shape for a document the caller already owns (a point
// read's copy, a sorted batch's): without a projection it is the result
// as it is, with no second copy.
func (s *Scan) shapeOwned(key, doc []byte) ([]byte, error) {
	if !s.plan.ReturnKey && s.plan.Proj.IsEmpty() && len(s.plan.IndexKeyFields) == 0 && (len(s.plan.RecordIDFields) == 0 || (key == nil && onlyShowRecordID(s.plan))) {
		return doc, nil // a blocking sort's document already ends with its $recordId
	}
	return s.shape(key, doc)
}

// onlyShowRecordID reports whether the record id goes to $recordId only.
func onlyShowRecordID(p *Read) bool {
	return len(p.RecordIDFields) == 1 && p.RecordIDFields[0] == recordIDTag
}

// Match tests one document against the filter and the _id bounds.
func (s *Scan) Match(doc []byte) (bool, error) {
	p := s.plan
	if p.IDBounds != nil {
		id, err := bsoncore.Document(doc).LookupErr("_id")
		if err != nil || !inIDRange(id, p.IDBounds) {
			return false, nil
		}
	}
	ok, err := p.Filter.MatchErr(doc)
	if err != nil {
		return false, s.pl.filterError(err)
	}
	return ok, nil
}

// NextBatch is Source's.
func (s *Scan) NextBatch(ctx context.Context, max, maxBytes int) ([][]byte, bool, error) {
	return s.scan(ctx, max, maxBytes, true)
}

// Count reads the whole plan without keeping documents and returns how
// many it matched after skip and limit.
func (s *Scan) Count(ctx context.Context) (int64, error) {
	for {
		_, done, err := s.scan(ctx, 0, 0, false)
		if err != nil {
			return 0, err
		}
		if done {
			return s.sent, nil
		}
	}
}

// Stats are what the scan has done so far.
func (s *Scan) Stats() Stats { return s.stats }

// scan produces up to max documents; with keep unset it only counts
// them (count, explain).
func (s *Scan) scan(ctx context.Context, max, maxBytes int, keep bool) ([][]byte, bool, error) {
	p := s.plan
	if !s.init {
		s.init, s.skip = true, p.Skip
	}
	if s.done || (p.Coll == nil && p.Virtual == nil) || (p.Limit > 0 && s.sent >= p.Limit) {
		return nil, true, nil
	}
	if p.Virtual != nil {
		return s.scanVirtual(ctx, max, maxBytes, keep)
	}
	if p.Index != nil {
		return s.scanIndex(ctx, max, maxBytes, keep)
	}
	if p.fanOut() {
		return s.scanFanOut(ctx, max, maxBytes, keep)
	}
	var docs [][]byte
	bytes := 0
	full := func() bool {
		return (max > 0 && len(docs) >= max) || (p.Limit > 0 && s.sent >= p.Limit)
	}
	if p.Point != nil {
		s.done = true
		err := s.view(ctx).View(func(tx storage.Txn) error {
			s.stats.KeysExamined++
			doc, err := tx.Get(p.Point)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			s.stats.DocsExamined++
			s.stats.BytesRead += int64(len(doc))
			ok, err := s.Match(doc)
			if err != nil || !ok {
				return err
			}
			if s.skip > 0 {
				s.skip--
				return nil
			}
			s.sent++
			s.stats.Returned++
			if keep {
				out, err := s.shapeOwned(p.Point, doc) // tx.Get copied it
				if err != nil {
					return err
				}
				docs = append(docs, out)
			}
			return nil
		})
		return docs, true, err
	}
	exhausted := true
	examined := 0
	ranges := s.ranges(s.next)
	if len(ranges) == 0 {
		s.done = true
		return nil, true, nil
	}
	err := s.view(ctx).View(func(tx storage.Txn) error {
		return tx.ScanRanges(p.Coll, ranges, func(key, doc []byte) (bool, error) {
			if examined++; examined%ContextCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			if full() {
				exhausted = p.Limit > 0 && s.sent >= p.Limit
				s.next = append(s.next[:0], key...)
				return false, nil
			}
			s.stats.DocsExamined++
			s.stats.BytesRead += int64(len(doc))
			if p.UseIDIndex || p.ShardKeyScan {
				s.stats.KeysExamined++
			}
			ok, err := s.Match(doc)
			if err != nil {
				return false, err
			}
			if ok {
				if s.skip > 0 {
					s.skip--
				} else {
					var out []byte
					if keep {
						if out, err = s.shape(key, doc); err != nil {
							return false, err
						}
						if len(docs) > 0 && bytes+len(out) > maxBytes {
							exhausted = false
							s.next = append(s.next[:0], key...)
							return false, nil
						}
						docs = append(docs, out)
						bytes += len(out)
					}
					s.last = append(s.last[:0], key...)
					s.sent++
					s.stats.Returned++
				}
			}
			s.next = append(append(s.next[:0], key...), 0) // successor of key
			return true, nil
		})
	})
	if err != nil {
		return nil, false, err
	}
	if p.Limit > 0 && s.sent >= p.Limit {
		exhausted = true
	}
	s.done = exhausted
	return docs, exhausted, nil
}

// sortedSource runs a blocking sort: at the first batch it reads every
// matching document, sorts them, and then hands them out.
type sortedSource struct {
	scan   *Scan
	sorted bool
	docs   [][]byte // sorted, skipped, limited; projected lazily
	pos    int
}

// SortMemoryLimit is MongoDB's default internalQueryMaxBlockingSortMemoryUsageBytes.
const SortMemoryLimit = 100 << 20

func (s *sortedSource) load(ctx context.Context) error {
	p := s.scan.plan
	sorting := p.Sort != nil && !p.Sort.IsEmpty()
	cmp := func(a, b sortEntry) int {
		if c := p.Sort.CompareKeys(a.keys, b.keys); c != 0 {
			return c
		}
		return a.seq - b.seq // stable: ties keep their read order
	}
	// With a limit, only the first skip+limit in sort order are kept (a
	// top-k selection in a bounded heap whose root is the worst kept),
	// and only they count against the memory limit, as in MongoDB.
	keep := 0
	if sorting && p.Limit > 0 && p.Skip+p.Limit < math.MaxInt32 {
		keep = int(p.Skip + p.Limit)
	}
	var all []sortEntry
	used := 0
	seq := 0
	add := func(d []byte) error {
		en := sortEntry{doc: d, seq: seq}
		seq++
		if sorting {
			en.keys = p.Sort.Keys(d)
		}
		if keep > 0 && len(all) == keep {
			if cmp(en, all[0]) >= 0 {
				return nil // not among the first keep
			}
			used -= len(all[0].doc)
			all[0] = en
			siftDown(all, 0, cmp)
		} else {
			all = append(all, en)
			if keep > 0 {
				siftUp(all, len(all)-1, cmp)
			}
		}
		used += len(d)
		if used > SortMemoryLimit && p.NoDiskUse {
			return s.scan.pl.sortMemoryError()
		}
		return nil
	}
	// Every partition's matching documents, read in parallel, in
	// partition order (each partition's in key order).
	matched, err := s.scan.collectAll(ctx)
	if err != nil {
		return err
	}
	for i, d := range matched {
		if err := add(d); err != nil {
			return err
		}
		matched[i] = nil
	}
	switch {
	case sorting:
		slices.SortFunc(all, cmp)
	case p.Natural < 0:
		slices.Reverse(all)
	}
	start := min(p.Skip, int64(len(all)))
	end := int64(len(all))
	if p.Limit > 0 {
		end = min(end, start+p.Limit)
	}
	for _, en := range all[start:end] {
		s.docs = append(s.docs, en.doc)
	}
	s.scan.stats.Returned = int64(len(s.docs))
	s.sorted = true
	return nil
}

// sortEntry is a document being sorted, with its sort keys and read order.
type sortEntry struct {
	doc  []byte
	keys []bsoncore.Value
	seq  int
}

// siftUp and siftDown keep h a heap whose root is the greatest by cmp.
func siftUp(h []sortEntry, i int, cmp func(a, b sortEntry) int) {
	for i > 0 {
		parent := (i - 1) / 2
		if cmp(h[i], h[parent]) <= 0 {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func siftDown(h []sortEntry, i int, cmp func(a, b sortEntry) int) {
	for {
		big := i
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(h) && cmp(h[c], h[big]) > 0 {
				big = c
			}
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// A sortedSource's statistics are its scan's.
func (s *sortedSource) Stats() Stats                     { return s.scan.stats }
func (s *sortedSource) PartitionStats() map[string]Stats { return s.scan.PartitionStats() }
func (s *sortedSource) Tally(i int) Stats                { return s.scan.Tally(i) }

func (s *sortedSource) NextBatch(ctx context.Context, max, maxBytes int) ([][]byte, bool, error) {
	if !s.sorted {
		if err := s.load(ctx); err != nil {
			return nil, false, err
		}
	}
	var out [][]byte
	bytes := 0
	for s.pos < len(s.docs) && (max <= 0 || len(out) < max) {
		d, err := s.scan.shapeOwned(nil, s.docs[s.pos])
		if err != nil {
			return nil, false, err
		}
		if len(out) > 0 && bytes+len(d) > maxBytes {
			break
		}
		out = append(out, d)
		bytes += len(d)
		s.docs[s.pos] = nil
		s.pos++
	}
	return out, s.pos >= len(s.docs), nil
}

// Tally is what the plan's i-th partition has read so far.
func (s *Scan) Tally(i int) Stats {
	switch {
	case s.fan != nil && i < len(s.fan.parts):
		return s.fan.parts[i].stats
	case s.perPart != nil && len(s.plan.Spans) > 1 && i < len(s.plan.Spans):
		return s.perPart[s.plan.Spans[i].ID]
	}
	return s.stats
}

// scanVirtual is scan over a virtual collection's documents.
func (s *Scan) scanVirtual(ctx context.Context, max, maxBytes int, keep bool) ([][]byte, bool, error) {
	p := s.plan
	var docs [][]byte
	bytes := 0
	for s.vpos < len(p.Virtual) {
		if (max > 0 && len(docs) >= max) || (p.Limit > 0 && s.sent >= p.Limit) {
			break
		}
		doc := p.Virtual[s.vpos]
		s.stats.DocsExamined++
		ok, err := s.Match(doc)
		if err != nil {
			return nil, false, err
		}
		if ok {
			if s.skip > 0 {
				s.skip--
			} else {
				if keep {
					out, err := s.shape(nil, doc)
					if err != nil {
						return nil, false, err
					}
					if len(docs) > 0 && bytes+len(out) > maxBytes {
						break
					}
					docs = append(docs, out)
					bytes += len(out)
				}
				s.sent++
				s.stats.Returned++
			}
		}
		s.vpos++
	}
	done := s.vpos >= len(p.Virtual) || (p.Limit > 0 && s.sent >= p.Limit)
	s.done = done
	return docs, done, ctx.Err()
}

// inIDRange reports whether id is within [min, max) of the _id index.
func inIDRange(id bsoncore.Value, r *IDRange) bool {
	if r.Min.Type != 0 && compareIndexKeys(id, r.Min) < 0 {
		return false
	}
	return r.Max.Type == 0 || compareIndexKeys(id, r.Max) < 0
}

// compareIndexKeys orders _id values as the _id index does.
func compareIndexKeys(a, b bsoncore.Value) int {
	return query.CompareValues(a, b)
}
