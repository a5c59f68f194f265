package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// readPlan is how a read (find, count, distinct, and explain of them)
// goes through one collection: which physical partitions and keys it
// reads, in what order, what it keeps and how it shapes the result.
type readPlan struct {
	// snapshot: the read reads a snapshot, whose index entries may
	// predate an index (snapshots.go); it uses no secondary index.
	snapshot   bool
	ns         string
	coll       *store.Collection // nil: the collection does not exist
	spans      []partitionSpan   // the partitions routed to, in hash order
	virtual    [][]byte          // documents of a virtual collection (config.*), read instead of coll
	filter     *query.Filter
	sort       *query.Sort // nil: none
	proj       *query.Projection
	skip       int64
	limit      int64  // 0: none
	point      []byte // IDHACK: the only key to read
	idBounds   *idRange
	natural    int  // $natural direction asked for (hint or sort); 0: none
	useIDIndex bool // hint on _id_ (or min/max): report IXSCAN on _id
	// shardKeyScan: the read reads logical partitions only (routed by
	// the shard key): explain reports an IXSCAN of the shard-key index.
	shardKeyScan bool
	// hintedShardKey: a hint names the shard-key index; no secondary
	// index is used.
	hintedShardKey bool
	streamByID     bool // sort {_id: 1} answered by key order
	returnKey      bool
	noDiskUse      bool         // allowDiskUse: false given explicitly
	index          *indexPlan   // secondary indexes read (indexplan.go); nil: none
	hinted         *store.Index // the secondary index a hint names
	naturalHint    bool         // hint {$natural: ±1}: a collection scan, whatever the sort
}

// idRange is min/max on the _id index: [min, max).
type idRange struct{ min, max bsoncore.Value }

// partitions are the physical partitions the plan reads.
func (p *readPlan) partitions() []string {
	if p.coll == nil || len(p.spans) == 0 {
		return []string{"0"}
	}
	ids := make([]string, len(p.spans))
	for i, s := range p.spans {
		ids[i] = s.id
	}
	return ids
}

// route sets the partitions the plan reads: those filter can match, or
// the one holding the point key.
func (p *readPlan) route(filter bsoncore.Document) {
	if p.coll == nil || !p.coll.Sharded() {
		return // one partition, "0": the whole collection
	}
	if p.point != nil {
		// the partition that owns the key's point: d/<coll:4><point:8>...
		m := p.coll.Map()
		p.spans = []partitionSpan{spanOf(p.coll, m.At(m.Lookup(binary.BigEndian.Uint64(p.point[6:14]))))}
		return
	}
	p.spans = routePartitions(p.coll, filter)
	if p.naturalHint || p.natural != 0 {
		// a collection scan, as asked: whole partitions, in key order
		for i := range p.spans {
			p.spans[i].lps = nil
		}
	}
	p.shardKeyScan = byShardKey(p.spans) || p.hintedShardKey
}

// fanOut reports whether the plan reads more than one partition.
func (p *readPlan) fanOut() bool { return p.point == nil && len(p.spans) > 1 }

// planStats count what a plan's execution did, for explain.
type planStats struct {
	docsExamined int64
	keysExamined int64
	returned     int64
	bytesRead    int64 // of the documents examined, for request units
}

// blockingSort reports whether the plan must read everything before its
// first result.
func (p *readPlan) blockingSort() bool {
	// Key order is value order until a key is cut (value.MaxKeyLen):
	// an index or a collection that has held one is marked, and sorts
	// in memory from then on.
	byID := p.streamByID && (p.coll == nil || !p.coll.CutIDs)
	byIndex := p.index != nil && p.index.sorted && !p.index.ix.CutKeys
	if byID || byIndex {
		return false
	}
	return (p.sort != nil && !p.sort.IsEmpty()) || p.natural < 0
}

// source makes the batch source that runs the plan.
func (e *Engine) source(p *readPlan) batchSource {
	scan := &scanSource{store: e.store, plan: p}
	if p.blockingSort() {
		return &sortedSource{scan: scan}
	}
	return scan
}

// view is what the scan reads under ctx: the snapshot of a snapshot read,
// else the store.
func (s *scanSource) view(ctx context.Context) reader { return viewIn(ctx, s.store) }

