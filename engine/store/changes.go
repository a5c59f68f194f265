package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The change log (change streams, Cosmos DB's change feed).
//
// Every transaction that changes a document or the catalog writes one
// event per change under l/e<ts:8><index:4>, in the same Badger
// transaction as the change itself: a crash keeps both or neither. ts is
// the commit's cluster time (Store.SetChangeClock), taken when the
// transaction commits, strictly greater than every ts taken before it;
// index numbers the events of one commit in the order they were made.
//
// Commits take their ts before Badger commits them and may finish out of
// order, so a reader must not pass a ts that a commit still in flight
// holds: changeClock keeps the ts in flight, and ChangesVisible is the
// highest ts below all of them (every event at or before it is
// committed, and every later commit gets a greater ts). Readers wait on
// the channel ChangesVisible returns, closed after each commit that wrote
// events.
//
// Retention (SetChangeRetention) trims the oldest events in the
// background, whole commits at a time, and moves the horizon l/h
// forward first: every event before the horizon may be gone, so a
// stream that would resume before it has lost history.
//
// An insert or replace event does not copy the document it wrote when
// that version is still the document's: the event names the document's
// key (ref) and the commit writes a marker l/r<key> holding the event's
// position. While the marker is there, the stored document is the
// event's fullDocument. Whatever changes or removes the document later
// (an update, replace or delete, a drop's purge) first moves that
// version into the log as an image l/i<ts><index> and removes the
// marker, in the same transaction; a reader in one snapshot finds the
// version in exactly one of the two places. So a workload that inserts
// and never rewrites what it inserted writes each document once, not
// twice; one that rewrites pays the copy at the first rewrite, as it
// would have at the insert. Trimming removes images and markers with
// their events.

// Change operation types, as change events name them.
const (
	ChangeInsert       = "insert"
	ChangeUpdate       = "update"
	ChangeReplace      = "replace"
	ChangeDelete       = "delete"
	ChangeDrop         = "drop"
	ChangeRename       = "rename"
	ChangeDropDatabase = "dropDatabase"
	ChangeCreate       = "create"
	ChangeCreateIndex  = "createIndexes"
	ChangeDropIndex    = "dropIndexes"
	ChangeModify       = "modify"
	ChangeShard        = "shardCollection"
)

// ChangePos is a place in the change log: a commit's cluster time and the
// index of one of its events.
type ChangePos struct {
	TS    uint64
	Index uint32
}

// Less orders positions.
func (p ChangePos) Less(q ChangePos) bool {
	return p.TS < q.TS || p.TS == q.TS && p.Index < q.Index
}

// ChangeEvent is one change as the log keeps it.
type ChangeEvent struct {
	Op       string
	DB, Coll string
	UUID     []byte
	// Point is the document's place in the hash space (0 when unsharded).
	Point uint64
	// DocumentKey is the shard-key field (sharded collections) and _id.
	DocumentKey bsoncore.Document
	// FullDocument is the document after the change: inserts and
	// replaces, and updates of collections keeping images.
	FullDocument bsoncore.Document
	// PreImage is the document before an update, replace or delete of a
	// collection keeping images (changeStreamPreAndPostImages).
	PreImage          bsoncore.Document
	UpdateDescription bsoncore.Document
	// ToDB and ToColl are a rename's target.
	ToDB, ToColl string
	// Description is a catalog change's operationDescription.
	Description bsoncore.Document
	// LSID and TxnNumber name the multi-statement transaction that made
	// the change (LSID nil outside one).
	LSID      bsoncore.Document
	TxnNumber int64
	Wall      time.Time
	// Pos is where the event is in the log; set when it is read.
	Pos ChangePos
	// key is the changed document's key (document events); ref is it
	// again when the event is stored by reference (see above).
	key, ref []byte
}

// storedDocument is the fullDocument the event's record holds: none when
// it is stored by reference.
func (ev *ChangeEvent) storedDocument() bsoncore.Document {
	if len(ev.ref) > 0 {
		return nil
	}
	return ev.FullDocument
}

func (ev *ChangeEvent) encode() []byte {
	idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, 64+len(ev.DocumentKey)+len(ev.FullDocument)+len(ev.PreImage)+len(ev.UpdateDescription)))
	b = bsoncore.AppendStringElement(b, "op", ev.Op)
	b = bsoncore.AppendStringElement(b, "db", ev.DB)
	if ev.Coll != "" {
		b = bsoncore.AppendStringElement(b, "coll", ev.Coll)
	}
	if len(ev.UUID) > 0 {
		b = bsoncore.AppendBinaryElement(b, "uuid", 4, ev.UUID)
	}
	if ev.Point != 0 {
		b = bsoncore.AppendInt64Element(b, "pt", int64(ev.Point))
	}
	for _, d := range []struct {
		k string
		v bsoncore.Document
	}{{"dk", ev.DocumentKey}, {"doc", ev.storedDocument()}, {"pre", ev.PreImage}, {"ud", ev.UpdateDescription}, {"desc", ev.Description}, {"lsid", ev.LSID}} {
		if len(d.v) > 0 {
			b = bsoncore.AppendDocumentElement(b, d.k, d.v)
		}
	}
	if len(ev.ref) > 0 {
		b = bsoncore.AppendBinaryElement(b, "ref", 0, ev.ref)
	}
	if ev.ToColl != "" {
		b = bsoncore.AppendStringElement(b, "tdb", ev.ToDB)
		b = bsoncore.AppendStringElement(b, "tcoll", ev.ToColl)
	}
	if len(ev.LSID) > 0 {
		b = bsoncore.AppendInt64Element(b, "txn", ev.TxnNumber)
	}
	b = bsoncore.AppendDateTimeElement(b, "wall", ev.Wall.UnixMilli())
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

