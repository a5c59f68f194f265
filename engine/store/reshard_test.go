package store

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// abDoc is {_id: id, a: a, b: b}.
func abDoc(id, a, b int32) []byte {
	return bsoncore.BuildDocument(nil,
		bsoncore.AppendInt32Element(nil, "_id", id),
		bsoncore.AppendInt32Element(nil, "a", a),
		bsoncore.AppendInt32Element(nil, "b", b))
}

// keyIn is the key of doc in sharded collection c.
func keyIn(t *testing.T, c *Collection, doc []byte) []byte {
	t.Helper()
	k, err := reshardKeyOf(c, c.Spec(), doc)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// docsOf reads c's documents by _id (b's value).
func docsOf(t *testing.T, s *Store, c *Collection) map[int32]int32 {
	t.Helper()
	out := map[int32]int32{}
	err := s.View(func(tx *Txn) error {
		return tx.Scan(c, nil, func(_, doc []byte) (bool, error) {
			d := bsoncore.Document(doc)
			id := d.Lookup("_id").Int32()
			if _, dup := out[id]; dup {
				t.Errorf("_id %d twice in %s", id, c.Namespace())
			}
			out[id] = d.Lookup("b").Int32()
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A resharding stopped in the middle of its copy (the store closed and
// opened again) resumes from its record: the copy goes on where it was,
// the changes made meanwhile follow from the change log, and the switch
// leaves one collection with the new key, the expected documents and
// exact counters; the old layout is purged and the record gone.
func TestReshardingResumesAndSwitches(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	src, err := s.CreateCollectionWith("db", "c", NewCollection{Spec: shard.Spec{Path: "a"}, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int32{}
	for i := range int32(100) {
		doc := abDoc(i, i%7, i)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, doc), doc) }); err != nil {
			t.Fatal(err)
		}
		want[i] = i
	}
	newKey := shard.Spec{Path: "b", Ranged: true}
	r, err := s.BeginResharding(src, newKey, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginResharding(src, newKey, 3); err == nil {
		t.Fatal("a second resharding of the same collection began")
	}
	if done, err := s.CopyResharding(r, 30); err != nil || done {
		t.Fatalf("first batch: done %v, %v", done, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDir(t, dir)
	defer s.Close()
	recs, err := s.Reshardings()
	if err != nil || len(recs) != 1 {
		t.Fatalf("reshardings after reopening: %v, %v", recs, err)
	}
	r = recs[0]
	if r.Phase != ReshardCloning || r.Copied != 30 || len(r.Ranges) != ReshardCopyRanges || r.Ranges[0].Resume == nil || r.ApproxDocs != 100 {
		t.Fatalf("record after reopening: %+v", r)
	}
	src = s.Collection("db", "c")
	// Changes while the copy is stopped: a copied document deleted,
	// another moved under the new key, a new one.
	for _, id := range []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9} {
		doc := abDoc(id, id%7, id)
		if err := s.Update(func(tx *Txn) error { return tx.Delete(src, keyIn(t, src, doc), len(doc)) }); err != nil {
			t.Fatal(err)
		}
		delete(want, id)
		if id%2 == 0 {
			continue
		}
		moved := abDoc(id, id%7, id+1000)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, moved), moved) }); err != nil {
			t.Fatal(err)
		}
		want[id] = id + 1000
	}
	extra := abDoc(500, 3, 500)
	if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, extra), extra) }); err != nil {
		t.Fatal(err)
	}
	want[500] = 500
	copyAll(t, s, r, 30)
	if r.Phase != ReshardApplying {
		t.Fatalf("phase after the copy: %s", r.Phase)
	}
	visible, _ := s.ChangesVisible()
	if n, err := s.ApplyResharding(r, visible, 4); err != nil || n == 0 {
		t.Fatalf("apply: %d events, %v", n, err)
	}
	c, err := s.SwitchResharding(r, func() error {
		_, err := s.ApplyResharding(r, s.LastChangeTime(), 4)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if cur := s.Collection("db", "c"); cur != c || !cur.Spec().Equal(newKey) || cur.ID == src.ID || string(cur.UUID) == string(src.UUID) {
		t.Fatalf("after the switch: %+v", cur)
	}
	if c.Map().Len() != 3 {
		t.Errorf("%d partitions, want 3", c.Map().Len())
	}
	if s.Collection("db", r.TempName) != nil {
		t.Errorf("the temporary collection is still in the catalog")
	}
	checkDocs(t, s, c, want)
	// The _id index of the new layout finds every document.
	for id := range want {
		err := s.View(func(tx *Txn) error {
			keys, err := tx.idEntries(c, value.EncodeKey(nil, i32v(id)))
			if err == nil && len(keys) != 1 {
				t.Errorf("_id %d has %d _id index entries", id, len(keys))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if recs, _ := s.Reshardings(); len(recs) != 1 || recs[0].Phase != ReshardCleanup {
		t.Fatalf("record after the switch: %+v", recs)
	}
	if err := s.FinishResharding(r); err != nil {
		t.Fatal(err)
	}
	checkPurged(t, s, src.ID)
	if recs, _ := s.Reshardings(); len(recs) != 0 {
		t.Errorf("records after the cleanup: %+v", recs)
	}
}

// An aborted resharding drops the temporary collection and its record;
// the source is untouched.
func TestReshardingAbort(t *testing.T) {
	s := openMem(t)
	src, err := s.CreateCollectionWith("db", "c", NewCollection{Spec: shard.Spec{Path: "a"}, Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int32(50) {
		doc := abDoc(i, i%3, i)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, doc), doc) }); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.BeginResharding(src, shard.Spec{Path: "b"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CopyResharding(r, 20); err != nil {
		t.Fatal(err)
	}
	if err := s.AbortResharding(r); err != nil {
		t.Fatal(err)
	}
	if s.Collection("db", r.TempName) != nil {
		t.Errorf("the temporary collection is still in the catalog")
	}
	checkPurged(t, s, r.TempID)
	if recs, _ := s.Reshardings(); len(recs) != 0 {
		t.Errorf("records after the abort: %+v", recs)
	}
	if cur := s.Collection("db", "c"); cur != src {
		t.Errorf("the source changed: %+v", cur)
	}
	checkExact(t, s, src, 50)
}

// dupSource makes a source sharded by a with 200 documents and a second
// document of _id 5 with another a but the same b, in the other copy
// range than the first: resharded by b, both have one key.
func dupSource(t *testing.T, s *Store) (*Collection, *Resharding) {
	t.Helper()
	src, err := s.CreateCollectionWith("db", "c", NewCollection{Spec: shard.Spec{Path: "a"}, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int32(200) {
		doc := abDoc(i, i, i)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, doc), doc) }); err != nil {
			t.Fatal(err)
		}
	}
	ranges, err := s.copyRanges(src, ReshardCopyRanges)
	if err != nil || len(ranges) != 2 {
		t.Fatalf("copy ranges: %v, %v", ranges, err)
	}
	inFirst := func(doc []byte) bool { return bytes.Compare(keyIn(t, src, doc), ranges[0].End) < 0 }
	orig := abDoc(5, 5, 5)
	for a := int32(1000); ; a++ {
		dup := abDoc(5, a, 5)
		if inFirst(dup) == inFirst(orig) {
			continue
		}
		if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, dup), dup) }); err != nil {
			t.Fatal(err)
		}
		break
	}
	r, err := s.BeginResharding(src, shard.Spec{Path: "b", Ranged: true}, 2)
	if err != nil {
		t.Fatal(err)
	}
	return src, r
}

