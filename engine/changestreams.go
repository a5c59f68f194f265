package engine

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Change streams: aggregate with a leading $changeStream stage reads the
// store's change log (engine/store/changes.go) from a starting point and
// turns its events into MongoDB's change events, on a collection, a
// database ({aggregate: 1}) or the whole deployment
// (allChangesForCluster on admin). The rest of the pipeline runs on each
// event. The cursor is tailable and awaits data: a getMore with no event
// to return waits until a commit wakes it or its maxTimeMS passes, then
// answers an empty batch; every batch carries a postBatchResumeToken.
//
// A resume token is {_data: <hex>}: a version byte, the event's commit
// time and index in the log, flags (an invalidate, or a high-water mark
// that names no event), and a CRC-32 of those, so a truncated or forged
// token is refused instead of read as another place in the log. A
// stream resumes strictly after the place its token names.
//
// Parsec's extension: {$changeStream: {partitionKeyRangeId: "<id>"}} on
// a collection reads the events of one physical partition only, as
// Cosmos DB's change feed reads one partition key range.

const tokenVersion = 1

const (
	tokenInvalidate = 1 << iota
	tokenHighWater
)

// resumeToken is a decoded resume token.
type resumeToken struct {
	pos   store.ChangePos
	flags byte
}

func (t resumeToken) encode() bsoncore.Document {
	b := make([]byte, 0, 18)
	b = append(b, tokenVersion)
	b = binary.BigEndian.AppendUint64(b, t.pos.TS)
	b = binary.BigEndian.AppendUint32(b, t.pos.Index)
	b = append(b, t.flags)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return bsoncore.NewDocumentBuilder().AppendString("_data", strings.ToUpper(hex.EncodeToString(b))).Build()
}

func decodeResumeToken(field string, v bsoncore.Value) (resumeToken, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return resumeToken{}, wrongType("$changeStream", field, v, "object")
	}
	data, err := d.LookupErr("_data")
	if err != nil {
		return resumeToken{}, errorf(ErrInvalidResumeToken, "Invalid resume token: missing _data field")
	}
	s, ok := data.StringValueOK()
	if !ok {
		return resumeToken{}, errorf(ErrInvalidResumeToken, "Invalid resume token: _data must be a string")
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 18 || b[0] != tokenVersion ||
		crc32.ChecksumIEEE(b[:14]) != binary.BigEndian.Uint32(b[14:]) {
		return resumeToken{}, errorf(ErrInvalidResumeToken, "Invalid resume token: the token was not issued by this server or is truncated")
	}
	return resumeToken{pos: store.ChangePos{TS: binary.BigEndian.Uint64(b[1:]), Index: binary.BigEndian.Uint32(b[9:])}, flags: b[13]}, nil
}

// streamScope is what a stream watches.
type streamScope int

const (
	scopeCollection streamScope = iota
	scopeDatabase
	scopeCluster
)

// changeStreamSpec is a parsed $changeStream stage.
type changeStreamSpec struct {
	fullDocument       string // "default", "updateLookup", "whenAvailable", "required"
	fullDocumentBefore string // "off", "whenAvailable", "required"
	resumeAfter        *resumeToken
	startAfter         *resumeToken
	startAt            uint64
	hasStartAt         bool
	allChanges         bool
	expanded           bool
	partition          string
	hasPartition       bool
}

