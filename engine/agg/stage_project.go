package agg

import (
	"context"
	"fmt"
	"strings"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A projection ($project, $addFields/$set, $unset) is a tree of
// fields, applied as MongoDB's projection executor does:
//
//  1. fields of the input document are copied in their order: all of
//     them ($addFields, exclusion), or those included (inclusion);
//     a field with a sub-tree is projected recursively (through
//     arrays, element by element; inclusion drops scalars there,
//     exclusion keeps them);
//  2. computed fields are then set in specification order: replaced in
//     place when present, appended otherwise, removed when the
//     expression is missing ($$REMOVE); a sub-tree with computed fields
//     applies them to the value there (each element of an array; a
//     scalar or missing value becomes a new document).
type projMode int

const (
	modeInclusion projMode = iota
	modeExclusion
	modeAddFields
)

type projNode struct {
	children []*projChild
	byName   map[string]*projChild
}

type projChild struct {
	name     string
	include  bool
	exclude  bool
	e        expr.Expression
	sub      *projNode
	computed bool // e != nil, or sub holds computed fields
}

func newProjNode() *projNode { return &projNode{byName: map[string]*projChild{}} }

type projectStage struct {
	env  *env
	root *projNode
	mode projMode
	raw  bsoncore.Document
	kind string
}

type projBuilder struct {
	env       *env
	kind      string // stage name, for messages
	addFields bool
	hasInc    bool
	hasExc    bool
	hasComp   bool
	idSet     bool
}

func (b *projBuilder) fail(category error, format string, args ...any) error {
	if b.addFields {
		return langerr.New(category, format, args...)
	}
	return langerr.New(category, "Invalid %s :: caused by :: %s", b.kind, fmt.Sprintf(format, args...))
}

func parseProject(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrProjectNotObject, "$project specification must be an object")
	}
	b := &projBuilder{env: p.env, kind: "$project"}
	if len(d) <= 5 {
		return nil, b.fail(ErrProjectEmpty, "projection specification must have at least one field")
	}
	root := newProjNode()
	if err := b.addDoc(root, d, nil); err != nil {
		return nil, err
	}
	mode := modeInclusion
	switch {
	case b.hasExc && (b.hasInc || b.hasComp):
		// Reported while building; unreachable.
	case b.hasExc:
		mode = modeExclusion
	case !b.hasInc && !b.hasComp:
		// Only _id given.
		if c := root.byName["_id"]; c != nil && c.exclude {
			mode = modeExclusion
		}
	}
	if mode == modeInclusion && !b.idSet {
		c := &projChild{name: "_id", include: true}
		root.children = append([]*projChild{c}, root.children...)
		root.byName["_id"] = c
	}
	markComputed(root)
	return []stage{&projectStage{env: p.env, root: root, mode: mode, raw: raw, kind: "$project"}}, nil
}

func parseAddFields(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	name := raw.Index(0).Key()
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrAddFieldsNotObject, "%s specification stage must be an object, got %s", name, typeName(arg))
	}
	b := &projBuilder{env: p.env, kind: name, addFields: true}
	root := newProjNode()
	if err := b.addDoc(root, d, nil); err != nil {
		return nil, err
	}
	markComputed(root)
	return []stage{&projectStage{env: p.env, root: root, mode: modeAddFields, raw: raw, kind: name}}, nil
}

func parseUnset(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	var paths []string
	switch arg.Type {
	case bsoncore.TypeString:
		paths = []string{stringOf(arg)}
	case bsoncore.TypeArray:
		vals, _ := arg.Array().Values()
		if len(vals) == 0 {
			return nil, langerr.New(ErrUnsetSpec, "$unset specification must be a string or an array with at least one field")
		}
		for _, v := range vals {
			s, ok := v.StringValueOK()
			if !ok {
				return nil, langerr.New(ErrUnsetSpec, "$unset specification must be a string or an array containing only string values")
			}
			paths = append(paths, s)
		}
	default:
		return nil, langerr.New(ErrUnsetSpec, "$unset specification must be a string or an array")
	}
	b := &projBuilder{env: p.env, kind: "$unset"}
	root := newProjNode()
	for _, path := range paths {
		if err := b.insert(root, path, &projChild{exclude: true}); err != nil {
			return nil, err
		}
	}
	return []stage{&projectStage{env: p.env, root: root, mode: modeExclusion, raw: raw, kind: "$unset"}}, nil
}

