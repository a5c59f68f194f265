package agg

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// groupMode is how a $group runs: whole (documents in, results out),
// partial (documents in, accumulator states out: the per-partition half
// of a split $group) or final (states in, results out).
type groupMode int

const (
	groupWhole groupMode = iota
	groupPartial
	groupFinal
)

type groupStage struct {
	env  *env
	id   expr.Expression
	idV  bsoncore.Value
	accs []*accSpec
	mode groupMode
	raw  bsoncore.Document
	// sortByID: emit groups sorted by _id ($bucket).
	sortByID bool
	// stageName is the stage as errors name it ($group, $bucket, ...).
	stageName string
	// sameArg[i] is the index of the first accumulator whose argument is
	// the same expression as accumulator i's (evaluated once per
	// document: {$sum: "$x"} and {$avg: "$x"} read x once).
	sameArg []int
}

func parseGroup(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	g, err := compileGroup(p.env, arg, raw)
	if err != nil {
		return nil, err
	}
	return []stage{g}, nil
}

func compileGroup(e *env, arg bsoncore.Value, raw bsoncore.Document) (*groupStage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrGroupNotObject, "a group's fields must be specified in an object")
	}
	g := &groupStage{env: e, raw: raw, stageName: "$group"}
	elems, _ := d.Elements()
	hasID := false
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		if k == "_id" {
			if hasID {
				return nil, langerr.New(ErrGroupFieldName, "duplicate _id in $group specification")
			}
			hasID = true
			g.idV = cloneValue(v)
			x, err := e.compile(v)
			if err != nil {
				return nil, err
			}
			g.id = x
			continue
		}
		switch {
		case strings.HasPrefix(k, "$"):
			return nil, langerr.New(ErrGroupFieldName, "The field name '%s' cannot be an operator name", k)
		case strings.Contains(k, "."):
			return nil, langerr.New(ErrGroupFieldName, "The field name '%s' cannot contain '.'", k)
		}
		acc, ok := v.DocumentOK()
		if !ok {
			return nil, langerr.New(ErrAccumulatorObject, "The field '%s' must be an accumulator object", k)
		}
		ael, _ := acc.Elements()
		if len(ael) != 1 {
			return nil, langerr.New(ErrAccumulatorOne, "The field '%s' must specify one accumulator", k)
		}
		spec, err := parseAccumulator(e, k, ael[0].Key(), ael[0].Value())
		if err != nil {
			return nil, err
		}
		g.accs = append(g.accs, spec)
	}
	if !hasID {
		return nil, langerr.New(ErrGroupNoID, "a group specification must include an _id")
	}
	g.sameArg = make([]int, len(g.accs))
	for i, a := range g.accs {
		g.sameArg[i] = i
		if !unaryAccumulators[a.op] {
			continue
		}
		for j := range i {
			b := g.accs[j]
			if unaryAccumulators[b.op] && b.raw.Type == a.raw.Type && string(b.raw.Data) == string(a.raw.Data) {
				g.sameArg[i] = j
				break
			}
		}
	}
	return g, nil
}

func (g *groupStage) name() string { return g.stageName }

func (g *groupStage) spec() bsoncore.Document {
	if g.mode == groupWhole {
		return g.raw
	}
	b := bsoncore.NewDocumentBuilder()
	if g.mode == groupPartial {
		b.AppendValue("_id", g.idV)
	} else {
		b.AppendString("_id", "$$ROOT._id")
	}
	for _, a := range g.accs {
		if g.mode == groupPartial {
			b.AppendDocument(a.field, bsoncore.NewDocumentBuilder().AppendValue(a.op, a.raw).Build())
		} else {
			b.AppendDocument(a.field, bsoncore.NewDocumentBuilder().AppendString(a.op, "$$ROOT."+a.field).Build())
		}
	}
	b.AppendBoolean("$doingMerge", g.mode == groupFinal)
	return bsoncore.NewDocumentBuilder().AppendDocument("$group", b.Build()).Build()
}

