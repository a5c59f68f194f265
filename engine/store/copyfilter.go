package store

import (
	"hash/maphash"
	"sync"

	"github.com/parsecdb/parsec/engine/kv"
)

// copyFilter lets a resharding's copy insert into the temporary
// collection without reading each key first to rule out a duplicate (a
// source document the copy saw twice, or two of one _id with the same
// new shard key): the read is a lookup in every memtable and level of
// Badger, a sixth of the copy's time. It is a Bloom filter of the
// temporary collection's document keys, and of the counter keys of its
// logical partitions (lpBaseKey), those there when the copy (re)started
// and those the copy claimed since; while it copies, only the copy
// writes that collection. A key the filter does not hold holds no
// document and goes in without the read; a key it may hold is read, as
// any insert reads it. A logical partition the filter does not hold has
// no counters: the batch that claimed it writes them as a base, which
// no fold has to sum up later (one of each document's three keys when
// every document has a shard-key value of its own); one it may hold
// gets a delta, as any write's.
//
// Two batches that claim one key at the same time would race (the one
// that skips the read could overwrite the other's document unseen, or
// its base the other's delta once a fold took it in), so a batch claims
// all its keys at once (of logical partitions, the fresh ones), and one
// that meets a key another batch claimed and has not finished with
// waits for that batch before it claims anything: its read then sees
// the other's commit, and its delta follows the other's base.
type copyFilter struct {
	build sync.Once
	err   error
	seed  maphash.Seed
	bits  []uint64

	mu       sync.Mutex
	done     *sync.Cond
	inFlight map[uint64]int // hashes of keys claimed by batches not finished, by batch
	batches  int
}

// copyFilterBits is the filter's size per document of the source (10
// bits per key, for the document's key and its logical partition's when
// each has its own), and copyFilterHashes the bits set per key: about 1 %
// false positives.
const (
	copyFilterBits   = 20
	copyFilterHashes = 7
)

// copyFilterOf is the filter of r's copy, built on first use from the
// keys its temporary collection holds.
func (s *Store) copyFilterOf(r *Resharding, tmp *Collection) (*copyFilter, error) {
	v, _ := s.copyFilters.LoadOrStore(r.TempID, &copyFilter{})
	f := v.(*copyFilter)
	f.build.Do(func() {
		n := max(r.ApproxDocs, 1024) * copyFilterBits
		f.seed = maphash.MakeSeed()
		f.bits = make([]uint64, (n+63)/64)
		f.done = sync.NewCond(&f.mu)
		f.inFlight = map[uint64]int{}
		f.err = s.db.View(func(txn kv.Txn) error {
			it := txn.NewIterator(kv.IterOptions{Prefix: DocPrefix(tmp.ID)})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				f.add(f.hash(it.Item().Key()))
				if lp, err := logicalPartitionOf(it.Item().Key()); err == nil {
					f.add(f.hash(lpBaseKey(tmp.ID, lp)))
				}
			}
			lps := txn.NewIterator(kv.IterOptions{Prefix: lpPrefix(tmp.ID)})
			defer lps.Close()
			for lps.Rewind(); lps.Valid(); lps.Next() {
				if lp, _, ok := parseLPCounterKey(lps.Item().Key()); ok {
					f.add(f.hash(lpBaseKey(tmp.ID, lp)))
				}
			}
			return nil
		})
	})
	if f.err != nil {
		s.copyFilters.CompareAndDelete(r.TempID, f)
		return nil, mapKVErr(f.err)
	}
	return f, nil
}

// dropCopyFilter forgets the filter of the copy into collection id.
func (s *Store) dropCopyFilter(id uint32) { s.copyFilters.Delete(id) }

func (f *copyFilter) hash(key []byte) uint64 { return maphash.Bytes(f.seed, key) }

// positions calls fn with the bits of a key of hash h, until it returns
// false.
func (f *copyFilter) positions(h uint64, fn func(word int, bit uint64) bool) bool {
	h1, h2 := h, h>>32|1
	m := uint64(len(f.bits)) * 64
	for i := range uint64(copyFilterHashes) {
		p := (h1 + i*h2) % m
		if !fn(int(p/64), 1<<(p%64)) {
			return false
		}
	}
	return true
}

func (f *copyFilter) add(h uint64) {
	f.positions(h, func(w int, b uint64) bool { f.bits[w] |= b; return true })
}

func (f *copyFilter) mayHold(h uint64) bool {
	return f.positions(h, func(w int, b uint64) bool { return f.bits[w]&b != 0 })
}

// claim claims, for one batch, the keys of its documents (docs) and the
// counter keys of their logical partitions (lps, each once), waiting
// first for the batches that claimed any of them and have not finished.
// It returns the claim (for release), which documents' keys may hold a
// document and must be read before an insert, and which logical
// partitions are fresh: nothing holds them, and their counters go in as
// a base. Only fresh partitions are held until release: a partition
// seen before gets deltas, which any number of batches may write at
// once, so a new shard key of few values does not make the copy's
// batches wait for one another. Claims are kept by hash: two keys of
// one hash only make a batch wait for nothing.
func (f *copyFilter) claim(docs, lps [][]byte) (c copyClaim, read, fresh []bool) {
	hs := make([]uint64, len(docs)+len(lps))
	for i, k := range docs {
		hs[i] = f.hash(k)
	}
	for i, k := range lps {
		hs[len(docs)+i] = f.hash(k)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.claimedElsewhere(hs) {
		f.done.Wait()
	}
	f.batches++
	c = copyClaim{batch: f.batches, hashes: hs[:0:0]}
	read, fresh = make([]bool, len(docs)), make([]bool, len(lps))
	for i, h := range hs {
		held := f.mayHold(h)
		if i < len(docs) {
			read[i] = held
		} else if fresh[i-len(docs)] = !held; held {
			continue // not claimed: deltas
		}
		f.add(h)
		f.inFlight[h] = c.batch
		c.hashes = append(c.hashes, h)
	}
	return c, read, fresh
}

// copyClaim is one batch's claim: its number and its keys' hashes.
type copyClaim struct {
	batch  int
	hashes []uint64
}

func (f *copyFilter) claimedElsewhere(hs []uint64) bool {
	if len(f.inFlight) == 0 {
		return false
	}
	for _, h := range hs {
		if _, ok := f.inFlight[h]; ok {
			return true
		}
	}
	return false
}

// release ends claim c, once its transaction committed or failed.
func (f *copyFilter) release(c copyClaim) {
	f.mu.Lock()
	for _, h := range c.hashes {
		if f.inFlight[h] == c.batch {
			delete(f.inFlight, h)
		}
	}
	f.mu.Unlock()
	f.done.Broadcast()
}
