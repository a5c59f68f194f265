package cluster

import (
	"bytes"
	"errors"
	"testing"
)

func TestBatchRoundTrip(t *testing.T) {
	b := NewBatch()
	b.Put([]byte("k1"), []byte("v1"))
	b.Delete([]byte("k2"))
	b.Add([]byte("k3"), 1, -2, 1<<40)
	b.Put([]byte("k4"), nil)
	b.Expect([]byte("k5"), []byte("v5"))
	b.ExpectAbsent([]byte("k6"))
	b.ExpectHash([]byte("k7"), ValueDigest([]byte("v7")))
	if b.Len() != 7 {
		t.Fatalf("Len = %d", b.Len())
	}
	ops, err := DecodeBatch(b.Encoded())
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{
		{Kind: OpPut, Key: []byte("k1"), Value: []byte("v1")},
		{Kind: OpDelete, Key: []byte("k2")},
		{Kind: OpAdd, Key: []byte("k3"), Deltas: []int64{1, -2, 1 << 40}},
		{Kind: OpPut, Key: []byte("k4"), Value: []byte{}},
		{Kind: OpExpect, Key: []byte("k5"), Value: []byte("v5")},
		{Kind: OpExpect, Key: []byte("k6"), Absent: true},
		{Kind: OpExpectHash, Key: []byte("k7"), Value: func() []byte { d := ValueDigest([]byte("v7")); return d[:] }()},
	}
	if len(ops) != len(want) {
		t.Fatalf("%d ops, want %d", len(ops), len(want))
	}
	for i, op := range ops {
		w := want[i]
		if op.Kind != w.Kind || !bytes.Equal(op.Key, w.Key) || !bytes.Equal(op.Value, w.Value) || op.Absent != w.Absent || len(op.Deltas) != len(w.Deltas) {
			t.Errorf("op %d = %+v, want %+v", i, op, w)
			continue
		}
		for j := range w.Deltas {
			if op.Deltas[j] != w.Deltas[j] {
				t.Errorf("op %d delta %d = %d, want %d", i, j, op.Deltas[j], w.Deltas[j])
			}
		}
	}
	if got := reencode(ops); !bytes.Equal(got, b.Encoded()) {
		t.Errorf("re-encoded %x, want %x", got, b.Encoded())
	}
}

func TestDecodeBatchMalformed(t *testing.T) {
	for name, in := range map[string][]byte{
		"empty":            {},
		"version 3":        {3, 'd', 1, 'k'},
		"durable, bad op":  {2, 'z', 1, 'k'},
		"unknown op":       {1, 'z', 1, 'k'},
		"empty key":        {1, 'd', 0},
		"short digest":     {1, 'h', 1, 'k', 1, 1, 2, 3},
		"absent digest":    {1, 'h', 1, 'k', 0},
		"truncated key":    {1, 'd', 5, 'k'},
		"truncated value":  {1, 'p', 1, 'k', 9, 'v'},
		"bad varint":       {1, 'd', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"zero deltas":      {1, 'a', 1, 'k', 0},
		"too many deltas":  {1, 'a', 1, 'k', 17},
		"truncated deltas": {1, 'a', 1, 'k', 2, 0, 0, 0, 0, 0, 0, 0, 1},
		"no expectation":   {1, 'e', 1, 'k'},
		"bad expectation":  {1, 'e', 1, 'k', 2},
		"expected value":   {1, 'e', 1, 'k', 1, 3, 'v'},
	} {
		if _, err := DecodeBatch(in); !errors.Is(err, errMalformed) {
			t.Errorf("%s: err = %v, want malformed", name, err)
		}
	}
}

func TestAddCounters(t *testing.T) {
	v, err := addCounters(nil, []int64{5, -1})
	if err != nil {
		t.Fatal(err)
	}
	v, err = addCounters(v, []int64{1, 1, 7}) // grows to three fields
	if err != nil {
		t.Fatal(err)
	}
	v, err = addCounters(v, []int64{-6}) // leaves the others
	if err != nil {
		t.Fatal(err)
	}
	got, _ := Counters(v)
	if len(got) != 3 || got[0] != 0 || got[1] != 0 || got[2] != 7 {
		t.Errorf("counters = %v, want [0 0 7]", got)
	}
	if _, err := addCounters([]byte("abc"), []int64{1}); err == nil {
		t.Error("adding to a 3-byte value succeeded")
	}
}

// reencode builds the batch that ops describe.
func reencode(ops []Op) []byte {
	b := NewBatch()
	for _, op := range ops {
		switch op.Kind {
		case OpPut:
			b.Put(op.Key, op.Value)
		case OpDelete:
			b.Delete(op.Key)
		case OpAdd:
			b.Add(op.Key, op.Deltas...)
		case OpExpectHash:
			b.ExpectHash(op.Key, [DigestLen]byte(op.Value))
		case OpExpect:
			if op.Absent {
				b.ExpectAbsent(op.Key)
			} else {
				b.Expect(op.Key, op.Value)
			}
		}
	}
	return b.Encoded()
}

// FuzzDecodeBatch: no input panics, and what decodes re-encodes to the
// same bytes.
func FuzzDecodeBatch(f *testing.F) {
	b := NewBatch()
	b.Put([]byte("key"), []byte("value"))
	b.Add([]byte("n"), 3)
	b.Delete([]byte("x"))
	f.Add(b.Encoded())
	f.Add([]byte{1})
	f.Add([]byte{1, 'a', 1, 'k', 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		ops, err := DecodeBatch(in)
		if err != nil {
			return
		}
		if got := reencode(ops); !bytes.Equal(got, in) {
			// Varints have one canonical form only when minimal; a
			// non-minimal one decodes but re-encodes shorter.
			if len(got) >= len(in) {
				t.Fatalf("re-encoded %x from %x", got, in)
			}
		}
	})
}

// A durable barrier is an entry of no writes that says so, and stays one
// when a node proposes it for another.
func TestDurableBarrier(t *testing.T) {
	b := DurableBarrier()
	if !b.Durable() || NewBatch().Durable() {
		t.Fatalf("Durable: barrier %v, plain batch %v", b.Durable(), NewBatch().Durable())
	}
	ops, err := DecodeBatch(b.Encoded())
	if err != nil || len(ops) != 0 {
		t.Fatalf("decoded barrier: %v, %v", ops, err)
	}
	again, err := BatchFrom(b.Encoded())
	if err != nil || !again.Durable() {
		t.Fatalf("BatchFrom a barrier: durable %v, %v", again != nil && again.Durable(), err)
	}
}
