package cluster

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"
	sm "github.com/lni/dragonboat/v4/statemachine"
)

func openBadger(t testing.TB, dir string, tune ...func(*badger.Options)) *badger.DB {
	t.Helper()
	opts := badger.DefaultOptions(dir).WithLogger(nil)
	for _, f := range tune {
		f(&opts)
	}
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func newMachine(t testing.TB, db *badger.DB, shardID uint64, prefixes ...string) *StateMachine {
	t.Helper()
	var spans []Span
	for _, p := range prefixes {
		spans = append(spans, PrefixSpan([]byte(p)))
	}
	m, err := NewStateMachine(db, shardID, spans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Open(nil); err != nil {
		t.Fatal(err)
	}
	return m
}

// dump is every key of db (metadata included) as "key=value" lines.
func dump(t testing.TB, db *badger.DB, prefix string) string {
	t.Helper()
	var sb strings.Builder
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(&sb, "%q=%q\n", it.Item().Key(), v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func TestUpdateAppliesAndRejectsWhole(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	m := newMachine(t, db, 7, "g/")

	ok := NewBatch()
	ok.Put([]byte("g/a"), []byte("1"))
	ok.Put([]byte("g/b"), []byte("2"))
	ok.Add([]byte("g/n"), 10, 1)
	ok.Delete([]byte("g/b"))
	ok.Add([]byte("g/n"), 5) // sees the add before it in the same batch

	outside := NewBatch()
	outside.Put([]byte("g/c"), []byte("3"))
	outside.Put([]byte("h/x"), []byte("no"))

	notCounter := NewBatch()
	notCounter.Put([]byte("g/d"), []byte("4"))
	notCounter.Add([]byte("g/a"), 1) // g/a holds "1": not a vector of int64

	ents := []sm.Entry{
		{Index: 1, Cmd: ok.Encoded()},
		{Index: 2, Cmd: outside.Encoded()},
		{Index: 3, Cmd: notCounter.Encoded()},
		{Index: 4, Cmd: []byte{9, 9}},
	}
	res, err := m.Update(ents)
	if err != nil {
		t.Fatal(err)
	}
	wantResult := []uint64{ResultApplied, ResultRejected, ResultRejected, ResultRejected}
	for i, e := range res {
		if e.Result.Value != wantResult[i] {
			t.Errorf("entry %d: result %d (%s), want %d", e.Index, e.Result.Value, e.Result.Data, wantResult[i])
		}
	}
	if got, want := dump(t, db, "g/"), `"g/a"="1"`+"\n"+`"g/n"="\x00\x00\x00\x00\x00\x00\x00\x0f\x00\x00\x00\x00\x00\x00\x00\x01"`+"\n"; got != want {
		t.Errorf("state:\n%s\nwant:\n%s", got, want)
	}
	if dump(t, db, "h/") != "" {
		t.Error("a rejected batch wrote outside the spans")
	}
	st := m.Stats()
	if m.Applied() != 4 || st.Entries != 4 || st.Rejected != 3 || st.Commits != 1 {
		t.Errorf("applied %d, stats %+v", m.Applied(), st)
	}

	// A new instance over the same Badger resumes at index 4.
	again := newMachine(t, db, 7, "g/")
	if again.Stats().OpenIndex != 4 {
		t.Errorf("reopened at %d, want 4", again.Stats().OpenIndex)
	}
	if _, err := again.Update([]sm.Entry{{Index: 4, Cmd: ok.Encoded()}}); err == nil {
		t.Error("re-applying entry 4 succeeded")
	}
}

func TestExpectations(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	m := newMachine(t, db, 8, "g/")
	batch := func(build func(b *Batch)) []byte {
		b := NewBatch()
		build(b)
		return b.Encoded()
	}
	ents := []sm.Entry{
		// Creates g/a once: the second copy conflicts and writes nothing.
		{Index: 1, Cmd: batch(func(b *Batch) {
			b.ExpectAbsent([]byte("g/a"))
			b.Put([]byte("g/a"), []byte("1"))
			b.Add([]byte("g/n"), 1)
		})},
		{Index: 2, Cmd: batch(func(b *Batch) {
			b.ExpectAbsent([]byte("g/a"))
			b.Put([]byte("g/a"), []byte("1"))
			b.Add([]byte("g/n"), 1)
		})},
		// Compare-and-set: only the one that saw "1" applies.
		{Index: 3, Cmd: batch(func(b *Batch) { b.Expect([]byte("g/a"), []byte("1")); b.Put([]byte("g/a"), []byte("2")) })},
		{Index: 4, Cmd: batch(func(b *Batch) { b.Expect([]byte("g/a"), []byte("1")); b.Put([]byte("g/a"), []byte("3")) })},
		// An expectation sees the batch's own earlier writes.
		{Index: 5, Cmd: batch(func(b *Batch) {
			b.Put([]byte("g/b"), []byte("x"))
			b.Expect([]byte("g/b"), []byte("x"))
			b.Delete([]byte("g/b"))
			b.ExpectAbsent([]byte("g/b"))
			b.ExpectAbsent([]byte("g/c")) // only read: must not create it
		})},
		// An expectation on a missing key fails.
		{Index: 6, Cmd: batch(func(b *Batch) { b.Expect([]byte("g/zz"), []byte{}); b.Put([]byte("g/d"), []byte("no")) })},
		// By digest: the one that saw "2" applies, a stale digest and a
		// missing key conflict.
		{Index: 7, Cmd: batch(func(b *Batch) {
			b.ExpectHash([]byte("g/a"), ValueDigest([]byte("2")))
			b.Put([]byte("g/a"), []byte("4"))
		})},
		{Index: 8, Cmd: batch(func(b *Batch) {
			b.ExpectHash([]byte("g/a"), ValueDigest([]byte("2")))
			b.Put([]byte("g/a"), []byte("5"))
		})},
		{Index: 9, Cmd: batch(func(b *Batch) { b.ExpectHash([]byte("g/zz"), ValueDigest(nil)); b.Put([]byte("g/d"), []byte("no")) })},
	}
	res, err := m.Update(ents)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{ResultApplied, ResultConflict, ResultApplied, ResultConflict, ResultApplied, ResultConflict, ResultApplied, ResultConflict, ResultConflict}
	for i, e := range res {
		if e.Result.Value != want[i] {
			t.Errorf("entry %d: result %d (%s), want %d", e.Index, e.Result.Value, e.Result.Data, want[i])
		}
	}
	if got, want := dump(t, db, "g/"), `"g/a"="4"`+"\n"+`"g/n"="\x00\x00\x00\x00\x00\x00\x00\x01"`+"\n"; got != want {
		t.Errorf("state:\n%s\nwant:\n%s", got, want)
	}
}

func TestLookup(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	m := newMachine(t, db, 1, "a/", "c/")
	b := NewBatch()
	for _, k := range []string{"a/1", "a/2", "c/1", "c/2", "c/3"} {
		b.Put([]byte(k), []byte("v"+k))
	}
	if _, err := m.Update([]sm.Entry{{Index: 1, Cmd: b.Encoded()}}); err != nil {
		t.Fatal(err)
	}
	// A key of another group between the spans is never seen.
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("b/1"), []byte("other")) }); err != nil {
		t.Fatal(err)
	}
	keys := func(r interface{}) string {
		var ks []string
		for _, kv := range r.(ScanResult).Pairs {
			ks = append(ks, string(kv.Key))
		}
		return fmt.Sprintf("%v more=%v", ks, r.(ScanResult).More)
	}
	for _, c := range []struct {
		q    ScanQuery
		want string
	}{
		{ScanQuery{Start: nil, End: nil, Limit: 10}, "[a/1 a/2 c/1 c/2 c/3] more=false"},
		{ScanQuery{Start: []byte("a/2"), End: []byte("c/3"), Limit: 10}, "[a/2 c/1 c/2] more=false"},
		{ScanQuery{Start: []byte("a/"), End: nil, Limit: 2}, "[a/1 a/2] more=true"},
		{ScanQuery{Start: []byte("b"), End: []byte("c/2"), Limit: 10}, "[c/1] more=false"},
		{ScanQuery{Start: []byte("a/3"), End: []byte("b/9"), Limit: 10}, "[] more=false"},
		{ScanQuery{Start: nil, End: nil, Limit: 10, Reverse: true}, "[c/3 c/2 c/1 a/2 a/1] more=false"},
		{ScanQuery{Start: []byte("a/2"), End: []byte("c/3"), Limit: 10, Reverse: true}, "[c/2 c/1 a/2] more=false"},
		{ScanQuery{Start: nil, End: []byte("c/2"), Limit: 2, Reverse: true}, "[c/1 a/2] more=true"},
		{ScanQuery{Start: []byte("b"), End: []byte("c/2"), Limit: 10, Reverse: true}, "[c/1] more=false"},
		{ScanQuery{Start: []byte("a/3"), End: []byte("b/9"), Limit: 10, Reverse: true}, "[] more=false"},
	} {
		r, err := m.Lookup(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(r); got != c.want {
			t.Errorf("scan [%q, %q) limit %d reverse %v = %s, want %s", c.q.Start, c.q.End, c.q.Limit, c.q.Reverse, got, c.want)
		}
	}
	r, err := m.Lookup(GetQuery{Key: []byte("c/2")})
	if err != nil || !r.(GetResult).Found || string(r.(GetResult).Value) != "vc/2" {
		t.Errorf("get c/2 = %+v, %v", r, err)
	}
	r, err = m.Lookup(GetQuery{Key: []byte("c/9")})
	if err != nil || r.(GetResult).Found {
		t.Errorf("get c/9 = %+v, %v", r, err)
	}
	if _, err := m.Lookup(GetQuery{Key: []byte("b/1")}); err == nil {
		t.Error("get outside the spans succeeded")
	}
	if r, _ := m.Lookup(AppliedQuery{}); r.(uint64) != 1 {
		t.Errorf("applied = %v", r)
	}
	m.Close()
	if _, err := m.Lookup(AppliedQuery{}); err != ErrClosed {
		t.Errorf("lookup after close: %v", err)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	src := openBadger(t, filepath.Join(t.TempDir(), "src"))
	defer src.Close()
	dst := openBadger(t, filepath.Join(t.TempDir(), "dst"))
	defer dst.Close()

	a := newMachine(t, src, 3, "p/")
	for i := 1; i <= 50; i++ {
		b := NewBatch()
		b.Put(fmt.Appendf(nil, "p/%03d", i), bytes.Repeat([]byte{byte(i)}, i*10))
		b.Add([]byte("p/count"), 1)
		if _, err := a.Update([]sm.Entry{{Index: uint64(i), Cmd: b.Encoded()}}); err != nil {
			t.Fatal(err)
		}
	}
	point, err := a.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Writes after the snapshot point are not in the snapshot.
	later := NewBatch()
	later.Put([]byte("p/later"), []byte("x"))
	if _, err := a.Update([]sm.Entry{{Index: 51, Cmd: later.Encoded()}}); err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := a.SaveSnapshot(point, &snap, nil); err != nil {
		t.Fatal(err)
	}

	// The receiving replica has stale keys in the span and another
	// group's key beside it.
	if err := dst.Update(func(txn *badger.Txn) error {
		if err := txn.Set([]byte("p/stale"), []byte("old")); err != nil {
			return err
		}
		return txn.Set([]byte("q/other"), []byte("keep"))
	}); err != nil {
		t.Fatal(err)
	}
	b := newMachine(t, dst, 3, "p/")
	if err := b.RecoverFromSnapshot(bytes.NewReader(snap.Bytes()), nil); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(dump(t, src, "p/"), `"p/later"="x"`+"\n", "", 1)
	if got := dump(t, dst, "p/"); got != want {
		t.Errorf("restored state differs:\n%s\nwant:\n%s", got, want)
	}
	if dump(t, dst, "q/") != `"q/other"="keep"`+"\n" {
		t.Error("restore touched another group's key")
	}
	if b.Applied() != 50 || b.Stats().Restores != 1 || b.Stats().RestoredKeys != 51 {
		t.Errorf("applied %d, stats %+v", b.Applied(), b.Stats())
	}
	if again := newMachine(t, dst, 3, "p/"); again.Stats().OpenIndex != 50 {
		t.Errorf("reopened at %d, want 50", again.Stats().OpenIndex)
	}

	// A replica of another group, or with other spans, refuses it.
	if err := newMachine(t, dst, 4, "z/").RecoverFromSnapshot(bytes.NewReader(snap.Bytes()), nil); err == nil {
		t.Error("group 4 took group 3's snapshot")
	}
	if err := newMachine(t, dst, 3, "p/", "s/").RecoverFromSnapshot(bytes.NewReader(snap.Bytes()), nil); err == nil {
		t.Error("a replica with other spans took the snapshot")
	}
	// A truncated stream is an error.
	if err := newMachine(t, dst, 3, "p/").RecoverFromSnapshot(bytes.NewReader(snap.Bytes()[:snap.Len()-3]), nil); err == nil {
		t.Error("a truncated snapshot was taken")
	}
}

func TestOpenClearsUnfinishedRestore(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	m := newMachine(t, db, 9, "p/")
	b := NewBatch()
	b.Put([]byte("p/half"), []byte("x"))
	if _, err := m.Update([]sm.Entry{{Index: 40, Cmd: b.Encoded()}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(restoringKey(9), nil) }); err != nil {
		t.Fatal(err)
	}
	again := newMachine(t, db, 9, "p/")
	if again.Stats().OpenIndex != 0 || dump(t, db, "p/") != "" || dump(t, db, metaPrefix) != "" {
		t.Errorf("open index %d, spans %q, metadata %q", again.Stats().OpenIndex, dump(t, db, "p/"), dump(t, db, metaPrefix))
	}
}

// TestUpdateSplitsAtTxnLimit: a batch of entries larger than one Badger
// transaction is committed in several, each of whole entries.
func TestUpdateSplitsAtTxnLimit(t *testing.T) {
	db := openBadger(t, t.TempDir(), func(o *badger.Options) {
		o.MemTableSize = 1 << 20 // transactions up to ~150 KB
		o.ValueThreshold = 64 << 10
	})
	defer db.Close()
	m := newMachine(t, db, 2, "p/")
	var ents []sm.Entry
	for i := 1; i <= 20; i++ {
		b := NewBatch()
		for j := 0; j < 4; j++ {
			b.Put(fmt.Appendf(nil, "p/%02d/%d", i, j), bytes.Repeat([]byte("v"), 10<<10))
		}
		ents = append(ents, sm.Entry{Index: uint64(i), Cmd: b.Encoded()})
	}
	if _, err := m.Update(ents); err != nil {
		t.Fatal(err)
	}
	st := m.Stats()
	if st.Commits < 2 || st.Entries != 20 || m.Applied() != 20 {
		t.Errorf("stats %+v, applied %d", st, m.Applied())
	}
	if n := strings.Count(dump(t, db, "p/"), "\n"); n != 80 {
		t.Errorf("%d keys, want 80", n)
	}

	// An entry too big for any transaction is rejected, not retried
	// forever: the index moves on, the state does not.
	huge := NewBatch()
	for j := 0; j < 4; j++ {
		huge.Put(fmt.Appendf(nil, "p/huge/%d", j), bytes.Repeat([]byte("h"), 60<<10))
	}
	small := NewBatch()
	small.Put([]byte("p/after"), []byte("ok"))
	res, err := m.Update([]sm.Entry{{Index: 21, Cmd: huge.Encoded()}, {Index: 22, Cmd: small.Encoded()}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Result.Value != ResultRejected || res[1].Result.Value != ResultApplied || m.Applied() != 22 {
		t.Errorf("results %d, %d; applied %d", res[0].Result.Value, res[1].Result.Value, m.Applied())
	}
	if n := strings.Count(dump(t, db, "p/"), "\n"); n != 81 {
		t.Errorf("%d keys, want 81", n)
	}
}

func TestSpansChecked(t *testing.T) {
	for name, spans := range map[string][]Span{
		"none":     nil,
		"empty":    {{Start: []byte("b"), End: []byte("a")}},
		"no end":   {{Start: []byte("a")}},
		"overlap":  {PrefixSpan([]byte("a")), {Start: []byte("a/1"), End: []byte("b")}},
		"metadata": {PrefixSpan([]byte("r"))},
	} {
		if _, err := NewStateMachine(nil, 1, spans); err == nil {
			t.Errorf("%s: spans accepted", name)
		}
	}
	if s := PrefixSpan([]byte{'a', 0xff}); !bytes.Equal(s.End, []byte("b")) {
		t.Errorf("PrefixSpan(a ff).End = %q", s.End)
	}
}

// Commits that write under the watched prefix move the generation; other
// writes, expectations alone and refused batches do not.
func TestWatchGeneration(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	m := newMachine(t, db, 7, "g/")
	var gen atomic.Uint64
	m.watch, m.gen = []byte("g/m/"), &gen
	apply := func(index uint64, b *Batch) {
		t.Helper()
		if _, err := m.Update([]sm.Entry{{Index: index, Cmd: b.Encoded()}}); err != nil {
			t.Fatal(err)
		}
	}
	data := NewBatch()
	data.Put([]byte("g/d/1"), []byte("x"))
	apply(1, data)
	if gen.Load() != 0 {
		t.Fatalf("a data write moved the generation to %d", gen.Load())
	}
	cat := NewBatch()
	cat.Put([]byte("g/m/coll"), []byte("c"))
	apply(2, cat)
	if gen.Load() != 1 {
		t.Fatalf("a catalog write: generation %d, want 1", gen.Load())
	}
	refused := NewBatch()
	refused.ExpectAbsent([]byte("g/m/coll"))
	refused.Put([]byte("g/m/other"), []byte("o"))
	apply(3, refused)
	read := NewBatch()
	read.Expect([]byte("g/m/coll"), []byte("c"))
	read.Put([]byte("g/d/2"), []byte("y"))
	apply(4, read)
	if gen.Load() != 1 {
		t.Fatalf("a refused catalog write or a catalog read moved the generation to %d", gen.Load())
	}
}

// TestGroupsShareSpansByOwnership: two groups over one span, each owning
// the keys whose value its Owns accepts (as the physical partitions of a
// collection share its index entries' span): neither writes, deletes or
// guards the other's keys, reads and snapshots see only their own, and a
// restore replaces only its own.
func TestGroupsShareSpansByOwnership(t *testing.T) {
	src := openBadger(t, filepath.Join(t.TempDir(), "src"))
	defer src.Close()
	dst := openBadger(t, filepath.Join(t.TempDir(), "dst"))
	defer dst.Close()
	ownedBy := func(tag byte) func(k, v []byte) bool {
		return func(k, v []byte) bool { return len(v) > 0 && v[0] == tag }
	}
	machine := func(db *badger.DB, shardID uint64, tag byte) *StateMachine {
		m := newMachine(t, db, shardID, "x/")
		m.owns = ownedBy(tag)
		return m
	}
	a, b := machine(src, 5, 'A'), machine(src, 6, 'B')
	index := map[*StateMachine]uint64{}
	apply := func(m *StateMachine, build func(*Batch)) uint64 {
		t.Helper()
		batch := NewBatch()
		build(batch)
		index[m]++
		out, err := m.Update([]sm.Entry{{Index: index[m], Cmd: batch.Encoded()}})
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Result.Value
	}
	if r := apply(a, func(b *Batch) { b.Put([]byte("x/1"), []byte("A1")); b.Put([]byte("x/2"), []byte("A2")) }); r != ResultApplied {
		t.Fatalf("A's own puts: %d", r)
	}
	if r := apply(b, func(b *Batch) { b.Put([]byte("x/3"), []byte("B3")) }); r != ResultApplied {
		t.Fatalf("B's own put: %d", r)
	}
	for name, c := range map[string]struct {
		m     *StateMachine
		build func(*Batch)
	}{
		"A puts a key B would own":   {a, func(b *Batch) { b.Put([]byte("x/4"), []byte("B4")) }},
		"A deletes B's key":          {a, func(b *Batch) { b.Delete([]byte("x/3")) }},
		"A guards B's key":           {a, func(b *Batch) { b.ExpectHash([]byte("x/3"), ValueDigest([]byte("B3"))) }},
		"B overwrites A's key":       {b, func(b *Batch) { b.Put([]byte("x/1"), []byte("B1")) }},
		"B's batch touching A's too": {b, func(b *Batch) { b.Put([]byte("x/5"), []byte("B5")); b.Delete([]byte("x/2")) }},
	} {
		if r := apply(c.m, c.build); r != ResultRejected {
			t.Errorf("%s: result %d, want rejected", name, r)
		}
	}
	if r := apply(a, func(b *Batch) { b.Delete([]byte("x/9")) }); r != ResultApplied {
		t.Errorf("deleting an absent key: %d, want applied (nothing to judge)", r)
	}
	if got := dump(t, src, "x/"); got != `"x/1"="A1"`+"\n"+`"x/2"="A2"`+"\n"+`"x/3"="B3"`+"\n" {
		t.Fatalf("state after the refused batches:\n%s", got)
	}
	if r, _ := a.Lookup(GetQuery{Key: []byte("x/3")}); r.(GetResult).Found {
		t.Error("A reads B's key")
	}
	r, err := a.Lookup(ScanQuery{Start: []byte("x/"), End: []byte("x0"), Limit: 10})
	if err != nil || len(r.(ScanResult).Pairs) != 2 {
		t.Fatalf("A's scan: %+v, %v; want its 2 keys", r, err)
	}

	point, err := a.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := a.SaveSnapshot(point, &snap, nil); err != nil {
		t.Fatal(err)
	}
	if err := dst.Update(func(txn *badger.Txn) error {
		if err := txn.Set([]byte("x/7"), []byte("A7")); err != nil { // stale, A's
			return err
		}
		return txn.Set([]byte("x/8"), []byte("B8")) // B's: stays
	}); err != nil {
		t.Fatal(err)
	}
	if err := machine(dst, 5, 'A').RecoverFromSnapshot(bytes.NewReader(snap.Bytes()), nil); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, dst, "x/"); got != `"x/1"="A1"`+"\n"+`"x/2"="A2"`+"\n"+`"x/8"="B8"`+"\n" {
		t.Errorf("after restoring A's snapshot:\n%s", got)
	}
	// A replica of the group that judges ownership otherwise refuses
	// the records.
	if err := machine(dst, 5, 'B').RecoverFromSnapshot(bytes.NewReader(snap.Bytes()), nil); err == nil {
		t.Error("a replica owning B's keys took A's records")
	}
}

// TestRestoreKeepsSplitOffKeys: a replica whose range a split narrowed
// (its observed key y/!lim) shares its span with the group split from
// it. A restore that a crash cuts short, at any point, clears only the
// keys the replica owns by its observed range, not by the range it was
// created with, and the next restore replaces the observed key.
func TestRestoreKeepsSplitOffKeys(t *testing.T) {
	// machine is group 40's replica as a node starts it: it owns y/<n>
	// below its limit, 100 as created, until its observed key says.
	machine := func(db *badger.DB) *StateMachine {
		var limit atomic.Value
		limit.Store("100")
		m, err := NewStateMachine(db, 40, []Span{PrefixSpan([]byte("y/"))})
		if err != nil {
			t.Fatal(err)
		}
		m.observe = []byte("y/!")
		m.onApply = func(k, v []byte) {
			if string(k) == "y/!lim" {
				limit.Store(string(v))
			}
		}
		m.owns = func(k, _ []byte) bool {
			return bytes.HasPrefix(k, []byte("y/!")) || len(k) == 5 && string(k[2:]) < limit.Load().(string)
		}
		if _, err := m.Open(nil); err != nil {
			t.Fatal(err)
		}
		return m
	}
	put := func(m *StateMachine, index uint64, kvs ...string) {
		b := NewBatch()
		for i := 0; i < len(kvs); i += 2 {
			b.Put([]byte(kvs[i]), []byte(kvs[i+1]))
		}
		if _, err := m.Update([]sm.Entry{{Index: index, Cmd: b.Encoded()}}); err != nil {
			t.Fatal(err)
		}
	}
	// The snapshot: the group at index 30, split at 050, with a key of
	// its own and an observed key the receiver lacks.
	src := openBadger(t, filepath.Join(t.TempDir(), "src"))
	defer src.Close()
	a := machine(src)
	put(a, 30, "y/010", "new", "y/020", "new", "y/!lim", "050", "y/!new", "x")
	point, err := a.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := a.SaveSnapshot(point, &snap, nil); err != nil {
		t.Fatal(err)
	}

	db := openBadger(t, filepath.Join(t.TempDir(), "dst"))
	defer db.Close()
	m := machine(db)
	put(m, 10, "y/000", "old", "y/010", "old", "y/060", "old", "y/!old", "x")
	put(m, 11, "y/!lim", "050")
	// Group 41, split from 40, holds y/050 and up on this node.
	child := `"y/060"="old"` + "\n" + `"y/095"="child"` + "\n"
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("y/095"), []byte("child")) }); err != nil {
		t.Fatal(err)
	}
	childKeys := func() string {
		t.Helper()
		return dump(t, db, "y/06") + dump(t, db, "y/09")
	}

	// A restore cut short after its clear, part way through the stream.
	cut := snap.Bytes()[:snap.Len()/2]
	if err := m.RecoverFromSnapshot(bytes.NewReader(cut), nil); err == nil {
		t.Fatal("a truncated snapshot was taken")
	}
	if got := dump(t, db, "y/!lim"); got != `"y/!lim"="050"`+"\n" {
		t.Errorf("observed key part way through a restore: %q", got)
	}
	// The node restarts: its replica judges by the observed range.
	m = machine(db)
	if m.Stats().OpenIndex != 0 {
		t.Errorf("opened at %d after an unfinished restore, want 0", m.Stats().OpenIndex)
	}
	if got := childKeys(); got != child {
		t.Errorf("the split-off group's keys after opening an unfinished restore:\n%s\nwant:\n%s", got, child)
	}
	if got := dump(t, db, "y/0") + dump(t, db, "y/!"); got != child+`"y/!lim"="050"`+"\n"+`"y/!old"="x"`+"\n" {
		t.Errorf("after opening an unfinished restore:\n%s", got)
	}
	if err := m.RecoverFromSnapshot(bytes.NewReader(snap.Bytes()), nil); err != nil {
		t.Fatal(err)
	}
	want := `"y/!lim"="050"` + "\n" + `"y/!new"="x"` + "\n" + `"y/010"="new"` + "\n" + `"y/020"="new"` + "\n" + child
	if got := dump(t, db, "y/"); got != want {
		t.Errorf("after the restore:\n%s\nwant:\n%s", got, want)
	}
	if m.Applied() != 30 || dump(t, db, string(restoringKey(40))) != "" {
		t.Errorf("applied %d, restoring marker %q", m.Applied(), dump(t, db, string(restoringKey(40))))
	}
}

// A value read in one commit is not trusted in the next: what the entries
// of a commit read is kept for that commit only.
func TestReadsKeptForOneCommit(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	m := newMachine(t, db, 8, "g/")
	absent := func(index uint64, put string) sm.Entry {
		b := NewBatch()
		b.ExpectAbsent([]byte("g/fence"))
		b.Put([]byte("g/"+put), []byte("v"))
		return sm.Entry{Index: index, Cmd: b.Encoded()}
	}
	res, err := m.Update([]sm.Entry{absent(1, "a"), absent(2, "b")})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res {
		if e.Result.Value != ResultApplied {
			t.Fatalf("entry %d: result %d (%s), want applied", e.Index, e.Result.Value, e.Result.Data)
		}
	}
	// Another commit (a restore, a drop) changes the key between two
	// of the replica's commits.
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("g/fence"), []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	res, err = m.Update([]sm.Entry{absent(3, "c")})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Result.Value != ResultConflict {
		t.Fatalf("entry 3: result %d (%s), want a conflict", res[0].Result.Value, res[0].Result.Data)
	}
}

// TestPutsOwnedByKeyReadNothing: where the key alone names its owner
// (GroupConfig.OwnsByKey), a replica puts without reading the value
// already there, and judges the put as before: a key another group owns
// is refused, whether or not it holds a value; a key owned by its value
// is still read.
func TestPutsOwnedByKeyReadNothing(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	m := newMachine(t, db, 7, "k/", "x/")
	// k/A... belongs to this group by its key, x/... by its value.
	m.owns = func(k, v []byte) bool {
		if bytes.HasPrefix(k, []byte("x/")) {
			return len(v) > 0 && v[0] == 'A'
		}
		return len(k) > 2 && k[2] == 'A'
	}
	m.ownsByKey = func(k []byte) bool { return !bytes.HasPrefix(k, []byte("x/")) }
	if err := db.Update(func(txn *badger.Txn) error {
		if err := txn.Set([]byte("k/A1"), []byte("old")); err != nil {
			return err
		}
		if err := txn.Set([]byte("k/B1"), []byte("other's")); err != nil {
			return err
		}
		return txn.Set([]byte("x/1"), []byte("B"))
	}); err != nil {
		t.Fatal(err)
	}
	index := uint64(0)
	apply := func(build func(*Batch)) (uint64, int64) {
		t.Helper()
		before := m.Stats().Reads
		b := NewBatch()
		build(b)
		index++
		out, err := m.Update([]sm.Entry{{Index: index, Cmd: b.Encoded()}})
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Result.Value, m.Stats().Reads - before
	}
	if r, reads := apply(func(b *Batch) { b.Put([]byte("k/A1"), []byte("new")); b.Put([]byte("k/A2"), []byte("v")) }); r != ResultApplied || reads != 0 {
		t.Errorf("own puts by key: result %d with %d reads, want applied with none", r, reads)
	}
	for name, build := range map[string]func(*Batch){
		"a put of another's key that holds a value": func(b *Batch) { b.Put([]byte("k/B1"), []byte("mine")) },
		"a put of another's absent key":             func(b *Batch) { b.Put([]byte("k/B2"), []byte("mine")) },
	} {
		if r, reads := apply(build); r != ResultRejected || reads != 0 {
			t.Errorf("%s: result %d with %d reads, want rejected with none", name, r, reads)
		}
	}
	if r, reads := apply(func(b *Batch) { b.Put([]byte("x/1"), []byte("A")) }); r != ResultRejected || reads != 1 {
		t.Errorf("a put over another's value-owned key: result %d with %d reads, want rejected after one", r, reads)
	}
	if r, reads := apply(func(b *Batch) { b.Delete([]byte("k/A2")) }); r != ResultApplied || reads != 1 {
		t.Errorf("a delete: result %d with %d reads, want applied after one (a delete judges what is there)", r, reads)
	}
	if got := dump(t, db, "k/"); got != `"k/A1"="new"`+"\n"+`"k/B1"="other's"`+"\n" {
		t.Errorf("state:\n%s", got)
	}
}