func decodeChangeEvent(raw []byte, pos ChangePos) (*ChangeEvent, error) {
	d := bsoncore.Document(raw)
	elems, err := d.Elements()
	if err != nil {
		return nil, fmt.Errorf("%w: change event at %d/%d: %v", ErrCorrupted, pos.TS, pos.Index, err)
	}
	ev := &ChangeEvent{Pos: pos}
	for _, e := range elems {
		v := e.Value()
		switch e.Key() {
		case "op":
			ev.Op = v.StringValue()
		case "db":
			ev.DB = v.StringValue()
		case "coll":
			ev.Coll = v.StringValue()
		case "uuid":
			_, ev.UUID = v.Binary()
		case "pt":
			ev.Point = uint64(v.Int64())
		case "dk":
			ev.DocumentKey = v.Document()
		case "doc":
			ev.FullDocument = v.Document()
		case "ref":
			_, ev.ref = v.Binary()
		case "pre":
			ev.PreImage = v.Document()
		case "ud":
			ev.UpdateDescription = v.Document()
		case "desc":
			ev.Description = v.Document()
		case "lsid":
			ev.LSID = v.Document()
		case "tdb":
			ev.ToDB = v.StringValue()
		case "tcoll":
			ev.ToColl = v.StringValue()
		case "txn":
			ev.TxnNumber = v.Int64()
		case "wall":
			ev.Wall = time.UnixMilli(v.DateTime()).UTC()
		}
	}
	return ev, nil
}

// changeClock hands out commit times and knows which are still in flight.
type changeClock struct {
	mu       sync.Mutex
	next     func(after uint64) uint64
	now      func() time.Time
	last     uint64
	inflight map[uint64]int
	wake     chan struct{}
}

func (c *changeClock) init(last uint64) {
	c.last = last
	c.inflight = map[uint64]int{}
	c.wake = make(chan struct{})
	c.now = time.Now
	c.next = func(after uint64) uint64 {
		t := uint64(time.Now().Unix()) << 32
		if t <= after {
			t = after + 1
		}
		return t
	}
}

