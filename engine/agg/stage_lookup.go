package agg

import (
	"context"
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// foreign reads another collection for one run of a stage, holding it
// in memory (up to the memory limit) so that every input document does
// not rescan it.
type foreign struct {
	env    *env
	coll   string
	loaded bool
	docs   []bsoncore.Document // nil with tooBig
	tooBig bool
	// index maps the keys of the values at one path to document numbers.
	indexPath []string
	index     map[string][]int
}

func (f *foreign) load(ctx context.Context) error {
	if f.loaded {
		return nil
	}
	f.loaded = true
	cs := f.env.opts.Collections
	if cs == nil {
		return langerr.New(langerr.ErrNotImplemented, "no collections to read %s from", f.coll)
	}
	it, err := cs.Scan(ctx, f.env.opts.DB, f.coll)
	if err != nil {
		return err
	}
	used := int64(0)
	return Drain(ctx, it, func(d bsoncore.Document) error {
		if f.tooBig {
			return nil
		}
		used += int64(len(d)) + perDocOverhead
		if used > f.env.opts.MemoryLimit {
			f.tooBig, f.docs = true, nil
			return nil
		}
		f.docs = append(f.docs, clone(d))
		return nil
	})
}

// scan streams the collection: from memory when it fits.
func (f *foreign) scan(ctx context.Context) (Iterator, error) {
	if err := f.load(ctx); err != nil {
		return nil, err
	}
	if !f.tooBig {
		return Docs(slices.Clone(f.docs)), nil
	}
	return f.env.opts.Collections.Scan(ctx, f.env.opts.DB, f.coll)
}

// buildIndex indexes the loaded documents by the values at path (as
// equality sees them: arrays whole and by element, null for missing).
func (f *foreign) buildIndex(path []string) {
	f.indexPath, f.index = path, map[string][]int{}
	var buf []byte
	for i, d := range f.docs {
		pathValues(d, path, func(v bsoncore.Value) {
			buf = keyOf(buf[:0], v, f.env.opts.Collation)
			ids := f.index[string(buf)]
			if len(ids) == 0 || ids[len(ids)-1] != i {
				f.index[string(buf)] = append(ids, i)
			}
		})
	}
}

// matching returns, in natural order, the documents whose indexed path
// equals one of vals.
func (f *foreign) matching(vals []bsoncore.Value) []bsoncore.Document {
	var ids []int
	var buf []byte
	for _, v := range vals {
		buf = keyOf(buf[:0], v, f.env.opts.Collation)
		ids = append(ids, f.index[string(buf)]...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]bsoncore.Document, len(ids))
	for i, id := range ids {
		out[i] = f.docs[id]
	}
	return out
}

// localValues are the values a $lookup's localField (or $graphLookup's
// connectFromField) contributes: arrays give their elements; nothing
// gives null.
func localValues(doc bsoncore.Document, path []string) []bsoncore.Value {
	var out []bsoncore.Value
	var walk func(v bsoncore.Value, rest []string)
	walk = func(v bsoncore.Value, rest []string) {
		if len(rest) == 0 {
			if v.Type == bsoncore.TypeArray {
				out = append(out, expr.Elements(v)...)
			} else {
				out = append(out, v)
			}
			return
		}
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			if x, err := v.Document().LookupErr(rest[0]); err == nil {
				walk(x, rest[1:])
			}
		case bsoncore.TypeArray:
			for _, x := range expr.Elements(v) {
				walk(x, rest)
			}
		}
	}
	walk(docValue(doc), path)
	if len(out) == 0 {
		out = append(out, expr.Null)
	}
	return out
}

// inFilter is {path: {$in: vals}}, for scanning without an index.
func inFilter(path string, vals []bsoncore.Value) (*query.Filter, error) {
	arr := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		arr.AppendValue(v)
	}
	d := bsoncore.NewDocumentBuilder().AppendDocument(path, bsoncore.NewDocumentBuilder().AppendArray("$in", arr.Build()).Build()).Build()
	return query.Compile(d)
}

