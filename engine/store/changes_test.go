package store

import (
	"testing"
	"time"

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

// A write's events are written with it, in order, at one commit time;
// an aborted transaction's never are.
func TestChangeLogWrittenWithWrites(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateCollection("db", "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := func(id int32, v string) []byte {
		b, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "v", Value: v}})
		return b
	}
	key := func(id int32) []byte { return idKey(c, id) }
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
