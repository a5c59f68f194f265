package update

import (
	"strings"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A pipeline-style update is a list of aggregation stages run on the
// document: $set (alias $addFields), $unset, $project, $replaceRoot and
// $replaceWith. Its result replaces the document as a replacement does:
// _id kept (or restored when the pipeline dropped it), never changed.

type pipeline struct {
	stages []stage
	scope  *expr.Scope
	lets   []letVar
	let    bsoncore.Document
}

type letVar struct {
	slot int
	e    expr.Expression
}

type stage interface {
	run(doc bsoncore.Document, ctx *expr.Context) (bsoncore.Document, error)
}

// allowedStages are the stages an update pipeline may hold.
var allowedStages = map[string]bool{
	"$addFields": true, "$set": true, "$project": true, "$unset": true, "$replaceRoot": true, "$replaceWith": true,
}

// knownStages are other aggregation stages, refused in updates.
var knownStages = map[string]bool{
	"$match": true, "$group": true, "$sort": true, "$limit": true, "$skip": true, "$lookup": true,
	"$unwind": true, "$count": true, "$facet": true, "$bucket": true, "$bucketAuto": true, "$out": true,
	"$merge": true, "$sample": true, "$sortByCount": true, "$graphLookup": true, "$geoNear": true,
	"$redact": true, "$densify": true, "$fill": true, "$setWindowFields": true, "$unionWith": true,
	"$documents": true, "$collStats": true, "$indexStats": true, "$currentOp": true, "$listSessions": true,
}

func parsePipeline(stages bsoncore.Document, let bsoncore.Document) (*Update, error) {
	p := &pipeline{scope: expr.NewScope(), let: let}
	if len(let) > 0 {
		elems, err := let.Elements()
		if err != nil {
			return nil, errorf(ErrFailedToParse, "invalid let: %v", err)
		}
		for _, e := range elems {
			if err := expr.CheckLetParameterName(e.Key()); err != nil {
				return nil, fromQueryError(err, "")
			}
			x, err := expr.Compile(e.Value(), expr.NewScope())
			if err != nil {
				return nil, fromQueryError(err, "")
			}
			p.lets = append(p.lets, letVar{slot: p.scope.Declare(e.Key()), e: x})
		}
	}
	vals, err := stages.Values()
	if err != nil {
		return nil, errorf(ErrFailedToParse, "invalid pipeline: %v", err)
	}
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, errorf(ErrTypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		elems, _ := d.Elements()
		if len(elems) != 1 {
			return nil, errorf(ErrFailedToParse, "A pipeline stage specification object must contain exactly one field.")
		}
		name, arg := elems[0].Key(), elems[0].Value()
		if !allowedStages[name] {
			if knownStages[name] {
				return nil, errorf(ErrInvalidPipelineUpdate, "%s is not allowed to be used within an update", name)
			}
			return nil, errorf(ErrUnknownStage, "Unrecognized pipeline stage name: '%s'", name)
		}
		s, err := p.parseStage(name, arg)
		if err != nil {
			return nil, err
		}
		p.stages = append(p.stages, s)
	}
	return &Update{kind: Pipeline, pipeline: p}, nil
}

func (p *pipeline) parseStage(name string, arg bsoncore.Value) (stage, error) {
	switch name {
	case "$set", "$addFields":
		d, ok := arg.DocumentOK()
		if !ok {
			return nil, errorf(ErrFailedToParse, "%s specification stage must be an object, got %s", name, typeName(arg.Type))
		}
		s := &setStage{}
		if err := s.add(p.scope, d, nil); err != nil {
			return nil, err
		}
		return s, nil
	case "$unset":
		var paths []string
		switch arg.Type {
		case bsoncore.TypeString:
			paths = []string{arg.StringValue()}
		case bsoncore.TypeArray:
			vals, _ := arg.Array().Values()
			if len(vals) == 0 {
				return nil, errorf(ErrBadValue, "$unset specification must be a string or an array with at least one field")
			}
			for _, x := range vals {
				s, ok := x.StringValueOK()
				if !ok {
					return nil, errorf(ErrBadValue, "$unset specification must be a string or an array containing only string values")
				}
				paths = append(paths, s)
			}
		default:
			return nil, errorf(ErrBadValue, "$unset specification must be a string or an array")
		}
		u := &unsetStage{}
		for _, s := range paths {
			if s == "" || strings.HasPrefix(s, "$") || strings.Contains(s, "..") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") {
				return nil, errorf(ErrBadValue, "Invalid $unset :: caused by :: FieldPath '%s' is not valid", s)
			}
			u.paths = append(u.paths, strings.Split(s, "."))
		}
		return u, nil
	case "$project":
		d, ok := arg.DocumentOK()
		if !ok {
			return nil, errorf(ErrFailedToParse, "$project specification must be an object")
		}
		if len(d) <= 5 {
			return nil, errorf(ErrBadValue, "Invalid $project :: caused by :: projection specification must have at least one field")
		}
		return &projectStage{spec: d, let: p.let}, nil
	default: // $replaceRoot, $replaceWith
		v := arg
		if name == "$replaceRoot" {
			d, ok := arg.DocumentOK()
			if !ok {
				return nil, errorf(ErrFailedToParse, "expected an object as specification for $replaceRoot stage, got %s", typeName(arg.Type))
			}
			nr, err := d.LookupErr("newRoot")
			if err != nil {
				return nil, errorf(ErrFailedToParse, "no newRoot specified for the $replaceRoot stage")
			}
			v = nr
		}
		x, err := expr.Compile(v, p.scope)
		if err != nil {
			return nil, fromQueryError(err, "")
		}
		what := "'replacement document'"
		if name == "$replaceRoot" {
			what = "'newRoot' expression"
		}
		return &replaceStage{e: x, what: what}, nil
	}
}