// Two source documents with one key under the new shard key fail the
// copy with a duplicate key, though the copy inserts without reading
// keys its filter rules out: when the first was copied before a restart
// (the filter is built again from the copied documents), and when the
// two ranges' workers copy them at the same time.
func TestReshardingCopyFindsDuplicates(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	_, r := dupSource(t, s)
	for !r.Ranges[0].Done {
		if _, err := s.CopyResharding(r, 7); err != nil {
			t.Fatalf("copying the first range: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir)
	defer s.Close()
	recs, err := s.Reshardings()
	if err != nil || len(recs) != 1 {
		t.Fatalf("reshardings after reopening: %v, %v", recs, err)
	}
	r = recs[0]
	var dup *DuplicateKeyError
	for {
		done, err := s.CopyResharding(r, 7)
		if errors.As(err, &dup) {
			break
		}
		if err != nil || done {
			t.Fatalf("the copy after the restart ended with %v (done %v), want a duplicate key", err, done)
		}
	}

	s2 := openMem(t)
	_, r = dupSource(t, s2)
	ranges := r.CopyRanges()
	errs := make([]error, len(ranges))
	var wg sync.WaitGroup
	for i := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !ranges[i].Done && errs[i] == nil {
				errs[i] = s2.CopyReshardingRange(r, i, &ranges[i], 1)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); !errors.As(err, &dup) {
		t.Fatalf("copying both ranges at once: %v, want a duplicate key", err)
	}
}

// The copy's two ranges split the source's bytes about in half, each
// copied by a worker of its own; stopped with both in the middle, the
// copy resumes each range where it was, and the switch leaves exactly
// the source's documents with exact counters.
func TestReshardingRangesResume(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	src, err := s.CreateCollectionWith("db", "c", NewCollection{Spec: shard.Spec{Path: "a"}, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ranges, err := s.copyRanges(src, ReshardCopyRanges); err != nil || len(ranges) != 1 || ranges[0].Start != nil || ranges[0].End != nil {
		t.Fatalf("the ranges of an empty collection: %+v, %v", ranges, err)
	}
	want := map[int32]int32{}
	for i := range int32(400) {
		doc := abDoc(i, i%97, i)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, doc), doc) }); err != nil {
			t.Fatal(err)
		}
		want[i] = i
	}
	r, err := s.BeginResharding(src, shard.Spec{Path: "b", Ranged: true}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ranges) != 2 || r.Ranges[0].End == nil || !bytes.Equal(r.Ranges[0].End, r.Ranges[1].Start) || r.Ranges[1].End != nil {
		t.Fatalf("ranges: %+v", r.Ranges)
	}
	// Each range holds 30 % to 70 % of the documents.
	inFirst := 0
	for i := range int32(400) {
		if bytes.Compare(keyIn(t, src, abDoc(i, i%97, i)), r.Ranges[0].End) < 0 {
			inFirst++
		}
	}
	if inFirst < 120 || inFirst > 280 {
		t.Errorf("the first range has %d of 400 documents", inFirst)
	}
	ranges := r.CopyRanges()
	var wg sync.WaitGroup
	errs := make([]error, len(ranges))
	for i := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if errs[i] = s.CopyReshardingRange(r, i, &ranges[i], 20); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDir(t, dir)
	defer s.Close()
	recs, err := s.Reshardings()
	if err != nil || len(recs) != 1 {
		t.Fatalf("reshardings after reopening: %v, %v", recs, err)
	}
	r = recs[0]
	if r.Copied != 200 || len(r.Ranges) != 2 {
		t.Fatalf("after reopening: %d copied, ranges %+v", r.Copied, r.Ranges)
	}
	for i, cr := range r.Ranges {
		if cr.Done || cr.Copied != 100 || cr.Resume == nil {
			t.Errorf("range %d after reopening: %+v", i, cr)
		}
	}
	src = s.Collection("db", "c")
	// A change while the copy is stopped.
	extra := abDoc(1000, 3, 1000)
	if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, extra), extra) }); err != nil {
		t.Fatal(err)
	}
	want[1000] = 1000
	copyAll(t, s, r, 64)
	if r.Phase != ReshardApplying || r.Copied < 400 || len(r.Ranges) != 0 {
		t.Fatalf("after the copy: %+v", r)
	}
	switchAndCheck(t, s, r, want)
	if err := s.FinishResharding(r); err != nil {
		t.Fatal(err)
	}
	if n := rawKeys(t, s, []byte(reshardCopySpace)); n != 0 {
		t.Errorf("%d copy range keys left", n)
	}
}

