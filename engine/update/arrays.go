package update

import (
	"math"
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// pushOp is $push: values inserted at a position, then the array sorted,
// then sliced.
type pushOp struct {
	each     []bsoncore.Value
	position *int64
	slice    *int64
	sort     *elemSort
}

func parsePush(v bsoncore.Value, e bsoncore.Element) (op, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return pushOp{each: []bsoncore.Value{v}}, nil
	}
	if _, err := d.LookupErr("$each"); err != nil {
		return pushOp{each: []bsoncore.Value{v}}, nil
	}
	var o pushOp
	elems, _ := d.Elements()
	for _, el := range elems {
		x := el.Value()
		switch el.Key() {
		case "$each":
			arr, ok := x.ArrayOK()
			if !ok {
				return nil, errorf(ErrBadValue, "The argument to $each in $push must be an array but it was of type: %s", typeName(x.Type))
			}
			o.each, _ = arr.Values()
		case "$slice":
			n, ok := integral(x)
			if !ok {
				return nil, errorf(ErrBadValue, "The value for $slice must be an integer value but was given type: %s", typeName(x.Type))
			}
			o.slice = &n
		case "$position":
			n, ok := integral(x)
			if !ok {
				return nil, errorf(ErrBadValue, "The value for $position must be an integer value, not of type: %s", typeName(x.Type))
			}
			o.position = &n
		case "$sort":
			s, err := parseElemSort(x)
			if err != nil {
				return nil, err
			}
			o.sort = s
		default:
			return nil, errorf(ErrBadValue, "Unrecognized clause in $push: %s", el.Key())
		}
	}
	return o, nil
}

