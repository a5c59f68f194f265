package query

import (
	"slices"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Why a document fails a filter, in the shape MongoDB 5.0 and later give a
// DocumentValidationFailure's errInfo.details (collection validators):
// query operators report operatorName, specifiedAs, reason and the values
// they considered; $and, $or and $nor list the clauses that decided
// (clausesNotSatisfied, or clausesSatisfied where the sense is inverted
// by $nor or $not); $jsonSchema lists the schema rules the document
// broke (schemaRulesNotSatisfied, propertiesNotSatisfied, ...).
//
// The explanation re-reads the filter: it is the slow path of a write
// that failed validation, and it never changes whether a document matches
// (Compile's filter decides that).

// ExplainOptions are what Explain needs besides the filter and document.
type ExplainOptions struct {
	// Now is $$NOW for $expr (zero: the Unix epoch).
	Now time.Time
	// ErrorInfo describes a $expr evaluation error as MongoDB does
	// ({code, codeName, errmsg}); nil gives {errmsg}.
	ErrorInfo func(error) bsoncore.Document
}

// maxConsideredValues is how many values a detail lists
// (internalQueryMaxDocValidationErrorConsideredValues).
const maxConsideredValues = 10

// Explain returns the details of why doc does not match filter. The
// caller knows it does not; an empty filter gives an empty document.
func Explain(filter, doc bsoncore.Document, opts ExplainOptions) bsoncore.Document {
	x := &explainer{opts: opts, root: doc}
	c := x.parseDoc(filter)
	if c == nil {
		return emptyDoc
	}
	return x.explain(c, doc, false)
}

// clauseKind is what a clause of the filter is.
type clauseKind uint8

const (
	clauseLeaf clauseKind = iota
	clauseAnd
	clauseOr
	clauseNor
	clauseNot
	clauseExpr
	clauseSchema
	clauseAlways
)

// clause is one node of the filter as MongoDB's error generator sees it.
type clause struct {
	kind   clauseKind
	op     string            // operatorName
	spec   bsoncore.Document // specifiedAs ({path: {op: arg}})
	filter bsoncore.Document // the filter of this clause alone, to match with
	path   []string
	arg    bsoncore.Value
	kids   []*clause
}

type explainer struct {
	opts ExplainOptions
	root bsoncore.Document
}

// parseDoc turns a filter document into its clause: nil when it has
// none, its one clause, or an implicit $and of them.
func (x *explainer) parseDoc(filter bsoncore.Document) *clause {
	var kids []*clause
	for e := range value.All(filter) {
		key, v := e.Key(), e.Value()
		if strings.HasPrefix(key, "$") {
			if c := x.parseTop(key, v); c != nil {
				kids = append(kids, c)
			}
			continue
		}
		kids = append(kids, x.parseField(key, v)...)
	}
	switch len(kids) {
	case 0:
		return nil
	case 1:
		return kids[0]
	}
	return &clause{kind: clauseAnd, op: "$and", filter: filter, kids: kids}
}

func (x *explainer) parseTop(op string, v bsoncore.Value) *clause {
	one := docOf(op, v)
	switch op {
	case "$comment":
		return nil
	case "$and", "$or", "$nor":
		kinds := map[string]clauseKind{"$and": clauseAnd, "$or": clauseOr, "$nor": clauseNor}
		c := &clause{kind: kinds[op], op: op, filter: one}
		for _, sub := range arrayValues(v.Data) {
			k := x.parseDoc(sub.Data)
			if k == nil {
				k = &clause{kind: clauseAlways, op: "", filter: emptyDoc, arg: bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}}}
			}
			c.kids = append(c.kids, k)
		}
		return c
	case "$expr":
		return &clause{kind: clauseExpr, op: op, spec: one, filter: one, arg: v}
	case "$jsonSchema":
		return &clause{kind: clauseSchema, op: op, spec: one, filter: one, arg: v}
	case "$alwaysTrue", "$alwaysFalse":
		return &clause{kind: clauseAlways, op: op, spec: one, filter: one, arg: bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{boolByte(op == "$alwaysTrue")}}}
	}
	return &clause{kind: clauseLeaf, op: op, spec: one, filter: one}
}

