package agg

import (
	"context"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// docBuffer holds a stream to replay it several times: in memory up to
// the memory limit, then (with disk use allowed) in a spill file.
type docBuffer struct {
	mem  *memory
	env  *env
	docs []bsoncore.Document
	file *spillFile
}

func (b *docBuffer) add(d bsoncore.Document) error {
	if b.file != nil {
		return b.file.write(d)
	}
	b.docs = append(b.docs, clone(d))
	b.mem.used += int64(len(d)) + perDocOverhead
	if !b.mem.over() {
		return nil
	}
	if !b.mem.disk {
		return b.mem.exceeded()
	}
	f, err := newSpillFile(b.env.opts.TempDir)
	if err != nil {
		return err
	}
	b.file = f
	for _, x := range b.docs {
		if err := f.write(x); err != nil {
			return err
		}
	}
	b.docs = nil
	b.mem.reset()
	return nil
}

// replay streams the buffered documents from the start.
func (b *docBuffer) replay() (Iterator, error) {
	if b.file == nil {
		return &sliceIter{docs: append([]bsoncore.Document(nil), b.docs...)}, nil
	}
	r, err := b.file.reader()
	if err != nil {
		return nil, err
	}
	return &funcIter{next: func(context.Context) (bsoncore.Document, error) { return r.next() }}, nil
}

func (b *docBuffer) close() {
	if b.file != nil {
		b.file.close()
	}
	b.docs = nil
}

type facetStage struct {
	env    *env
	names  []string
	facets []*Pipeline
	raw    bsoncore.Document
}

func parseFacet(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok || len(d) <= 5 {
		return nil, langerr.New(ErrFacetSpec, "the $facet specification must be a non-empty object")
	}
	f := &facetStage{env: p.env, raw: raw}
	elems, _ := d.Elements()
	for _, el := range elems {
		if err := checkFieldPath(el.Key()); err != nil || containsByte(el.Key(), '.') {
			if err == nil {
				err = langerr.New(ErrFieldPath, "FieldPath field names may not contain '.'.")
			}
			return nil, err
		}
		v := el.Value()
		if v.Type != bsoncore.TypeArray {
			return nil, langerr.New(ErrFacetSpec, "arguments to $facet must be arrays, %s is type %s", el.Key(), typeName(v))
		}
		if len(v.Data) <= 5 {
			return nil, langerr.New(ErrFacetSpec, "sub-pipeline in $facet stage cannot be empty")
		}
		sub, err := parsePipeline(p.env, v.Data, inFacet)
		if err != nil {
			return nil, err
		}
		f.names = append(f.names, el.Key())
		f.facets = append(f.facets, sub)
	}
	return []stage{f}, nil
}

func (*facetStage) name() string              { return "$facet" }
func (f *facetStage) spec() bsoncore.Document { return f.raw }

func (f *facetStage) open(in Iterator) Iterator {
	buf := &docBuffer{mem: newMemory(f.env, "$facet"), env: f.env}
	done := false
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		if done {
			return nil, nil
		}
		done = true
		if err := drain(ctx, in, buf.add); err != nil {
			return nil, err
		}
		var fields []expr.Field
		total := 0
		for i, sub := range f.facets {
			src, err := buf.replay()
			if err != nil {
				return nil, err
			}
			var vals []bsoncore.Value
			err = Drain(ctx, sub.Run(src), func(d bsoncore.Document) error {
				total += len(d)
				if total > maxDocumentSize {
					return langerr.New(langerr.ErrBadValue, "document constructed by $facet is %d bytes, which exceeds the limit of %d bytes", total, maxDocumentSize)
				}
				vals = append(vals, docValue(clone(d)))
				return nil
			})
			if err != nil {
				return nil, err
			}
			fields = append(fields, expr.Field{Key: f.names[i], Val: expr.Array(vals)})
		}
		return expr.Document(fields).Data, nil
	}, close: func() {
		in.Close()
		buf.close()
	}}
}

// maxDocumentSize is the largest document MongoDB makes (16 MB).
const maxDocumentSize = 16 << 20
