package query

import (
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"

	"github.com/parsecdb/parsec/engine/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Projection is a compiled find projection. It is immutable and safe for
// concurrent use.
//
// As in MongoDB 7.0: a projection includes (fields set to true or a
// non-zero number, computed fields, $elemMatch and positional fields) or
// excludes (fields set to false or 0); _id is included unless excluded,
// and may be excluded in an inclusion projection; $slice works in both.
// Included fields keep the document's order; computed and $elemMatch
// fields follow them in the order of the specification.
type Projection struct {
	root       *projNode
	inclusion  bool
	excludeID  bool
	positional bool // a "path.$" field: Apply needs the filter's match position
	filter     *Filter
	env        *exprEnv
}

type projKind uint8

const (
	projInclude projKind = iota
	projExclude
	projComputed
	projSlice
	projElemMatch
	projPositional
	projSub
)

type projNode struct {
	children []*projChild // specification order
	byName   map[string]*projChild
}

type projChild struct {
	name     string
	kind     projKind
	sub      *projNode
	expr     expr.Expression
	skip     int // $slice: [skip, limit]; single number: skip 0 or negative count
	limit    int
	sliceOne bool // $slice: n (not an array)
	elem     valueMatcher
	// computed: the subtree holds computed fields; posPath: it holds the
	// positional field.
	computed, posPath bool
}

// CompileProjection parses a find projection. filter is the query the
// projection runs with (the positional $ refers to it; nil when there is
// none); opts are the variables and clock of computed fields.
func CompileProjection(spec bsoncore.Document, filter *Filter, opts Options) (*Projection, error) {
	if isEmptyDoc(spec) && len(opts.Let) == 0 {
		// nothing to project and no let to check: no expression
		// environment either (Apply is never reached for it)
		return &Projection{root: &projNode{}, filter: filter}, nil
	}
	env, err := newExprEnv(opts)
	if err != nil {
		return nil, err
	}
	p := &Projection{root: newProjNode(), filter: filter, env: env}
	if len(spec) == 0 {
		return p, nil
	}
	spec = append(bsoncore.Document(nil), spec...)
	if err := spec.Validate(); err != nil {
		return nil, langerr.New(langerr.ErrFailedToParse, "projection: %v", err)
	}
	b := &projBuilder{p: p}
	if err := b.addDoc(spec, nil); err != nil {
		return nil, err
	}
	p.inclusion = b.mode != modeExclusion
	if b.mode == modeNone {
		// Only _id (and $slice) given: {_id: 0} excludes, {_id: 1} includes.
		p.inclusion = b.idInclude && !b.sliceOnly
		if b.sliceOnly {
			p.inclusion = false
		}
	}
	if p.positional && filter == nil {
		p.filter = &Filter{}
	}
	return p, nil
}

func newProjNode() *projNode { return &projNode{byName: map[string]*projChild{}} }

const (
	modeNone = iota
	modeInclusion
	modeExclusion
)

type projBuilder struct {
	p         *Projection
	mode      int
	idInclude bool
	sliceOnly bool
}

func (b *projBuilder) addDoc(spec bsoncore.Document, prefix []string) error {
	for e := range value.All(spec) {
		if err := b.addField(e.Key(), e.Value(), prefix); err != nil {
			return err
		}
	}
	return nil
}

func (b *projBuilder) setMode(m int, path string) error {
	switch {
	case b.mode == modeNone:
		b.mode = m
	case b.mode == modeInclusion && m == modeExclusion:
		return langerr.New(ErrProjectionExclusionInInclusion, "Cannot do exclusion on field %s in inclusion projection", path)
	case b.mode == modeExclusion && m == modeInclusion:
		return langerr.New(ErrProjectionInclusionInExclusion, "Cannot do inclusion on field %s in exclusion projection", path)
	}
	return nil
}

func (b *projBuilder) addField(key string, v bsoncore.Value, prefix []string) error {
	if key == "" {
		return langerr.New(ErrProjectionEmptyPath, "FieldPath cannot be constructed with empty string")
	}
	positional := false
	if key == "$" || strings.HasSuffix(key, ".$") {
		positional = true
		key = strings.TrimSuffix(strings.TrimSuffix(key, "$"), ".")
		if key == "" {
			return langerr.New(ErrProjectionPositional, "Positional projection must be applied to a field: '$'")
		}
	}
	parts := append(append([]string(nil), prefix...), splitPath(key)...)
	full := strings.Join(parts, ".")
	for _, part := range parts {
		if part == "" {
			return langerr.New(ErrFieldPathEmptyPart, "FieldPath field names may not be empty strings.")
		}
		if part == "$" || strings.Contains(part, "$") && part[0] == '$' {
			if part == "$" {
				return langerr.New(ErrProjectionPositional, "As of 4.4, it's illegal to specify positional operator in the middle of a path.Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form like a.b.$.d, remove the parts following the '$' and the results will be equivalent.")
			}
			return langerr.New(ErrFieldPathDollar, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	isID := len(parts) == 1 && parts[0] == "_id"
	c := &projChild{name: parts[len(parts)-1]}
	switch {
	case positional:
		if !truthy(v) || v.Type == bsoncore.TypeEmbeddedDocument {
			return langerr.New(ErrProjectionPositional, "positional projection cannot be used with exclusion or a sub-specification: %s.$", full)
		}
		if b.p.positional {
			return langerr.New(ErrProjectionPositional, "Cannot specify more than one positional projection per query.")
		}
		b.p.positional = true
		c.kind = projPositional
		if err := b.setMode(modeInclusion, full); err != nil {
			return err
		}
	case v.Type == bsoncore.TypeBoolean || isNumberType(v.Type):
		if truthy(v) {
			c.kind = projInclude
			if isID {
				b.idInclude = true
			} else if err := b.setMode(modeInclusion, full); err != nil {
				return err
			}
		} else {
			c.kind = projExclude
			if isID {
				b.p.excludeID = true
			} else if err := b.setMode(modeExclusion, full); err != nil {
				return err
			}
		}
	case v.Type == bsoncore.TypeEmbeddedDocument:
		d := bsoncore.Document(v.Data)
		first, _ := nextElement(elementsOf(d))
		if first == nil {
			return langerr.New(ErrProjectionEmptyPath, "An empty sub-projection is not a valid value. Found empty object at path")
		}
		if !strings.HasPrefix(first.Key(), "$") {
			return b.addDoc(d, parts) // {a: {b: 1}} is {"a.b": 1}
		}
		var err error
		switch first.Key() {
		case "$slice":
			if countElements(d) != 1 {
				return langerr.New(ErrProjectionSliceBad, "$slice projection of %s must be the only field of its object", full)
			}
			err = compileSlice(c, first.Value())
			if b.mode == modeNone {
				b.sliceOnly = true
			}
		case "$elemMatch":
			if len(parts) > 1 {
				return langerr.New(ErrProjectionElemMatchNested, "Cannot use $elemMatch projection on a nested field.")
			}
			q, ok := first.Value().DocumentOK()
			if !ok {
				return langerr.BadValue("elemMatch: Invalid argument, object required.")
			}
			cc, cerr := newCompiler(Options{})
			if cerr != nil {
				return cerr
			}
			c.elem, err = cc.compileElemMatch(q)
			c.kind = projElemMatch
			if err == nil {
				err = b.setMode(modeInclusion, full)
			}
		case "$meta":
			m, _ := first.Value().StringValueOK()
			switch m {
			case "textScore":
				return langerr.BadValue("query requires text score metadata, but it is not available")
			case "randVal", "searchScore", "searchHighlights", "geoNearDistance", "geoNearPoint", "recordId", "indexKey", "sortKey", "searchScoreDetails", "vectorSearchScore":
				return langerr.New(langerr.ErrNotImplemented, "$meta projection of '%s' is not supported by Parsec", m)
			}
			return langerr.New(ErrProjectionBadMeta, "Unsupported argument to $meta: %s", m)
		default:
			c.kind = projComputed
			c.expr, err = expr.Compile(v, b.p.env.scope)
			if err == nil {
				err = b.setMode(modeInclusion, full)
			}
		}
		if err != nil {
			return err
		}
	default:
		// Any other value is an expression: "$a" a path, "x" a literal.
		var err error
		c.kind = projComputed
		if c.expr, err = expr.Compile(v, b.p.env.scope); err != nil {
			return err
		}
		if err := b.setMode(modeInclusion, full); err != nil {
			return err
		}
	}
	if isID && c.kind == projExclude {
		b.p.excludeID = true
	}
	return b.insert(parts, c)
}

// insert puts c at parts in the tree, refusing paths that collide.
func (b *projBuilder) insert(parts []string, c *projChild) error {
	n := b.p.root
	for i, part := range parts[:len(parts)-1] {
		existing := n.byName[part]
		if existing == nil {
			existing = &projChild{name: part, kind: projSub, sub: newProjNode()}
			n.byName[part] = existing
			n.children = append(n.children, existing)
		} else if existing.kind != projSub {
			return langerr.New(ErrProjectionPathCollision, "Path collision at %s remaining portion %s", strings.Join(parts, "."), strings.Join(parts[i+1:], "."))
		}
		if c.kind == projComputed {
			existing.computed = true
		}
		if c.kind == projPositional {
			existing.posPath = true
		}
		n = existing.sub
	}
	last := parts[len(parts)-1]
	if _, dup := n.byName[last]; dup {
		return langerr.New(ErrProjectionPathCollisionPrefix, "Path collision at %s", strings.Join(parts, "."))
	}
	n.byName[last] = c
	n.children = append(n.children, c)
	return nil
}

func compileSlice(c *projChild, v bsoncore.Value) error {
	c.kind = projSlice
	switch {
	case isNumberType(v.Type):
		n, err := wholeNumber("$slice", v)
		if err != nil {
			return langerr.New(ErrProjectionSliceBad, "$slice only supports numbers and [skip, limit] arrays")
		}
		c.sliceOne, c.limit = true, clampInt(n)
		return nil
	case v.Type == bsoncore.TypeArray:
		vals := arrayValues(v.Data)
		if len(vals) != 2 {
			return langerr.New(ErrProjectionSliceBad, "$slice array wrong size")
		}
		if !isNumberType(vals[0].Type) || !isNumberType(vals[1].Type) {
			return langerr.New(ErrProjectionSliceBad, "$slice array arguments must be numbers")
		}
		skip, err1 := wholeNumber("$slice", vals[0])
		limit, err2 := wholeNumber("$slice", vals[1])
		if err1 != nil || err2 != nil {
			return langerr.New(ErrProjectionSliceBad, "$slice array arguments must be integers")
		}
		if limit <= 0 {
			return langerr.New(ErrProjectionSliceBad, "$slice limit must be positive")
		}
		c.skip, c.limit = clampInt(skip), clampInt(limit)
		return nil
	}
	return langerr.New(ErrProjectionSliceBad, "$slice only supports numbers and [skip, limit] arrays")
}

func clampInt(n int64) int {
	const lim = 1 << 31
	switch {
	case n > lim:
		return lim
	case n < -lim:
		return -lim
	}
	return int(n)
}

// IsEmpty reports whether the projection returns documents unchanged.
func (p *Projection) IsEmpty() bool {
	return p == nil || (len(p.root.children) == 0 && !p.positional)
}

// IsInclusion reports whether the projection lists what to keep.
func (p *Projection) IsInclusion() bool { return p != nil && p.inclusion }

// Apply projects doc. It fails only on the errors MongoDB reports while
// projecting: a computed field whose expression fails, a positional
// projection whose array has no matching element.
func (p *Projection) Apply(doc bsoncore.Document) (bsoncore.Document, error) {
	if p.IsEmpty() {
		return doc, nil
	}
	a := &applier{p: p, ctx: nil, root: doc, pos: -1}
	if p.positional {
		_, a.pos = p.filter.MatchPosition(doc)
	}
	out, err := a.document(nil, doc, p.root, true, false)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// applier holds one Apply's state.
type applier struct {
	p    *Projection
	ctx  *expr.Context
	root bsoncore.Document
	pos  int
}

func (a *applier) eval(e expr.Expression) (bsoncore.Value, error) {
	if a.ctx == nil {
		a.ctx = a.p.env.context(a.root)
	}
	return e.Eval(a.ctx)
}

// document appends to dst the projection of doc by node; top is set for
// the document itself (where _id rules apply), posDone once the
// positional operator has been applied along the current path.
func (a *applier) document(dst []byte, doc bsoncore.Document, node *projNode, top, posDone bool) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	emitted := map[string]bool{}
	for e := range value.All(doc) {
		key, v := e.Key(), e.Value()
		c := node.byName[key]
		if top && key == "_id" && (c == nil || c.kind == projInclude || c.kind == projExclude) {
			if !a.p.excludeID {
				dst = bsoncore.AppendValueElement(dst, key, v)
			}
			continue
		}
		if c == nil {
			if !a.p.inclusion {
				dst = bsoncore.AppendValueElement(dst, key, v)
			}
			continue
		}
		var err error
		switch c.kind {
		case projInclude:
			dst = bsoncore.AppendValueElement(dst, key, v)
		case projExclude, projComputed, projElemMatch:
		case projSlice:
			dst = bsoncore.AppendValueElement(dst, key, slice(c, v))
		case projPositional:
			var pv bsoncore.Value
			if pv, err = a.positional(v, posDone); err == nil && pv.Type != missing {
				dst = bsoncore.AppendValueElement(dst, key, pv)
			}
		case projSub:
			var sv bsoncore.Value
			var keep bool
			if sv, keep, err = a.subValue(v, c, posDone); err == nil && keep {
				dst = bsoncore.AppendValueElement(dst, key, sv)
			}
		}
		if err != nil {
			return nil, err
		}
		emitted[key] = true
	}
	if a.p.inclusion {
		var err error
		if dst, err = a.additions(dst, doc, node, emitted); err != nil {
			return nil, err
		}
	}
	dst, err := bsoncore.AppendDocumentEnd(dst, idx)
	return dst, err
}

// additions appends, in specification order, what inclusion adds after
// the document's own fields: computed fields, $elemMatch results, and
// sub-documents made only of computed fields.
func (a *applier) additions(dst []byte, doc bsoncore.Document, node *projNode, emitted map[string]bool) ([]byte, error) {
	for _, c := range node.children {
		switch c.kind {
		case projComputed:
			v, err := a.eval(c.expr)
			if err != nil {
				return nil, err
			}
			if v.Type != missing {
				dst = bsoncore.AppendValueElement(dst, c.name, v)
			}
		case projElemMatch:
			v, ok := lookupField(doc, c.name)
			if !ok || v.Type != bsoncore.TypeArray {
				continue
			}
			for e := range value.All(v.Data) {
				if c.elem.matchValue(arrayOf(e.Value()), nil) {
					dst = bsoncore.AppendArrayElement(dst, c.name, arrayOf(e.Value()).Data)
					break
				}
			}
		case projSub:
			if emitted[c.name] || !c.computed {
				continue
			}
			sub, err := a.document(nil, emptyDoc, c.sub, false, true)
			if err != nil {
				return nil, err
			}
			dst = bsoncore.AppendDocumentElement(dst, c.name, sub)
		}
	}
	return dst, nil
}

var emptyDoc = bsoncore.Document{5, 0, 0, 0, 0}

// arrayOf wraps one value in an array.
func arrayOf(v bsoncore.Value) bsoncore.Value {
	idx, b := bsoncore.AppendArrayStart(nil)
	b = bsoncore.AppendValueElement(b, "0", v)
	b, _ = bsoncore.AppendArrayEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b}
}

// subValue projects the value of a field whose children are projected;
// keep is false when nothing of it is to be output.
func (a *applier) subValue(v bsoncore.Value, c *projChild, posDone bool) (bsoncore.Value, bool, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		d, err := a.document(nil, v.Data, c.sub, false, posDone)
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, err == nil, err
	case bsoncore.TypeArray:
		if c.posPath && !posDone {
			elem, err := a.positionalElement(v)
			if err != nil {
				return bsoncore.Value{}, false, err
			}
			arr := arrayOf(elem)
			sv, keep, err := a.subValue(arr, c, true)
			return sv, keep, err
		}
		idx, b := bsoncore.AppendArrayStart(nil)
		i := 0
		for e := range value.All(v.Data) {
			x := e.Value()
			switch {
			case x.Type == bsoncore.TypeEmbeddedDocument || x.Type == bsoncore.TypeArray:
				sv, keep, err := a.subValue(x, c, posDone)
				if err != nil {
					return bsoncore.Value{}, false, err
				}
				if keep {
					b = bsoncore.AppendValueElement(b, itoa(i), sv)
					i++
				}
			case !a.p.inclusion:
				b = bsoncore.AppendValueElement(b, itoa(i), x)
				i++
			case c.computed:
				d, err := a.document(nil, emptyDoc, c.sub, false, posDone)
				if err != nil {
					return bsoncore.Value{}, false, err
				}
				b = bsoncore.AppendDocumentElement(b, itoa(i), d)
				i++
			}
		}
		b, _ = bsoncore.AppendArrayEnd(b, idx)
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: b}, true, nil
	}
	if !a.p.inclusion {
		return v, true, nil
	}
	if c.computed {
		d, err := a.document(nil, emptyDoc, c.sub, false, posDone)
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, err == nil, err
	}
	return bsoncore.Value{}, false, nil
}

// positional is the value of a "path.$" field: the matched element of
// the array, alone in an array.
func (a *applier) positional(v bsoncore.Value, posDone bool) (bsoncore.Value, error) {
	if v.Type != bsoncore.TypeArray || posDone {
		return v, nil
	}
	elem, err := a.positionalElement(v)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return arrayOf(elem), nil
}

func (a *applier) positionalElement(arr bsoncore.Value) (bsoncore.Value, error) {
	if a.pos < 0 {
		return bsoncore.Value{}, langerr.New(ErrPositionalNoMatch, "positional operator '.$' couldn't find a matching element in the array")
	}
	x, ok := lookupField(arr.Data, itoa(a.pos))
	if !ok {
		return bsoncore.Value{}, langerr.New(ErrPositionalNoMatch, "positional operator '.$' element mismatch")
	}
	return x, nil
}

// slice applies $slice to an array; other values are left as they are.
func slice(c *projChild, v bsoncore.Value) bsoncore.Value {
	if v.Type != bsoncore.TypeArray {
		return v
	}
	vals := arrayValues(v.Data)
	n := len(vals)
	var from, to int
	if c.sliceOne {
		if c.limit >= 0 {
			from, to = 0, min(c.limit, n)
		} else {
			from, to = max(n+c.limit, 0), n
		}
	} else {
		from = c.skip
		if from < 0 {
			from = max(n+from, 0)
		}
		from = min(from, n)
		to = min(from+c.limit, n)
	}
	idx, b := bsoncore.AppendArrayStart(nil)
	for i, x := range vals[from:to] {
		b = bsoncore.AppendValueElement(b, itoa(i), x)
	}
	b, _ = bsoncore.AppendArrayEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b}
}

func itoa(i int) string { return strconv.Itoa(i) }

// isEmptyDoc reports whether spec is absent or the empty document {}.
func isEmptyDoc(spec bsoncore.Document) bool {
	return len(spec) == 0 || (len(spec) == 5 && spec[0] == 5 && spec[1]|spec[2]|spec[3]|spec[4] == 0)
}