// reserve is a commit's time; release must follow once it committed
// (or failed).
func (c *changeClock) reserve() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := c.next(c.last)
	if ts <= c.last {
		ts = c.last + 1
	}
	c.last = ts
	c.inflight[ts]++
	return ts
}

func (c *changeClock) release(ts uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight[ts]--; c.inflight[ts] <= 0 {
		delete(c.inflight, ts)
	}
	close(c.wake)
	c.wake = make(chan struct{})
}

func (c *changeClock) visible() (uint64, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.last
	for ts := range c.inflight {
		if ts-1 < v {
			v = ts - 1
		}
	}
	return v, c.wake
}

// changeState is the store's change-log state.
type changeState struct {
	changes      changeClock
	recent       recentChanges // the newest events, for streams at the head (recentchanges.go)
	horizon      atomic.Uint64
	retainAge    atomic.Int64 // nanoseconds; 0: keep for ever
	retainBytes  atomic.Int64 // 0: no size bound
	trimKick     chan struct{}
	changeBytes  atomic.Int64 // estimate of the log's size, for the size bound
	trimInterval time.Duration
	newLog       bool // no horizon stored yet (set by SetChangeClock)
}

// openChangeLog reads the last commit time and the horizon; a store
// that has none gets the horizon now: nothing before its first open
// was logged.
func (s *Store) openChangeLog() error {
	var last, horizon uint64
	found := false
	err := s.db.View(func(txn kv.Txn) error {
		item, err := txn.Get(changeHorizonKey)
		switch {
		case err == nil:
			found = true
			if err := item.Value(func(v []byte) error {
				if len(v) == 8 {
					horizon = binary.BigEndian.Uint64(v)
				}
				return nil
			}); err != nil {
				return err
			}
		case !errors.Is(err, kv.ErrNotFound):
			return err
		}
		// The last event, by one reverse seek: the log may be large.
		it := txn.NewIterator(kv.IterOptions{Prefix: changeEventPrefix, Reverse: true})
		defer it.Close()
		for it.Seek(append(bytes.Clone(changeEventPrefix), 0xff)); it.Valid(); it.Next() {
			if p, ok := parseChangeKey(it.Item().Key()); ok {
				last = p.TS
				break
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("open change log: %w", err)
	}
	// A store without a horizon starts its log now, by the clock
	// SetChangeClock gives: nothing before is in it.
	s.newLog = !found
	s.changes.init(max(last, horizon))
	s.recent.init(max(last, horizon))
	s.horizon.Store(horizon)
	s.changeBytes.Store(-1) // not known until the first trim with a size bound reads it
	s.trimKick = make(chan struct{}, 1)
	return nil
}

// SetChangeClock sets the clock commits take their times from: next
// returns a time later than after (the cluster clock, so that events
// and operation times are on one scale).
//
// now is the clock retention measures ages by (the same scale).
func (s *Store) SetChangeClock(next func(after uint64) uint64, now func() time.Time) {
	s.changes.mu.Lock()
	s.changes.next = next
	s.changes.now = now
	s.changes.mu.Unlock()
	if s.newLog && !s.readOnly {
		s.newLog = false
		h := uint64(now().Unix()) << 32
		err := s.update(func(txn kv.Txn) error {
			return (&Txn{s: s, t: txn}).set(changeHorizonKey, binary.BigEndian.AppendUint64(nil, h))
		})
		if err != nil {
			s.logger.Warn("starting the change log", "err", err)
			return
		}
		s.horizon.Store(h)
	}
}

// LastChangeTime is the latest commit time handed out (or the horizon).
func (s *Store) LastChangeTime() uint64 {
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	return s.changes.last
}

// ChangesVisible is the latest commit time up to which every event is
// committed, and a channel closed when that may have moved.
func (s *Store) ChangesVisible() (uint64, <-chan struct{}) { return s.changes.visible() }

// ChangeHorizon is the time before which events may have been trimmed.
func (s *Store) ChangeHorizon() uint64 { return s.horizon.Load() }

// ReadChanges visits the events at or after from whose time is at most
// upTo, in log order, until fn returns false. upTo must be at most the
// visible time (ChangesVisible). The events are shared: fn must not
// modify them.
func (s *Store) ReadChanges(from ChangePos, upTo uint64, fn func(*ChangeEvent) (bool, error)) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if evs, ok := s.recent.since(from, upTo); ok {
		for _, ev := range evs {
			if more, err := fn(ev); err != nil || !more {
				return err
			}
		}
		return nil
	}
	return mapKVErr(s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: changeEventPrefix})
		defer it.Close()
		for it.Seek(changeKey(from)); it.Valid(); it.Next() {
			item := it.Item()
			pos, ok := parseChangeKey(item.Key())
			if !ok {
				continue
			}
			if pos.TS > upTo {
				return nil
			}
			raw, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			ev, err := decodeChangeEvent(raw, pos)
			if err != nil {
				return err
			}
			if len(ev.ref) > 0 {
				if ev.FullDocument, err = referencedVersion(txn, ev.ref, pos); err != nil {
					return err
				}
			}
			if more, err := fn(ev); err != nil || !more {
				return err
			}
		}
		return nil
	}))
}

