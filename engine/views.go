package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Views, as MongoDB 7.0 has them: a view is a read-only namespace whose
// documents are those of another namespace of its database (viewOn: a
// collection, which need not exist, or another view) passed through an
// aggregation pipeline. The catalog keeps only the definition
// (store.ViewDefinition). Reads of a view (find, count, distinct,
// aggregate) are resolved to one aggregation on the collection at the end
// of the chain, the pipelines of the chain innermost first, followed by
// the read's own stages (viewread.go); everything that writes, and every
// command about a collection's storage or indexes, is refused with 166
// CommandNotSupportedOnView.

// maxViewDepth is MongoDB's limit on a chain of views.
const maxViewDepth = 20

// notOnView is what a command that needs a collection answers for a view.
func notOnView(db, name string) *CommandError {
	return errorf(ErrCommandNotSupportedOnView, "Namespace %s is a view, not a collection", namespaceOf(db, name))
}

// isView reports whether db.name is a view.
func (e *Engine) isView(db, name string) bool {
	return e.store.ViewDefinition(db, name) != nil
}

// resolvedView is a view resolved to the collection it reads.
type resolvedView struct {
	base   string              // the collection at the end of the chain
	stages []bsoncore.Document // the chain's pipelines, innermost view's first
}

// resolveView follows the chain of views from db.name down to a
// collection; nil when db.name is not a view.
func (e *Engine) resolveView(db, name string) (*resolvedView, error) {
	v := e.store.ViewDefinition(db, name)
	if v == nil {
		return nil, nil
	}
	var chain []bsoncore.Document // outermost first
	for depth := 0; v != nil; depth++ {
		if depth >= maxViewDepth {
			return nil, errorf(ErrViewDepthLimitExceeded, "View depth too deep or view cycle detected; maximum depth is %d", maxViewDepth)
		}
		chain = append(chain, bsoncore.Document(v.Pipeline))
		name = v.ViewOn
		v = e.store.ViewDefinition(db, name)
	}
	r := &resolvedView{base: name}
	for i := len(chain) - 1; i >= 0; i-- {
		r.stages = append(r.stages, arrayDocs(chain[i])...)
	}
	return r, nil
}

// then is the view's resolved pipeline followed by the stages of the
// pipeline user (a BSON array), as a BSON array.
func (r *resolvedView) then(user bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewArrayBuilder()
	for _, st := range r.stages {
		b.AppendDocument(st)
	}
	for _, st := range arrayDocs(user) {
		b.AppendDocument(st)
	}
	return bsoncore.Document(b.Build())
}

// arrayDocs are the documents of a BSON array (other values are left out:
// pipelines are checked before they are stored or run).
func arrayDocs(arr bsoncore.Document) []bsoncore.Document {
	var out []bsoncore.Document
	for el := range value.All(arr) {
		if d, ok := el.Value().DocumentOK(); ok {
			out = append(out, d)
		}
	}
	return out
}

// stageName is the name of a pipeline stage document ("" if it has none).
func stageName(st bsoncore.Document) string {
	el, err := st.IndexErr(0)
	if err != nil {
		return ""
	}
	return el.Key()
}

// collectionlessStages make their own documents: a view may not start
// with one ('<stage>' cannot be used in a view definition).
var collectionlessStages = map[string]bool{
	"$documents": true, "$currentOp": true, "$listLocalSessions": true, "$listSessions": true,
	"$listSampledQueries": true, "$queryStats": true,
}

// checkViewDefinition validates the definition of view db.name, viewOn
// and pipeline (a BSON array), as MongoDB's view catalog does: the
// pipeline must parse as an aggregation on viewOn, write nothing, read a
// collection, and the views must stay acyclic and at most maxViewDepth
// deep.
func (e *Engine) checkViewDefinition(db, name, viewOn string, pipeline bsoncore.Document) error {
	if viewOn == "" {
		return errorf(ErrBadValue, "'viewOn' cannot be empty")
	}
	if err := validateCollName(db, viewOn); err != nil {
		return err
	}
	ns := namespaceOf(db, name)
	invalid := func(code Code, format string, args ...any) *CommandError {
		return errorf(code, "Invalid pipeline for view %s :: caused by :: %s", ns, fmt.Sprintf(format, args...))
	}
	stages := arrayDocs(pipeline)
	for i, st := range stages {
		switch n := stageName(st); {
		case n == "$out" || n == "$merge":
			return invalid(ErrOptionNotSupportedOnView, "The aggregation stage %s in location %d of the pipeline cannot be used in the view definition of %s because it writes to disk", n, i, ns)
		case n == "$changeStream" && i == 0:
			return invalid(ErrOptionNotSupportedOnView, "$changeStream cannot be used in a view definition")
		}
	}
	if _, err := e.parsePipeline(db, viewOn, &aggArgs{pipeline: pipeline}); err != nil {
		return err
	}
	for _, st := range stages {
		if n := stageName(st); collectionlessStages[n] {
			return invalid(ErrInvalidNamespace, "'%s' cannot be used in a view definition", n)
		}
	}
	return e.checkViewGraph(db, name, viewOn, pipeline)
}