// integral reads a whole number of any numeric type.
func integral(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return asInt64(v), true
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		x := value.Float(v)
		if x != math.Trunc(x) || math.IsNaN(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

func (o pushOp) apply(c *applyCtx, cur *node, f target) (*node, bool, error) {
	var elems []*node
	if cur != nil {
		if !cur.isArray() {
			return nil, false, errorf(ErrBadValue, "The field '%s' must be an array but is of type %s in document %s", f.name, typeName(cur.typ()), c.idString())
		}
		elems = cur.array().elems
	}
	pos := int64(len(elems))
	if o.position != nil {
		pos = *o.position
		if pos < 0 {
			pos = max(0, int64(len(elems))+pos)
		}
		pos = min(pos, int64(len(elems)))
	}
	added := make([]*node, len(o.each))
	for i, v := range o.each {
		added[i] = rawNode(v)
	}
	out := make([]*node, 0, len(elems)+len(added))
	out = append(out, elems[:pos]...)
	out = append(out, added...)
	out = append(out, elems[pos:]...)
	if o.sort != nil {
		o.sort.sort(out, c.u.coll)
	}
	if o.slice != nil {
		n := *o.slice
		switch {
		case n >= 0 && n < int64(len(out)):
			out = out[:n]
		case n < 0 && -n < int64(len(out)):
			out = out[int64(len(out))+n:]
		}
	}
	return arrayNode(&array{elems: out}), false, nil
}

// elemSort is $push's $sort: whole elements (pattern nil) or, for
// documents, the values at the pattern's paths (missing ones as null).
type elemSort struct {
	dir     int
	fields  [][]string
	dirs    []int
	pattern bool
}

func parseElemSort(v bsoncore.Value) (*elemSort, error) {
	const invalid = "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields"
	if isNumber(v) {
		f := value.Float(v)
		if f != 1 && f != -1 {
			return nil, errorf(ErrBadValue, invalid)
		}
		return &elemSort{dir: int(f)}, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, errorf(ErrBadValue, invalid)
	}
	elems, _ := d.Elements()
	if len(elems) == 0 {
		return nil, errorf(ErrBadValue, "The $sort pattern is empty when it should be a set of fields.")
	}
	s := &elemSort{pattern: true}
	for _, el := range elems {
		k := el.Key()
		parts := strings.Split(k, ".")
		if slices.Contains(parts, "") {
			return nil, errorf(ErrBadValue, "The $sort field is a dotted field but has an empty part: %s", k)
		}
		x := el.Value()
		dir := 0
		if isNumber(x) {
			dir = int(value.Float(x))
			if value.Float(x) != float64(dir) {
				dir = 0
			}
		}
		if dir != 1 && dir != -1 {
			return nil, errorf(ErrBadValue, "The $sort element value must be either 1 or -1")
		}
		s.fields = append(s.fields, parts)
		s.dirs = append(s.dirs, dir)
	}
	return s, nil
}

var nullValue = bsoncore.Value{Type: bsoncore.TypeNull}

func (s *elemSort) sort(elems []*node, coll *value.Collator) {
	if !s.pattern {
		vals := make([]bsoncore.Value, len(elems))
		for i, e := range elems {
			vals[i] = e.value()
		}
		idx := sortedIndexes(len(elems), func(a, b int) int { return s.dir * value.CompareWith(vals[a], vals[b], coll) })
		permute(elems, idx)
		return
	}
	keys := make([][]bsoncore.Value, len(elems))
	for i, e := range elems {
		keys[i] = make([]bsoncore.Value, len(s.fields))
		v := e.value()
		for j, f := range s.fields {
			keys[i][j] = nullValue
			if v.Type == bsoncore.TypeEmbeddedDocument {
				if x, err := v.Document().LookupErr(f...); err == nil {
					keys[i][j] = x
				}
			}
		}
	}
	idx := sortedIndexes(len(elems), func(a, b int) int {
		for j := range s.fields {
			if c := value.CompareWith(keys[a][j], keys[b][j], coll); c != 0 {
				return c * s.dirs[j]
			}
		}
		return 0
	})
	permute(elems, idx)
}

func sortedIndexes(n int, cmp func(a, b int) int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, cmp)
	return idx
}

func permute(elems []*node, idx []int) {
	orig := slices.Clone(elems)
	for i, j := range idx {
		elems[i] = orig[j]
	}
}

// addToSetOp is $addToSet: values appended unless an equal one is there.
type addToSetOp struct{ each []bsoncore.Value }

func parseAddToSet(v bsoncore.Value, e bsoncore.Element) (op, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return addToSetOp{each: []bsoncore.Value{v}}, nil
	}
	first, err := d.IndexErr(0)
	if err != nil || first.Key() != "$each" {
		return addToSetOp{each: []bsoncore.Value{v}}, nil
	}
	if elems, _ := d.Elements(); len(elems) > 1 {
		return nil, errorf(ErrBadValue, "Found unexpected fields after $each in $addToSet: %s", value.RenderDocument(d))
	}
	arr, ok := first.Value().ArrayOK()
	if !ok {
		return nil, errorf(ErrTypeMismatch, "The argument to $each in $addToSet must be an array but it was of type %s", typeName(first.Value().Type))
	}
	vals, _ := arr.Values()
	var o addToSetOp
	for _, x := range vals {
		if !containsValue(o.each, x, nil) {
			o.each = append(o.each, x)
		}
	}
	return o, nil
}

func containsValue(vals []bsoncore.Value, v bsoncore.Value, coll *value.Collator) bool {
	for _, x := range vals {
		if value.CompareWith(x, v, coll) == 0 {
			return true
		}
	}
	return false
}

func (o addToSetOp) apply(c *applyCtx, cur *node, f target) (*node, bool, error) {
	if cur == nil {
		elems := make([]*node, len(o.each))
		for i, v := range o.each {
			elems[i] = rawNode(v)
		}
		return arrayNode(&array{elems: elems}), false, nil
	}
	if !cur.isArray() {
		return nil, false, errorf(ErrBadValue, "Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s", f.name, typeName(cur.typ()))
	}
	a := cur.array()
	present := make([]bsoncore.Value, len(a.elems))
	for i, e := range a.elems {
		present[i] = e.value()
	}
	var added []*node
	for _, v := range o.each {
		if !containsValue(present, v, c.u.coll) {
			added = append(added, rawNode(v))
		}
	}
	if len(added) == 0 {
		return nil, false, nil
	}
	a.elems = append(a.elems, added...)
	return cur, false, nil
}

// popOp is $pop: first (-1) or last (1) element removed.
type popOp struct{ first bool }