// putChanges writes evs as the events of the commit at ts.
func (t *Txn) putChanges(ts uint64, evs []*ChangeEvent) error {
	wall := time.Now()
	// A version written by reference must be the document's last in
	// this commit: a later change of the same key in it would find no
	// marker yet, so such a version is copied.
	var last map[string]int
	for i, ev := range evs {
		if ev.key != nil {
			if last == nil {
				last = make(map[string]int, len(evs))
			}
			last[string(ev.key)] = i
		}
	}
	for i, ev := range evs {
		ev.Wall = wall
		if t.owner != nil && t.owner.lsid != nil {
			ev.LSID, ev.TxnNumber = t.owner.lsid, t.owner.txnNumber
		}
		pos := ChangePos{TS: ts, Index: uint32(i)}
		ev.Pos = pos
		ev.ref = nil
		if (ev.Op == ChangeInsert || ev.Op == ChangeReplace) && ev.key != nil && last[string(ev.key)] == i {
			ev.ref = ev.key
			if err := t.setRecord(changeRefKey(ev.key), encodeChangePos(pos)); err != nil {
				return err
			}
		}
		raw := ev.encode()
		if err := t.setRecord(changeEventKey(pos, ev.key), raw); err != nil {
			return err
		}
		if t.s.changeBytes.Load() >= 0 { // -1: not read yet
			t.s.changeBytes.Add(int64(len(raw)) + 17 + entryOverhead)
		}
	}
	return nil
}

// TagChanges names the session and transaction number the transaction's
// change events carry.
func (t *Transaction) TagChanges(lsid []byte, txnNumber int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lsid, t.txnNumber = bytes.Clone(lsid), txnNumber
}

// MarkReplacement says whether the next Replace or Modify of the
// transaction replaces its document (a replacement-style update: a
// "replace" event) or updates it (an "update" event, the default).
func (t *Txn) MarkReplacement(on bool) { t.replacing = on }

func (t *Txn) logChange(ev *ChangeEvent) { t.changes = append(t.changes, ev) }

// imagesOn reports whether c keeps pre- and post-images
// (changeStreamPreAndPostImages: {enabled: true}).
func imagesOn(c *Collection) bool {
	if len(c.Options) == 0 {
		return false
	}
	v, err := bsoncore.Document(c.Options).LookupErr("changeStreamPreAndPostImages", "enabled")
	return err == nil && v.Type == bsoncore.TypeBoolean && v.Boolean()
}

