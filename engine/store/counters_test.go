package store

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestCountsExactUnderConcurrentWriters runs 8 writers of 500 operations
// each (inserts, replaces and deletes) against one collection.
func TestCountsExactUnderConcurrentWriters(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	const writers, ops = 8, 500
	var live atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []int32 // ids this writer inserted and has not deleted
			next := int32(w * 1_000_000)
			for i := 0; i < ops; i++ {
				switch op := r.IntN(10); {
				case op < 6 || len(mine) == 0: // insert
					id := next
					next++
					if err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, id), mkDoc(id, r.IntN(200))) }); err != nil {
						t.Error(err)
						return
					}
					mine = append(mine, id)
					live.Add(1)
				case op < 8: // replace with a document of another size
					id := mine[r.IntN(len(mine))]
					pad := r.IntN(200)
					err := s.Update(func(tx *Txn) error {
						old, err := tx.Get(idKey(c, id))
						if err != nil {
							return err
						}
						return tx.Replace(c, idKey(c, id), mkDoc(id, pad), len(old))
					})
					if err != nil {
						t.Error(err)
						return
					}
				default: // delete
					j := r.IntN(len(mine))
					id := mine[j]
					err := s.Update(func(tx *Txn) error {
						old, err := tx.Get(idKey(c, id))
						if err != nil {
							return err
						}
						return tx.Delete(c, idKey(c, id), len(old))
					})
					if err != nil {
						t.Error(err)
						return
					}
					mine = append(mine[:j], mine[j+1:]...)
					live.Add(-1)
				}
				if i%100 == 0 {
					// Readers fold while writers write.
					if _, err := s.Counts(c); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	checkExact(t, s, c, live.Load())
	// Readers above started background folds; an explicit fold while one
	// runs returns at once, so let them finish first.
	s.folds.Wait()
	if err := s.fold(c.ID); err != nil {
		t.Fatal(err)
	}
	if n := deltaKeys(t, s, c.ID); n != 0 {
		t.Errorf("%d deltas left after a fold with no writers", n)
	}
	checkExact(t, s, c, live.Load())
}

// TestCountsFold makes more than 256 deltas so that Counts starts a fold,
// and checks the counters stay exact while and after it runs.
func TestCountsFold(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	const n = 300
	for i := int32(0); i < n; i++ {
		insert(t, s, c, i, int(i%50))
	}
	if d := deltaKeys(t, s, c.ID); d != n {
		t.Fatalf("%d deltas after %d single-document transactions", d, n)
	}
	checkExact(t, s, c, n) // this Counts call starts a fold
	deadline := time.Now().Add(5 * time.Second)
	for deltaKeys(t, s, c.ID) > 256 {
		if time.Now().After(deadline) {
			t.Fatalf("Counts did not fold %d deltas", deltaKeys(t, s, c.ID))
		}
		time.Sleep(5 * time.Millisecond)
	}
	checkExact(t, s, c, n)
	if rawKeys(t, s, counterBaseKey(c.ID, 0)) != 1 {
		t.Errorf("fold wrote no base")
	}
}

// TestFoldRacesWriters runs folds while writers add deltas.
func TestFoldRacesWriters(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.fold(c.ID); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var writers sync.WaitGroup
	for w := int32(0); w < 4; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := int32(0); i < 200; i++ {
				id := w*1000 + i
				if err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, id), mkDoc(id, int(i))) }); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	checkExact(t, s, c, 800)
}

