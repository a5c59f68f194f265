package cluster

import (
	"bytes"
	"context"
	"slices"

	"github.com/parsecdb/parsec/engine/kv"
)

// farIter walks the keys under a prefix that a routed store's node holds
// and those of groups it holds no replica of (Far), merged in key order:
// the node's own keys (less those a replica moved away left behind) and,
// per far group, pages read from a node holding it.
type farIter struct {
	k       *Replicated
	local   kv.Iterator
	far     []uint64
	pagers  []*farPager
	prefix  []byte
	end     []byte // the first key after the prefix (nil: none)
	reverse bool
	cur     int // the source of the current key: -1 local, else a pager; -2 none
}

func newFarIter(k *Replicated, local kv.Iterator, o kv.IterOptions, far []uint64) *farIter {
	it := &farIter{k: k, local: local, far: far, prefix: bytes.Clone(o.Prefix), reverse: o.Reverse, cur: -2}
	if len(o.Prefix) > 0 {
		it.end = prefixEnd(o.Prefix)
	}
	for _, g := range far {
		it.pagers = append(it.pagers, &farPager{it: it, group: g})
	}
	return it
}

// prefixEnd is the first key after every key with prefix (nil: none).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (it *farIter) Rewind() {
	it.local.Rewind()
	for _, p := range it.pagers {
		p.seek(nil)
	}
	it.settle()
}

func (it *farIter) Seek(key []byte) {
	it.local.Seek(key)
	for _, p := range it.pagers {
		p.seek(key)
	}
	it.settle()
}

// skipLeftovers moves the local iterator past keys of far groups.
func (it *farIter) skipLeftovers() {
	for it.local.Valid() {
		item := it.local.Item()
		var g uint64
		var known bool
		_ = item.Value(func(v []byte) error { g, known = it.k.Far.GroupOf(item.Key(), v); return nil })
		if !known || !slices.Contains(it.far, g) {
			return
		}
		it.local.Next()
	}
}

// settle picks the nearest key among the sources.
func (it *farIter) settle() {
	it.skipLeftovers()
	it.cur = -2
	var best []byte
	if it.local.Valid() {
		it.cur, best = -1, it.local.Item().Key()
	}
	for i, p := range it.pagers {
		k, ok := p.key()
		if !ok {
			continue
		}
		if it.cur == -2 || it.before(k, best) {
			it.cur, best = i, k
		}
	}
}

func (it *farIter) before(a, b []byte) bool {
	c := bytes.Compare(a, b)
	if it.reverse {
		return c > 0
	}
	return c < 0
}

func (it *farIter) Valid() bool { return it.cur != -2 }

func (it *farIter) Next() {
	switch {
	case it.cur == -1:
		it.local.Next()
	case it.cur >= 0:
		it.pagers[it.cur].next()
	}
	it.settle()
}

func (it *farIter) Item() kv.Item {
	if it.cur == -1 {
		return it.local.Item()
	}
	return it.pagers[it.cur].item()
}

func (it *farIter) Close() { it.local.Close() }

// farPager reads one far group's keys under the iterator's prefix a page
// at a time.
type farPager struct {
	it    *farIter
	group uint64
	page  []KV
	i     int
	more  bool
	size  int
	err   error
}

// Pages start small (a point read or a short scan reads little) and
// grow.
const (
	farFirstPage = 64
	farMaxPage   = 1024
)

// seek loads the first page at or after key (reverse: at or before; nil:
// the prefix's first or last key).
func (p *farPager) seek(key []byte) {
	it := p.it
	q := ScanQuery{Start: it.prefix, End: it.end, Reverse: it.reverse}
	if key != nil {
		if it.reverse {
			if e := append(bytes.Clone(key), 0); it.end == nil || bytes.Compare(e, it.end) < 0 {
				q.End = e
			}
		} else if bytes.Compare(key, q.Start) > 0 {
			q.Start = bytes.Clone(key)
		}
	}
	p.size = farFirstPage
	p.load(q)
}

func (p *farPager) load(q ScanQuery) {
	q.Limit = p.size
	p.size = min(2*p.size, farMaxPage)
	ctx, cancel := context.WithTimeout(context.Background(), farTimeout)
	defer cancel()
	r, err := p.it.k.Far.Scan(ctx, p.group, q)
	p.page, p.i, p.more, p.err = r.Pairs, 0, r.More, err
}

func (p *farPager) key() ([]byte, bool) {
	if p.err != nil {
		return p.it.prefix, true // surfaced by the item's Value
	}
	if p.i < len(p.page) {
		return p.page[p.i].Key, true
	}
	return nil, false
}

func (p *farPager) next() {
	if p.err != nil {
		p.err, p.page, p.more = nil, nil, false // reported once
		return
	}
	p.i++
	if p.i < len(p.page) || !p.more {
		return
	}
	last := p.page[len(p.page)-1].Key
	q := ScanQuery{Start: p.it.prefix, End: p.it.end, Reverse: p.it.reverse}
	if p.it.reverse {
		q.End = last
	} else {
		q.Start = append(bytes.Clone(last), 0)
	}
	p.load(q)
}

func (p *farPager) item() kv.Item {
	if p.err != nil {
		return &errItem{key: p.it.prefix, err: p.err}
	}
	kvp := p.page[p.i]
	return &kvItem{key: kvp.Key, value: kvp.Value}
}

// errItem stands for keys a far group could not be read for: its value
// is the error, so that the reader fails rather than miss them.
type errItem struct {
	key []byte
	err error
}

func (i *errItem) Key() []byte                      { return i.key }
func (i *errItem) KeyCopy(dst []byte) []byte        { return append(dst[:0], i.key...) }
func (i *errItem) KeySize() int64                   { return int64(len(i.key)) }
func (i *errItem) ValueSize() int64                 { return 0 }
func (i *errItem) Value(func([]byte) error) error   { return i.err }
func (i *errItem) ValueCopy([]byte) ([]byte, error) { return nil, i.err }
