package agg

import (
	"context"
	"math"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $match

type matchStage struct {
	filterDoc bsoncore.Document
	filter    *query.Filter
	raw       bsoncore.Document
}

func (p *pipelineParser) queryOptions() query.Options {
	return query.Options{Let: p.env.letDocument(), Now: p.env.opts.Now, Collation: p.env.opts.Collation}
}

// letDocument is the variables as a let document of literals, for
// compiling filters ($match's $expr).
func (e *env) letDocument() bsoncore.Document {
	vars := e.vars()
	if len(vars) == 0 {
		return nil
	}
	b := bsoncore.NewDocumentBuilder()
	for _, v := range vars {
		if expr.CheckVariableName(v.Name) != nil {
			continue
		}
		b.AppendDocument(v.Name, bsoncore.NewDocumentBuilder().AppendValue("$literal", v.Value).Build())
	}
	return b.Build()
}

func parseMatch(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.BadValue("the match filter must be an expression in an object")
	}
	f, err := query.CompileWith(d, p.queryOptions())
	if err != nil {
		return nil, err
	}
	return []stage{&matchStage{filterDoc: clone(d), filter: f, raw: raw}}, nil
}

func (*matchStage) name() string              { return "$match" }
func (m *matchStage) spec() bsoncore.Document { return m.raw }

func (m *matchStage) open(in Iterator) Iterator {
	pulled := 0
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		for {
			d, err := pull(ctx, in, &pulled)
			if err != nil || d == nil {
				return nil, err
			}
			ok, err := m.filter.MatchErr(d)
			if err != nil {
				return nil, err
			}
			if ok {
				return d, nil
			}
		}
	}, close: in.Close}
}

// $limit and $skip

type limitStage struct{ n int64 }
type skipStage struct{ n int64 }

// wholeNumber reads $limit's and $skip's argument.
func wholeNumber(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		if i, ok := value.AsExactInt(v); ok {
			return i, true
		}
		f := value.Float(v)
		if f == math.Trunc(f) && !math.IsInf(f, 0) && math.Abs(f) < 9.2e18 {
			return int64(f), true
		}
	}
	return 0, false
}

func parseLimit(_ *pipelineParser, arg bsoncore.Value, _ bsoncore.Document) ([]stage, error) {
	n, ok := wholeNumber(arg)
	if !ok {
		return nil, langerr.New(ErrLimitNotNumber, "invalid argument to $limit stage: Expected a number in: $limit: %s", value.Render(arg))
	}
	if n <= 0 {
		return nil, langerr.New(ErrLimitNotPositive, "invalid argument to $limit stage: the limit must be positive")
	}
	return []stage{&limitStage{n}}, nil
}

func parseSkip(_ *pipelineParser, arg bsoncore.Value, _ bsoncore.Document) ([]stage, error) {
	n, ok := wholeNumber(arg)
	if !ok {
		return nil, langerr.New(ErrSkipNotNumber, "invalid argument to $skip stage: Expected a number in: $skip: %s", value.Render(arg))
	}
	if n < 0 {
		return nil, langerr.New(ErrSkipNegative, "invalid argument to $skip stage: Cannot skip a negative number of documents: $skip: %d", n)
	}
	return []stage{&skipStage{n}}, nil
}

func (*limitStage) name() string { return "$limit" }
func (*skipStage) name() string  { return "$skip" }
func (l *limitStage) spec() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt64("$limit", l.n).Build()
}
func (s *skipStage) spec() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt64("$skip", s.n).Build()
}

func (l *limitStage) open(in Iterator) Iterator {
	left := l.n
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		if left <= 0 {
			return nil, nil
		}
		left--
		return in.Next(ctx)
	}, close: in.Close}
}

func (s *skipStage) open(in Iterator) Iterator {
	left := s.n
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		for ; left > 0; left-- {
			d, err := in.Next(ctx)
			if err != nil || d == nil {
				return nil, err
			}
		}
		return in.Next(ctx)
	}, close: in.Close}
}

// $count is {$group: {_id: null, <name>: {$sum: 1}}}, {$project: {_id: 0}}.

