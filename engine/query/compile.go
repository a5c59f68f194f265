package query

import (
	"math"
	"strings"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// compiler turns a filter document into predicates.
type compiler struct {
	opts    Options
	canFail bool
	expr    *exprEnv
}

// context of a filter document: the top level (and $and/$or/$nor under
// it) or the query of an $elemMatch, where $expr, $where and $text are
// not allowed.
type docContext uint8

const (
	ctxTop docContext = iota
	ctxElemMatch
)

func newCompiler(opts Options) (*compiler, error) {
	c := &compiler{opts: opts}
	if len(opts.Let) > 0 {
		// let is checked even when no expression uses it
		env, err := newExprEnv(opts)
		if err != nil {
			return nil, err
		}
		c.expr = env
	}
	return c, nil
}

// env is the expression environment, made at the first expression: most
// filters have none.
func (c *compiler) env() *exprEnv {
	if c.expr == nil {
		c.expr, _ = newExprEnv(c.opts) // without let it cannot fail
	}
	return c.expr
}

func (c *compiler) compileDoc(filter bsoncore.Document, ctx docContext) (andPred, error) {
	if err := filter.Validate(); err != nil {
		return nil, langerr.New(langerr.ErrFailedToParse, "filter: %v", err)
	}
	var preds andPred
	for e := range value.All(filter) {
		key, v := e.Key(), e.Value()
		var p predicate
		var err error
		if strings.HasPrefix(key, "$") {
			p, err = c.compileTop(key, v, ctx)
		} else {
			p, err = c.compileField(key, v)
		}
		if err != nil {
			return nil, err
		}
		if p != nil {
			preds = append(preds, p)
		}
	}
	return preds, nil
}

// compileTop compiles a top-level (path-less) operator.
func (c *compiler) compileTop(op string, v bsoncore.Value, ctx docContext) (predicate, error) {
	switch op {
	case "$comment":
		return nil, nil
	case "$and", "$or", "$nor":
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, langerr.BadValue("%s must be an array", op)
		}
		vals := arrayValues(arr)
		if len(vals) == 0 {
			return nil, langerr.BadValue("$and/$or/$nor must be a nonempty array")
		}
		var subs []predicate
		for _, x := range vals {
			d, ok := x.DocumentOK()
			if !ok {
				return nil, langerr.BadValue("$or/$and/$nor entries need to be full objects")
			}
			preds, err := c.compileDoc(d, ctx)
			if err != nil {
				return nil, err
			}
			subs = append(subs, preds)
		}
		switch op {
		case "$and":
			var all andPred
			for _, s := range subs {
				all = append(all, s.(andPred)...)
			}
			return all, nil
		case "$or":
			if len(subs) == 1 {
				return subs[0], nil
			}
			return orPred(subs), nil
		}
		return norPred(subs), nil
	case "$expr":
		if ctx == ctxElemMatch {
			return nil, langerr.BadValue("$expr can only be applied to the top-level document")
		}
		return c.compileExprPred(v)
	case "$where":
		if ctx == ctxElemMatch {
			return nil, langerr.BadValue("$where can only be applied to the top-level document")
		}
		return nil, langerr.New(langerr.ErrNotImplemented, "$where is not supported by Parsec: server-side JavaScript is not available; use $expr")
	case "$text":
		if ctx == ctxElemMatch {
			return nil, langerr.BadValue("$text can only be applied to the top-level document")
		}
		return nil, langerr.New(ErrNeedsIndex, "text index required for $text query")
	case "$jsonSchema":
		d, ok := v.DocumentOK()
		if !ok {
			return nil, langerr.TypeMismatch("$jsonSchema must be an object")
		}
		return compileJSONSchema(d)
	case "$alwaysTrue", "$alwaysFalse":
		if n, ok := v.AsInt64OK(); !ok || n != 1 {
			return nil, langerr.New(langerr.ErrFailedToParse, "%s must be an integer value of 1", op)
		}
		return constPred(op == "$alwaysTrue"), nil
	}
	return nil, langerr.BadValue("unknown top level operator: %s. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.", op)
}

