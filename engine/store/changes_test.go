package store

import (
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func readAllChanges(t *testing.T, s *Store) []*ChangeEvent {
	t.Helper()
	v, _ := s.ChangesVisible()
	var out []*ChangeEvent
	if err := s.ReadChanges(ChangePos{}, v, func(ev *ChangeEvent) (bool, error) {
		out = append(out, ev)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// changeTestStore is an in-memory store with collection db.c, and how
// to make its documents {_id, v} and their keys.
func changeTestStore(t *testing.T) (*Store, *Collection, func(int32, string) []byte, func(int32) []byte) {
	t.Helper()
	s, c := openWithCollection(t, Options{InMemory: true})
	doc := func(id int32, v string) []byte {
		b, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "v", Value: v}})
		return b
	}
	return s, c, doc, func(id int32) []byte { return idKey(c, id) }
}

// openWithCollection opens a store with opts, closed when the test ends,
// and creates db.c in it.
func openWithCollection(t *testing.T, opts Options) (*Store, *Collection) {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c, err := s.CreateCollection("db", "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// A write's events are written with it, in order, at one commit time;
// an aborted transaction's never are.
func TestChangeLogWrittenWithWrites(t *testing.T) {
	s, c, doc, key := changeTestStore(t)
	if err := s.Update(func(tx *Txn) error {
		if err := tx.Insert(c, key(1), doc(1, "a")); err != nil {
			return err
		}
		return tx.Insert(c, key(2), doc(2, "b"))
	}); err != nil {
		t.Fatal(err)
	}
	tr, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Update(func(tx *Txn) error { return tx.Insert(c, key(3), doc(3, "c")) }); err != nil {
		t.Fatal(err)
	}
	tr.Abort()
	if err := s.Update(func(tx *Txn) error { return tx.Replace(c, key(1), doc(1, "z"), len(doc(1, "a"))) }); err != nil {
		t.Fatal(err)
	}
	evs := readAllChanges(t, s)
	var ops []string
	for _, ev := range evs {
		ops = append(ops, ev.Op)
	}
	want := []string{ChangeCreate, ChangeInsert, ChangeInsert, ChangeUpdate}
	if len(ops) != len(want) {
		t.Fatalf("events %v, want %v", ops, want)
	}
	for i := range want {
		if ops[i] != want[i] {
			t.Fatalf("events %v, want %v", ops, want)
		}
	}
	if evs[1].Pos.TS != evs[2].Pos.TS || evs[1].Pos.Index+1 != evs[2].Pos.Index {
		t.Fatalf("one commit's events: %+v %+v", evs[1].Pos, evs[2].Pos)
	}
	if !evs[2].Pos.Less(evs[3].Pos) || evs[3].Pos.TS <= evs[2].Pos.TS {
		t.Fatalf("commit times not increasing: %+v %+v", evs[2].Pos, evs[3].Pos)
	}
	uf, err := evs[3].UpdateDescription.LookupErr("updatedFields", "v")
	if err != nil || uf.StringValue() != "z" {
		t.Fatalf("updateDescription %v", evs[3].UpdateDescription)
	}
}

// A commit in flight holds the visible time below its own.
func TestChangeClockVisibility(t *testing.T) {
	var c changeClock
	c.init(100)
	a := c.reserve()
	b := c.reserve()
	if v, _ := c.visible(); v != a-1 {
		t.Fatalf("visible %d with %d and %d in flight, want %d", v, a, b, a-1)
	}
	_, wake := c.visible()
	c.release(b)
	select {
	case <-wake:
	case <-time.After(time.Second):
		t.Fatal("release did not wake readers")
	}
	if v, _ := c.visible(); v != a-1 {
		t.Fatalf("visible %d, want %d: %d still in flight", v, a-1, a)
	}
	c.release(a)
	if v, _ := c.visible(); v != b {
		t.Fatalf("visible %d, want %d", v, b)
	}
}

func TestUpdateDescription(t *testing.T) {
	old, _ := bson.Marshal(bson.D{{Key: "a", Value: 1}, {Key: "s", Value: bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 2}}}, {Key: "arr", Value: bson.A{1, 2, 3}}, {Key: "gone", Value: 1}})
	nw, _ := bson.Marshal(bson.D{{Key: "a", Value: 1}, {Key: "s", Value: bson.D{{Key: "x", Value: 5}, {Key: "y", Value: 2}}}, {Key: "arr", Value: bson.A{1, 9}}, {Key: "new", Value: true}})
	d := UpdateDescription(old, nw)
	var got struct {
		UpdatedFields   bson.M   `bson:"updatedFields"`
		RemovedFields   []string `bson:"removedFields"`
		TruncatedArrays []bson.M `bson:"truncatedArrays"`
	}
	if err := bson.Unmarshal(bsoncore.Document(d), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.UpdatedFields) != 3 || got.UpdatedFields["s.x"] != int32(5) || got.UpdatedFields["arr.1"] != int32(9) || got.UpdatedFields["new"] != true {
		t.Fatalf("updatedFields %v", got.UpdatedFields)
	}
	if len(got.RemovedFields) != 1 || got.RemovedFields[0] != "gone" {
		t.Fatalf("removedFields %v", got.RemovedFields)
	}
	if len(got.TruncatedArrays) != 1 || got.TruncatedArrays[0]["field"] != "arr" || got.TruncatedArrays[0]["newSize"] != int32(2) {
		t.Fatalf("truncatedArrays %v", got.TruncatedArrays)
	}
}

// Inserted and replacing versions are stored once, in the collection,
// while they are current; a later update, delete or drop keeps them for
// the events that name them, and trimming removes what it kept.
func TestChangeLogKeepsInsertedVersions(t *testing.T) {
	s, c, doc, key := changeTestStore(t)
	for i, v := range []string{"a", "b", "c", "d"} {
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, key(int32(i+1)), doc(int32(i+1), v)) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(func(tx *Txn) error {
		tx.MarkReplacement(true)
		return tx.Replace(c, key(1), doc(1, "z"), len(doc(1, "a")))
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(tx *Txn) error { return tx.Delete(c, key(2), len(doc(2, "b"))) }); err != nil {
		t.Fatal(err)
	}
	tr, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Update(func(tx *Txn) error {
		if err := tx.Insert(c, key(5), doc(5, "e")); err != nil {
			return err
		}
		return tx.Replace(c, key(5), doc(5, "f"), len(doc(5, "e")))
	}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	inserted := func() map[int32]string {
		out := map[int32]string{}
		for _, ev := range readAllChanges(t, s) {
			if ev.Op != ChangeInsert && ev.Op != ChangeReplace {
				continue
			}
			id := ev.DocumentKey.Lookup("_id").Int32()
			if ev.Op == ChangeReplace {
				id += 100
			}
			v, err := ev.FullDocument.LookupErr("v")
			if err != nil {
				t.Fatalf("insert of %d: fullDocument %v", id, ev.FullDocument)
			}
			out[id] = v.StringValue()
		}
		return out
	}
	want := map[int32]string{1: "a", 2: "b", 3: "c", 4: "d", 5: "e", 101: "z"}
	check := func(when string) {
		t.Helper()
		got := inserted()
		for id, v := range want {
			if got[id] != v {
				t.Fatalf("%s: insert events show %v, want %v", when, got, want)
			}
		}
	}
	check("before the drop")
	// The insert of 3, never changed, holds no copy of its document.
	var stored, copied int
	if err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: changeEventPrefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			_ = it.Item().Value(func(v []byte) error {
				if _, err := bsoncore.Document(v).LookupErr("ref"); err == nil {
					stored++
				}
				if _, err := bsoncore.Document(v).LookupErr("doc"); err == nil {
					copied++
				}
				return nil
			})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// By reference: inserts 1-4 and the replace of 1; copied: the insert
	// of 5, updated in the same commit.
	if stored != 5 || copied != 1 {
		t.Fatalf("%d events by reference, %d with a copy; want 5 and 1", stored, copied)
	}
	if err := s.DropCollection("db", "c"); err != nil {
		t.Fatal(err)
	}
	check("after the drop")
	s.retainAge.Store(int64(time.Nanosecond))
	if err := s.TrimChanges(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(txn kv.Txn) error {
		for _, p := range [][]byte{changeEventPrefix, changeRefPrefix, changeImagePrefix} {
			it := txn.NewIterator(kv.IterOptions{Prefix: p})
			it.Rewind()
			left := it.Valid()
			it.Close()
			if left {
				t.Errorf("trimming left keys under %q", p)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// The cache of recent events serves only ranges it holds whole, in log
// order, and gives way to storage once it evicted past a reader.
func TestRecentChanges(t *testing.T) {
	var r recentChanges
	r.limit = 3 * eventBytes(&ChangeEvent{})
	r.init(10)
	ev := func(ts uint64, i uint32) *ChangeEvent { return &ChangeEvent{Pos: ChangePos{TS: ts, Index: i}} }
	if _, ok := r.since(ChangePos{TS: 10}, 100); ok {
		t.Fatal("served a range from before its floor")
	}
	r.add([]*ChangeEvent{ev(12, 0), ev(12, 1)})
	r.add([]*ChangeEvent{ev(11, 0)}) // finished after the newer commit
	got, ok := r.since(ChangePos{TS: 11}, 12)
	if !ok || len(got) != 3 || got[0].Pos.TS != 11 || got[2].Pos != (ChangePos{TS: 12, Index: 1}) {
		t.Fatalf("since 11: %v %v", ok, got)
	}
	if got, ok := r.since(ChangePos{TS: 11}, 11); !ok || len(got) != 1 {
		t.Fatalf("up to 11: %v %v", ok, got)
	}
	r.add([]*ChangeEvent{ev(13, 0)}) // over the limit: commit 11 goes
	if _, ok := r.since(ChangePos{TS: 11}, 13); ok {
		t.Fatal("served a range it evicted")
	}
	if got, ok := r.since(ChangePos{TS: 12}, 13); !ok || len(got) != 3 {
		t.Fatalf("since 12: %v %v", ok, got)
	}
	r.add([]*ChangeEvent{ev(10, 5)}) // older than the floor: storage has it
	if len(r.evs[r.head:]) != 3 {
		t.Fatalf("an event below the floor entered: %v", r.evs[r.head:])
	}
}

// Dropping a collection whose inserts the change log still names keeps
// a copy of each document for its event, in transactions the store can
// hold: 500 documents of 1 KB are 500 KB, where a store with 1 MiB
// memtables takes about 150 KB in one transaction.
func TestDropKeepsVersionsInTransactionsThatFit(t *testing.T) {
	s, c := openWithCollection(t, Options{Dir: t.TempDir(), SyncInterval: -1, MemoryLimit: 16 << 20})
	pad := strings.Repeat("p", 1000)
	const n = 500
	for i := range int32(n) {
		raw, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "v", Value: pad}})
		if err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, i), raw) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DropCollection("db", "c"); err != nil {
		t.Fatalf("drop: %v", err)
	}
	full := 0
	for _, ev := range readAllChanges(t, s) {
		if ev.Op == ChangeInsert && ev.FullDocument.Lookup("v").StringValue() == pad {
			full++
		}
	}
	if full != n {
		t.Fatalf("after the drop %d insert events show their document, want %d", full, n)
	}
}
