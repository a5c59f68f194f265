package main

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parsecdb/parsec/engine"
	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/kv/badgerkv"
)

// TestMoveLogKeepsTheNewest: the move log keeps its newest moveLogKeep
// records, in time order, each read back as written.
func TestMoveLogKeepsTheNewest(t *testing.T) {
	db, err := badgerkv.Open(badgerkv.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.UnixMilli(1_700_000_000_000)
	for i := range moveLogKeep + 5 {
		r := engine.MoveRecord{Time: start.Add(time.Duration(i) * time.Second), Server: 1, Group: int64(10 + i%3),
			NS: "db.c", Partitions: []string{"3"}, Min: bson.D{{Key: "k", Value: bson.MinKey{}}}, Max: bson.D{{Key: "k", Value: int64(7)}},
			From: 1, To: 4, Started: start, PartitionBytes: 100, BytesCopied: int64(i)}
		if i == 2 {
			r.Phase, r.Err = "catching up", "node 4 did not answer"
		}
		tx := db.NewTransaction(true)
		if err := writeMoveLog(tx, r); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var got []engine.MoveRecord
	err = db.View(func(tx kv.Txn) error {
		return scanPrefix(tx, moveLogPrefix, func(_, v []byte) error {
			var r engine.MoveRecord
			if err := bson.Unmarshal(v, &r); err != nil {
				return err
			}
			got = append(got, r)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != moveLogKeep || got[0].BytesCopied != 5 || got[len(got)-1].BytesCopied != moveLogKeep+4 {
		t.Fatalf("kept %d records, from bytesCopied %d to %d; want %d from 5", len(got), got[0].BytesCopied, got[len(got)-1].BytesCopied, moveLogKeep)
	}
	for i := 1; i < len(got); i++ {
		if !got[i-1].Time.Before(got[i].Time) {
			t.Fatalf("records out of time order at %d: %v, %v", i, got[i-1].Time, got[i].Time)
		}
	}
	last := got[len(got)-1]
	if last.NS != "db.c" || last.To != 4 || len(last.Min) != 1 || last.Max[0].Value != int64(7) || !last.Started.Equal(start) || last.Err != "" {
		t.Errorf("record read back as %+v", last)
	}
}

// TestMoveLogFailuresOncePerText: a failed attempt is recorded once per
// move and error text, at most maxFailuresPerMove per move.
func TestMoveLogFailuresOncePerText(t *testing.T) {
	db, err := badgerkv.Open(badgerkv.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	started := time.Now() // finer than the records' milliseconds
	add := func(group int64, text string) error {
		tx := db.NewTransaction(true)
		defer tx.Discard()
		r := engine.MoveRecord{Time: time.Now(), Group: group, From: 1, To: 4, Started: started, Phase: "catching up", Err: text,
			Min: bson.D{}, Max: bson.D{}, Partitions: []string{}}
		if _, err := addFailure(tx, r); err != nil {
			return err
		}
		return tx.Commit()
	}
	count := func() int {
		n := 0
		_ = db.View(func(tx kv.Txn) error {
			return scanPrefix(tx, moveLogPrefix, func(_, _ []byte) error { n++; return nil })
		})
		return n
	}
	for range 3 {
		if err := add(7, "node 4 does not answer"); err != nil && err != errRecorded {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if n := count(); n != 1 {
		t.Fatalf("one error text three times: %d records", n)
	}
	if err := add(7, "node 4 does not answer"); err != errRecorded {
		t.Errorf("the same failure again: %v, want errRecorded", err)
	}
	for i := range maxFailuresPerMove + 3 {
		_ = add(7, fmt.Sprintf("error %d", i))
		time.Sleep(time.Millisecond)
	}
	if n := count(); n != maxFailuresPerMove {
		t.Errorf("many error texts of one move: %d records, want %d", n, maxFailuresPerMove)
	}
	if err := add(8, "node 4 does not answer"); err != nil {
		t.Errorf("another move's failure: %v", err)
	}
	if n := count(); n != maxFailuresPerMove+1 {
		t.Errorf("after another move's failure: %d records", n)
	}
}
