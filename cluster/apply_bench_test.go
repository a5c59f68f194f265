package cluster

import (
	"encoding/binary"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
)

// BenchmarkApplyInserts applies entries shaped as a replicated insert's
// (the writer's fence, the new document's absence and the document, its
// change-log, retryable-write and session records and a counter), seven
// to a commit as under 16 writers: the work of every replica per insert.
// Its replica shares its spans with other groups, as a node's partition
// groups do: owned-by-key judges every key by the key alone (Parsec's
// keys but index entries), owned-by-value reads each key it puts to
// judge the value there.
func BenchmarkApplyInserts(b *testing.B) {
	b.Run("owned-by-key", func(b *testing.B) { benchmarkApplyInserts(b, func([]byte) bool { return true }) })
	b.Run("owned-by-value", func(b *testing.B) { benchmarkApplyInserts(b, nil) })
}

func benchmarkApplyInserts(b *testing.B, ownsByKey func([]byte) bool) {
	db := openBadger(b, b.TempDir())
	defer db.Close()
	m := newMachine(b, db, 2, "m/", "d/", "s/", "l/", "c/")
	m.owns = func(k, _ []byte) bool { return len(k) > 0 }
	m.ownsByKey = ownsByKey
	fence := []byte("node 1 term 2")
	setup := NewBatch()
	setup.Put([]byte("m/fence"), fence)
	if _, err := m.Update([]sm.Entry{{Index: 1, Cmd: setup.Encoded()}}); err != nil {
		b.Fatal(err)
	}
	doc := make([]byte, 1024)
	const perCommit = 7
	entry := func(i uint64) []byte {
		id := binary.BigEndian.AppendUint64(nil, i*0x9E3779B97F4A7C15)
		bt := NewBatch()
		bt.Expect([]byte("m/fence"), fence)
		bt.ExpectAbsent(append([]byte("d/"), id...))
		bt.Put(append([]byte("d/"), id...), doc)
		bt.Put(append([]byte("s/r"), id...), make([]byte, 45))
		bt.Put(append([]byte("s/h"), id[:4]...), make([]byte, 20))
		bt.Put(append([]byte("l/rd/"), id...), make([]byte, 12))
		bt.Put(append([]byte("l/e"), id...), make([]byte, 155))
		bt.Put([]byte("c/counts"), make([]byte, 24))
		return bt.Encoded()
	}
	commits := make([][]sm.Entry, (b.N+perCommit-1)/perCommit)
	index := uint64(1)
	for i := range commits {
		commits[i] = make([]sm.Entry, perCommit)
		for j := range commits[i] {
			index++
			commits[i][j] = sm.Entry{Index: index, Cmd: entry(index)}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, ents := range commits {
		out, err := m.Update(ents)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range out {
			if e.Result.Value != ResultApplied {
				b.Fatalf("entry %d: %d %s", e.Index, e.Result.Value, e.Result.Data)
			}
		}
	}
}