// parseField turns {path: v} into its clauses: one per operator of an
// operator document, else one equality (or regex) clause.
func (x *explainer) parseField(path string, v bsoncore.Value) []*clause {
	parts := splitPath(path)
	leaf := func(op string, spec bsoncore.Document) *clause {
		return &clause{kind: clauseLeaf, op: op, spec: spec, filter: spec, path: parts}
	}
	switch {
	case v.Type == bsoncore.TypeRegex:
		return []*clause{leaf("$regex", docOf(path, v))}
	case v.Type != bsoncore.TypeEmbeddedDocument || !isOperatorDoc(v.Data):
		return []*clause{leaf("$eq", docOf(path, v))}
	}
	var out []*clause
	regexAt := -1
	var regexElems []byte
	for e := range value.All(v.Data) {
		op, arg := e.Key(), e.Value()
		switch op {
		case "$regex", "$options":
			regexElems = append(regexElems, e...)
			if regexAt < 0 {
				regexAt = len(out)
				out = append(out, nil)
			}
			continue
		case "$not":
			spec := docOf(path, docValue(docOf(op, arg)))
			not := &clause{kind: clauseNot, op: "$not", spec: spec, filter: spec, path: parts}
			if arg.Type == bsoncore.TypeRegex {
				not.kids = []*clause{leaf("$regex", docOf(path, arg))}
			} else {
				sub := x.parseField(path, arg)
				if len(sub) == 1 {
					not.kids = sub
				} else {
					and := &clause{kind: clauseAnd, op: "$and", filter: docOf(path, arg), kids: sub}
					not.kids = []*clause{and}
				}
			}
			out = append(out, not)
			continue
		}
		out = append(out, leaf(op, docOf(path, docValue(docOf(op, arg)))))
	}
	if regexAt >= 0 {
		spec := docOf(path, docValue(bsoncore.BuildDocument(nil, regexElems)))
		out[regexAt] = leaf("$regex", spec)
	}
	return out
}

// matches reports whether doc matches clause c; an evaluation error
// counts as failing either way, as MongoDB explains a clause that threw.
func (x *explainer) matches(c *clause, doc bsoncore.Document) (ok bool, failed bool) {
	if c.kind == clauseAlways {
		return c.arg.Boolean(), false
	}
	f, err := CompileWith(c.filter, Options{Now: x.opts.Now})
	if err != nil {
		return false, true
	}
	ok, err = f.MatchErr(doc)
	return ok, err != nil
}

// decides reports whether clause c explains its parent's failure: it
// does not match (inv false) or it does (inv true).
func (x *explainer) decides(c *clause, doc bsoncore.Document, inv bool) bool {
	ok, failed := x.matches(c, doc)
	return failed || ok == inv
}

// explain describes why c fails on doc (matches, when inv is set).
func (x *explainer) explain(c *clause, doc bsoncore.Document, inv bool) bsoncore.Document {
	var o obj
	switch c.kind {
	case clauseAnd, clauseOr, clauseNor:
		o.str("operatorName", c.op)
		kidInv := inv
		if c.kind == clauseNor {
			kidInv = !inv
		}
		// Which children to list: those that decided when the node
		// needs only some of them to fail ($and normal, $or inverted,
		// $nor normal), all of them otherwise.
		some := (c.kind == clauseAnd && !inv) || (c.kind == clauseOr && inv) || (c.kind == clauseNor && !inv)
		var list arr
		for i, k := range c.kids {
			if some && !x.decides(k, doc, kidInv) {
				continue
			}
			var item obj
			item.int("index", i)
			item.doc("details", x.explain(k, doc, kidInv))
			list.doc(item.build())
		}
		key := "clausesNotSatisfied"
		if kidInv {
			key = "clausesSatisfied"
		}
		o.arr(key, list.build())
	case clauseNot:
		o.str("operatorName", "$not")
		o.doc("details", x.explain(c.kids[0], doc, !inv))
	case clauseExpr:
		x.explainExpr(&o, c, doc, inv)
	case clauseSchema:
		if inv {
			o.str("operatorName", "$jsonSchema")
			o.str("reason", "schema matched")
			break
		}
		return x.explainSchemaTop(c.arg.Data, doc)
	case clauseAlways:
		if c.op != "" {
			o.str("operatorName", c.op)
			o.doc("specifiedAs", c.spec)
		}
		o.str("reason", pick(inv, "expression always evaluates to false", "expression always evaluates to true"))
	default:
		x.explainLeaf(&o, c, doc, inv)
	}
	return o.build()
}

// leafRule is how a query operator explains itself.
type leafRule struct {
	normal, inverted string   // the reason when it fails, when it matches
	expected         []string // the types it works on, sorted (nil: any)
	whole            bool     // it looks at arrays whole, not at their elements
	noValues         bool     // it reports no values ($exists)
}

var numericTypes = []string{"decimal", "double", "int", "long"}