// isOperatorDoc reports whether a value document holds operators ({$gt:
// 1}) rather than being a literal to compare with: its first field starts
// with '$' and it is not a DBRef ({$ref, $id, ...}).
func isOperatorDoc(d bsoncore.Document) bool {
	rem := elementsOf(d)
	e, rest := nextElement(rem)
	if e == nil || !strings.HasPrefix(e.Key(), "$") {
		return false
	}
	if e.Key() == "$ref" {
		if e2, _ := nextElement(rest); e2 != nil && e2.Key() == "$id" {
			return false
		}
	}
	return true
}

func (c *compiler) compileField(path string, v bsoncore.Value) (predicate, error) {
	parts := splitPath(path)
	switch v.Type {
	case bsoncore.TypeRegex:
		p, o := v.Regex()
		m, err := compileRegex(p, o)
		if err != nil {
			return nil, err
		}
		return &pathPred{path: parts, vm: m, expand: true}, nil
	case bsoncore.TypeUndefined:
		return nil, langerr.BadValue("cannot compare to undefined")
	case bsoncore.TypeEmbeddedDocument:
		if isOperatorDoc(v.Data) {
			n, err := c.compileOps(v.Data)
			if err != nil {
				return nil, err
			}
			return n.toPath(parts), nil
		}
	}
	return &pathPred{path: parts, vm: &eqMatcher{val: v, coll: c.opts.Collation}, expand: true}, nil
}

// opNode is one compiled operator (or several, ANDed), applicable to a
// path or, inside a value $elemMatch, to one element.
type opNode interface {
	toPath(path []string) predicate
	toValue() valueMatcher
}

type leafNode struct {
	vm     valueMatcher
	expand bool
}

func (n leafNode) toPath(path []string) predicate {
	return &pathPred{path: path, vm: n.vm, expand: n.expand}
}
func (n leafNode) toValue() valueMatcher { return n.vm }

// allNode ANDs its children: several operators on one path, $all.
type allNode []opNode

func (a allNode) toPath(path []string) predicate {
	if len(a) == 1 {
		return a[0].toPath(path)
	}
	ps := make(andPred, len(a))
	for i, n := range a {
		ps[i] = n.toPath(path)
	}
	return ps
}

func (a allNode) toValue() valueMatcher {
	if len(a) == 1 {
		return a[0].toValue()
	}
	vs := make(andValues, len(a))
	for i, n := range a {
		vs[i] = n.toValue()
	}
	return vs
}

// notNode negates its child as a whole: {a: {$ne: 1}} refuses [1, 2].
type notNode struct{ n opNode }

func (n notNode) toPath(path []string) predicate { return notPred{n.n.toPath(path)} }
func (n notNode) toValue() valueMatcher          { return notValue{n.n.toValue()} }

type existsNode bool

func (n existsNode) toPath(path []string) predicate {
	if n {
		return &existsPred{path: path}
	}
	return notPred{&existsPred{path: path}}
}
func (n existsNode) toValue() valueMatcher { return existsMatcher{want: bool(n)} }

type constNode bool

func (n constNode) toPath([]string) predicate { return constPred(n) }
func (n constNode) toValue() valueMatcher     { return constMatcher(n) }

type constMatcher bool

func (m constMatcher) matchValue(bsoncore.Value, *state) bool { return bool(m) }

// compileOps compiles an operator document ({$gt: 1, $lt: 5}).
func (c *compiler) compileOps(ops bsoncore.Document) (opNode, error) {
	var all allNode
	var regexArg, optionsArg *bsoncore.Value
	for e := range value.All(ops) {
		name, arg := e.Key(), e.Value()
		switch name {
		case "$regex":
			if regexArg == nil {
				regexArg = &arg
			}
			continue
		case "$options":
			if optionsArg == nil {
				optionsArg = &arg
			}
			continue
		}
		n, err := c.compileOp(name, arg)
		if err != nil {
			return nil, err
		}
		all = append(all, n)
	}
	if optionsArg != nil && regexArg == nil {
		return nil, langerr.BadValue("$options needs a $regex")
	}
	if regexArg != nil {
		m, err := regexFromArgs(*regexArg, optionsArg)
		if err != nil {
			return nil, err
		}
		all = append(all, leafNode{vm: m, expand: true})
	}
	if len(all) == 0 {
		return constNode(true), nil
	}
	return all, nil
}

