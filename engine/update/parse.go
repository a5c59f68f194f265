package update

import (
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Kind is the form of an update specification.
type Kind int

const (
	// Operators is an update document of operators: {$set: {...}, ...}.
	Operators Kind = iota
	// Replacement is a document that replaces the matched one (keeping _id).
	Replacement
	// Pipeline is an array of aggregation stages.
	Pipeline
)

// Options are the parts of an update statement besides the specification.
type Options struct {
	// ArrayFilters are the filters of the $[<id>] paths.
	ArrayFilters []bsoncore.Document
	// Immutable lists paths besides _id that no update may change (the
	// shard key of a sharded collection).
	Immutable []string
	// Let holds variables for pipeline updates ($$name).
	Let bsoncore.Document
	// Collation compares strings in $pull, $pullAll, $addToSet, $push's
	// $sort, $min and $max; nil is the simple collation.
	Collation *value.Collator
}

// Update is a compiled update specification. It is immutable.
type Update struct {
	kind        Kind
	coll        *value.Collator   // Options.Collation
	root        *tree             // Operators
	replacement bsoncore.Document // Replacement
	pipeline    *pipeline         // Pipeline

	positional bool                     // some path has '$'
	filters    map[string]*query.Filter // array filters by identifier
	renames    []rename
	// immutable maps each immutable path an operator path overlaps to the
	// first such operator path, for the error message.
	immutable      []immutablePath
	topDollarField string // a top-level $-prefixed field an operator writes
}

type immutablePath struct {
	path    string
	parts   []string
	touched string // the update path that overlaps it ("" for none)
}

// Kind is the form of the update.
func (u *Update) Kind() Kind { return u.kind }

// Positional reports whether the update uses the positional '$' operator,
// so the caller must tell Apply which array index the query matched.
func (u *Update) Positional() bool { return u.positional }

// tree is a node of the update's path trie. Leaves hold an operation;
// interior nodes hold children keyed by path component (field names,
// array indexes, "$", "$[]" and "$[<id>]").
type tree struct {
	op       op
	path     string // the full update path of a leaf, for messages
	children map[string]*tree
	order    []string // children keys in the order fields are visited
	// dynamic is set when some child is positional, so the visiting order
	// depends on the document.
	dynamic bool
}

func (t *tree) isLeaf() bool { return t.op != nil }

func (t *tree) child(key string) *tree {
	if t.children == nil {
		t.children = map[string]*tree{}
	}
	c := t.children[key]
	if c == nil {
		c = &tree{}
		t.children[key] = c
		t.order = append(t.order, key)
		if k, _ := componentKind(key); k != posNone {
			t.dynamic = true
		}
	}
	return c
}

// sortOrders sorts every node's children by compareFieldNames.
func (t *tree) sortOrders() {
	slices.SortFunc(t.order, compareFieldNames)
	for _, c := range t.children {
		c.sortOrders()
	}
}

// Parse compiles an update specification: a document of operators, a
// replacement document, or (an array) a pipeline.
func Parse(spec bsoncore.Value, opts Options) (*Update, error) {
	var u *Update
	var err error
	switch spec.Type {
	case bsoncore.TypeArray:
		if len(opts.ArrayFilters) > 0 {
			return nil, errorf(ErrFailedToParse, "arrayFilters may not be specified for pipeline-style updates")
		}
		u, err = parsePipeline(bsoncore.Document(spec.Array()), opts.Let)
	case bsoncore.TypeEmbeddedDocument:
		d := spec.Document()
		first, ferr := d.IndexErr(0)
		if ferr == nil && strings.HasPrefix(first.Key(), "$") {
			u, err = parseOperators(d, opts)
		} else {
			u, err = parseReplacement(d)
		}
	default:
		return nil, errorf(ErrFailedToParse, "Update argument must be either an object or an array")
	}
	if err != nil {
		return nil, err
	}
	if u.kind != Operators && len(opts.ArrayFilters) > 0 {
		// Replacements use no identifiers: every filter is unused.
		ids, err := parseArrayFilters(opts.ArrayFilters, opts.Collation)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			return nil, errorf(ErrFailedToParse, "The array filter for identifier '%s' was not used in the update %s", id.name, value.RenderDocument(spec.Data))
		}
	}
	u.immutable = immutablePaths(u, opts.Immutable)
	return u, nil
}

