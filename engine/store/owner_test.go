package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestOwnerOf: every key family keys.go builds has an owner, and the
// keys of one logical partition (its documents and its counters) name
// the same collection and point.
func TestOwnerOf(t *testing.T) {
	s := &Store{boot: 3}
	const coll, point = 7, 0x3f1a000000000009
	lp := append([]byte{0x3f, 0x1a, 0, 0, 0, 0, 0, 0x09}, 0x0f, 'E', 'U', 0)
	doc := DocKey(coll, point, lp[8:], []byte{0x0a, 0x05, 0x80, 0x01, 0x0b, 0})
	part := Owner{Scope: ScopePartition, Coll: coll, Point: point}
	partMin := Owner{Scope: ScopePartition, Coll: coll, Point: 0x3f00000000000000}
	h := home{coll: coll, point: partMin.Point, ok: true}
	lsid := make([]byte, SessionIDLen)
	pos := ChangePos{TS: 99, Index: 2}
	for _, c := range []struct {
		name       string
		key, value []byte
		want       Owner
	}{
		{"document", doc, nil, part},
		{"logical-partition base", lpBaseKey(coll, lp), nil, part},
		{"logical-partition delta", s.lpDeltaKey(coll, lp), nil, part},
		{"collection base", counterBaseKey(coll, partMin.Point), nil, partMin},
		{"collection delta", s.deltaKey(coll, point), nil, part},
		{"old collection base", append(counterPrefix(coll), 'b'), nil, Owner{Scope: ScopePartition, Coll: coll}},
		{"capped sequence", cappedSeqKey(coll), nil, Owner{Scope: ScopePartition, Coll: coll}},
		{"index entry", append(IndexPrefix(coll, 2), 0x10, 1), doc[6:], part},
		{"unique guard", uniqueGuardKey(append(IndexPrefix(coll, 2), 0x10, 1)), nil, Owner{Scope: ScopeFollows}},
		{"session head", sessionHeadKey(lsid, h), nil, partMin},
		{"session head, no document", sessionHeadKey(lsid, home{}), nil, Owner{Scope: ScopeCatalog}},
		{"session statement", sessionStmtKey(lsid, 4, h), nil, partMin},
		{"session statement, no document", sessionStmtKey(lsid, 4, home{}), nil, Owner{Scope: ScopeCatalog}},
		{"document event", changeEventKey(pos, doc), nil, part},
		{"catalog event", changeEventKey(pos, nil), nil, Owner{Scope: ScopeCatalog}},
		{"kept image", changeImageKey(pos, doc), nil, part},
		{"version marker", changeRefKey(doc), nil, part},
		{"change-log horizon", changeHorizonKey, nil, Owner{Scope: ScopeCatalog}},
		{"database", dbKey("db"), nil, Owner{Scope: ScopeCatalog}},
		{"collection", collKey("db", "c"), nil, Owner{Scope: ScopeCatalog}},
		{"view", viewKey("db", "v"), nil, Owner{Scope: ScopeCatalog}},
		{"user", userKey("db", "u"), nil, Owner{Scope: ScopeCatalog}},
		{"pending", pendingKey(coll), nil, Owner{Scope: ScopeCatalog}},
		{"sequence", seqKey, nil, Owner{Scope: ScopeCatalog}},
		{"boot", bootKey, nil, Owner{Scope: ScopeCatalog}},
		{"applied index", []byte("r/a\x00\x00\x00\x00\x00\x00\x00\x01"), nil, Owner{Scope: ScopeReplica}},
	} {
		got, err := OwnerOf(c.key, c.value)
		if err != nil || got != c.want {
			t.Errorf("%s %x: %+v, %v; want %+v", c.name, c.key, got, err, c.want)
		}
		// A key that names its owner itself names it whatever the value
		// (a replica puts such keys without reading them).
		if OwnerInKey(c.key) {
			for _, v := range [][]byte{nil, doc[6:], []byte("\xff\xff\xff\xff\xff\xff\xff\xff")} {
				if o, err := OwnerOf(c.key, v); err != nil || o != got {
					t.Errorf("%s %x with value %x: %+v, %v; OwnerInKey says the value makes no difference", c.name, c.key, v, o, err)
				}
			}
		} else if c.name != "index entry" {
			t.Errorf("%s %x: OwnerInKey false", c.name, c.key)
		}
	}
	for _, bad := range [][]byte{nil, []byte("d"), []byte("dx"), []byte("d/\x00\x00\x00\x07\x01"), []byte("z/1"),
		append(IndexPrefix(coll, 2), 1), []byte("s/h123"), []byte("l/e12345")} {
		if _, err := OwnerOf(bad, nil); !errors.Is(err, ErrCorrupted) {
			t.Errorf("OwnerOf(%x): %v, want ErrCorrupted", bad, err)
		}
	}
}

