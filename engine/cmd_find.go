package engine

import (
	"context"
	"time"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Batch limits: MongoDB's default first batch, and the byte budget of one
// batch (a reply must fit in a BSON document).
const (
	defaultFirstBatch = 101
	maxBatchBytes     = wire.MaxBSONObjectSize
)

// findArgs are the parsed options of find.
type findArgs struct {
	snapshot                                bool // a snapshot read: secondary indexes are not used
	filter, sort, projection, let, min, max bsoncore.Document
	hint                                    hintArg
	skip, limit                             int64
	batchSize                               int64 // -1: not given
	singleBatch, returnKey, noCursorTimeout bool
	tailable, awaitData                     bool // a tailable cursor (capped collections only)
	showRecordID                            bool
	allowDiskUse                            *bool
	maxTimeMS                               int64
	collation                               collationOpt
}

func (e *Engine) cmdFind(ctx context.Context, req *request) ([]byte, error) {
	started := e.now()
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	if e.isView(req.db, name) {
		return e.readView(ctx, req, name)
	}
	args, err := parseFind(req.name, req.body)
	if err != nil {
		return nil, err
	}
	args.snapshot = snapshotOf(ctx) != nil
	plan, err := e.planFind(req.db, name, args)
	if err != nil {
		return nil, err
	}
	var src batchSource = e.source(plan)
	if args.tailable && plan.Coll != nil {
		src = &tailSource{e: e, coll: plan.Coll, scan: e.planner().Scan(plan), awaitData: args.awaitData}
	}
	bill := e.newReadBill(req, plan.Coll, plan.Spans, plan.Point, args.filter, tallyOf(src))
	if err := e.admitRead(ctx, req, &bill); err != nil {
		return nil, err
	}
	first := int64(defaultFirstBatch)
	if args.batchSize >= 0 {
		first = args.batchSize
	}
	if args.limit > 0 && args.limit < first {
		first = args.limit
	}
	var docs [][]byte
	done := plan.Coll == nil && plan.Virtual == nil
	if first > 0 && !done {
		docs, done, err = src.nextBatch(ctx, int(first), maxBatchBytes)
		e.chargeRead(req, &bill, len(docs))
		if err != nil {
			return nil, err
		}
	} else {
		e.chargeRead(req, &bill, 0)
	}
	var id int64
	if args.tailable && !done {
		// MongoDB keeps no tailable cursor on an empty collection.
		if counts, err := e.store.Counts(plan.Coll); err != nil || counts.Docs == 0 {
			done = true
		}
	}
	if !done && !args.singleBatch {
		var budget time.Duration
		if args.maxTimeMS > 0 && !args.tailable {
			budget = time.Duration(args.maxTimeMS)*time.Millisecond - e.now().Sub(started)
			if budget <= 0 {
				return nil, errorf(ErrMaxTimeMSExpired, "operation exceeded time limit")
			}
		}
		kept := bill
		id = e.cursors.open(plan.NS, req.c.wc.ID(), requestSession(req.body), src, cursorOptions{
			budget: budget, noTimeout: args.noCursorTimeout, bill: &kept, owner: req.c.cursorOwner(), snap: snapshotOf(ctx), txn: txnOf(ctx),
		})
	}
	return cursorReply(id, plan.NS, "firstBatch", batchArray(docs)), nil
}

// parseFind reads find's fields (cmd names the command for messages: find,
// or explain's inner find).
func parseFind(cmd string, body bsoncore.Document) (*findArgs, error) {
	a := &findArgs{batchSize: -1}
	it := value.ElementsOf(body)
	it.Next() // the command name
	for el, ok := it.Next(); ok; el, ok = it.Next() {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "filter":
			if v.Type != bsoncore.TypeNull {
				a.filter, err = docArg(cmd, k, v)
			}
		case "sort", "projection", "let", "min", "max":
			var d bsoncore.Document
			if v.Type == bsoncore.TypeNull {
				break
			}
			if d, err = docArg(cmd, k, v); err != nil {
				break
			}
			switch k {
			case "sort":
				// MongoDB orders by at most 32 keys (Ordering).
				if n, _ := d.Elements(); len(n) > 32 {
					err = errorf(ErrTooManyCompoundKeys, "too many compound keys")
					break
				}
				a.sort = d
			case "projection":
				a.projection = d
			case "let":
				a.let = d
			case "min":
				a.min = d
			case "max":
				a.max = d
			}
		case "hint":
			if !a.hint.parse(v) {
				err = errorf(ErrFailedToParse, "hint must be either a string or nested object")
			}
		case "skip":
			if a.skip, err = int64Arg(cmd, k, v); err == nil && a.skip < 0 {
				err = negativeValue(k, a.skip)
			}
		case "limit":
			// Drivers turn a negative limit into {limit: n, singleBatch:
			// true}; the command itself refuses one, as MongoDB does.
			if a.limit, err = int64Arg(cmd, k, v); err == nil && a.limit < 0 {
				err = negativeValue(k, a.limit)
			}
		case "batchSize":
			if a.batchSize, err = int64Arg(cmd, k, v); err == nil && a.batchSize < 0 {
				err = negativeValue(k, a.batchSize)
			}
		case "singleBatch":
			var b bool
			b, err = boolArg(cmd, k, v)
			a.singleBatch = a.singleBatch || b
		case "collation":
			err = a.collation.parse(cmd, k, v)
		case "tailable":
			a.tailable, err = boolArg(cmd, k, v)
		case "awaitData":
			a.awaitData, err = boolArg(cmd, k, v)
		case "oplogReplay": // deprecated, ignored since MongoDB 4.4
			_, err = boolArg(cmd, k, v)
		case "returnKey":
			a.returnKey, err = boolArg(cmd, k, v)
		case "showRecordId":
			a.showRecordID, err = boolArg(cmd, k, v)
		case "noCursorTimeout":
			a.noCursorTimeout, err = boolArg(cmd, k, v)
		case "allowDiskUse":
			var b bool
			if b, err = boolArg(cmd, k, v); err == nil {
				a.allowDiskUse = &b
			}
		case "allowPartialResults", "isMaster", "explain":
			_, err = boolArg(cmd, k, v)
		case "maxTimeMS":
			a.maxTimeMS, err = int64Arg(cmd, k, v)
		case "readOnce", "requestResumeToken", "$_requestResumeToken", "$_resumeAfter", "resumeAfter",
			"maxScan", "ntoreturn":
			if k == "maxScan" || k == "ntoreturn" {
				err = unknownField(cmd, k)
			}
		default:
			if !genericFields[k] {
				err = unknownField(cmd, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if a.awaitData && !a.tailable {
		return nil, errorf(ErrFailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	}
	if a.tailable {
		if err := checkTailable(a); err != nil {
			return nil, err
		}
	}
	if a.returnKey && len(a.projection) > 5 {
		// MongoDB allows only $meta projections beside returnKey.
		a.projection = nil
	}
	return a, nil
}

func mustElements(d bsoncore.Document) []bsoncore.Element {
	el, _ := d.Elements()
	return el
}

func stringOf(v bsoncore.Value) string {
	s, _ := v.StringValueOK()
	return s
}

// planFind compiles a find's filter, sort and projection into a plan.
func (e *Engine) planFind(db, name string, a *findArgs) (*readPlan, error) {
	coll := a.collation.resolve(e, db, name)
	opts := query.Options{Let: a.let, Now: e.now(), Collation: coll}
	filter, err := query.CompileWith(a.filter, opts)
	if err != nil {
		return nil, queryError(err)
	}
	p := &readPlan{NS: namespaceOf(db, name), Coll: e.store.Collection(db, name), Filter: filter,
		Skip: a.skip, Limit: a.limit, ReturnKey: a.returnKey, Snapshot: a.snapshot, Collation: coll}
	if docs, ok := e.virtualDocs(db, name); ok {
		p.Coll, p.Virtual = nil, docs
	}
	if a.allowDiskUse != nil && !*a.allowDiskUse {
		p.NoDiskUse = true
	}
	if len(a.sort) > 5 {
		if p.Sort, err = query.CompileSort(a.sort); err != nil {
			return nil, queryError(err)
		}
		p.Sort = p.Sort.WithCollation(coll)
		if dir, ok := p.Sort.Natural(); ok {
			p.Natural = dir
		}
	}
	projection, metaFields, keyFields := splitMetaFields(a.projection)
	if p.Proj, err = query.CompileProjection(projection, filter, opts); err != nil {
		return nil, queryError(err)
	}
	if a.showRecordID {
		p.RecordIDFields = append(p.RecordIDFields, "$recordId")
	}
	p.RecordIDFields = append(p.RecordIDFields, metaFields...)
	p.IndexKeyFields = keyFields
	if err := e.applyHint(p, a.hint, a.min, a.max); err != nil {
		return nil, err
	}
	if a.tailable && p.Coll != nil {
		if !p.Coll.Capped {
			return nil, tailableNonCapped()
		}
		p.Natural = 1 // a tailable cursor reads in insertion order, to the end and on
	}
	if p.Coll != nil && p.Natural == 0 && !p.UseIDIndex {
		p.Point = plan.PointKey(p.Coll, filter, a.filter)
	}
	if p.Sort != nil && p.Natural == 0 && isIDAscending(a.sort) && coll == nil && p.Virtual == nil && (p.Coll == nil || (!p.Coll.Sharded() && !p.Coll.Capped)) {
		p.StreamByID = true // documents of an unsharded collection are in _id order
	}
	p.Route(a.filter)
	p.ChooseIndex(a.filter, a.sort)
	e.planner().WeighShardKeyScan(p)
	if p.Index == nil && p.ShardKeyScan && plan.LogicalPartitionCount(p.Spans) == 1 && p.Sort != nil && isIDAscending(a.sort) && coll == nil {
		p.StreamByID = true // one logical partition is in _id order
	}
	return p, nil
}

// isIDAscending reports whether a sort spec is exactly {_id: 1}.
func isIDAscending(spec bsoncore.Document) bool {
	el := mustElements(spec)
	if len(el) != 1 || el[0].Key() != "_id" {
		return false
	}
	f, ok := numberFloat(el[0].Value())
	return ok && f == 1
}

// hintArg is a read command's hint: an index's name, or its key pattern
// (or {$natural: ±1}).
type hintArg struct {
	name string
	key  bsoncore.Document
	set  bool // given (an empty document is not)
}

// parse reads the hint value v; false if it is neither a string nor a
// document.
func (h *hintArg) parse(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString:
		h.name, h.set = stringOf(v), true
	case bsoncore.TypeEmbeddedDocument:
		h.key, h.set = v.Data, len(v.Data) > 5
	default:
		return false
	}
	return true
}

// applyHint checks a hint against the collection's indexes (only _id_
// exists) and records how it shapes the plan; min and max need a hint on
// _id and bound it.
func (e *Engine) applyHint(p *readPlan, h hintArg, minB, maxB bsoncore.Document) error {
	if h.set {
		name, key := h.name, h.key
		switch {
		case name == "_id_" && plan.BuiltIDIndex(p.Coll) != nil && len(minB) <= 5 && len(maxB) <= 5:
			p.Hinted = plan.BuiltIDIndex(p.Coll)
		case name == "_id_":
			p.UseIDIndex = true
		case name != "" && name == plan.ShardKeyIndexName(p.Coll):
			p.HintedShardKey = true
		case name != "":
			if p.Coll != nil {
				if ix := plan.IndexOfHint(p.Coll, name, nil); ix != nil && !ix.Hidden {
					p.Hinted = ix
					break
				}
				return errorf(ErrBadValue, "error processing query: ns=%s planner returned error :: caused by :: hint provided does not correspond to an existing index", p.NS)
			}
		default:
			el := mustElements(key)
			switch {
			case len(el) == 1 && el[0].Key() == "$natural":
				f, ok := numberFloat(el[0].Value())
				if !ok || (f != 1 && f != -1) {
					return errorf(ErrBadValue, "$natural hint must be 1 or -1")
				}
				p.NaturalHint = true
				if p.Sort != nil && !p.Sort.IsEmpty() {
					break // an explicit sort still sorts
				}
				p.Natural = int(f)
			case len(el) == 1 && el[0].Key() == "_id" && isOne(el[0].Value()) && plan.BuiltIDIndex(p.Coll) != nil && len(minB) <= 5 && len(maxB) <= 5:
				p.Hinted = plan.BuiltIDIndex(p.Coll)
			case len(el) == 1 && el[0].Key() == "_id" && isOne(el[0].Value()):
				p.UseIDIndex = true
			case plan.IsShardKeyIndexKey(p.Coll, key):
				p.HintedShardKey = true
			default:
				if p.Coll != nil {
					if ix := plan.IndexOfHint(p.Coll, "", key); ix != nil && !ix.Hidden {
						p.Hinted = ix
						break
					}
					return errorf(ErrBadValue, "error processing query: ns=%s planner returned error :: caused by :: hint provided does not correspond to an existing index", p.NS)
				}
			}
		}
	}
	if len(minB) <= 5 && len(maxB) <= 5 {
		return nil
	}
	if !p.UseIDIndex {
		return errorf(Code(51173), "When using min()/max() a hint of which index to use must be provided")
	}
	r := &plan.IDRange{}
	for _, b := range []struct {
		doc bsoncore.Document
		dst *bsoncore.Value
	}{{minB, &r.Min}, {maxB, &r.Max}} {
		if len(b.doc) <= 5 {
			continue
		}
		el := mustElements(b.doc)
		if len(el) != 1 || el[0].Key() != "_id" {
			return errorf(Code(51174), "The index chosen is not consistent with min/max: min/max must have the fields of the index key pattern { _id: 1 }")
		}
		*b.dst = el[0].Value()
	}
	p.IDBounds = r
	return nil
}

func isOne(v bsoncore.Value) bool {
	f, ok := numberFloat(v)
	return ok && f == 1
}

// splitMetaFields takes the {<name>: {$meta: "recordId"}} and
// {<name>: {$meta: "indexKey"}} fields out of a find's projection: the
// read adds the record id, or the key of the index it used, under those
// names after projecting the rest (plan.Read.RecordIDFields,
// IndexKeyFields). A projection of such fields only projects nothing, as
// in MongoDB.
func splitMetaFields(projection bsoncore.Document) (rest bsoncore.Document, recordIDs, indexKeys []string) {
	if len(projection) <= 5 {
		return projection, nil, nil
	}
	b := bsoncore.NewDocumentBuilder()
	for _, el := range mustElements(projection) {
		if d, ok := el.Value().DocumentOK(); ok {
			if inner := mustElements(d); len(inner) == 1 && inner[0].Key() == "$meta" {
				switch stringOf(inner[0].Value()) {
				case "recordId":
					recordIDs = append(recordIDs, el.Key())
					continue
				case "indexKey":
					indexKeys = append(indexKeys, el.Key())
					continue
				}
			}
		}
		b.AppendValue(el.Key(), el.Value())
	}
	if recordIDs == nil && indexKeys == nil {
		return projection, nil, nil
	}
	return b.Build(), recordIDs, indexKeys
}