// scanSource reads a collection in key order (or one key), filtering,
// skipping and limiting. It resumes after the last key it returned, each
// batch in its own read transaction. A plan over several partitions reads
// them in parallel (fanout.go).
type scanSource struct {
	store   storage.Storage
	plan    *readPlan
	next    []byte // resume key; nil at the start
	done    bool
	skip    int64 // still to skip
	sent    int64
	stats   planStats
	init    bool
	fan     *fanOut              // a plan over several partitions
	vpos    int                  // next virtual document (configdb.go)
	perPart map[string]planStats // per partition, when collectAll read several
	ix      indexCursor          // where an index read stands (indexscan.go)
	pending []byte               // a document that did not fit the last batch of an index read
}

// ranges are the key ranges a single-partition plan reads from resume on
// (nil: from the start): its partition's, or its logical partitions'; the
// whole collection when it was not routed.
func (s *scanSource) ranges(resume []byte) []store.KeyRange {
	if len(s.plan.spans) == 1 {
		return s.plan.spans[0].rangesFrom(resume)
	}
	return []store.KeyRange{{Start: resume}}
}

// ctxCheckEvery is how many documents a scan examines between checks of
// its context (deadline, client gone).
const ctxCheckEvery = 32

// shape applies the projection (or returnKey) to a matched document.
func (s *scanSource) shape(doc []byte) ([]byte, error) {
	p := s.plan
	if p.returnKey {
		if p.index != nil && p.index.branches == nil && !p.index.ix.Wildcard {
			return p.index.ix.KeyDocument(doc), nil
		}
		if p.point == nil && !p.useIDIndex {
			return emptyDocument, nil
		}
		id, _ := bsoncore.Document(doc).LookupErr("_id")
		return bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build(), nil
	}
	if p.proj.IsEmpty() {
		return append([]byte(nil), doc...), nil
	}
	out, err := p.proj.Apply(doc)
	if err != nil {
		return nil, positionalError(queryError(err))
	}
	return out, nil
}

var emptyDocument = bsoncore.NewDocumentBuilder().Build()

// shapeOwned is shape for a document the caller already owns (a point
// read's copy, a sorted batch's): without a projection it is the result
// as it is, with no second copy.
func (s *scanSource) shapeOwned(doc []byte) ([]byte, error) {
	if !s.plan.returnKey && s.plan.proj.IsEmpty() {
		return doc, nil
	}
	return s.shape(doc)
}

// match tests one document against the filter and the _id bounds.
func (s *scanSource) match(doc []byte) (bool, error) {
	p := s.plan
	if p.idBounds != nil {
		id, err := bsoncore.Document(doc).LookupErr("_id")
		if err != nil || !inIDRange(id, p.idBounds) {
			return false, nil
		}
	}
	ok, err := p.filter.MatchErr(doc)
	if err != nil {
		return false, queryError(err)
	}
	return ok, nil
}

func (s *scanSource) nextBatch(ctx context.Context, max, maxBytes int) ([][]byte, bool, error) {
	return s.scan(ctx, max, maxBytes, true)
}