var leafRules = map[string]leafRule{
	"$eq":           {normal: "comparison failed", inverted: "comparison succeeded"},
	"$lt":           {normal: "comparison failed", inverted: "comparison succeeded"},
	"$lte":          {normal: "comparison failed", inverted: "comparison succeeded"},
	"$gt":           {normal: "comparison failed", inverted: "comparison succeeded"},
	"$gte":          {normal: "comparison failed", inverted: "comparison succeeded"},
	"$ne":           {normal: "comparison succeeded", inverted: "comparison failed"},
	"$in":           {normal: "no matching value found in array", inverted: "matching value found in array"},
	"$nin":          {normal: "matching value found in array", inverted: "no matching value found in array"},
	"$regex":        {normal: "regular expression did not match", inverted: "regular expression did match", expected: []string{"regex", "string", "symbol"}},
	"$mod":          {normal: "$mod did not evaluate to expected remainder", inverted: "$mod did evaluate to expected remainder", expected: numericTypes},
	"$bitsAllSet":   {normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully", expected: append([]string{"binData"}, numericTypes...)},
	"$bitsAnySet":   {normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully", expected: append([]string{"binData"}, numericTypes...)},
	"$bitsAllClear": {normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully", expected: append([]string{"binData"}, numericTypes...)},
	"$bitsAnyClear": {normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully", expected: append([]string{"binData"}, numericTypes...)},
	"$size":         {normal: "array length was not equal to given size", inverted: "array length was equal to given size", expected: []string{"array"}, whole: true},
	"$elemMatch":    {normal: "array did not satisfy the child predicate", inverted: "array did satisfy the child predicate", expected: []string{"array"}, whole: true},
	"$all":          {normal: "array did not contain all specified values", inverted: "array did contain all specified values", whole: true},
	"$type":         {normal: "type did not match", inverted: "type did match"},
}

func (x *explainer) explainLeaf(o *obj, c *clause, doc bsoncore.Document, inv bool) {
	o.str("operatorName", c.op)
	o.doc("specifiedAs", c.spec)
	if c.op == "$exists" {
		want := true
		if e, err := bsoncore.Document(c.spec).IndexErr(0); err == nil {
			if ops, ok := e.Value().DocumentOK(); ok {
				if a, err := ops.LookupErr("$exists"); err == nil {
					want = truthy(a)
				}
			}
		}
		o.str("reason", pick(inv != !want, "path does not exist", "path does exist"))
		return
	}
	if c.op == "$all" {
		if a, ok := opArg(c.spec); ok && a.Type == bsoncore.TypeArray && countElements(a.Data) == 0 {
			o.str("reason", "expression always evaluates to false")
			return
		}
	}
	rule, ok := leafRules[c.op]
	if !ok {
		rule = leafRule{normal: "expression did not match", inverted: "expression did match"}
	}
	vals, truncated, present := considered(doc, c.path, !rule.whole)
	if !present {
		o.str("reason", "field was missing")
		return
	}
	if c.op == "$type" {
		o.str("reason", pick(inv, rule.normal, rule.inverted))
		appendConsidered(o, vals, truncated)
		appendConsideredTypes(o, vals)
		return
	}
	if rule.expected != nil && !anyTypeIn(vals, rule.expected) {
		o.str("reason", "type did not match")
		appendConsideredTypes(o, vals)
		if len(rule.expected) == 1 {
			o.str("expectedType", rule.expected[0])
		} else {
			o.arr("expectedTypes", stringArray(rule.expected))
		}
	} else {
		o.str("reason", pick(inv, rule.normal, rule.inverted))
	}
	appendConsidered(o, vals, truncated)
}

func (x *explainer) explainExpr(o *obj, c *clause, doc bsoncore.Document, inv bool) {
	o.str("operatorName", "$expr")
	o.doc("specifiedAs", c.spec)
	env, _ := newExprEnv(Options{Now: x.opts.Now})
	e, err := expr.Compile(c.arg, env.scope)
	var v bsoncore.Value
	if err == nil {
		v, err = e.Eval(env.context(doc))
	}
	if err != nil {
		o.str("reason", "failed to evaluate aggregation expression")
		var info bsoncore.Document
		if x.opts.ErrorInfo != nil {
			info = x.opts.ErrorInfo(err)
		} else {
			var d obj
			d.str("errmsg", err.Error())
			info = d.build()
		}
		o.doc("details", info)
		return
	}
	o.str("reason", pick(inv, "expression did not match", "expression did match"))
	if v.Type == missing {
		v = bsoncore.Value{Type: bsoncore.TypeNull}
	}
	o.val("expressionResult", v)
}

// considered lists the values path reaches in doc, leaf arrays expanded
// into their elements when expand is set (MongoDB leaves the array itself
// out then), at most maxConsideredValues of them; present is false when
// the path reaches nothing at all.
func considered(doc bsoncore.Document, path []string, expand bool) (vals []bsoncore.Value, truncated, present bool) {
	if len(path) == 0 {
		return []bsoncore.Value{docValue(doc)}, false, true
	}
	var all []bsoncore.Value
	collectValues(doc, path, expand, &all)
	present = len(all) > 0 || walk(doc, path, true, func(v bsoncore.Value, _ int) bool { return v.Type != missing })
	if len(all) > maxConsideredValues {
		return all[:maxConsideredValues], true, present
	}
	return all, false, present
}

func collectValues(doc bsoncore.Document, path []string, expand bool, out *[]bsoncore.Value) {
	v, ok := lookupField(doc, path[0])
	if !ok {
		return
	}
	collectFrom(v, path[1:], expand, out)
}

// collectFrom continues a path at value v (the path's part before rest
// named it).
func collectFrom(v bsoncore.Value, rest []string, expand bool, out *[]bsoncore.Value) {
	if len(rest) == 0 {
		if expand && v.Type == bsoncore.TypeArray {
			*out = append(*out, arrayValues(v.Data)...)
			return
		}
		*out = append(*out, v)
		return
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		collectValues(v.Data, rest, expand, out)
	case bsoncore.TypeArray:
		index := isIndex(rest[0])
		i := 0
		for e := range value.All(v.Data) {
			x := e.Value()
			if x.Type == bsoncore.TypeEmbeddedDocument {
				collectValues(x.Data, rest, expand, out)
			}
			if index && string(e.KeyBytes()) == rest[0] {
				if len(rest) == 1 {
					*out = append(*out, x)
				} else if x.Type == bsoncore.TypeEmbeddedDocument || x.Type == bsoncore.TypeArray {
					collectFrom(x, rest[1:], expand, out)
				}
			}
			i++
		}
	}
}

func appendConsidered(o *obj, vals []bsoncore.Value, truncated bool) {
	if len(vals) == 1 {
		o.val("consideredValue", vals[0])
	} else {
		o.arr("consideredValues", valueArray(vals))
	}
	if truncated {
		o.val("consideredValuesTruncated", boolValue(true))
	}
}

func appendConsideredTypes(o *obj, vals []bsoncore.Value) {
	if len(vals) == 0 {
		return
	}
	var names []string
	for _, v := range vals {
		n := value.TypeAlias(v.Type)
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if len(names) == 1 {
		o.str("consideredType", names[0])
	} else {
		o.arr("consideredTypes", stringArray(names))
	}
}

func anyTypeIn(vals []bsoncore.Value, types []string) bool {
	for _, v := range vals {
		if slices.Contains(types, value.TypeAlias(v.Type)) {
			return true
		}
	}
	return false
}

// opArg is the argument of the one operator of a {path: {op: arg}}
// specification.
func opArg(spec bsoncore.Document) (bsoncore.Value, bool) {
	e, err := spec.IndexErr(0)
	if err != nil {
		return bsoncore.Value{}, false
	}
	ops, ok := e.Value().DocumentOK()
	if !ok {
		return bsoncore.Value{}, false
	}
	a, err := ops.IndexErr(0)
	if err != nil {
		return bsoncore.Value{}, false
	}
	return a.Value(), true
}

func pick(inv bool, normal, inverted string) string {
	if inv {
		return inverted
	}
	return normal
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// obj builds a document element by element.
type obj struct{ b []byte }

func (o *obj) str(k, s string)                { o.b = bsoncore.AppendStringElement(o.b, k, s) }
func (o *obj) int(k string, n int)            { o.b = bsoncore.AppendInt32Element(o.b, k, int32(n)) }
func (o *obj) doc(k string, d []byte)         { o.b = bsoncore.AppendDocumentElement(o.b, k, d) }
func (o *obj) arr(k string, a []byte)         { o.b = bsoncore.AppendArrayElement(o.b, k, a) }
func (o *obj) val(k string, v bsoncore.Value) { o.b = bsoncore.AppendValueElement(o.b, k, v) }
func (o *obj) raw(elems []byte)               { o.b = append(o.b, elems...) }
func (o *obj) build() bsoncore.Document       { return bsoncore.BuildDocument(nil, o.b) }

// arr builds an array value by value.
type arr struct{ vals []bsoncore.Value }

func (a *arr) doc(d []byte)         { a.vals = append(a.vals, docValue(d)) }
func (a *arr) val(v bsoncore.Value) { a.vals = append(a.vals, v) }
func (a *arr) build() []byte        { return bsoncore.BuildArray(nil, a.vals...) }
func (a *arr) len() int             { return len(a.vals) }

func docOf(k string, v bsoncore.Value) bsoncore.Document {
	return bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, k, v))
}

func docValue(d []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

func boolValue(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{boolByte(b)}}
}

func valueArray(vals []bsoncore.Value) []byte { return bsoncore.BuildArray(nil, vals...) }

func stringArray(ss []string) []byte {
	vals := make([]bsoncore.Value, len(ss))
	for i, s := range ss {
		vals[i] = bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
	}
	return bsoncore.BuildArray(nil, vals...)
}