func parseCount(p *pipelineParser, arg bsoncore.Value, _ bsoncore.Document) ([]stage, error) {
	name, ok := arg.StringValueOK()
	switch {
	case !ok || name == "":
		return nil, langerr.New(ErrCountSpec, "the count field must be a non-empty string")
	case name[0] == '$':
		return nil, langerr.New(ErrCountSpec, "the count field cannot be a $-prefixed path")
	case containsByte(name, 0):
		return nil, langerr.New(ErrCountSpec, "the count field cannot contain a null byte")
	case containsByte(name, '.'):
		return nil, langerr.New(ErrCountSpec, "the count field cannot contain '.'")
	}
	group := bsoncore.NewDocumentBuilder().AppendNull("_id").
		AppendDocument(name, bsoncore.NewDocumentBuilder().AppendInt32("$sum", 1).Build()).Build()
	g, err := parseGroup(p, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: group}, specOf("$group", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: group}))
	if err != nil {
		return nil, err
	}
	proj := bsoncore.NewDocumentBuilder().AppendInt32("_id", 0).Build()
	pr, err := parseProject(p, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: proj}, specOf("$project", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: proj}))
	if err != nil {
		return nil, err
	}
	return append(g, pr...), nil
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// $sortByCount is {$group: {_id: <expr>, count: {$sum: 1}}}, {$sort: {count: -1}}.

func parseSortByCount(p *pipelineParser, arg bsoncore.Value, _ bsoncore.Document) ([]stage, error) {
	switch {
	case arg.Type == bsoncore.TypeString && len(stringOf(arg)) > 0 && stringOf(arg)[0] == '$':
	case arg.Type == bsoncore.TypeEmbeddedDocument && isOperatorDoc(arg.Document()):
	default:
		return nil, langerr.BadValue("the sortByCount field must be defined as a $-prefixed path or an expression")
	}
	group := bsoncore.NewDocumentBuilder().AppendValue("_id", arg).
		AppendDocument("count", bsoncore.NewDocumentBuilder().AppendInt32("$sum", 1).Build()).Build()
	gv := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: group}
	g, err := parseGroup(p, gv, specOf("$group", gv))
	if err != nil {
		return nil, err
	}
	sortSpec := bsoncore.NewDocumentBuilder().AppendInt32("count", -1).Build()
	sv := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: sortSpec}
	s, err := parseSort(p, sv, specOf("$sort", sv))
	if err != nil {
		return nil, err
	}
	return append(g, s...), nil
}

func isOperatorDoc(d bsoncore.Document) bool {
	el, err := d.IndexErr(0)
	return err == nil && len(el.Key()) > 0 && el.Key()[0] == '$'
}

// $replaceRoot and $replaceWith

type replaceRootStage struct {
	env     *env
	newRoot expr.Expression
	raw     bsoncore.Document
}

func parseReplaceRoot(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	src := arg
	if raw.Index(0).Key() == "$replaceRoot" {
		d, ok := arg.DocumentOK()
		if !ok {
			return nil, langerr.New(ErrReplaceRootSpec, "expected an object as specification for $replaceRoot stage, got %s", typeName(arg))
		}
		elems, _ := d.Elements()
		found := false
		for _, el := range elems {
			if el.Key() != "newRoot" {
				return nil, langerr.New(ErrReplaceRootSpec, "BSON field '$replaceRoot.%s' is an unknown field.", el.Key())
			}
			src, found = el.Value(), true
		}
		if !found {
			return nil, langerr.New(ErrReplaceRootSpec, "BSON field '$replaceRoot.newRoot' is missing but a required field")
		}
	}
	e, err := p.env.compile(src)
	if err != nil {
		return nil, err
	}
	return []stage{&replaceRootStage{env: p.env, newRoot: e, raw: raw}}, nil
}

func (r *replaceRootStage) name() string            { return r.raw.Index(0).Key() }
func (r *replaceRootStage) spec() bsoncore.Document { return r.raw }

func (r *replaceRootStage) open(in Iterator) Iterator {
	ctx := r.env.context()
	return &funcIter{next: func(c context.Context) (bsoncore.Document, error) {
		d, err := in.Next(c)
		if err != nil || d == nil {
			return nil, err
		}
		ctx.Root = d
		v, err := r.newRoot.Eval(ctx)
		if err != nil {
			return nil, err
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return nil, langerr.New(ErrNewRootNotObject, "'newRoot' expression  must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s",
				value.Render(v), typeName(v), value.RenderDocument(d))
		}
		return v.Data, nil
	}, close: in.Close}
}

// $redact

type redactStage struct {
	env   *env
	e     expr.Expression
	slots int // the first of DESCEND, PRUNE, KEEP
	raw   bsoncore.Document
}

func parseRedact(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	scope, base := p.env.subScope("DESCEND", "PRUNE", "KEEP")
	e, err := expr.Compile(arg, scope)
	if err != nil {
		return nil, err
	}
	return []stage{&redactStage{env: p.env, e: e, slots: base, raw: raw}}, nil
}

func (*redactStage) name() string              { return "$redact" }
func (r *redactStage) spec() bsoncore.Document { return r.raw }

var (
	redactDescend = expr.String("descend")
	redactPrune   = expr.String("prune")
	redactKeep    = expr.String("keep")
)

