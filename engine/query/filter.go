package query

import (
	"time"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Filter is a compiled query filter. It is immutable and safe for
// concurrent use.
type Filter struct {
	root andPred
	// canFail is set when matching can fail at run time ($expr), so
	// MatchErr needs state to carry the error.
	canFail bool
	coll    *value.Collator
}

// Collation is the collation the filter compares strings by; nil: simple.
func (f *Filter) Collation() *value.Collator { return f.coll }

// Options are what a filter may use besides the document it matches.
type Options struct {
	// Let holds the values of user variables ($$name) that $expr may
	// read: find's let. The Filter copies what it needs.
	Let bsoncore.Document
	// Now is the value of $$NOW and $$CLUSTER_TIME; the zero time means
	// the moment Compile runs is not known, and they read as the Unix epoch.
	Now time.Time
	// Collation compares strings in the filter's comparisons ($eq, $lt,
	// $in, ... and $expr); nil is the simple collation (bytes).
	Collation *value.Collator
}

// state is what one match records: the position for the positional
// operator (MongoDB's elemMatchKey) and the first evaluation error.
// Predicates receive nil when neither is wanted.
type state struct {
	pos int
	err error
}

type predicate interface {
	match(doc bsoncore.Document, st *state) bool
}

// Compile parses filter. An empty or nil filter matches every document.
// The Filter does not alias filter.
func Compile(filter bsoncore.Document) (*Filter, error) {
	return CompileWith(filter, Options{})
}

// CompileWith is Compile with variables and a clock for $expr.
func CompileWith(filter bsoncore.Document, opts Options) (*Filter, error) {
	f := &Filter{coll: opts.Collation}
	if len(filter) == 0 {
		return f, nil
	}
	// The filter outlives the request that carried it (cursors keep it),
	// so it must own its bytes.
	c, err := newCompiler(opts)
	if err != nil {
		return nil, err
	}
	preds, err := c.compileDoc(append(bsoncore.Document(nil), filter...), ctxTop)
	if err != nil {
		return nil, err
	}
	f.root = preds
	f.canFail = c.canFail
	return f, nil
}

// Match reports whether doc satisfies the filter. A document on which
// evaluation fails ($expr errors) does not match; use MatchErr to see why.
func (f *Filter) Match(doc bsoncore.Document) bool {
	return f.root.match(doc, nil)
}

// MatchErr is Match that also returns the first evaluation error, as
// MongoDB fails a query whose $expr fails on some document.
func (f *Filter) MatchErr(doc bsoncore.Document) (bool, error) {
	if !f.canFail {
		return f.root.match(doc, nil), nil
	}
	st := state{pos: -1}
	ok := f.root.match(doc, &st)
	if st.err != nil {
		return false, st.err
	}
	return ok, nil
}

// MatchPosition is Match that also returns the position the positional
// operator ($ in projections and updates) refers to: the index, within the
// first (outermost) array the filter traversed to match, of the element
// that matched; -1 when the match went through no array. As in MongoDB,
// when several predicates traverse arrays the last one that matched
// through an array wins, and $or, $nor and $not record nothing.
func (f *Filter) MatchPosition(doc bsoncore.Document) (matched bool, pos int) {
	st := state{pos: -1}
	ok := f.root.match(doc, &st)
	if !ok || st.err != nil {
		return false, -1
	}
	return true, st.pos
}

// IsEmpty reports whether the filter matches every document trivially.
func (f *Filter) IsEmpty() bool { return len(f.root) == 0 }

// IDEquality returns the value when the filter is exactly {_id: v} (or
// {_id: {$eq: v}}) with v a plain value, so the document can be read by key.
func (f *Filter) IDEquality() (bsoncore.Value, bool) {
	var p predicate = f.root
	for {
		a, ok := p.(andPred)
		if !ok || len(a) != 1 {
			break
		}
		p = a[0]
	}
	pp, ok := p.(*pathPred)
	if !ok || len(pp.path) != 1 || pp.path[0] != "_id" {
		return bsoncore.Value{}, false
	}
	eq, ok := pp.vm.(*eqMatcher)
	if !ok {
		return bsoncore.Value{}, false
	}
	switch eq.val.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeNull, bsoncore.TypeUndefined,
		bsoncore.TypeRegex, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return bsoncore.Value{}, false
	}
	return eq.val, true
}