// logicalPartitionsIn are the logical partitions c holds documents of.
func logicalPartitionsIn(t *testing.T, s *Store, c *Collection) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := s.View(func(tx *Txn) error {
		return tx.Scan(c, nil, func(key, _ []byte) (bool, error) {
			lp, err := logicalPartitionOf(key)
			out[string(lp)] = true
			return true, err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lpCounterKeys counts collection id's logical-partition counter keys:
// bases and deltas.
func lpCounterKeys(t *testing.T, s *Store, id uint32) (bases, deltas int) {
	t.Helper()
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: lpPrefix(id)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			_, delta, ok := parseLPCounterKey(it.Item().Key())
			switch {
			case !ok:
				t.Errorf("logical-partition counter key %x", it.Item().Key())
			case delta:
				deltas++
			default:
				bases++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bases, deltas
}

// The copy writes the counters of a logical partition no document of
// it reached before as a base, and a delta for one it reached in an
// earlier batch (or before a restart): the counters are exact either
// way, and a partition of its own per document leaves nothing to fold.
func TestReshardingCopyCounterBases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		newKey shard.Spec
		b      func(i int32) int32 // the new key's value of document i
		deltas bool                // some partitions get deltas
		ranges bool                // after the restart, the ranges are copied at the same time
	}{
		{"a partition per document", shard.Spec{Path: "b", Ranged: true}, func(i int32) int32 { return i }, false, false},
		{"partitions across batches", shard.Spec{Path: "b"}, func(i int32) int32 { return i % 9 }, true, false},
		{"partitions across ranges", shard.Spec{Path: "b"}, func(i int32) int32 { return i % 50 }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openDir(t, dir)
			src, err := s.CreateCollectionWith("db", "c", NewCollection{Spec: shard.Spec{Path: "a"}, Partitions: 2})
			if err != nil {
				t.Fatal(err)
			}
			for i := range int32(200) {
				doc := abDoc(i, i%7, tc.b(i))
				if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, doc), doc) }); err != nil {
					t.Fatal(err)
				}
			}
			r, err := s.BeginResharding(src, tc.newKey, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CopyResharding(r, 16); err != nil {
				t.Fatal(err)
			}
			// A restart builds the filter again from what was copied.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openDir(t, dir)
			defer func() { _ = s.Close() }()
			recs, err := s.Reshardings()
			if err != nil || len(recs) != 1 {
				t.Fatalf("reshardings after a restart: %v, %v", recs, err)
			}
			r = recs[0]
			if tc.ranges {
				ranges := r.CopyRanges()
				var wg sync.WaitGroup
				errs := make([]error, len(ranges))
				for i := range ranges {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for !ranges[i].Done && errs[i] == nil {
							errs[i] = s.CopyReshardingRange(r, i, &ranges[i], 3)
						}
					}()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
				if err := s.EndReshardingCopy(r, ranges); err != nil {
					t.Fatal(err)
				}
			}
			for done := tc.ranges; !done; {
				if done, err = s.CopyResharding(r, 16); err != nil {
					t.Fatal(err)
				}
			}
			tmp := s.CollectionByID(r.TempID)
			checkExact(t, s, tmp, 200)
			checkLogical(t, s, tmp)
			bases, deltas := lpCounterKeys(t, s, tmp.ID)
			parts := 200
			if tc.deltas {
				parts = len(logicalPartitionsIn(t, s, tmp))
			}
			if bases != parts || (deltas > 0) != tc.deltas {
				t.Errorf("%d logical partitions: %d bases and %d deltas", parts, bases, deltas)
			}
		})
	}
}