func (u *Update) applyPipeline(doc bsoncore.Document, env Env) (bsoncore.Document, error) {
	p := u.pipeline
	ctx := expr.NewContext(p.scope, doc, env.Now)
	for _, l := range p.lets {
		v, err := l.e.Eval(expr.NewContext(expr.NewScope(), nil, env.Now))
		if err != nil {
			return nil, fromQueryError(err, "")
		}
		ctx.Vars[l.slot] = v
	}
	out := doc
	for _, s := range p.stages {
		ctx.Root = out
		next, err := s.run(out, ctx)
		if err != nil {
			return nil, err
		}
		out = next
	}
	// The result replaces the document: _id kept or restored, not changed.
	r := &Update{kind: Replacement, replacement: out, immutable: u.immutable}
	return r.applyReplacement(doc)
}

// setStage is $set / $addFields: computed fields, nested specifications
// merging into embedded documents.
type setStage struct {
	fields []setField
}

type setField struct {
	parts []string
	e     expr.Expression
}

func (s *setStage) add(scope *expr.Scope, d bsoncore.Document, prefix []string) error {
	elems, err := d.Elements()
	if err != nil {
		return errorf(ErrFailedToParse, "invalid $set: %v", err)
	}
	for _, e := range elems {
		k := e.Key()
		if k == "" || strings.HasPrefix(k, "$") {
			return errorf(ErrBadValue, "Invalid $set :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
		parts := append(append([]string(nil), prefix...), strings.Split(k, ".")...)
		for _, p := range parts {
			if p == "" {
				return errorf(ErrBadValue, "Invalid $set :: caused by :: FieldPath field names may not be empty strings.")
			}
		}
		v := e.Value()
		if sub, ok := v.DocumentOK(); ok {
			first, err := sub.IndexErr(0)
			if err == nil && !strings.HasPrefix(first.Key(), "$") {
				if err := s.add(scope, sub, parts); err != nil {
					return err
				}
				continue
			}
		}
		x, err := expr.Compile(v, scope)
		if err != nil {
			return fromQueryError(err, "")
		}
		s.fields = append(s.fields, setField{parts: parts, e: x})
	}
	return nil
}

func (s *setStage) run(doc bsoncore.Document, ctx *expr.Context) (bsoncore.Document, error) {
	vals := make([]bsoncore.Value, len(s.fields))
	for i, f := range s.fields {
		v, err := f.e.Eval(ctx)
		if err != nil {
			return nil, fromQueryError(err, "")
		}
		vals[i] = v
	}
	root := parseObject(doc)
	for i, f := range s.fields {
		setComputed(root, f.parts, vals[i])
	}
	return root.encode(nil), nil
}

// setComputed sets a computed field as $addFields does: through arrays
// into each element, replacing scalars on the way with documents; a
// missing value removes the field.
func setComputed(o *object, parts []string, v bsoncore.Value) {
	name := parts[0]
	if len(parts) == 1 {
		if v.Type == 0 {
			o.remove(name)
			return
		}
		o.set(name, rawNode(v))
		return
	}
	cur := o.get(name)
	if cur == nil {
		if v.Type == 0 {
			return
		}
		sub := &object{}
		setComputed(sub, parts[1:], v)
		o.set(name, objectNode(sub))
		return
	}
	o.set(name, setComputedIn(cur, parts[1:], v))
}

func setComputedIn(n *node, parts []string, v bsoncore.Value) *node {
	switch {
	case n.isObject():
		setComputed(n.object(), parts, v)
		return n
	case n.isArray():
		a := n.array()
		for i, e := range a.elems {
			a.elems[i] = setComputedIn(e, parts, v)
		}
		return n
	}
	sub := &object{}
	setComputed(sub, parts, v)
	return objectNode(sub)
}

// unsetStage is $unset: fields removed, through arrays of documents.
type unsetStage struct{ paths [][]string }

func (u *unsetStage) run(doc bsoncore.Document, _ *expr.Context) (bsoncore.Document, error) {
	root := parseObject(doc)
	for _, p := range u.paths {
		unsetPath(root, p)
	}
	return root.encode(nil), nil
}

func unsetPath(o *object, parts []string) {
	if len(parts) == 1 {
		o.remove(parts[0])
		return
	}
	n := o.get(parts[0])
	if n == nil {
		return
	}
	unsetIn(n, parts[1:])
}

func unsetIn(n *node, parts []string) {
	switch {
	case n.isObject():
		unsetPath(n.object(), parts)
	case n.isArray():
		for _, e := range n.array().elems {
			unsetIn(e, parts)
		}
	}
}

// projectStage is $project, run by the find projection of package query.
type projectStage struct {
	spec, let bsoncore.Document
}

func (s *projectStage) run(doc bsoncore.Document, ctx *expr.Context) (bsoncore.Document, error) {
	p, err := query.CompileProjection(s.spec, nil, query.Options{Now: ctx.Now, Let: s.let})
	if err != nil {
		return nil, fromQueryError(err, "Invalid $project :: caused by :: ")
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, fromQueryError(err, "")
	}
	return out, nil
}

// replaceStage is $replaceRoot / $replaceWith.
type replaceStage struct {
	e    expr.Expression
	what string
}

func (s *replaceStage) run(_ bsoncore.Document, ctx *expr.Context) (bsoncore.Document, error) {
	v, err := s.e.Eval(ctx)
	if err != nil {
		return nil, fromQueryError(err, "")
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, errorf(ErrReplaceRootNotObject, "%s must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s", s.what, value.Render(v), typeName(v.Type), value.RenderDocument(ctx.Root))
	}
	return d, nil
}