// checkViewGraph refuses a definition of view db.name that would close a
// cycle of views (through viewOn, or a namespace its pipeline reads:
// $lookup, $graphLookup, $unionWith) or make a chain of views longer
// than maxViewDepth, with MongoDB's messages.
func (e *Engine) checkViewGraph(db, name, viewOn string, pipeline bsoncore.Document) error {
	children := func(n string) []string {
		if n == name {
			return append([]string{viewOn}, pipelineNamespaces(pipeline)...)
		}
		v := e.store.ViewDefinition(db, n)
		if v == nil {
			return nil
		}
		return append([]string{v.ViewOn}, pipelineNamespaces(bsoncore.Document(v.Pipeline))...)
	}
	isView := func(n string) bool { return n == name || e.isView(db, n) }

	// Down from the view: a cycle back to it, and the longest chain of
	// views below it (itself included).
	path := []string{name}
	heights := map[string]int{}
	var down func(n string, depth int) (int, error)
	down = func(n string, depth int) (int, error) {
		if depth > maxViewDepth {
			return 0, errorf(ErrViewDepthLimitExceeded, "View depth limit exceeded; maximum depth is %d", maxViewDepth)
		}
		height := 0
		for _, c := range children(n) {
			if c == name {
				cycle := append(append([]string(nil), path...), c)
				parts := []string{namespaceOf(db, cycle[len(cycle)-1])}
				for i := len(cycle) - 1; i >= 0; i-- {
					parts = append(parts, namespaceOf(db, cycle[i]))
				}
				return 0, errorf(ErrGraphContainsCycle, "View cycle detected: %s", strings.Join(parts, " => "))
			}
			if !isView(c) {
				continue
			}
			h, seen := heights[c]
			if !seen {
				path = append(path, c)
				var err error
				if h, err = down(c, depth+1); err != nil {
					return 0, err
				}
				path = path[:len(path)-1]
				heights[c] = h
			}
			height = max(height, h)
		}
		return height + 1, nil
	}
	below, err := down(name, 0)
	if err != nil {
		return err
	}
	// Up from the view: the longest chain of views that read it.
	parents := map[string][]string{}
	for _, v := range e.store.ViewDefinitions(db) {
		if v.Name == name {
			continue
		}
		for _, c := range children(v.Name) {
			parents[c] = append(parents[c], v.Name)
		}
	}
	var up func(n string, depth int) int
	up = func(n string, depth int) int {
		if depth > maxViewDepth {
			return depth
		}
		h := 0
		for _, p := range parents[n] {
			h = max(h, up(p, depth+1))
		}
		return h + 1
	}
	if up(name, 0)+below-1 > maxViewDepth {
		return errorf(ErrViewDepthLimitExceeded, "View depth limit exceeded; maximum depth is %d", maxViewDepth)
	}
	return nil
}

// pipelineNamespaces are the collections of its own database a pipeline
// reads besides its input: $lookup's and $graphLookup's from, $unionWith's
// collection, in sub-pipelines too.
func pipelineNamespaces(pipeline bsoncore.Document) []string {
	var out []string
	for _, st := range arrayDocs(pipeline) {
		el, err := st.IndexErr(0)
		if err != nil {
			continue
		}
		v := el.Value()
		switch el.Key() {
		case "$lookup", "$graphLookup":
			if spec, ok := v.DocumentOK(); ok {
				if from, err := spec.LookupErr("from"); err == nil {
					if s, ok := from.StringValueOK(); ok {
						out = append(out, s)
					}
				}
				if sub, err := spec.LookupErr("pipeline"); err == nil && sub.Type == bsoncore.TypeArray {
					out = append(out, pipelineNamespaces(sub.Data)...)
				}
			}
		case "$unionWith":
			if s, ok := v.StringValueOK(); ok {
				out = append(out, s)
			} else if spec, ok := v.DocumentOK(); ok {
				if coll, err := spec.LookupErr("coll"); err == nil {
					if s, ok := coll.StringValueOK(); ok {
						out = append(out, s)
					}
				}
				if sub, err := spec.LookupErr("pipeline"); err == nil && sub.Type == bsoncore.TypeArray {
					out = append(out, pipelineNamespaces(sub.Data)...)
				}
			}
		case "$facet":
			if spec, ok := v.DocumentOK(); ok {
				for sub := range value.All(spec) {
					if sub.Value().Type == bsoncore.TypeArray {
						out = append(out, pipelineNamespaces(sub.Value().Data)...)
					}
				}
			}
		}
	}
	return out
}