func parseChangeStreamSpec(v bsoncore.Value) (*changeStreamSpec, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, errorf(ErrFailedToParse, "the $changeStream stage must be an object, but found type %s", typeName(v.Type))
	}
	s := &changeStreamSpec{fullDocument: "default", fullDocumentBefore: "off"}
	for el := range value.All(d) {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "fullDocument":
			s.fullDocument, err = stringArg("$changeStream", k, v)
			if err == nil && s.fullDocument != "default" && s.fullDocument != "updateLookup" && s.fullDocument != "whenAvailable" && s.fullDocument != "required" {
				err = errorf(ErrBadValue, "'%s' is not a valid value for the fullDocument option of $changeStream", s.fullDocument)
			}
		case "fullDocumentBeforeChange":
			s.fullDocumentBefore, err = stringArg("$changeStream", k, v)
			if err == nil && s.fullDocumentBefore != "off" && s.fullDocumentBefore != "whenAvailable" && s.fullDocumentBefore != "required" {
				err = errorf(ErrBadValue, "'%s' is not a valid value for the fullDocumentBeforeChange option of $changeStream", s.fullDocumentBefore)
			}
		case "resumeAfter":
			var t resumeToken
			if t, err = decodeResumeToken(k, v); err == nil {
				s.resumeAfter = &t
			}
		case "startAfter":
			var t resumeToken
			if t, err = decodeResumeToken(k, v); err == nil {
				s.startAfter = &t
			}
		case "startAtOperationTime":
			if v.Type != bsoncore.TypeTimestamp {
				err = wrongType("$changeStream", k, v, "timestamp")
			} else {
				t, i := v.Timestamp()
				s.startAt, s.hasStartAt = uint64(t)<<32|uint64(i), true
			}
		case "allChangesForCluster":
			s.allChanges, err = boolArg("$changeStream", k, v)
		case "showExpandedEvents":
			s.expanded, err = boolArg("$changeStream", k, v)
		case "partitionKeyRangeId":
			s.partition, err = stringArg("$changeStream", k, v)
			s.hasPartition = true
		case "allowToRunOnConfigDB", "allowToRunOnSystemNS", "showSystemEvents", "showMigrationEvents", "showRawUpdateDescription":
			_, err = boolArg("$changeStream", k, v)
		default:
			err = unknownField("$changeStream", k)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case s.resumeAfter != nil && s.startAfter != nil:
		return nil, errorf(errBothResumeOptions, "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage")
	case (s.resumeAfter != nil || s.startAfter != nil) && s.hasStartAt:
		return nil, errorf(errManyResumeOptions, "Only one type of resume option is allowed, but multiple were found.")
	case s.resumeAfter != nil && s.resumeAfter.flags&tokenInvalidate != 0:
		return nil, errorf(ErrInvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
	}
	return s, nil
}

func typeName(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeString:
		return "string"
	case bsoncore.TypeArray:
		return "array"
	case bsoncore.TypeEmbeddedDocument:
		return "object"
	}
	return t.String()
}

// changeStreamStages are the stages a change stream's pipeline may hold
// after $changeStream.
var changeStreamStages = map[string]bool{
	"$match": true, "$project": true, "$addFields": true, "$set": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true, "$redact": true, "$changeStreamSplitLargeEvent": true,
}

// changeStreamStage reports whether pipeline starts with $changeStream,
// and refuses one anywhere else.
func changeStreamStage(pipeline bsoncore.Document) (bsoncore.Value, bool, error) {
	vals, _ := bsoncore.Array(pipeline).Values()
	var spec bsoncore.Value
	found := false
	for i, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			continue
		}
		el, err := d.IndexErr(0)
		if err != nil || el.Key() != "$changeStream" {
			continue
		}
		if i > 0 {
			return spec, false, errorf(errChangeStreamNotFirst, "$changeStream is only valid as the first stage in a pipeline")
		}
		spec, found = el.Value(), true
	}
	return spec, found, nil
}