// documentKey is the shard-key fields of a sharded collection and _id.
func documentKey(c *Collection, doc []byte) bsoncore.Document {
	d := bsoncore.Document(doc)
	idx, b := bsoncore.AppendDocumentStart(nil)
	if c.Sharded() {
		for _, f := range c.Spec().Fields() {
			if f.Path == "_id" {
				continue
			}
			if v, err := d.LookupErr(splitPath(f.Path)...); err == nil {
				b = bsoncore.AppendValueElement(b, f.Path, v)
			}
		}
	}
	if v, err := d.LookupErr("_id"); err == nil {
		b = bsoncore.AppendValueElement(b, "_id", v)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

func splitPath(p string) []string {
	var out []string
	for {
		i := bytes.IndexByte([]byte(p), '.')
		if i < 0 {
			return append(out, p)
		}
		out = append(out, p[:i])
		p = p[i+1:]
	}
}

func pointOf(key []byte) uint64 {
	if len(key) < 14 {
		return 0
	}
	return binary.BigEndian.Uint64(key[6:14])
}

// logDocChange records a document change of c at key: old is the
// document before (nil for an insert), doc after (nil for a delete).
func (t *Txn) logDocChange(c *Collection, key, old, doc []byte) error {
	if old != nil {
		if err := t.keepReferencedVersion(key, old); err != nil {
			return err
		}
	}
	if t.unlogged {
		return nil
	}
	ev := &ChangeEvent{DB: c.DB, Coll: c.Name, UUID: c.UUID, Point: pointOf(key), key: bytes.Clone(key)}
	images := imagesOn(c)
	switch {
	case old == nil:
		ev.Op = ChangeInsert
		ev.FullDocument = bytes.Clone(doc)
		ev.DocumentKey = documentKey(c, doc)
	case doc == nil:
		ev.Op = ChangeDelete
		ev.DocumentKey = documentKey(c, old)
	case t.replacing:
		ev.Op = ChangeReplace
		ev.FullDocument = bytes.Clone(doc)
		ev.DocumentKey = documentKey(c, doc)
	default:
		ev.Op = ChangeUpdate
		ev.DocumentKey = documentKey(c, doc)
		ev.UpdateDescription = UpdateDescription(old, doc)
		if images {
			ev.FullDocument = bytes.Clone(doc)
		}
	}
	if images && old != nil {
		ev.PreImage = bytes.Clone(old)
	}
	t.logChange(ev)
	return nil
}

// keepReferencedVersion moves old, the version of the document at key
// about to be changed or removed, into the log as an image if an event
// still names it by reference.
func (t *Txn) keepReferencedVersion(key, old []byte) error {
	mk := changeRefKey(key)
	item, err := t.t.Get(mk)
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return t.keepMarked(item, bytes.Clone(old))
}

// keepMarked moves doc, the version the marker item names, into the log
// as an image if the marker's event is still retained, and removes the
// marker.
func (t *Txn) keepMarked(marker kv.Item, doc []byte) error {
	var pos ChangePos
	var ok bool
	if err := marker.Value(func(v []byte) error { pos, ok = decodeChangePos(v); return nil }); err != nil {
		return err
	}
	if ok && doc != nil && pos.TS >= t.s.horizon.Load() {
		if err := t.setRecord(changeImageKey(pos, marker.Key()[len(changeRefPrefix):]), doc); err != nil {
			return err
		}
	}
	return t.del(marker.KeyCopy(nil))
}

// referencedVersion is the fullDocument of the event at pos stored by
// reference to the document at key: the stored document while the
// marker names pos, else the image kept when it changed. nil when
// neither is there (the event's commit was trimmed meanwhile).
func referencedVersion(txn kv.Txn, key []byte, pos ChangePos) (bsoncore.Document, error) {
	get := func(k []byte) ([]byte, error) {
		item, err := txn.Get(k)
		if errors.Is(err, kv.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return item.ValueCopy(nil)
	}
	mark, err := get(changeRefKey(key))
	if err != nil {
		return nil, err
	}
	if p, ok := decodeChangePos(mark); ok && p == pos {
		return get(key)
	}
	return get(changeImageKey(pos, key))
}

// catalogEvent is a catalog change's event.
func catalogEvent(op string, c *Collection, desc bsoncore.Document) *ChangeEvent {
	return &ChangeEvent{Op: op, DB: c.DB, Coll: c.Name, UUID: c.UUID, Description: desc}
}

// catalogChanges are the events of a catalog entry's change from cur to
// next: indexes created or dropped, options modified.
func catalogChanges(cur, next *Collection) []*ChangeEvent {
	var evs []*ChangeEvent
	had := map[string]bool{}
	for _, ix := range cur.Indexes {
		had[ix.Name] = true
	}
	has := map[string]bool{}
	var created []*Index
	for _, ix := range next.Indexes {
		has[ix.Name] = true
		if !had[ix.Name] {
			created = append(created, ix)
		}
	}
	if len(created) > 0 {
		evs = append(evs, catalogEvent(ChangeCreateIndex, next, indexesDescription(created)))
	}
	var dropped []*Index
	for _, ix := range cur.Indexes {
		if !has[ix.Name] {
			dropped = append(dropped, ix)
		}
	}
	if len(dropped) > 0 {
		evs = append(evs, catalogEvent(ChangeDropIndex, next, indexesDescription(dropped)))
	}
	if !bytes.Equal(cur.Options, next.Options) {
		idx, b := bsoncore.AppendDocumentStart(nil)
		if len(next.Options) > 0 {
			elems, _ := bsoncore.Document(next.Options).Elements()
			for _, e := range elems {
				b = append(b, e...)
			}
		}
		b, _ = bsoncore.AppendDocumentEnd(b, idx)
		evs = append(evs, catalogEvent(ChangeModify, next, b))
	}
	return evs
}

func indexesDescription(ixs []*Index) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	aidx, b := bsoncore.AppendArrayElementStart(b, "indexes")
	for i, ix := range ixs {
		spec := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.Raw(ix.Key)}, {Key: "name", Value: ix.Name}}
		if ix.Unique {
			spec = append(spec, bson.E{Key: "unique", Value: true})
		}
		raw, err := bson.Marshal(spec)
		if err != nil {
			continue
		}
		b = bsoncore.AppendDocumentElement(b, fmt.Sprint(i), raw)
	}
	b, _ = bsoncore.AppendArrayEnd(b, aidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// SetChangeRetention bounds the change log by age and by size (0: no
// bound) and starts trimming it in the background.
func (s *Store) SetChangeRetention(age time.Duration, size int64) {
	s.retainAge.Store(int64(age))
	s.retainBytes.Store(size)
	select {
	case s.trimKick <- struct{}{}:
	default:
	}
}

func (s *Store) trimLoop() {
	defer s.wg.Done()
	every := s.trimInterval
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.trimKick:
		}
		s.changes.mu.Lock()
		now := s.changes.now
		s.changes.mu.Unlock()
		if err := s.TrimChanges(now()); err != nil && !errors.Is(err, ErrClosed) {
			s.logger.Warn("trimming the change log", "err", err)
		}
	}
}