// TestEveryKeyHasOneOwner runs a mixed workload — a sharded collection
// split into partitions with a secondary index, an unsharded one, a
// capped one, retryable-write records, change events with kept images —
// then reads every stored key: each has an owner, a partition-owned key
// names a live collection, and an index entry, an event or a record of
// a document write names the partition of that document.
func TestEveryKeyHasOneOwner(t *testing.T) {
	s := openMem(t)
	sh := mustShard(t, s, "db", "sh", 4)
	sh = mustIndex(t, s, sh, "pad_1", bson.D{{Key: "pad", Value: 1}})
	plain := mustCreate(t, s, "db", "plain")
	capped, err := s.CreateCollectionWith("db", "capped", NewCollection{Capped: true, CappedSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	lsid := bytes.Repeat([]byte{5}, SessionIDLen)
	regions := []string{"EU", "US", "APAC", "LATAM", "MEA", "ANZ"}
	for i := int32(0); i < 60; i++ {
		d := skDoc(i, regions[i%int32(len(regions))], int(i))
		err := s.Update(func(tx *Txn) error {
			if err := tx.Insert(current(s, sh), skKey(t, current(s, sh), d), d); err != nil {
				return err
			}
			return tx.PutSessionStatements(lsid, SessionHead{TxnNumber: int64(i), LastUse: time.Now(), Span: 1}, []SessionStatement{{ID: 0, Outcome: []byte("ok")}})
		})
		if err != nil {
			t.Fatal(err)
		}
		insert(t, s, plain, i, 10)
		insert(t, s, capped, i, 100)
		if i == 30 {
			c := current(s, sh)
			p := c.Map().At(0)
			if _, err := s.SplitPartition(c, p.ID, p.Min+(p.Max-p.Min)/2); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Rewrites keep the inserted versions as images; deletes remove.
	for i := int32(0); i < 60; i += 3 {
		d := skDoc(i, regions[i%int32(len(regions))], int(i)+1)
		c := current(s, sh)
		if err := s.Update(func(tx *Txn) error { return tx.Replace(c, skKey(t, c, d), d, len(d)-1) }); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(func(tx *Txn) error { return tx.Delete(plain, idKey(plain, i), len(mkDoc(i, 10))) }); err != nil {
			t.Fatal(err)
		}
	}
	s.folds.Wait()
	if err := s.fold(sh.ID); err != nil {
		t.Fatal(err)
	}

	live := map[uint32]*Collection{}
	for _, c := range []*Collection{current(s, sh), plain, capped} {
		live[c.ID] = c
	}
	seen := map[string]int{}
	err = s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.KeyCopy(nil)
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			o, err := OwnerOf(k, v)
			if err != nil {
				return err
			}
			if byKey, err := OwnerOf(k, nil); OwnerInKey(k) && (err != nil || byKey != o) {
				return fmt.Errorf("key %x: owner %+v by key alone, %+v with its value (%v)", k, byKey, o, err)
			}
			seen[fmt.Sprintf("%c/%d", k[0], o.Scope)]++
			switch o.Scope {
			case ScopePartition:
				c := live[o.Coll]
				if c == nil {
					return fmt.Errorf("key %x names collection %d, which does not exist", k, o.Coll)
				}
				if err := checkOwnerPoint(txn, c, k, v, o); err != nil {
					return err
				}
			case ScopeFollows:
				return fmt.Errorf("key %x is stored but belongs to no one", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"d/1", "c/1", "x/1", "s/1", "l/1", "m/2", "l/2"} {
		if seen[want] == 0 {
			t.Errorf("no key of %s was seen (%v): the workload missed a family", want, seen)
		}
	}
}

// checkOwnerPoint checks that key k (value v) of c, owned by o, is at the
// point of what it belongs to: a document's index entry at the
// document's point, a document's event or image at the document's, a
// retryable-write record at the first point of a partition of c.
func checkOwnerPoint(txn kv.Txn, c *Collection, k, v []byte, o Owner) error {
	m := c.Map()
	switch {
	case k[0] == 'x':
		dk := append(DocPrefix(c.ID), v...)
		if _, err := txn.Get(dk); err != nil {
			return fmt.Errorf("index entry %x: its document %x: %v", k, dk, err)
		}
		if pointOf(dk) != o.Point {
			return fmt.Errorf("index entry %x at point %x, its document at %x", k, o.Point, pointOf(dk))
		}
	case k[0] == 's':
		found := false
		for _, p := range m.Partitions() {
			found = found || p.Min == o.Point
		}
		if !found {
			return fmt.Errorf("retryable-write record %x at point %x, which begins no partition of %v", k, o.Point, m.Partitions())
		}
	case bytes.HasPrefix(k, changeEventPrefix):
		ev, err := decodeChangeEvent(v, ChangePos{})
		if err != nil {
			return err
		}
		if ev.Point != o.Point {
			return fmt.Errorf("event %x of a document at %x kept at %x", k, ev.Point, o.Point)
		}
	case k[0] == 'c' && k[6] == cellTag:
		if o.Point != binary.BigEndian.Uint64(k[7:]) {
			return fmt.Errorf("counter cell %x owned at %x", k, o.Point)
		}
	}
	return nil
}