func regexFromArgs(re bsoncore.Value, opts *bsoncore.Value) (*regexMatcher, error) {
	var pattern, options string
	switch re.Type {
	case bsoncore.TypeString:
		pattern = stringOf(re)
	case bsoncore.TypeRegex:
		pattern, options = re.Regex()
	default:
		return nil, langerr.BadValue("$regex has to be a string")
	}
	if opts != nil {
		s, ok := opts.StringValueOK()
		if !ok {
			return nil, langerr.BadValue("$options has to be a string")
		}
		if s != "" && options != "" {
			return nil, langerr.BadValue("options set in both $regex and $options")
		}
		if s != "" {
			options = s
		}
	}
	return compileRegex(pattern, options)
}

var cmpOps = map[string]cmpOp{"$eq": opEQ, "$lt": opLT, "$lte": opLTE, "$gt": opGT, "$gte": opGTE}

// compileOp compiles one operator of an operator document.
func (c *compiler) compileOp(name string, arg bsoncore.Value) (opNode, error) {
	switch name {
	case "$eq", "$ne", "$lt", "$lte", "$gt", "$gte":
		if arg.Type == bsoncore.TypeUndefined {
			return nil, langerr.BadValue("cannot compare to undefined")
		}
		if name == "$ne" {
			if arg.Type == bsoncore.TypeRegex {
				return nil, langerr.BadValue("Can't have regex as arg to $ne")
			}
			return notNode{leafNode{vm: &eqMatcher{val: arg, coll: c.opts.Collation}, expand: true}}, nil
		}
		if name == "$eq" {
			return leafNode{vm: &eqMatcher{val: arg, coll: c.opts.Collation}, expand: true}, nil
		}
		return leafNode{vm: &cmpMatcher{op: cmpOps[name], val: arg, coll: c.opts.Collation}, expand: true}, nil
	case "$in", "$nin":
		m, err := compileIn(name, arg, c.opts.Collation)
		if err != nil {
			return nil, err
		}
		if name == "$nin" {
			return notNode{leafNode{vm: m, expand: true}}, nil
		}
		return leafNode{vm: m, expand: true}, nil
	case "$exists":
		return existsNode(truthy(arg)), nil
	case "$type":
		m, err := compileType(arg)
		if err != nil {
			return nil, err
		}
		return leafNode{vm: m, expand: true}, nil
	case "$mod":
		m, err := compileMod(arg)
		if err != nil {
			return nil, err
		}
		return leafNode{vm: m, expand: true}, nil
	case "$size":
		n, err := compileSize(arg)
		if err != nil {
			return nil, err
		}
		return leafNode{vm: &sizeMatcher{n: n}}, nil
	case "$all":
		return c.compileAll(arg)
	case "$elemMatch":
		d, ok := arg.DocumentOK()
		if !ok {
			return nil, langerr.BadValue("$elemMatch needs an Object")
		}
		vm, err := c.compileElemMatch(d)
		if err != nil {
			return nil, err
		}
		return leafNode{vm: vm}, nil
	case "$not":
		switch arg.Type {
		case bsoncore.TypeRegex:
			p, o := arg.Regex()
			m, err := compileRegex(p, o)
			if err != nil {
				return nil, err
			}
			return notNode{leafNode{vm: m, expand: true}}, nil
		case bsoncore.TypeEmbeddedDocument:
			d := bsoncore.Document(arg.Data)
			if countElements(d) == 0 {
				return nil, langerr.BadValue("$not cannot be empty")
			}
			if !isOperatorDoc(d) {
				e, _ := nextElement(elementsOf(d))
				return nil, langerr.BadValue("unknown operator: %s", e.Key())
			}
			n, err := c.compileOps(d)
			if err != nil {
				return nil, err
			}
			return notNode{n}, nil
		}
		return nil, langerr.BadValue("$not needs a regex or a document")
	case "$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear":
		m, err := compileBits(name, arg)
		if err != nil {
			return nil, err
		}
		return leafNode{vm: m, expand: true}, nil
	case "$near", "$nearSphere", "$geoNear":
		return nil, langerr.New(ErrNoPlan, "error processing query: planner returned error :: caused by :: unable to find index for $geoNear query")
	case "$geoWithin", "$geoIntersects", "$within":
		return nil, langerr.New(langerr.ErrNotImplemented, "%s is not supported by Parsec yet", name)
	case "$maxDistance", "$minDistance":
		return nil, langerr.BadValue("%s must be used with $near or $nearSphere", name)
	}
	return nil, langerr.BadValue("unknown operator: %s", name)
}

