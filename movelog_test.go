package main

import (
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