// $lookup

type lookupStage struct {
	env          *env
	from         string
	as           []string
	localField   []string
	foreignField []string
	foreignPath  string
	letNames     []string
	letExprs     []expr.Expression
	pipeline     bsoncore.Document // nil: equality join only
	// uncorrelated: the pipeline's result is the same for every document
	// (no let, no localField): computed once per run.
	uncorrelated bool
	raw          bsoncore.Document
}

func parseLookup(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.FailedToParse("the $lookup specification must be an Object, but found %s", typeName(arg))
	}
	l := &lookupStage{env: p.env, raw: raw}
	elems, _ := d.Elements()
	var local, foreignF string
	hasLocal, hasForeign, hasFrom := false, false, false
	for _, el := range elems {
		v := el.Value()
		str := func() (string, error) {
			s, ok := v.StringValueOK()
			if !ok {
				return "", langerr.FailedToParse("$lookup argument '%s: %s' must be a string, is type %s", el.Key(), value.Render(v), typeName(v))
			}
			return s, nil
		}
		var err error
		switch el.Key() {
		case "from":
			if v.Type == bsoncore.TypeEmbeddedDocument {
				return nil, langerr.New(langerr.ErrNotImplemented, "$lookup from another database is not supported by Parsec")
			}
			l.from, err = str()
			hasFrom = true
		case "as":
			var s string
			if s, err = str(); err == nil {
				if err = checkFieldPath(s); err == nil {
					l.as = splitPath(s)
				}
			}
		case "localField":
			local, err = str()
			hasLocal = true
		case "foreignField":
			foreignF, err = str()
			hasForeign = true
		case "let":
			ld, ok := v.DocumentOK()
			if !ok {
				return nil, langerr.FailedToParse("$lookup argument 'let' must be an object, is type %s", typeName(v))
			}
			lel, _ := ld.Elements()
			for _, x := range lel {
				if err := expr.CheckVariableName(x.Key()); err != nil {
					return nil, err
				}
				e, err := p.env.compile(x.Value())
				if err != nil {
					return nil, err
				}
				l.letNames = append(l.letNames, x.Key())
				l.letExprs = append(l.letExprs, e)
			}
		case "pipeline":
			if v.Type != bsoncore.TypeArray {
				return nil, langerr.FailedToParse("$lookup argument 'pipeline' must be an array, is type %s", typeName(v))
			}
			l.pipeline = clone(v.Data)
		default:
			return nil, langerr.FailedToParse("unknown argument to $lookup: %s", el.Key())
		}
		if err != nil {
			return nil, err
		}
	}
	if l.as == nil {
		return nil, langerr.FailedToParse("must specify 'as' field for a $lookup")
	}
	if hasLocal != hasForeign {
		return nil, langerr.FailedToParse("$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
	}
	if !hasLocal && l.pipeline == nil {
		return nil, langerr.FailedToParse("$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
	}
	if hasLocal {
		if err := checkFieldPath(local); err != nil {
			return nil, err
		}
		if err := checkFieldPath(foreignF); err != nil {
			return nil, err
		}
		l.localField, l.foreignField, l.foreignPath = splitPath(local), splitPath(foreignF), foreignF
	}
	if !hasFrom && !startsWithDocuments(l.pipeline) {
		return nil, langerr.FailedToParse("must specify 'from' field for a $lookup")
	}
	if l.pipeline != nil {
		// Check the sub-pipeline once now; it is compiled again per
		// document with that document's variables.
		vars := p.env.varsWith(l.letNames, make([]bsoncore.Value, len(l.letNames)))
		if _, err := l.subPipeline(vars); err != nil {
			return nil, err
		}
		l.uncorrelated = len(l.letNames) == 0 && !hasLocal
	}
	return []stage{l}, nil
}

func startsWithDocuments(pipeline bsoncore.Document) bool {
	if pipeline == nil {
		return false
	}
	v, err := bsoncore.Array(pipeline).IndexErr(0)
	if err != nil {
		return false
	}
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	el, err := d.IndexErr(0)
	return err == nil && el.Key() == "$documents"
}

func (l *lookupStage) subPipeline(vars []Var) (*Pipeline, error) {
	opts := l.env.opts
	opts.Let, opts.Vars = nil, vars
	e, err := newEnv(opts)
	if err != nil {
		return nil, err
	}
	return parsePipeline(e, l.pipeline, inLookup)
}

func (*lookupStage) name() string              { return "$lookup" }
func (l *lookupStage) spec() bsoncore.Document { return l.raw }

func (l *lookupStage) open(in Iterator) Iterator {
	f := &foreign{env: l.env, coll: l.from}
	ctx := l.env.context()
	var cachedArr bsoncore.Value
	haveCache := false
	return &funcIter{next: func(c context.Context) (bsoncore.Document, error) {
		d, err := in.Next(c)
		if err != nil || d == nil {
			return nil, err
		}
		if l.uncorrelated && haveCache {
			return setPath(d, l.as, cachedArr), nil
		}
		arr, err := l.join(c, f, ctx, d)
		if err != nil {
			return nil, err
		}
		if l.uncorrelated {
			cachedArr, haveCache = arr, true
		}
		return setPath(d, l.as, arr), nil
	}, close: in.Close}
}

// join computes the "as" array for one input document.
func (l *lookupStage) join(c context.Context, f *foreign, ctx *expr.Context, d bsoncore.Document) (bsoncore.Value, error) {
	var candidates Iterator
	if l.from != "" || l.pipeline == nil {
		if err := f.load(c); err != nil {
			return expr.Missing, err
		}
	}
	switch {
	case l.localField != nil && !f.tooBig:
		if f.index == nil {
			f.buildIndex(l.foreignField)
		}
		candidates = Docs(f.matching(localValues(d, l.localField)))
	case l.localField != nil:
		filter, err := inFilter(l.foreignPath, localValues(d, l.localField))
		if err != nil {
			return expr.Missing, err
		}
		it, err := f.scan(c)
		if err != nil {
			return expr.Missing, err
		}
		candidates = filtered(it, filter)
	case l.from == "":
		candidates = Empty()
	default:
		it, err := f.scan(c)
		if err != nil {
			return expr.Missing, err
		}
		candidates = it
	}
	if l.pipeline != nil {
		ctx.Root = d
		vals := make([]bsoncore.Value, len(l.letExprs))
		for i, e := range l.letExprs {
			v, err := e.Eval(ctx)
			if err != nil {
				candidates.Close()
				return expr.Missing, err
			}
			if v.Type == 0 {
				v = expr.Null
			}
			vals[i] = v
		}
		sub, err := l.subPipeline(l.env.varsWith(l.letNames, vals))
		if err != nil {
			candidates.Close()
			return expr.Missing, err
		}
		candidates = sub.Run(candidates)
	}
	var out []bsoncore.Value
	size := 0
	err := Drain(c, candidates, func(x bsoncore.Document) error {
		size += len(x)
		if size > lookupResultLimit {
			return langerr.New(ErrLookupResultTooLarge, "Total size of documents in %s matching pipeline's $lookup stage exceeds %d bytes", l.from, lookupResultLimit)
		}
		out = append(out, docValue(clone(x)))
		return nil
	})
	if err != nil {
		return expr.Missing, err
	}
	return expr.Array(out), nil
}

// lookupResultLimit bounds one document's "as" array (MongoDB's
// internalLookupStageIntermediateDocumentMaxSizeBytes).
const lookupResultLimit = 100 << 20

// filtered passes the documents a filter matches.
func filtered(in Iterator, f *query.Filter) Iterator {
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		for {
			d, err := in.Next(ctx)
			if err != nil || d == nil {
				return nil, err
			}
			ok, err := f.MatchErr(d)
			if err != nil {
				return nil, err
			}
			if ok {
				return d, nil
			}
		}
	}, close: in.Close}
}

