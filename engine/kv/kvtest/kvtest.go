// Package kvtest checks a kv.DB against the invariants the document layer
// relies on (the package comment of engine/kv): atomic commits, one
// committed state per transaction with its own writes on top, conflicts
// on what was read, key order for iterators, blind write batches and
// durability across a reopen. Every implementation runs it from its own
// tests.
package kvtest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/parsecdb/parsec/engine/kv"
)

// Opener opens the implementation on dir (the same dir again after a
// close: what was committed must be there).
type Opener func(t *testing.T, dir string) kv.DB

// Run runs every check, each on a store of its own.
func Run(t *testing.T, open Opener) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Opener)
	}{
		{"atomic_commit", atomicCommit},
		{"read_your_writes", readYourWrites},
		{"one_state", oneState},
		{"conflict_on_read", conflictOnRead},
		{"order", order},
		{"write_batch", writeBatch},
		{"durable", durable},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

func openFresh(t *testing.T, open Opener) kv.DB {
	t.Helper()
	db := open(t, t.TempDir())
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// put commits key=value pairs (alternating) in one transaction.
func put(t *testing.T, db kv.DB, kvs ...string) {
	t.Helper()
	tx := db.NewTransaction(true)
	defer tx.Discard()
	for i := 0; i+1 < len(kvs); i += 2 {
		if err := tx.Set([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// get reads key in tx: its value, or "<none>".
func get(t *testing.T, tx kv.Txn, key string) string {
	t.Helper()
	item, err := tx.Get([]byte(key))
	if errors.Is(err, kv.ErrNotFound) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// scan lists "key=value" under prefix in tx, in the iterator's order,
// from seek when not empty.
func scan(t *testing.T, tx kv.Txn, prefix, seek string, reverse bool) []string {
	t.Helper()
	it := tx.NewIterator(kv.IterOptions{Prefix: []byte(prefix), Reverse: reverse})
	defer it.Close()
	if seek == "" {
		it.Rewind()
	} else {
		it.Seek([]byte(seek))
	}
	var out []string
	for ; it.Valid(); it.Next() {
		item := it.Item()
		err := item.Value(func(v []byte) error {
			out = append(out, string(item.Key())+"="+string(v))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if item.KeySize() != int64(len(item.Key())) || item.ValueSize() < 0 {
			t.Errorf("sizes of %q: key %d, value %d", item.Key(), item.KeySize(), item.ValueSize())
		}
	}
	return out
}

func view(t *testing.T, db kv.DB, fn func(kv.Txn)) {
	t.Helper()
	if err := db.View(func(tx kv.Txn) error { fn(tx); return nil }); err != nil {
		t.Fatal(err)
	}
}

func same(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// atomicCommit: a committed transaction's writes are all visible; a
// discarded one's and a failed commit's none.
func atomicCommit(t *testing.T, open Opener) {
	db := openFresh(t, open)
	put(t, db, "a", "1", "b", "1")

	tx := db.NewTransaction(true)
	for _, k := range []string{"a", "b", "c"} {
		if err := tx.Set([]byte(k), []byte("2")); err != nil {
			t.Fatal(err)
		}
	}
	tx.Discard()
	view(t, db, func(tx kv.Txn) {
		if got := scan(t, tx, "", "", false); !same(got, []string{"a=1", "b=1"}) {
			t.Errorf("after a discarded transaction: %v", got)
		}
	})

	tx = db.NewTransaction(true)
	_ = tx.Set([]byte("a"), []byte("3"))
	if err := tx.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	_ = tx.Set([]byte("c"), []byte("3"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx.Discard() // after Commit: nothing
	view(t, db, func(tx kv.Txn) {
		if got := scan(t, tx, "", "", false); !same(got, []string{"a=3", "c=3"}) {
			t.Errorf("after a commit: %v", got)
		}
	})
}

// readYourWrites: Get and iterators of a transaction see its own sets and
// deletes over the committed state.
func readYourWrites(t *testing.T, open Opener) {
	db := openFresh(t, open)
	put(t, db, "k1", "old", "k2", "old", "k4", "old")
	tx := db.NewTransaction(true)
	defer tx.Discard()
	_ = tx.Set([]byte("k1"), []byte("new"))
	_ = tx.Delete([]byte("k2"))
	_ = tx.Set([]byte("k3"), []byte("new"))
	if got := get(t, tx, "k1") + get(t, tx, "k2") + get(t, tx, "k3"); got != "new<none>new" {
		t.Errorf("Get in the writing transaction: %s", got)
	}
	if got := scan(t, tx, "k", "", false); !same(got, []string{"k1=new", "k3=new", "k4=old"}) {
		t.Errorf("iterator in the writing transaction: %v", got)
	}
	if got := scan(t, tx, "k", "", true); !same(got, []string{"k4=old", "k3=new", "k1=new"}) {
		t.Errorf("reverse iterator in the writing transaction: %v", got)
	}
	view(t, db, func(other kv.Txn) {
		if got := get(t, other, "k1") + get(t, other, "k3"); got != "old<none>" {
			t.Errorf("another transaction sees uncommitted writes: %s", got)
		}
	})
}

// oneState: a transaction keeps reading the state it began with while
// others commit.
func oneState(t *testing.T, open Opener) {
	db := openFresh(t, open)
	put(t, db, "x", "1", "y", "1")
	tx := db.NewTransaction(false)
	defer tx.Discard()
	if got := get(t, tx, "x"); got != "1" {
		t.Fatalf("x = %s", got)
	}
	put(t, db, "x", "2", "y", "2", "z", "2")
	if got := get(t, tx, "y"); got != "1" {
		t.Errorf("a later commit leaked into an open transaction: y = %s", got)
	}
	if got := scan(t, tx, "", "", false); !same(got, []string{"x=1", "y=1"}) {
		t.Errorf("iterator of an open transaction: %v", got)
	}
	view(t, db, func(now kv.Txn) {
		if got := scan(t, now, "", "", false); !same(got, []string{"x=2", "y=2", "z=2"}) {
			t.Errorf("a new transaction: %v", got)
		}
	})
}

// conflictOnRead: two read-modify-writes of one key cannot both commit;
// a transaction that read nothing another changed commits.
func conflictOnRead(t *testing.T, open Opener) {
	db := openFresh(t, open)
	put(t, db, "n", "0", "m", "0")
	a := db.NewTransaction(true)
	defer a.Discard()
	b := db.NewTransaction(true)
	defer b.Discard()
	get(t, a, "n")
	get(t, b, "n")
	_ = a.Set([]byte("n"), []byte("a"))
	_ = b.Set([]byte("n"), []byte("b"))
	if err := a.Commit(); err != nil {
		t.Fatalf("first commit: %v", err)
	}
	if err := b.Commit(); !errors.Is(err, kv.ErrConflict) {
		t.Errorf("second read-modify-write of one key: %v, want kv.ErrConflict", err)
	}
	// Reads by iteration count as reads.
	c := db.NewTransaction(true)
	defer c.Discard()
	scan(t, c, "m", "", false)
	_ = c.Set([]byte("sum"), []byte("x"))
	put(t, db, "m", "1")
	if err := c.Commit(); !errors.Is(err, kv.ErrConflict) {
		t.Errorf("a commit after another changed an iterated key: %v, want kv.ErrConflict", err)
	}
	// Disjoint keys: no conflict.
	d := db.NewTransaction(true)
	defer d.Discard()
	get(t, d, "n")
	_ = d.Set([]byte("d"), []byte("1"))
	put(t, db, "other", "1")
	if err := d.Commit(); err != nil {
		t.Errorf("disjoint transactions: %v", err)
	}
	view(t, db, func(tx kv.Txn) {
		if got := get(t, tx, "n"); got != "a" {
			t.Errorf("n = %s, want the first writer's", got)
		}
	})
}

// order: bytewise key order, prefixes, Seek forward and in reverse.
func order(t *testing.T, open Opener) {
	db := openFresh(t, open)
	put(t, db, "p/\x00", "0", "p/\x01", "1", "p/\xff", "f", "p/a", "a", "p/ab", "ab", "q/a", "q", "o", "o")
	view(t, db, func(tx kv.Txn) {
		if got := scan(t, tx, "p/", "", false); !same(got, []string{"p/\x00=0", "p/\x01=1", "p/a=a", "p/ab=ab", "p/\xff=f"}) {
			t.Errorf("prefix p/: %q", got)
		}
		if got := scan(t, tx, "p/", "p/aa", false); !same(got, []string{"p/ab=ab", "p/\xff=f"}) {
			t.Errorf("seek p/aa: %q", got)
		}
		if got := scan(t, tx, "p/", "p/aa", true); !same(got, []string{"p/a=a", "p/\x01=1", "p/\x00=0"}) {
			t.Errorf("reverse seek p/aa: %q", got)
		}
		if got := scan(t, tx, "p/", "p/\xff\xff", true); len(got) != 5 || got[0] != "p/\xff=f" {
			t.Errorf("reverse from past the prefix's end: %q", got)
		}
		if got := scan(t, tx, "r", "", false); len(got) != 0 {
			t.Errorf("empty prefix range: %q", got)
		}
		if _, err := tx.Get([]byte("p/")); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("Get of a missing key: %v", err)
		}
	})
}

// writeBatch: a flushed batch's sets and deletes are all there; a
// cancelled batch may leave nothing it did not flush.
func writeBatch(t *testing.T, open Opener) {
	db := openFresh(t, open)
	put(t, db, "w/1", "x", "w/2", "x")
	wb := db.NewWriteBatch()
	for i := 0; i < 1000; i++ {
		if err := wb.Set([]byte(fmt.Sprintf("b/%04d", i)), bytes.Repeat([]byte{'v'}, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Delete([]byte("w/1")); err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	view(t, db, func(tx kv.Txn) {
		if n := len(scan(t, tx, "b/", "", false)); n != 1000 {
			t.Errorf("batch wrote %d keys, want 1000", n)
		}
		if got := scan(t, tx, "w/", "", false); !same(got, []string{"w/2=x"}) {
			t.Errorf("batch delete: %v", got)
		}
	})
}

// durable: what was committed is there after a close and a reopen.
func durable(t *testing.T, open Opener) {
	dir := t.TempDir()
	db := open(t, dir)
	put(t, db, "d/1", "one", "d/2", "two")
	tx := db.NewTransaction(true)
	_ = tx.Delete([]byte("d/1"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	view(t, db, func(tx kv.Txn) {
		if got := scan(t, tx, "d/", "", false); !same(got, []string{"d/2=two"}) {
			t.Errorf("after reopening: %v", got)
		}
	})
	if tables, vlog := db.Size(); tables < 0 || vlog < 0 {
		t.Errorf("size %d, %d", tables, vlog)
	}
}