// scan produces up to max documents; with keep unset it only counts
// them (count, explain).
func (s *scanSource) scan(ctx context.Context, max, maxBytes int, keep bool) ([][]byte, bool, error) {
	p := s.plan
	if !s.init {
		s.init, s.skip = true, p.skip
	}
	if s.done || (p.coll == nil && p.virtual == nil) || (p.limit > 0 && s.sent >= p.limit) {
		return nil, true, nil
	}
	if p.virtual != nil {
		return s.scanVirtual(ctx, max, maxBytes, keep)
	}
	if p.index != nil {
		return s.scanIndex(ctx, max, maxBytes, keep)
	}
	if p.fanOut() {
		return s.scanFanOut(ctx, max, maxBytes, keep)
	}
	var docs [][]byte
	bytes := 0
	full := func() bool {
		return (max > 0 && len(docs) >= max) || (p.limit > 0 && s.sent >= p.limit)
	}
	if p.point != nil {
		s.done = true
		err := s.view(ctx).View(func(tx storage.Txn) error {
			s.stats.keysExamined++
			doc, err := tx.Get(p.point)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			s.stats.docsExamined++
			s.stats.bytesRead += int64(len(doc))
			ok, err := s.match(doc)
			if err != nil || !ok {
				return err
			}
			if s.skip > 0 {
				s.skip--
				return nil
			}
			s.sent++
			s.stats.returned++
			if keep {
				out, err := s.shapeOwned(doc) // tx.Get copied it
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
		return tx.ScanRanges(p.coll, ranges, func(key, doc []byte) (bool, error) {
			if examined++; examined%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			if full() {
				exhausted = p.limit > 0 && s.sent >= p.limit
				s.next = append(s.next[:0], key...)
				return false, nil
			}
			s.stats.docsExamined++
			s.stats.bytesRead += int64(len(doc))
			if p.useIDIndex || p.shardKeyScan {
				s.stats.keysExamined++
			}
			ok, err := s.match(doc)
			if err != nil {
				return false, err
			}
			if ok {
				if s.skip > 0 {
					s.skip--
				} else {
					var out []byte
					if keep {
						if out, err = s.shape(doc); err != nil {
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
					s.sent++
					s.stats.returned++
				}
			}
			s.next = append(append(s.next[:0], key...), 0) // successor of key
			return true, nil
		})
	})
	if err != nil {
		return nil, false, err
	}
	if p.limit > 0 && s.sent >= p.limit {
		exhausted = true
	}
	s.done = exhausted
	return docs, exhausted, nil
}

// sortedSource runs a blocking sort: at the first batch it reads every
// matching document, sorts them, and then hands them out.
type sortedSource struct {
	scan   *scanSource
	sorted bool
	docs   [][]byte // sorted, skipped, limited; projected lazily
	pos    int
}

// sortMemoryLimit is MongoDB's default internalQueryMaxBlockingSortMemoryUsageBytes.
const sortMemoryLimit = 100 << 20

func (s *sortedSource) load(ctx context.Context) error {
	p := s.scan.plan
	sorting := p.sort != nil && !p.sort.IsEmpty()
	cmp := func(a, b sortEntry) int {
		if c := p.sort.CompareKeys(a.keys, b.keys); c != 0 {
			return c
		}
		return a.seq - b.seq // stable: ties keep their read order
	}
	// With a limit, only the first skip+limit in sort order are kept (a
	// top-k selection in a bounded heap whose root is the worst kept),
	// and only they count against the memory limit, as in MongoDB.
	keep := 0
	if sorting && p.limit > 0 && p.skip+p.limit < math.MaxInt32 {
		keep = int(p.skip + p.limit)
	}
	var all []sortEntry
	used := 0
	seq := 0
	add := func(d []byte) error {
		en := sortEntry{doc: d, seq: seq}
		seq++
		if sorting {
			en.keys = p.sort.Keys(d)
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
		if used > sortMemoryLimit && p.noDiskUse {
			return errorf(ErrQueryMemoryLimit, "Executor error during find command :: caused by :: Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", sortMemoryLimit)
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
	case p.natural < 0:
		slices.Reverse(all)
	}
	start := min(p.skip, int64(len(all)))
	end := int64(len(all))
	if p.limit > 0 {
		end = min(end, start+p.limit)
	}
	for _, en := range all[start:end] {
		s.docs = append(s.docs, en.doc)
	}
	s.scan.stats.returned = int64(len(s.docs))
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

func (s *sortedSource) nextBatch(ctx context.Context, max, maxBytes int) ([][]byte, bool, error) {
	if !s.sorted {
		if err := s.load(ctx); err != nil {
			return nil, false, err
		}
	}
	var out [][]byte
	bytes := 0
	for s.pos < len(s.docs) && (max <= 0 || len(out) < max) {
		d, err := s.scan.shapeOwned(s.docs[s.pos])
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

// inIDRange reports whether id is within [min, max) of the _id index.
func inIDRange(id bsoncore.Value, r *idRange) bool {
	if r.min.Type != 0 && compareIndexKeys(id, r.min) < 0 {
		return false
	}
	return r.max.Type == 0 || compareIndexKeys(id, r.max) < 0
}

// compareIndexKeys orders _id values as the _id index does.
func compareIndexKeys(a, b bsoncore.Value) int {
	return query.CompareValues(a, b)
}
