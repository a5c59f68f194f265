package agg

import (
	"context"
	"math"
	"strings"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// groupByExpr checks a $bucket/$bucketAuto groupBy: a $-path or an
// expression object.
func groupByOK(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString:
		return strings.HasPrefix(stringOf(v), "$")
	case bsoncore.TypeEmbeddedDocument:
		return isOperatorDoc(v.Document())
	}
	return false
}

// defaultBucketOutput is {count: {$sum: 1}}.
func defaultBucketOutput() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendDocument("count", bsoncore.NewDocumentBuilder().AppendInt32("$sum", 1).Build()).Build()
}

// $bucket is a $group by the bucket a value falls in, sorted by _id.

type bucketKey struct {
	groupBy    expr.Expression
	boundaries []bsoncore.Value
	def        bsoncore.Value // Type 0: none
}

func (b *bucketKey) Eval(ctx *expr.Context) (bsoncore.Value, error) {
	v, err := b.groupBy.Eval(ctx)
	if err != nil {
		return expr.Missing, err
	}
	if v.Type == 0 {
		v = expr.Null
	}
	if expr.Compare(v, b.boundaries[0]) >= 0 {
		for i := 1; i < len(b.boundaries); i++ {
			if expr.Compare(v, b.boundaries[i]) < 0 {
				return b.boundaries[i-1], nil
			}
		}
	}
	if b.def.Type == 0 {
		return expr.Missing, langerr.New(ErrBucketSpec, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return b.def, nil
}

func canonicalType(v bsoncore.Value) byte { return value.TypeRank(v.Type) }

func parseBucket(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrBucketSpec, "Argument to $bucket stage must be an object, but found type: %s.", typeName(arg))
	}
	key := &bucketKey{}
	var groupBy, output bsoncore.Value
	var hasBounds bool
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "groupBy":
			if !groupByOK(v) {
				return nil, langerr.New(ErrBucketSpec, "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: %s.", value.Render(v))
			}
			groupBy = v
		case "boundaries":
			if v.Type != bsoncore.TypeArray {
				return nil, langerr.New(ErrBucketSpec, "The $bucket 'boundaries' field must be an array, but found type: %s.", typeName(v))
			}
			hasBounds = true
			for _, b := range expr.Elements(v) {
				// Boundaries must be constants; expressions are evaluated once.
				x, err := p.env.compile(b)
				if err != nil {
					return nil, err
				}
				c, isConst := expr.Constant(x)
				if !isConst {
					return nil, langerr.New(ErrBucketSpec, "The $bucket 'boundaries' field must be an array of constant values, but found value: %s.", value.Render(b))
				}
				key.boundaries = append(key.boundaries, c)
			}
		case "default":
			x, err := p.env.compile(v)
			if err != nil {
				return nil, err
			}
			c, isConst := expr.Constant(x)
			if !isConst {
				return nil, langerr.New(ErrBucketSpec, "The $bucket 'default' field must be a constant expression, but found: %s.", value.Render(v))
			}
			key.def = c
		case "output":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, langerr.New(ErrBucketSpec, "The $bucket 'output' field must be an object, but found type: %s.", typeName(v))
			}
			output = v
		default:
			return nil, langerr.New(ErrBucketSpec, "Unrecognized option to $bucket: %s.", el.Key())
		}
	}
	if groupBy.Type == 0 || !hasBounds {
		return nil, langerr.New(ErrBucketSpec, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
	}
	bs := key.boundaries
	if len(bs) < 2 {
		return nil, langerr.New(ErrBucketSpec, "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).", len(bs))
	}
	for i := 1; i < len(bs); i++ {
		if canonicalType(bs[i]) != canonicalType(bs[0]) {
			return nil, langerr.New(ErrBucketSpec, "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.", typeName(bs[0]), typeName(bs[i]))
		}
		if expr.Compare(bs[i-1], bs[i]) >= 0 {
			return nil, langerr.New(ErrBucketSpec, "The 'boundaries' option to $bucket must be sorted in ascending order, but elements %d and %d are not in ascending order (%s is not less than %s).", i-1, i, value.Render(bs[i-1]), value.Render(bs[i]))
		}
	}
	if key.def.Type != 0 && canonicalType(key.def) == canonicalType(bs[0]) &&
		expr.Compare(key.def, bs[0]) >= 0 && expr.Compare(key.def, bs[len(bs)-1]) < 0 {
		return nil, langerr.New(ErrBucketSpec, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
	}
	var err error
	if key.groupBy, err = p.env.compile(groupBy); err != nil {
		return nil, err
	}
	out := defaultBucketOutput()
	if output.Type != 0 {
		out = output.Document()
	}
	b := bsoncore.NewDocumentBuilder().AppendNull("_id")
	elems, _ = out.Elements()
	for _, el := range elems {
		b.AppendValue(el.Key(), el.Value())
	}
	spec := b.Build()
	g, err := compileGroup(p.env, docValue(spec), raw)
	if err != nil {
		return nil, err
	}
	g.id, g.idV, g.sortByID, g.stageName = key, groupBy, true, "$bucket"
	return []stage{g}, nil
}

// $bucketAuto

type bucketAutoStage struct {
	env         *env
	groupBy     expr.Expression
	buckets     int
	accs        []*accSpec
	granularity *granularity
	raw         bsoncore.Document
}

func parseBucketAuto(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrBucketAutoSpec, "Argument to $bucketAuto stage must be an object, but found type: %s.", typeName(arg))
	}
	s := &bucketAutoStage{env: p.env, raw: raw}
	var groupBy, output bsoncore.Value
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "groupBy":
			if !groupByOK(v) {
				return nil, langerr.New(ErrBucketAutoSpec, "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: %s.", value.Render(v))
			}
			groupBy = v
		case "buckets":
			if !isNumeric(v) {
				return nil, langerr.New(ErrBucketAutoSpec, "The $bucketAuto 'buckets' field must be a numeric value, but found type: %s.", typeName(v))
			}
			n, ok := wholeNumber(v)
			if !ok || n != int64(int32(n)) {
				return nil, langerr.New(ErrBucketAutoSpec, "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found %s.", value.Render(v))
			}
			if n <= 0 {
				return nil, langerr.New(ErrBucketAutoSpec, "The $bucketAuto 'buckets' field must be greater than 0, but found: %d.", n)
			}
			s.buckets = int(n)
		case "output":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, langerr.New(ErrBucketAutoSpec, "The $bucketAuto 'output' field must be an object, but found type: %s.", typeName(v))
			}
			output = v
		case "granularity":
			gs, ok := v.StringValueOK()
			if !ok {
				return nil, langerr.New(ErrBucketAutoSpec, "The $bucketAuto 'granularity' field must be a string, but found type: %s.", typeName(v))
			}
			g, err := newGranularity(gs)
			if err != nil {
				return nil, err
			}
			s.granularity = g
		default:
			return nil, langerr.New(ErrBucketAutoSpec, "Unrecognized option to $bucketAuto: %s.", el.Key())
		}
	}
	if groupBy.Type == 0 || s.buckets == 0 {
		return nil, langerr.New(ErrBucketAutoSpec, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
	}
	var err error
	if s.groupBy, err = p.env.compile(groupBy); err != nil {
		return nil, err
	}
	out := defaultBucketOutput()
	if output.Type != 0 {
		out = output.Document()
	}
	elems, _ = out.Elements()
	for _, el := range elems {
		if strings.Contains(el.Key(), ".") || strings.HasPrefix(el.Key(), "$") {
			return nil, langerr.New(ErrGroupFieldName, "The field name '%s' cannot contain '.'", el.Key())
		}
		acc, ok := el.Value().DocumentOK()
		if !ok {
			return nil, langerr.New(ErrAccumulatorObject, "The field '%s' must be an accumulator object", el.Key())
		}
		ael, _ := acc.Elements()
		if len(ael) != 1 {
			return nil, langerr.New(ErrAccumulatorOne, "The field '%s' must specify one accumulator", el.Key())
		}
		a, err := parseAccumulator(p.env, el.Key(), ael[0].Key(), ael[0].Value())
		if err != nil {
			return nil, err
		}
		s.accs = append(s.accs, a)
	}
	return []stage{s}, nil
}