// viewWriteErrors are a write command's answer on a view: every statement
// fails with 166, or only the first when the command is ordered.
func viewWriteErrors(db, name string, statements int, ordered bool) []writeError {
	ce := notOnView(db, name)
	if ordered {
		statements = min(statements, 1)
	}
	errs := make([]writeError, statements)
	for i := range errs {
		errs[i] = writeError{index: i, code: ce.Code, msg: ce.Msg}
	}
	return errs
}

// viewOptions reads create's viewOn and pipeline (their types were
// checked by createOptions); isView when viewOn is given. A pipeline
// alone is refused.
func viewOptions(req *request) (viewOn string, pipeline bsoncore.Document, isView bool, err error) {
	hasPipeline, hasIDIndex := false, false
	pipeline = bsoncore.Document(emptyArray)
	for el := range value.All(req.body) {
		switch el.Key() {
		case "viewOn":
			viewOn, isView = stringOf(el.Value()), true
		case "pipeline":
			pipeline, hasPipeline = el.Value().Data, true
		case "idIndex":
			hasIDIndex = true
		}
	}
	switch {
	case hasPipeline && !isView:
		return "", nil, false, errorf(ErrInvalidOptions, "'pipeline' requires 'viewOn' to also be specified")
	case isView && hasIDIndex:
		return "", nil, false, errorf(ErrInvalidOptions, "'viewOn' and 'idIndex' cannot both be specified")
	}
	return viewOn, pipeline, isView, nil
}

// createView is create with viewOn: as in MongoDB 7.0, creating a view
// that exists with the same definition succeeds, and a name taken
// otherwise is 48 NamespaceExists.
func (e *Engine) createView(ctx context.Context, db, name, viewOn string, pipeline bsoncore.Document, collation bson.Raw) ([]byte, error) {
	if txnOf(ctx) != nil {
		return nil, errorf(ErrOperationNotSupportedInTransaction, "Cannot create a view in a multi-document transaction.")
	}
	if ce := e.viewNameTaken(db, name, viewOn, pipeline); ce != nil || e.isView(db, name) {
		if ce != nil {
			return nil, ce
		}
		return okReply()
	}
	if err := e.checkViewDefinition(db, name, viewOn, pipeline); err != nil {
		return nil, err
	}
	if under := e.store.ViewDefinition(db, viewOn); under != nil && !bytes.Equal(under.Collation, collation) {
		return nil, errorf(ErrOptionNotSupportedOnView, "View %s has a different collation than the view %s it is defined on", namespaceOf(db, name), namespaceOf(db, viewOn))
	}
	_, err := e.store.CreateView(store.ViewDefinition{DB: db, Name: name, ViewOn: viewOn, Pipeline: bson.RawArray(bytes.Clone(pipeline)),
		Collation: bytes.Clone(collation)})
	if errors.Is(err, store.ErrExists) {
		if ce := e.viewNameTaken(db, name, viewOn, pipeline); ce != nil {
			return nil, ce
		}
		return okReply()
	}
	if err != nil {
		return nil, err
	}
	return okReply()
}

// viewNameTaken is create's error when db.name is already a collection,
// or a view other than viewOn with pipeline; nil when it is free or is
// that very view.
func (e *Engine) viewNameTaken(db, name, viewOn string, pipeline bsoncore.Document) *CommandError {
	if c := e.store.Collection(db, name); c != nil {
		return existsWithOtherOptions(db, name, c)
	}
	v := e.store.ViewDefinition(db, name)
	if v == nil {
		return nil
	}
	if ce := existsAsOtherView(v, viewOn); ce != nil {
		return ce
	}
	if !bytes.Equal(v.Pipeline, pipeline) {
		return errorf(ErrNamespaceExists, "namespace %s already exists, but with pipeline %s rather than %s", v.Namespace(),
			shellString(bsoncore.Value{Type: bsoncore.TypeArray, Data: v.Pipeline}),
			shellString(bsoncore.Value{Type: bsoncore.TypeArray, Data: pipeline}))
	}
	return nil
}

