package agg

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// spillFile is a temporary file of documents, written once and then read
// back in order. The file is unlinked as soon as it is created where the
// system allows it, so nothing is left behind if the process dies.
type spillFile struct {
	f    *os.File
	name string // still linked: remove on close
	w    *bufio.Writer
	n    int
}

func newSpillFile(dir string) (*spillFile, error) {
	f, err := os.CreateTemp(dir, "parsec-spill-*")
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	s := &spillFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s, nil
}

func (s *spillFile) write(doc []byte) error {
	s.n++
	_, err := s.w.Write(doc)
	return err
}

// reader flushes what was written and reads it from the start.
func (s *spillFile) reader() (*spillReader, error) {
	if err := s.w.Flush(); err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return &spillReader{r: bufio.NewReaderSize(s.f, 1<<20)}, nil
}

func (s *spillFile) close() {
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
	if s.name != "" {
		_ = os.Remove(s.name)
		s.name = ""
	}
}

type spillReader struct {
	r *bufio.Reader
}

// next reads one document (a fresh copy), or nil at the end.
func (r *spillReader) next() (bsoncore.Document, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("spill: %w", err)
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n < 5 || n > 1<<30 {
		return nil, fmt.Errorf("spill: corrupt document length %d", n)
	}
	doc := make([]byte, n)
	copy(doc, hdr[:])
	if _, err := io.ReadFull(r.r, doc[4:]); err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return doc, nil
}

// sorter sorts documents by keys a function extracts, in memory up to
// the stage's memory limit and by an external merge sort past it (when
// disk use is allowed). The sort is stable. With limit > 0 only the
// first limit documents are kept.
type sorter struct {
	env   *env
	keyFn func(bsoncore.Document) []bsoncore.Value
	cmp   func(a, b []bsoncore.Value) int
	limit int64
	mem   *memory

	entries []sortEntry
	runs    []*spillFile
	spilled bool
}

type sortEntry struct {
	keys []bsoncore.Value
	doc  bsoncore.Document
}

func newSorter(e *env, stage string, keyFn func(bsoncore.Document) []bsoncore.Value, cmp func(a, b []bsoncore.Value) int, limit int64) *sorter {
	return &sorter{env: e, keyFn: keyFn, cmp: cmp, limit: limit, mem: newMemory(e, stage)}
}

// add takes a copy of doc.
func (s *sorter) add(doc bsoncore.Document) error {
	d := clone(doc)
	s.entries = append(s.entries, sortEntry{keys: s.keyFn(d), doc: d})
	s.mem.used += int64(len(d)) + perDocOverhead
	if s.limit > 0 && int64(len(s.entries)) >= 2*s.limit+1024 {
		s.compact()
	}
	if !s.mem.over() {
		return nil
	}
	if !s.mem.disk {
		return s.mem.exceeded()
	}
	return s.spill()
}

func (s *sorter) sortEntries() {
	slices.SortStableFunc(s.entries, func(a, b sortEntry) int { return s.cmp(a.keys, b.keys) })
}

// compact sorts the buffer and keeps only what the limit can use.
func (s *sorter) compact() {
	s.sortEntries()
	if s.limit > 0 && int64(len(s.entries)) > s.limit {
		clear(s.entries[s.limit:])
		s.entries = s.entries[:s.limit]
	}
	s.mem.used = 0
	for _, e := range s.entries {
		s.mem.used += int64(len(e.doc)) + perDocOverhead
	}
}

// spill writes the sorted buffer as a run.
func (s *sorter) spill() error {
	s.compact()
	f, err := newSpillFile(s.env.opts.TempDir)
	if err != nil {
		return err
	}
	s.runs = append(s.runs, f)
	for _, e := range s.entries {
		if err := f.write(e.doc); err != nil {
			return err
		}
	}
	clear(s.entries) // drop the references: the documents are on disk now
	s.entries = s.entries[:0]
	s.mem.reset()
	s.spilled = true
	return nil
}

// iterator returns the documents in order; the sorter is done after.
func (s *sorter) iterator() (Iterator, error) {
	if len(s.runs) == 0 {
		s.compact()
		docs := make([]bsoncore.Document, len(s.entries))
		for i, e := range s.entries {
			docs[i] = e.doc
		}
		s.entries = nil
		return Docs(docs), nil
	}
	if len(s.entries) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	m := &runMerger{s: s}
	for i, f := range s.runs {
		r, err := f.reader()
		if err != nil {
			m.Close()
			return nil, err
		}
		m.readers = append(m.readers, r)
		if err := m.push(i); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

func (s *sorter) close() {
	for _, f := range s.runs {
		f.close()
	}
	s.runs, s.entries = nil, nil
}

// runMerger merges sorted runs; ties go to the earlier run (stability).
type runMerger struct {
	s       *sorter
	readers []*spillReader
	h       mergeHeap
	sent    int64
}

type mergeItem struct {
	run  int
	keys []bsoncore.Value
	doc  bsoncore.Document
}

type mergeHeap struct {
	items []mergeItem
	cmp   func(a, b []bsoncore.Value) int
}

func (h *mergeHeap) Len() int { return len(h.items) }
func (h *mergeHeap) Less(i, j int) bool {
	if c := h.cmp(h.items[i].keys, h.items[j].keys); c != 0 {
		return c < 0
	}
	return h.items[i].run < h.items[j].run
}
func (h *mergeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap) Push(x any)    { h.items = append(h.items, x.(mergeItem)) }
func (h *mergeHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func (m *runMerger) push(run int) error {
	d, err := m.readers[run].next()
	if err != nil || d == nil {
		return err
	}
	m.h.cmp = m.s.cmp
	heap.Push(&m.h, mergeItem{run: run, keys: m.s.keyFn(d), doc: d})
	return nil
}

func (m *runMerger) Next(ctx context.Context) (bsoncore.Document, error) {
	if m.h.Len() == 0 || (m.s.limit > 0 && m.sent >= m.s.limit) {
		return nil, nil
	}
	if m.sent%checkEvery == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	it := heap.Pop(&m.h).(mergeItem)
	if err := m.push(it.run); err != nil {
		return nil, err
	}
	m.sent++
	return it.doc, nil
}

func (m *runMerger) Close() { m.s.close() }