// TestFoldManyDeltas folds more deltas than one fold transaction takes.
func TestFoldManyDeltas(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	const n = 10_500
	for done := 0; done < n; {
		err := s.update(func(txn kv.Txn) error {
			for i := 0; i < 1500 && done+i < n; i++ {
				if err := txn.Set(s.deltaKey(c.ID, 0), encodeCounts(Counts{Docs: 1, Bytes: 3, KeyBytes: 2})); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		done += 1500
	}
	want := Counts{Docs: n, Bytes: 3 * n, KeyBytes: 2 * n}
	if got := mustCounts(t, s, c); got != want {
		t.Errorf("before fold: %+v, want %+v", got, want)
	}
	// Counts above started a background fold; an explicit fold while it
	// runs returns at once, so let it finish first.
	s.folds.Wait()
	if err := s.fold(c.ID); err != nil {
		t.Fatal(err)
	}
	if d := deltaKeys(t, s, c.ID); d != 0 {
		t.Errorf("%d deltas left after fold", d)
	}
	if got := mustCounts(t, s, c); got != want {
		t.Errorf("after fold: %+v, want %+v", got, want)
	}
}

func TestCorruptCounter(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	if err := s.update(func(txn kv.Txn) error { return txn.Set(counterBaseKey(c.ID, 0), []byte("short")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Counts(c); !errors.Is(err, ErrCorrupted) {
		t.Errorf("Counts over a corrupted base: err = %v, want ErrCorrupted", err)
	}
}

// TestCountersPersist closes and reopens a store on disk: the catalog and
// counters are kept, and the boot number increases.
func TestCountersPersist(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	c := mustCreate(t, s, "db", "c")
	for i := int32(0); i < 40; i++ {
		insert(t, s, c, i, int(i))
	}
	for i := int32(0); i < 40; i += 3 {
		if err := s.Update(func(tx *Txn) error { return tx.Delete(c, idKey(c, i), len(mkDoc(i, int(i)))) }); err != nil {
			t.Fatal(err)
		}
	}
	want := mustCounts(t, s, c)
	boot := s.boot
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDir(t, dir)
	defer s.Close()
	if s.boot <= boot {
		t.Errorf("boot number %d after reopen, was %d", s.boot, boot)
	}
	c2 := s.Collection("db", "c")
	if c2 == nil || c2.ID != c.ID {
		t.Fatalf("collection after reopen = %+v", c2)
	}
	if got := mustCounts(t, s, c2); got != want {
		t.Errorf("counts after reopen = %+v, want %+v", got, want)
	}
	checkExact(t, s, c2, 26)
	insert(t, s, c2, 1000, 1)
	checkExact(t, s, c2, 27)
}

// crash closes Badger without the folding and syncing of Close, as if the
// process had died after its last commit.
func crash(t *testing.T, s *Store) {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	s.foldMu.Lock()
	s.closing = true
	s.foldMu.Unlock()
	s.folds.Wait()
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDeltasSurviveCrash: deltas left unfolded by a crash are still counted
// after reopening, and the new boot's deltas never overwrite them.
func TestDeltasSurviveCrash(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	c := mustCreate(t, s, "db", "c")
	for i := int32(0); i < 20; i++ {
		insert(t, s, c, i, 10)
	}
	oldBoot := s.boot
	crash(t, s)

	s = openDir(t, dir)
	if s.boot <= oldBoot {
		t.Fatalf("boot %d after crash, was %d", s.boot, oldBoot)
	}
	if d := deltaKeys(t, s, c.ID); d != 20 {
		t.Errorf("%d deltas after the crash, want the 20 unfolded ones", d)
	}
	checkExact(t, s, c, 20)
	// New deltas start their sequence at 1 again; with the new boot number
	// their keys differ from the surviving ones.
	for i := int32(100); i < 120; i++ {
		insert(t, s, c, i, 10)
	}
	if d := deltaKeys(t, s, c.ID); d != 40 {
		t.Errorf("%d deltas, want 40: new deltas overwrote old ones", d)
	}
	checkExact(t, s, c, 40)
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: counterPrefix(c.ID)})
		defer it.Close()
		boots := map[uint64]int{}
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			if len(k) == 16+16 && k[6] == cellTag { // c/<coll>k<point>d<boot><seq>
				boots[binary.BigEndian.Uint64(k[16:])]++
			}
		}
		if boots[oldBoot] != 20 || boots[s.boot] != 20 {
			t.Errorf("deltas by boot = %v, want 20 of boot %d and 20 of boot %d", boots, oldBoot, s.boot)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	crash(t, s)
	s = openDir(t, dir)
	defer s.Close()
	checkExact(t, s, s.Collection("db", "c"), 40)
}

// TestCloseWhileFolding closes the store right after Counts started a
// background fold.
func TestCloseWhileFolding(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	c := mustCreate(t, s, "db", "c")
	for i := int32(0); i < 300; i++ {
		insert(t, s, c, i, 1)
	}
	if _, err := s.Counts(c); err != nil { // starts a fold
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir)
	defer s.Close()
	c = s.Collection("db", "c")
	checkExact(t, s, c, 300)
	if d := deltaKeys(t, s, c.ID); d != 0 {
		t.Errorf("%d deltas after a clean close", d)
	}
}

// TestWriteRacingDrop: an insert racing DropCollection either lands before
// the drop (and is purged with the collection) or fails with
// ErrCollectionChanged; nothing is left counted in the dead collection.
func TestWriteRacingDrop(t *testing.T) {
	s := openMem(t)
	for round := 0; round < 5; round++ {
		c := mustCreate(t, s, "db", "c")
		var wg sync.WaitGroup
		var landed, refused atomic.Int64
		started := make(chan struct{}, 4)
		for w := int32(0); w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int32(0); ; i++ {
					if i == 5 {
						started <- struct{}{}
					}
					id := w*100000 + i
					err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, id), mkDoc(id, 20)) })
					switch {
					case err == nil:
						landed.Add(1)
					case isChanged(err):
						refused.Add(1)
						return
					default:
						t.Errorf("insert racing a drop: %v", err)
						return
					}
				}
			}()
		}
		for i := 0; i < 4; i++ {
			<-started
		}
		if err := s.DropCollection("db", "c"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if refused.Load() != 4 || landed.Load() < 20 {
			t.Fatalf("landed %d, refused %d", landed.Load(), refused.Load())
		}
		checkPurged(t, s, c.ID)
		if got := mustCounts(t, s, c); got != (Counts{}) {
			t.Errorf("dropped collection still counts %+v", got)
		}
	}
}