func compileIn(name string, arg bsoncore.Value, coll *value.Collator) (*inMatcher, error) {
	arr, ok := arg.ArrayOK()
	if !ok {
		return nil, langerr.BadValue("%s needs an array", name)
	}
	var vals []bsoncore.Value
	var res []*regexMatcher
	for _, x := range arrayValues(arr) {
		switch x.Type {
		case bsoncore.TypeRegex:
			p, o := x.Regex()
			m, err := compileRegex(p, o)
			if err != nil {
				return nil, err
			}
			res = append(res, m)
			continue
		case bsoncore.TypeUndefined:
			return nil, langerr.BadValue("InMatchExpression equality cannot be undefined")
		case bsoncore.TypeEmbeddedDocument:
			if isOperatorDoc(x.Data) {
				return nil, langerr.BadValue("cannot nest $ under %s", name)
			}
		}
		vals = append(vals, x)
	}
	return newInMatcher(vals, res, coll), nil
}

func compileType(arg bsoncore.Value) (*typeMatcher, error) {
	m := &typeMatcher{}
	add := func(x bsoncore.Value) error {
		switch {
		case x.Type == bsoncore.TypeString:
			s := stringOf(x)
			if s == "number" {
				m.number = true
				return nil
			}
			t, ok := value.TypeByAlias(s)
			if !ok {
				return langerr.BadValue("Unknown type name alias: %s", s)
			}
			m.types = append(m.types, t)
		case isNumberType(x.Type):
			f := value.Float(x)
			n, err := wholeNumber("$type", x)
			if err != nil {
				return langerr.BadValue("Invalid numerical type code: %s", value.Render(x))
			}
			t, ok := value.TypeByCode(n)
			if !ok {
				return langerr.BadValue("Invalid numerical type code: %v", f)
			}
			m.types = append(m.types, t)
		default:
			return langerr.TypeMismatch("type must be represented as a number or a string")
		}
		return nil
	}
	if arg.Type == bsoncore.TypeArray {
		vals := arrayValues(arg.Data)
		if len(vals) == 0 {
			return nil, langerr.BadValue("$type must match at least one type")
		}
		for _, x := range vals {
			if err := add(x); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	return m, add(arg)
}

func compileMod(arg bsoncore.Value) (*modMatcher, error) {
	arr, ok := arg.ArrayOK()
	if !ok {
		return nil, langerr.BadValue("malformed mod, needs to be an array")
	}
	vals := arrayValues(arr)
	switch {
	case len(vals) < 2:
		if len(vals) == 1 && !isNumberType(vals[0].Type) {
			return nil, langerr.BadValue("malformed mod, divisor not a number")
		}
		return nil, langerr.BadValue("malformed mod, not enough elements")
	case !isNumberType(vals[0].Type):
		return nil, langerr.BadValue("malformed mod, divisor not a number")
	case !isNumberType(vals[1].Type):
		return nil, langerr.BadValue("malformed mod, remainder not a number")
	case len(vals) > 2:
		return nil, langerr.BadValue("malformed mod, too many elements")
	}
	num := func(what string, v bsoncore.Value) (int64, error) {
		if i, ok := value.AsExactInt(v); ok {
			return i, nil
		}
		f := value.Float(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, langerr.BadValue("malformed mod, %s value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type", what)
		}
		return truncToInt64(f), nil
	}
	div, err := num("divisor", vals[0])
	if err != nil {
		return nil, err
	}
	rem, err := num("remainder", vals[1])
	if err != nil {
		return nil, err
	}
	if div == 0 {
		return nil, langerr.BadValue("divisor cannot be 0")
	}
	return &modMatcher{div: div, rem: rem}, nil
}

func compileSize(arg bsoncore.Value) (int, error) {
	var n int64
	switch arg.Type {
	case bsoncore.TypeInt32:
		n = int64(arg.Int32())
	case bsoncore.TypeInt64:
		n = arg.Int64()
		if n != int64(int32(n)) {
			return 0, langerr.BadValue("$size must be representable as a 32-bit integer")
		}
	case bsoncore.TypeDouble:
		f := arg.Double()
		if f != float64(int32(f)) {
			return 0, langerr.BadValue("$size must be a whole number")
		}
		n = int64(f)
	default:
		return 0, langerr.BadValue("$size needs a number")
	}
	if n < 0 {
		return 0, langerr.BadValue("$size may not be negative")
	}
	return int(n), nil
}

func (c *compiler) compileAll(arg bsoncore.Value) (opNode, error) {
	arr, ok := arg.ArrayOK()
	if !ok {
		return nil, langerr.BadValue("$all needs an array")
	}
	vals := arrayValues(arr)
	if len(vals) == 0 {
		return constNode(false), nil
	}
	isElemMatch := func(x bsoncore.Value) bool {
		if x.Type != bsoncore.TypeEmbeddedDocument {
			return false
		}
		e, _ := nextElement(elementsOf(x.Data))
		return e != nil && e.Key() == "$elemMatch"
	}
	var all allNode
	if isElemMatch(vals[0]) {
		for _, x := range vals {
			if !isElemMatch(x) {
				return nil, langerr.BadValue("$all/$elemMatch has to be consistent")
			}
			n, err := c.compileOps(x.Data)
			if err != nil {
				return nil, err
			}
			all = append(all, n)
		}
		return all, nil
	}
	for _, x := range vals {
		switch x.Type {
		case bsoncore.TypeRegex:
			p, o := x.Regex()
			m, err := compileRegex(p, o)
			if err != nil {
				return nil, err
			}
			all = append(all, leafNode{vm: m, expand: true})
			continue
		case bsoncore.TypeEmbeddedDocument:
			if isElemMatch(x) {
				return nil, langerr.BadValue("$all/$elemMatch has to be consistent")
			}
			if isOperatorDoc(x.Data) {
				return nil, langerr.BadValue("no $ expressions in $all")
			}
		case bsoncore.TypeUndefined:
			return nil, langerr.BadValue("cannot compare to undefined")
		}
		all = append(all, leafNode{vm: &eqMatcher{val: x, coll: c.opts.Collation}, expand: true})
	}
	return all, nil
}

// pathlessOps are the operators that do not apply to a path; an
// $elemMatch whose first field is one of them holds a query.
var pathlessOps = map[string]bool{
	"$and": true, "$or": true, "$nor": true, "$expr": true, "$where": true, "$text": true,
	"$comment": true, "$jsonSchema": true, "$alwaysTrue": true, "$alwaysFalse": true,
}

func (c *compiler) compileElemMatch(d bsoncore.Document) (valueMatcher, error) {
	first, _ := nextElement(elementsOf(d))
	if first != nil && strings.HasPrefix(first.Key(), "$") && !pathlessOps[first.Key()] {
		// The value form: operators that each element is tested with.
		for e := range value.All(d) {
			if !strings.HasPrefix(e.Key(), "$") {
				return nil, langerr.BadValue("unknown operator: %s", e.Key())
			}
		}
		n, err := c.compileOps(d)
		if err != nil {
			return nil, err
		}
		return &elemMatchValue{vm: n.toValue()}, nil
	}
	sub, err := c.compileDoc(d, ctxElemMatch)
	if err != nil {
		return nil, err
	}
	return &elemMatchObject{sub: sub}, nil
}