// withMode copies the stage for one half of a split.
func (g *groupStage) withMode(m groupMode) *groupStage {
	c := *g
	c.mode = m
	return &c
}

// group is one group being accumulated.
type group struct {
	key  string
	id   bsoncore.Value
	accs []accumulator
	size int
}

// groupRun is one run of a $group.
type groupRun struct {
	g      *groupStage
	in     Iterator
	ctx    *expr.Context
	nCtx   *expr.Context
	groups map[string]*group
	order  []*group
	mem    *memory
	keyBuf []byte
	args   []bsoncore.Value // the accumulators' arguments for one document
	runs   []*spillFile
	out    Iterator
}

func (g *groupStage) open(in Iterator) Iterator {
	r := &groupRun{g: g, in: in, ctx: g.env.context(), nCtx: g.env.context(), groups: map[string]*group{},
		mem: newMemory(g.env, "$group")}
	return &funcIter{next: r.next, close: r.close}
}

func (r *groupRun) close() {
	r.in.Close()
	for _, f := range r.runs {
		f.close()
	}
	r.runs = nil
	if r.out != nil {
		r.out.Close()
	}
}

// newGroup starts a group for id (owned by the caller).
func (r *groupRun) newGroup(key string, id bsoncore.Value) (*group, error) {
	gr := &group{key: key, id: id, accs: make([]accumulator, len(r.g.accs))}
	r.nCtx.Root = emptyDoc
	if id.Type == bsoncore.TypeEmbeddedDocument {
		r.nCtx.Root = id.Data
	}
	for i, a := range r.g.accs {
		acc, err := a.newAccumulator(r.nCtx)
		if err != nil {
			return nil, err
		}
		gr.accs[i] = acc
	}
	gr.size = len(key) + len(id.Data) + 64
	return gr, nil
}

func (r *groupRun) lookup(id bsoncore.Value) (*group, error) {
	r.keyBuf = keyOf(r.keyBuf[:0], id, r.g.env.opts.Collation)
	if gr := r.groups[string(r.keyBuf)]; gr != nil {
		return gr, nil
	}
	if id.Type == 0 {
		id = expr.Null
	}
	key := string(r.keyBuf)
	gr, err := r.newGroup(key, cloneValue(id))
	if err != nil {
		return nil, err
	}
	r.groups[key] = gr
	r.order = append(r.order, gr)
	r.mem.used += int64(gr.size)
	return gr, nil
}

// consume reads the whole input into groups.
func (r *groupRun) consume(ctx context.Context) error {
	pulled := 0
	for {
		d, err := pull(ctx, r.in, &pulled)
		if err != nil {
			return err
		}
		if d == nil {
			return nil
		}
		var gr *group
		if r.g.mode == groupFinal {
			if gr, err = r.lookup(d.Lookup("_id")); err != nil {
				return err
			}
			for i, a := range r.g.accs {
				st, err := d.LookupErr(a.field)
				if err != nil {
					continue
				}
				before := gr.accs[i].size()
				if err := gr.accs[i].merge(st); err != nil {
					return err
				}
				r.mem.used += int64(gr.accs[i].size() - before)
			}
		} else {
			r.ctx.Root = d
			id, err := r.g.id.Eval(r.ctx)
			if err != nil {
				return err
			}
			if gr, err = r.lookup(id); err != nil {
				return err
			}
			if r.args == nil {
				r.args = make([]bsoncore.Value, len(r.g.accs))
			}
			for i, a := range r.g.accs {
				var v bsoncore.Value
				if j := r.g.sameArg[i]; j < i {
					v = r.args[j]
				} else if v, err = a.eval(r.ctx); err != nil {
					return err
				}
				r.args[i] = v
				acc := gr.accs[i]
				before := acc.size()
				if err := acc.add(v, r.ctx); err != nil {
					return err
				}
				r.mem.used += int64(acc.size() - before)
			}
		}
		if r.mem.over() {
			if !r.mem.disk {
				return r.mem.exceeded()
			}
			if err := r.spill(); err != nil {
				return err
			}
		}
	}
}

