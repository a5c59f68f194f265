package sessions

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestAttemptRecords(t *testing.T) {
	c := newClock()
	recs := newRecords()
	tab := NewTable(recs, nil, nil)
	s, _ := tab.Checkout(context.Background(), lsid)
	a, err := s.Attempt(5, nil, 10, c.now())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Executed(0); ok {
		t.Fatal("a first attempt found a statement run")
	}
	upserted := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)}
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 7).Build()
	// Statements 10-12 are inserts in a row (one record), 13 an upsert,
	// 14 a findAndModify; 15 failed and is not recorded.
	err = a.Record(writes{r: recs}, c.now(),
		Record{0, Outcome{Op: "i", N: 1}}, Record{1, Outcome{Op: "i", N: 1}}, Record{2, Outcome{Op: "i", N: 1}},
		Record{3, Outcome{Op: "i", N: 1, Upserted: upserted}},
		Record{4, Outcome{Op: "u", N: 1, NModified: 1, FindAndModify: true, Value: doc, PostImage: true}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(recs.stmts[string(lsid)]); n != 3 {
		t.Fatalf("%d records, want 3 (a run of inserts, an upsert, a findAndModify)", n)
	}
	a.Committed()
	a.Release(c.now())

	// The retry: same txnNumber, from a table that read the store anew
	// (a restart) and from this one.
	for name, tab := range map[string]*Table{"same table": tab, "after restart": NewTable(recs, nil, nil)} {
		s, _ := tab.Checkout(context.Background(), lsid)
		a, err := s.Attempt(5, nil, 10, c.now())
		if err != nil {
			t.Fatal(name, err)
		}
		for i := range 3 {
			if o, ok := a.Executed(i); !ok || o.Op != "i" || o.N != 1 {
				t.Fatalf("%s: statement %d: %+v %v", name, i, o, ok)
			}
		}
		if o, ok := a.Executed(3); !ok || o.Upserted.Type != bsoncore.TypeInt32 || o.Upserted.Int32() != 7 {
			t.Fatalf("%s: upsert: %+v %v", name, o, ok)
		}
		if o, ok := a.Executed(4); !ok || !o.FindAndModify || !o.PostImage || o.NModified != 1 || !reflect.DeepEqual([]byte(o.Value), []byte(doc)) {
			t.Fatalf("%s: findAndModify: %+v %v", name, o, ok)
		}
		if _, ok := a.Executed(5); ok {
			t.Fatalf("%s: an unrecorded statement is executed", name)
		}
		if got := a.Retried(); !reflect.DeepEqual(got, []int32{10, 11, 12, 13, 14}) {
			t.Fatalf("%s: retried %v", name, got)
		}
		// Older txnNumbers are refused.
		s.Release(c.now())
		s, _ = tab.Checkout(context.Background(), lsid)
		var old *TooOldError
		if _, err := s.Attempt(4, nil, 0, c.now()); !errors.As(err, &old) || old.Number != 4 || old.Newer != 5 {
			t.Fatalf("%s: txnNumber 4: %v", name, err)
		}
		s.Release(c.now())
	}

	// A newer txnNumber finds nothing run; stmtIds name the statements.
	s, _ = tab.Checkout(context.Background(), lsid)
	a, err = s.Attempt(6, []int32{12, 40}, 0, c.now())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Executed(0); ok {
		t.Fatal("a newer txnNumber sees an older one's statement")
	}
	if a.StmtID(1) != 40 {
		t.Fatalf("StmtID(1) = %d, want 40", a.StmtID(1))
	}
	a.Release(c.now())
}

func TestAttemptResetsManyRecords(t *testing.T) {
	c := newClock()
	recs := newRecords()
	tab := NewTable(recs, nil, nil)
	write := func(txn int64, n int) {
		t.Helper()
		s, _ := tab.Checkout(context.Background(), lsid)
		a, err := s.Attempt(txn, nil, 0, c.now())
		if err != nil {
			t.Fatal(err)
		}
		var rs []Record
		for i := range n {
			rs = append(rs, Record{i, Outcome{Op: "d", N: 1}}) // deletes do not share records
		}
		if err := a.Record(writes{r: recs}, c.now(), rs...); err != nil {
			t.Fatal(err)
		}
		a.Committed()
		a.Release(c.now())
	}
	write(1, StaleRecordsKept)
	write(2, 1)
	if recs.resets != 0 {
		t.Fatal("a write after few records deleted them")
	}
	write(3, StaleRecordsKept+1)
	write(4, 1)
	if recs.resets != 1 {
		t.Fatalf("%d resets after more than StaleRecordsKept records, want 1", recs.resets)
	}
	if n := len(recs.stmts[string(lsid)]); n != 1 {
		t.Fatalf("%d records after the reset, want 1", n)
	}
}

func TestOutcomeEncoding(t *testing.T) {
	id := bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, "x")}
	for _, o := range []Outcome{
		{Op: "i", N: 1},
		{Op: "i", N: 1, Run: 3},
		{Op: "u", N: 1, NModified: 1},
		{Op: "i", N: 1, Upserted: bsoncore.Value{Type: bsoncore.Type(id.Type), Data: id.Value}},
		{Op: "d", N: 1, FindAndModify: true},
		{Op: "u", N: 1, FindAndModify: true, PostImage: true, Value: bsoncore.NewDocumentBuilder().AppendString("a", "b").Build()},
	} {
		got, err := decodeOutcome(o.encode())
		if err != nil {
			t.Fatal(err)
		}
		if got.Op != o.Op || got.N != o.N || got.Run != o.Run || got.NModified != o.NModified || got.FindAndModify != o.FindAndModify ||
			got.PostImage != o.PostImage || !reflect.DeepEqual([]byte(got.Value), []byte(o.Value)) || got.Upserted.Type != o.Upserted.Type ||
			!reflect.DeepEqual(got.Upserted.Data, o.Upserted.Data) {
			t.Fatalf("%+v came back as %+v", o, got)
		}
	}
}