func (*bucketAutoStage) name() string              { return "$bucketAuto" }
func (s *bucketAutoStage) spec() bsoncore.Document { return s.raw }

// open sorts the input by groupBy (through the external sorter), then
// fills buckets of about n/buckets documents each, never splitting equal
// values, the last bucket taking the rest.
func (s *bucketAutoStage) open(in Iterator) Iterator {
	var out Iterator
	var st *sorter
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		if out == nil {
			docs, err := s.run(ctx, in, &st)
			if err != nil {
				return nil, err
			}
			out = Docs(docs)
		}
		return out.Next(ctx)
	}, close: func() {
		in.Close()
		if st != nil {
			st.close()
		}
	}}
}

func (s *bucketAutoStage) run(ctx context.Context, in Iterator, stp **sorter) ([]bsoncore.Document, error) {
	ectx := s.env.context()
	keyFn := func(d bsoncore.Document) []bsoncore.Value { return []bsoncore.Value{d.Lookup("k")} }
	cmp := func(a, b []bsoncore.Value) int { return expr.Compare(a[0], b[0]) }
	st := newSorter(s.env, "$bucketAuto", keyFn, cmp, 0)
	*stp = st
	n := 0
	err := drain(ctx, in, func(d bsoncore.Document) error {
		ectx.Root = d
		k, err := s.groupBy.Eval(ectx)
		if err != nil {
			return err
		}
		if k.Type == 0 || k.Type == bsoncore.TypeUndefined {
			k = expr.Null
		}
		if s.granularity != nil {
			if !isNumeric(k) {
				return langerr.New(ErrBucketAutoSpec, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: %s", typeName(k))
			}
			if f := value.Float(k); f < 0 || math.IsNaN(f) {
				return langerr.New(ErrBucketAutoSpec, "A granularity rounder cannot round a value that is not a positive number: %s", value.Render(k))
			}
		}
		n++
		return st.add(bsoncore.NewDocumentBuilder().AppendValue("k", k).AppendDocument("d", d).Build())
	})
	if err != nil {
		return nil, err
	}
	sorted, err := st.iterator()
	if err != nil {
		return nil, err
	}
	defer sorted.Close()
	if n == 0 {
		return nil, nil
	}
	approx := int(math.Round(float64(n) / float64(s.buckets)))
	approx = max(approx, 1)
	var pending bsoncore.Document
	nextEntry := func() (bsoncore.Document, error) {
		if pending != nil {
			d := pending
			pending = nil
			return d, nil
		}
		return sorted.Next(ctx)
	}
	type bucket struct {
		min, max bsoncore.Value
		accs     []accumulator
	}
	var buckets []*bucket
	nCtx := s.env.context()
	nCtx.Root = emptyDoc
	newBucket := func(min bsoncore.Value) (*bucket, error) {
		b := &bucket{min: min}
		for _, a := range s.accs {
			acc, err := a.newAccumulator(nCtx)
			if err != nil {
				return nil, err
			}
			b.accs = append(b.accs, acc)
		}
		return b, nil
	}
	addTo := func(b *bucket, entry bsoncore.Document) error {
		ectx.Root = entry.Lookup("d").Document()
		for i, a := range s.accs {
			v, err := a.eval(ectx)
			if err != nil {
				return err
			}
			if err := b.accs[i].add(v, ectx); err != nil {
				return err
			}
		}
		return nil
	}
	roundUp := func(v bsoncore.Value) bsoncore.Value {
		if s.granularity == nil {
			return v
		}
		return s.granularity.roundUp(v)
	}
	for {
		first, err := nextEntry()
		if err != nil {
			return nil, err
		}
		if first == nil {
			break
		}
		first = clone(first)
		b, err := newBucket(cloneValue(first.Lookup("k")))
		if err != nil {
			return nil, err
		}
		if err := addTo(b, first); err != nil {
			return nil, err
		}
		last := b.min
		count := 1
		lastBucket := len(buckets) == s.buckets-1
		for {
			e, err := nextEntry()
			if err != nil {
				return nil, err
			}
			if e == nil {
				b.max = roundUp(last)
				break
			}
			k := e.Lookup("k")
			if !lastBucket && count >= approx && expr.Compare(k, last) != 0 {
				if s.granularity == nil {
					pending = clone(e)
					b.max = cloneValue(k)
					break
				}
				if up := roundUp(last); expr.Compare(k, up) >= 0 {
					pending = clone(e)
					b.max = up
					break
				}
			}
			if err := addTo(b, e); err != nil {
				return nil, err
			}
			last = cloneValue(k)
			count++
		}
		buckets = append(buckets, b)
	}
	if s.granularity != nil {
		for i, b := range buckets {
			if i == 0 {
				b.min = s.granularity.roundDown(b.min)
			} else {
				b.min = buckets[i-1].max
			}
		}
	}
	out := make([]bsoncore.Document, len(buckets))
	for i, b := range buckets {
		id := bsoncore.NewDocumentBuilder().AppendValue("min", b.min).AppendValue("max", b.max).Build()
		db := bsoncore.NewDocumentBuilder().AppendDocument("_id", id)
		for j, a := range s.accs {
			v := b.accs[j].result()
			if v.Type == 0 {
				v = expr.Null
			}
			db.AppendValue(a.field, v)
		}
		out[i] = db.Build()
	}
	return out, nil
}