// $graphLookup

type graphLookupStage struct {
	env         *env
	from        string
	startWith   expr.Expression
	connectFrom []string
	connectTo   []string
	as          string
	maxDepth    int64 // -1: none
	depthField  string
	restrict    *query.Filter
	raw         bsoncore.Document
}

func parseGraphLookup(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrGraphLookupSpec, "the $graphLookup stage specification must be an object, but found %s", typeName(arg))
	}
	g := &graphLookupStage{env: p.env, maxDepth: -1, raw: raw}
	elems, _ := d.Elements()
	has := map[string]bool{}
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		has[k] = true
		str := func() (string, error) {
			s, ok := v.StringValueOK()
			if !ok {
				return "", langerr.New(ErrGraphLookupSpec, "expected string as argument for %s, found: %s", k, value.Render(v))
			}
			return s, nil
		}
		var err error
		var s string
		switch k {
		case "from":
			if v.Type == bsoncore.TypeEmbeddedDocument {
				return nil, langerr.New(langerr.ErrNotImplemented, "$graphLookup from another database is not supported by Parsec")
			}
			g.from, err = str()
		case "startWith":
			g.startWith, err = p.env.compile(v)
		case "connectFromField", "connectToField":
			if s, err = str(); err == nil {
				if strings.HasPrefix(s, "$") {
					return nil, langerr.New(ErrGraphLookupSpec, "%s must be a field path, without a leading '$': %s", k, s)
				}
				if err = checkFieldPath(s); err == nil {
					if k == "connectFromField" {
						g.connectFrom = splitPath(s)
					} else {
						g.connectTo = splitPath(s)
					}
				}
			}
		case "as":
			if s, err = str(); err == nil {
				err = checkFieldPath(s)
				g.as = s
			}
		case "depthField":
			if s, err = str(); err == nil {
				err = checkFieldPath(s)
				g.depthField = s
			}
		case "maxDepth":
			n, ok := wholeNumber(v)
			if !ok {
				return nil, langerr.New(ErrGraphLookupSpec, "maxDepth must be numeric, found type: %s", typeName(v))
			}
			if n < 0 {
				return nil, langerr.New(ErrGraphLookupSpec, "maxDepth requires a nonnegative argument, found: %d", n)
			}
			g.maxDepth = n
		case "restrictSearchWithMatch":
			rd, ok := v.DocumentOK()
			if !ok {
				return nil, langerr.New(ErrGraphLookupSpec, "restrictSearchWithMatch must be an object, found %s", typeName(v))
			}
			g.restrict, err = query.CompileWith(rd, p.queryOptions())
		default:
			return nil, langerr.New(ErrGraphLookupSpec, "Unknown argument to $graphLookup: %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"from", "as", "startWith", "connectFromField", "connectToField"} {
		if !has[k] {
			return nil, langerr.New(ErrGraphLookupSpec, "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.")
		}
	}
	return []stage{g}, nil
}