func (r *redactStage) open(in Iterator) Iterator {
	ctx := r.env.context()
	for len(ctx.Vars) < r.slots+3 {
		ctx.Vars = append(ctx.Vars, expr.Missing)
	}
	ctx.Vars[r.slots], ctx.Vars[r.slots+1], ctx.Vars[r.slots+2] = redactDescend, redactPrune, redactKeep
	return &funcIter{next: func(c context.Context) (bsoncore.Document, error) {
		for {
			d, err := in.Next(c)
			if err != nil || d == nil {
				return nil, err
			}
			ctx.Root = d
			out, keep, err := r.redact(ctx, d)
			if err != nil {
				return nil, err
			}
			if keep {
				return out, nil
			}
		}
	}, close: in.Close}
}

// redact applies the expression at one level: it returns the document to
// keep (nil, false when pruned).
func (r *redactStage) redact(ctx *expr.Context, doc bsoncore.Document) (bsoncore.Document, bool, error) {
	ctx.Current = doc
	v, err := r.e.Eval(ctx)
	if err != nil {
		return nil, false, err
	}
	s, _ := v.StringValueOK()
	switch {
	case v.Type == bsoncore.TypeString && s == "keep":
		return doc, true, nil
	case v.Type == bsoncore.TypeString && s == "prune":
		return nil, false, nil
	case v.Type != bsoncore.TypeString || s != "descend":
		return nil, false, langerr.New(ErrRedactResult, "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s", value.Render(v))
	}
	var fields []expr.Field
	for _, f := range expr.Fields(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}) {
		switch f.Val.Type {
		case bsoncore.TypeEmbeddedDocument:
			sub, keep, err := r.redact(ctx, f.Val.Data)
			if err != nil {
				return nil, false, err
			}
			if !keep {
				continue
			}
			f.Val = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: sub}
		case bsoncore.TypeArray:
			arr, err := r.redactArray(ctx, f.Val)
			if err != nil {
				return nil, false, err
			}
			f.Val = arr
		}
		fields = append(fields, f)
	}
	return expr.Document(fields).Data, true, nil
}

func (r *redactStage) redactArray(ctx *expr.Context, arr bsoncore.Value) (bsoncore.Value, error) {
	var out []bsoncore.Value
	for _, x := range expr.Elements(arr) {
		switch x.Type {
		case bsoncore.TypeEmbeddedDocument:
			sub, keep, err := r.redact(ctx, x.Data)
			if err != nil {
				return expr.Missing, err
			}
			if keep {
				out = append(out, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: sub})
			}
		case bsoncore.TypeArray:
			a, err := r.redactArray(ctx, x)
			if err != nil {
				return expr.Missing, err
			}
			out = append(out, a)
		default:
			out = append(out, x)
		}
	}
	return expr.Array(out), nil
}

// $sample

type sampleStage struct {
	env  *env
	size int64
	raw  bsoncore.Document
}

func parseSample(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrSampleSpec, "the $sample stage specification must be an object")
	}
	elems, _ := d.Elements()
	size := int64(-1)
	for _, el := range elems {
		if el.Key() != "size" {
			return nil, langerr.New(ErrSampleSpec, "unrecognized option to $sample: %s", el.Key())
		}
		n, ok := wholeNumber(el.Value())
		if !ok {
			if isNumeric(el.Value()) {
				n = int64(value.Float(el.Value()))
			} else {
				return nil, langerr.New(ErrSampleSpec, "size argument to $sample must be a number")
			}
		}
		if n < 0 {
			return nil, langerr.New(ErrSampleSpec, "size argument to $sample must not be negative")
		}
		size = n
	}
	if size < 0 {
		return nil, langerr.New(ErrSampleSpec, "$sample stage must specify a size")
	}
	return []stage{&sampleStage{env: p.env, size: size, raw: raw}}, nil
}

func (*sampleStage) name() string              { return "$sample" }
func (s *sampleStage) spec() bsoncore.Document { return s.raw }

// open keeps the size documents with the largest random priorities
// (reservoir sampling), then returns them in random order.
func (s *sampleStage) open(in Iterator) Iterator {
	return blocking(in, s.sample)
}