// TrimChanges removes the events retention no longer keeps, as of now.
func (s *Store) TrimChanges(now time.Time) error {
	age, limit := time.Duration(s.retainAge.Load()), s.retainBytes.Load()
	horizon := s.horizon.Load()
	cut := horizon
	if age > 0 {
		if t := uint64(now.Add(-age).Unix()) << 32; t > cut {
			cut = t
		}
	}
	if limit > 0 && s.changeBytes.Load() < 0 {
		size, err := s.changeLogSize()
		if err != nil {
			return err
		}
		s.changeBytes.Store(size)
	}
	if limit > 0 && s.changeBytes.Load() > limit {
		t, size, err := s.sizeCut(limit)
		if err != nil {
			return err
		}
		s.changeBytes.Store(size)
		if t > cut {
			cut = t
		}
	}
	// Never past what is visible: a commit in flight keeps its events.
	if v, _ := s.changes.visible(); cut > v+1 {
		cut = v + 1
	}
	if cut <= horizon {
		return nil
	}
	if err := s.Update(func(tx *Txn) error {
		return tx.set(changeHorizonKey, binary.BigEndian.AppendUint64(nil, cut))
	}); err != nil {
		return err
	}
	s.horizon.Store(cut)
	return s.deleteChangesBefore(cut)
}

