package update

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Timestamp is a BSON timestamp: seconds and an increment.
type Timestamp struct{ T, I uint32 }

// Env is what an update needs from outside: time and the query's match.
type Env struct {
	// Now is the date $currentDate writes.
	Now time.Time
	// Timestamp is what $currentDate {$type: "timestamp"} writes.
	Timestamp Timestamp
	// Position is the array index the query matched, for the positional
	// '$' operator; HasPosition says whether there is one.
	Position    int
	HasPosition bool
	// Insert is set for the document an upsert inserts ($setOnInsert
	// applies, $-prefixed top-level fields may be written).
	Insert bool
}

// maxPadding is how many nulls a $set past an array's end may add.
const maxPadding = 1_500_000

// applyCtx is the state of one application of an update to one document.
type applyCtx struct {
	u       *Update
	env     Env
	id      bsoncore.Value // the document's _id, for messages
	renamed map[string]bsoncore.Value
	scratch []byte
}

// idElem renders the document's _id as MongoDB messages do: "_id: 1".
func (c *applyCtx) idElem() string {
	if c.id.Type == 0 {
		return "no id"
	}
	return value.RenderElement("_id", c.id)
}

// idString is "{_id: 1}".
func (c *applyCtx) idString() string { return "{" + c.idElem() + "}" }

// Apply applies the update to doc. It returns the new document and
// whether it differs from doc; when it does not, the result is doc itself.
// Env.Insert is ignored: use Upsert for the document an upsert inserts.
func (u *Update) Apply(doc bsoncore.Document, env Env) (bsoncore.Document, bool, error) {
	env.Insert = false
	out, err := u.apply(doc, env)
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(out, doc) {
		return doc, false, nil
	}
	return out, true, nil
}