// existsAsOtherView is create's error for view v when what is asked for
// is a view on viewOn ("" for a collection), unless v is one.
func existsAsOtherView(v *store.ViewDefinition, viewOn string) *CommandError {
	if v.ViewOn == viewOn {
		return nil
	}
	return errorf(ErrNamespaceExists, "namespace %s already exists, but is a view on %s rather than %s",
		v.Namespace(), namespaceOf(v.DB, v.ViewOn), namespaceOf(v.DB, viewOn))
}

// viewRedefinition is what a collMod asks of a view: a new viewOn, a new
// pipeline, or both.
type viewRedefinition struct {
	viewOn           string
	pipeline         bsoncore.Document
	hasViewOn, hasPL bool
}

// read takes collMod's field k (viewOn or pipeline).
func (r *viewRedefinition) read(cmd, k string, v bsoncore.Value) error {
	if k == "viewOn" {
		s, err := stringArg(cmd, k, v)
		r.viewOn, r.hasViewOn = s, true
		return err
	}
	if v.Type != bsoncore.TypeArray {
		return wrongType(cmd, k, v, "array")
	}
	r.pipeline, r.hasPL = v.Data, true
	return nil
}

// onCollection refuses a view's options on a collection.
func (r *viewRedefinition) onCollection() error {
	switch {
	case r.hasPL:
		return errorf(ErrInvalidOptions, "option only supported on a view: pipeline")
	case r.hasViewOn:
		return errorf(ErrInvalidOptions, "option only supported on a view: viewOn")
	}
	return nil
}

// modifyView is collMod of view db.name: each of viewOn and pipeline
// given replaces its own, and the new definition is checked as create
// checks one.
func (e *Engine) modifyView(db, name string, r viewRedefinition) ([]byte, error) {
	v := e.store.ViewDefinition(db, name)
	if v == nil {
		return nil, errorf(ErrNamespaceNotFound, "ns does not exist")
	}
	def := *v
	if r.hasViewOn {
		def.ViewOn = r.viewOn
	}
	if r.hasPL {
		def.Pipeline = bson.RawArray(bytes.Clone(r.pipeline))
	}
	if r.hasViewOn || r.hasPL {
		if err := e.checkViewDefinition(db, name, def.ViewOn, bsoncore.Document(def.Pipeline)); err != nil {
			return nil, err
		}
		if _, err := e.store.ModifyView(def); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, errorf(ErrNamespaceNotFound, "ns does not exist")
			}
			return nil, err
		}
	}
	return okReply()
}

// resolveAggregateView resolves an aggregate on db.coll: on a view, args'
// pipeline becomes the view's followed by it, and the collection to read
// is returned; otherwise coll itself.
func (e *Engine) resolveAggregateView(db, coll string, args *aggArgs) (string, error) {
	r, err := e.resolveView(db, coll)
	if err != nil || r == nil {
		return coll, err
	}
	// A view's collation is that of every operation on it: another one
	// is refused, as in MongoDB.
	var viewColl *value.Collator
	if v := e.store.ViewDefinition(db, coll); v != nil && len(v.Collation) > 0 {
		if viewColl, err = parseCollation(bsoncore.Document(v.Collation)); err != nil {
			return "", err
		}
	}
	if args.collation.given && !args.collation.coll.Equal(viewColl) {
		return "", errorf(ErrOptionNotSupportedOnView, "Cannot override a view's default collation")
	}
	args.collation = collationOpt{given: true, coll: viewColl}
	if first := arrayDocs(args.pipeline); len(first) > 0 {
		if n := stageName(first[0]); n == "$collStats" || n == "$indexStats" {
			ce := notOnView(db, coll)
			return "", errorf(ce.Code, "Executor error during aggregate command on namespace: %s :: caused by :: %s", namespaceOf(db, coll), ce.Msg)
		}
	}
	args.pipeline = r.then(args.pipeline)
	return r.base, nil
}

// scanView is the documents of a resolved view, for stages that read
// another namespace ($lookup, $graphLookup, $unionWith).
func (e *Engine) scanView(ctx context.Context, db string, r *resolvedView) (agg.Iterator, error) {
	p, err := e.parsePipeline(db, r.base, &aggArgs{pipeline: r.then(nil)})
	if err != nil {
		return nil, err
	}
	return e.runPipeline(ctx, db, r.base, p, e.store.Collection(db, r.base), nil, nil, nil), nil
}
