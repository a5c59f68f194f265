package agg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// target is the collection $out or $merge writes.
type target struct{ db, coll string }

func parseTarget(stageName, field string, defaultDB string, v bsoncore.Value) (target, error) {
	t := target{db: defaultDB}
	switch v.Type {
	case bsoncore.TypeString:
		t.coll = stringOf(v)
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := v.Document().Elements()
		for _, el := range elems {
			s, ok := el.Value().StringValueOK()
			switch el.Key() {
			case "db":
				if !ok {
					return t, langerr.New(langerr.ErrTypeMismatch, "BSON field '%s.db' is the wrong type '%s', expected type 'string'", field, typeName(el.Value()))
				}
				t.db = s
			case "coll":
				if !ok {
					return t, langerr.New(langerr.ErrTypeMismatch, "BSON field '%s.coll' is the wrong type '%s', expected type 'string'", field, typeName(el.Value()))
				}
				t.coll = s
			case "timeseries":
				return t, langerr.New(langerr.ErrNotImplemented, "%s to a time-series collection is not supported by Parsec", stageName)
			default:
				return t, langerr.FailedToParse("BSON field '%s.%s' is an unknown field.", field, el.Key())
			}
		}
		if t.coll == "" {
			return t, langerr.FailedToParse("BSON field '%s.coll' is missing but a required field", field)
		}
	default:
		if stageName == "$out" {
			return t, langerr.New(ErrOutSpec, "$out only supports a string or object argument, but found %s", typeName(v))
		}
		return t, langerr.New(ErrOutSpec, "$merge 'into' field  must be either a string or an object, but found %s", typeName(v))
	}
	switch {
	case t.coll == "" || strings.HasPrefix(t.coll, "system.") || strings.ContainsAny(t.coll, "$\x00"):
		return t, langerr.New(ErrInvalidNamespace, "Invalid %s target namespace, '%s.%s'", stageName, t.db, t.coll)
	case t.db == "admin" || t.db == "config" || t.db == "local":
		return t, langerr.New(ErrInvalidNamespace, "Invalid %s target namespace, %s.%s: can't %s to internal database", stageName, t.db, t.coll, stageName)
	}
	return t, nil
}

// $out

type outStage struct {
	env *env
	to  target
	raw bsoncore.Document
}

func parseOut(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	t, err := parseTarget("$out", "$out", p.env.opts.DB, arg)
	if err != nil {
		return nil, err
	}
	return []stage{&outStage{env: p.env, to: t, raw: raw}}, nil
}

func (*outStage) name() string              { return "$out" }
func (o *outStage) spec() bsoncore.Document { return o.raw }

// open writes everything to a new collection that replaces the target
// at the end; it produces no documents.
func (o *outStage) open(in Iterator) Iterator {
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		cs := o.env.opts.Collections
		if cs == nil {
			return nil, langerr.New(langerr.ErrNotImplemented, "$out needs collections to write to")
		}
		w, err := cs.OpenOut(ctx, o.to.db, o.to.coll)
		if err != nil {
			return nil, err
		}
		err = Drain(ctx, in, func(d bsoncore.Document) error {
			if _, err := d.LookupErr("_id"); err != nil {
				d = withID(d)
			}
			return w.Insert(ctx, d)
		})
		if err != nil {
			w.Abort()
			return nil, err
		}
		return nil, w.Commit(ctx)
	}, close: in.Close}
}