// The copy reads the source as it was when it began: documents inserted
// ahead of it while it runs are not copied (the change log brings them
// over), so it copies what there was, once, however fast the writers
// insert; and the switch still leaves every document, changed ones as
// changed, deleted ones gone.
func TestReshardingCopyReadsItsStart(t *testing.T) {
	s := openDir(t, t.TempDir())
	defer s.Close()
	src, err := s.CreateCollectionWith("db", "c", NewCollection{Spec: shard.Spec{Path: "a"}, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int32{}
	insert := func(from, to int32) {
		t.Helper()
		for i := from; i < to; i++ {
			doc := abDoc(i, i%97, i)
			if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, doc), doc) }); err != nil {
				t.Fatal(err)
			}
			want[i] = i
		}
	}
	insert(0, 300)
	r, err := s.BeginResharding(src, shard.Spec{Path: "b", Ranged: true}, 2)
	if err != nil {
		t.Fatal(err)
	}
	ranges := r.CopyRanges()
	for i := range ranges {
		if err := s.CopyReshardingRange(r, i, &ranges[i], 10); err != nil {
			t.Fatal(err)
		}
	}
	// Meanwhile: 300 more documents, most of them ahead of the copy, one
	// changed and one deleted.
	insert(300, 600)
	changed, deleted := abDoc(150, 150%97, 150), abDoc(151, 151%97, 151)
	err = s.Update(func(tx *Txn) error {
		doc := abDoc(150, 150%97, -1)
		if err := tx.Replace(src, keyIn(t, src, changed), doc, len(changed)); err != nil {
			return err
		}
		return tx.Delete(src, keyIn(t, src, deleted), len(deleted))
	})
	if err != nil {
		t.Fatal(err)
	}
	want[150] = -1
	delete(want, 151)
	r.Ranges = ranges
	copyAll(t, s, r, 64)
	// 300 were there when it began; the one changed since and the one
	// deleted are the change log's unless the first batches took them.
	if r.Copied > 300 || r.Copied < 298 {
		t.Errorf("the copy copied %d documents; 300 were there when it began", r.Copied)
	}
	s.copySnaps.mu.Lock()
	left := len(s.copySnaps.versions)
	s.copySnaps.mu.Unlock()
	if left != 0 {
		t.Errorf("%d read versions kept after the copy", left)
	}
	switchAndCheck(t, s, r, want)
}