func parsePop(v bsoncore.Value, e bsoncore.Element) (op, error) {
	if !isNumber(v) {
		return nil, errorf(ErrFailedToParse, "Expected a number in: %s", value.RenderElement(e.Key(), v))
	}
	f := value.Float(v)
	if f != 1 && f != -1 {
		return nil, errorf(ErrFailedToParse, "$pop expects 1 or -1, found: %s", value.Render(v))
	}
	return popOp{first: f == -1}, nil
}

func (o popOp) apply(c *applyCtx, cur *node, f target) (*node, bool, error) {
	if cur == nil {
		return nil, false, nil
	}
	if !cur.isArray() {
		return nil, false, errorf(ErrTypeMismatch, "Path '%s' contains an element of non-array type '%s'", f.path, typeName(cur.typ()))
	}
	a := cur.array()
	if len(a.elems) == 0 {
		return nil, false, nil
	}
	if o.first {
		a.elems = a.elems[1:]
	} else {
		a.elems = a.elems[:len(a.elems)-1]
	}
	return cur, false, nil
}

// pullOp is $pull and $pullAll: elements matching are removed.
type pullOp struct {
	name   string
	values []bsoncore.Value // equality with any of these
	elem   *query.Filter    // condition on {v: element}
	object *query.Filter    // query on document elements
}

// queryTopLevel are the operators that make a $pull document a query on
// document elements rather than a condition on each element.
var queryTopLevel = map[string]bool{
	"$and": true, "$or": true, "$nor": true, "$expr": true, "$where": true, "$text": true,
	"$comment": true, "$jsonSchema": true, "$alwaysTrue": true, "$alwaysFalse": true,
}

const pullElemField = "v"

func parsePull(v bsoncore.Value, e bsoncore.Element) (op, error) { return parsePullWith(v, nil) }

// parsePullWith is parsePull with its conditions comparing strings by the
// collation coll.
func parsePullWith(v bsoncore.Value, coll *value.Collator) (op, error) {
	opts := query.Options{Collation: coll}
	d, ok := v.DocumentOK()
	if !ok {
		return pullOp{name: "$pull", values: []bsoncore.Value{v}}, nil
	}
	first, err := d.IndexErr(0)
	if err == nil && strings.HasPrefix(first.Key(), "$") && !queryTopLevel[first.Key()] {
		start, b := bsoncore.AppendDocumentStart(nil)
		b = bsoncore.AppendDocumentElement(b, pullElemField, d)
		b, _ = bsoncore.AppendDocumentEnd(b, start)
		f, err := query.CompileWith(b, opts)
		if err != nil {
			return nil, fromQueryError(err, "")
		}
		return pullOp{name: "$pull", elem: f}, nil
	}
	f, err := query.CompileWith(d, opts)
	if err != nil {
		return nil, fromQueryError(err, "")
	}
	return pullOp{name: "$pull", object: f}, nil
}

func parsePullAll(v bsoncore.Value, e bsoncore.Element) (op, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, errorf(ErrBadValue, "$pullAll requires an array argument but was given a %s", typeName(v.Type))
	}
	vals, _ := arr.Values()
	return pullOp{name: "$pullAll", values: vals}, nil
}

func (o pullOp) matches(c *applyCtx, n *node) bool {
	switch {
	case o.elem != nil:
		start, b := bsoncore.AppendDocumentStart(c.scratch[:0])
		b = appendNode(b, pullElemField, n)
		b, _ = bsoncore.AppendDocumentEnd(b, start)
		c.scratch = b
		return o.elem.Match(b)
	case o.object != nil:
		v := n.value()
		return v.Type == bsoncore.TypeEmbeddedDocument && o.object.Match(v.Document())
	}
	return containsValue(o.values, n.value(), c.u.coll)
}

func (o pullOp) apply(c *applyCtx, cur *node, f target) (*node, bool, error) {
	if cur == nil {
		return nil, false, nil
	}
	if !cur.isArray() {
		return nil, false, errorf(ErrBadValue, "Cannot apply %s to a non-array value", o.name)
	}
	a := cur.array()
	kept := a.elems[:0:0]
	for _, e := range a.elems {
		if !o.matches(c, e) {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(a.elems) {
		return nil, false, nil
	}
	a.elems = kept
	return cur, false, nil
}