// parseReplacement checks a replacement document: no top-level field may
// start with '$'.
func parseReplacement(d bsoncore.Document) (*Update, error) {
	elems, err := d.Elements()
	if err != nil {
		return nil, errorf(ErrFailedToParse, "invalid replacement document: %v", err)
	}
	for _, e := range elems {
		if k := e.Key(); strings.HasPrefix(k, "$") {
			return nil, errorf(ErrDollarPrefixedField, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.", k, k)
		}
	}
	return &Update{kind: Replacement, replacement: d}, nil
}

// parseOperators compiles {$op: {path: arg, ...}, ...}.
func parseOperators(d bsoncore.Document, opts Options) (*Update, error) {
	u := &Update{kind: Operators, root: &tree{}, coll: opts.Collation}
	elems, err := d.Elements()
	if err != nil {
		return nil, errorf(ErrFailedToParse, "invalid update document: %v", err)
	}
	ids, err := parseArrayFilters(opts.ArrayFilters, opts.Collation)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, e := range elems {
		name := e.Key()
		parse, ok := operators[name]
		if !ok {
			return nil, errorf(ErrFailedToParse, "Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", name)
		}
		args, ok := e.Value().DocumentOK()
		if !ok {
			return nil, errorf(ErrFailedToParse, "Modifiers operate on fields but we found type %s instead. For example: {$mod: {<field>: ...}} not {%s: %s}", typeName(e.Value().Type), name, value.Render(e.Value()))
		}
		fields, err := args.Elements()
		if err != nil {
			return nil, errorf(ErrFailedToParse, "invalid %s argument: %v", name, err)
		}
		for _, f := range fields {
			path := f.Key()
			parts, err := splitPath(path)
			if err != nil {
				return nil, err
			}
			for _, p := range parts {
				kind, id := componentKind(p)
				switch kind {
				case posDollar:
					u.positional = true
				case posFiltered:
					if _, ok := findFilter(ids, id); !ok {
						return nil, errorf(ErrBadValue, "No array filter found for identifier '%s' in path '%s'", id, path)
					}
					used[id] = true
				}
			}
			o, err := parse(f.Value(), f)
			if err == nil && name == "$pull" && opts.Collation != nil {
				o, err = parsePullWith(f.Value(), opts.Collation)
			}
			if err != nil {
				return nil, err
			}
			if r, ok := o.(*renameOp); ok {
				if err := u.addRename(r, path, parts); err != nil {
					return nil, err
				}
				continue
			}
			if err := u.insert(parts, path, o); err != nil {
				return nil, err
			}
			if !strings.HasPrefix(name, "$setOnInsert") && strings.HasPrefix(parts[0], "$") && u.topDollarField == "" {
				u.topDollarField = parts[0]
			}
		}
	}
	for _, id := range ids {
		if !used[id.name] {
			return nil, errorf(ErrFailedToParse, "The array filter for identifier '%s' was not used in the update %s", id.name, value.RenderDocument(d))
		}
	}
	if len(ids) > 0 {
		u.filters = make(map[string]*query.Filter, len(ids))
		for _, id := range ids {
			u.filters[id.name] = id.filter
		}
	}
	u.root.sortOrders()
	return u, nil
}

// insert adds a leaf at parts, failing when the path overlaps another.
func (u *Update) insert(parts []string, path string, o op) error {
	t := u.root
	for i, p := range parts {
		if t.isLeaf() {
			return conflict(path, strings.Join(parts[:i], "."))
		}
		t = t.child(p)
	}
	if t.isLeaf() || len(t.children) > 0 {
		return conflict(path, path)
	}
	t.op, t.path = o, path
	return nil
}

func conflict(path, at string) error {
	return errorf(ErrConflictingOperators, "Updating the path '%s' would create a conflict at '%s'", path, at)
}

// immutablePaths lists _id and extra, each with the first operator path
// overlapping it.
func immutablePaths(u *Update, extra []string) []immutablePath {
	var out []immutablePath
	for _, p := range append([]string{"_id"}, extra...) {
		ip := immutablePath{path: p, parts: strings.Split(p, ".")}
		if u.root != nil {
			ip.touched = firstOverlap(u.root, ip.parts, nil)
		}
		out = append(out, ip)
	}
	return out
}

// firstOverlap finds a leaf path of t that is a prefix of parts or
// extends it.
func firstOverlap(t *tree, parts []string, prefix []string) string {
	if t.isLeaf() {
		return t.path
	}
	if len(parts) == 0 {
		// Everything below overlaps: report the first leaf.
		for _, k := range t.order {
			if p := firstOverlap(t.children[k], nil, append(prefix, k)); p != "" {
				return p
			}
		}
		return ""
	}
	c, ok := t.children[parts[0]]
	if !ok {
		return ""
	}
	return firstOverlap(c, parts[1:], append(prefix, parts[0]))
}