// sizeCut is the time of the oldest commit to keep so that the log
// holds at most limit bytes, and the size it keeps.
func (s *Store) sizeCut(limit int64) (uint64, int64, error) {
	var cut uint64
	var kept int64
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: changeEventPrefix, Reverse: true})
		defer it.Close()
		end := append(bytes.Clone(changeEventPrefix), 0xff)
		var total, fitTotal int64
		var groupTS, fitTS uint64
		for it.Seek(end); it.Valid(); it.Next() {
			pos, ok := parseChangeKey(it.Item().Key())
			if !ok {
				continue
			}
			if pos.TS != groupTS {
				if groupTS != 0 {
					fitTS, fitTotal = groupTS, total // the commit before fits whole
				}
				groupTS = pos.TS
			}
			total += (it.Item().KeySize() + it.Item().ValueSize()) + entryOverhead
			if total > limit {
				cut, kept = fitTS, fitTotal
				if cut == 0 { // not even the newest commit fits
					cut, kept = groupTS+1, 0
				}
				return nil
			}
		}
		kept = total
		return nil
	})
	return cut, kept, err
}

func (s *Store) deleteChangesBefore(cut uint64) error {
	if err := s.deleteImagesBefore(cut); err != nil {
		return err
	}
	for {
		var keys [][]byte
		err := s.db.View(func(txn kv.Txn) error {
			it := txn.NewIterator(kv.IterOptions{Prefix: changeEventPrefix})
			defer it.Close()
			for it.Seek(changeEventPrefix); it.Valid() && len(keys) < 1000; it.Next() {
				item := it.Item()
				pos, ok := parseChangeKey(item.Key())
				if ok && pos.TS >= cut {
					break
				}
				keys = append(keys, item.KeyCopy(nil))
				// The event's marker goes with it, if it still names it.
				mk, err := staleMarker(txn, item, pos)
				if err != nil {
					return err
				}
				if mk != nil {
					keys = append(keys, mk)
				}
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		if err := s.deleteKeys(keys); err != nil {
			return err
		}
		if len(keys) < 1000 {
			return nil
		}
	}
}

// deleteKeys deletes keys in one transaction.
// deleteKeys deletes keys blindly, in write batches: not atomically (a
// cluster's groups each apply their share), for what may go in any order
// (a purge, a trim).
func (s *Store) deleteKeys(keys [][]byte) error {
	var n int64
	for _, k := range keys {
		n += int64(len(k)) + entryOverhead
	}
	if err := s.disk.admit(n, false); err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			wb.Cancel()
			return mapKVErr(err)
		}
	}
	if err := wb.Flush(); err != nil {
		return mapKVErr(err)
	}
	s.dirty.Store(true)
	return nil
}

// staleMarker is the key of the marker of the event item at pos, if the
// event is stored by reference and the marker still names it.
func staleMarker(txn kv.Txn, item kv.Item, pos ChangePos) ([]byte, error) {
	var ref []byte
	if err := item.Value(func(v []byte) error {
		if r, err := bsoncore.Document(v).LookupErr("ref"); err == nil {
			if _, b, ok := r.BinaryOK(); ok {
				ref = bytes.Clone(b)
			}
		}
		return nil
	}); err != nil || ref == nil {
		return nil, err
	}
	mk := changeRefKey(ref)
	m, err := txn.Get(mk)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var named bool
	if err := m.Value(func(v []byte) error { p, ok := decodeChangePos(v); named = ok && p == pos; return nil }); err != nil || !named {
		return nil, err
	}
	return mk, nil
}

// deleteImagesBefore deletes the kept images of events before cut.
func (s *Store) deleteImagesBefore(cut uint64) error {
	end := changeImageKey(ChangePos{TS: cut}, nil)
	for {
		var keys [][]byte
		err := s.db.View(func(txn kv.Txn) error {
			it := txn.NewIterator(kv.IterOptions{Prefix: changeImagePrefix})
			defer it.Close()
			for it.Seek(changeImagePrefix); it.Valid() && len(keys) < 1000 && bytes.Compare(it.Item().Key(), end) < 0; it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		if err := s.deleteKeys(keys); err != nil {
			return err
		}
		if len(keys) < 1000 {
			return nil
		}
	}
}

// keepPurgedVersions moves into the log the versions of collection id's
// documents that events name by reference, before a purge deletes the
// documents (a dropped collection's inserts still show their documents).
func (s *Store) keepPurgedVersions(id uint32) error {
	prefix := changeRefKey(DocPrefix(id))
	from := prefix
	for {
		var markers [][]byte
		err := s.db.View(func(txn kv.Txn) error {
			it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
			defer it.Close()
			for it.Seek(from); it.Valid() && len(markers) < 1000; it.Next() {
				markers = append(markers, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil || len(markers) == 0 {
			return err
		}
		// Markers of documents in another group than the first's go in
		// the next transaction (Txn.Plan). Each marker keeps a copy of
		// its document, so as many go in one as fit (updateFitting).
		err = updateFitting(s, markers, func(tx *Txn, part [][]byte) ([][]byte, error) {
			var later [][]byte
			for _, mk := range part {
				docKey := mk[len(changeRefPrefix):]
				if !tx.planKey(docKey) {
					later = append(later, mk)
					continue
				}
				marker, err := tx.t.Get(mk)
				if errors.Is(err, kv.ErrNotFound) {
					continue // moved meanwhile
				}
				if err != nil {
					return nil, err
				}
				var doc []byte
				if item, err := tx.t.Get(docKey); err == nil {
					if doc, err = item.ValueCopy(nil); err != nil {
						return nil, err
					}
				} else if !errors.Is(err, kv.ErrNotFound) {
					return nil, err
				}
				if err := tx.keepMarked(marker, doc); err != nil {
					return nil, err
				}
			}
			return later, nil
		})
		if err != nil {
			return err
		}
		if len(markers) < 1000 {
			return nil
		}
		from = append(bytes.Clone(markers[len(markers)-1]), 0)
	}
}

func createDescription(c *Collection) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	if len(c.Options) > 0 {
		elems, _ := bsoncore.Document(c.Options).Elements()
		for _, e := range elems {
			b = append(b, e...)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

func shardDescription(c *Collection) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendDocumentElement(b, "shardKey", c.Spec().Doc())
	b = bsoncore.AppendBooleanElement(b, "unique", false)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

func renameDescription(toDB, to string, dropped *Collection) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	tidx, b := bsoncore.AppendDocumentElementStart(b, "to")
	b = bsoncore.AppendStringElement(b, "db", toDB)
	b = bsoncore.AppendStringElement(b, "coll", to)
	b, _ = bsoncore.AppendDocumentEnd(b, tidx)
	if dropped != nil {
		b = bsoncore.AppendBinaryElement(b, "dropTarget", 4, dropped.UUID)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

func viewDescription(v *ViewDefinition) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("viewOn", v.ViewOn)
	if len(v.Pipeline) > 0 {
		b.AppendArray("pipeline", bsoncore.Array(v.Pipeline))
	}
	return b.Build()
}

// LogModify logs a modify event of c for a collMod that changed nothing
// in the catalog (MongoDB reports every collMod).
func (s *Store) LogModify(c *Collection) error {
	return s.update(func(kv.Txn) error { return nil }, catalogEvent(ChangeModify, c, createDescription(c)))
}

// changeLogSize reads the size of the change log.
func (s *Store) changeLogSize() (int64, error) {
	var size int64
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: changeEventPrefix})
		defer it.Close()
		for it.Seek(changeEventPrefix); it.Valid(); it.Next() {
			size += (it.Item().KeySize() + it.Item().ValueSize()) + entryOverhead
		}
		return nil
	})
	return size, err
}