func (s *sampleStage) sample(ctx context.Context, in Iterator) ([]bsoncore.Document, error) {
	rng := s.env.newRand()
	var kept []bsoncore.Document
	mem := newMemory(s.env, "$sample")
	seen := int64(0)
	err := drain(ctx, in, func(d bsoncore.Document) error {
		seen++
		if int64(len(kept)) < s.size {
			kept = append(kept, clone(d))
			return mem.add(len(d))
		}
		if j := rng.Int64N(seen); j < s.size {
			kept[j] = clone(d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rng.Shuffle(len(kept), func(i, j int) { kept[i], kept[j] = kept[j], kept[i] })
	return kept, nil
}

// $documents

type documentsStage struct {
	env *env
	e   expr.Expression
	raw bsoncore.Document
}

func parseDocuments(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	e, err := p.env.compile(arg)
	if err != nil {
		return nil, err
	}
	return []stage{&documentsStage{env: p.env, e: e, raw: raw}}, nil
}

func (*documentsStage) name() string              { return "$documents" }
func (s *documentsStage) spec() bsoncore.Document { return s.raw }
func (*documentsStage) source()                   {}

func (s *documentsStage) open(in Iterator) Iterator {
	in.Close()
	ctx := s.env.context()
	ctx.Root = emptyDoc
	v, err := s.e.Eval(ctx)
	if err != nil {
		return errIter{err}
	}
	if v.Type != bsoncore.TypeArray {
		return errIter{langerr.New(ErrDocumentsSpec, "error during $documents stage :: caused by :: an array is expected, found %s", typeName(v))}
	}
	var docs []bsoncore.Document
	for _, x := range expr.Elements(v) {
		if x.Type != bsoncore.TypeEmbeddedDocument {
			return errIter{langerr.New(ErrDocumentsSpec, "error during $documents stage :: caused by :: each element of the array must be an object, found %s", typeName(x))}
		}
		docs = append(docs, x.Data)
	}
	return Docs(docs)
}

var emptyDoc = bsoncore.NewDocumentBuilder().Build()

// $collStats and $indexStats

type statsStage struct {
	env  *env
	kind string
	arg  bsoncore.Document
	raw  bsoncore.Document
}

func parseCollStats(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.FailedToParse("$collStats must take a nested object but found: %s", value.Render(arg))
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "latencyStats", "storageStats", "count", "queryExecStats":
			if el.Value().Type != bsoncore.TypeEmbeddedDocument {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$collStats.%s' is the wrong type '%s', expected type 'object'", el.Key(), typeName(el.Value()))
			}
		default:
			return nil, langerr.FailedToParse("BSON field '$collStats.%s' is an unknown field.", el.Key())
		}
	}
	return []stage{&statsStage{env: p.env, kind: "$collStats", arg: clone(d), raw: raw}}, nil
}

func parseIndexStats(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok || len(d) > 5 {
		return nil, langerr.BadValue("The $indexStats stage specification must be an empty object")
	}
	return []stage{&statsStage{env: p.env, kind: "$indexStats", raw: raw}}, nil
}

func (s *statsStage) name() string            { return s.kind }
func (s *statsStage) spec() bsoncore.Document { return s.raw }
func (*statsStage) source()                   {}

func (s *statsStage) open(in Iterator) Iterator {
	in.Close()
	var out Iterator
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		if out == nil {
			cs := s.env.opts.Collections
			if cs == nil || s.env.opts.Coll == "" {
				return nil, langerr.New(ErrNeedsCollection, "%s must be run against a collection", s.kind)
			}
			var docs []bsoncore.Document
			var err error
			if s.kind == "$collStats" {
				docs, err = cs.CollStats(ctx, s.env.opts.DB, s.env.opts.Coll, s.arg)
			} else {
				docs, err = cs.IndexStats(ctx, s.env.opts.DB, s.env.opts.Coll)
			}
			if err != nil {
				return nil, err
			}
			out = Docs(docs)
		}
		return out.Next(ctx)
	}}
}

// $currentOp shows no operations (Parsec does not track them);
// $listLocalSessions and $listSessions list Options.Sessions;
// $listSampledQueries lists Options.SampledQueries.

type noOutputStage struct {
	raw  bsoncore.Document
	docs []bsoncore.Document
}

func parseNoOutput(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, langerr.New(langerr.ErrTypeMismatch, "%s must take a nested object but found: %s", raw.Index(0).Key(), value.Render(arg))
	}
	s := &noOutputStage{raw: raw, docs: p.env.opts.Sessions}
	switch raw.Index(0).Key() {
	case "$currentOp":
		s.docs = p.env.opts.CurrentOps
	case "$listSampledQueries":
		s.docs = p.env.opts.SampledQueries
	}
	return []stage{s}, nil
}

func (s *noOutputStage) name() string            { return s.raw.Index(0).Key() }
func (s *noOutputStage) spec() bsoncore.Document { return s.raw }
func (*noOutputStage) source()                   {}
func (s *noOutputStage) open(in Iterator) Iterator {
	in.Close()
	return Docs(append([]bsoncore.Document(nil), s.docs...))
}