// openChangeStream runs an aggregate whose first stage is $changeStream.
func (e *Engine) openChangeStream(ctx context.Context, req *request, coll string, dbLevel bool, args *aggArgs, specVal bsoncore.Value) ([]byte, error) {
	spec, err := parseChangeStreamSpec(specVal)
	if err != nil {
		return nil, err
	}
	if txnOf(ctx) != nil {
		return nil, errorf(ErrOperationNotSupportedInTransaction, "Operation not permitted in transaction :: caused by :: $changeStream cannot run in a transaction")
	}
	if args.explain {
		return nil, errorf(ErrCommandNotSupported, "explain of a $changeStream aggregate is not supported by Parsec")
	}
	cs := &changeStream{e: e, db: req.db, coll: coll, spec: spec}
	switch {
	case spec.allChanges:
		if req.db != "admin" || !dbLevel {
			return nil, errorf(ErrInvalidOptions, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name; found %s", namespaceOf(req.db, map[bool]string{true: "$cmd.aggregate", false: coll}[dbLevel]))
		}
		cs.scope = scopeCluster
	case dbLevel:
		if req.db == "admin" || req.db == "config" || req.db == "local" {
			return nil, errorf(ErrInvalidNamespace, "$changeStream may not be opened on the internal %s database", req.db)
		}
		cs.scope = scopeDatabase
	default:
		if req.db == "admin" || req.db == "config" || req.db == "local" {
			return nil, errorf(ErrInvalidNamespace, "$changeStream may not be opened on the internal %s database", req.db)
		}
		if strings.HasPrefix(coll, "system.") {
			return nil, errorf(ErrInvalidNamespace, "cannot open $changeStream for internal %s collection", namespaceOf(req.db, coll))
		}
		if e.store.ViewDefinition(req.db, coll) != nil {
			return nil, errorf(ErrCommandNotSupportedOnView, "Namespace %s is a view, not a collection", namespaceOf(req.db, coll))
		}
		cs.scope = scopeCollection
	}
	if spec.hasPartition {
		c := e.store.Collection(req.db, coll)
		if cs.scope != scopeCollection || c == nil {
			return nil, errorf(ErrInvalidOptions, "partitionKeyRangeId needs a change stream on an existing collection")
		}
		found := false
		if !c.Sharded() {
			cs.minPoint, cs.maxPoint, found = 0, ^uint64(0), spec.partition == "0"
		} else {
			for _, p := range c.Map().Partitions() {
				if p.IDString() == spec.partition {
					cs.minPoint, cs.maxPoint, found = p.Min, p.Max, true
				}
			}
		}
		if !found {
			return nil, errorf(ErrInvalidOptions, "collection %s has no partition key range %q", c.Namespace(), spec.partition)
		}
	}
	if err := cs.compile(args); err != nil {
		return nil, err
	}
	if err := cs.start(); err != nil {
		return nil, err
	}
	ns := namespaceOf(req.db, coll)
	if dbLevel {
		ns = namespaceOf(req.db, "$cmd.aggregate")
	}
	first := int64(defaultFirstBatch)
	if args.batchSize >= 0 {
		first = args.batchSize
	}
	var docs [][]byte
	if first > 0 {
		if docs, err = cs.batch(ctx, int(first), 0); err != nil {
			return nil, err
		}
	}
	cs.bill = e.newReadBill(req, e.store.Collection(req.db, coll), nil, nil, nil, cs)
	e.chargeRead(req, &cs.bill, len(docs))
	id := int64(0)
	if !cs.done {
		id = e.cursors.open(ns, req.c.wc.ID(), requestSession(req.body), cs, cursorOptions{owner: req.c.cursorOwner()})
	}
	return changeStreamReply(id, ns, "firstBatch", batchArray(docs), cs.postBatchToken()), nil
}

// changeStreamReply is a cursor reply with a postBatchResumeToken.
func changeStreamReply(id int64, ns, batchName string, batch []byte, token bsoncore.Document) []byte {
	idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(batch)+len(ns)+128))
	cidx, b := bsoncore.AppendDocumentElementStart(b, "cursor")
	b = bsoncore.AppendArrayElement(b, batchName, batch)
	b = bsoncore.AppendDocumentElement(b, "postBatchResumeToken", token)
	b = bsoncore.AppendInt64Element(b, "id", id)
	b = bsoncore.AppendStringElement(b, "ns", ns)
	b, _ = bsoncore.AppendDocumentEnd(b, cidx)
	b = bsoncore.AppendDoubleElement(b, "ok", 1)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// changeStream is an open stream: a cursor's source.