// withID prepends a new ObjectId _id.
func withID(d bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendObjectID("_id", bson.NewObjectID())
	elems, _ := d.Elements()
	for _, el := range elems {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

// $merge

type mergeStage struct {
	env            *env
	to             target
	whenMatched    string // replace, keepExisting, merge, fail, pipeline
	whenNotMatched string // insert, discard, fail
	pipeline       bsoncore.Document
	letNames       []string
	letExprs       []expr.Expression
	raw            bsoncore.Document
}

func parseMerge(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	m := &mergeStage{env: p.env, whenMatched: "merge", whenNotMatched: "insert", raw: raw}
	if arg.Type == bsoncore.TypeString {
		t, err := parseTarget("$merge", "$merge.into", p.env.opts.DB, arg)
		if err != nil {
			return nil, err
		}
		m.to = t
		return []stage{m}, nil
	}
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrOutSpec, "$merge requires a string or object argument, but found %s", typeName(arg))
	}
	elems, _ := d.Elements()
	hasInto, hasLet := false, false
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "into":
			t, err := parseTarget("$merge", "$merge.into", p.env.opts.DB, v)
			if err != nil {
				return nil, err
			}
			m.to, hasInto = t, true
		case "on":
			var fields []string
			switch v.Type {
			case bsoncore.TypeString:
				fields = []string{stringOf(v)}
			case bsoncore.TypeArray:
				for _, x := range expr.Elements(v) {
					s, ok := x.StringValueOK()
					if !ok {
						return nil, langerr.New(langerr.ErrTypeMismatch, "$merge 'on' array elements must be strings, but found %s", typeName(x))
					}
					fields = append(fields, s)
				}
				if len(fields) == 0 {
					return nil, langerr.BadValue("If explicitly specifying $merge 'on', must include at least one field")
				}
			default:
				return nil, langerr.New(langerr.ErrTypeMismatch, "$merge 'on' field  must be either a string or an array of strings, but found %s", typeName(v))
			}
			if len(fields) != 1 || fields[0] != "_id" {
				return nil, langerr.New(ErrMergeOnFields, "Cannot find index to verify that join fields will be unique")
			}
		case "whenMatched":
			switch v.Type {
			case bsoncore.TypeString:
				s := stringOf(v)
				switch s {
				case "replace", "keepExisting", "merge", "fail":
					m.whenMatched = s
				case "pipeline":
					fallthrough
				default:
					return nil, langerr.BadValue("Enumeration value '%s' for field '$merge.whenMatched' is not a valid value.", s)
				}
			case bsoncore.TypeArray:
				m.whenMatched, m.pipeline = "pipeline", clone(v.Data)
			default:
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$merge.whenMatched' is the wrong type '%s', expected type 'string or array'", typeName(v))
			}
		case "whenNotMatched":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$merge.whenNotMatched' is the wrong type '%s', expected type 'string'", typeName(v))
			}
			switch s {
			case "insert", "discard", "fail":
				m.whenNotMatched = s
			default:
				return nil, langerr.BadValue("Enumeration value '%s' for field '$merge.whenNotMatched' is not a valid value.", s)
			}
		case "let":
			ld, ok := v.DocumentOK()
			if !ok {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$merge.let' is the wrong type '%s', expected type 'object'", typeName(v))
			}
			hasLet = true
			lel, _ := ld.Elements()
			for _, x := range lel {
				if err := expr.CheckVariableName(x.Key()); err != nil {
					return nil, err
				}
				e, err := p.env.compile(x.Value())
				if err != nil {
					return nil, err
				}
				m.letNames = append(m.letNames, x.Key())
				m.letExprs = append(m.letExprs, e)
			}
		case "targetCollectionVersion":
		default:
			return nil, langerr.FailedToParse("BSON field '$merge.%s' is an unknown field.", el.Key())
		}
	}
	if !hasInto {
		return nil, langerr.FailedToParse("BSON field '$merge.into' is missing but a required field")
	}
	if hasLet && m.pipeline == nil {
		return nil, langerr.BadValue("Cannot use 'let' variables with 'whenMatched: %s' mode", m.whenMatched)
	}
	if m.pipeline != nil {
		if !slicesContains(m.letNames, "new") {
			// The default let is {new: "$$ROOT"}.
			m.letNames = append(m.letNames, "new")
			root, _ := p.env.compile(expr.String("$$ROOT"))
			m.letExprs = append(m.letExprs, root)
		}
		if _, err := m.updatePipeline(make([]bsoncore.Value, len(m.letNames))); err != nil {
			return nil, err
		}
	}
	return []stage{m}, nil
}