// TestWriteRacingRename: inserts through the old handle land before the
// rename (and are counted in the renamed collection) or fail.
func TestWriteRacingRename(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	var wg sync.WaitGroup
	var landed atomic.Int64
	started := make(chan struct{}, 4)
	for w := int32(0); w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int32(0); ; i++ {
				if i == 5 {
					started <- struct{}{}
				}
				id := w*100000 + i
				err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, id), mkDoc(id, 20)) })
				if err != nil {
					if !isChanged(err) {
						t.Errorf("insert racing a rename: %v", err)
					}
					return
				}
				landed.Add(1)
			}
		}()
	}
	for i := 0; i < 4; i++ {
		<-started
	}
	if err := s.RenameCollection("db", "c", "db2", "d", false); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	checkExact(t, s, s.Collection("db2", "d"), landed.Load())
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	if s2, err := Open(Options{Dir: dir}); !errors.Is(err, ErrLocked) {
		if s2 != nil {
			_ = s2.Close()
		}
		t.Fatalf("opening a directory in use: err = %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir) // free again once closed
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSync(t *testing.T) {
	s := openDir(t, t.TempDir())
	defer s.Close()
	c := mustCreate(t, s, "db", "c")
	var wg sync.WaitGroup
	for i := int32(0); i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			insert(t, s, c, i, 1)
			if err := s.Sync(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if s.Dir() == "" || s.InMemory() || s.Size() < 0 {
		t.Errorf("Dir %q, InMemory %v", s.Dir(), s.InMemory())
	}
	m := openMem(t)
	if err := m.Sync(); err != nil || !m.InMemory() {
		t.Errorf("in-memory Sync = %v", err)
	}
}

func TestUseAfterClose(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	c := mustCreate(t, s, "db", "c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, 1), mkDoc(1, 1)) }); !errors.Is(err, ErrClosed) {
		t.Errorf("Update after Close: %v, want ErrClosed", err)
	}
	if err := s.View(func(tx *Txn) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("View after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Counts(c); !errors.Is(err, ErrClosed) {
		t.Errorf("Counts after Close: %v, want ErrClosed", err)
	}
}

// TestCountersBeforeCells: counters of the layout before cells
// (c/<collID>b and c/<collID>d<boot><seq>) still count, and a fold turns
// them into a cell.
func TestCountersBeforeCells(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	insert(t, s, c, 1, 10)
	before := mustCounts(t, s, c)
	legacyBase := append(counterPrefix(c.ID), 'b')
	legacyDelta := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(append(counterPrefix(c.ID), 'd'), 1), 2)
	err := s.update(func(txn kv.Txn) error {
		if err := txn.Set(legacyBase, encodeCounts(Counts{Docs: 5, Bytes: 50, KeyBytes: 5})); err != nil {
			return err
		}
		return txn.Set(legacyDelta, encodeCounts(Counts{Docs: -1, Bytes: -10, KeyBytes: -1}))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := before
	want.add(Counts{Docs: 4, Bytes: 40, KeyBytes: 4})
	if got := mustCounts(t, s, c); got != want {
		t.Fatalf("with the old layout's counters: %+v, want %+v", got, want)
	}
	s.folds.Wait()
	if err := s.fold(c.ID); err != nil {
		t.Fatal(err)
	}
	if got := mustCounts(t, s, c); got != want {
		t.Errorf("after fold: %+v, want %+v", got, want)
	}
	if rawKeys(t, s, legacyBase)+rawKeys(t, s, legacyDelta) != 0 || deltaKeys(t, s, c.ID) != 0 {
		t.Errorf("fold left the old layout's counters or deltas")
	}
}

// TestFoldRange: a physical partition's fold sums only the cells at its
// points, into a base at its first point; the collection's total stays.
func TestFoldRange(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	err := s.update(func(txn kv.Txn) error {
		for _, p := range []uint64{0, 10, 99, 100, 150, 1 << 63} {
			if err := txn.Set(s.deltaKey(c.ID, p), encodeCounts(Counts{Docs: 1, Bytes: int64(p % 1000), KeyBytes: 1})); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := mustCounts(t, s, c)
	s.folds.Wait()
	if err := s.foldRange(c.ID, 100, 199); err != nil {
		t.Fatal(err)
	}
	if got := mustCounts(t, s, c); got != want {
		t.Errorf("after folding [100, 199]: %+v, want %+v", got, want)
	}
	if d := deltaKeys(t, s, c.ID); d != 4 {
		t.Errorf("%d deltas left, want 4 (those outside [100, 199])", d)
	}
	var base Counts
	err = s.db.View(func(txn kv.Txn) error {
		item, err := txn.Get(counterBaseKey(c.ID, 100))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { base, err = decodeCounts(v); return err })
	})
	if err != nil || base != (Counts{Docs: 2, Bytes: 250, KeyBytes: 2}) {
		t.Errorf("base at 100: %+v, %v; want the two cells at 100 and 150", base, err)
	}
}

// TestAccountAlternating: a transaction that writes two sharded
// collections in turn, a few documents at a time over several
// partitions each, with its counters
// kept per partition (cells, as a resharding's copy keeps them), counts
// every document in its own collection, logical partition and
// partition's cell.
func TestAccountAlternating(t *testing.T) {
	s := openMem(t)
	var colls []*Collection
	for _, name := range []string{"a", "b"} {
		c, err := s.CreateCollectionWith("db", name, NewCollection{Spec: shard.Spec{Path: "k"}, Partitions: 4})
		if err != nil {
			t.Fatal(err)
		}
		colls = append(colls, c)
	}
	err := s.Update(func(tx *Txn) error {
		tx.each = true
		for i := int32(0); i < 40; i++ {
			c := colls[i/5%2] // runs of five documents
			// Logical partitions of one or several documents, inserted
			// out of key order.
			k := (i * 7) % 13
			doc := bsoncore.BuildDocument(nil,
				bsoncore.AppendInt32Element(nil, "_id", i),
				bsoncore.AppendInt32Element(nil, "k", k),
				bsoncore.AppendStringElement(nil, "pad", strings.Repeat("x", int(i))))
			key, err := reshardKeyOf(c, c.Spec(), doc)
			if err != nil {
				return err
			}
			if err := tx.Insert(c, key, doc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range colls {
		checkExact(t, s, c, 20)
		checkLogical(t, s, c)
		var err error
		// Each partition's cell holds what its documents add up to.
		m := c.Map()
		want := make([]Counts, m.Len())
		err = s.View(func(tx *Txn) error {
			return tx.Scan(c, nil, func(key, doc []byte) (bool, error) {
				want[m.Lookup(pointOf(key))].add(Counts{Docs: 1, Bytes: int64(len(doc)), KeyBytes: int64(len(key)), IndexBytes: idEntryBytes(t, c, key)})
				return true, nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]Counts, m.Len())
		err = s.db.View(func(txn kv.Txn) error {
			prefix := append(counterPrefix(c.ID), cellTag)
			it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				point := binary.BigEndian.Uint64(it.Item().Key()[len(prefix):])
				i := m.Lookup(point)
				if m.At(i).Min != point {
					t.Errorf("%s: a cell at %d, inside partition %d", c.Namespace(), point, i)
				}
				if err := it.Item().Value(func(v []byte) error {
					d, err := decodeCounts(v)
					got[i].add(d)
					return err
				}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: partition %d's cell holds %+v, its documents add up to %+v", c.Namespace(), i, got[i], want[i])
			}
		}
	}
}

// readCountingDB counts the keys each committed read-write transaction
// read through iterators, and keeps the most.
type readCountingDB struct {
	kv.DB
	most atomic.Int64
}

func (d *readCountingDB) NewTransaction(update bool) kv.Txn {
	return &readCountingTxn{Txn: d.DB.NewTransaction(update), db: d, update: update}
}

type readCountingTxn struct {
	kv.Txn
	db     *readCountingDB
	update bool
	reads  int64
}

func (t *readCountingTxn) NewIterator(o kv.IterOptions) kv.Iterator {
	return &readCountingIter{Iterator: t.Txn.NewIterator(o), txn: t}
}

func (t *readCountingTxn) Commit() error {
	if t.update {
		for {
			m := t.db.most.Load()
			if t.reads <= m || t.db.most.CompareAndSwap(m, t.reads) {
				break
			}
		}
	}
	return t.Txn.Commit()
}

type readCountingIter struct {
	kv.Iterator
	txn *readCountingTxn
}

func (it *readCountingIter) Item() kv.Item {
	it.txn.reads++
	return it.Iterator.Item()
}

// TestFoldReadsFewKeysPerTransaction: folding the counters of a
// collection with many logical partitions reads them in transactions of
// at most foldReads keys (and the logical partition under way), however
// few of them have deltas. Badger checks each read against every commit
// made meanwhile while holding its commit lock, so one transaction over
// all of them stopped every reader and writer.
func TestFoldReadsFewKeysPerTransaction(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	counting := &readCountingDB{DB: s.db}
	s.db = counting
	const n = 6000
	lp := func(i int) []byte {
		return value.EncodeKey(binary.BigEndian.AppendUint64(nil, uint64(i)<<32), bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(i))})
	}
	var want Counts
	for start := 0; start < n; start += 1000 {
		err := s.update(func(txn kv.Txn) error {
			for i := start; i < start+1000; i++ {
				one := Counts{Docs: 2, Bytes: 10, KeyBytes: 4}
				if err := txn.Set(lpBaseKey(c.ID, lp(i)), encodeCounts(one)); err != nil {
					return err
				}
				want.add(one)
				if i%500 == 0 { // a few deltas, far apart
					d := Counts{Docs: 1, Bytes: 5, KeyBytes: 2}
					if err := txn.Set(s.lpDeltaKey(c.ID, lp(i)), encodeCounts(d)); err != nil {
						return err
					}
					want.add(d)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	counting.most.Store(0)
	if err := s.foldLogical(c.ID, nil); err != nil {
		t.Fatal(err)
	}
	if most := counting.most.Load(); most > foldReads+2 || most >= n/2 || most == 0 {
		t.Errorf("a fold transaction read %d keys of %d, want at most %d", most, n, foldReads+2)
	}
	bases, deltas := lpCounterKeys(t, s, c.ID)
	if bases != n || deltas != 0 {
		t.Errorf("after the fold: %d bases and %d deltas, want %d and 0", bases, deltas, n)
	}
	var got Counts
	err := s.db.View(func(txn kv.Txn) error {
		_, err := scanLogical(txn, c.ID, 0, ^uint64(0), func(p LogicalPartition) error {
			got.add(p.Counts)
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("folded counts %+v, want %+v", got, want)
	}
}