type changeStream struct {
	e          *Engine
	db, coll   string
	scope      streamScope
	spec       *changeStreamSpec
	pipeline   *agg.Pipeline // the stages after $changeStream (nil: none)
	next       store.ChangePos
	lastToken  resumeToken // the postBatchResumeToken
	invalidate *store.ChangeEvent
	done       bool
	// minPoint and maxPoint bound the hash space of a
	// partitionKeyRangeId stream.
	minPoint, maxPoint uint64
	bill               readBill
	examined, read     int64
}

func (cs *changeStream) tally(i int) planStats {
	if i > 0 {
		return planStats{}
	}
	return planStats{DocsExamined: cs.examined, BytesRead: cs.read}
}

// nextBatch makes a change stream a batchSource: a batch without waiting.
func (cs *changeStream) nextBatch(ctx context.Context, max, _ int) ([][]byte, bool, error) {
	docs, err := cs.batch(ctx, max, 0)
	return docs, cs.done, err
}

func (cs *changeStream) compile(args *aggArgs) error {
	vals, _ := bsoncore.Array(args.pipeline).Values()
	if len(vals) <= 1 {
		return nil
	}
	ab := bsoncore.NewArrayBuilder()
	var names []string
	for _, v := range vals[1:] {
		d, ok := v.DocumentOK()
		if !ok {
			return errorf(ErrTypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		el, err := d.IndexErr(0)
		if err != nil {
			return errorf(ErrFailedToParse, "A pipeline stage specification object must contain exactly one field.")
		}
		if el.Key() == "$changeStreamSplitLargeEvent" {
			continue
		}
		ab.AppendDocument(d)
		names = append(names, el.Key())
	}
	rest := *args
	rest.pipeline = bsoncore.Document(ab.Build())
	p, err := cs.e.parsePipeline(cs.db, cs.coll, &rest)
	if err != nil {
		return err // an unknown stage is refused as in any pipeline
	}
	for _, n := range names {
		if !changeStreamStages[n] {
			return errorf(ErrIllegalOperation, "%s is not permitted in a $changeStream pipeline", n)
		}
	}
	cs.pipeline = p
	return nil
}

// start finds where the stream begins.
func (cs *changeStream) start() error {
	st := cs.e.store
	horizon := st.ChangeHorizon()
	visible, _ := st.ChangesVisible()
	spec := cs.spec
	tok := spec.resumeAfter
	if tok == nil {
		tok = spec.startAfter
	}
	switch {
	case tok != nil:
		if tok.pos.TS < horizon {
			return errorf(ErrChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
		}
		if tok.flags&tokenHighWater != 0 {
			cs.next = store.ChangePos{TS: tok.pos.TS + 1}
		} else {
			ev, err := cs.eventAt(tok.pos)
			if err != nil {
				return err
			}
			if ev == nil {
				return errorf(ErrChangeStreamFatal, "cannot resume stream; the resume token was not found.")
			}
			cs.next = store.ChangePos{TS: tok.pos.TS, Index: tok.pos.Index + 1}
			if tok.flags&tokenInvalidate == 0 && cs.invalidates(ev) {
				// Resuming from the event that invalidated the stream
				// gives the invalidate again.
				cs.invalidate = ev
			}
		}
		cs.lastToken = *tok
	case spec.hasStartAt:
		if spec.startAt < horizon {
			return errorf(ErrChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
		}
		cs.next = store.ChangePos{TS: spec.startAt}
		cs.lastToken = resumeToken{pos: store.ChangePos{TS: spec.startAt - 1, Index: ^uint32(0)}, flags: tokenHighWater}
	default:
		cs.next = store.ChangePos{TS: visible + 1}
		cs.lastToken = resumeToken{pos: store.ChangePos{TS: visible, Index: ^uint32(0)}, flags: tokenHighWater}
	}
	return nil
}

func (cs *changeStream) eventAt(pos store.ChangePos) (*store.ChangeEvent, error) {
	var found *store.ChangeEvent
	err := cs.e.store.ReadChanges(pos, pos.TS, func(ev *store.ChangeEvent) (bool, error) {
		if ev.Pos == pos {
			found = ev
		}
		return false, nil
	})
	return found, err
}

func (cs *changeStream) postBatchToken() bsoncore.Document { return cs.lastToken.encode() }

// internalDB reports the databases a cluster-wide stream leaves out.
func internalDB(db string) bool { return db == "admin" || db == "config" || db == "local" }

// expandedOps are the events only showExpandedEvents shows.
var expandedOps = map[string]bool{
	store.ChangeCreate: true, store.ChangeCreateIndex: true, store.ChangeDropIndex: true,
	store.ChangeModify: true, store.ChangeShard: true, store.ChangeReshard: true,
}

// watches reports whether ev is one of the stream's events.
func (cs *changeStream) watches(ev *store.ChangeEvent) bool {
	if expandedOps[ev.Op] && !cs.spec.expanded {
		return false
	}
	if strings.HasPrefix(ev.Coll, "system.") {
		return false
	}
	switch cs.scope {
	case scopeCluster:
		return !internalDB(ev.DB)
	case scopeDatabase:
		return ev.DB == cs.db
	}
	if ev.Op == store.ChangeDropDatabase {
		return false // the collection's drop came first and invalidated
	}
	if ev.DB != cs.db || ev.Coll != cs.coll {
		return false
	}
	if cs.spec.hasPartition && ev.DocumentKey != nil && (ev.Point < cs.minPoint || ev.Point > cs.maxPoint) {
		return false
	}
	return true
}

// invalidates reports whether ev ends the stream.
func (cs *changeStream) invalidates(ev *store.ChangeEvent) bool {
	switch cs.scope {
	case scopeCollection:
		return (ev.Op == store.ChangeDrop || ev.Op == store.ChangeRename) && ev.DB == cs.db && ev.Coll == cs.coll
	case scopeDatabase:
		return ev.Op == store.ChangeDropDatabase && ev.DB == cs.db
	}
	return false
}

// batch returns up to max events (no bound when max <= 0), waiting up
// to wait for the first one when there is none.
func (cs *changeStream) batch(ctx context.Context, max int, wait time.Duration) ([][]byte, error) {
	var out [][]byte
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		if cs.done {
			return out, nil
		}
		if cs.invalidate != nil {
			out = append(out, cs.invalidateEvent(cs.invalidate))
			return out, nil
		}
		visible, wake := cs.e.store.ChangesVisible()
		bytes := 0
		var failure error
		err := cs.e.store.ReadChanges(cs.next, visible, func(ev *store.ChangeEvent) (bool, error) {
			if max > 0 && len(out) >= max || bytes >= maxBatchBytes {
				return false, nil
			}
			cs.next = store.ChangePos{TS: ev.Pos.TS, Index: ev.Pos.Index + 1}
			cs.examined++
			if !cs.watches(ev) {
				return true, nil
			}
			doc, err := cs.render(ctx, ev)
			if err != nil {
				failure = err
				return false, nil
			}
			cs.read += int64(len(doc))
			tok := resumeToken{pos: ev.Pos}
			if doc != nil {
				out = append(out, doc)
				bytes += len(doc)
			}
			cs.lastToken = tok
			if cs.invalidates(ev) {
				cs.invalidate = ev
				return false, nil
			}
			return true, nil
		})
		if err == nil {
			err = failure
		}
		if err != nil {
			return nil, err
		}
		if cs.invalidate != nil {
			if max <= 0 || len(out) < max {
				out = append(out, cs.invalidateEvent(cs.invalidate))
			}
			return out, nil
		}
		if len(out) > 0 && (max > 0 && len(out) >= max || bytes >= maxBatchBytes) {
			return out, nil // more may follow: the token is the last event's
		}
		// Read to the end of what is visible: the high-water mark moves.
		if hw := (store.ChangePos{TS: visible, Index: ^uint32(0)}); cs.next.TS <= visible+1 && cs.lastToken.pos.Less(hw) {
			cs.next = store.ChangePos{TS: visible + 1}
			cs.lastToken = resumeToken{pos: hw, flags: tokenHighWater}
		}
		if len(out) > 0 || wait <= 0 {
			return out, nil
		}
		select {
		case <-wake:
		case <-deadline:
			return out, nil
		case <-ctx.Done():
			return out, nil
		}
	}
}

// invalidateEvent is the event that ends the stream after ev; the
// stream is done once it is returned.
func (cs *changeStream) invalidateEvent(ev *store.ChangeEvent) []byte {
	cs.done = true
	cs.invalidate = nil
	tok := resumeToken{pos: ev.Pos, flags: tokenInvalidate}
	cs.lastToken = tok
	b := bsoncore.NewDocumentBuilder().
		AppendDocument("_id", tok.encode()).
		AppendString("operationType", "invalidate").
		AppendTimestamp("clusterTime", uint32(ev.Pos.TS>>32), uint32(ev.Pos.TS)).
		AppendDateTime("wallTime", ev.Wall.UnixMilli()).
		Build()
	return b
}

// render is ev as a change event through the stream's pipeline (nil: the
// pipeline dropped it).
func (cs *changeStream) render(ctx context.Context, ev *store.ChangeEvent) ([]byte, error) {
	tok := resumeToken{pos: ev.Pos}.encode()
	b := bsoncore.NewDocumentBuilder().
		AppendDocument("_id", tok).
		AppendString("operationType", ev.Op).
		AppendTimestamp("clusterTime", uint32(ev.Pos.TS>>32), uint32(ev.Pos.TS)).
		AppendDateTime("wallTime", ev.Wall.UnixMilli())
	if cs.spec.expanded && len(ev.UUID) > 0 {
		b.AppendBinary("collectionUUID", bson.TypeBinaryUUID, ev.UUID)
	}
	switch ev.Op {
	case store.ChangeInsert, store.ChangeReplace:
		b.AppendDocument("fullDocument", ev.FullDocument)
	case store.ChangeUpdate:
		switch cs.spec.fullDocument {
		case "updateLookup":
			doc, err := cs.lookup(ev)
			if err != nil {
				return nil, err
			}
			appendDocOrNull(b, "fullDocument", doc)
		case "whenAvailable":
			appendDocOrNull(b, "fullDocument", ev.FullDocument)
		case "required":
			if ev.FullDocument == nil {
				return nil, errorf(ErrNoMatchingDocument, "Change stream was configured to require a post-image for all update, delete and replace events, but the post-image was not found for event: %s", tokenString(tok))
			}
			b.AppendDocument("fullDocument", ev.FullDocument)
		}
	}
	nsb := bsoncore.NewDocumentBuilder().AppendString("db", ev.DB)
	if ev.Coll != "" {
		nsb.AppendString("coll", ev.Coll)
	}
	b.AppendDocument("ns", nsb.Build())
	if ev.ToColl != "" {
		b.AppendDocument("to", bsoncore.NewDocumentBuilder().AppendString("db", ev.ToDB).AppendString("coll", ev.ToColl).Build())
	}
	if ev.DocumentKey != nil {
		b.AppendDocument("documentKey", ev.DocumentKey)
	}
	if ev.Op == store.ChangeUpdate {
		b.AppendDocument("updateDescription", cs.updateDescription(ev.UpdateDescription))
	}
	if ev.Op == store.ChangeUpdate || ev.Op == store.ChangeReplace || ev.Op == store.ChangeDelete {
		switch cs.spec.fullDocumentBefore {
		case "whenAvailable":
			appendDocOrNull(b, "fullDocumentBeforeChange", ev.PreImage)
		case "required":
			if ev.PreImage == nil {
				return nil, errorf(ErrNoMatchingDocument, "Change stream was configured to require a pre-image for all update, delete and replace events, but the pre-image was not found for event: %s", tokenString(tok))
			}
			b.AppendDocument("fullDocumentBeforeChange", ev.PreImage)
		}
	}
	if cs.spec.expanded && ev.Description != nil && (expandedOps[ev.Op] || ev.Op == store.ChangeRename) {
		b.AppendDocument("operationDescription", ev.Description)
	}
	if ev.LSID != nil {
		b.AppendDocument("lsid", ev.LSID)
		b.AppendInt64("txnNumber", ev.TxnNumber)
	}
	doc := b.Build()
	if cs.pipeline == nil {
		return doc, nil
	}
	it := cs.pipeline.Run(agg.Docs([]bsoncore.Document{doc}))
	defer it.Close()
	out, err := it.Next(ctx)
	if err != nil {
		return nil, aggError(err)
	}
	if out == nil {
		return nil, nil
	}
	id, err := out.LookupErr("_id")
	if err != nil || id.Type != bsoncore.TypeEmbeddedDocument || !equalDocs(id.Document(), tok) {
		return nil, errorf(ErrChangeStreamFatal, "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed.")
	}
	return append([]byte(nil), out...), nil
}

func equalDocs(a, b bsoncore.Document) bool { return string(a) == string(b) }

func tokenString(tok bsoncore.Document) string {
	s, _ := tok.Lookup("_data").StringValueOK()
	return "{_data: \"" + s + "\"}"
}

func appendDocOrNull(b *bsoncore.DocumentBuilder, key string, d bsoncore.Document) {
	if d == nil {
		b.AppendNull(key)
		return
	}
	b.AppendDocument(key, d)
}

// lookup reads the current version of an updated document (updateLookup).
func (cs *changeStream) lookup(ev *store.ChangeEvent) (bsoncore.Document, error) {
	c := cs.e.store.Collection(ev.DB, ev.Coll)
	if c == nil || !bytesEqual(c.UUID, ev.UUID) {
		return nil, nil
	}
	id, err := ev.DocumentKey.LookupErr("_id")
	if err != nil {
		return nil, nil
	}
	key, err := docKeyOf(c, ev.DocumentKey, id)
	if err != nil {
		return nil, nil
	}
	var doc []byte
	err = cs.e.store.View(func(tx storage.Txn) error {
		d, err := tx.Get(key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		doc = d
		return err
	})
	cs.read += int64(len(doc))
	return doc, err
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// changeStreamGetMore is a getMore of a change stream's cursor: it waits
// up to maxTimeMS (the driver's maxAwaitTimeMS) for the first event and
// answers an empty batch, not an error, when none came.
func (e *Engine) changeStreamGetMore(ctx context.Context, req *request, cur *cursor, cs *changeStream, ns string, id int64, max int, waitMS int64) ([]byte, error) {
	wait := defaultAwait
	if waitMS > 0 {
		wait = time.Duration(waitMS) * time.Millisecond
	}
	if a, ok := e.getMoreFailPoint.trigger("getMore", ""); ok && a.data.hasErrorCode {
		e.cursors.Release(cur, false)
		ce := errorf(Code(a.data.errorCode), "Failing command via 'failGetMoreAfterCursorCheckout' failpoint")
		if a.data.hasErrorLabels {
			ce.Extra = bson.D{{Key: "errorLabels", Value: a.data.errorLabels}}
			return nil, ce
		}
		return nil, withLabel(ce, "ResumableChangeStreamError", resumableStreamError)
	}
	if err := e.admitRead(ctx, req, &cs.bill); err != nil {
		e.cursors.Release(cur, false)
		return nil, err
	}
	docs, err := cs.batch(ctx, max, wait)
	e.chargeRead(req, &cs.bill, len(docs))
	e.cursors.Release(cur, cs.done || err != nil)
	if err != nil {
		if ce := toCommandError(err); ce.Code == ErrChangeStreamFatal || ce.Code == ErrChangeStreamHistoryLost {
			return nil, withLabel(ce, "NonResumableChangeStreamError", func(Code) bool { return true })
		}
		return nil, withLabel(err, "ResumableChangeStreamError", resumableStreamError)
	}
	if cs.done {
		id = 0
	}
	return changeStreamReply(id, ns, "nextBatch", batchArray(docs), cs.postBatchToken()), nil
}

// resumableStreamError reports whether a change stream's driver may
// resume after err: what MongoDB labels ResumableChangeStreamError.
func resumableStreamError(code Code) bool {
	switch code {
	case ErrInterrupted, ErrMaxTimeMSExpired, ErrCursorNotFound, 6, 7, 89, 91, 133, 150, 189, 234, 262, 9001, 10107, 11600, 11602, 13388, 13435, 13436, 63, 237:
		return true
	}
	return false
}

// ChangeLogLimits bound the change log by age (0: 24 hours; negative:
// for ever) and by size (0: no bound).
type ChangeLogLimits struct {
	Retention time.Duration
	Bytes     int64
}

// defaultChangeRetention is how long the change log keeps events.
const defaultChangeRetention = 24 * time.Hour

// startChangeLog puts the store's commit times on the cluster clock
// (after a restart the clock moves past the last logged commit, so
// operation times and event times stay on one scale) and sets retention.
func (e *Engine) startChangeLog() {
	e.clock.After(e.now(), e.store.LastChangeTime())
	e.store.SetChangeClock(func(after uint64) uint64 { return e.clock.After(e.now(), after) }, e.now)
	age := e.cfg.ChangeLog.Retention
	switch {
	case age == 0:
		age = defaultChangeRetention
	case age < 0:
		age = 0
	}
	e.store.SetChangeRetention(age, max(e.cfg.ChangeLog.Bytes, 0))
}

// withLabel is err as a command error, labelled when pred holds for its
// code.
func withLabel(err error, label string, pred func(Code) bool) error {
	ce := toCommandError(err)
	if !pred(ce.Code) {
		return ce
	}
	out := *ce
	out.Extra = append(append(bson.D(nil), ce.Extra...), bson.E{Key: "errorLabels", Value: bson.A{label}})
	return &out
}

// markReplacement tells the store whether the next write of tx replaces
// its document ("replace" events) or updates it ("update" events).
func markReplacement(tx storage.Txn, on bool) {
	if m, ok := tx.(interface{ MarkReplacement(bool) }); ok {
		m.MarkReplacement(on)
	}
}

// anonymousUID is the uid of a session without a user: the SHA-256 of
// the empty user name, as MongoDB computes it.
var anonymousUID = []byte{0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
	0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55}

// tagChanges names the session and txnNumber a transaction's change
// events carry.
func tagChanges(t storage.Transaction, lsid []byte, n int64) {
	tg, ok := t.(interface{ TagChanges([]byte, int64) })
	if !ok || len(lsid) == 0 {
		return
	}
	doc := bsoncore.NewDocumentBuilder().AppendBinary("id", bson.TypeBinaryUUID, lsid).
		AppendBinary("uid", bson.TypeBinaryGeneric, anonymousUID).Build()
	tg.TagChanges(doc, n)
}

// imagesOption checks changeStreamPreAndPostImages: {enabled: <bool>}.
func imagesOption(cmd string, v bsoncore.Value) error {
	d, err := docArg(cmd, "changeStreamPreAndPostImages", v)
	if err != nil {
		return err
	}
	seen := false
	for el := range value.All(d) {
		if el.Key() != "enabled" {
			return unknownField("changeStreamPreAndPostImages", el.Key())
		}
		if _, err := boolArg("changeStreamPreAndPostImages", "enabled", el.Value()); err != nil {
			return err
		}
		seen = true
	}
	if !seen {
		return missingField("changeStreamPreAndPostImages", "enabled")
	}
	return nil
}

// updateDescription is an update's description as the stream shows it:
// disambiguatedPaths only with showExpandedEvents, as MongoDB.
func (cs *changeStream) updateDescription(d bsoncore.Document) bsoncore.Document {
	if cs.spec.expanded {
		return d
	}
	b := bsoncore.NewDocumentBuilder()
	for el := range value.All(d) {
		if el.Key() != "disambiguatedPaths" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}