func slicesContains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// updateStages are the stages a whenMatched pipeline may hold.
var updateStages = map[string]bool{"$addFields": true, "$set": true, "$project": true, "$unset": true, "$replaceRoot": true, "$replaceWith": true}

func (m *mergeStage) updatePipeline(vals []bsoncore.Value) (*Pipeline, error) {
	opts := m.env.opts
	opts.Let, opts.Vars = nil, m.env.varsWith(m.letNames, vals)
	e, err := newEnv(opts)
	if err != nil {
		return nil, err
	}
	p, err := parsePipeline(e, m.pipeline, inLookup)
	if err != nil {
		return nil, err
	}
	for _, s := range p.stages {
		if !updateStages[s.name()] {
			return nil, langerr.BadValue("%s is not allowed to be used within an update", s.name())
		}
	}
	return p, nil
}

func (*mergeStage) name() string              { return "$merge" }
func (m *mergeStage) spec() bsoncore.Document { return m.raw }

func (m *mergeStage) open(in Iterator) Iterator {
	ectx := m.env.context()
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		cs := m.env.opts.Collections
		if cs == nil {
			return nil, langerr.New(langerr.ErrNotImplemented, "$merge needs collections to write to")
		}
		return nil, Drain(ctx, in, func(d bsoncore.Document) error {
			return m.mergeOne(ctx, cs, ectx, clone(d))
		})
	}, close: in.Close}
}

func (m *mergeStage) mergeOne(ctx context.Context, cs Collections, ectx *expr.Context, d bsoncore.Document) error {
	id, err := d.LookupErr("_id")
	if err != nil {
		d = withID(d)
		id = d.Lookup("_id")
	}
	existing, found, err := cs.Get(ctx, m.to.db, m.to.coll, id)
	if err != nil {
		return err
	}
	if !found {
		switch m.whenNotMatched {
		case "discard":
			return nil
		case "fail":
			return langerr.New(ErrMergeNoMatch, "$merge could not find a matching document in the target collection for at least one document in the source collection")
		}
		return cs.Insert(ctx, m.to.db, m.to.coll, d)
	}
	var out bsoncore.Document
	switch m.whenMatched {
	case "keepExisting":
		return nil
	case "fail":
		return &DuplicateKeyError{
			Msg:        fmt.Sprintf("$merge failed due to a DuplicateKey error :: caused by :: E11000 duplicate key error collection: %s.%s index: _id_ dup key: { _id: %s }", m.to.db, m.to.coll, value.Render(id)),
			KeyPattern: bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build(),
			KeyValue:   bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build(),
		}
	case "replace":
		out = d
	case "merge":
		out = existing
		elems, _ := d.Elements()
		for _, el := range elems {
			out = setField(out, el.Key(), el.Value())
		}
	case "pipeline":
		ectx.Root = d
		vals := make([]bsoncore.Value, len(m.letExprs))
		for i, e := range m.letExprs {
			v, err := e.Eval(ectx)
			if err != nil {
				return err
			}
			if v.Type == 0 {
				v = expr.Null
			}
			vals[i] = v
		}
		p, err := m.updatePipeline(vals)
		if err != nil {
			return err
		}
		docs, err := p.runAll(ctx, Docs([]bsoncore.Document{existing}))
		if err != nil {
			return err
		}
		if len(docs) != 1 {
			return langerr.BadValue("$merge's whenMatched pipeline must produce one document")
		}
		out = docs[0]
		if nid, err := out.LookupErr("_id"); err != nil {
			out = setField(out, "_id", id)
		} else if expr.Compare(nid, id) != 0 {
			return langerr.New(langerr.ErrBadValue, "$merge failed to update the matching document, did you attempt to modify the _id or the shard key?")
		}
	}
	err = cs.Replace(ctx, m.to.db, m.to.coll, id, out)
	if errors.Is(err, ErrDuplicateKey) {
		return err
	}
	return err
}