// spillDoc is a group's partial state as a spill run holds it:
// {k: <binary key>, s: {_id, <field>: <state>, ...}}.
func (r *groupRun) stateDoc(gr *group) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendValue("_id", gr.id)
	for i, a := range r.g.accs {
		b.AppendValue(a.field, gr.accs[i].state())
	}
	return b.Build()
}

// spill writes the groups, sorted by key, as a run, and starts afresh.
func (r *groupRun) spill() error {
	slices.SortFunc(r.order, func(a, b *group) int { return strings.Compare(a.key, b.key) })
	f, err := newSpillFile(r.g.env.opts.TempDir)
	if err != nil {
		return err
	}
	r.runs = append(r.runs, f)
	for _, gr := range r.order {
		doc := bsoncore.NewDocumentBuilder().AppendBinary("k", 0, []byte(gr.key)).AppendDocument("s", r.stateDoc(gr)).Build()
		if err := f.write(doc); err != nil {
			return err
		}
	}
	r.groups, r.order = map[string]*group{}, nil
	r.mem.reset()
	return nil
}

// output is a finished group as the stage emits it.
func (r *groupRun) output(gr *group) bsoncore.Document {
	if r.g.mode == groupPartial {
		return r.stateDoc(gr)
	}
	b := bsoncore.NewDocumentBuilder().AppendValue("_id", gr.id)
	for i, a := range r.g.accs {
		v := gr.accs[i].result()
		if v.Type == 0 {
			v = expr.Null
		}
		b.AppendValue(a.field, v)
	}
	return b.Build()
}

func (r *groupRun) next(ctx context.Context) (bsoncore.Document, error) {
	if r.out == nil {
		if err := r.consume(ctx); err != nil {
			return nil, err
		}
		if len(r.runs) > 0 {
			if err := r.spill(); err != nil {
				return nil, err
			}
			it, err := r.mergeRuns()
			if err != nil {
				return nil, err
			}
			r.out = it
		} else {
			if r.g.sortByID {
				slices.SortStableFunc(r.order, func(a, b *group) int { return expr.Compare(a.id, b.id) })
			}
			order := r.order
			r.out = &funcIter{next: func(context.Context) (bsoncore.Document, error) {
				if len(order) == 0 {
					return nil, nil
				}
				gr := order[0]
				order[0] = nil
				order = order[1:]
				return r.output(gr), nil
			}}
		}
	}
	return r.out.Next(ctx)
}

// mergeRuns merges the spilled runs (each sorted by key), combining the
// states of equal keys.
func (r *groupRun) mergeRuns() (Iterator, error) {
	readers := make([]*spillReader, len(r.runs))
	heads := make([]bsoncore.Document, len(r.runs))
	for i, f := range r.runs {
		rd, err := f.reader()
		if err != nil {
			return nil, err
		}
		readers[i] = rd
		if heads[i], err = rd.next(); err != nil {
			return nil, err
		}
	}
	keyOfHead := func(d bsoncore.Document) []byte {
		_, k := d.Lookup("k").Binary()
		return k
	}
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var minKey []byte
		for _, h := range heads {
			if h != nil && (minKey == nil || bytes.Compare(keyOfHead(h), minKey) < 0) {
				minKey = keyOfHead(h)
			}
		}
		if minKey == nil {
			return nil, nil
		}
		minKey = append([]byte(nil), minKey...)
		var gr *group
		for i := range heads {
			for heads[i] != nil && bytes.Equal(keyOfHead(heads[i]), minKey) {
				s := heads[i].Lookup("s").Document()
				if gr == nil {
					var err error
					if gr, err = r.newGroup(string(minKey), cloneValue(s.Lookup("_id"))); err != nil {
						return nil, err
					}
				}
				for j, a := range r.g.accs {
					if st, err := s.LookupErr(a.field); err == nil {
						if err := gr.accs[j].merge(st); err != nil {
							return nil, err
						}
					}
				}
				var err error
				if heads[i], err = readers[i].next(); err != nil {
					return nil, err
				}
			}
		}
		return r.output(gr), nil
	}}, nil
}
