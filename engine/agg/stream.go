package agg

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Iterator is a stream of documents.
type Iterator interface {
	// Next returns the next document, or nil at the end of the stream.
	// The document is valid until the next call to Next or Close.
	Next(ctx context.Context) (bsoncore.Document, error)
	// Close releases what the stream holds (spill files, partition
	// workers, inner streams). It is idempotent; Next must not follow it.
	Close()
}

// Docs is an Iterator over documents held in memory.
func Docs(docs []bsoncore.Document) Iterator { return &sliceIter{docs: docs} }

type sliceIter struct {
	docs []bsoncore.Document
	pos  int
}

func (s *sliceIter) Next(context.Context) (bsoncore.Document, error) {
	if s.pos >= len(s.docs) {
		return nil, nil
	}
	d := s.docs[s.pos]
	s.docs[s.pos] = nil
	s.pos++
	return d, nil
}

func (s *sliceIter) Close() { s.docs, s.pos = nil, 0 }

// Empty is a stream of no documents.
func Empty() Iterator { return &sliceIter{} }

// Drain reads a stream to its end, calling fn with each document (valid
// only during the call), and closes it.
func Drain(ctx context.Context, it Iterator, fn func(bsoncore.Document) error) error {
	defer it.Close()
	for {
		d, err := it.Next(ctx)
		if err != nil || d == nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
	}
}

// collect reads a whole stream into owned copies.
func collect(ctx context.Context, it Iterator) ([]bsoncore.Document, error) {
	var out []bsoncore.Document
	err := Drain(ctx, it, func(d bsoncore.Document) error {
		out = append(out, clone(d))
		return nil
	})
	return out, err
}

func clone(d bsoncore.Document) bsoncore.Document { return append(bsoncore.Document(nil), d...) }

// errIter is a stream that fails at its first Next.
type errIter struct{ err error }

func (e errIter) Next(context.Context) (bsoncore.Document, error) { return nil, e.err }
func (errIter) Close()                                            {}

// funcIter adapts a next function (and an optional close).
type funcIter struct {
	next  func(ctx context.Context) (bsoncore.Document, error)
	close func()
	done  bool
}

func (f *funcIter) Next(ctx context.Context) (bsoncore.Document, error) {
	if f.done {
		return nil, nil
	}
	d, err := f.next(ctx)
	if d == nil || err != nil {
		f.done = true
	}
	return d, err
}

func (f *funcIter) Close() {
	f.done = true
	if f.close != nil {
		f.close()
		f.close = nil
	}
}

// checkEvery is how many documents a stage that loops without reading
// its input (generating, joining) handles between context checks.
const checkEvery = 64

// pull is in.Next for loops that read many documents per call of their
// own Next (blocking stages, filters): it checks the context every
// checkEvery documents, since a source that generates documents ($unwind
// of a large array) may not.
func pull(ctx context.Context, in Iterator, n *int) (bsoncore.Document, error) {
	if *n++; *n%checkEvery == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return in.Next(ctx)
}

// drain passes the documents of in to fn in order, until in ends or fn
// fails. A document is valid only during its call: fn clones what it keeps.
func drain(ctx context.Context, in Iterator, fn func(d bsoncore.Document) error) error {
	pulled := 0
	for {
		d, err := pull(ctx, in, &pulled)
		if err != nil || d == nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
	}
}

// blocking runs a stage that needs all its input before its first output:
// run, on the first Next, reads in and returns every output document.
func blocking(in Iterator, run func(ctx context.Context, in Iterator) ([]bsoncore.Document, error)) Iterator {
	var out Iterator
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		if out == nil {
			docs, err := run(ctx, in)
			if err != nil {
				return nil, err
			}
			out = Docs(docs)
		}
		return out.Next(ctx)
	}, close: in.Close}
}