func (*graphLookupStage) name() string              { return "$graphLookup" }
func (g *graphLookupStage) spec() bsoncore.Document { return g.raw }

func (g *graphLookupStage) open(in Iterator) Iterator {
	f := &foreign{env: g.env, coll: g.from}
	ctx := g.env.context()
	return &funcIter{next: func(c context.Context) (bsoncore.Document, error) {
		d, err := in.Next(c)
		if err != nil || d == nil {
			return nil, err
		}
		if err := f.load(c); err != nil {
			return nil, err
		}
		if f.tooBig {
			return nil, langerr.New(ErrGraphLookupMemory, "$graphLookup reached maximum memory consumption: the collection %s does not fit in %d bytes", g.from, g.env.opts.MemoryLimit)
		}
		if f.index == nil {
			f.buildIndex(g.connectTo)
		}
		ctx.Root = d
		start, err := g.startWith.Eval(ctx)
		if err != nil {
			return nil, err
		}
		frontier := []bsoncore.Value{start}
		if start.Type == bsoncore.TypeArray {
			frontier = expr.Elements(start)
		}
		var out []bsoncore.Value
		visited := map[string]bool{}
		var buf []byte
		for depth := int64(0); len(frontier) > 0 && (g.maxDepth < 0 || depth <= g.maxDepth); depth++ {
			if err := c.Err(); err != nil {
				return nil, err
			}
			var next []bsoncore.Value
			for _, doc := range f.matching(frontier) {
				if g.restrict != nil {
					ok, err := g.restrict.MatchErr(doc)
					if err != nil {
						return nil, err
					}
					if !ok {
						continue
					}
				}
				buf = keyOf(buf[:0], doc.Lookup("_id"), nil)
				if visited[string(buf)] {
					continue
				}
				visited[string(buf)] = true
				res := doc
				if g.depthField != "" {
					res = setPath(doc, splitPath(g.depthField), expr.Int64(depth))
				}
				out = append(out, docValue(res))
				next = append(next, localValues(doc, g.connectFrom)...)
			}
			frontier = next
		}
		return setPath(d, splitPath(g.as), expr.Array(out)), nil
	}, close: in.Close}
}