func (u *Update) apply(doc bsoncore.Document, env Env) (bsoncore.Document, error) {
	switch u.kind {
	case Replacement:
		return u.applyReplacement(doc)
	case Pipeline:
		return u.applyPipeline(doc, env)
	}
	c := &applyCtx{u: u, env: env}
	c.id, _ = doc.LookupErr("_id")
	if u.positional && !env.HasPosition {
		return nil, errorf(ErrBadValue, "The positional operator did not find the match needed from the query.")
	}
	if !env.Insert && u.topDollarField != "" {
		f := u.topDollarField
		return nil, errorf(ErrDollarPrefixedField, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.", f, f)
	}
	if err := c.prepareRenames(doc); err != nil {
		return nil, err
	}
	root := parseObject(doc)
	if err := c.applyObject(root, u.root, ""); err != nil {
		return nil, err
	}
	out := root.encode(make([]byte, 0, len(doc)+64))
	for _, ip := range u.immutable {
		if ip.touched == "" {
			continue
		}
		before, hadBefore := lookup(doc, ip.parts)
		if env.Insert && !hadBefore {
			continue // an upsert may set what its query did not fix
		}
		after, hasAfter := lookup(out, ip.parts)
		if hadBefore != hasAfter || (hadBefore && value.Compare(before, after) != 0) {
			return nil, errorf(ErrImmutableField, "Performing an update on the path '%s' would modify the immutable field '%s'", ip.touched, ip.path)
		}
	}
	return out, nil
}

// lookup finds the value at a dotted path through embedded documents.
func lookup(doc bsoncore.Document, parts []string) (bsoncore.Value, bool) {
	v, err := doc.LookupErr(parts...)
	return v, err == nil
}

// applyReplacement keeps doc's _id (first) and takes every other field
// from the replacement.
func (u *Update) applyReplacement(doc bsoncore.Document) (bsoncore.Document, error) {
	oldID, hasOld := lookup(doc, []string{"_id"})
	newID, hasNew := lookup(u.replacement, []string{"_id"})
	if hasOld && hasNew && value.Compare(oldID, newID) != 0 {
		return nil, errorf(ErrImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to %s", value.RenderElement("_id", newID))
	}
	start, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(u.replacement)+len(oldID.Data)+8))
	switch {
	case hasNew:
		b = bsoncore.AppendValueElement(b, "_id", newID)
	case hasOld:
		b = bsoncore.AppendValueElement(b, "_id", oldID)
	}
	elems, _ := u.replacement.Elements()
	for _, e := range elems {
		if e.Key() != "_id" {
			b = append(b, e...)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	for _, ip := range u.immutable[1:] {
		before, had := lookup(doc, ip.parts)
		if !had {
			continue
		}
		after, has := lookup(b, ip.parts)
		if !has || value.Compare(before, after) != 0 {
			shown := "missing"
			if has {
				shown = value.RenderElement(ip.path, after)
			}
			return nil, errorf(ErrImmutableField, "After applying the update, the (immutable) field '%s' was found to have been altered to %s", ip.path, shown)
		}
	}
	return b, nil
}

// children returns t's children in visiting order, with '$' replaced by
// the matched index (merged with an explicit child of that index).
func (c *applyCtx) children(t *tree, path string) ([]string, map[string]*tree, error) {
	if !t.dynamic {
		return t.order, t.children, nil
	}
	dollar, ok := t.children["$"]
	if !ok {
		return t.order, t.children, nil
	}
	idx := strconv.Itoa(c.env.Position)
	kids := make(map[string]*tree, len(t.children))
	for k, v := range t.children {
		if k != "$" {
			kids[k] = v
		}
	}
	if other, ok := kids[idx]; ok {
		m, err := merge([]*tree{other, dollar}, join(path, idx))
		if err != nil {
			return nil, nil, err
		}
		kids[idx] = m
	} else {
		kids[idx] = dollar
	}
	order := make([]string, 0, len(kids))
	for k := range kids {
		order = append(order, k)
	}
	slices.SortFunc(order, compareFieldNames)
	return order, kids, nil
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// applyObject applies the children of t to the fields of o.
func (c *applyCtx) applyObject(o *object, t *tree, path string) error {
	order, kids, err := c.children(t, path)
	if err != nil {
		return err
	}
	for _, key := range order {
		child := kids[key]
		p := join(path, key)
		cur := o.get(key)
		if child.isLeaf() {
			next, remove, err := child.op.apply(c, cur, target{name: key, path: p})
			if err != nil {
				return err
			}
			switch {
			case remove:
				o.remove(key)
			case next != nil:
				o.set(key, next)
			}
			continue
		}
		if cur == nil {
			created, err := c.create(child, p)
			if err != nil {
				return err
			}
			if created != nil {
				o.set(key, created)
			}
			continue
		}
		if err := c.applyInterior(cur, key, child, p); err != nil {
			return err
		}
	}
	return nil
}

// hasArrayChildren reports whether t has "$[]" or "$[<id>]" children.
func hasArrayChildren(t *tree) bool {
	if !t.dynamic {
		return false
	}
	for _, k := range t.order {
		if kind, _ := componentKind(k); kind == posAll || kind == posFiltered {
			return true
		}
	}
	return false
}

// create builds the value of a missing field from interior node t, or
// returns nil when t's operators create nothing there ($unset, $pull, ...).
func (c *applyCtx) create(t *tree, path string) (*node, error) {
	if hasArrayChildren(t) {
		return nil, errorf(ErrBadValue, "The path '%s' must exist in the document in order to apply array updates.", path)
	}
	o := &object{}
	if err := c.applyObject(o, t, path); err != nil {
		return nil, err
	}
	if len(o.names) == 0 {
		return nil, nil
	}
	return objectNode(o), nil
}

// wouldCreate reports whether child, applied below a field that does not
// exist, would create something.
func (c *applyCtx) wouldCreate(key string, child *tree, path string) (bool, error) {
	if child.isLeaf() {
		next, _, err := child.op.apply(c, nil, target{name: key, path: path})
		return next != nil, err
	}
	n, err := c.create(child, path)
	return n != nil, err
}

// applyInterior applies interior node t to cur, the existing value of
// field name.
func (c *applyCtx) applyInterior(cur *node, name string, t *tree, path string) error {
	switch {
	case cur.isArray():
		return c.applyArray(cur, name, t, path)
	case hasArrayChildren(t):
		return errorf(ErrBadValue, "Cannot apply array updates to non-array element %s", value.RenderElement(name, cur.value()))
	case cur.isObject():
		return c.applyObject(cur.object(), t, path)
	}
	// A scalar: fine as long as nothing needs to be created below it.
	order, kids, err := c.children(t, path)
	if err != nil {
		return err
	}
	for _, key := range order {
		creates, err := c.wouldCreate(key, kids[key], join(path, key))
		if err != nil {
			return err
		}
		if creates {
			return errorf(ErrPathNotViable, "Cannot create field '%s' in element {%s}", key, value.RenderElement(name, cur.value()))
		}
	}
	return nil
}

// applyArray applies interior node t to the elements of array n.
func (c *applyCtx) applyArray(n *node, name string, t *tree, path string) error {
	order, kids, err := c.children(t, path)
	if err != nil {
		return err
	}
	var all *tree
	type filtered struct {
		id string
		t  *tree
	}
	var filters []filtered
	var indexes []string
	for _, key := range order {
		kind, id := componentKind(key)
		switch {
		case kind == posAll:
			all = kids[key]
		case kind == posFiltered:
			filters = append(filters, filtered{id, kids[key]})
		case isIndex(key):
			indexes = append(indexes, key)
		default:
			// A field name in an array: only an error if it would create.
			creates, err := c.wouldCreate(key, kids[key], join(path, key))
			if err != nil {
				return err
			}
			if creates {
				return errorf(ErrPathNotViable, "Cannot create field '%s' in element {%s}", key, value.RenderElement(name, n.value()))
			}
		}
	}
	a := n.array()
	if all != nil || len(filters) > 0 {
		for i := range a.elems {
			var match []*tree
			key := strconv.Itoa(i)
			if t, ok := kids[key]; ok {
				match = append(match, t)
			}
			if all != nil {
				match = append(match, all)
			}
			for _, f := range filters {
				if c.matches(f.id, a.elems[i]) {
					match = append(match, f.t)
				}
			}
			if len(match) == 0 {
				continue
			}
			m := match[0]
			if len(match) > 1 {
				if m, err = merge(match, join(path, key)); err != nil {
					return err
				}
			}
			if err := c.applyElement(a, i, m, join(path, key)); err != nil {
				return err
			}
		}
	}
	for _, key := range indexes {
		i := atoi(key)
		p := join(path, key)
		if i < len(a.elems) {
			if all != nil || len(filters) > 0 {
				continue // applied above
			}
			if err := c.applyElement(a, i, kids[key], p); err != nil {
				return err
			}
			continue
		}
		child := kids[key]
		var created *node
		if child.isLeaf() {
			next, _, err := child.op.apply(c, nil, target{name: key, path: p})
			if err != nil {
				return err
			}
			created = next
		} else if created, err = c.create(child, p); err != nil {
			return err
		}
		if created == nil {
			continue
		}
		if i-len(a.elems) > maxPadding {
			return errorf(ErrBadValue, "can't backfill more than %d elements", maxPadding)
		}
		for len(a.elems) < i {
			a.elems = append(a.elems, nullNode())
		}
		a.elems = append(a.elems, created)
	}
	return nil
}

// applyElement applies t to element i of a.
func (c *applyCtx) applyElement(a *array, i int, t *tree, path string) error {
	key := strconv.Itoa(i)
	if t.isLeaf() {
		next, remove, err := t.op.apply(c, a.elems[i], target{name: key, path: path})
		if err != nil {
			return err
		}
		switch {
		case remove:
			a.elems[i] = nullNode()
		case next != nil:
			a.elems[i] = next
		}
		return nil
	}
	return c.applyInterior(a.elems[i], key, t, path)
}

// merge combines the subtrees that apply to one array element; two
// operations on one path are a conflict.
func merge(ts []*tree, path string) (*tree, error) {
	for _, t := range ts {
		if t.isLeaf() {
			return nil, errorf(ErrConflictingOperators, "Update created a conflict at '%s'", path)
		}
	}
	groups := map[string][]*tree{}
	m := &tree{children: map[string]*tree{}}
	for _, t := range ts {
		for _, k := range t.order {
			if _, seen := groups[k]; !seen {
				m.order = append(m.order, k)
			}
			groups[k] = append(groups[k], t.children[k])
		}
		m.dynamic = m.dynamic || t.dynamic
	}
	for k, g := range groups {
		if len(g) == 1 {
			m.children[k] = g[0]
			continue
		}
		sub, err := merge(g, join(path, k))
		if err != nil {
			return nil, err
		}
		m.children[k] = sub
	}
	slices.SortFunc(m.order, compareFieldNames)
	return m, nil
}

// hasPrefixPath reports whether path is p or below it.
func hasPrefixPath(path, p string) bool {
	return path == p || strings.HasPrefix(path, p+".")
}