// switchAndCheck applies r's last changes and switches it, then checks
// the collection (checkDocs).
func switchAndCheck(t *testing.T, s *Store, r *Resharding, want map[int32]int32) *Collection {
	t.Helper()
	c, err := s.SwitchResharding(r, func() error {
		_, err := s.ApplyResharding(r, s.LastChangeTime(), 100)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checkDocs(t, s, c, want)
	return c
}

// copyAll copies r's documents in batches of n until the copy is done.
func copyAll(t *testing.T, s *Store, r *Resharding, n int) {
	t.Helper()
	for {
		done, err := s.CopyResharding(r, n)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
	}
}

// checkDocs checks that c holds want (_id -> b) and counts it exactly.
func checkDocs(t *testing.T, s *Store, c *Collection, want map[int32]int32) {
	t.Helper()
	got := docsOf(t, s, c)
	if len(got) != len(want) {
		t.Errorf("%d documents, want %d", len(got), len(want))
	}
	for id, b := range want {
		if got[id] != b {
			t.Errorf("document %d: b = %d, want %d", id, got[id], b)
		}
	}
	checkExact(t, s, c, int64(len(want)))
}

// The copy's batches carry their own progress, so they ask the
// background loop for no sync; a client's write still does.
func TestReshardingCopyAsksNoSync(t *testing.T) {
	s := openDir(t, t.TempDir())
	defer s.Close()
	src, err := s.CreateCollectionWith("db", "c", NewCollection{Spec: shard.Spec{Path: "a"}, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(i int32) {
		t.Helper()
		doc := abDoc(i, i%7, i)
		if err := s.Update(func(tx *Txn) error { return tx.Insert(src, keyIn(t, src, doc), doc) }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int32(50) {
		insert(i)
	}
	r, err := s.BeginResharding(src, shard.Spec{Path: "b", Ranged: true}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	ranges := r.CopyRanges()
	for i := range ranges {
		if err := s.CopyReshardingRange(r, i, &ranges[i], 10); err != nil {
			t.Fatal(err)
		}
		if ranges[i].Copied == 0 {
			t.Fatalf("range %d copied nothing", i)
		}
	}
	if s.dirty.Load() {
		t.Error("the copy's batches asked for a sync")
	}
	insert(50)
	if !s.dirty.Load() {
		t.Error("a client's insert asked for no sync")
	}
}