// $unionWith

type unionWithStage struct {
	env      *env
	coll     string
	pipeline *Pipeline
	raw      bsoncore.Document
}

func parseUnionWith(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	u := &unionWithStage{env: p.env, raw: raw}
	var pipeline bsoncore.Document
	switch arg.Type {
	case bsoncore.TypeString:
		u.coll = stringOf(arg)
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := arg.Document().Elements()
		for _, el := range elems {
			v := el.Value()
			switch el.Key() {
			case "coll":
				s, ok := v.StringValueOK()
				if !ok {
					return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$unionWith.coll' is the wrong type '%s', expected type 'string'", typeName(v))
				}
				u.coll = s
			case "pipeline":
				if v.Type != bsoncore.TypeArray {
					return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$unionWith.pipeline' is the wrong type '%s', expected type 'array'", typeName(v))
				}
				pipeline = v.Data
			default:
				return nil, langerr.FailedToParse("BSON field '$unionWith.%s' is an unknown field.", el.Key())
			}
		}
		if u.coll == "" && !startsWithDocuments(pipeline) {
			return nil, langerr.FailedToParse("BSON field '$unionWith.coll' is missing but a required field")
		}
	default:
		return nil, langerr.FailedToParse("the $unionWith stage specification must be an object or string, but found %s", typeName(arg))
	}
	if pipeline == nil {
		pipeline = bsoncore.Document(bsoncore.NewArrayBuilder().Build())
	}
	sub, err := parsePipeline(p.env, pipeline, inUnionWith)
	if err != nil {
		return nil, err
	}
	u.pipeline = sub
	return []stage{u}, nil
}

func (*unionWithStage) name() string              { return "$unionWith" }
func (u *unionWithStage) spec() bsoncore.Document { return u.raw }

func (u *unionWithStage) open(in Iterator) Iterator {
	var other Iterator
	inDone := false
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		if !inDone {
			d, err := in.Next(ctx)
			if err != nil || d != nil {
				return d, err
			}
			inDone = true
			src := Empty()
			if u.coll != "" {
				cs := u.env.opts.Collections
				if cs == nil {
					return nil, langerr.New(langerr.ErrNotImplemented, "no collections to read %s from", u.coll)
				}
				if src, err = cs.Scan(ctx, u.env.opts.DB, u.coll); err != nil {
					return nil, err
				}
			}
			other = u.pipeline.Run(src)
		}
		return other.Next(ctx)
	}, close: func() {
		in.Close()
		if other != nil {
			other.Close()
		}
	}}
}