func checkFieldPath(path string) error {
	if path == "" {
		return langerr.New(ErrFieldPath, "FieldPath cannot be constructed with empty string")
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return langerr.New(ErrFieldPath, "FieldPath field names may not be empty strings.")
		}
		if part[0] == '$' {
			return langerr.New(ErrFieldPath, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
		if strings.IndexByte(part, 0) >= 0 {
			return langerr.New(ErrFieldPath, "FieldPath field names may not contain '\\0'.")
		}
	}
	return nil
}

// addDoc adds a specification document's fields under node; prefix is
// the path of node (for messages).
func (b *projBuilder) addDoc(node *projNode, spec bsoncore.Document, prefix []string) error {
	elems, err := spec.Elements()
	if err != nil {
		return langerr.FailedToParse("invalid projection: %v", err)
	}
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		if len(prefix) == 0 && strings.HasPrefix(key, "$") {
			return b.fail(ErrFieldPath, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
		if err := checkFieldPath(key); err != nil {
			if b.addFields {
				return err
			}
			return b.fail(ErrFieldPath, "%s", trimCategory(err))
		}
		full := strings.Join(append(append([]string(nil), prefix...), key), ".")
		if full == "_id" && len(prefix) == 0 {
			b.idSet = true
		}
		c := &projChild{}
		switch {
		case !b.addFields && (isNumeric(v) || v.Type == bsoncore.TypeBoolean):
			if expr.Truthy(v) {
				c.include = true
				if full != "_id" {
					if b.hasExc {
						return b.fail(ErrInclusionInExclusion, "Cannot do inclusion on field %s in exclusion projection", full)
					}
					b.hasInc = true
				}
			} else {
				c.exclude = true
				if full != "_id" {
					if b.hasInc || b.hasComp {
						return b.fail(ErrExclusionInInclusion, "Cannot do exclusion on field %s in inclusion projection", full)
					}
					b.hasExc = true
				}
			}
		case v.Type == bsoncore.TypeEmbeddedDocument && !isOperatorDoc(v.Document()) && (len(v.Data) > 5 || !b.addFields):
			if len(v.Data) <= 5 {
				return b.fail(ErrEmptySubProjection, "An empty sub-projection is not a valid value. Found empty object at path")
			}
			sub := newProjNode()
			if err := b.insertNode(node, key, full, sub); err != nil {
				return err
			}
			if err := b.addDoc(sub, v.Document(), append(append([]string(nil), prefix...), key)); err != nil {
				return err
			}
			continue
		default:
			if b.hasExc {
				return b.fail(ErrExprInExclusion, "Cannot use expression other than $meta in exclusion projection")
			}
			x, err := b.env.compile(v)
			if err != nil {
				return err
			}
			c.e = x
			b.hasComp = true
		}
		if err := b.insert(node, key, c); err != nil {
			return err
		}
	}
	return nil
}

func trimCategory(err error) string {
	s := err.Error()
	if i := strings.Index(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// insertNode places an (empty) sub-tree at a dotted key.
func (b *projBuilder) insertNode(node *projNode, key, full string, sub *projNode) error {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		c := node.byName[p]
		if c == nil {
			c = &projChild{name: p, sub: newProjNode()}
			if i == len(parts)-1 {
				c.sub = sub
			}
			node.byName[p] = c
			node.children = append(node.children, c)
		} else if c.sub == nil {
			return b.fail(ErrPathCollision, "Path collision at %s", full)
		} else if i == len(parts)-1 {
			// {a: {b: 1}, "a.c": 1} style merges: reuse the existing node.
			*sub = *c.sub
			c.sub = sub
		}
		node = c.sub
	}
	return nil
}

// insert places a leaf at a dotted path.
func (b *projBuilder) insert(node *projNode, path string, leaf *projChild) error {
	if err := checkFieldPath(path); err != nil {
		return err
	}
	parts := strings.Split(path, ".")
	for i, p := range parts {
		c := node.byName[p]
		last := i == len(parts)-1
		switch {
		case c == nil && last:
			leaf.name = p
			node.byName[p] = leaf
			node.children = append(node.children, leaf)
			return nil
		case c == nil:
			c = &projChild{name: p, sub: newProjNode()}
			node.byName[p] = c
			node.children = append(node.children, c)
		case last:
			if c.sub != nil {
				return b.fail(ErrPathPrefixCollision, "Path collision at %s", path)
			}
			return b.fail(ErrPathCollision, "Path collision at %s", path)
		case c.sub == nil:
			return b.fail(ErrPathCollision, "Path collision at %s remaining portion %s", path, strings.Join(parts[i+1:], "."))
		}
		node = c.sub
	}
	return nil
}

// markComputed sets computed flags bottom-up.
func markComputed(n *projNode) bool {
	any := false
	for _, c := range n.children {
		if c.e != nil {
			c.computed = true
		} else if c.sub != nil {
			c.computed = markComputed(c.sub)
		}
		any = any || c.computed
	}
	return any
}

func (s *projectStage) name() string            { return s.kind }
func (s *projectStage) spec() bsoncore.Document { return s.raw }

func (s *projectStage) open(in Iterator) Iterator {
	ctx := s.env.context()
	return &funcIter{next: func(c context.Context) (bsoncore.Document, error) {
		d, err := in.Next(c)
		if err != nil || d == nil {
			return nil, err
		}
		ctx.Root = d
		out, err := s.apply(ctx, d)
		if err != nil {
			return nil, err
		}
		return out, nil
	}, close: in.Close}
}

func (s *projectStage) apply(ctx *expr.Context, doc bsoncore.Document) (bsoncore.Document, error) {
	fields := s.project(s.root, doc)
	fields, err := s.compute(ctx, s.root, fields)
	if err != nil {
		return nil, err
	}
	return expr.Document(fields).Data, nil
}

// project is step 1 for one document level.
func (s *projectStage) project(n *projNode, doc bsoncore.Document) []expr.Field {
	var out []expr.Field
	for _, f := range expr.Fields(docValue(doc)) {
		c := n.byName[f.Key]
		switch {
		case c == nil:
			if s.mode != modeInclusion {
				out = append(out, f)
			}
		case c.include:
			out = append(out, f)
		case c.exclude:
		case c.sub != nil:
			if v, ok := s.projectValue(c.sub, f.Val); ok {
				out = append(out, expr.Field{Key: f.Key, Val: v})
			}
		case c.e != nil:
			if s.mode != modeInclusion {
				out = append(out, f) // replaced in step 2
			}
		}
	}
	return out
}

func (s *projectStage) projectValue(n *projNode, v bsoncore.Value) (bsoncore.Value, bool) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return expr.Document(s.project(n, v.Data)), true
	case bsoncore.TypeArray:
		var out []bsoncore.Value
		for _, x := range expr.Elements(v) {
			if y, ok := s.projectValue(n, x); ok {
				out = append(out, y)
			}
		}
		return expr.Array(out), true
	}
	if s.mode == modeInclusion {
		return expr.Missing, false
	}
	return v, true
}

// compute is step 2 for one level.
func (s *projectStage) compute(ctx *expr.Context, n *projNode, fields []expr.Field) ([]expr.Field, error) {
	for _, c := range n.children {
		var v bsoncore.Value
		switch {
		case c.e != nil:
			x, err := c.e.Eval(ctx)
			if err != nil {
				return nil, err
			}
			v = x
		case c.sub != nil && c.computed:
			cur := expr.Missing
			for _, f := range fields {
				if f.Key == c.name {
					cur = f.Val
				}
			}
			x, err := s.computeValue(ctx, c.sub, cur)
			if err != nil {
				return nil, err
			}
			v = x
		default:
			continue
		}
		fields = setFieldIn(fields, c.name, v)
	}
	return fields, nil
}

func (s *projectStage) computeValue(ctx *expr.Context, n *projNode, v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		f, err := s.compute(ctx, n, expr.Fields(v))
		if err != nil {
			return expr.Missing, err
		}
		return expr.Document(f), nil
	case bsoncore.TypeArray:
		var out []bsoncore.Value
		for _, x := range expr.Elements(v) {
			y, err := s.computeValue(ctx, n, x)
			if err != nil {
				return expr.Missing, err
			}
			out = append(out, y)
		}
		return expr.Array(out), nil
	}
	f, err := s.compute(ctx, n, nil)
	if err != nil {
		return expr.Missing, err
	}
	return expr.Document(f), nil
}

// setFieldIn replaces, appends or (missing v) removes a field.
func setFieldIn(fields []expr.Field, name string, v bsoncore.Value) []expr.Field {
	for i := range fields {
		if fields[i].Key == name {
			if v.Type == 0 {
				return append(fields[:i], fields[i+1:]...)
			}
			fields[i].Val = v
			return fields
		}
	}
	if v.Type == 0 {
		return fields
	}
	return append(fields, expr.Field{Key: name, Val: v})
}
